"""`bsk replay FILE`: a recorded script (tools/recording.py) run line by line as ordinary
operations, stopping at the first that does not complete with that line's number and
the operation's own honest result (its exit code is the operation's)."""

from __future__ import annotations

import os

from browserskill.base import contract
from browserskill.base.cli_args import script_line, script_steps
from browserskill.base.contract import Dispatched, State, Status
from browserskill.base.errors import BskError, invalid
from browserskill.base.user_files import read_bounded
from browserskill.cli.calls import tool_call

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.cli.daemon_client import Client

SCRIPT_MAX_BYTES = 10_000_000  # a script is text a recording wrote: far below this


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
    steps = script_steps(lines)
    # Every line is checked before the first is sent: a typo or an unset ${VAR} on line 9
    # must not leave lines 1-8 done and the page half way (nothing sent is honest).
    calls = []
    for number, text in steps:
        try:
            spec, params = script_line(number, text, env=os.environ)
            calls.append((number, text, spec, params))
        except BskError as e:  # refused before it became an operation: nothing sent
            return _stopped(contract.refused(e.to_dict()), path, number, text, [])
    done: list[str] = []
    for number, text, spec, params in calls:
        try:
            answer = tool_call(client, spec, params)
        except BskError as e:
            answer = contract.refused(e.to_dict(), tool=spec.name)
        if answer.get("status") != Status.COMPLETED:
            return _stopped(answer, path, number, text, done)
        done.append(answer["op_id"])
    return contract.result(op_id=None, session_id=None, tool=None, state=State.ENDED,
                           status=Status.COMPLETED,
                           dispatched=Dispatched.YES if done else Dispatched.NO, retry_safe=False,
                           result={"file": path, "completed": len(done), "ops": done})
