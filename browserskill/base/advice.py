"""The daemon's advice in another front end's words.

Hints, notes and the catalog's summaries are written once, in the CLI's words: a command
in backticks (`bsk click e1`, `bsk tab list --scope user`), a flag (`--timeout 4`,
`--diff`), a usage line (`usage: bsk click REF`), an aside for HTTP callers
(`(HTTP "wait": true)`). Over MCP and in the Python client the same advice names that
front end's tools and parameters instead (`in_terms(text, MCP)`, `in_terms(text, PYTHON)`):
one reading of the CLI's words, a `Terms` per front end for how they are said there.

Invariants:
- Only bsk's own words change: a command that is no tool (`bsk mcp --caps …`,
  `bsk op list`) is left whole, and so is a quoted literal ('snapshot --diff': a batch's
  command, sent as written) and `--json` (about the CLI itself).
- A value keeps its meaning: seconds become milliseconds where the front end counts in
  milliseconds (MCP's `timeout_ms`).
- Pure text in, text out: the caller decides which texts are bsk's (never page text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from keyword import iskeyword

from browserskill.base import catalog

_COMMAND = re.compile(  # `bsk WORDS [ARG|'ARG'|[ARG]]… [--flag [VALUE]]…`
    r"`bsk ([a-z -]+?)((?: (?:\[?[A-Za-z][\w.-]*\]?|'[^'`]*'))*)"
    r"((?: --[a-z-]+(?: [^`\s-][^`\s]*)?)*)`")
_FLAG = re.compile(r"(?<![\w-])--(no-)?([a-z][a-z-]*)((?: [a-z0-9.]+)?)")  # not btn--primary
_QUOTED = re.compile(r"((?<!\w)'[^'\n]*'(?!\w))")  # a literal, passed as it is written
_USAGE = re.compile(r"usage: bsk ([a-z][a-z -]*[a-z])\b[^\n]*")
_HTTP_ASIDE = re.compile(r" \(HTTP [^()]*\)")  # `(HTTP "wait": true)`: the CLI's aside
_CHOICES = {p.name: p.choices for t in catalog.TOOLS for p in t.params if p.choices}
_BOOLEANS = {p.name for t in catalog.TOOLS for p in t.params if p.type == "boolean"} | {
    "wait"}

QUOTES = "'\""  # around a flag's value in a command: not part of it


@dataclass(frozen=True)
class Terms:
    """How one front end says a tool call, a parameter, and a value in seconds."""

    tool: str  # how a tool is named: "`{name}`" or "`{name}()`"
    with_args: str  # a tool with arguments: "`{name}` with {args}" or "`{name}({args})`"
    true: str  # a boolean's values as written there
    false: str
    timeout: str  # the deadline's parameter
    timeout_scale: float  # its unit in seconds (MCP: 1000, milliseconds)
    literal: str  # a value as written there: "{value}" or '"{value}"' (a Python string)
    placeholder: str | None  # a usage's placeholder (TEXT) stands as this; None: as it is
    keyword_suffix: str  # after a parameter named as a keyword of the language (`continue`)

    def param(self, cli_name: str) -> str:
        name = cli_name.replace("-", "_")
        return name + self.keyword_suffix if iskeyword(name) else name

    def assign(self, name: str, value: str) -> str:
        return f"{name}={value}"

    def arg(self, name: str, value: str, kind: str) -> str:
        if kind == "quoted":
            return self.assign(name, f'"{value}"')
        if kind == "placeholder":
            return self.assign(name, self.placeholder or value)
        return self.assign(name, self.literal.format(value=value))


MCP = Terms(tool="`{name}`", with_args="`{name}` with {args}", true="true", false="false",
            timeout="timeout_ms", timeout_scale=1000.0, literal="{value}", placeholder=None,
            keyword_suffix="")
PYTHON = Terms(tool="`{name}()`", with_args="`{name}({args})`", true="True", false="False",
               timeout="timeout", timeout_scale=1.0, literal='"{value}"', placeholder="…",
               keyword_suffix="_")


def spec_of(words: list[str]) -> tuple[catalog.ToolSpec | None, list[str]]:
    """The tool a CLI command line starts with (its longest match), and the words after."""
    for n in range(min(len(words), 3), 0, -1):
        spec = catalog.BY_WORDS.get(tuple(words[:n]))
        if spec is not None:
            return spec, words[n:]
    return None, words


def in_terms(text: str, terms: Terms) -> str:
    """`text` (bsk's own words, in the CLI's) as `terms`' front end says them."""
    def command(m: re.Match[str]) -> str:
        spec, words = spec_of(re.findall(r"'[^']*'|\S+", m.group(1) + m.group(2)))
        if spec is None:
            return m.group(0)
        positional = [p.name for p in spec.params if p.positional]
        args = []
        for name, word in zip(positional, words, strict=False):
            if word.startswith("'"):
                args.append(terms.arg(terms.param(name), word[1:-1], "quoted"))
            elif word.strip("[]").isupper():
                optional = " (optional)" if word[0] == "[" and not terms.placeholder else ""
                args.append(terms.arg(terms.param(name), word.strip("[]"), "placeholder")
                            + optional)
            else:
                args.append(terms.arg(terms.param(name), word, ""))
        for a in re.finditer(r"--([a-z-]+)(?: (\S+))?", m.group(3)):
            name = terms.param(a.group(1))
            args.append(terms.assign(name, f'"{a.group(2).strip(QUOTES)}"') if a.group(2)
                        else terms.assign(name, terms.true))
        if not args:
            return terms.tool.format(name=spec.name)
        return terms.with_args.format(name=spec.name, args=", ".join(args))

    def flag(m: re.Match[str]) -> str:
        name, word = terms.param(m.group(2)), m.group(3)
        if name == "json":
            return m.group(0)  # "the CLI's --json": about the CLI itself
        if name == "timeout":
            try:
                seconds = float(word)
            except ValueError:
                return terms.timeout + word
            return terms.assign(terms.timeout, f"{seconds * terms.timeout_scale:g}")
        if word.strip() in _CHOICES.get(name.rstrip("_"), ()):
            return terms.assign(name, f'"{word.strip()}"')
        if name.rstrip("_") in _BOOLEANS:
            value = terms.false if m.group(1) else terms.true
            return terms.assign(name, value) + word
        if m.group(1):
            return terms.assign(name, terms.false) + word
        return name + word  # a parameter named (`--settle MS`: "settle MS")

    def usage(m: re.Match[str]) -> str:
        spec, _ = spec_of(m.group(1).split())
        if spec is None:
            return m.group(0)
        needed = [terms.param(p.name) for p in spec.params if p.required]
        named = terms.tool.format(name=spec.name)
        return f"{named} needs {', '.join(needed)}" if needed else f"see {named}'s parameters"

    if terms.timeout_scale != 1:
        text = text.replace("--timeout (1-120 s, default 60)",
                            f"{terms.timeout} ({terms.timeout_scale:g}-"
                            f"{120 * terms.timeout_scale:g}, default "
                            f"{60 * terms.timeout_scale:g})")
    text = _HTTP_ASIDE.sub("", _USAGE.sub(usage, text))
    # A command that is no tool (`bsk mcp --caps …`) is for the CLI: left whole.
    return "".join(
        part if part.startswith(("`bsk ", "'")) else _FLAG.sub(flag, part)
        for piece in re.split(r"(`bsk [^`]*`)", _COMMAND.sub(command, text))
        for part in ([piece] if piece.startswith("`bsk ") else _QUOTED.split(piece)))
