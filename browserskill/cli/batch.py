"""`bsk batch`: several commands in one call, run by the daemon (browserskill/api/batch.py),
each its own operation. The CLI's part: commands from stdin (one a line, as `bsk replay`
reads a script: blank lines and # comments skipped, ${VAR} from the environment), and a
Ctrl-C (or a lost answer) reported step by step from what the daemon recorded: the steps
before the running one as they ended, that one's honest end, the rest as not sent."""

from __future__ import annotations

import os
import sys
import time

from browserskill.base import contract
from browserskill.base.catalog import BY_NAME
from browserskill.base.cli_args import script_steps, script_words
from browserskill.cli.calls import call_request
from browserskill.cli.transport import DaemonLost, request

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.cli.daemon_client import Client

STDIN_MAX_BYTES = 10_000_000


def stdin_commands() -> list[str]:
    """The commands on stdin; each ${VAR} expanded here, where the caller's environment is
    (the daemon reads the words as given), and re-quoted so they split the same way."""
    import shlex

    text = sys.stdin.read(STDIN_MAX_BYTES + 1)
    if len(text) > STDIN_MAX_BYTES:
        from browserskill.base.errors import invalid

        raise invalid("commands", f"more than {STDIN_MAX_BYTES} bytes on stdin")
    return [shlex.join(script_words(number, line, "commands", os.environ))
            for number, line in script_steps(text.splitlines())]


def batch_call(client: Client, params: dict[str, Any],
               resume: tuple[str, str] | None = None) -> dict[str, Any]:
    """Run the batch; `resume` (batch id, what happened): the launcher's call of it was
    interrupted, lost its daemon, or timed out: report it from the journal."""
    if not params["commands"] or params["commands"] == ["-"]:
        params = {**params, "commands": stdin_commands()}
    commands = params["commands"]
    if resume is not None:
        return ended_early(client, resume[0], commands, resume[1])
    g = client.g
    body, headers, batch_id = call_request(client, params)  # the id names its steps
    try:
        _, _, answer = client.call(
            "POST", f"/v1/sessions/{g.session}/tools/batch", body, headers=headers,
            wire_timeout=contract.wire_timeout_s(BY_NAME["batch"], params, g.timeout))
    except KeyboardInterrupt:
        return ended_early(client, batch_id, commands, "interrupted")
    except TimeoutError:
        return ended_early(client, batch_id, commands, "timeout")
    except DaemonLost:
        return ended_early(client, batch_id, commands, "lost")
    return answer


def ended_early(client: Client, batch_id: str, commands: list[str],
                what: str) -> dict[str, Any]:
    """Each step, in order: cancelled if it still runs, then as it ended; the first that
    never arrived and everything after it were not sent."""
    why = {"interrupted": "interrupted (Ctrl-C)", "timeout": "no answer in time",
           "lost": "the daemon went away", "unanswered": "the daemon went away"
           }.get(what, what)
    steps = contract.batch_step_op_id(batch_id, 1)  # the ids `op show` knows (not the batch's)
    if len(commands) > 1:
        steps += f" … {contract.batch_step_op_id(batch_id, len(commands))}"
    print(f"bsk: {why}; cancelling the batch's running step (its steps: {steps})…",
          file=sys.stderr)
    answers: list[dict[str, Any]] = []
    for k in range(1, len(commands) + 1):
        step = _step_end(client, contract.batch_step_op_id(batch_id, k))
        if step is None:
            break
        answers.append(step)
    return contract.batch_answer(client.g.session, commands, answers,
                                 f"the batch was {why.split(' (')[0]} before it")


def _step_end(client: Client, op_id: str) -> dict[str, Any] | None:
    """How step `op_id` ended (cancelling it first), or None if it was never sent."""
    plan = contract.CancelThenWait(op_id, time.monotonic())
    for _ in range(1000):
        try:
            status, _, _ = request(client.sock, "POST", plan.cancel_path,
                                   timeout=contract.CANCEL_GRACE_S)
        except DaemonLost:
            status = 0
        if not plan.again(status, time.monotonic()):
            break
        time.sleep(contract.CANCEL_POLL_S)
    if status == 404:
        return None
    answer = request(client.sock, "GET", plan.wait_path, timeout=contract.CANCEL_GRACE_S + 5)[2]
    return answer if isinstance(answer, dict) else None
