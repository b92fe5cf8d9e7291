"""How an interrupted operation ended: a pure function of what was recorded.

`decide(facts)` returns a `Verdict` (status, code, dispatched, retry_safe, and `why`, the
key of its wording); the dispatcher words it (`dispatcher._word`). No I/O, no clock:
`tests/test_outcome.py` checks it row by row from a table.

Invariants (docs/design.md §3, §4):
- A handler that finished its action is never reported as cancelled, and neither is an
  ending a compensation learned from the page (a WebMCP tool that answered).
- Nothing sent that could change the page: `dispatched: "no"`; a lost link is then
  `browser_unavailable` (call again), anything else `cancelled` — retry-safe for a
  read-only tool (a repeat changes nothing) unless a person stopped it, never for one
  that acts (a retry would override the cancel).
- Something sent: `cancelled` with `dispatched: "yes"` only if every compensation ran,
  each undoes its effect, and no browser-native input step went out; otherwise
  `outcome_unknown` (inspect before acting again).
- A cleanup that did not finish by its deadline: `outcome_unknown`.
- While queued: the deadline is `session_busy` (still busy), a lost link
  `browser_unavailable`, any other trip `cancelled`; none of them sent anything.
- While awaiting a person's approval: as queued, but the deadline is `approval_timeout`
  (nobody answered; nothing sent, so retry-safe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from browserskill.base.contract import CancelReason, Dispatched, Status
from browserskill.base.errors import CODES, STATUS_FOR_CODE, retry_safe_for


@dataclass(frozen=True)
class Facts:
    """What the dispatcher recorded about an operation whose scope tripped."""

    reason: CancelReason  # why the scope tripped
    queued: bool = False  # tripped before it was dispatched
    awaiting_approval: bool = False  # tripped while a `confirm` rule held it for a person
    effect_sent: bool = False  # a command that may change the page went out
    steps_sent: bool = False  # browser-native input steps went out
    read_only: bool = False  # the tool's effect is a read (retry-safe once completed)
    handler_finished: bool = False  # the handler returned its result despite the trip
    handler_stopped: bool = True  # the handler ended within the cleanup deadline
    cleanup_complete: bool = True  # every compensation ran within the cleanup deadline
    # Each reported compensation: (ran ok, undoes its effect).
    compensations: tuple[tuple[bool, bool], ...] = ()
    # How a compensation learned the operation ended: (completed, yes), or the
    # error code it ended with and its dispatched ("tool_page_unloaded", yes).
    learned: tuple[str, Dispatched] | None = None


class Verdict(NamedTuple):
    status: Status
    code: str | None  # None when completed
    dispatched: Dispatched
    retry_safe: bool
    why: str  # the key of the wording (see `dispatcher._word`)


def _completed(f: Facts, why: str) -> Verdict:
    return Verdict(Status.COMPLETED, None, Dispatched.YES, f.read_only, why)


def _failed(code: str, dispatched: Dispatched, why: str, read_only: bool = False) -> Verdict:
    return Verdict(Status(STATUS_FOR_CODE.get(code, Status.FAILED)), code, dispatched,
                   retry_safe_for(code, dispatched, read_only), why)


def _repeatable(f: Facts) -> bool:
    """A cancelled read that sent nothing may be repeated — unless a person stopped it."""
    return f.read_only and f.reason != CancelReason.USER_INTERRUPT


def decide(f: Facts) -> Verdict:
    if f.queued:
        if f.awaiting_approval and f.reason == CancelReason.DEADLINE:
            return _failed("approval_timeout", Dispatched.NO, "approval_timed_out")
        if f.reason == CancelReason.DEADLINE:
            return _failed("session_busy", Dispatched.NO, "busy_at_deadline")
        if f.reason == CancelReason.LINK_LOST:
            return _failed("browser_unavailable", Dispatched.NO, "lost_while_queued")
        return _failed("cancelled", Dispatched.NO, "cancelled_while_queued", _repeatable(f))
    if f.handler_finished:
        return _completed(f, "completed_despite_cancel")  # it happened: never "cancelled"
    sent = Dispatched.YES if f.effect_sent else Dispatched.UNKNOWN
    if not f.handler_stopped or not f.cleanup_complete:
        return _failed("outcome_unknown", sent, "cleanup_timed_out")
    if f.learned is not None:
        code, dispatched = f.learned
        if code == Status.COMPLETED:
            return _completed(f, "learned")
        if code in ("outcome_unknown", "internal") and not f.effect_sent:
            dispatched = Dispatched.UNKNOWN  # as `Operation.fail` reports it
        return _failed(code, Dispatched(dispatched or CODES[code].dispatched), "learned")
    if not f.effect_sent:
        if f.reason == CancelReason.LINK_LOST:  # not a cancel: as if it had been queued
            return _failed("browser_unavailable", Dispatched.NO, "lost_before_effect")
        return _failed("cancelled", Dispatched.NO, "nothing_sent", _repeatable(f))
    if f.steps_sent or not f.compensations or not all(ok and undoes
                                                       for ok, undoes in f.compensations):
        return _failed("outcome_unknown", Dispatched.YES, "may_have_acted")
    return _failed("cancelled", Dispatched.YES, "undone")
