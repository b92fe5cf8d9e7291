"""Running operations: validate, journal, queue, dispatch, end with an honest outcome.

Each operation runs in its own task (so a caller can detach, and a cancel trips exactly
its scope). The outcome of every ending path is decided here, in one place.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from browserskill.browser.link import CommandTimeout, LinkClosed, LinkError
from browserskill.browser.manager import BrowserManager
from browserskill.browser.tab import DialogOpened, TabCrashed, TabGone
from browserskill.dispatch.journal import Journal
from browserskill.dispatch.operations import CLEANING_UP, DISPATCHED, TAKE_OVER, Once, Operation
from browserskill.dispatch.queue import ACQUIRED, CANCELLED, TIMED_OUT
from browserskill.dispatch.sessions import DEFAULT_SESSION, Session, SessionManager
from browserskill.errors import SHOULD_RETRY, BskError, invalid
from browserskill.tools import catalog, downloads, handlers
from browserskill.tools.context import ToolContext

log = logging.getLogger(__name__)

MAX_TIMEOUT_MS = 600_000
_OP_ID = re.compile(r"^op_[A-Za-z0-9_-]{6,64}$")  # callers may name their operation
RECENT_OPS = 1000  # ended operations kept in memory (the journal keeps the rest)
TAKE_OVER_MAX_S = 3600.0  # a take-over forgotten in an open dashboard ends after an hour


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
        browser.on_lost(self._link_lost)
        self._keys: dict[tuple[str, str], Operation] = {}
        # Keys whose first call is still making its operation (see `_claim_key`).
        self._claims: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._starting: dict[str, asyncio.Future[Session]] = {}  # default session's start
        # session id -> its person's take-over and the signal that hands it back
        self._taken: dict[str, tuple[Operation, Once]] = {}

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
    ) -> Operation:
        spec = catalog.get(tool)
        params = spec.validate(raw_params)
        if isinstance(timeout_ms, float) and timeout_ms.is_integer():
            timeout_ms = int(timeout_ms)  # JSON has one number type: 2.0 is the integer 2
        if timeout_ms is not None and (
            isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
            or not 1 <= timeout_ms <= MAX_TIMEOUT_MS
        ):
            raise invalid("timeout_ms", f"must be an integer from 1 to {MAX_TIMEOUT_MS}")
        if timeout_ms is not None and spec.timeout_range_s:  # e.g. webmcp_invoke: 1-120 s
            lo, hi = (int(x * 1000) for x in spec.timeout_range_s)
            if not lo <= timeout_ms <= hi:
                raise invalid("timeout_ms", f"must be from {lo} to {hi} for {tool}")
        claim: asyncio.Future[None] | None = None
        if idempotency_key is not None:
            earlier, claim = await self._claim_key(session_id, idempotency_key, tool, params)
            if earlier is not None:
                return earlier
        try:
            if op_id is not None and (not _OP_ID.match(op_id) or op_id in self.ops
                                      or self.journal.get(op_id)):
                raise invalid("op_id",
                              "must look like op_<6-64 letters, digits, _ or -> and be new")
            session = await self._session_for_call(session_id)
            op = Operation(session_id, tool, params, idempotency_key=idempotency_key)
            if op_id:
                op.op_id = op_id
            timeout_s = (timeout_ms / 1000 if timeout_ms
                         else catalog.default_timeout_s(spec, params))
            op.deadline = asyncio.get_running_loop().time() + timeout_s
            self._remember(op)
        finally:
            if claim is not None:  # the key now names `op`, or is free again
                self._claims.pop((session_id, idempotency_key), None)  # type: ignore[arg-type]
                claim.set_result(None)
        # Journaled when it starts waiting, or when it is dispatched (most calls find the
        # session free: one write instead of two).
        op.task = asyncio.create_task(self._run(op, session, wait), name=op.op_id)
        return op

    async def _session_for_call(self, session_id: str) -> Session:
        """The session a call names. Calls that arrive while the default session is
        starting (its first tab opening) wait for that start, and share its outcome,
        instead of finding a session without a tab."""
        starting = self._starting.get(session_id)
        if starting is None:
            if session_id != DEFAULT_SESSION or session_id in self.sessions.sessions:
                return await self.sessions.get_for_call(session_id)
            starting = asyncio.ensure_future(self.sessions.get_for_call(session_id))
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
        if op.tool != tool or _canon(op.params) != _canon(params):
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
            got = await session.queue.acquire(op, wait=wait, deadline=op.deadline,
                                              on_queued=lambda: self.journal.record(op))
            if got == TIMED_OUT:
                raise session.queue.busy_error(
                    f"session {session.id} was still busy when this call's deadline passed")
            if got == CANCELLED:
                raise self._cancelled_before_dispatch(op)
            if session.user_interrupted and catalog.BY_NAME[op.tool].effect in (
                    catalog.Effect.MUTATION, catalog.Effect.TRANSIENT_INPUT):
                session.user_interrupted = False  # refused once; the next call goes ahead
                raise BskError("user_interrupted", "the user pressed Stop in the browser and "
                               "took over this session's tabs",
                               hint="ask the user before acting again; the next call goes "
                                    "ahead", details={"session_id": session.id})
            session.backend.before_dispatch(op.tool)
            await self._dispatch(op, session)
            if session.script_recording is not None and op.status == "completed":
                await self._record(session, op)
        except BskError as e:
            op.fail(e)
            if op.idempotency_key and e.code in SHOULD_RETRY and op.dispatched == "no":
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
            self.journal.record(op)
            op.done.set()

    async def _dispatch(self, op: Operation, session: Session) -> None:
        op.state = DISPATCHED
        op.note(DISPATCHED)
        self.journal.record(op)
        recovered = None
        if op.tool != "session_stop":  # tabs lost with their browser come back first
            recovered = await self.sessions.recover(session, max(
                0.001, op.deadline - asyncio.get_running_loop().time()))
            if recovered:
                op.note("tabs_recovered", recovered)
        current = session.tabs.get(session.current_tab_id or "")
        if current is not None and not current.gone and op.tool != "session_stop":
            await session.backend.ensure_shown(current, timeout=min(
                2.0, max(0.001, op.deadline - asyncio.get_running_loop().time())))
        ctx = self.context_class(op, session, self.sessions, session.backend, self.state_dir)
        work = asyncio.create_task(self._handle(ctx, op))
        timeout = max(0.0, op.deadline - asyncio.get_running_loop().time())
        watched: set[asyncio.Future[Any]] = {work, op.tripped.future}
        await asyncio.wait(watched, timeout=timeout,
                           return_when=asyncio.FIRST_COMPLETED)
        if not work.done() or _ran_out_of_time(op, work) or _lost_to_the_interrupt(op, work):
            await self._interrupt(op, ctx, work, op.cancel_reason or "deadline")
            return
        self._settle(op, work)
        if recovered and op.result is not None:
            op.result["browser_restarted"] = recovered

    async def _record(self, session: Session, op: Operation) -> None:
        """A recording session notes what the page alone can't tell (tools/recording.py)
        and listens in the tabs the call opened."""
        try:
            session.script_recording.agent_did(op.tool, op.params, op.result or {})
            await session.script_recording.follow(list(session.tabs.values()))
        except Exception:  # the call itself is done: a recorder's trouble is only logged
            log.exception("recording after %s", op.op_id)

    async def _handle(self, ctx: ToolContext, op: Operation) -> dict[str, Any]:
        try:  # the session's downloads land in the state dir and are reported
            await downloads.watch(ctx)
        except (LinkError, OSError, BskError) as e:
            log.warning("watching downloads of %s: %s", op.session_id, e)
        for tab in list(ctx.session.tabs.values()):  # its routes reach every tab it has
            await ctx.session.routes.attach(tab, ctx.remaining())
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
            if op.effect_sent:
                op.complete(result, retry_safe=False)
                return
            raise BskError("action_failed", "a dialog is open on the page",
                           hint="answer it with `bsk dialog accept [TEXT]` or `bsk dialog "
                                "dismiss`", details={"reason": "dialog_open", **result},
                           dispatched="no") from None
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
                           dispatched="yes" if op.effect_sent else "no") from None
        op.complete(result, retry_safe=catalog.BY_NAME[op.tool].effect.retry_safe)

    def _gone(self, e: Exception, session: Session | None = None) -> BskError:
        if isinstance(e, TabCrashed):
            return BskError("action_failed", "the tab's renderer crashed; nothing was sent",
                            hint="`bsk reload` brings the tab back (or `bsk tab new URL`)",
                            details={"reason": "tab_crashed"}, dispatched="no")
        if session is not None and session.backend.lost():
            return BskError("browser_unavailable", f"the browser went away: {e}",
                            hint=session.backend.lost_hint())
        return BskError("action_failed", f"the tab is gone: {e}",
                        hint="`bsk tab list`, then `bsk tab select ID` or `bsk tab new URL`",
                        details={"reason": "tab_gone"}, dispatched="no")

    async def _interrupt(self, op: Operation, ctx: ToolContext,
                         work: asyncio.Task[dict[str, Any]], reason: str) -> None:
        """Trip the handler's scope, run its compensation (bounded), say what happened."""
        loop = asyncio.get_running_loop()
        op.state = CLEANING_UP
        op.note(CLEANING_UP, reason)
        self.journal.record(op)
        cleanup_deadline = loop.time() + self.cleanup_timeout_s
        work.cancel()
        await asyncio.wait({work}, timeout=max(0.0, cleanup_deadline - loop.time()))
        if work.done() and not work.cancelled() and work.exception() is None:
            op.note("completed_despite_cancel")
            self._settle(op, work)  # it happened: never report a done action as cancelled
            return
        details: dict[str, Any] = {"reason": reason}
        timed_out = not work.done()
        if timed_out:
            work.add_done_callback(_log_abandoned)
        report, complete = await self._compensate(op, ctx, cleanup_deadline)
        if report:
            details["compensation"] = report
        if timed_out or not complete:
            details["cleanup"] = "timed_out"
            raise _unknown("cleanup did not finish within its deadline", op, details)
        verdict = next((c.verdict for c in ctx.compensations if c.verdict is not None), None)
        if verdict is not None:  # the compensation learned how it really ended (WebMCP)
            if isinstance(verdict, BskError):
                verdict.details = {**details, **verdict.details}
                raise verdict
            op.note("completed_despite_cancel")
            op.complete(verdict, retry_safe=catalog.BY_NAME[op.tool].effect.retry_safe)
            return
        if not op.effect_sent and reason == "link_lost":  # not a cancel: as if it were queued
            raise BskError("browser_unavailable", "the browser connection was lost before "
                           "this call sent anything that could change the page",
                           hint="call again: the daemon relaunches or reconnects the browser",
                           details=details)
        if not op.effect_sent:
            raise BskError("cancelled", _CANCEL_TEXT.get(reason, "cancelled"),
                           hint="nothing reached the page; call again if you still want it",
                           details=details, dispatched="no")
        if op.steps_sent or not report or not all(c["ok"] and c["undoes_effect"] for c in report):
            raise _unknown(f"interrupted ({reason}) after the browser may have acted", op,
                           details)
        raise BskError("cancelled", f"{_CANCEL_TEXT.get(reason, 'cancelled')}; "
                       "its effect was undone", hint="the page is as before; call again if "
                       "you still want it", details=details, dispatched="yes")

    async def _compensate(self, op: Operation, ctx: ToolContext,
                          deadline: float) -> tuple[list[dict[str, Any]], bool]:
        report: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        for comp in reversed([c for c in ctx.compensations if c.armed()]):
            entry: dict[str, Any] = {"action": comp.action, "undoes_effect": comp.undoes_effect}
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
            if comp.action is not None:  # None: undo found nothing to do (no script running)
                op.note("compensation", {k: v for k, v in entry.items()
                                         if k != "undoes_effect"})
                report.append(entry)
            if loop.time() >= deadline:
                return report, False
        return report, True

    def _cancelled_before_dispatch(self, op: Operation) -> BskError:
        reason = op.cancel_reason or "cancel"
        if reason == "link_lost":
            return BskError("browser_unavailable",
                            "the browser connection was lost while this call was queued",
                            hint="call again: the daemon relaunches or reconnects the browser")
        return BskError("cancelled", f"{_CANCEL_TEXT.get(reason, 'cancelled')} while queued",
                        hint="nothing reached the page; call again if you still want it",
                        details={"reason": reason}, dispatched="no")

    def _link_lost(self, reason: str, session_ids: set[str] | None = None) -> None:
        """A dead link ends everything on it at once: dispatched ops unknown, queued unavailable.

        `session_ids`: the sessions on that link (an extension browser's); None: the
        daemon's own browser, i.e. every session not bound to an extension browser."""
        for op in list(self.ops.values()):
            session = self.sessions.sessions.get(op.session_id)
            on_link = (op.session_id in session_ids if session_ids is not None
                       else session is None or session.backend.owner is self.browser)
            if not op.ended and on_link:
                op.request_cancel("link_lost")

    # -- control ---------------------------------------------------------------------

    def find(self, op_id: str) -> dict[str, Any]:
        op = self.ops.get(op_id)
        if op is not None:
            return op.to_result(with_timeline=True)
        row = self.journal.get(op_id)
        if row is None:
            raise BskError("op_not_found", f"no operation {op_id!r}",
                           hint="list recent ones with `bsk op list`",
                           details={"op_id": op_id})
        return row

    def live(self, op_id: str) -> Operation | None:
        op = self.ops.get(op_id)
        return op if op is not None and not op.ended else None

    def cancel(self, op_id: str, reason: str = "cancel") -> dict[str, Any]:
        op = self.live(op_id)
        if op is None:
            return {**self.find(op_id), "cancel": "already_ended"}
        op.request_cancel(reason)
        return {**op.to_result(), "cancel": "requested"}

    def busy(self) -> bool:
        return any(not op.ended for op in self.ops.values())

    # -- a person in the loop (docs/dashboard.md) --------------------------------------

    def interrupt(self, session_id: str) -> None:
        """The user takes the session's tabs (the extension's Stop, a take-over from the
        dashboard): the agent's dispatched call is cancelled, and its next change is
        refused once with `user_interrupted`."""
        session = self.sessions.sessions.get(session_id)
        if session is None:
            return
        session.user_interrupted = True
        for op in list(self.ops.values()):
            if (op.session_id == session_id and not op.ended and op.state != "queued"
                    and not op.by_person):
                self.cancel(op.op_id, "user_interrupt")

    def take_over(self, session_id: str) -> Operation:
        """A person becomes the session's holder: an operation (`take_over`) that goes
        first in the queue and holds the session until `hand_back`. Idempotent."""
        session = self.sessions.get(session_id)
        held = self._taken.get(session_id)
        if held is not None and not held[0].ended:
            return held[0]
        op = Operation(session_id, TAKE_OVER, {})
        op.deadline = asyncio.get_running_loop().time() + TAKE_OVER_MAX_S
        released = Once()
        self._taken[session_id] = (op, released)
        self._remember(op)
        self.interrupt(session_id)
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
        if (session.help_answer is None or session.help_answer.done() or holder is None
                or holder.tool != "request_help"):
            raise BskError("invalid_params", f"session: {session_id} has no request for help "
                           "open", details={"field": "session"})
        session.help_answer.set_result(answer)
        return holder.op_id

    def taken_by_person(self, session_id: str) -> Operation | None:
        """The person's take-over holding the session now, if any."""
        held = self._taken.get(session_id)
        if held is None or held[0].ended:
            return None
        return held[0]

    async def _hold(self, op: Operation, session: Session, released: Once) -> None:
        loop = asyncio.get_running_loop()
        try:
            got = await session.queue.acquire(op, wait=True, deadline=op.deadline, first=True,
                                              on_queued=lambda: self.journal.record(op))
            if got != ACQUIRED:
                raise self._cancelled_before_dispatch(op) if got == CANCELLED else BskError(
                    "cancelled", "the session stayed busy past the take-over's deadline",
                    details={"reason": "deadline"})
            op.state = DISPATCHED
            op.note(DISPATCHED, "held by a person")
            self.journal.record(op)
            started = loop.time()
            await asyncio.wait({released.future, op.tripped.future},
                               timeout=max(0.0, op.deadline - loop.time()),
                               return_when=asyncio.FIRST_COMPLETED)
            ended_by = ("hand_back" if released.is_set()
                        else op.cancel_reason or "deadline")
            op.complete({"ended_by": ended_by, "held_s": round(loop.time() - started, 3)},
                        retry_safe=False)
        except BskError as e:
            op.fail(e)
        finally:
            session.queue.release(op)
            if not op.ended:
                op.fail(BskError("cancelled", "the take-over ended before it began",
                                 details={"reason": op.cancel_reason or "stopped"}))
            self.journal.record(op)
            op.done.set()

    async def shutdown(self) -> None:
        live = [op for op in self.ops.values() if not op.ended]
        for op in live:
            op.request_cancel("daemon_stopping")
        for op in live:
            await op.done.wait()


_CANCEL_TEXT = {
    "cancel": "cancelled by request",
    "deadline": "the call's deadline passed",
    "client_disconnected": "cancelled: the caller went away",
    "daemon_stopping": "cancelled: the daemon is stopping",
    "link_lost": "the browser connection was lost",
    "user_interrupt": "the user took over",
    "debugging_cancelled": "the user cancelled debugging in the browser",
    "window_closed": "its session ended (the Agent Window closed, or its browser did not "
                     "come back)",
}


def _ran_out_of_time(op: Operation, work: asyncio.Task[Any]) -> bool:
    """The handler's command timed out because the call's own deadline passed: its reply
    deadline is the call's (`ctx.remaining()`), so the two timers fire together and either
    may go first. That is the deadline, a cancel with compensation, not a silent browser.
    The same holds for a wait on the tab's events bounded by it (`Tab.until`)."""
    return (not work.cancelled()
            and isinstance(work.exception(), CommandTimeout | TimeoutError)
            and asyncio.get_running_loop().time() >= op.deadline - 0.002)


def _lost_to_the_interrupt(op: Operation, work: asyncio.Task[Any]) -> bool:
    """The handler lost its page or link by the very event that tripped its scope (the
    user cancelled debugging: the tab detaches as the cancel arrives): report the
    interruption and its reason, not just the loss."""
    return (op.tripped.future.done() and not work.cancelled()
            and isinstance(work.exception(), (LinkClosed, TabGone)))


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
                    details={**extra, **(details or {})}, dispatched="yes")


def _canon(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def _from_row(row: dict[str, Any]) -> Operation:
    """A journaled operation as a (finished) Operation, for idempotent replay."""
    op = Operation(row["session_id"], row["tool"], row["params"], op_id=row["op_id"],
                   idempotency_key=row["idempotency_key"], state=row["state"],
                   status=row["status"], dispatched=row["dispatched"],
                   retry_safe=row["retry_safe"], result=row["result"], error=row["error"],
                   timeline=row["timeline"], created_at=_epoch(row["started_at"]),
                   ended_at=_epoch(row["ended_at"]) if row["ended_at"] else None)
    op.done.set()
    return op


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
