"""The per-session queue: one operation holds the session at a time, waiters go FIFO.

The slot is handed directly from the ending operation to the next waiter, so nothing
can slip in between, and a waiter cancelled at the moment it was handed the slot gives
it back instead of leaking it. A waiter waits for the slot or its operation's scope to
trip, whichever comes first; the scope's deadline is such a trip (no timer here).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from browserskill.base.contract import State
from browserskill.base.errors import BskError
from browserskill.session.operations import Operation

ACQUIRED, CANCELLED, TIMED_OUT = "acquired", "cancelled", "timed_out"


class SessionQueue:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.holder: Operation | None = None
        self._waiting: deque[tuple[Operation, asyncio.Future[None]]] = deque()

    def busy_error(self, message: str | None = None) -> BskError:
        holder = self.holder
        assert holder is not None
        if holder.by_person:
            message = message or (f"session {self.session_id} is held by a person "
                                  f"({holder.tool}, {holder.op_id})")
        elif holder.state == State.AWAITING_APPROVAL:
            message = message or (f"session {self.session_id} is waiting for a person to "
                                  f"approve {holder.tool} ({holder.op_id})")
        return BskError(
            "session_busy",
            message or f"session {self.session_id} is busy with {holder.tool} ({holder.op_id})",
            hint="retry when it ends, or pass --wait (HTTP \"wait\": true) to queue behind it",
            details={"holder": holder.holder_summary(), "queued": len(self._waiting)},
        )

    @property
    def queued(self) -> list[Operation]:
        return [op for op, fut in self._waiting if not fut.done()]

    async def acquire(self, op: Operation, *, wait: bool,
                      on_queued: Callable[[], object] | None = None, first: bool = False) -> str:
        """Take the slot: at once, or (with wait) FIFO until the operation's scope trips
        (TIMED_OUT at its deadline, CANCELLED for any other reason).
        `first`: ahead of those waiting (a person taking the session over)."""
        scope = op.scope
        # Past its deadline, a free slot is still taken: the dispatcher ends it as the
        # deadline, having sent nothing.
        if scope.is_tripped and not scope.timed_out:
            return CANCELLED
        if self.holder is None and not self._waiting:
            self.holder = op
            return ACQUIRED
        if not wait:
            raise self.busy_error()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (op, fut)
        if first:
            self._waiting.appendleft(entry)
        else:
            self._waiting.append(entry)
        if on_queued is not None:
            on_queued()
        try:
            await asyncio.wait({fut, scope.tripped.future},
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not fut.done():
                fut.cancel()
                self._waiting.remove(entry)
        if fut.cancelled():
            return TIMED_OUT if scope.timed_out else CANCELLED
        if scope.is_tripped and not scope.timed_out:
            self.release(op)  # handed the slot just as the cancel came: pass it on
            return CANCELLED
        return ACQUIRED

    def release(self, op: Operation) -> None:
        if self.holder is not op:
            return
        self.holder = None
        while self._waiting:
            nxt, fut = self._waiting.popleft()
            if not fut.done():
                self.holder = nxt
                fut.set_result(None)
                return
