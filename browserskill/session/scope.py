"""`OperationScope`: one operation's cancel scope (as trio and anyio name theirs).

Invariants:
- One deadline. The scope trips itself ("deadline") when its deadline passes, and every
  wait of the operation derives its bound from it: the queue waits for the trip, the
  handler's commands get `remaining()`. So a command that times out on the scope's
  time finds the scope already tripped: that is the deadline (a cancel with its
  compensation), not a browser that stopped answering — no allowance between timers.
- Tripped at most once; the first reason wins and stays (cancel, deadline, link_lost,
  client_disconnected, …).
- Compensations registered while the handler runs are run on a trip, last-in first-out,
  shielded from the trip itself and bounded by one cleanup deadline (`cleanup`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from browserskill.base.contract import CancelReason


class Once:
    """A one-shot signal on a plain future: awaitable, and usable in `asyncio.wait`
    without a task per waiter (the hot path of every call)."""

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def set(self) -> None:
        if not self.future.done():
            self.future.set_result(None)

    def is_set(self) -> bool:
        return self.future.done()

    async def wait(self) -> None:
        await asyncio.shield(self.future)  # a cancelled waiter must not cancel the signal


@dataclass
class Compensation:
    action: str | None  # as reported: mouse_released, tab_closed, …; None: not reported
    undo: Callable[[], Awaitable[Any]]
    undoes_effect: bool  # True if, once run, the page is as if nothing happened
    # Set by `undo` when it learned how the operation really ended: a BskError to report,
    # or a result dict (it completed after all). The outcome is that instead.
    verdict: Any = None
    # False while there is nothing to undo yet (see `ToolContext.on_cancel(after_step=…)`).
    armed: Callable[[], bool] = field(default=lambda: True)


@dataclass
class CleanupReport:
    """What the compensations did: one entry per reported action, and whether all of
    them ran before the cleanup deadline."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True


class OperationScope:
    def __init__(self) -> None:
        self.deadline = float("inf")  # event-loop time; `arm` sets it
        self.reason: CancelReason | None = None  # why it tripped
        self.tripped = Once()
        self.compensations: list[Compensation] = []
        self._timer: asyncio.TimerHandle | None = None
        # Its loop, asked for once (`remaining` runs several times a call; asking the
        # running loop is a system call: `getpid`, to notice a fork).
        self._loop = self.tripped.future.get_loop()

    # -- the deadline --------------------------------------------------------------------

    def arm(self, timeout_s: float) -> None:
        """Start the clock: the scope trips "deadline" `timeout_s` from now."""
        self.deadline = self._loop.time() + timeout_s
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(self.deadline, self.trip, CancelReason.DEADLINE)

    def remaining(self) -> float:
        """Seconds to the deadline, for a command's or wait's own bound (at least 1 ms:
        a wait of 0 would not give the browser a chance to answer)."""
        return max(0.001, self.deadline - self._loop.time())

    def close(self) -> None:
        """The operation ended: its clock stops."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- tripping ------------------------------------------------------------------------

    def trip(self, reason: CancelReason) -> bool:
        """Trip the scope; the first reason wins. True if this call tripped it."""
        if self.reason is not None:
            return False
        self.reason = reason
        self.tripped.set()
        if self._timer is not None and reason != CancelReason.DEADLINE:
            self._timer.cancel()
            self._timer = None
        return True

    @property
    def is_tripped(self) -> bool:
        return self.reason is not None

    @property
    def timed_out(self) -> bool:
        return self.reason == CancelReason.DEADLINE

    # -- compensations -------------------------------------------------------------------

    def add(self, comp: Compensation) -> Compensation:
        self.compensations.append(comp)
        return comp

    def settled(self, comp: Compensation) -> None:
        """The step `comp` guarded finished: nothing to undo any more."""
        if comp in self.compensations:
            self.compensations.remove(comp)

    def learned(self) -> Any:
        """How the operation really ended, if a compensation learned it (WebMCP)."""
        return next((c.verdict for c in self.compensations if c.verdict is not None), None)

    async def cleanup(self, deadline: float,
                      on_entry: Callable[[dict[str, Any]], None] | None = None,
                      ) -> CleanupReport:
        """Run the armed compensations, last registered first, each bounded by
        `deadline` (event-loop time). Shielded: cancelling the caller does not cut a
        compensation short (it has its own deadline)."""
        task = asyncio.ensure_future(self._cleanup(deadline, on_entry))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait({task})  # bounded by `deadline`
            raise

    async def _cleanup(self, deadline: float,
                       on_entry: Callable[[dict[str, Any]], None] | None) -> CleanupReport:
        report = CleanupReport()
        loop = asyncio.get_running_loop()
        for comp in reversed([c for c in self.compensations if c.armed()]):
            entry: dict[str, Any] = {"action": comp.action,
                                     "undoes_effect": comp.undoes_effect}
            try:
                async with asyncio.timeout_at(deadline):
                    await comp.undo()
                entry["ok"] = True
            except TimeoutError:
                entry["ok"] = False
                entry["error"] = "cleanup deadline passed"
            except Exception as e:
                entry["ok"] = False
                entry["error"] = str(e)
            entry["action"] = comp.action  # undo may rename it (what it found to do)
            if comp.action is not None:  # None: undo found nothing to do (no script ran)
                if on_entry is not None:
                    on_entry(entry)
                report.entries.append(entry)
            if loop.time() >= deadline:
                report.complete = False
                return report
        return report
