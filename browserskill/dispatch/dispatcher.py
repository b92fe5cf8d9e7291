"""Running operations: validate, journal, queue, dispatch, end with an honest outcome.

Each operation runs in its own task (so a caller can detach, and a cancel trips exactly
its scope). The outcome of every ending path is decided here, in one place.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from browserskill.browser.link import CommandTimeout, LinkClosed, LinkError
from browserskill.browser.manager import BrowserManager
from browserskill.browser.tab import TabGone
from browserskill.dispatch.journal import Journal
from browserskill.dispatch.operations import DISPATCHED, QUEUED, Operation
from browserskill.dispatch.sessions import Session, SessionManager
from browserskill.errors import BskError, invalid
from browserskill.tools import catalog, registry
from browserskill.tools.context import ToolContext

log = logging.getLogger(__name__)

MAX_TIMEOUT_MS = 600_000
RECENT_OPS = 1000  # ended operations kept in memory (the journal keeps the rest)


class Dispatcher:
    def __init__(
        self, journal: Journal, sessions: SessionManager, browser: BrowserManager,
        state_dir: Path,
    ) -> None:
        self.journal = journal
        self.sessions = sessions
        self.browser = browser
        self.state_dir = state_dir
        self.handlers = registry.load()
        self.ops: dict[str, Operation] = {}  # live and recently ended, by id
        self._keys: dict[tuple[str, str], Operation] = {}

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
    ) -> Operation:
        spec = catalog.get(tool)
        params = spec.validate(raw_params)
        if timeout_ms is not None and (
            isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
            or not 1 <= timeout_ms <= MAX_TIMEOUT_MS
        ):
            raise invalid("timeout_ms", f"must be an integer from 1 to {MAX_TIMEOUT_MS}")
        if idempotency_key is not None:
            earlier = self._by_key(session_id, idempotency_key, tool, params)
            if earlier is not None:
                return earlier
        session = await self.sessions.get_for_call(session_id)
        op = Operation(session_id, tool, params, idempotency_key=idempotency_key)
        timeout_s = timeout_ms / 1000 if timeout_ms else spec.default_timeout_s
        op.deadline = asyncio.get_running_loop().time() + timeout_s
        self._remember(op)
        self.journal.record(op)
        op.task = asyncio.create_task(self._run(op, session, wait), name=op.op_id)
        return op

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
            try:
                async with asyncio.timeout_at(op.deadline):
                    await session.queue.acquire(op, wait=wait)
            except TimeoutError:
                raise session.queue.busy_error(
                    f"session {session.id} was still busy when this call's deadline passed"
                ) from None
            try:
                await self._dispatch(op, session)
            finally:
                session.queue.release(op)
                session.last_used = asyncio.get_running_loop().time()
        except BskError as e:
            op.fail(e)
        except asyncio.CancelledError:
            op.fail(self._cancelled(op))
        except Exception as e:
            log.exception("operation %s (%s) failed with a bug", op.op_id, op.tool)
            op.fail(BskError("internal", f"internal error: {e}",
                             hint=f"this is a bug; the daemon log has details for {op.op_id}"))
        finally:
            self.journal.record(op)
            op.done.set()

    async def _dispatch(self, op: Operation, session: Session) -> None:
        op.state = DISPATCHED
        op.note(DISPATCHED)
        self.journal.record(op)
        handler = self.handlers[op.tool]
        ctx = ToolContext(op, session, self.sessions, self.browser, self.state_dir)
        spec = catalog.BY_NAME[op.tool]
        try:
            async with asyncio.timeout_at(op.deadline):
                result = await handler(ctx, op.params)
        except TimeoutError:
            raise self._deadline_passed(op) from None
        except CommandTimeout as e:
            raise _unknown(f"the browser did not answer: {e}", op) from None
        except (LinkClosed, TabGone) as e:
            if op.effect_sent:
                raise _unknown(f"lost the browser mid-call: {e}", op) from None
            raise BskError("browser_unavailable", f"the browser went away: {e}",
                           hint="call again: the daemon reconnects or relaunches it") from None
        except LinkError as e:
            raise BskError("action_failed", str(e), details={"reason": "browser_error"},
                           dispatched="yes" if op.effect_sent else "no") from None
        op.complete(result, retry_safe=spec.effect.retry_safe)

    def _deadline_passed(self, op: Operation) -> BskError:
        if not op.effect_sent:
            return BskError("cancelled", "the call's deadline passed before anything was sent",
                            hint="nothing reached the page; call again with a longer --timeout",
                            details={"reason": "deadline"}, dispatched="no")
        return _unknown("the call's deadline passed while the browser was working", op)

    def _cancelled(self, op: Operation) -> BskError:
        reason = "cancel" if op.cancel_requested else "daemon_stopping"
        if op.state == QUEUED or not op.effect_sent:
            return BskError("cancelled", "cancelled before anything reached the page",
                            hint="nothing happened; call again if you still want it",
                            details={"reason": reason}, dispatched="no")
        return _unknown("cancelled after the browser may have acted", op,
                        details={"reason": reason})

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

    def cancel(self, op_id: str) -> dict[str, Any]:
        op = self.live(op_id)
        if op is None:
            return {**self.find(op_id), "cancel": "already_ended"}
        if not op.cancel_requested:
            op.cancel_requested = True
            op.note("cancel_requested")
            if op.task is not None:
                op.task.cancel()
        return {**op.to_result(), "cancel": "requested"}

    def busy(self) -> bool:
        return any(not op.ended for op in self.ops.values())

    async def shutdown(self) -> None:
        live = [op for op in self.ops.values() if not op.ended and op.task is not None]
        for op in live:
            op.task.cancel()  # type: ignore[union-attr]
        for op in live:
            await op.done.wait()


def _unknown(message: str, op: Operation, details: dict[str, Any] | None = None) -> BskError:
    extra = {"steps_sent": op.steps_sent} if op.steps_sent else {}
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
