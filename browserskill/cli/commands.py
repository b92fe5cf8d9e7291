"""The commands that are not browser tools: sessions, daemon, operations, status, doctor,
MCP, skill. `CONTROL` lists them with usage, each with its `run(client, args) -> answer`.

A control call's command (base/controls.py) takes its words, usage and summary from its
control, and its arguments too (`run_control`: path parameters as positional arguments,
`CliSpec.flags` as switches), unless a runner is registered under the control's name
(`@runs("op_get")`) for what needs more. The commands the daemon does not answer (daemon
start, mcp, secrets…) are `LOCAL`."""

from __future__ import annotations

import os
import sys
from collections import namedtuple

from browserskill import __version__
from browserskill.base import contract, controls, paths
from browserskill.base.catalog import SESSION_START as _SESSION_START
from browserskill.base.cli_args import looks_like_option, parse_tool_args
from browserskill.base.contract import Dispatched, valid_op_id, valid_session_id
from browserskill.base.controls import route
from browserskill.base.errors import BskError, invalid
from browserskill.cli.transport import DaemonUnreachable

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from browserskill.cli.daemon_client import Client

    Runner = Callable[[Client, list[str]], Any]

# The runners of the control calls whose command needs more than `run_control`.
RUNNERS: dict[str, Runner] = {}


def runs(name: str) -> Callable[[Runner], Runner]:
    def register(fn: Runner) -> Runner:
        assert controls.BY_NAME[name].cli is not None and name not in RUNNERS, name
        RUNNERS[name] = fn
        return fn
    return register


def run_control(control: controls.Control, client: Client, args: list[str]) -> Any:
    """A control's command as declared: its path parameters in order, then its switches;
    anything else is the caller's mistake."""
    usage = control.cli.usage
    switches = dict(control.cli.flags)
    on = [switches[a] for a in args if a in switches]
    rest = [a for a in args if a not in switches]
    values = {}
    for field in control.params:
        if field.where == "path":
            if not rest or looks_like_option(rest[0]):
                raise invalid(field.name, f"give the {field.name}", hint=f"usage: bsk {usage}")
            values[field.name] = rest.pop(0)
    _no_args(usage, rest)
    query = "&".join(f"{name}=true" for name in dict.fromkeys(on))
    path = controls.path_of(control, **values) + ("?" + query if query else "")
    return client.call(control.method, path)[2]


@runs("session_start")
def cmd_session_start(client: Client, args: list[str]) -> Any:
    params = parse_tool_args(_SESSION_START, args)
    if "session_id" in params and not valid_session_id(params["session_id"]):
        raise invalid("session_id", f"{params['session_id']!r} is not a session id (1-64 "
                      "letters, digits, '_', '.', '-')")
    if client.g.timeout:  # the start's deadline (a Grid's slot is awaited up to it)
        params["timeout_ms"] = int(client.g.timeout * 1000)
    try:
        return client.call(*route("session_start"), params, timeout=client.g.timeout or 60.0)[2]
    except KeyboardInterrupt:  # hanging up makes the daemon undo the start (api/app.py)
        return contract.refused(contract.error_dict(
            "cancelled", "interrupted: the session was not started",
            "nothing is kept (a Grid slot it got is released); start it again when you want it"),
            session_id=params.get("session_id"))


@runs("session_stop")
def cmd_session_stop(client: Client, args: list[str]) -> Any:
    if args == ["--all"]:
        _status, _, listing = client.call(*route("session_list"), spawn=False)
        results = []
        for s in listing.get("sessions", []):
            results.append(_stop_one(client, s["session_id"]))
        return {"stopped": results}
    if len(args) > 1 or (args and looks_like_option(args[0])):
        raise invalid("arguments", "usage: bsk session stop [ID | --all]")
    return _stop_one(client, args[0] if args else client.g.session)


def _stop_one(client: Client, sid: str) -> Any:
    if not valid_session_id(sid):
        raise invalid("session", f"{sid!r} is not a session id")
    query = "?wait=true" if client.g.wait else ""
    try:
        method, path = route("session_stop", sid=sid)
        return client.call(method, path + query, spawn=False)[2]
    except DaemonUnreachable:
        raise BskError("session_not_found", f"no session {sid!r}: the daemon is not running",
                       details={"session_id": sid}) from None


@runs("extension_unpair")
def cmd_extension_unpair(client: Client, args: list[str]) -> Any:
    if len(args) != 1 or looks_like_option(args[0]):
        raise invalid("browser_id", "give exactly one browser id",
                      hint="usage: bsk extension unpair ID (ids: `bsk browsers`)")
    return client.call(*route("extension_unpair", browser_id=args[0]))[2]


@runs("doctor")
def cmd_doctor(client: Client, args: list[str]) -> Any:
    _no_args("doctor", args)
    from browserskill.cli.doctor import run_doctor

    return run_doctor(client)


def cmd_daemon_start(client: Client, args: list[str]) -> Any:
    args = _policy_path_absolute(args)  # the daemon runs in its state dir
    daemon_args = [a for a in args if a != "--foreground"]
    check_daemon_args(daemon_args)
    if "--foreground" in args:
        from browserskill.api.__main__ import main as daemon_main

        sys.exit(daemon_main(daemon_args))
    from browserskill.daemon.spawn import reachable

    if reachable(paths.socket_file()):
        info = client.call(*route("daemon_info"), spawn=False)[2]
        info["already_running"] = True
        wanted = _policy_of(daemon_args)
        running = (info.get("policy") or {}).get("source")
        if wanted is not None and os.path.realpath(wanted) != running:
            # A script that asked for a policy must not go on believing it is in force.
            raise invalid("policy", f"the daemon already running (pid {info.get('pid')}) "
                          f"uses {running or 'no policy'}; a policy is read only when the "
                          "daemon starts", hint="`bsk daemon stop`, then `bsk daemon start "
                          f"--policy {wanted}` (sessions end with the daemon)")
        if args:
            info["note"] = "options not applied: stop the daemon first to change them"
        return info
    client.start_daemon(args)
    return client.call(*route("daemon_info"), spawn=False)[2]


def _policy_path_absolute(args: list[str]) -> list[str]:
    """`--policy FILE` (or `--policy=FILE`) made absolute, as the spawned daemon's working
    directory is its state dir."""
    import os

    out = list(args)
    for i, arg in enumerate(out):
        if arg == "--policy" and i + 1 < len(out):
            out[i + 1] = os.path.abspath(os.path.expanduser(out[i + 1]))
        elif arg.startswith("--policy="):
            out[i] = "--policy=" + os.path.abspath(os.path.expanduser(arg[9:]))
    return out


def _policy_of(args: list[str]) -> str | None:
    """The file `--policy FILE` / `--policy=FILE` names, if given."""
    for i, arg in enumerate(args):
        if arg == "--policy" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--policy="):
            return arg[9:]
    return None


def check_daemon_args(args: list[str]) -> None:
    """Bad daemon options are the caller's mistake (invalid_params), not a dead browser."""
    import argparse

    from browserskill.api.__main__ import parser

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
    parsed = checker.parse_args(args)
    if parsed.policy:  # a policy that can't be used: said here, before a daemon is spawned
        from browserskill.base.catalog import tool_names
        from browserskill.base.policy import PolicyError, load

        try:
            load(parsed.policy, tool_names())
        except PolicyError as e:
            raise invalid("policy", str(e), hint="fix the file (docs/safety.md shows its "
                          "keys); the daemon does not start without it") from None


@runs("daemon_stop")
def cmd_daemon_stop(client: Client, args: list[str]) -> Any:
    _no_args("daemon stop", args)
    from browserskill.daemon.spawn import reachable

    sock = paths.socket_file()
    try:
        answer = client.call(*route("daemon_stop"), spawn=False)[2]
    except DaemonUnreachable:
        return {"stopped": False, "note": "no daemon was running"}
    import time

    deadline = time.monotonic() + 15
    while reachable(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"stopped": not reachable(sock), "pid": answer.get("pid")}


@runs("daemon_info")
def cmd_daemon_status(client: Client, args: list[str]) -> Any:
    _no_args("daemon status", args)
    try:
        return {"running": True, **client.call(*route("daemon_info"), spawn=False)[2]}
    except DaemonUnreachable:
        return {"running": False, "socket": paths.socket_file()}


def _op_id(args: list[str], usage: str) -> str:
    if len(args) != 1 or looks_like_option(args[0]):
        raise invalid("op_id", "give exactly one operation id", hint=f"usage: bsk {usage}")
    if not valid_op_id(args[0]):
        raise BskError("op_not_found", f"no operation {args[0]!r} (ids look like op_…)",
                       hint="list recent ones with `bsk op list`", details={"op_id": args[0]})
    return args[0]


@runs("op_get")
def cmd_op_show(client: Client, args: list[str]) -> Any:
    return client.call(*route("op_get", op_id=_op_id(args, "op show ID")))[2]


@runs("op_cancel")
def cmd_op_cancel(client: Client, args: list[str]) -> Any:
    return client.call(*route("op_cancel", op_id=_op_id(args, "op cancel ID")))[2]


@runs("op_wait")
def cmd_op_wait(client: Client, args: list[str]) -> Any:
    timeout = int((client.g.timeout or 30) * 1000)
    op = _op_id(args, "op wait ID")
    method, path = route("op_wait", op_id=op)
    return client.call(method, f"{path}?timeout_ms={timeout}")[2]


@runs("op_list")
def cmd_op_list(client: Client, args: list[str]) -> Any:
    query = "?limit=50"
    if args[:1] == ["--all"]:
        args = args[1:]
    elif client.g.session:
        query += "&session=" + client.g.session
    _no_args("op list [--all]", args)
    method, path = route("op_list")
    return client.call(method, path + query)[2]


def cmd_mcp(client: Client, args: list[str]) -> Any:
    """Serve MCP on stdin/stdout until the client hangs up (stdout is the protocol)."""
    rest, caps_text = list(args), None
    for i, arg in enumerate(rest):
        if arg == "--caps" or arg.startswith("--caps="):
            value = arg[7:] if "=" in arg else (rest[i + 1:i + 2] or [""])[0]
            if not value or value.startswith("-"):
                raise invalid("caps", "--caps needs a list of capability groups",
                              hint="e.g. bsk mcp --caps network,state (or all)")
            caps_text, rest = value, rest[:i] + rest[i + (1 if "=" in arg else 2):]
            break
    isolated = "--isolated" in rest
    # Boundaries are on for MCP unless turned off here or by BSK_BOUNDARIES=0.
    marked = "--no-boundaries" not in rest and os.environ.get(
        "BSK_BOUNDARIES", "1").strip().lower() not in ("0", "false", "no", "off")
    _no_args("mcp [--session ID | --isolated] [--caps GROUP,…] [--no-boundaries]",
             [a for a in rest if a not in ("--isolated", "--no-boundaries", "--boundaries")])
    from browserskill.mcp_server import main as mcp_main
    from browserskill.mcp_server import parse_caps

    caps = parse_caps(caps_text)

    explicit = client.g.session_given or bool(os.environ.get("BSK_SESSION"))
    if explicit and isolated:
        given = "--session" if client.g.session_given else "BSK_SESSION"
        raise invalid("isolated", f"--isolated is for the connection's own session, but "
                      f"{given} names an existing one to use as it is",
                      hint="unset BSK_SESSION (or drop --session) for an isolated session "
                           "per connection")
    if explicit and client.g.session != contract.DEFAULT_SESSION and client.g.session not in {
            s["session_id"] for s in client.call(*route("session_list"))[2]["sessions"]}:
        # else every call would fail so, with advice for tools MCP doesn't have
        raise BskError("session_not_found", f"no session {client.g.session!r}: --session "
                       "(or BSK_SESSION) names an existing session for `bsk mcp` to serve",
                       hint=f"start it first (`bsk session start {client.g.session}`), or "
                            "drop --session: each connection then gets a session of its own",
                       dispatched=Dispatched.NO)
    sys.exit(mcp_main(session=client.g.session if explicit else None, isolated=isolated,
                      caps=caps, marked=marked))


def cmd_install_skill(client: Client, args: list[str]) -> Any:
    from browserskill.cli.skill import cli_install

    return cli_install(args)


@runs("dashboard")
def cmd_show(client: Client, args: list[str]) -> Any:
    """A one-time link to the dashboard; opened in the default browser when there is a
    display, through a file of the user's own: a browser's command line is readable by
    every user (`ps`), so no link that opens the dashboard goes on it (docs/dashboard.md)."""
    only_url = "--url" in args
    _no_args("show [--url]", [a for a in args if a != "--url"])
    answer = client.call(*route("dashboard"))[2]
    answer["opened"] = False
    if not only_url and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                         or sys.platform == "darwin"):
        import webbrowser

        page = _link_page(answer["url"])
        answer["opened"] = webbrowser.open(page.as_uri())
        if answer["opened"]:  # the browser spends the link: show where it went instead
            answer["url"], answer["file"] = f"http://127.0.0.1:{answer['port']}/", str(page)
    return answer


def _link_page(link: str) -> Path:
    """$BSK_HOME/dashboard-link.html (0600), a page that goes on to `link` (as Jupyter's
    redirect file does): the browser's command line shows only this file's path."""
    import html

    page = paths.state_dir() / "dashboard-link.html"
    tmp = page.with_name(page.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = paths.open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    quoted = html.escape(link, quote=True)
    with os.fdopen(fd, "w") as f:
        f.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" '
                f'content="0;url={quoted}"><title>BrowserSkill</title>'
                f'<a href="{quoted}">Open the dashboard</a>\n')
    os.replace(tmp, page)
    return page


def cmd_replay(client: Client, args: list[str]) -> Any:
    if len(args) != 1 or looks_like_option(args[0]):
        raise invalid("file", "give the script's path", hint="usage: bsk replay FILE")
    from browserskill.cli.replay import replay

    return replay(client, args[0])


# -- secrets: local to this machine, read by the daemon (browserskill/base/vault.py) ---------


def cmd_secret_set(client: Client, args: list[str]) -> Any:
    names, origins, i = [], [], 0
    while i < len(args):
        arg, _, inline = args[i].partition("=")
        if arg == "--origin":
            if not inline:
                i += 1
                if i == len(args):
                    raise invalid("origin", "needs a URL", hint="--origin https://site.example")
                inline = args[i]
            origins.append(inline)
        elif looks_like_option(arg):
            raise invalid(arg.lstrip("-"), "unknown option for `secret set` (options: --origin)")
        else:
            names.append(args[i])
        i += 1
    if len(names) != 1:
        raise invalid("arguments", "give one NAME; the value is never given on the command "
                      "line (it is asked for, or read from stdin)",
                      hint="usage: bsk secret set NAME --origin URL [--origin URL…]")
    from browserskill.base import vault

    vault.check_name(names[0])
    if not origins:
        raise invalid("origin", "a secret needs at least one --origin it may be used on",
                      hint=f"bsk secret set {names[0]} --origin https://site.example")
    for origin in origins:
        vault.origin_of(origin)  # a bad origin is said before the value is asked for
    value = _secret_value(names[0])
    return vault.set_secret(names[0], value, origins)


def _secret_value(name: str) -> str:
    """From a prompt that does not echo (a terminal), else the first line of stdin."""
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"value of {name} (not shown): ")
    line = sys.stdin.readline()
    return line[:-1] if line.endswith("\n") else line


def cmd_secret_list(client: Client, args: list[str]) -> Any:
    _no_args("secret list", args)
    from browserskill.base import vault

    return {"secrets": vault.listing()}


def cmd_secret_delete(client: Client, args: list[str]) -> Any:
    from browserskill.base import vault

    if args == ["--all"]:
        vault.delete_all()
        return {"deleted": "all"}
    if len(args) != 1 or looks_like_option(args[0]):
        raise invalid("arguments", "usage: bsk secret delete NAME | --all")
    if not vault.delete(args[0]):
        raise invalid("secret", f"no secret named {args[0]!r}",
                      hint="`bsk secret list` names the ones there are")
    return {"deleted": args[0]}


def cmd_version(client: Client, args: list[str]) -> Any:
    _no_args("version", args)
    return {"version": __version__}


def _no_args(command: str, args: list[str]) -> None:
    if args:
        raise invalid("arguments", f"unexpected argument {args[0]!r}", hint=f"usage: bsk {command}")


def daemon_options() -> list[tuple[str, str]]:
    """`daemon start`'s options with their help, read from the daemon's own parser (so
    `--help` and docs/cli.md list every one it takes)."""
    from browserskill.api.__main__ import parser

    rows = [("--foreground", "run in this terminal instead of in the background")]
    for action in parser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        name = action.option_strings[0]
        metavar = action.metavar or action.dest.upper()
        if action.nargs == "?":
            name += f" [{metavar}]"
        elif action.nargs != 0:
            name += f" {metavar}"
        rows.append((name, action.help or ""))
    return rows


# words: the command's words; run(client, args) -> answer; usage; summary.
# spec: the catalog definition of its parameters, when it has one (help is built from it).
# options: for a command whose options are not the catalog's, () -> [(option, help)].
Control = namedtuple("Control", "words run usage summary spec options", defaults=(None, None))


def _from_control(c: controls.Control) -> Control:
    run = RUNNERS.get(c.name) or (lambda client, args: run_control(c, client, args))
    spec = _SESSION_START if c.cli.help_tool == "session_start" else None
    return Control(c.cli.words, run, c.cli.usage, c.cli.summary, spec)


# The commands the daemon has no route for: they act on this machine.
LOCAL: tuple[Control, ...] = (
    Control(("daemon", "start"), cmd_daemon_start,
            "daemon start [--foreground] [--cdp-url URL] [--grid URL] "
            "[--profile DIR | --ephemeral] [--headed] [--tcp-port PORT] "
            "[--expose-cdp [PORT]] [OPTION…]",
            "Start the daemon (bsk starts it on first use).", options=daemon_options),
    Control(("mcp",), cmd_mcp,
            "mcp [--session ID | --isolated] [--caps GROUP,…] [--no-boundaries]",
            "Serve the browser tools over MCP on stdio. Each connection gets a session of "
            "its own, stopped when it disconnects (--isolated: with cookies and storage of "
            "its own); --session ID or BSK_SESSION uses an existing session instead. "
            "It offers the core tools; --caps GROUP,… (network, evidence, emulation, state, "
            "human, mouse, downloads, or all) adds more. Page text in its answers is wrapped "
            "in nonce markers (--no-boundaries: not; docs/safety.md). Client set-up: "
            "docs/mcp.md."),
    Control(("install-skill",), cmd_install_skill,
            "install-skill [--harness NAME]… [--dir DIR] [--list]",
            "Install the agent skill (SKILL.md) where claude, codex, opencode or cursor "
            "look for it."),
    Control(("replay",), cmd_replay, "replay FILE",
            "Run a script that `bsk record stop FILE` wrote (one bsk command per line) as "
            "ordinary operations in this session; stops at the first that does not "
            "complete, with its line number and its honest result. ${VAR} comes from the "
            "environment (recorded passwords: BSK_SECRET_N)."),
    Control(("secret", "set"), cmd_secret_set, "secret set NAME --origin URL [--origin URL…]",
            "Store a secret (a password, a token) for `fill REF --secret NAME` and `type "
            "--secret NAME`, usable only on frames of these origins. The value is asked for "
            "without echo, or read from stdin; never an argument. Encrypted at rest "
            "(docs/safety.md, \"Secrets\")."),
    Control(("secret", "list"), cmd_secret_list, "secret list",
            "The stored secrets' names and origins (never their values)."),
    Control(("secret", "delete"), cmd_secret_delete, "secret delete NAME | --all",
            "Forget a secret (--all: every one, and the vault's key)."),
    Control(("version",), cmd_version, "version", "Print the version."),
)


def _grouped(commands: list[Control]) -> tuple[Control, ...]:
    """Each group's commands together, groups in the order they first appear; in a group,
    the local ones first (`daemon start` before `daemon stop`)."""
    first: dict[str, int] = {}
    for i, c in enumerate(commands):
        first.setdefault(c.words[0], i)
    return tuple(sorted(commands, key=lambda c: (first[c.words[0]], c not in LOCAL)))


CONTROL: tuple[Control, ...] = _grouped(
    [_from_control(c) for c in controls.CONTROLS if c.cli is not None] + list(LOCAL))
CONTROL_BY_WORDS = {c.words: c for c in CONTROL}
# Control commands that describe an operation rather than end as one (`op wait` does end
# with the operation's outcome, so its exit code is the operation's).
REPORTS_AN_OP = {("op", "show"), ("op", "cancel")}


def state_exit(words: tuple[str, ...], answer: Any) -> int:
    """The exit code a control command's answer means when it is no error: `daemon
    status` with no daemon exits non-zero, as `systemctl status` does for a stopped unit,
    with the code a call that can't reach its daemon gets (browser_unavailable's)."""
    if words == ("daemon", "status") and isinstance(answer, dict) \
            and answer.get("running") is False:
        from browserskill.base.errors import exit_code

        return exit_code("browser_unavailable")
    return 0
