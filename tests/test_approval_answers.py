"""`Approvals` (dispatch/approvals.py) without a browser: one answer per held operation,
the first wins, and only approve or deny."""

from __future__ import annotations

import asyncio

import pytest

from browserskill.base.errors import BskError
from browserskill.dispatch.approvals import APPROVE, DENY, Approvals
from browserskill.session.operations import Operation


def test_a_held_operation_is_answered_once_and_the_first_answer_wins() -> None:
    async def run() -> None:
        approvals, changes = Approvals(), []
        approvals.on_change = lambda: changes.append(len(approvals.pending()))
        op = Operation("s", "click", {"ref": "e1"})
        answer = approvals.open(op)
        assert approvals.pending() == [op] and changes == [1]
        with pytest.raises(BskError) as bad:
            approvals.answer(op.op_id, "yes please", "someone")
        assert bad.value.code == "invalid_params" and not answer.done()
        approvals.answer(op.op_id, DENY, "a person")
        with pytest.raises(BskError) as late:  # the first answer stands
            approvals.answer(op.op_id, APPROVE, "an agent")
        assert late.value.code == "invalid_params"
        assert answer.result() == (DENY, "a person") and approvals.pending() == []
        approvals.close(op)
        assert changes[-1] == 0
        with pytest.raises(BskError):
            approvals.get(op.op_id)  # nothing left to answer

    asyncio.run(run())
