"""`bsk`: parse a command, send it to the daemon, print the outcome, exit with its code.

Start-up cost matters (one process per agent action), so this path imports only the
stdlib, the error table and the tool catalog, and parses arguments by hand from the
catalog instead of building an argparse tree for every command.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple

from browserskill import __version__, paths
from browserskill.cli import render
from browserskill.cli.transport import DaemonLost, DaemonUnreachable, request
from browserskill.errors import CODES, BskError, exit_code, invalid
from browserskill.tools.catalog import BY_WORDS, TOOLS, Param, ToolSpec

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

DEFAULT_SESSION = "default"


def _id_like(text: str, extra: str, first_alnum: bool = True) -> bool:
    # `re` would add to every call's start-up; these ids are simple.
    if not 0 < len(text) <= 67 or (first_alnum and not text[0].isalnum()):
        return False
    return all((c.isascii() and c.isalnum()) or c in extra for c in text)


def valid_session_id(text: str) -> bool:
    return len(text) <= 64 and _id_like(text, "_.-")


def valid_op_id(text: str) -> bool:
    return text.startswith("op_") and _id_like(text, "_-")


class Globals:
    """The options every command takes (a plain class: dataclasses cost start-up time)."""

    def __init__(self) -> None:
        self.session: str = os.environ.get("BSK_SESSION") or DEFAULT_SESSION
        self.json = False
        self.wait = False
        self.timeout: float | None = None
        self.key: str | None = None
        self.help = False
        self.session_given = False  # -s/--session was on the line (not just the default)


_VALUE_OPTS = {"--session": "session", "-s": "session", "--timeout": "timeout", "--key": "key"}
_BOOL_OPTS = {"--json": "json", "--wait": "wait", "--help": "help", "-h": "help"}


def split_globals(argv: list[str], g: Globals) -> list[str]:
    """Take global options from anywhere on the line (before `--`) into `g`; return the
    rest in order. `--json` is read first, so even a bad option's error honours it."""
    g.json = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        name, eq, inline = arg.partition("=")
        if name in _VALUE_OPTS:
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
        try:
            g.timeout = float(g.timeout)
        except ValueError:
            raise invalid("timeout", f"must be a number of seconds, got {g.timeout!r}") from None
        if not 0 < g.timeout <= 600:
            raise invalid("timeout", "must be more than 0 and at most 600 seconds")
    if not valid_session_id(g.session):
        raise invalid("session", f"{g.session!r} is not a session id (1-64 letters, digits, "
                      "'_', '.', '-')")
    return rest


# -- tool arguments, from the catalog ---------------------------------------------------


def _convert(p: Param, raw: str) -> Any:
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
        return os.path.abspath(os.path.expanduser(raw))
    return raw


def _looks_like_option(arg: str) -> bool:
    return arg.startswith("-") and len(arg) > 1 and not arg[1:2].isdigit() and arg != "-"


def parse_tool_args(spec: ToolSpec, args: list[str]) -> dict[str, Any]:
    by_flag = {p.flag: p for p in spec.params}
    positionals = [p for p in spec.params if p.positional]
    out: dict[str, Any] = {}
    literal = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--" and not literal:
            literal = True
            continue
        if not literal and _looks_like_option(arg):
            name, eq, inline = arg.partition("=")
            p = by_flag.get(name)
            if p is None and name.startswith("--no-") and f"--{name[5:]}" in by_flag:
                p = by_flag[f"--{name[5:]}"]
                if p.type == "boolean":
                    out[p.name] = False
                    continue
            if p is None:
                known = ", ".join(by_flag) or "none"
                raise invalid(name.lstrip("-"), f"unknown option for `{' '.join(spec.words)}` "
                              f"(options: {known})", hint=f"bsk {' '.join(spec.words)} --help")
            if p.type == "boolean":
                out[p.name] = True
                continue
            if not eq:
                if i >= len(args):
                    raise invalid(p.name, "needs a value")
                inline = args[i]
                i += 1
            if p.type == "array":
                out.setdefault(p.name, []).append(_convert(p, inline))
            else:
                out[p.name] = _convert(p, inline)
            continue
        while positionals and positionals[0].name in out and positionals[0].type != "array":
            positionals.pop(0)
        if not positionals:
            raise invalid("arguments", f"unexpected argument {arg!r}",
                          hint=f"usage: bsk {spec.usage()}")
        p = positionals[0]
        if p.type == "array":
            out.setdefault(p.name, []).append(_convert(p, arg))
        else:
            out[p.name] = _convert(p, arg)
            positionals.pop(0)
    return out


# -- talking to the daemon --------------------------------------------------------------


class Client:
    def __init__(self, g: Globals) -> None:
        self.g = g
        self.sock = paths.socket_file()
        self._spawned = False

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, *,
             headers: dict[str, str] | None = None, spawn: bool = True,
             timeout: float | None = None) -> tuple[int, dict[str, str], Any]:
        wire_timeout = (timeout or self.g.timeout or 30.0) + 30.0
        try:
            return request(self.sock, method, path, body, timeout=wire_timeout, headers=headers)
        except DaemonUnreachable:
            if not spawn:
                raise
        self.start_daemon()
        return request(self.sock, method, path, body, timeout=wire_timeout, headers=headers)

    def start_daemon(self, extra: list[str] | None = None) -> int:
        from browserskill.cli.spawn import DaemonStartError, spawn

        try:
            pid = spawn(extra)
        except DaemonStartError as e:
            raise BskError("browser_unavailable", f"could not start the daemon: {e}",
                           hint="run `bsk doctor` for what to fix") from None
        self._spawned = True
        return pid


def tool_call(client: Client, spec: ToolSpec, params: dict[str, Any]) -> dict[str, Any]:
    g = client.g
    if g.timeout and spec.timeout_range_s:
        lo, hi = spec.timeout_range_s
        if not lo <= g.timeout <= hi:
            raise invalid("timeout", f"must be {lo:g}-{hi:g} seconds for "
                          f"`{' '.join(spec.words)}`, got {g.timeout:g}")
    body = dict(params)
    if g.wait:
        body["wait"] = True
    if g.timeout:
        body["timeout_ms"] = int(g.timeout * 1000)
    # Naming the operation up front lets Ctrl-C cancel it and report how it ended.
    op_id = "op_" + os.urandom(6).hex()
    headers = {"X-Op-Id": op_id}
    if g.key:
        headers["Idempotency-Key"] = g.key
    try:
        _, _, answer = client.call(
            "POST", f"/v1/sessions/{g.session}/tools/{spec.name}", body,
            headers=headers, timeout=g.timeout or spec.default_timeout_s,
        )
    except KeyboardInterrupt:
        return interrupted(client, op_id)
    except DaemonLost:
        return lost_daemon(client, op_id)
    return answer


def lost_daemon(client: Client, op_id: str) -> dict[str, Any]:
    """The daemon died mid-call: a new one reconciles the journal and says what it knows."""
    print(f"bsk: the daemon went away during {op_id}; asking a new one what happened",
          file=sys.stderr)
    import time

    status, answer = 0, None
    for _ in range(50):  # the dying daemon's socket may still reset a connection or two
        try:
            status, _, answer = client.call("GET", f"/v1/ops/{op_id}")
            break
        except DaemonLost:
            time.sleep(0.1)
        except (BskError, DaemonUnreachable):
            break
    if status == 200 and isinstance(answer, dict):
        return answer
    return {"op_id": op_id, "session_id": client.g.session, "status": "outcome_unknown",
            "dispatched": "unknown", "retry_safe": False, "result": None,
            "error": {"code": "outcome_unknown", "details": {},
                      "message": "the daemon went away before answering",
                      "hint": f"`bsk op show {op_id}` once the daemon is back; inspect the "
                              "page before acting again"}}


def interrupted(client: Client, op_id: str) -> dict[str, Any]:
    """Ctrl-C or SIGTERM: cancel our operation, then report how it really ended."""
    import time

    print(f"bsk: interrupted; cancelling {op_id}…", file=sys.stderr)
    deadline = time.monotonic() + 1.0
    while True:  # the call may still be on its way to the daemon
        status, _, _ = request(client.sock, "POST", f"/v1/ops/{op_id}/cancel", timeout=10)
        if status != 404 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if status == 404:
        return {"op_id": op_id, "session_id": client.g.session, "status": "cancelled",
                "dispatched": "no", "retry_safe": False, "result": None,
                "error": {"code": "cancelled", "hint": "nothing reached the browser",
                          "message": "interrupted before the daemon received the call",
                          "details": {"reason": "cancel"}}}
    return request(client.sock, "GET", f"/v1/ops/{op_id}/wait?timeout_ms=10000", timeout=15)[2]


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def outcome(answer: Any) -> tuple[dict[str, Any], int]:
    """Normalise any daemon answer to the result shape, with its exit code."""
    if not isinstance(answer, dict):
        answer = {"error": {"code": "internal", "message": f"unexpected answer: {answer!r}"}}
    error = answer.get("error")
    if "op_id" not in answer and error:
        entry = CODES.get(error.get("code", "internal"), CODES["internal"])
        answer = {"op_id": None, "status": "failed", "dispatched": entry.dispatched,
                  "retry_safe": entry.retry_safe, "result": None, "error": error}
    code = error.get("code") if error else None
    return answer, exit_code(code)


# -- commands that are not tools ---------------------------------------------------------


def cmd_session_start(client: Client, args: list[str]) -> Any:
    sid, label, browser = None, None, None
    i = 0
    while i < len(args):
        if args[i] in ("--label", "-l", "--browser") and i + 1 < len(args):
            if args[i] == "--browser":
                browser = args[i + 1]
            else:
                label = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--label="):
            label = args[i].split("=", 1)[1]
        elif args[i].startswith("--browser="):
            browser = args[i].split("=", 1)[1]
        elif _looks_like_option(args[i]):
            raise invalid(args[i].lstrip("-"), "unknown option (accepted: --label, --browser)")
        elif sid is None:
            sid = args[i]
        else:
            raise invalid("arguments", f"unexpected argument {args[i]!r}")
        i += 1
    body = {k: v for k, v in (("session_id", sid), ("label", label), ("browser", browser))
            if v is not None}
    return client.call("POST", "/v1/sessions", body)[2]


def cmd_session_list(client: Client, args: list[str]) -> Any:
    _no_args("session list", args)
    return client.call("GET", "/v1/sessions")[2]


def cmd_session_stop(client: Client, args: list[str]) -> Any:
    if args == ["--all"]:
        _status, _, listing = client.call("GET", "/v1/sessions", spawn=False)
        results = []
        for s in listing.get("sessions", []):
            results.append(_stop_one(client, s["session_id"]))
        return {"stopped": results}
    if len(args) > 1 or (args and _looks_like_option(args[0])):
        raise invalid("arguments", "usage: bsk session stop [ID | --all]")
    return _stop_one(client, args[0] if args else client.g.session)


def _stop_one(client: Client, sid: str) -> Any:
    if not valid_session_id(sid):
        raise invalid("session", f"{sid!r} is not a session id")
    query = "?wait=true" if client.g.wait else ""
    try:
        return client.call("DELETE", f"/v1/sessions/{sid}{query}",
                           spawn=False)[2]
    except DaemonUnreachable:
        raise BskError("session_not_found", f"no session {sid!r}: the daemon is not running",
                       details={"session_id": sid}) from None


def cmd_browsers(client: Client, args: list[str]) -> Any:
    _no_args("browsers", args)
    return client.call("GET", "/v1/browsers")[2]


def cmd_status(client: Client, args: list[str]) -> Any:
    connect = "--connect" in args
    _no_args("status", [a for a in args if a != "--connect"])
    return client.call("GET", "/v1/status" + ("?connect=true" if connect else ""))[2]


def cmd_doctor(client: Client, args: list[str]) -> Any:
    _no_args("doctor", args)
    from browserskill.cli.doctor import run_doctor

    return run_doctor(client)


def cmd_daemon_start(client: Client, args: list[str]) -> Any:
    daemon_args = [a for a in args if a != "--foreground"]
    check_daemon_args(daemon_args)
    if "--foreground" in args:
        from browserskill.daemon.__main__ import main as daemon_main

        sys.exit(daemon_main(daemon_args))
    from browserskill.cli.spawn import reachable

    if reachable(paths.socket_file()):
        info = client.call("GET", "/v1/daemon", spawn=False)[2]
        info["already_running"] = True
        if args:
            info["note"] = "options not applied: stop the daemon first to change them"
        return info
    client.start_daemon(args)
    return client.call("GET", "/v1/daemon", spawn=False)[2]


def check_daemon_args(args: list[str]) -> None:
    """Bad daemon options are the caller's mistake (invalid_params), not a dead browser."""
    import argparse

    from browserskill.daemon.__main__ import parser

    class Raising(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            # "argument --idle-timeout: invalid …" / "unrecognized arguments: --x y"
            head, _, rest = message.partition(": ")
            option = head.split()[-1] if head.startswith("argument") else rest.split()[0]
            raise invalid(option.lstrip("-"), message, hint="bsk daemon start --help")

    p = parser()
    checker = Raising(prog=p.prog, add_help=False)
    for action in p._actions:
        if action.option_strings and action.dest != "help":
            checker._add_action(action)
    checker.parse_args(args)


def cmd_daemon_stop(client: Client, args: list[str]) -> Any:
    _no_args("daemon stop", args)
    from browserskill.cli.spawn import reachable

    sock = paths.socket_file()
    try:
        answer = client.call("POST", "/v1/daemon/stop", spawn=False)[2]
    except DaemonUnreachable:
        return {"stopped": False, "note": "no daemon was running"}
    import time

    deadline = time.monotonic() + 15
    while reachable(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"stopped": not reachable(sock), "pid": answer.get("pid")}


def cmd_daemon_status(client: Client, args: list[str]) -> Any:
    _no_args("daemon status", args)
    try:
        return {"running": True, **client.call("GET", "/v1/daemon", spawn=False)[2]}
    except DaemonUnreachable:
        return {"running": False, "socket": paths.socket_file()}


def _op_id(args: list[str], usage: str) -> str:
    if len(args) != 1 or _looks_like_option(args[0]):
        raise invalid("op_id", "give exactly one operation id", hint=f"usage: bsk {usage}")
    if not valid_op_id(args[0]):
        raise BskError("op_not_found", f"no operation {args[0]!r} (ids look like op_…)",
                       hint="list recent ones with `bsk op list`", details={"op_id": args[0]})
    return args[0]


def cmd_op_show(client: Client, args: list[str]) -> Any:
    return client.call("GET", f"/v1/ops/{_op_id(args, 'op show ID')}")[2]


def cmd_op_cancel(client: Client, args: list[str]) -> Any:
    return client.call("POST", f"/v1/ops/{_op_id(args, 'op cancel ID')}/cancel")[2]


def cmd_op_wait(client: Client, args: list[str]) -> Any:
    timeout = int((client.g.timeout or 30) * 1000)
    op = _op_id(args, "op wait ID")
    return client.call("GET", f"/v1/ops/{op}/wait?timeout_ms={timeout}")[2]


def cmd_op_list(client: Client, args: list[str]) -> Any:
    query = "?limit=50"
    if args[:1] == ["--all"]:
        args = args[1:]
    elif client.g.session:
        query += "&session=" + client.g.session
    _no_args("op list [--all]", args)
    return client.call("GET", "/v1/ops" + query)[2]


def cmd_mcp(client: Client, args: list[str]) -> Any:
    """Serve MCP on stdin/stdout until the client hangs up (stdout is the protocol)."""
    _no_args("mcp [--session ID]", args)
    from browserskill.mcp_server import main as mcp_main

    explicit = client.g.session_given or bool(os.environ.get("BSK_SESSION"))
    sys.exit(mcp_main(session=client.g.session if explicit else None))


def cmd_install_skill(client: Client, args: list[str]) -> Any:
    from browserskill.skill import cli_install

    return cli_install(args)


def cmd_version(client: Client, args: list[str]) -> Any:
    _no_args("version", args)
    return {"version": __version__}


def _no_args(command: str, args: list[str]) -> None:
    if args:
        raise invalid("arguments", f"unexpected argument {args[0]!r}", hint=f"usage: bsk {command}")


# words: the command's words; run(client, args) -> answer; usage; summary.
Control = namedtuple("Control", "words run usage summary")


CONTROL: tuple[Control, ...] = (
    Control(("session", "start"), cmd_session_start,
            "session start [ID] [--label L] [--browser extension|ID|LABEL]",
            "Start a session (its own tab); use it with -s ID or BSK_SESSION=ID. With "
            "--browser, in the user's browser (extension): its own Agent Window."),
    Control(("browsers",), cmd_browsers, "browsers",
            "Browsers connected through the BrowserSkill extension (id, label, version)."),
    Control(("session", "list"), cmd_session_list, "session list", "List sessions."),
    Control(("session", "stop"), cmd_session_stop, "session stop [ID | --all]",
            "Stop a session and close its tabs (after its running operation)."),
    Control(("status",), cmd_status, "status [--connect]",
            "Daemon and browser status (--connect starts the browser to report it)."),
    Control(("doctor",), cmd_doctor, "doctor", "Check the set-up and say how to fix problems."),
    Control(("daemon", "start"), cmd_daemon_start,
            "daemon start [--foreground] [--cdp-url URL] [--profile DIR | --ephemeral] "
            "[--idle-timeout SEC] [--headed]", "Start the daemon (bsk starts it on first use)."),
    Control(("daemon", "stop"), cmd_daemon_stop, "daemon stop",
            "Stop the daemon; running operations end honestly."),
    Control(("daemon", "status"), cmd_daemon_status, "daemon status",
            "Daemon pid, socket, version and uptime."),
    Control(("op", "show"), cmd_op_show, "op show ID", "One operation with its timeline."),
    Control(("op", "list"), cmd_op_list, "op list [--all]",
            "Recent operations of this session (--all: every session)."),
    Control(("op", "cancel"), cmd_op_cancel, "op cancel ID", "Cancel an operation."),
    Control(("op", "wait"), cmd_op_wait, "op wait ID", "Wait for an operation to end."),
    Control(("mcp",), cmd_mcp, "mcp [--session ID]",
            "Serve the browser tools over MCP on stdio (one session per connection)."),
    Control(("install-skill",), cmd_install_skill,
            "install-skill [--harness NAME]… [--dir DIR] [--list]",
            "Install the agent skill (SKILL.md) where claude, codex, opencode or cursor "
            "look for it."),
    Control(("version",), cmd_version, "version", "Print the version."),
)
CONTROL_BY_WORDS = {c.words: c for c in CONTROL}
_HIDDEN = {("session", "stop")}  # a catalog tool, but the CLI form takes ID|--all
# Control commands that describe an operation rather than end as one (`op wait` does end
# with the operation's outcome, so its exit code is the operation's).
_REPORTS_AN_OP = {("op", "show"), ("op", "cancel")}


def find_command(rest: list[str]) -> tuple[tuple[str, ...], list[str]]:
    for n in (2, 1):
        words = tuple(rest[:n])
        if len(words) == n and (words in CONTROL_BY_WORDS or words in BY_WORDS):
            return words, rest[n:]
    return (), rest


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import signal

    signal.signal(signal.SIGTERM, _sigterm)
    g = Globals()
    try:
        rest = split_globals(argv, g)
        words, args = find_command(rest)
        if not words:
            if g.help or not rest:
                print(render.main_help(CONTROL, TOOLS, _HIDDEN))
                return 0
            raise unknown_command(rest)
        control = CONTROL_BY_WORDS.get(words)
        spec = BY_WORDS.get(words)
        if g.help:
            print(render.command_help(control, spec))
            return 0
        client = Client(g)
        if control is not None:
            answer = control.run(client, args)
            if words in _REPORTS_AN_OP and isinstance(answer, dict) and "op_id" in answer:
                # Showing an operation succeeded, whatever the operation's own outcome.
                render.show(words, answer, as_json=g.json, as_report=True)
                return 0
            answer, code = outcome(answer)
            render.show(words, answer, as_json=g.json)
            return code
        assert spec is not None
        raw = parse_tool_args(spec, args)
        if g.json and spec.json_param:
            raw.setdefault(spec.json_param, True)
        params = spec.validate(raw)
        answer, code = outcome(tool_call(client, spec, params))
        render.show(words, answer, as_json=g.json)
        return code
    except BskError as e:
        answer, code = outcome({"error": e.to_dict()})
        render.show((), answer, as_json=g.json)
        return code
    except DaemonUnreachable as e:
        answer, code = outcome({"error": BskError(
            "browser_unavailable", f"the daemon is not reachable: {e}",
            hint="run the command again; `bsk doctor` says what is wrong",
        ).to_dict()})
        render.show((), answer, as_json=g.json)
        return code
    except DaemonLost as e:
        answer, code = outcome({"error": BskError(
            "outcome_unknown", f"the daemon went away mid-call: {e}",
            hint="`bsk op list` shows what the daemon recorded",
        ).to_dict()})
        render.show((), answer, as_json=g.json)
        return code
    except TimeoutError:
        answer, code = outcome({"error": BskError(
            "outcome_unknown", "no answer from the daemon in time",
            hint="`bsk op list` shows whether the call ran").to_dict()})
        render.show((), answer, as_json=g.json)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def unknown_command(rest: list[str]) -> BskError:
    import difflib

    known = list(dict.fromkeys([" ".join(c.words) for c in CONTROL]
                               + [" ".join(t.words) for t in TOOLS if t.words not in _HIDDEN]))
    typed = " ".join(rest[:2])
    close = difflib.get_close_matches(typed, known, n=3, cutoff=0.5) or difflib.get_close_matches(
        rest[0], known, n=3, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else "see `bsk --help`"
    return BskError("invalid_params", f"command: unknown command {rest[0]!r}", hint=hint,
                    details={"field": "command"})


if __name__ == "__main__":
    sys.exit(main())
