"""The outcome of an interrupted operation, from a table: each row is a set of recorded
facts and the status, dispatched, retry_safe and code it must end with
(`browserskill.dispatch.outcome.decide`; docs/design.md §3, §4). No browser, no clock:
the decision is a pure function; the real-browser tests (test_interruption.py,
test_faults.py, test_interleavings.py) check the dispatcher records the facts."""

from __future__ import annotations

import pytest

from browserskill.base.errors import CODES, STATUS_FOR_CODE, retry_safe_for
from browserskill.dispatch.outcome import Facts, decide

OK_UNDONE = (True, True)  # a compensation that ran and undoes its effect
OK_KEPT = (True, False)  # ran, but the effect stays (a released mouse button)
FAILED = (False, True)  # did not run to the end

# (facts, (status, dispatched, retry_safe, code))
TABLE: list[tuple[Facts, tuple[str, str, bool, str | None]]] = [
    # -- tripped while queued: nothing was sent
    (Facts("deadline", queued=True), ("failed", "no", True, "session_busy")),
    (Facts("cancel", queued=True), ("cancelled", "no", False, "cancelled")),
    (Facts("client_disconnected", queued=True), ("cancelled", "no", False, "cancelled")),
    (Facts("link_lost", queued=True), ("failed", "no", True, "browser_unavailable")),
    (Facts("daemon_stopping", queued=True), ("cancelled", "no", False, "cancelled")),
    # Held for a person's approval: as queued, but its deadline is nobody answering.
    (Facts("deadline", queued=True, awaiting_approval=True),
     ("failed", "no", True, "approval_timeout")),
    (Facts("cancel", queued=True, awaiting_approval=True), ("cancelled", "no", False, "cancelled")),
    (Facts("cancel", queued=True, read_only=True), ("cancelled", "no", True, "cancelled")),
    # -- the handler finished its action anyway: it happened
    (Facts("cancel", effect_sent=True, handler_finished=True),
     ("completed", "yes", False, None)),
    (Facts("deadline", handler_finished=True, read_only=True),
     ("completed", "yes", True, None)),
    # -- nothing that could change the page went out
    (Facts("cancel"), ("cancelled", "no", False, "cancelled")),
    (Facts("deadline"), ("cancelled", "no", False, "cancelled")),
    (Facts("user_interrupt", read_only=True), ("cancelled", "no", False, "cancelled")),
    # a read cut off by its deadline before sending anything: repeating it is safe
    (Facts("deadline", read_only=True), ("cancelled", "no", True, "cancelled")),
    (Facts("cancel", read_only=True), ("cancelled", "no", True, "cancelled")),
    (Facts("link_lost"), ("failed", "no", True, "browser_unavailable")),
    (Facts("link_lost", compensations=(FAILED,)), ("failed", "no", True,
                                                   "browser_unavailable")),
    # -- something went out
    (Facts("cancel", effect_sent=True, compensations=(OK_UNDONE,)),
     ("cancelled", "yes", False, "cancelled")),
    (Facts("deadline", effect_sent=True, compensations=(OK_UNDONE, OK_UNDONE)),
     ("cancelled", "yes", False, "cancelled")),
    (Facts("cancel", effect_sent=True), ("outcome_unknown", "yes", False, "outcome_unknown")),
    (Facts("cancel", effect_sent=True, compensations=(OK_KEPT,)),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    (Facts("cancel", effect_sent=True, compensations=(OK_UNDONE, FAILED)),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    (Facts("link_lost", effect_sent=True, compensations=(OK_UNDONE,)),
     ("cancelled", "yes", False, "cancelled")),
    # input steps went out: an undone step still may have been seen by the page
    (Facts("cancel", effect_sent=True, steps_sent=True, compensations=(OK_UNDONE,)),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    # -- the cleanup did not finish by its deadline
    (Facts("cancel", effect_sent=True, handler_stopped=False),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    (Facts("cancel", handler_stopped=False), ("outcome_unknown", "unknown", False,
                                              "outcome_unknown")),
    (Facts("deadline", effect_sent=True, cleanup_complete=False,
           compensations=(OK_UNDONE,)),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    # a learned ending does not count when the cleanup ran out of time
    (Facts("deadline", effect_sent=True, cleanup_complete=False,
           learned=("completed", "yes")),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    # -- a compensation learned how it really ended (a WebMCP tool's answer)
    (Facts("deadline", effect_sent=True, learned=("completed", "yes")),
     ("completed", "yes", False, None)),
    (Facts("cancel", effect_sent=True, learned=("completed", "yes"),
           compensations=(OK_KEPT,)),
     ("completed", "yes", False, None)),
    (Facts("link_lost", effect_sent=True, learned=("tool_page_unloaded", "yes")),
     ("failed", "yes", False, "tool_page_unloaded")),
    (Facts("deadline", effect_sent=True, learned=("outcome_unknown", "yes")),
     ("outcome_unknown", "yes", False, "outcome_unknown")),
    (Facts("cancel", effect_sent=True, learned=("cancelled", "yes")),
     ("cancelled", "yes", False, "cancelled")),
    (Facts("cancel", learned=("outcome_unknown", "yes")),
     ("outcome_unknown", "unknown", False, "outcome_unknown")),
]


@pytest.mark.parametrize(("facts", "expected"), TABLE,
                         ids=[f"row{i}" for i in range(len(TABLE))])
def test_outcome_table(facts: Facts, expected: tuple[str, str, bool, str | None]) -> None:
    verdict = decide(facts)
    assert (verdict.status, verdict.dispatched, verdict.retry_safe, verdict.code) == expected


@pytest.mark.parametrize(("facts", "expected"), TABLE,
                         ids=[f"row{i}" for i in range(len(TABLE))])
def test_verdicts_agree_with_the_error_table(
        facts: Facts, expected: tuple[str, str, bool, str | None]) -> None:
    """A failing verdict's status and retry_safe are the error table's for its code and
    dispatched: the decision adds no rule of its own there."""
    verdict = decide(facts)
    if verdict.code is None:
        assert verdict.status == "completed" and verdict.dispatched == "yes"
        return
    assert verdict.code in CODES
    assert verdict.status == STATUS_FOR_CODE.get(verdict.code, "failed")
    read = facts.read_only and facts.reason != "user_interrupt"  # a person's stop stays
    assert verdict.retry_safe == retry_safe_for(verdict.code, verdict.dispatched, read)


def test_no_cancel_claims_nothing_was_sent_after_a_step() -> None:
    """Over every combination of the boolean facts: an operation that sent input steps
    is never `cancelled` with `dispatched: "no"`, and a lost link is never a cancel
    with nothing sent (the property test's invariants, stated on the decision)."""
    import itertools

    flags = ("queued", "effect_sent", "steps_sent", "read_only", "handler_finished",
             "handler_stopped", "cleanup_complete")
    for reason in ("cancel", "deadline", "link_lost", "user_interrupt"):
        for values in itertools.product((False, True), repeat=len(flags)):
            kw = dict(zip(flags, values, strict=True))
            if kw["steps_sent"] and not kw["effect_sent"]:
                continue  # a step is an effect (ToolContext.step marks it)
            for comps in ((), (OK_UNDONE,), (OK_KEPT,), (FAILED,)):
                v = decide(Facts(reason, compensations=comps, **kw))
                if kw["steps_sent"] and not kw["queued"]:
                    assert not (v.status == "cancelled" and v.dispatched == "no"), (kw, v)
                if reason == "link_lost":
                    assert v.status != "cancelled" or v.dispatched == "yes", (kw, v)
                if kw["effect_sent"] and not kw["queued"]:
                    assert v.dispatched == "yes", (kw, v)
