"""A person in the loop: their Stop, take-over, answer to a request for help, approvals.

What a person does to a session, apart from the agent's operations that the dispatcher
runs (docs/dashboard.md, docs/safety.md "Approvals"). The dispatcher hands this module
the three things it needs of it: the journal, the sessions, and how to cancel live
operations and keep a new one.

Invariants:
- A person's Stop (`interrupt`) cancels the session's dispatched agent calls (never a
  person's own) and refuses the agent's next change once, saying who took the tabs.
- A take-over is an operation (`take_over`) that goes first in the session's queue and
  holds it until `hand_back` or `TAKE_OVER_MAX_S`; at most one per session at a time.
- Only the dashboard's feed and the extension's link call `answer_help` and
  `answer_approval`, after checking a person gave the answer: no tool, control route or
  MCP tool reaches them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from browserskill.base import catalog
from browserskill.base.contract import CancelReason
from browserskill.base.errors import BskError
from browserskill.dispatch import approvals
from browserskill.dispatch.journal import Journal
from browserskill.session.operations import DISPATCHED, QUEUED, TAKE_OVER, Operation
from browserskill.session.queue import ACQUIRED, CANCELLED, TIMED_OUT
from browserskill.session.scope import Once
from browserskill.session.sessions import Session, SessionManager
from browserskill.tools.help import HelpRequest

TAKE_OVER_MAX_S = 3600.0  # a take-over forgotten in an open dashboard ends after an hour
# Who took a session's tabs, as the agent's next refused change says it.
STOP_PRESSED = "the user pressed Stop in the browser and took over this session's tabs"
TAKEN_OVER = "a person took this session over from the dashboard (bsk show)"


@dataclass
class Interrupted:
    """Who took a session's tabs (the extension's Stop, a take-over from the dashboard),
    until the agent's next change is refused saying so."""

    by: str | None = None


class PersonInTheLoop:
    def __init__(self, journal: Journal, sessions: SessionManager, *,
                 cancel_live: Callable[[CancelReason, Callable[[Operation], bool]],
                                       list[Operation]],
                 remember: Callable[[Operation], None]) -> None:
        self.journal = journal
        self.sessions = sessions
        self._cancel_live = cancel_live
        self._remember = remember
        # session id -> its person's take-over and the signal that hands it back
        self._taken: dict[str, tuple[Operation, Once]] = {}
        self.approvals = approvals.Approvals()  # operations a `confirm` rule holds

    def interrupt(self, session_id: str, by: str = STOP_PRESSED) -> None:
        """The user takes the session's tabs (the extension's Stop, a take-over from the
        dashboard): the agent's dispatched call is cancelled, and its next change is
        refused once with `user_interrupted`, its message saying `by` whom."""
        session = self.sessions.sessions.get(session_id)
        if session is None:
            return
        session.features.get(Interrupted).by = by
        self._cancel_live(CancelReason.USER_INTERRUPT, lambda op: (
            op.session_id == session_id and op.state != QUEUED and not op.by_person))

    def refuse_after_stop(self, session: Session, tool: str) -> None:
        """The agent's first change after a person took the session's tabs is refused
        (`user_interrupted`, saying who); the next one goes ahead."""
        interrupted = session.features.find(Interrupted)
        if interrupted is None or interrupted.by is None or catalog.BY_NAME[tool].effect \
                not in (catalog.Effect.MUTATION, catalog.Effect.TRANSIENT_INPUT):
            return
        by, interrupted.by = interrupted.by, None
        raise BskError("user_interrupted", by,
                       hint="ask the user before acting again; the next call goes ahead",
                       details={"session_id": session.id})

    def take_over(self, session_id: str) -> Operation:
        """A person becomes the session's holder: an operation (`take_over`) that goes
        first in the queue and holds the session until `hand_back`. Idempotent."""
        session = self.sessions.get(session_id)
        held = self._taken.get(session_id)
        if held is not None and not held[0].ended:
            return held[0]
        op = Operation(session_id, TAKE_OVER, {})
        op.scope.arm(TAKE_OVER_MAX_S)
        released = Once()
        self._taken[session_id] = (op, released)
        self._remember(op)
        self.interrupt(session_id, by=TAKEN_OVER)
        op.task = asyncio.create_task(self._hold(op, session, released), name=op.op_id)
        return op

    def hand_back(self, session_id: str) -> Operation | None:
        """End the person's take-over of the session (None: it had none)."""
        held = self._taken.get(session_id)
        if held is None or held[0].ended:
            return None
        held[1].set()
        return held[0]

    def answer_help(self, session_id: str, answer: str) -> str:
        """The person's Done or Decline to the session's running `request_help`; its op id."""
        session = self.sessions.get(session_id)
        holder = session.queue.holder
        request = session.features.find(HelpRequest)
        if (request is None or request.answer is None or request.answer.done()
                or holder is None or holder.tool != "request_help"):
            raise BskError("invalid_params", f"session: {session_id} has no request for help "
                           "open", details={"field": "session"})
        request.answer.set_result(answer)
        return holder.op_id

    def answer_approval(self, op_id: str, answer: str, by: str) -> Operation:
        """A person's answer to an operation a `confirm` rule holds. Only the dashboard's
        feed and the extension's link call this, after checking a person gave it
        (docs/safety.md, Approvals): no tool or API route does."""
        return self.approvals.answer(op_id, answer, by)

    def taken_by_person(self, session_id: str) -> Operation | None:
        """The person's take-over holding the session now, if any."""
        held = self._taken.get(session_id)
        if held is None or held[0].ended:
            return None
        return held[0]

    async def _hold(self, op: Operation, session: Session, released: Once) -> None:
        loop = asyncio.get_running_loop()
        try:
            got = await session.queue.acquire(op, wait=True, first=True,
                                              on_queued=lambda: self.journal.record(op))
            if got != ACQUIRED:
                reason = (CancelReason.DEADLINE if got == TIMED_OUT
                          else op.scope.reason or CancelReason.CANCEL)
                raise BskError("cancelled", "the take-over ended before it began" if
                               got == CANCELLED else "the session stayed busy past the "
                               "take-over's deadline", details={"reason": reason})
            op.state = DISPATCHED
            op.note(DISPATCHED, "held by a person")
            self.journal.record(op)
            started = loop.time()
            # The scope trips at the take-over's deadline too.
            await asyncio.wait({released.future, op.scope.tripped.future},
                               return_when=asyncio.FIRST_COMPLETED)
            ended_by = ("hand_back" if released.is_set()
                        else op.scope.reason or CancelReason.DEADLINE)
            op.complete({"ended_by": ended_by, "held_s": round(loop.time() - started, 3)},
                        retry_safe=False)
        except BskError as e:
            op.fail(e)
        finally:
            session.queue.release(op)
            if not op.ended:
                op.fail(BskError("cancelled", "the take-over ended before it began",
                                 details={"reason": op.scope.reason or "stopped"}))
            self.journal.record(op)
            op.done.set()
