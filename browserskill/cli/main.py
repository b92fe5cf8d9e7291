"""`bsk`: parse a command, send it to the daemon, print the outcome, exit with its code.

Start-up cost matters (one process per agent action), so this path imports only the
stdlib, the error table and the tool catalog, and parses arguments by hand from the
catalog instead of building an argparse tree for every command.
"""

from __future__ import annotations

import sys

from browserskill.base import cli_render as render
from browserskill.base.catalog import BY_WORDS, HIDDEN_WORDS, TOOLS
from browserskill.base.cli_args import Globals, split_globals, tool_params
from browserskill.base.cli_render import outcome
from browserskill.base.errors import BskError
from browserskill.cli.calls import interrupted, lost_daemon, tool_call
from browserskill.cli.commands import CONTROL, CONTROL_BY_WORDS, REPORTS_AN_OP, state_exit
from browserskill.cli.daemon_client import Client
from browserskill.cli.transport import DaemonLost, DaemonUnreachable

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


# -- commands that are not tools ---------------------------------------------------------


def _tool_owns(rest: list[str], flag: str) -> bool:
    """Is `flag` an option of the tool command named so far (`press --key a`)?"""
    words, _ = find_command(rest)
    spec = BY_WORDS.get(words) if words else None
    return spec is not None and any(p.flag == flag for p in spec.params)


def find_command(rest: list[str]) -> tuple[tuple[str, ...], list[str]]:
    for n in (2, 1):
        words = tuple(rest[:n])
        if len(words) == n and (words in CONTROL_BY_WORDS or words in BY_WORDS):
            return words, rest[n:]
    return (), rest


def main(argv: list[str] | None = None, resume: tuple[str, str] | None = None) -> int:
    """Run one command line. `resume` (op id, what happened): the launcher's tool call
    (browserskill/cli/fast.py) was interrupted, lost its daemon, or timed out while the
    daemon ran it; end it here as a call of our own would have ended. Output is flushed
    before returning: a reader that went away (`bsk --help | head -1`) ends `bsk` here,
    quietly, as SIGPIPE ends other commands (browserskill/cli/closed_pipe.py)."""
    try:
        code = _main(sys.argv[1:] if argv is None else argv, resume)
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        from browserskill.cli.closed_pipe import reader_gone

        reader_gone()
    return code


def _main(argv: list[str], resume: tuple[str, str] | None) -> int:
    import signal

    signal.signal(signal.SIGTERM, _sigterm)
    g = Globals()
    try:
        rest = split_globals(argv, g, owns=_tool_owns)
        if rest[:1] == ["help"]:  # `bsk help tab select`, as git and cargo take it
            g.help, rest = True, rest[1:]
        words, args = find_command(rest)
        if not words:
            group = render.group_help(rest[0], CONTROL, TOOLS, HIDDEN_WORDS) if rest else None
            if group is not None and g.help:
                print(group)  # `bsk tab --help`: that group's commands
                return 0
            if not rest:
                print(render.main_help(CONTROL, TOOLS, HIDDEN_WORDS))
                return 0
            raise unknown_command(rest)  # `bsk nope --help` too: say it is no command
        control = CONTROL_BY_WORDS.get(words)
        spec = BY_WORDS.get(words)
        if resume is not None and (control is not None or spec is None):
            if resume[1] == "interrupted":  # while the daemon was only asked: nothing ran
                return 130
            resume = None
        if g.help:
            print(render.command_help(control, spec))
            return 0
        client = Client(g)
        if control is not None:
            answer = control.run(client, args)
            if words in REPORTS_AN_OP and isinstance(answer, dict) and "op_id" in answer:
                # Showing an operation succeeded, whatever the operation's own outcome.
                render.show(words, answer, as_json=g.json, as_report=True, marked=g.boundaries)
                return 0
            answer, code = outcome(answer)
            render.show(words, answer, as_json=g.json, marked=g.boundaries)
            return code or state_exit(words, answer)
        assert spec is not None
        params = tool_params(spec, args, g, stdin=read_stdin)
        if spec.name == "batch":  # several operations, each its own (cli/batch.py)
            from browserskill.cli.batch import batch_call

            answer, code = outcome(batch_call(client, params, resume))
        else:
            answer, code = outcome(tool_call(client, spec, params) if resume is None
                                   else resumed(client, spec, params, *resume))
        render.show(words, answer, as_json=g.json, marked=g.boundaries)
        return code
    except BskError as e:
        answer, code = outcome({"error": e.to_dict()})
        render.show((), answer, as_json=g.json, marked=g.boundaries)
        return code
    except DaemonUnreachable as e:
        answer, code = outcome({"error": BskError(
            "browser_unavailable", f"the daemon is not reachable: {e}",
            hint="run the command again; `bsk doctor` says what is wrong",
        ).to_dict()})
        render.show((), answer, as_json=g.json, marked=g.boundaries)
        return code
    except DaemonLost as e:
        answer, code = outcome({"error": BskError(
            "outcome_unknown", f"the daemon went away mid-call: {e}",
            hint="`bsk op list` shows what the daemon recorded",
        ).to_dict()})
        render.show((), answer, as_json=g.json, marked=g.boundaries)
        return code
    except TimeoutError:
        answer, code = outcome({"error": BskError(
            "outcome_unknown", "no answer from the daemon in time",
            hint="`bsk op list` shows whether the call ran").to_dict()})
        render.show((), answer, as_json=g.json, marked=g.boundaries)
        return code
    except KeyboardInterrupt:
        return 130


def read_stdin() -> str:
    """A param's value from stdin (`eval -`): all of it, up to the wire's limit."""
    from browserskill.cli.batch import STDIN_MAX_BYTES

    text = sys.stdin.read(STDIN_MAX_BYTES + 1)
    if len(text) > STDIN_MAX_BYTES:
        raise BskError("invalid_params", f"more than {STDIN_MAX_BYTES} bytes on stdin",
                       details={"field": "stdin"})
    return text


def resumed(client: Client, spec: Any, params: dict[str, Any], op_id: str,
            what: str) -> dict[str, Any]:
    if what == "interrupted":
        return interrupted(client, op_id, spec.name)
    if what == "lost":
        return lost_daemon(client, op_id, spec.name)
    if what == "unanswered":  # not one byte of an answer: sent again if no daemon has it
        return lost_daemon(client, op_id, spec.name, lambda: tool_call(
            client, spec, params, op_id, resend=False))
    raise TimeoutError


# Other browser tools' words for bsk's commands (agent-browser, Playwright's CLI and MCP,
# Puppeteer): an agent used to them is told the command, not only a near spelling.
OTHER_TOOLS_WORDS = {
    "goto": "open", "navigate": "open", "visit": "open", "go": "open", "tap": "click",
    "evaluate": "eval", "js": "eval", "execute": "eval", "key": "press", "keypress": "press",
    "press_key": "press", "tabs": "tab list", "waitfor": "wait", "wait_for": "wait",
    "file_upload": "upload", "setinputfiles": "upload", "take_screenshot": "screenshot",
    "close": "tab close (a tab) or session stop (the session)",
}


def unknown_command(rest: list[str]) -> BskError:
    """Suggest by the first word (a group or a command), then within that group: a typo
    of `tab` gets `tab …` commands, never an unrelated command that merely shares `list`.
    Another tool's word for a command (`goto`) is answered with bsk's (`open`)."""
    import difflib

    other = OTHER_TOOLS_WORDS.get(rest[0].lower().replace("-", "_"))
    if other is not None:
        return BskError("invalid_params", f"command: unknown command {rest[0]!r}",
                        hint=f"bsk calls it `{other}`" if " or " not in other
                        else f"bsk has {other}", details={"field": "command"})

    known = list(dict.fromkeys([c.words for c in CONTROL]
                               + [t.words for t in TOOLS if t.words not in HIDDEN_WORDS]))
    firsts = list(dict.fromkeys(w[0] for w in known))
    head = rest[0]
    if head in firsts:  # a group with a wrong or missing subcommand
        group = [w for w in known if w[0] == head]
        subs = ", ".join(" ".join(w) for w in group)
        if len(rest) == 1:
            return BskError("invalid_params", f"command: `{head}` needs a subcommand",
                            hint=f"one of: {subs}", details={"field": "command"})
        near = difflib.get_close_matches(rest[1], [w[1] for w in group if len(w) > 1], n=2,
                                         cutoff=0.6)
        hint = (f"did you mean: {', '.join(f'{head} {n}' for n in near)}?" if near
                else f"one of: {subs}")
        return BskError("invalid_params", f"command: unknown command {head + ' ' + rest[1]!r}",
                        hint=hint, details={"field": "command"})
    close: list[str] = []
    for first in difflib.get_close_matches(head, firsts, n=2, cutoff=0.7):
        group = [w for w in known if w[0] == first]
        exact = [w for w in group if len(rest) > 1 and w[1:2] == (rest[1],)]
        close += [" ".join(w) for w in (exact or group)]
    hint = f"did you mean: {', '.join(close[:4])}?" if close else "see `bsk --help`"
    return BskError("invalid_params", f"command: unknown command {head!r}", hint=hint,
                    details={"field": "command"})

if __name__ == "__main__":
    sys.exit(main())
