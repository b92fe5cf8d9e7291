"""An operation: one tool call, from queued to ended, and the result shape it reports.

Invariants: it ends exactly once (`complete` or `fail`); its scope (`OperationScope`)
holds its one deadline and why it was interrupted; what it reports has the contract's
result shape (`contract.result`); params that may be a password (`contract.MAYBE_SECRET`)
are shown and journaled masked (`shown_params`) until the tool knows its target; what it
keeps of its result (`kept_form`: `op show` and the journal) is bounded, whatever the
result's size.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from browserskill.base import contract, json_text, vault
from browserskill.base.contract import CancelReason, Dispatched, State, Status, new_op_id
from browserskill.base.errors import CODES, STATUS_FOR_CODE, BskError, retry_safe_for
from browserskill.session.scope import Once, OperationScope

QUEUED, AWAITING_APPROVAL, DISPATCHED, CLEANING_UP, ENDED = (
    State.QUEUED, State.AWAITING_APPROVAL, State.DISPATCHED, State.CLEANING_UP, State.ENDED)

# Operations that hand the session to a person (docs/dashboard.md): while one holds it,
# agent calls are `session_busy` naming the holder `person`, and the person's input in
# the dashboard's live view reaches the tab. `take_over` is the dashboard's own (not a
# catalog tool: an agent can't take a session over as a person); `request_help` is the
# agent's call.
TAKE_OVER = "take_over"
BY_PERSON = frozenset({TAKE_OVER, "request_help"})


_DIGEST_KEY = os.urandom(16)  # this process's: a digest is no password hash at rest


def _digest(params: dict[str, Any], names: tuple[str, ...]) -> bytes:
    text = "\0".join(str(params.get(n)) for n in names)
    return hashlib.blake2b(text.encode(), key=_DIGEST_KEY, digest_size=16).digest()


# Every result is bounded (docs/outcomes.md, "Bounded results"): a tool's own cap (eval's
# and html's --max-chars, …) cuts first, with its own note; past RESULT_MAX_CHARS of JSON
# any result is cut here. The journal keeps less (KEPT_*): the call that ran it, and
# `op show`/`op wait` while the daemon holds the operation, get it whole.
RESULT_MAX_CHARS = 12_000_000
RESULT_STRING_MAX_CHARS = 1_000_000
RESULT_LIST_MAX_ITEMS = 10_000
KEPT_RESULT_MAX_CHARS = 64_000
KEPT_STRING_MAX_CHARS = 2_000
KEPT_LIST_MAX_ITEMS = 200


def _cut(value: Any, max_string: int, max_items: int) -> Any:
    if isinstance(value, str) and len(value) > max_string:
        return value[:max_string] + f"…[cut: {len(value):,} characters]"
    if isinstance(value, dict):
        return {k: _cut(v, max_string, max_items) for k, v in value.items()}
    if isinstance(value, list):
        more = len(value) - max_items
        return [_cut(v, max_string, max_items) for v in value[:max_items]] + (
            [f"…[cut: {more:,} more items]"] if more > 0 else [])
    return value


def _bounded(result: dict[str, Any], limit: int, max_string: int, max_items: int,
             note: str, text: str | None = None) -> tuple[dict[str, Any], str | None]:
    """`result` if its JSON text (`text`, when the caller has it) is at most `limit`
    characters, else its long strings and lists cut (or, if that is still too big, only
    the start of the text) and a note."""
    if text is None:
        text = json.dumps(result, ensure_ascii=False)
    if len(text) <= limit:
        return result, None
    kept = _cut(result, max_string, max_items)
    if len(json.dumps(kept, ensure_ascii=False)) > limit:
        kept = {"start": text[:limit // 2]}
    return kept, (f"{note}: the result was {len(text):,} characters of JSON, more than "
                  f"the {limit:,} allowed")


def capped_result(result: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    """What a call answers: `result`, or past RESULT_MAX_CHARS a cut form with a `note`.
    `text`: its JSON text (`ensure_ascii=False`), when the caller has it."""
    out, note = _bounded(result, RESULT_MAX_CHARS, RESULT_STRING_MAX_CHARS,
                         RESULT_LIST_MAX_ITEMS, "cut", text)
    if note is None:
        return result
    said = (f"{note}; strings over {RESULT_STRING_MAX_CHARS:,} characters and lists over "
            f"{RESULT_LIST_MAX_ITEMS:,} items were cut: ask for less (a ref, --limit, "
            "--max-chars) or save it to a file")
    before = out.get("note")
    return {**out, "truncated": True,
            "note": f"{before}; {said}" if isinstance(before, str) else said}


def kept_form(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the journal keeps of `result` (so `op show` once the daemon has let the
    operation go): itself if its JSON text is at most KEPT_RESULT_MAX_CHARS, else a
    bounded form of it with a `kept_note`."""
    if result is None:
        return None
    out, note = _bounded(result, KEPT_RESULT_MAX_CHARS, KEPT_STRING_MAX_CHARS,
                         KEPT_LIST_MAX_ITEMS, "bounded in the journal")
    if note is None:
        return result
    return {**out, "kept_note": f"{note}; the call that ran it got it whole"}


_second: list[Any] = [None, ""]  # the last whole second `iso` formatted, and its text


def iso(ts: float | None) -> str | None:
    """`ts` (epoch seconds) as UTC ISO 8601 to the millisecond (`…T07:03:12.345Z`), as
    `datetime.isoformat(timespec="milliseconds")` writes it. Every timeline entry and
    answer stamps times: the date and time of day are formatted once per second."""
    if ts is None:
        return None
    whole = math.floor(ts)
    micros = round((ts - whole) * 1e6)  # datetime rounds to the microsecond, then cuts
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    if _second[0] != whole:
        _second[0] = whole
        _second[1] = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{_second[1]}.{micros // 1000:03d}Z"


@dataclass
class Operation:
    session_id: str
    tool: str
    params: dict[str, Any]
    op_id: str = field(default_factory=new_op_id)
    idempotency_key: str | None = None
    state: State = QUEUED
    status: Status | None = None
    dispatched: Dispatched = Dispatched.NO
    retry_safe: bool = False
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    created_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    timeline: list[list[Any]] = field(default_factory=list)
    # Live-only state (not journaled as columns):
    effect_sent: bool = False  # a command that may change the page went out
    journaled: bool = False  # its row exists in the journal
    steps_sent: list[str] = field(default_factory=list)
    # What a person is asked to approve and why (dispatch/approvals.py), once a policy's
    # `confirm` rule held it; then how they answered. Shown by `op show` and the dashboard.
    approval: dict[str, Any] | None = None
    # Params shown and stored as contract.SECRET_MASK (may be a password): until
    # `reveal`, for good after `conceal`. `params_changed`: the journal's copy is stale.
    masked: tuple[str, ...] = ()
    params_changed: bool = False
    secret_digest: bytes | None = None  # of the concealed text, to compare a keyed repeat
    # The journal's JSON text of `result`, made when it completed, if that text was ASCII
    # and within KEPT_RESULT_MAX_CHARS (the journal keeps it whole): one serialization
    # of a result serves the cap, the journal and `keep_bounded`; compact when the result
    # is small (`complete`). None: made when needed (and after any change to `result`).
    result_text: str | None = field(default=None, repr=False)
    scope: OperationScope = field(default_factory=OperationScope, repr=False)
    done: Once = field(default_factory=lambda: Once(), repr=False)  # it has ended
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.timeline:
            self.note(QUEUED)
            self.masked = contract.MAYBE_SECRET.get(self.tool, ())

    def shown_params(self) -> dict[str, Any]:
        """Its params as every surface and the journal see them (secrets masked)."""
        if not self.masked:
            return self.params
        return {**self.params, **{k: contract.SECRET_MASK for k in self.masked
                                  if k in self.params}}

    def reveal(self) -> None:
        """Its target is no password field: its params may be shown as given."""
        if self.masked:
            self.masked = ()
            self.params_changed = True

    def conceal(self) -> None:
        """Its target is a password field: the text is dropped for good (the running
        handler keeps its own copy)."""
        self.secret_digest = _digest(self.params, self.masked)
        self.params = self.shown_params()
        self.params_changed = True

    def secret_matches(self, params: dict[str, Any]) -> bool:
        """Do `params` carry the secret this operation concealed? (True when it concealed
        none, or holds no digest of it: one read back from the journal.)"""
        return self.secret_digest is None or self.secret_digest == _digest(params, self.masked)

    def note(self, event: str, detail: Any = None) -> None:
        entry: list[Any] = [iso(time.time()), event]
        if detail is not None:
            entry.append(detail)
        self.timeline.append(entry)

    def request_cancel(self, reason: CancelReason) -> bool:
        """Trip the operation's scope; the first reason wins. False if it already ended."""
        if self.ended:
            return False
        if self.scope.trip(reason):
            self.note("cancel_requested", reason)
        return True

    @property
    def deadline(self) -> float:
        """Its one deadline (event-loop time), the scope's."""
        return self.scope.deadline

    @property
    def cancel_reason(self) -> CancelReason | None:
        """Why its scope tripped: cancel, deadline, link_lost, …; None if it did not."""
        return self.scope.reason

    @property
    def tripped(self) -> Once:
        return self.scope.tripped

    @property
    def ended(self) -> bool:
        return self.state == ENDED

    def age_s(self) -> float:
        return round(time.time() - self.created_at, 3)

    def complete(self, result: dict[str, Any], retry_safe: bool) -> None:
        self._end(Status.COMPLETED, Dispatched.YES, retry_safe)
        # A stored secret's value is masked in what every surface, the journal and the
        # dashboard get (browserskill/base/vault.py): the page may echo it anywhere.
        scrubbed = vault.scrub(result)
        compact = json_text.dumps_ascii(scrubbed)
        if 2 * len(compact) <= KEPT_RESULT_MAX_CHARS:
            # Within both bounds: the text `capped_result` and `kept_form` measure (the
            # stdlib's, with spaces and non-ASCII as is) is never twice the compact
            # ASCII one (a space per separator, an escape never shorter than its
            # character). One orjson call instead of the stdlib's encoder.
            self.result = scrubbed
            self.result_text = compact
            return
        text = json.dumps(scrubbed, ensure_ascii=False)
        self.result = capped_result(scrubbed, text)
        if self.result is scrubbed and len(text) <= KEPT_RESULT_MAX_CHARS and text.isascii():
            self.result_text = text  # what json.dumps writes for the journal, too

    def keep_bounded(self) -> None:
        """Hold only what the journal keeps of its result (`kept_form`), so the memory of
        a big one returns once its callers have it."""
        if self.result_text is None:  # else it is within the bound already
            self.result = kept_form(self.result)

    def fail(self, err: BskError) -> None:
        entry = CODES[err.code]
        dispatched = Dispatched(err.dispatched or entry.dispatched)  # a typo raises here
        if err.code in ("outcome_unknown", "internal") and not self.effect_sent:
            dispatched = Dispatched.UNKNOWN if self.state != QUEUED else Dispatched.NO
        self._end(Status(STATUS_FOR_CODE.get(err.code, Status.FAILED)), dispatched,
                  retry_safe_for(err.code, dispatched) if err.retry_safe is None
                  else err.retry_safe and dispatched == Dispatched.NO)
        self.error = vault.scrub(err.to_dict())

    def _end(self, status: Status, dispatched: Dispatched, retry_safe: bool) -> None:
        self.scope.close()
        self.state = ENDED
        self.status = status
        self.dispatched = dispatched
        self.retry_safe = retry_safe
        self.ended_at = time.time()
        self.note(ENDED, status)

    def to_result(self, *, with_timeline: bool = False) -> dict[str, Any]:
        """Its answer; `with_timeline` (`op show`, `op wait`) adds its history, and says
        when the journal keeps only a bounded form of its result."""
        out = contract.result(
            op_id=self.op_id, session_id=self.session_id, tool=self.tool, state=self.state,
            status=self.status, dispatched=self.dispatched, retry_safe=self.retry_safe,
            result=self.result, error=self.error, started_at=iso(self.created_at),
            ended_at=iso(self.ended_at))
        if with_timeline:
            kept = kept_form(self.result)
            if kept is not self.result and kept is not None:  # as the journal will say
                out["journal_note"] = kept["kept_note"]
            out["timeline"] = self.timeline
            out["params"] = self.shown_params()
            out["idempotency_key"] = self.idempotency_key
            if self.approval is not None:
                out["approval"] = self.approval
        return out

    @property
    def by_person(self) -> bool:
        return self.tool in BY_PERSON

    def holder_summary(self) -> dict[str, Any]:
        holder = ("person" if self.by_person else "approval"
                  if self.state == AWAITING_APPROVAL else "agent")
        out = {"op_id": self.op_id, "tool": self.tool, "state": self.state,
               "age_s": self.age_s(), "holder": holder}
        if holder == "approval" and self.approval is not None:
            out["waiting_for"] = self.approval["why"]
        return out
