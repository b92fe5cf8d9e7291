"""The agent skill: its examples run for real, every command it names exists, and
`bsk install-skill` puts it where each harness looks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

from support.cli import BSK, Bsk

from browserskill.cli import skill
from browserskill.cli.commands import CONTROL_BY_WORDS
from browserskill.cli.main import find_command

ROOT = Path(__file__).resolve().parent.parent
SKILL_MD = skill.SKILL_FILE.read_text(encoding="utf-8")


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_front_matter_and_package_data() -> None:
    meta = skill.front_matter(SKILL_MD)
    assert meta["name"] == "browserskill"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", meta["name"])
    assert 50 < len(meta["description"]) <= 1024 and "Use when" in meta["description"]
    assert (ROOT / "skill" / "SKILL.md").read_text(encoding="utf-8") == SKILL_MD
    assert (resources.files("browserskill.cli.skill") / "SKILL.md").read_text(
        encoding="utf-8") == SKILL_MD
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packaged = skill.SKILL_FILE.relative_to(ROOT / "browserskill").as_posix()
    assert packaged in pyproject["tool"]["setuptools"]["package-data"]["browserskill"]
    # Short: it is read into an agent's context (the command list takes ~20 lines, and
    # grows a line with each few commands).
    assert len(SKILL_MD.splitlines()) < 185


def test_every_command_it_names_exists() -> None:
    mentioned = set()
    for match in re.finditer(r"\bbsk((?: [a-z][a-z-]*){1,2})", SKILL_MD):
        words = match.group(1).split()
        found, _ = find_command(words)
        assert found, f"SKILL.md names `bsk {' '.join(words)}`, which is no command"
        mentioned.add(found)
    for needed in [("session", "start"), ("snapshot",), ("click",), ("session", "stop")]:
        assert needed in mentioned
    assert ("install-skill",) in CONTROL_BY_WORDS


def test_it_lists_every_command_and_says_so() -> None:
    from browserskill import docgen
    from browserskill.base.catalog import TOOLS

    assert docgen.skill_markdown(SKILL_MD) == SKILL_MD, "run python -m browserskill.docgen --write"
    listed = SKILL_MD.split(docgen.COMMANDS_BEGIN)[1].split(docgen.COMMANDS_END)[0]
    assert "This list is complete" in SKILL_MD.split(docgen.COMMANDS_BEGIN)[0]
    for words in [c.words for c in CONTROL_BY_WORDS.values()] + [t.words for t in TOOLS]:
        if words != ("session", "stop") or "`session stop" in listed:
            assert f"`{' '.join(words)}" in listed, words
    for topic in ("iframe", "mouse click", "dialog accept", "tab select", "download wait",
                  "element_disabled"):
        assert topic in SKILL_MD, topic


def test_the_examples_run(shared_bsk: Bsk, site: str, tmp_path: Path) -> None:
    blocks = bash_blocks(SKILL_MD)
    assert len(blocks) >= 3
    script = "set -euo pipefail\n" + "\n".join(blocks)
    script = script.replace("https://example.com", site)
    env = {**shared_bsk.env,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("BSK_SESSION", None)
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    # What the examples say the output looks like is what it looks like.
    for block in blocks:
        for line in block.splitlines():
            if line.startswith("# - "):
                assert line[2:] in proc.stdout, f"{line!r} not in:\n{proc.stdout}"
    assert "Welcome, alice" in proc.stdout
    assert '"text": "hi"' in proc.stdout  # the page's own tool answered
    assert "exit 4" in proc.stdout and "[stale_ref]" in proc.stderr
    assert "session checkout stopped" in proc.stdout


def run_install(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_CONFIG_HOME", None)
    return subprocess.run([*BSK, "--json", "install-skill", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def installed(proc: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str]]:
    assert proc.returncode == 0, proc.stderr
    return {x["harness"]: (x["action"], x["path"]) for x in json.loads(proc.stdout)["installed"]}


def test_install_skill_for_every_harness(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    expected = {
        "claude": home / ".claude/skills/browserskill/SKILL.md",
        "codex": home / ".agents/skills/browserskill/SKILL.md",
        "opencode": home / ".config/opencode/skills/browserskill/SKILL.md",
        "cursor": project / ".cursor/rules/browserskill.mdc",
    }
    assert set(expected) == set(skill.BY_NAME)
    first = installed(run_install("--harness", "all", home=home, cwd=project))
    assert first == {h: ("created", str(p)) for h, p in expected.items()}
    for name, path in expected.items():
        text = path.read_text(encoding="utf-8")
        if name == "cursor":
            meta = skill.front_matter(text)
            assert meta["description"] == skill.front_matter(SKILL_MD)["description"]
            assert meta["alwaysApply"] == "false" and skill.body(text) == skill.body(SKILL_MD)
        else:
            assert text == SKILL_MD
    # Idempotent: a second run changes nothing; a changed copy is brought up to date.
    again = installed(run_install("--harness", "all", home=home, cwd=project))
    assert {a for a, _ in again.values()} == {"unchanged"}
    expected["codex"].write_text("old\n")
    listing = run_install("--list", home=home, cwd=project)
    states = {h["harness"]: h["state"] for h in json.loads(listing.stdout)["harnesses"]}
    assert states == {"claude": "up to date", "codex": "outdated", "opencode": "up to date",
                      "cursor": "up to date"}
    fixed = installed(run_install("--harness", "codex,claude", home=home, cwd=project))
    assert fixed == {"codex": ("updated", str(expected["codex"])),
                     "claude": ("unchanged", str(expected["claude"]))}
    assert expected["codex"].read_text(encoding="utf-8") == SKILL_MD


def test_install_skill_into_a_directory_and_by_default(tmp_path: Path) -> None:
    home, target = tmp_path / "home", tmp_path / "proj" / ".claude" / "skills"
    home.mkdir()
    for name in skill.BY_NAME:
        got = installed(run_install("--harness", name, "--dir", str(target / name),
                                    home=home, cwd=tmp_path))
        path = Path(got[name][1])
        assert got[name][0] == "created" and path.exists()
        assert path == skill.BY_NAME[name].target(target / name)
    default = installed(run_install(home=home, cwd=tmp_path))  # no --harness: claude
    assert default == {"claude": ("created",
                                  str(home / ".claude/skills/browserskill/SKILL.md"))}
    human = subprocess.run([*BSK, "install-skill"], cwd=tmp_path, capture_output=True,
                           text=True, env={**os.environ, "HOME": str(home)}, timeout=60)
    assert human.returncode == 0 and human.stdout.startswith("unchanged ")


def test_install_skill_rejects_unknown_harnesses(tmp_path: Path) -> None:
    proc = run_install("--harness", "emacs", home=tmp_path, cwd=tmp_path)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "invalid_params"
    assert not list(tmp_path.iterdir())


def test_harness_paths_are_documented() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for where in ["~/.claude/skills/browserskill/SKILL.md",
                  "~/.agents/skills/browserskill/SKILL.md",
                  "~/.config/opencode/skills/browserskill/SKILL.md",
                  ".cursor/rules/browserskill.mdc"]:
        assert where in readme and where in (skill.__doc__ or "")
