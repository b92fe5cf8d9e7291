"""The agent skill (SKILL.md beside this file) and `bsk install-skill`.

Each harness looks for skills in its own place; `install-skill` writes the skill there,
idempotently (an up-to-date copy is left alone), and says what it wrote:

| harness  | where (default)                                   | format                  |
|----------|---------------------------------------------------|-------------------------|
| claude   | ~/.claude/skills/browserskill/SKILL.md            | Agent Skill             |
| codex    | ~/.agents/skills/browserskill/SKILL.md            | Agent Skill             |
| opencode | ~/.config/opencode/skills/browserskill/SKILL.md   | Agent Skill             |
| cursor   | ./.cursor/rules/browserskill.mdc (this project)   | Cursor rule (.mdc)      |

`--dir DIR` replaces the directory a harness scans (DIR/browserskill/SKILL.md, or
DIR/browserskill.mdc for cursor), e.g. a project's `.claude/skills`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserskill.base.errors import BskError, invalid

NAME = "browserskill"
SKILL_FILE = Path(__file__).with_name("SKILL.md")


def skill_text() -> str:
    return SKILL_FILE.read_text(encoding="utf-8")


def front_matter(text: str) -> dict[str, str]:
    """The `key: value` lines between the leading `---` fences."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def body(text: str) -> str:
    """The text after the front matter."""
    if not text.startswith("---"):
        return text
    end = text.find("\n---", 3)
    return text[end + 4:].lstrip("\n") if end >= 0 else text


def _as_cursor_rule(text: str) -> str:
    description = front_matter(text).get("description", "")
    return f"---\ndescription: {description}\nglobs:\nalwaysApply: false\n---\n{body(text)}"


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


@dataclass(frozen=True)
class Harness:
    name: str
    title: str
    default_dir: Callable[[], Path]
    rule_file: bool = False  # Cursor: DIR/browserskill.mdc instead of DIR/browserskill/SKILL.md

    def target(self, directory: Path | None = None) -> Path:
        root = directory if directory is not None else self.default_dir()
        return root / f"{NAME}.mdc" if self.rule_file else root / NAME / "SKILL.md"

    def content(self, text: str) -> str:
        return _as_cursor_rule(text) if self.rule_file else text


HARNESSES: tuple[Harness, ...] = (
    Harness("claude", "Claude Code (personal skills)",
            lambda: Path.home() / ".claude" / "skills"),
    Harness("codex", "OpenAI Codex (user skills, the Agent Skills directory)",
            lambda: Path.home() / ".agents" / "skills"),
    Harness("opencode", "OpenCode (global skills)", lambda: _config_home() / "opencode" / "skills"),
    Harness("cursor", "Cursor (a project rule in the current directory)",
            lambda: Path.cwd() / ".cursor" / "rules", rule_file=True),
)
BY_NAME = {h.name: h for h in HARNESSES}


def install(harness: Harness, directory: Path | None = None) -> dict[str, Any]:
    """Write the skill for one harness; leave an identical copy alone."""
    path = harness.target(directory)
    content = harness.content(skill_text())
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except OSError:
        before = None
    if before == content:
        action = "unchanged"
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        except OSError as e:
            raise invalid("dir", f"can't write {path}: {e.strerror or e}") from None
        action = "created" if before is None else "updated"
    return {"harness": harness.name, "path": str(path), "action": action,
            "bytes": len(content.encode())}


def status(harness: Harness, directory: Path | None = None) -> dict[str, Any]:
    path = harness.target(directory)
    try:
        current = path.read_text(encoding="utf-8") if path.exists() else None
    except OSError:
        current = None
    state = ("not installed" if current is None else
             "up to date" if current == harness.content(skill_text()) else "outdated")
    return {"harness": harness.name, "title": harness.title, "path": str(path), "state": state}


def cli_install(args: list[str]) -> dict[str, Any]:
    """`bsk install-skill [--harness NAME]… [--dir DIR] [--list]`."""
    names: list[str] = []
    directory: Path | None = None
    listing = False
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in ("--harness", "--dir"):
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                raise invalid(name.lstrip("-"), "needs a value")
            if name == "--harness":
                names += [n.strip() for n in value.split(",") if n.strip()]
            else:
                directory = Path(value).expanduser().absolute()
        elif arg == "--list":
            listing = True
        else:
            raise invalid("arguments", f"unexpected argument {arg!r}",
                          hint="usage: bsk install-skill [--harness NAME]… [--dir DIR] [--list]")
        i += 1
    if "all" in names:
        names = [h.name for h in HARNESSES]
    for n in names:
        if n not in BY_NAME:
            raise BskError("invalid_params",
                           f"harness: unknown harness {n!r} (known: "
                           f"{', '.join(BY_NAME)}, all)", details={"field": "harness"})
    chosen = [BY_NAME[n] for n in dict.fromkeys(names)]
    if listing:
        return {"harnesses": [status(h, directory) for h in chosen or HARNESSES]}
    return {"installed": [install(h, directory) for h in chosen or [BY_NAME["claude"]]]}
