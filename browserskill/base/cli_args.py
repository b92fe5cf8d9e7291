"""Reading the command line: global options from anywhere, tool arguments from the
catalog's parameter definitions (no argparse tree per call: start-up time matters)."""

from __future__ import annotations

import os

from browserskill.base import contract
from browserskill.base.catalog import Param, ToolSpec
from browserskill.base.contract import DEFAULT_SESSION, valid_session_id
from browserskill.base.errors import BskError, invalid

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

class Globals:
    """The options every command takes (a plain class: dataclasses cost start-up time)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env  # the daemon passes the caller's
        self.session: str = env.get("BSK_SESSION") or DEFAULT_SESSION
        self.json = False
        self.wait = False
        self.timeout: float | None = None
        self.key: str | None = None
        self.help = False
        self.session_given = False  # -s/--session was on the line (not just the default)
        # Page text wrapped in nonce markers (browserskill/base/boundaries.py)
        self.boundaries = env.get("BSK_BOUNDARIES", "").strip().lower() in (
            "1", "true", "yes", "on")


_VALUE_OPTS = {"--session": "session", "-s": "session", "--timeout": "timeout", "--key": "key",
               "--idempotency-key": "key"}
_BOOL_OPTS = {"--json": "json", "--wait": "wait", "--help": "help", "-h": "help",
              "--boundaries": "boundaries"}


def split_globals(argv: list[str], g: Globals,
                  owns: Callable[[list[str], str], bool] | None = None) -> list[str]:
    """Take global options from anywhere on the line (before `--`) into `g`; return the
    rest in order. `--json` is read first, so even a bad option's error honours it.

    `owns(words so far, flag)`: True when the command already named takes that flag
    itself (`press --key a` is the key to press; the global one is `--idempotency-key`
    then, or `--key` before the command)."""
    g.json = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        name, eq, inline = arg.partition("=")
        if name in _VALUE_OPTS and owns is not None and owns(rest, name):
            rest.append(arg)
        elif name in _VALUE_OPTS:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                raise invalid(name.lstrip("-"), "needs a value")
            setattr(g, _VALUE_OPTS[name], value)
            g.session_given = g.session_given or _VALUE_OPTS[name] == "session"
        elif arg in _BOOL_OPTS:
            setattr(g, _BOOL_OPTS[arg], True)
        else:
            rest.append(arg)
        i += 1
    if isinstance(g.timeout, str):
        g.timeout = contract.check_timeout_s(g.timeout)
    if g.key is not None and not (contract.valid_idempotency_key(g.key) and g.key.isprintable()):
        raise invalid("key", f"must be 1-{contract.IDEMPOTENCY_KEY_MAX} printable characters"
                      + (f", got {len(g.key)}" if len(g.key) > contract.IDEMPOTENCY_KEY_MAX else
                         ", got an empty key" if not g.key else ""),
                      hint="an idempotency key names one call: e.g. --key order-42")
    if not valid_session_id(g.session):
        raise invalid("session",
                      f"{g.session!r} is not a session id ({contract.SESSION_ID_RULE})")
    return rest


# -- tool arguments, from the catalog ---------------------------------------------------


def _convert(p: Param, raw: str, cwd: str | None = None) -> Any:
    if p.type == "integer":
        try:
            return int(raw)
        except ValueError:
            raise invalid(p.name, f"must be an integer, got {raw!r}") from None
    if p.type == "number":
        try:
            return float(raw)
        except ValueError:
            raise invalid(p.name, f"must be a number, got {raw!r}") from None
    if p.type == "object":
        import json

        try:
            return json.loads(raw)
        except ValueError as e:
            raise invalid(p.name, f"not valid JSON ({e})",
                          hint=f"give a JSON object, e.g. {p.flag} '{{\"q\": \"lamp\"}}'") from None
    if p.path:
        if not raw.strip():  # made absolute it would be the working directory itself
            raise invalid(p.name, "is empty: give a file's path")
        return absolute(raw, cwd)
    return raw


def absolute(path: str, cwd: str | None = None) -> str:
    """`path` made absolute against `cwd` (the caller's working directory; the daemon
    reads a command line for a `bsk` process elsewhere) or this process's."""
    path = os.path.expanduser(path)
    return os.path.normpath(os.path.join(cwd, path)) if cwd else os.path.abspath(path)


def local_file_url(url: str, cwd: str | None = None) -> str:
    """`bsk open page.html` / `~/x.html` / `/tmp/x.html`: an existing local file is a
    file:// URL (the daemon would otherwise read it as a host name)."""
    if not url or "://" in url or url.startswith(("data:", "about:", "chrome:",
                                                  "view-source:")):
        return url  # "" is no file (not the working directory): `url` says it is required
    path = absolute(url, cwd)
    if not os.path.exists(path):
        if url.startswith(("./", "../", "~/")):  # a path, never a host name
            raise invalid("url", f"no such file: {path}")
        return url
    from pathlib import Path

    return Path(path).as_uri()


# -- scripts: `bsk replay FILE`'s lines, and `bsk batch`'s commands --------------------

# Commands a script line may not run: the recording's own ends, the session's, a batch.
NOT_IN_SCRIPTS = ("record_start", "record_stop", "session_stop", "batch")


def script_steps(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, command) of a script's lines that are commands: blank lines and
    `#` comments skipped."""
    return [(number, text.strip()) for number, text in enumerate(lines, 1)
            if text.strip() and not text.strip().startswith("#")]


def script_words(number: int, text: str, field: str = "script",
                 env: Mapping[str, str] | None = None, where: str = "line") -> list[str]:
    """A script line's words, as a shell would split them; with `env`, each ${VAR}
    replaced by its value (a recorded password: ${BSK_SECRET_1}), without: as written.
    Errors name it `{where} {number}` (a script's line; a batch's step)."""
    import re
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as e:
        raise invalid(field, f"{where} {number}: {e}") from None
    if env is None:
        return words

    def value(m: re.Match[str]) -> str:
        got = env.get(m.group(1))
        if got is None:
            raise invalid(field, f"{where} {number}: ${{{m.group(1)}}} is not set",
                          hint=f"export {m.group(1)}=… (a recorded password) and run again")
        return got

    return [re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", value, w) for w in words]


def script_line(number: int, text: str, field: str = "script",
                env: Mapping[str, str] | None = None, cwd: str | None = None,
                where: str = "line") -> tuple[ToolSpec, dict[str, Any]]:
    """One script line → the tool it names and its params, checked the way `bsk TOOL`
    checks them (`bsk replay`, `bsk batch` and the daemon's batch read lines with this).
    Every error names it: `{where} {number}`, and the line when its params are wrong."""
    from browserskill.base.catalog import BY_WORDS

    words = script_words(number, text, field, env, where)
    spec = next((BY_WORDS[tuple(words[:n])] for n in (2, 1)
                 if tuple(words[:n]) in BY_WORDS), None)
    if spec is None or spec.name in NOT_IN_SCRIPTS or spec.hidden:
        import difflib

        runnable = {" ".join(w): w for w, s in BY_WORDS.items()
                    if s.name not in NOT_IN_SCRIPTS and not s.hidden}
        typed = " ".join(words[:2]) if len(words) > 1 and words[0] in (
            w[0] for w in runnable.values() if len(w) > 1) else (words or [""])[0]
        near = difflib.get_close_matches(typed, list(runnable), n=1, cutoff=0.7)
        raise invalid(field, f"{where} {number}: {typed!r} is not a command a script can run",
                      hint=f"did you mean `{near[0]}`?" if near
                      else "one bsk tool command per line")
    try:
        raw = parse_tool_args(spec, words[len(spec.words):], cwd)
        if isinstance(raw.get("url"), str):
            raw["url"] = local_file_url(raw["url"], cwd)
        return spec, spec.validate(raw)
    except BskError as e:  # which of the lines, as a failing step's error says it
        e.message = f"{where} {number} ({text.strip()}): {e.message}"
        e.args = (e.message,)
        raise


def looks_like_option(arg: str) -> bool:
    return arg.startswith("-") and len(arg) > 1 and not arg[1:2].isdigit() and arg != "-"


def parse_tool_args(spec: ToolSpec, args: list[str], cwd: str | None = None) -> dict[str, Any]:
    by_flag = {p.flag: p for p in spec.params}
    by_flag.update({p.short: p for p in spec.params if p.short})
    positionals = [p for p in spec.params if p.positional]
    out: dict[str, Any] = {}
    placed: set[str] = set()  # the parameters given by position
    literal = False
    bare: Any = None  # the flag just given alone, if any (`--abort`)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        after_bare, bare = bare, None
        if arg == "--" and not literal:
            literal = True
            continue
        if not literal and looks_like_option(arg):
            name, eq, inline = arg.partition("=")
            p = by_flag.get(name)
            if p is None and name.startswith("--no-") and f"--{name[5:]}" in by_flag:
                p = by_flag[f"--{name[5:]}"]
                if p.type == "boolean":
                    out[p.name] = False
                    continue
            if p is None:
                raise unknown_option(spec, name, by_flag)
            if p.type == "boolean":
                out[p.name] = True
                continue
            if not eq and p.bare is not None and (i >= len(args) or args[i] not in p.choices):
                out[p.name] = p.bare  # `--abort` alone; `--abort timedout` names one
                bare = p
                continue
            if not eq:
                if i >= len(args):
                    raise invalid(p.name, "needs a value")
                inline = args[i]
                i += 1
            if p.type == "array":
                out.setdefault(p.name, []).append(_convert(p, inline, cwd))
            elif p.name in placed:  # `press Escape --key abc`: which one was meant?
                raise _given_twice(spec, p, out[p.name], inline)
            else:
                out[p.name] = _convert(p, inline, cwd)
            continue
        while positionals and positionals[0].name in out and positionals[0].type != "array":
            positionals.pop(0)
        if not positionals:
            if after_bare is not None:  # `--abort bogus`: a value meant for the flag
                raise invalid(after_bare.name, f"must be one of "
                              f"{', '.join(after_bare.choices)}, got {arg!r}",
                              hint=f"or give {after_bare.flag} alone: {after_bare.bare}")
            raise invalid("arguments", f"unexpected argument {arg!r}",
                          hint=f"usage: bsk {spec.usage()}")
        p = positionals[0]
        if p.type == "array":
            out.setdefault(p.name, []).append(_convert(p, arg, cwd))
        else:
            out[p.name] = _convert(p, arg, cwd)
            placed.add(p.name)
            positionals.pop(0)
    return out


def _given_twice(spec: ToolSpec, p: Param, first: Any, then: str) -> BskError:
    words = " ".join(spec.words)
    hint = f"give it once: `bsk {spec.usage()}`"
    if p.flag in _VALUE_OPTS:  # the tool's own flag shadows the global option after it
        hint += (f"; {p.flag} after `{words}` is its {p.name.upper()}: the global "
                 f"{p.flag} goes before the command (`bsk {p.flag} {then} {words} …`)"
                 + (" or is said --idempotency-key" if p.flag == "--key" else ""))
    return invalid(p.name, f"given twice: {first!r} by position and {then!r} by "
                   f"{p.flag}", hint=hint)


# Peers' snapshot flags for what bsk does another way (agent-browser's -c/--compact: bsk's
# snapshot is compact already; -d/--depth: bsk bounds size, or reads one part).
_PEER_FLAGS = {("snapshot", "-c"): "--interactive", ("snapshot", "--compact"): "--interactive",
               ("snapshot", "-d"): "--max-tokens", ("snapshot", "--depth"): "--max-tokens"}


def unknown_option(spec: ToolSpec, name: str, by_flag: dict[str, Param]) -> Exception:
    """An option the command doesn't take: the error names the nearest real one (by
    spelling, or a one-letter flag by its letter), so the next try can be right."""
    import difflib

    command = " ".join(spec.words)
    longs = [f for f in by_flag if f.startswith("--")]
    peer = _PEER_FLAGS.get((command, name))
    if peer:
        near = [peer]
    elif name.startswith("--"):  # by the names alone: "--" made --foo look like --ref
        near = ["--" + n for n in difflib.get_close_matches(
            name[2:], [f[2:] for f in longs], n=1, cutoff=0.6)]
    else:  # `-x`: the long option that starts with that letter, if exactly one does
        near = [f for f in longs if f[2:3] == name[1:2]]
        near = near if len(near) == 1 else []
    known = ", ".join(p.flag + (f" ({p.short})" if p.short else "")
                      for p in spec.params) or "none"
    hint = (f"did you mean {near[0]}? (bsk {command} --help)" if near
            else f"bsk {command} --help")
    return invalid(name.lstrip("-"), f"unknown option for `{command}` (options: {known})",
                   hint=hint)


# -- talking to the daemon --------------------------------------------------------------


def tool_params(spec: ToolSpec, args: list[str], g: Globals, cwd: str | None = None,
                stdin: Callable[[], str] | None = None) -> dict[str, Any]:
    """A tool's command-line arguments → its validated params: read against the catalog,
    a local file given to `open` made a file:// URL, --json's own param turned on, `-`
    for a param that takes stdin (`eval -`) replaced by what `stdin()` reads. One
    reading for `bsk` and for the daemon reading a command line for it (`/v1/cli`), which
    has no stdin: the launcher leaves a `-` to the whole CLI (browserskill/cli/fast.py)."""
    raw = parse_tool_args(spec, args, cwd)
    for p in spec.params:
        if p.stdin and raw.get(p.name) == "-":
            if stdin is None:
                raise invalid(p.name, "`-` (read it from stdin) works on the bsk command "
                              "line only", hint="give the text itself")
            raw[p.name] = stdin()
    if isinstance(raw.get("url"), str):
        raw["url"] = local_file_url(raw["url"], cwd)
    if g.json and spec.json_param:
        raw.setdefault(spec.json_param, True)
    return spec.validate(raw)

