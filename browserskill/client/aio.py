"""`AsyncClient`: the asyncio client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from browserskill.base import contract
from browserskill.base.contract import CANCEL_GRACE_S, CANCEL_POLL_S, CancelThenWait
from browserskill.base.controls import route
from browserskill.client.core import (
    _Base,
    _check,
    _q,
    _Request,
    _retry_delay,
    _should_retry,
    _spawn_error,
    _status_route,
    session_start_body,
)
from browserskill.client.http11 import Http11, Lost, Unreachable
from browserskill.client.results import (
    Result,
    Session,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # the methods made at import (client/methods.py), spelled for checkers
    from browserskill.client.generated import AsyncClientMethods
else:
    AsyncClientMethods = object


class AsyncClient(_Base, AsyncClientMethods):
    """The same API as `Client`, awaitable. Cancelling the task awaiting a call cancels its
    operation (POST /v1/ops/{id}/cancel) and waits briefly for it to end before the
    cancellation goes on."""

    _http: Http11
    last_cancelled: Result | None = None  # how the last cancelled call ended

    def _transport(self) -> Http11:
        # Not httpx: a lean keep-alive HTTP/1.1 of our own (client/http11.py), ~20x less
        # CPU per call.
        return Http11(socket=None if self.base_url else str(self.socket),
                      base_url=self.base_url, headers=self._headers)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, req: _Request) -> tuple[int, Mapping[str, str], Any]:
        started = False
        for attempt in (0, 1):
            try:
                return await self._http.request(req.method, req.path, req.body,
                                                headers=req.headers, timeout=req.read_timeout)
            except Unreachable as e:
                if attempt or not self.autostart or started:
                    raise self._unreachable(e) from None
                await self._start_daemon()
                started = True
            except Lost as e:
                recorded = await self._ended_as_recorded(req)
                if recorded is not None:
                    return recorded
                raise self._lost(e, req) from None
        raise AssertionError("unreachable")

    async def _ended_as_recorded(self, req: _Request, *, none_if_never_sent: bool = False,
                                 ) -> tuple[int, Mapping[str, str], Any] | None:
        """We stopped waiting for our call's answer: cancel it by its id, then take how
        the daemon recorded its end (contract.CancelThenWait) rather than guess. With
        `none_if_never_sent`, an operation the daemon never had gives None."""
        if req.op_id is None:
            return None
        plan = CancelThenWait(req.op_id, time.monotonic(), _q)
        waited = None
        try:
            while True:
                status = (await self._http.request(
                    "POST", plan.cancel_path, timeout=CANCEL_GRACE_S))[0]
                if not plan.again(status, time.monotonic()):
                    break
                await asyncio.sleep(CANCEL_POLL_S)  # the call is still on its way
            if status != 404:
                waited = await self._http.request("GET", plan.wait_path,
                                                  timeout=CANCEL_GRACE_S + 5)
        except (Lost, Unreachable):
            return None
        if status == 404 and none_if_never_sent:
            return None
        return self._recorded(plan, req.session_id, req.tool, status, waited)

    async def _batch_ended_early(self, req: _Request, inner: asyncio.Future[Any]) -> None:
        """A batch whose caller was cancelled: its connection closes, which cancels the
        running step and sends no more (api/batch.py); then each step's end, as `bsk
        batch` reports a Ctrl-C (cli/batch.py), becomes `last_cancelled`."""
        inner.cancel()
        await asyncio.gather(inner, return_exceptions=True)
        commands = list((req.body or {}).get("commands") or [])
        answers: list[dict[str, Any]] = []
        try:
            for k in range(1, len(commands) + 1):
                step = contract.batch_step_op_id(req.op_id or "", k)
                ended = await self._ended_as_recorded(
                    _Request("POST", "", op_id=step, session_id=req.session_id),
                    none_if_never_sent=True)
                if ended is None or not isinstance(ended[2], dict):
                    break
                answers.append(ended[2])
        except Exception:  # the daemon went away meanwhile: what was learnt stands
            pass
        self.last_cancelled = Result.from_dict(contract.batch_answer(
            req.session_id, commands, answers, "the batch was cancelled before it"))

    async def _start_daemon(self) -> None:
        from browserskill.daemon.spawn import DaemonStartError, spawn

        try:
            await asyncio.to_thread(spawn, home=self.home)
        except DaemonStartError as e:
            raise _spawn_error(e) from None

    async def _json(self, method: str, path: str,
                    body: dict[str, Any] | None = None) -> dict[str, Any]:
        return _check(*await self._send(_Request(method, path, body)))

    async def call(self, tool: str, params: dict[str, Any] | None = None, /, *,
                   session: str | None = None, wait: bool = False,
                   timeout: float | None = None, key: str | None = None,
                   detach: bool = False, op_id: str | None = None,
                   **kwparams: Any) -> Result:
        merged = {**(params or {}), **kwparams}
        for attempt in range(self.retries + 1):
            req = self._tool_request(tool, merged, session=session, wait=wait,
                                     timeout=timeout, key=key, detach=detach,
                                     op_id=op_id)
            status, headers, body = await self._send_cancellable(req)
            if attempt < self.retries and op_id is None and _should_retry(status, headers):
                await asyncio.sleep(_retry_delay(headers, self.retry_max_delay))
                continue
            return Result.from_dict(_check(status, headers, body))
        raise AssertionError("unreachable")

    async def _send_cancellable(self, req: _Request) -> tuple[int, Mapping[str, str], Any]:
        """Send a tool call; if our caller is cancelled meanwhile, cancel the operation by
        its id first (so it ends "cancelled by request", not "the caller went away"), let
        it end, then let the cancellation go on."""
        import anyio

        inner = asyncio.ensure_future(self._send(req))
        try:
            return await asyncio.shield(inner)
        except BaseException:
            if inner.done():
                raise
            if req.tool == "batch":  # no one operation to cancel by id: hang up instead
                with anyio.CancelScope(shield=True):
                    await self._batch_ended_early(req, inner)
                raise
            with anyio.CancelScope(shield=True):
                try:
                    plan = CancelThenWait(req.op_id or "", time.monotonic(), _q)
                    while True:
                        status = (await self._http.request(
                            "POST", plan.cancel_path, timeout=CANCEL_GRACE_S))[0]
                        if inner.done() or not plan.again(status, time.monotonic()):
                            break
                        await asyncio.sleep(CANCEL_POLL_S)  # the call is still on its way
                    with anyio.move_on_after(CANCEL_GRACE_S):
                        _, _, body = await asyncio.shield(inner)
                        if isinstance(body, dict) and "op_id" in body:
                            self.last_cancelled = Result.from_dict(body)
                except Exception:
                    pass
                finally:
                    if not inner.done():
                        inner.cancel()
            raise

    async def session_start(self, session_id: str | None = None, *, label: str | None = None,
                      isolated: bool = False, state: str | None = None,
                      browser: str | None = None, cdp_url: str | None = None,
                      grid: str | None = None, allow_domains: list[str] | None = None,
                      block_domains: list[str] | None = None, use: bool = True) -> Session:
        body = session_start_body(session_id, label, isolated, state, browser, cdp_url, grid,
                                  allow_domains, block_domains)
        session = Session.from_dict(await self._json(*route("session_start"), body))
        if use:
            self.session_id = session.session_id
        return session

    async def session_list(self) -> list[Session]:
        answer = await self._json(*route("session_list"))
        return [Session.from_dict(s) for s in answer["sessions"]]

    async def session_stop(self, session_id: str | None = None, *, wait: bool = True,
                           timeout: float | None = None) -> Result:
        req = self._stop_request(session_id, wait, timeout)
        stopped = Result.from_dict(_check(*await self._send(req)))
        self._stopped(session_id)
        return stopped

    async def op_get(self, op_id: str) -> Result:
        return Result.from_dict(await self._json(*route("op_get", op_id=op_id)))

    async def op_list(self, session: str | None = None, *, all_sessions: bool = False,
                      limit: int = 50) -> list[Result]:
        sid = None if all_sessions else (session or self.session_id)
        answer = await self._json("GET", self._ops_query(sid, limit))
        return [Result.from_dict(o) for o in answer["ops"]]

    async def op_cancel(self, op_id: str) -> Result:
        return Result.from_dict(await self._json(*route("op_cancel", op_id=op_id)))

    async def op_wait(self, op_id: str, timeout: float = 30.0) -> Result:
        return Result.from_dict(_check(*await self._send(self._wait_request(op_id, timeout))))

    async def health(self) -> dict[str, Any]:
        return await self._json(*route("health"))

    async def status(self, connect: bool = False) -> dict[str, Any]:
        return await self._json(*_status_route(connect))

    async def tools(self) -> list[dict[str, Any]]:
        return list((await self._json(*route("tools")))["tools"])


# -- one method per catalog tool ----------------------------------------------------------
