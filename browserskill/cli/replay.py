"""`bsk replay FILE`: a recorded script (tools/recording.py) run line by line as ordinary
operations, stopping at the first that does not complete with that line's number and
the operation's own honest result (its exit code is the operation's)."""

from __future__ import annotations

import os
import re
import shlex

from browserskill import contract
from browserskill.cli.args import local_file_url, parse_tool_args
from browserskill.cli.calls import tool_call
from browserskill.errors import BskError, invalid
from browserskill.tools.catalog import BY_WORDS, ToolSpec
from browserskill.user_files import read_bounded

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.cli.daemon_client import Client

SCRIPT_MAX_BYTES = 10_000_000  # a script is text a recording wrote: far below this
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _expand(word: str, line: int) -> str:
    def value(m: re.Match[str]) -> str:
        got = os.environ.get(m.group(1))
        if got is None:
            raise invalid("script", f"line {line}: ${{{m.group(1)}}} is not set",
                          hint=f"export {m.group(1)}=… (a recorded password) and replay again")
        return got

    return _VAR.sub(value, word)


def _command(number: int, text: str) -> tuple[ToolSpec, list[str]]:
    """The tool a script line names, and the words after it."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise invalid("script", f"line {number}: {e}") from None
    spec = next((BY_WORDS[tuple(words[:n])] for n in (2, 1)
                 if tuple(words[:n]) in BY_WORDS), None)
    if spec is None or spec.name in ("record_start", "record_stop", "session_stop"):
        raise invalid("script", f"line {number}: {words[0]!r} is not a command a "
                      "script can run", hint="one bsk tool command per line")
    return spec, words[len(spec.words):]


def _params(spec: ToolSpec, args: list[str], number: int) -> dict[str, Any]:
    """The line's arguments checked the way `bsk TOOL` checks them."""
    raw = parse_tool_args(spec, [_expand(w, number) for w in args])
    if isinstance(raw.get("url"), str):
        raw["url"] = local_file_url(raw["url"])
    return spec.validate(raw)


def _stopped(answer: dict[str, Any], path: str, number: int, text: str,
             done: list[str]) -> dict[str, Any]:
    answer["replay"] = {"file": path, "line": number, "command": text,
                        "completed": len(done), "ops": done}
    error = answer.get("error") or {}
    error["message"] = f"line {number} ({text}): {error.get('message', '')}"
    return answer


def replay(client: Client, path: str) -> dict[str, Any]:
    try:
        lines = read_bounded(path, "file", SCRIPT_MAX_BYTES).decode().splitlines()
    except UnicodeDecodeError:
        raise invalid("file", f"{path} is not a text script (UTF-8)",
                      hint="give the file `bsk record stop FILE` wrote") from None
    steps = [(number, text.strip()) for number, text in enumerate(lines, 1)
             if text.strip() and not text.strip().startswith("#")]
    # Every line is checked before the first is sent: a typo or an unset ${VAR} on line 9
    # must not leave lines 1-8 done and the page half way (nothing sent is honest).
    calls = []
    for number, text in steps:
        spec = None
        try:
            spec, args = _command(number, text)
            calls.append((number, text, spec, _params(spec, args, number)))
        except BskError as e:  # refused before it became an operation: nothing sent
            answer = contract.refused(e.to_dict(), tool=spec.name if spec else None)
            return _stopped(answer, path, number, text, [])
    done: list[str] = []
    for number, text, spec, params in calls:
        try:
            answer = tool_call(client, spec, params)
        except BskError as e:
            answer = contract.refused(e.to_dict(), tool=spec.name)
        if answer.get("status") != "completed":
            return _stopped(answer, path, number, text, done)
        done.append(answer["op_id"])
    return contract.result(op_id=None, session_id=None, tool=None, state="ended",
                           status="completed", dispatched="yes" if done else "no",
                           retry_safe=False,
                           result={"file": path, "completed": len(done), "ops": done})
