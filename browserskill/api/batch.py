"""`batch`: several tool calls in one request, each its own operation (docs/outcomes.md,
"Batches"). The HTTP route (`POST …/tools/batch`), bsk's launcher (`/v1/cli`) and so the
CLI and MCP all run batches here.

Invariants:
- Every command is read (`base.cli_args.script_line`, as `bsk replay` reads a line) before
  the first is sent: a typo in command 5 sends nothing.
- Step k is an ordinary operation, journaled, named `<batch id>-k` (so a caller that lost
  the answer finds each step with `op show`); with an idempotency key, step k's key is
  `<key>#k`, so a batch sent again answers each step as it did, sending nothing twice.
- Steps run one after another; after one that does not complete the rest are not sent
  (unless `continue`). The batch's deadline bounds every step's: a step gets its own
  deadline or what is left of the batch's, whichever is sooner; none is left (or less than
  the step needs: a pause it asks for, the least deadline its tool takes), none sent.
- The caller going away (a Ctrl-C) cancels the running step; the rest are not sent.
- The batch's `settle` is each acting step's `--settle` where the step gives none (a
  step's own wins); steps that do not act take none.
"""

from __future__ import annotations

import asyncio
from typing import Any

from browserskill.base import catalog, contract
from browserskill.base.cli_args import script_line
from browserskill.base.contract import Status
from browserskill.base.errors import BskError, invalid
from browserskill.dispatch.dispatcher import Dispatcher

SPEC = catalog.BY_NAME["batch"]


def read_commands(params: dict[str, Any], cwd: str | None = None
                  ) -> list[tuple[catalog.ToolSpec, dict[str, Any]]]:
    """Every command checked, or the batch refused (nothing sent)."""
    commands = params.get("commands") or []
    if not commands:
        raise invalid("commands", "give at least one command",
                      hint="e.g. bsk batch 'click e3' 'snapshot --diff' (or one a line on stdin)")
    if len(commands) > catalog.BATCH_MAX_STEPS:
        raise invalid("commands", f"{len(commands)} commands; at most "
                      f"{catalog.BATCH_MAX_STEPS} in one batch", hint="split it in two")
    steps = [script_line(k, text, "commands", None, cwd, where="step")
             for k, text in enumerate(commands, 1)]
    settle = params.get("settle")
    if settle is None:
        return steps
    return [(spec, {**step, "settle": settle} if "settle" in step and step["settle"] is None
             else step) for spec, step in steps]


async def run_batch(dispatcher: Dispatcher, session_id: str, params: dict[str, Any], *,
                    batch_id: str | None = None, wait: bool = False,
                    timeout_ms: int | None = None, idempotency_key: str | None = None,
                    cwd: str | None = None) -> dict[str, Any]:
    if session_id != contract.DEFAULT_SESSION:  # (the default one starts with its call)
        dispatcher.sessions.get(session_id)  # session_not_found before any other word
    calls = read_commands(params, cwd)
    timeout_ms = contract.check_timeout_ms(timeout_ms, "batch")
    if batch_id is not None and not contract.valid_op_id(batch_id):
        raise invalid("op_id", f"must be {contract.OP_ID_RULE}")
    batch_id = batch_id or contract.new_op_id()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + contract.op_deadline_s(
        SPEC, params, timeout_ms / 1000 if timeout_ms else None)
    answers: list[dict[str, Any]] = []
    why: str | None = None
    for k, (spec, step_params) in enumerate(calls, 1):
        left = deadline - loop.time()
        own = contract.op_deadline_s(spec, step_params)
        if left < 0.001 or (left < own and left < contract.least_s(spec, step_params)):
            why = ("the batch's deadline passed" if left < 0.001 else f"step {k} needs more "
                   f"than the {left * 1000:.0f} ms left of the batch's deadline")
            break
        try:
            op = await dispatcher.submit(
                session_id, spec.name, step_params, wait=wait,
                timeout_ms=int(left * 1000) if left < own else None,
                idempotency_key=(contract.batch_step_key(idempotency_key, k)
                                 if idempotency_key else None),
                op_id=contract.batch_step_op_id(batch_id, k), validated=True)
        except BskError as e:  # refused before it became an operation (session_not_found…)
            answers.append(contract.refused(e.to_dict(), session_id=session_id,
                                            tool=spec.name))
        else:
            try:
                await op.done.wait()
            except asyncio.CancelledError:  # the caller went away: this step ends, no more
                dispatcher.cancel(op.op_id, contract.CancelReason.CLIENT_DISCONNECTED)
                raise
            answers.append(op.to_result())
        if answers[-1].get("status") != Status.COMPLETED and not params["continue"]:
            why = f"step {k} did not complete"
            break
    return contract.batch_answer(session_id, params["commands"], answers, why)
