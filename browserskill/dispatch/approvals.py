"""Approvals: an operation a policy's `confirm` rule holds waits for a person's answer
before anything is dispatched (docs/safety.md, Approvals).

Invariants:
- Whether an operation is held is the policy's verdict (`policy_check.verdict_for`: the
  tool, its target's role and name from the ref's binding, the tab's domain), asked
  before dispatch, and for a target named by a locator again once the locator is bound
  (which only reads the page): then it is held inside its handler, before it sends
  anything. `request` says what it would do and why.
- A held operation is answered at most once, through `Approvals.answer` only. Its
  callers are the dashboard's feed and the extension's link, each after its own check
  that a person (not a page bsk drives) gave the answer; no tool, control route or MCP
  call reaches it.
- Pure but for the futures the waiting operations hold: no I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from browserskill.base.errors import BskError
from browserskill.base.policy import Verdict
from browserskill.tools import policy_check

if TYPE_CHECKING:
    from browserskill.session.operations import Operation
    from browserskill.session.sessions import Session

APPROVE, DENY = "approve", "deny"


def request(session: Session, op: Operation, ruling: Verdict,
            params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a person is asked to approve (the call, its targets as the daemon knows them,
    the tab's URL) and why (the `confirm` rule `ruling` names: policy_check.verdict_for).
    `params`: the call's, its locators bound to refs (held once bound: tools/handlers.py)."""
    assert ruling.rule is not None
    params = op.params if params is None else params
    targets = []
    for key in policy_check.TARGET_PARAMS:
        value = params.get(key)
        if not isinstance(value, str) or not value:
            continue
        binding = session.refs.get(value.strip())
        targets.append({"param": key, "ref": value, "role": binding.role,
                        "name": binding.name} if binding is not None else
                       {"param": key, "locator": value})
    tab = session.tabs.get(str(params.get("tab_id") or session.current_tab_id or ""))
    shown = [f"{t['role']} {t['name']!r} ({t['ref']})" if "role" in t else
             f"{t['locator']} (which element is known only once it is resolved)"
             for t in targets]
    what = op.tool + (" on " + " and ".join(shown) if shown else "") + (
        f" at {tab.url}" if tab is not None else "")
    return {"what": what,
            "why": f"the policy's confirm[{ruling.index}] ({ruling.rule.describe()}) holds "
                   "it for a person",
            "rule": ruling.rule.to_json(), "rule_index": ruling.index, "tool": op.tool,
            "params": op.shown_params(), "targets": targets,
            "url": tab.url if tab is not None else None, "session_id": session.id}


class Approvals:
    """The operations waiting for a person, and the one way to answer them."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[Operation, asyncio.Future[tuple[str, str]]]] = {}
        # Told when the pending set changes (the extension's popups are kept current).
        self.on_change: Callable[[], None] = lambda: None

    def open(self, op: Operation) -> asyncio.Future[tuple[str, str]]:
        """`op` starts waiting; the future gets (answer, by whom)."""
        fut: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        self.waiting[op.op_id] = (op, fut)
        self.on_change()
        return fut

    def close(self, op: Operation) -> None:
        entry = self.waiting.pop(op.op_id, None)
        if entry is not None and not entry[1].done():
            entry[1].cancel()
        self.on_change()

    def pending(self) -> list[Operation]:
        return [op for op, fut in self.waiting.values() if not fut.done()]

    def get(self, op_id: str) -> Operation:
        entry = self.waiting.get(op_id)
        if entry is None or entry[1].done():
            raise BskError("invalid_params", f"op_id: {op_id} is not waiting for approval",
                           hint="it was answered, cancelled or timed out meanwhile",
                           details={"field": "op_id"})
        return entry[0]

    def answer(self, op_id: str, answer: str, by: str) -> Operation:
        """A person's answer (`APPROVE` or `DENY`) to the held operation `op_id`. Callers
        have checked that a person gave it (docs/safety.md, Approvals)."""
        if answer not in (APPROVE, DENY):
            raise BskError("invalid_params", "answer: approve or deny",
                           details={"field": "answer"})
        op = self.get(op_id)
        self.waiting[op_id][1].set_result((answer, by))
        return op
