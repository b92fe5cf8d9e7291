"""Running operations: validate, journal, queue, dispatch, end with an honest outcome.

Invariants:
- Each operation runs in a task of its own (`submit`: a caller can detach), or in the
  task of a caller that waits for its end anyway (`prepare`: the HTTP answer, where a
  hang-up trips the scope), under its own `OperationScope`: a cancel, a lost link or
  its deadline trips exactly that scope, and the scope's one deadline bounds the queue
  wait, the dispatch and every command.
- Every ending path ends here, once: the handler's own ending (`_settle`), or, when the
  scope tripped, the verdict of `outcome.decide` on the facts recorded meanwhile
  (`_end_tripped`), worded by `_word`.
- Nothing is reported `dispatched: "no"` once a command that may change the page went
  out (`Operation.effect_sent`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any

from browserskill.base import catalog, contract
from browserskill.base.contract import CancelReason, Dispatched, State, Status
from browserskill.base.errors import CODES, SHOULD_RETRY, BskError, invalid
from browserskill.browser.link import CommandTimeout, LinkClosed, LinkError
from browserskill.browser.manager import BrowserManager
from browserskill.browser.tab import DialogOpened, TabCrashed, TabGone
from browserskill.dispatch import approvals, outcome
from browserskill.dispatch.journal import Journal
from browserskill.dispatch.person import PersonInTheLoop
from browserskill.session.operations import AWAITING_APPROVAL, CLEANING_UP, DISPATCHED, Operation
from browserskill.session.queue import ACQUIRED, TIMED_OUT
from browserskill.session.sessions import Session, SessionManager
from browserskill.tools import call_hooks, handlers
from browserskill.tools.context import ToolContext

log = logging.getLogger(__name__)

RECENT_OPS = 1000  # ended operations kept in memory (the journal keeps the rest)
# Of those, the latest to end keep their whole result; older ones keep the journal's
# bounded form (`Operation.keep_bounded`): memory returns after big results (docs/design.md).
WHOLE_RESULTS = 16


class Dispatcher:
    # What handlers get; a test's fault seam (tests/support/faults.py) swaps in a subclass.
    context_class: type[ToolContext] = ToolContext

    def __init__(
        self, journal: Journal, sessions: SessionManager, browser: BrowserManager,
        state_dir: Path, *, cleanup_timeout_s: float = 2.0,
    ) -> None:
        self.journal = journal
        self.sessions = sessions
        self.browser = browser
        self.state_dir = state_dir
        self.handlers = handlers.load()
        self.ops: dict[str, Operation] = {}  # live and recently ended, by id
        self.cleanup_timeout_s = cleanup_timeout_s
        browser.on_lost(self.link_lost)
        sessions.on_link_lost = self.link_lost  # a remote placement's own link
        self._keys: dict[tuple[str, str], Operation] = {}
        self._whole: deque[Operation] = deque()  # ended, holding whole results (oldest first)
        # Keys whose first call is still making its operation (see `_claim_key`).
        self._claims: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._starting: dict[str, asyncio.Future[Session]] = {}  # default session's start
        # What a person does to a session: Stop, take-over, help, approvals.
        self.person = PersonInTheLoop(journal, sessions, cancel_live=self.cancel_live,
                                      remember=self._remember)

    # -- submit ----------------------------------------------------------------------

    async def submit(
        self,
        session_id: str,
        tool: str,
        raw_params: Any,
        *,
        wait: bool = False,
        timeout_ms: int | None = None,
        idempotency_key: str | None = None,
        op_id: str | None = None,
        validated: bool = False,
    ) -> Operation:
        """Start an operation in a task of its own (a caller may leave it running: detach,
        `op wait`); the operation, live or (an idempotent repeat) already ended.
        `validated`: `raw_params` is what `spec.validate` returned already (bsk's
        launcher reads its command line against the catalog): not checked twice."""
        op, run = await self.prepare(session_id, tool, raw_params, wait=wait,
                                     timeout_ms=timeout_ms, idempotency_key=idempotency_key,
                                     op_id=op_id, validated=validated)
        if run is not None:
            op.task = asyncio.create_task(run, name=op.op_id)
        return op

    async def prepare(
        self,
        session_id: str,
        tool: str,
        raw_params: Any,
        *,
        wait: bool = False,
        timeout_ms: int | None = None,
        idempotency_key: str | None = None,
        op_id: str | None = None,
        validated: bool = False,
    ) -> tuple[Operation, Coroutine[Any, Any, None] | None]:
        """`submit` without the task: the new operation and what runs it to its end, for
        a caller that waits for the end anyway to run in its own task (the HTTP answer:
        one task per call, not two); None instead when an idempotency key named an
        earlier operation (live or ended), which is returned."""
        spec = catalog.get(tool)
        params = raw_params if validated else spec.validate(raw_params)
        timeout_ms = contract.check_timeout_ms(timeout_ms, tool, spec.timeout_range_s)
        claim: asyncio.Future[None] | None = None
        if idempotency_key is not None:
            earlier, claim = await self._claim_key(session_id, idempotency_key, tool, params)
            if earlier is not None:
                return earlier, None
        try:
            if op_id is not None and not contract.valid_op_id(op_id):
                raise invalid("op_id", f"must be {contract.OP_ID_RULE}, and new")
            if op_id is not None and (op_id in self.ops or self.journal.has(op_id)):
                raise invalid("op_id", f"{op_id} names an earlier operation: an op id names "
                              "one call", hint=f"`bsk op show {op_id}` says how it ended; "
                              "give a new id (or none) to run this one, or a --key to "
                              "have a retry answered by the first")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + contract.op_deadline_s(
                spec, params, timeout_ms / 1000 if timeout_ms else None)
            # One deadline: a default session started for this call spends from it.
            session = await self._session_for_call(session_id, deadline)
            op = Operation(session_id, tool, params, idempotency_key=idempotency_key)
            if op_id:
                op.op_id = op_id
            op.scope.arm(max(0.001, deadline - loop.time()))
            self._remember(op)
        finally:
            if claim is not None:  # the key now names `op`, or is free again
                self._claims.pop((session_id, idempotency_key), None)  # type: ignore[arg-type]
                claim.set_result(None)
        # Journaled when it starts waiting, or when it is dispatched (most calls find the
        # session free: one write instead of two).
        return op, self._run(op, session, wait)

    async def _session_for_call(self, session_id: str, deadline: float) -> Session:
        """The session a call names. Calls that arrive while the default session is
        starting (its first tab opening) wait for that start, and share its outcome,
        instead of finding a session without a tab; the start ends by the first call's
        `deadline` (loop time)."""
        starting = self._starting.get(session_id)
        timeout = max(0.001, deadline - asyncio.get_running_loop().time())
        if starting is None:
            if session_id != contract.DEFAULT_SESSION or session_id in self.sessions.sessions:
                return await self.sessions.get_for_call(session_id)
            starting = asyncio.ensure_future(self.sessions.get_for_call(session_id, timeout))
            self._starting[session_id] = starting
            starting.add_done_callback(lambda t: (
                self._starting.pop(session_id, None),
                t.cancelled() or t.exception()))  # retrieved, even if every caller left
        return await asyncio.shield(starting)

    async def _claim_key(
        self, session_id: str, key: str, tool: str, params: dict[str, Any]
    ) -> tuple[Operation | None, asyncio.Future[None] | None]:
        """The operation this key names, or the right to make it (a claim to resolve).

        Between the key check and the operation's birth `submit` awaits (the default
        session starts on first use): a second call with the same key meanwhile waits
        for that claim instead of making a second operation (one key, one operation)."""
        while True:
            earlier = self._by_key(session_id, key, tool, params)
            if earlier is not None:
                return earlier, None
            pending = self._claims.get((session_id, key))
            if pending is None:
                break
            await asyncio.shield(pending)
        claim = asyncio.get_running_loop().create_future()
        self._claims[(session_id, key)] = claim
        return None, claim

    def _by_key(
        self, session_id: str, key: str, tool: str, params: dict[str, Any]
    ) -> Operation | None:
        """The operation this key already names, if any (live or from the journal)."""
        if not key or len(key) > 256:
            raise invalid("idempotency_key", "must be 1-256 characters")
        op = self._keys.get((session_id, key))
        if op is None:
            row = self.journal.find_key(session_id, key)
            if row is None:
                return None
            op = _from_row(row)
        stored = op.params  # a secret it concealed is masked there: compare it masked
        given = {k: contract.SECRET_MASK if stored.get(k) == contract.SECRET_MASK else v
                 for k, v in params.items()}
        if op.tool != tool or _canon(stored) != _canon(given) or not op.secret_matches(params):
            raise invalid(
                "idempotency_key",
                f"key {key!r} was used for a different call ({op.tool}, {op.op_id})",
                hint="use a new key for a new call",
            )
        return op

    def _remember(self, op: Operation) -> None:
        self.ops[op.op_id] = op
        if op.idempotency_key:
            self._keys[(op.session_id, op.idempotency_key)] = op
        if len(self.ops) > RECENT_OPS * 2:
            for old_id in [k for k, o in self.ops.items() if o.ended][:RECENT_OPS]:
                old = self.ops.pop(old_id)
                if old.idempotency_key:
                    self._keys.pop((old.session_id, old.idempotency_key), None)

    # -- run -------------------------------------------------------------------------

    async def _run(self, op: Operation, session: Session, wait: bool) -> None:
        try:
            got = await session.queue.acquire(op, wait=wait,
                                              on_queued=lambda: self.journal.record(op))
            if got != ACQUIRED:
                reason = (CancelReason.DEADLINE if got == TIMED_OUT
                          else op.scope.reason or CancelReason.CANCEL)
                verdict = outcome.decide(outcome.Facts(
                    reason=reason, queued=True,
                    read_only=catalog.BY_NAME[op.tool].effect.retry_safe))
                if verdict.code == "session_busy":
                    raise session.queue.busy_error(f"session {session.id} was still busy "
                                                   "when this call's deadline passed")
                raise _word(verdict, op, {"reason": reason}, session.backend.lost_hint())
            self.person.refuse_after_stop(session, op.tool)  # once, after a person's Stop
            for gate in call_hooks.BEFORE_DISPATCH:  # the person's policy: nothing sent yet
                await gate(session, op.tool, op.params, lambda ruling: self._await_approval(
                    op, session, approvals.request(session, op, ruling)))
            if catalog.BY_NAME[op.tool].on_pages:  # stopping needs no browser
                session.backend.before_dispatch()
            await self._dispatch(op, session)
        except BskError as e:
            op.fail(e)
            if op.idempotency_key and e.code in SHOULD_RETRY and op.dispatched == Dispatched.NO:
                # Refused before dispatch (busy, no browser): the key stays free for the
                # retry the answer invites.
                self._keys.pop((op.session_id, op.idempotency_key), None)
                op.idempotency_key = None
        except Exception as e:
            log.exception("operation %s (%s) failed with a bug", op.op_id, op.tool)
            op.fail(BskError("internal", f"internal error: {e}",
                             hint=f"this is a bug; the daemon log has details for {op.op_id}"))
        finally:
            session.queue.release(op)
            session.last_used = asyncio.get_running_loop().time()
            session.remember_origins()
            self.sessions.persist(session)
            if not op.ended:  # the runner itself was torn down (event loop closing)
                op.fail(BskError("outcome_unknown", "the daemon stopped mid-operation"))
                written = self.journal.record(op)  # now: no turn of the loop is left
            else:  # written before it is answered, with the calls ending alongside
                try:
                    written = await self.journal.record_soon(op)
                except asyncio.CancelledError:  # torn down now: its row goes with the batch
                    op.done.set()
                    raise
            if not written:  # kept in memory, written once it can be
                op.note("not_journaled_yet", self.journal.write_error)
            op.done.set()
            self._whole.append(op)
            if len(self._whole) > WHOLE_RESULTS:
                self._whole.popleft().keep_bounded()

    async def _await_approval(self, op: Operation, session: Session,
                              request: dict[str, Any]) -> None:
        """Hold `op`, holding the session, until a person answers or its scope trips
        (its deadline: `approval_timeout`; a cancel: `cancelled`); nothing is sent. Asked
        before dispatch, or by its handler once its locators are bound (`ToolContext.
        wait_for_approval`): approved, it goes on from where it was."""
        was = op.state
        op.state = AWAITING_APPROVAL
        op.approval = request
        op.note(AWAITING_APPROVAL, {k: request[k] for k in ("what", "why", "rule")})
        if not self.journal.record(op):
            raise self.journal.unavailable()
        answer = self.person.approvals.open(op)
        watched: set[asyncio.Future[Any]] = {answer, op.scope.tripped.future}
        try:
            await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.person.approvals.close(op)
        if op.scope.is_tripped or not answer.done() or answer.cancelled():
            reason = op.scope.reason or CancelReason.CANCEL
            verdict = outcome.decide(outcome.Facts(
                reason=reason, queued=True, awaiting_approval=True,
                read_only=catalog.BY_NAME[op.tool].effect.retry_safe))
            raise _word(verdict, op, {"reason": reason, "rule": request["rule"]},
                        session.backend.lost_hint())
        said, by = answer.result()
        op.approval = {**request, "answer": said, "by": by}
        op.note("approved" if said == approvals.APPROVE else "denied", by)
        if said != approvals.APPROVE:
            raise BskError("denied", f"{request['what']} was denied in {by}: nothing was sent",
                           hint="don't try it another way; ask the user what to do",
                           details={"rule": request["rule"], "by": by}, dispatched=Dispatched.NO)
        op.state = was

    async def _dispatch(self, op: Operation, session: Session) -> None:
        op.state = DISPATCHED
        op.note(DISPATCHED)
        # Nothing goes out that the journal can't tell of (one commit per loop turn).
        if not await self.journal.record_soon(op):
            raise self.journal.unavailable()
        recovered = None
        on_pages = catalog.BY_NAME[op.tool].on_pages
        if on_pages:  # tabs lost with their browser come back first
            recovered = await self.sessions.recover(session, op.scope.remaining())
            if recovered:
                op.note("tabs_recovered", recovered)
        current = session.tabs.get(session.current_tab_id or "")
        if current is not None and not current.gone and on_pages:
            await session.backend.ensure_shown(current,
                                               timeout=min(2.0, op.scope.remaining()))
        ctx = self.context_class(op, session, self.sessions, session.backend, self.state_dir)
        ctx.wait_for_approval = lambda ruling, params: self._await_approval(
            op, session, approvals.request(session, op, ruling, params))
        work = asyncio.create_task(self._handle(ctx, op))
        # The scope trips at its deadline: no timer of our own (docs/design.md §4).
        await _first_of(work, op.scope.tripped.future)
        if not work.done() or _lost_to_the_trip(op, work):
            await self._end_tripped(op, work)
        else:
            self._settle(op, work)
            if recovered and op.result is not None:
                op.result["browser_restarted"] = recovered
                op.result_text = None  # serialized before this was added
        if op.status == Status.COMPLETED:
            await self._after_call(ctx, op)

    async def _after_call(self, ctx: ToolContext, op: Operation) -> None:
        """What the features run once a call completed (tools/call_hooks.py)."""
        for hook in call_hooks.AFTER_CALL:  # tools/call_hooks.py
            try:
                await hook(ctx, op.params, op.result or {})
            except Exception:  # the call itself is done: a hook's trouble is only logged
                log.exception("%s after %s", hook.__qualname__, op.op_id)

    async def _handle(self, ctx: ToolContext, op: Operation) -> dict[str, Any]:
        for hook in call_hooks.BEFORE_CALL:  # tools/call_hooks.py
            await hook(ctx)
        return await self.handlers[op.tool](ctx, op.params)

    def _settle(self, op: Operation, work: asyncio.Task[dict[str, Any]]) -> None:
        """End the operation from its handler's own ending."""
        try:
            result = work.result()
        except DialogOpened as e:
            # The action ran and the page answered with a dialog: report it, don't hang.
            op.note("dialog_opened", e.dialog.get("type"))
            result = {"dialog": e.dialog, "note": "the page opened a dialog and waits for it: "
                      "answer with `bsk dialog accept [TEXT]` or `bsk dialog dismiss`"}
            if e.effects is not None:  # tools/effects.py
                result["effects"] = e.effects
            if op.effect_sent:
                op.complete(result, retry_safe=False)
                return
            raise BskError("action_failed", "a dialog is open on the page",
                           hint="answer it with `bsk dialog accept [TEXT]` or `bsk dialog "
                                "dismiss`", details={"reason": "dialog_open", **result},
                           dispatched=Dispatched.NO) from None
        except asyncio.CancelledError:
            raise _unknown("the handler was cancelled unexpectedly", op) from None
        except (CommandTimeout, TimeoutError) as e:
            raise _unknown(f"the browser did not answer: {e or 'timed out'}", op) from None
        except (LinkClosed, TabGone) as e:
            if op.effect_sent:
                raise _unknown(f"lost the page mid-call: {e}", op) from None
            raise self._gone(e, self.sessions.sessions.get(op.session_id)) from None
        except LinkError as e:
            raise BskError("action_failed", str(e), details={"reason": "browser_error"},
                           dispatched=Dispatched.YES if op.effect_sent else Dispatched.NO) from None
        op.complete(result, retry_safe=catalog.BY_NAME[op.tool].effect.retry_safe)

    def _gone(self, e: Exception, session: Session | None = None) -> BskError:
        if isinstance(e, TabCrashed):
            return BskError("action_failed", f"{e}; nothing was sent",
                            hint="`bsk reload` brings the tab back (or `bsk tab new URL`)",
                            details={"reason": "tab_crashed"}, dispatched=Dispatched.NO)
        if session is not None and session.backend.lost():
            return BskError("browser_unavailable", f"the browser went away: {e}",
                            hint=session.backend.lost_hint())
        return BskError("action_failed", f"the tab is gone: {e}",
                        hint="`bsk tab list`, then `bsk tab select ID` or `bsk tab new URL`",
                        details={"reason": "tab_gone"}, dispatched=Dispatched.NO)

    async def _end_tripped(self, op: Operation, work: asyncio.Task[dict[str, Any]]) -> None:
        """The scope tripped: stop the handler, run its compensations (bounded, shielded),
        record what happened, and end as `outcome.decide` says."""
        loop = asyncio.get_running_loop()
        scope = op.scope
        reason = scope.reason or CancelReason.DEADLINE
        held = op.state == AWAITING_APPROVAL  # its handler waited for a person: nothing sent
        op.state = CLEANING_UP
        op.note(CLEANING_UP, reason)
        self.journal.record(op)
        cleanup_deadline = loop.time() + self.cleanup_timeout_s
        work.cancel()
        await asyncio.wait({work}, timeout=max(0.0, cleanup_deadline - loop.time()))
        finished = work.done() and not work.cancelled() and work.exception() is None
        stopped = work.done()
        details: dict[str, Any] = {"reason": reason}
        report = None
        if not finished:
            if not stopped:
                work.add_done_callback(_log_abandoned)
            report = await scope.cleanup(cleanup_deadline, on_entry=lambda entry: op.note(
                "compensation", {k: v for k, v in entry.items() if k != "undoes_effect"}))
            if report.entries:
                details["compensation"] = report.entries
        learned: Any = scope.learned() if report is not None else None
        verdict = outcome.decide(outcome.Facts(
            reason=reason, queued=held, awaiting_approval=held,
            effect_sent=op.effect_sent, steps_sent=bool(op.steps_sent),
            read_only=catalog.BY_NAME[op.tool].effect.retry_safe,
            handler_finished=finished, handler_stopped=stopped,
            cleanup_complete=report is None or report.complete,
            compensations=tuple((e["ok"], e["undoes_effect"])
                                for e in (report.entries if report else [])),
            learned=_learned(learned)))
        if verdict.status == Status.COMPLETED:
            op.note("completed_despite_cancel")
            if finished:  # it happened: never report a done action as cancelled
                self._settle(op, work)
            else:  # the compensation learned it completed (WebMCP)
                op.complete(learned, retry_safe=verdict.retry_safe)
            return
        if verdict.why == "learned":
            assert isinstance(learned, BskError)
            learned.details = {**details, **learned.details}
            raise learned
        if verdict.why == "cleanup_timed_out":
            details["cleanup"] = "timed_out"
        session = self.sessions.sessions.get(op.session_id)
        if (verdict.why == "nothing_sent" and reason == CancelReason.DEADLINE
                and session is not None
                and session.backend.owner is self.browser and self.browser.stopped()):
            raise self.browser.unresponsive(round(op.age_s(), 1))  # the cause, not "cancelled"
        raise _word(verdict, op, details, session.backend.lost_hint() if session is not None
                    else "call again: the daemon relaunches or reconnects the browser")

    def link_lost(self, reason: str, session_ids: set[str] | None = None) -> None:
        """A dead link ends everything on it at once: dispatched ops unknown, queued unavailable.

        `session_ids`: the sessions on that link (an extension browser's); None: the
        daemon's own browser, i.e. every session not bound to an extension browser."""
        def on_link(op: Operation) -> bool:
            if session_ids is not None:
                return op.session_id in session_ids
            session = self.sessions.sessions.get(op.session_id)
            return session is None or session.backend.owner is self.browser

        self.cancel_live(CancelReason.LINK_LOST, on_link)

    def cancel_live(self, reason: CancelReason,
                    which: Callable[[Operation], bool] = lambda op: True) -> list[Operation]:
        """Cancel every live operation `which` picks, with `reason`; the ones it cancelled.
        The one way the daemon ends many calls at once (a session's end, a lost link, a
        person's Stop, the daemon's stop)."""
        live = [op for op in list(self.ops.values()) if not op.ended and which(op)]
        for op in live:
            op.request_cancel(reason)
        return live

    def cancel_session(self, session_id: str, reason: CancelReason) -> list[Operation]:
        """Cancel the session's live operations with `reason`; the ones it cancelled."""
        return self.cancel_live(reason, lambda op: op.session_id == session_id)

    # -- control ---------------------------------------------------------------------

    def find(self, op_id: str) -> dict[str, Any]:
        op = self.ops.get(op_id)
        if op is not None:
            return op.to_result(with_timeline=True)
        row = self.journal.get(op_id)
        if row is None:
            steps = contract.batch_steps(op_id, {*self.ops, *self.journal.steps_of(op_id)})
            if steps:  # a batch's id: not an operation, its steps are
                raise BskError(
                    "op_not_found", f"{op_id} is a batch, not one operation: its steps are "
                    + (", ".join(steps) if len(steps) <= 4 else f"{steps[0]} … {steps[-1]}"),
                    hint=f"show a step with `bsk op show {steps[0]}`",
                    details={"op_id": op_id, "steps": steps,
                             "journal_whole": False})  # its steps were: never resent
            aside = self.journal.found_aside()
            # `journal_whole`: no journal was moved aside, so no daemon ever dispatched it
            # (a CLI whose daemon died before reading its call then sends it again).
            raise BskError("op_not_found", f"no operation {op_id!r}",
                           hint="list recent ones with `bsk op list`" + (
                               f"; operations in a journal moved aside as unreadable "
                               f"({', '.join(p.name for p in aside)}) can't be shown: "
                               "see `bsk doctor`" if aside else ""),
                           details={"op_id": op_id, "journal_whole": not aside})
        return row

    def live(self, op_id: str) -> Operation | None:
        op = self.ops.get(op_id)
        return op if op is not None and not op.ended else None

    def cancel(self, op_id: str,
               reason: CancelReason = CancelReason.CANCEL) -> dict[str, Any]:
        op = self.live(op_id)
        if op is None:
            return {**self.find(op_id), "cancel": "already_ended"}
        op.request_cancel(reason)
        return {**op.to_result(), "cancel": "requested"}

    def busy(self) -> bool:
        return any(not op.ended for op in self.ops.values())

    async def shutdown(self) -> None:
        for op in self.cancel_live(CancelReason.DAEMON_STOPPING):
            await op.done.wait()


_CANCEL_TEXT: dict[str, str] = {  # every CancelReason's (tests/test_contract.py)
    CancelReason.CANCEL: "cancelled by request",
    CancelReason.DEADLINE: "the call's deadline passed",
    CancelReason.CLIENT_DISCONNECTED: "the caller went away",
    CancelReason.DAEMON_STOPPING: "the daemon is stopping",
    CancelReason.LINK_LOST: "the browser connection was lost",
    CancelReason.USER_INTERRUPT: "the user took over",
    CancelReason.DEBUGGING_CANCELLED: "the user cancelled debugging in the browser",
    CancelReason.WINDOW_CLOSED: "its session ended (the Agent Window closed, or its "
                                "browser did not come back)",
}


def _learned(verdict: Any) -> tuple[str, Dispatched] | None:
    """A compensation's verdict (a result, or a BskError) as a fact for `outcome`."""
    if verdict is None:
        return None
    if not isinstance(verdict, BskError):
        return (Status.COMPLETED, Dispatched.YES)
    return (verdict.code, verdict.dispatched or CODES[verdict.code].dispatched)


def _word(verdict: outcome.Verdict, op: Operation, details: dict[str, Any],
          lost_hint: str) -> BskError:
    """The error a verdict of `outcome.decide` ends the operation with: its wording
    (`lost_hint`: the session's placement's advice when its browser is gone), and the
    verdict's retry_safe (decide knows the tool's effect; the code's table does not)."""
    error = _worded(verdict, op, details, lost_hint)
    error.retry_safe = verdict.retry_safe
    return error


def _worded(verdict: outcome.Verdict, op: Operation, details: dict[str, Any],
            lost_hint: str) -> BskError:
    reason = details.get("reason", "cancel")
    said = _CANCEL_TEXT.get(reason, "cancelled")
    code, why = verdict.code or "internal", verdict.why
    if why == "lost_while_queued":
        return BskError(code, "the browser connection was lost while this call was queued",
                        hint=lost_hint)
    if why == "cancelled_while_queued":
        waiting = ("while awaiting a person's approval"
                   if op.approval is not None and "answer" not in op.approval
                   else "while queued")
        return BskError(code, f"{said} {waiting}",
                        hint="nothing reached the page; call again if you still want it",
                        details=details, dispatched=verdict.dispatched)
    if why == "approval_timed_out":
        return BskError(code, "no person answered before the call's deadline: nothing "
                        "was sent", hint="ask the user to answer in the dashboard (bsk show) "
                        "and call again, with a --timeout that leaves them time",
                        details=details, dispatched=Dispatched.NO)
    if why == "cleanup_timed_out":
        return _unknown("cleanup did not finish within its deadline", op, details)
    if why == "lost_before_effect":
        return BskError(code, "the browser connection was lost before this call sent "
                        "anything that could change the page", hint=lost_hint,
                        details=details)
    if why == "nothing_sent":
        return BskError(code, said,
                        hint="nothing reached the page; call again if you still want it",
                        details=details, dispatched=verdict.dispatched)
    if why == "may_have_acted":
        return _unknown(f"interrupted ({reason}) after the browser may have acted", op,
                        details)
    if why == "undone":
        return BskError(code, f"{said}; its effect was undone",
                        hint="the page is as before; call again if you still want it",
                        details=details, dispatched=verdict.dispatched)
    raise AssertionError(f"no wording for {verdict}")


def _lost_to_the_trip(op: Operation, work: asyncio.Task[Any]) -> bool:
    """The handler's own ending is the trip's doing, so the trip is what to report:

    - a command or wait bounded by the scope (`ctx.remaining()`) timed out: the scope's
      deadline passed, and the scope tripped at it (one deadline: no allowance);
    - it lost its page or link by the very event that tripped the scope (the user
      cancelled debugging: the tab detaches as the cancel arrives)."""
    if work.cancelled() or not op.scope.is_tripped:
        return False
    error = work.exception()
    if isinstance(error, CommandTimeout | TimeoutError):
        return op.scope.timed_out
    return isinstance(error, LinkClosed | TabGone) and not op.scope.timed_out


async def _first_of(a: asyncio.Future[Any], b: asyncio.Future[Any]) -> None:
    """Return when `a` or `b` is done: `asyncio.wait(FIRST_COMPLETED)` for two, without
    its sets and its closure (every call waits on this once). Cancelling the waiter
    leaves both running, as `asyncio.wait` does."""
    if a.done() or b.done():
        return
    waiter = asyncio.get_running_loop().create_future()

    def wake(_: object) -> None:
        if not waiter.done():
            waiter.set_result(None)

    a.add_done_callback(wake)
    b.add_done_callback(wake)
    try:
        await waiter
    finally:
        a.remove_done_callback(wake)
        b.remove_done_callback(wake)


def _log_abandoned(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.info("abandoned handler ended with %r", task.exception())


_STEPS_SHOWN = 40  # a long `type` sends thousands of key steps; the last ones tell the story


def _unknown(message: str, op: Operation, details: dict[str, Any] | None = None) -> BskError:
    extra: dict[str, Any] = {}
    if op.steps_sent:
        extra["steps_sent"] = op.steps_sent[-_STEPS_SHOWN:]
        if len(op.steps_sent) > _STEPS_SHOWN:
            extra["steps_sent_count"] = len(op.steps_sent)
    return BskError("outcome_unknown", message,
                    hint="the page may have changed: take a snapshot before acting again",
                    details={**extra, **(details or {})}, dispatched=Dispatched.YES)


def _canon(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def _from_row(row: dict[str, Any]) -> Operation:
    """A journaled operation as a (finished) Operation, for idempotent replay."""
    op = Operation(row["session_id"], row["tool"], row["params"], op_id=row["op_id"],
                   idempotency_key=row["idempotency_key"], state=State(row["state"]),
                   status=Status(row["status"]) if row["status"] else None,
                   dispatched=Dispatched(row["dispatched"]),
                   retry_safe=row["retry_safe"], result=row["result"], error=row["error"],
                   timeline=row["timeline"], created_at=_epoch(row["started_at"]),
                   ended_at=_epoch(row["ended_at"]) if row["ended_at"] else None)
    op.done.set()
    return op


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
