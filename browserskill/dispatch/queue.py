"""The per-session queue: one operation holds the session at a time, waiters go FIFO.

The slot is handed directly from the ending operation to the next waiter, so nothing
can slip in between, and a waiter cancelled at the moment it was handed the slot gives
it back instead of leaking it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from browserskill.dispatch.operations import Operation
from browserskill.errors import BskError

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
        return BskError(
            "session_busy",
            message or f"session {self.session_id} is busy with {holder.tool} ({holder.op_id})",
            hint="retry when it ends, or pass --wait (HTTP \"wait\": true) to queue behind it",
            details={"holder": holder.holder_summary(), "queued": len(self._waiting)},
        )

    @property
    def queued(self) -> list[Operation]:
        return [op for op, fut in self._waiting if not fut.done()]

    async def acquire(self, op: Operation, *, wait: bool, deadline: float,
                      on_queued: Callable[[], None] | None = None, first: bool = False) -> str:
        """Take the slot: at once, or (with wait) FIFO until the deadline or a cancel.
        `first`: ahead of those waiting (a person taking the session over)."""
        if op.tripped.is_set():
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
            timeout = max(0.0, deadline - asyncio.get_running_loop().time())
            await asyncio.wait({fut, op.tripped.future}, timeout=timeout,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not fut.done():
                fut.cancel()
                self._waiting.remove(entry)
        if op.tripped.is_set() or fut.cancelled():
            if not fut.cancelled():
                self.release(op)  # handed the slot just as the cancel came: pass it on
            return CANCELLED if op.tripped.is_set() else TIMED_OUT
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
