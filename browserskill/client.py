"""Python client for the BrowserSkill daemon: `Client` (blocking) and `AsyncClient` (asyncio).

Both speak the `/v1` HTTP API, over the daemon's Unix socket by default (starting the
daemon on first use, as `bsk` does) or over TCP with a bearer token::

    from browserskill import Client

    with Client() as bsk:
        bsk.session_start()                 # a session of its own; the client now uses it
        bsk.open("https://example.com")
        print(bsk.snapshot().result["snapshot"])
        bsk.click("e3")                      # raises StaleRefError, SessionBusyError, …
        bsk.session_stop()

Every tool in the catalog is a method (`open`, `click`, `snapshot`, `tab_new`, …) with its
parameters as arguments, plus the per-call options `session`, `wait`, `timeout` (seconds),
`key` (idempotency key), `detach` and `op_id`; `call(tool, params)` reaches any tool.
A call returns a `Result` (the result shape, DESIGN §3) when the operation completed —
including an `eval` whose script threw (`result.ok` false, `error.code == "page_error"`) —
and raises the exception class of its error code otherwise (`StaleRefError`,
`OutcomeUnknownError`, …; all `BrowserSkillError`, carrying the op fields).

Nothing is retried, except answers that say a retry is safe and waiting helps
(`session_busy`, `browser_unavailable`: `X-Should-Retry: true`), at most `retries` times.
Cancelling a call (KeyboardInterrupt; cancelling the awaiting task) cancels its operation.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, urlencode

import httpx

from browserskill import paths
from browserskill.errors import CODES
from browserskill.tools import catalog

__all__ = [
    "ERRORS",
    "AsyncClient",
    "BrowserSkillError",
    "Client",
    "ErrorInfo",
    "Result",
    "Session",
    "error_class",
]

DEFAULT_SESSION = "default"
CANCEL_GRACE_S = 10.0  # after cancelling, how long to wait for the operation's own ending
CANCEL_ARRIVAL_S = 1.0  # how long a cancel may find no operation yet (the call in flight)
_WIRE_MARGIN_S = 30.0  # the HTTP read deadline is the operation's deadline plus this


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorInfo:
    code: str
    message: str = ""
    hint: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ErrorInfo:
        return cls(str(d.get("code") or "internal"), d.get("message") or "",
                   d.get("hint") or "", dict(d.get("details") or {}))


@dataclass(frozen=True)
class Result:
    """One operation's result shape (DESIGN §3). `state` is not `ended` for a detached call
    that is still running."""

    op_id: str | None
    session_id: str | None
    tool: str | None
    state: str | None
    status: str | None
    dispatched: str
    retry_safe: bool
    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    started_at: str | None = None
    ended_at: str | None = None
    timeline: list[Any] | None = None
    cancel: str | None = None  # on an op cancel: "requested" or "already_ended"
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        error = d.get("error")
        return cls(
            op_id=d.get("op_id"), session_id=d.get("session_id"), tool=d.get("tool"),
            state=d.get("state"), status=d.get("status"),
            dispatched=d.get("dispatched") or "unknown",
            retry_safe=bool(d.get("retry_safe")), result=d.get("result"),
            error=ErrorInfo.from_dict(error) if isinstance(error, dict) else None,
            started_at=d.get("started_at"), ended_at=d.get("ended_at"),
            timeline=d.get("timeline"), cancel=d.get("cancel"), raw=d,
        )

    @property
    def ok(self) -> bool:
        """Completed, and not a script that threw (`page_error`)."""
        return self.status == "completed" and self.error is None

    @property
    def ended(self) -> bool:
        return self.state == "ended"

    @property
    def value(self) -> Any:
        """`result["value"]`: an eval's value."""
        return (self.result or {}).get("value")

    def raise_for_error(self) -> Result:
        """Raise the error class of this result's code (page_error included), else return it."""
        if self.error is not None:
            raise error_from(self.raw, self.error)
        return self


@dataclass(frozen=True)
class Session:
    session_id: str
    label: str | None = None
    tabs: int = 0
    current_tab: str | None = None
    busy: dict[str, Any] | None = None  # the operation holding the session, if any
    queued: int = 0
    created_at: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Session:
        return cls(d["session_id"], d.get("label"), d.get("tabs", 0), d.get("current_tab"),
                   d.get("busy"), d.get("queued", 0), d.get("created_at"))


# -- errors: one class per code of the table ------------------------------------------------


class BrowserSkillError(Exception):
    """An operation (or a call that never became one) did not complete.

    Carries the op fields: `op_id` (None when the call was refused before it became an
    operation), `status`, `dispatched`, `retry_safe`, `code`, `message`, `hint`, `details`,
    and `result` (the whole `Result`, when there was an operation)."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, op_id: str | None = None,
                 session_id: str | None = None, tool: str | None = None,
                 status: str | None = None, dispatched: str | None = None,
                 retry_safe: bool | None = None, hint: str = "",
                 details: dict[str, Any] | None = None, result: Result | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        if code is not None and code != type(self).code:
            self.code = code  # type: ignore[misc]  # an unknown code on the base class
        entry = CODES.get(self.code, CODES["internal"])
        self.message = message
        self.op_id = op_id
        self.session_id = session_id
        self.tool = tool
        self.status = status or ("cancelled" if self.code == "cancelled" else
                                 "outcome_unknown" if self.code == "outcome_unknown" else
                                 "failed")
        self.dispatched = dispatched or entry.dispatched
        self.retry_safe = entry.retry_safe if retry_safe is None else retry_safe
        self.hint = hint
        self.details = details or {}
        self.result = result

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


# "cancelled" is not asyncio.CancelledError; page_error is a result, never raised by a call.
_CLASS_NAMES = {"cancelled": "OperationCancelledError", "page_error": "PageError"}


def _class_name(code: str) -> str:
    return _CLASS_NAMES.get(code) or "".join(w.title() for w in code.split("_")) + "Error"


ERRORS: dict[str, type[BrowserSkillError]] = {}
for _code in CODES.values():
    _cls = type(_class_name(_code.name), (BrowserSkillError,), {
        "code": _code.name, "http_status": _code.http, "exit_code": _code.exit,
        "__doc__": f"{_code.name} (HTTP {_code.http}, exit {_code.exit}): {_code.meaning}.",
        "__module__": __name__,
    })
    ERRORS[_code.name] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _code, _cls


def error_class(code: str) -> type[BrowserSkillError]:
    return ERRORS.get(code, BrowserSkillError)


def error_from(answer: dict[str, Any], error: ErrorInfo) -> BrowserSkillError:
    has_op = bool(answer.get("op_id"))
    cls = error_class(error.code)
    return cls(error.message or error.code, op_id=answer.get("op_id"),
              session_id=answer.get("session_id"), tool=answer.get("tool"),
              status=answer.get("status") if has_op else None,
              dispatched=answer.get("dispatched") if has_op else None,
              retry_safe=answer.get("retry_safe") if has_op else None,
              hint=error.hint, details=error.details,
              result=Result.from_dict(answer) if has_op else None,
              code=error.code if cls is BrowserSkillError else None)


# -- requests and answers (shared by both clients) ------------------------------------------


@dataclass
class _Request:
    method: str
    path: str
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    read_timeout: float = 60.0
    op_id: str | None = None  # a tool call names its operation up front


def new_op_id() -> str:
    return "op_" + secrets.token_hex(6)


def _q(value: str) -> str:
    return quote(value, safe="")


def _answer(status: int, headers: httpx.Headers, body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        return body
    return {"error": {"code": "internal", "message": f"unexpected answer (HTTP {status}): "
                                                      f"{str(body)[:200]}"}}


def _check(status: int, headers: httpx.Headers, body: Any) -> dict[str, Any]:
    """The answer as a dict; raise its error class for any non-2xx answer."""
    answer = _answer(status, headers, body)
    if status >= 300:
        error = answer.get("error")
        info = ErrorInfo.from_dict(error if isinstance(error, dict) else {"code": "internal"})
        raise error_from(answer, info)
    return answer


def _should_retry(status: int, headers: httpx.Headers) -> bool:
    return status >= 300 and headers.get("x-should-retry") == "true"


def _retry_delay(headers: httpx.Headers, cap: float) -> float:
    try:
        return min(max(float(headers.get("retry-after", "1")), 0.0), cap)
    except ValueError:
        return min(1.0, cap)


def _decode(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


# Per-call options every tool method takes besides its parameters.
CALL_OPTIONS = ("session", "wait", "timeout", "key", "detach", "op_id")


class _Base:
    def __init__(
        self,
        socket: str | os.PathLike[str] | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        base_url: str | None = None,
        token: str | None = None,
        session: str | None = None,
        autostart: bool = True,
        retries: int = 2,
        retry_max_delay: float = 5.0,
    ) -> None:
        if base_url and (socket or home):
            raise ValueError("give base_url (TCP) or socket/home (Unix socket), not both")
        self.base_url = base_url
        self.home = Path(home).expanduser().resolve() if home else None
        self.socket = (None if base_url else
                       Path(socket) if socket else paths.socket_path(self.home))
        # Only a daemon this client knows how to start is started: the default home's, or
        # `home`'s — not one behind an arbitrary socket or URL.
        self.autostart = autostart and not base_url and (socket is None)
        self.session_id = session or os.environ.get("BSK_SESSION") or DEFAULT_SESSION
        self.retries = retries
        self.retry_max_delay = retry_max_delay
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _transport_kwargs(self) -> dict[str, Any]:
        if self.base_url:
            return {"base_url": self.base_url, "headers": self._headers}
        return {"base_url": "http://bsk", "headers": self._headers}

    # -- building calls --------------------------------------------------------------------

    def _tool_request(self, tool: str, params: dict[str, Any] | None, *,
                      session: str | None, wait: bool, timeout: float | None,
                      key: str | None, detach: bool, op_id: str | None) -> _Request:
        body = dict(params or {})
        spec = catalog.BY_NAME.get(tool)
        if wait:
            body["wait"] = True
        if detach:
            body["detach"] = True
        if timeout is not None:
            body["timeout_ms"] = max(1, int(timeout * 1000))
        op_deadline = timeout or (spec.default_timeout_s if spec else 30.0)
        headers = {"X-Op-Id": op_id or new_op_id()}
        if key is not None:
            headers["Idempotency-Key"] = key
        sid = session or self.session_id
        return _Request("POST", f"/v1/sessions/{_q(sid)}/tools/{_q(tool)}", body, headers,
                        op_deadline + _WIRE_MARGIN_S, headers["X-Op-Id"])

    def _stop_request(self, session: str | None, wait: bool,
                      timeout: float | None) -> _Request:
        sid = session or self.session_id
        query = "?wait=true" if wait else ""
        body = {"timeout_ms": max(1, int(timeout * 1000))} if timeout else None
        return _Request("DELETE", f"/v1/sessions/{_q(sid)}{query}", body,
                        read_timeout=(timeout or 30.0) + _WIRE_MARGIN_S)

    @staticmethod
    def _ops_query(session: str | None, limit: int) -> str:
        query: dict[str, Any] = {"limit": limit}
        if session:
            query["session"] = session
        return "/v1/ops?" + urlencode(query)

    @staticmethod
    def _op_result(answer: dict[str, Any]) -> Result:
        return Result.from_dict(answer)

    def _unreachable(self, e: Exception) -> BrowserSkillError:
        where = self.base_url or str(self.socket)
        return ERRORS["browser_unavailable"](
            f"the daemon at {where} is not reachable: {e}",
            hint="start it with `bsk daemon start`" if not self.autostart
            else "see `bsk doctor`")

    @staticmethod
    def _lost(e: Exception, req: _Request) -> BrowserSkillError:
        """The request went out and no answer came back: the effect is unknown."""
        if req.op_id is None:
            return ERRORS["browser_unavailable"](f"lost the daemon mid-call: {e}")
        return ERRORS["outcome_unknown"](
            f"no answer from the daemon for {req.op_id}: {e}", op_id=req.op_id,
            dispatched="unknown",
            hint=f"`bsk op show {req.op_id}` says whether it ran; inspect before acting again")


def _spawn_error(e: Exception) -> BrowserSkillError:
    return ERRORS["browser_unavailable"](f"could not start the daemon: {e}",
                                         hint="run `bsk doctor` for what to fix")


# -- the blocking client ------------------------------------------------------------------


class Client(_Base):
    """Blocking client. `Client()` talks to the daemon of `BSK_HOME` (starting it if needed);
    `Client(home=DIR)` to another state dir's; `Client(base_url=URL, token=T)` over TCP."""

    def __init__(self, socket: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__(socket, **kwargs)
        transport = None if self.base_url else httpx.HTTPTransport(uds=str(self.socket))
        self._http = httpx.Client(transport=transport, timeout=httpx.Timeout(60.0, connect=5.0),
                                  **self._transport_kwargs())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing --------------------------------------------------------------------------

    def _send(self, req: _Request) -> tuple[int, httpx.Headers, Any]:
        started = False
        for attempt in (0, 1):
            try:
                response = self._http.request(
                    req.method, req.path, json=req.body, headers=req.headers,
                    timeout=httpx.Timeout(req.read_timeout, connect=5.0))
                return response.status_code, response.headers, _decode(response)
            except (httpx.ConnectError, FileNotFoundError) as e:
                if attempt or not self.autostart or started:
                    raise self._unreachable(e) from None
                self._start_daemon()
                started = True
            except (httpx.TimeoutException, httpx.ReadError, httpx.RemoteProtocolError) as e:
                raise self._lost(e, req) from None
        raise AssertionError("unreachable")

    def _start_daemon(self) -> None:
        from browserskill.cli.spawn import DaemonStartError, spawn

        try:
            spawn(home=self.home)
        except DaemonStartError as e:
            raise _spawn_error(e) from None

    def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return _check(*self._send(_Request(method, path, body)))

    # -- tools -----------------------------------------------------------------------------

    def call(self, tool: str, params: dict[str, Any] | None = None, /, *,
             session: str | None = None, wait: bool = False, timeout: float | None = None,
             key: str | None = None, detach: bool = False, op_id: str | None = None,
             **kwparams: Any) -> Result:
        """Run any tool: `call("click", {"ref": "e3"})` or `call("click", ref="e3")`."""
        merged = {**(params or {}), **kwparams}
        for attempt in range(self.retries + 1):
            req = self._tool_request(tool, merged, session=session, wait=wait,
                                     timeout=timeout, key=key, detach=detach,
                                     op_id=op_id if attempt == 0 else None)
            try:
                status, headers, body = self._send(req)
            except KeyboardInterrupt:
                self._cancel_quietly(req.op_id)
                raise
            if attempt < self.retries and _should_retry(status, headers):
                time.sleep(_retry_delay(headers, self.retry_max_delay))
                continue
            return Result.from_dict(_check(status, headers, body))
        raise AssertionError("unreachable")

    def _cancel_quietly(self, op_id: str | None) -> None:
        """Cancel our operation; it may still be on its way to the daemon (404 for a bit)."""
        if op_id is None:
            return
        deadline = time.monotonic() + CANCEL_ARRIVAL_S
        try:
            while (self._http.post(f"/v1/ops/{_q(op_id)}/cancel", timeout=CANCEL_GRACE_S)
                   .status_code == 404 and time.monotonic() < deadline):
                time.sleep(0.05)
        except httpx.HTTPError:
            pass

    # -- sessions --------------------------------------------------------------------------

    def session_start(self, session_id: str | None = None, *, label: str | None = None,
                      use: bool = True) -> Session:
        """Start a session (its own tab). With `use`, this client acts in it from now on."""
        body = {k: v for k, v in (("session_id", session_id), ("label", label)) if v}
        session = Session.from_dict(self._json("POST", "/v1/sessions", body))
        if use:
            self.session_id = session.session_id
        return session

    def session_list(self) -> list[Session]:
        return [Session.from_dict(s) for s in self._json("GET", "/v1/sessions")["sessions"]]

    def session_stop(self, session_id: str | None = None, *, wait: bool = True,
                     timeout: float | None = None) -> Result:
        """Stop a session (default: this client's), after its running operation with `wait`."""
        return Result.from_dict(_check(*self._send(self._stop_request(session_id, wait,
                                                                       timeout))))

    # -- operations ------------------------------------------------------------------------

    def op_get(self, op_id: str) -> Result:
        """One operation with its timeline (however it ended: this does not raise for it)."""
        return Result.from_dict(self._json("GET", f"/v1/ops/{_q(op_id)}"))

    def op_list(self, session: str | None = None, *, all_sessions: bool = False,
                limit: int = 50) -> list[Result]:
        sid = None if all_sessions else (session or self.session_id)
        answer = self._json("GET", self._ops_query(sid, limit))
        return [Result.from_dict(o) for o in answer["ops"]]

    def op_cancel(self, op_id: str) -> Result:
        """Ask for a cancel; `Result.cancel` is "requested" or "already_ended"."""
        return Result.from_dict(self._json("POST", f"/v1/ops/{_q(op_id)}/cancel"))

    def op_wait(self, op_id: str, timeout: float = 30.0) -> Result:
        """Wait for an operation to end; raise its error like the call itself would.
        Still running after `timeout`: a Result whose `state` is not "ended"."""
        ms = max(0, int(timeout * 1000))
        req = _Request("GET", f"/v1/ops/{_q(op_id)}/wait?timeout_ms={ms}",
                       read_timeout=timeout + _WIRE_MARGIN_S)
        return Result.from_dict(_check(*self._send(req)))

    # -- the daemon ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self._json("GET", "/v1/health")

    def status(self, connect: bool = False) -> dict[str, Any]:
        return self._json("GET", "/v1/status" + ("?connect=true" if connect else ""))

    def tools(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/v1/tools")["tools"])


# -- the asyncio client -------------------------------------------------------------------


class AsyncClient(_Base):
    """The same API as `Client`, awaitable. Cancelling the task awaiting a call cancels its
    operation (POST /v1/ops/{id}/cancel) and waits briefly for it to end before the
    cancellation goes on."""

    def __init__(self, socket: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__(socket, **kwargs)
        transport = None if self.base_url else httpx.AsyncHTTPTransport(uds=str(self.socket))
        self._http = httpx.AsyncClient(transport=transport,
                                       timeout=httpx.Timeout(60.0, connect=5.0),
                                       **self._transport_kwargs())
        self.last_cancelled: Result | None = None  # how the last cancelled call ended

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, req: _Request) -> tuple[int, httpx.Headers, Any]:
        started = False
        for attempt in (0, 1):
            try:
                response = await self._http.request(
                    req.method, req.path, json=req.body, headers=req.headers,
                    timeout=httpx.Timeout(req.read_timeout, connect=5.0))
                return response.status_code, response.headers, _decode(response)
            except (httpx.ConnectError, FileNotFoundError) as e:
                if attempt or not self.autostart or started:
                    raise self._unreachable(e) from None
                await self._start_daemon()
                started = True
            except (httpx.TimeoutException, httpx.ReadError, httpx.RemoteProtocolError) as e:
                raise self._lost(e, req) from None
        raise AssertionError("unreachable")

    async def _start_daemon(self) -> None:
        from browserskill.cli.spawn import DaemonStartError, spawn

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
                                     op_id=op_id if attempt == 0 else None)
            status, headers, body = await self._send_cancellable(req)
            if attempt < self.retries and _should_retry(status, headers):
                await asyncio.sleep(_retry_delay(headers, self.retry_max_delay))
                continue
            return Result.from_dict(_check(status, headers, body))
        raise AssertionError("unreachable")

    async def _send_cancellable(self, req: _Request) -> tuple[int, httpx.Headers, Any]:
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
            with anyio.CancelScope(shield=True):
                try:
                    deadline = time.monotonic() + CANCEL_ARRIVAL_S
                    while (await self._http.post(f"/v1/ops/{_q(req.op_id or '')}/cancel",
                                                 timeout=CANCEL_GRACE_S)).status_code == 404:
                        if time.monotonic() > deadline or inner.done():
                            break
                        await asyncio.sleep(0.05)  # the call is still on its way
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
                            use: bool = True) -> Session:
        body = {k: v for k, v in (("session_id", session_id), ("label", label)) if v}
        session = Session.from_dict(await self._json("POST", "/v1/sessions", body))
        if use:
            self.session_id = session.session_id
        return session

    async def session_list(self) -> list[Session]:
        answer = await self._json("GET", "/v1/sessions")
        return [Session.from_dict(s) for s in answer["sessions"]]

    async def session_stop(self, session_id: str | None = None, *, wait: bool = True,
                           timeout: float | None = None) -> Result:
        req = self._stop_request(session_id, wait, timeout)
        return Result.from_dict(_check(*await self._send(req)))

    async def op_get(self, op_id: str) -> Result:
        return Result.from_dict(await self._json("GET", f"/v1/ops/{_q(op_id)}"))

    async def op_list(self, session: str | None = None, *, all_sessions: bool = False,
                      limit: int = 50) -> list[Result]:
        sid = None if all_sessions else (session or self.session_id)
        answer = await self._json("GET", self._ops_query(sid, limit))
        return [Result.from_dict(o) for o in answer["ops"]]

    async def op_cancel(self, op_id: str) -> Result:
        return Result.from_dict(await self._json("POST", f"/v1/ops/{_q(op_id)}/cancel"))

    async def op_wait(self, op_id: str, timeout: float = 30.0) -> Result:
        ms = max(0, int(timeout * 1000))
        req = _Request("GET", f"/v1/ops/{_q(op_id)}/wait?timeout_ms={ms}",
                       read_timeout=timeout + _WIRE_MARGIN_S)
        return Result.from_dict(_check(*await self._send(req)))

    async def health(self) -> dict[str, Any]:
        return await self._json("GET", "/v1/health")

    async def status(self, connect: bool = False) -> dict[str, Any]:
        return await self._json("GET", "/v1/status" + ("?connect=true" if connect else ""))

    async def tools(self) -> list[dict[str, Any]]:
        return list((await self._json("GET", "/v1/tools"))["tools"])


# -- one method per catalog tool ----------------------------------------------------------

_P = inspect.Parameter
_OPTION_PARAMS = [
    _P("session", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
    _P("wait", _P.KEYWORD_ONLY, default=False, annotation="bool"),
    _P("timeout", _P.KEYWORD_ONLY, default=None, annotation="float | None"),
    _P("key", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
    _P("detach", _P.KEYWORD_ONLY, default=False, annotation="bool"),
    _P("op_id", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
]
_PY_TYPE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
            "array": "list[str]", "object": "dict[str, Any]"}


def _signature(spec: catalog.ToolSpec) -> tuple[inspect.Signature, list[str], list[str]]:
    """The method's signature: positional CLI arguments stay positional, flags are
    keyword-only, then the call options that no tool parameter shadows."""
    positional: list[inspect.Parameter] = [_P("self", _P.POSITIONAL_OR_KEYWORD)]
    keyword: list[inspect.Parameter] = []
    optional_seen = False
    for p in spec.params:
        annotation = _PY_TYPE.get(p.type, "Any") + ("" if p.required else " | None")
        default = _P.empty if p.required else None
        if p.positional and not (p.required and optional_seen):
            positional.append(_P(p.name, _P.POSITIONAL_OR_KEYWORD, default=default,
                                 annotation=annotation))
            optional_seen = optional_seen or not p.required
        else:
            keyword.append(_P(p.name, _P.KEYWORD_ONLY, default=default, annotation=annotation))
    names = [p.name for p in spec.params]
    options = [o for o in _OPTION_PARAMS if o.name not in names]
    sig = inspect.Signature([*positional, *keyword, *options], return_annotation="Result")
    return sig, names, [o.name for o in options]


def _doc(spec: catalog.ToolSpec) -> str:
    lines = [spec.summary, "", f"Effect: {spec.effect.value}. CLI: `bsk {spec.usage()}`."]
    for p in spec.params:
        lines.append(f"  {p.name} ({p.type}{', required' if p.required else ''}): {p.help}")
    lines.append("Options: session, wait, timeout (s), key, detach, op_id (see `call`).")
    return "\n".join(lines)


def _tool_method(spec: catalog.ToolSpec, is_async: bool) -> Callable[..., Any]:
    sig, names, options = _signature(spec)

    def split(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any],
                                                                      dict[str, Any]]:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        params = {n: values[n] for n in names if values.get(n) is not None}
        return params, {o: values[o] for o in options}

    if is_async:
        async def amethod(*args: Any, **kwargs: Any) -> Result:
            params, opts = split(args, kwargs)
            return await args[0].call(spec.name, params, **opts)
        method: Callable[..., Any] = amethod
    else:
        def smethod(*args: Any, **kwargs: Any) -> Result:
            params, opts = split(args, kwargs)
            return args[0].call(spec.name, params, **opts)
        method = smethod
    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = _doc(spec)
    method.__signature__ = sig  # type: ignore[attr-defined]
    return method


def _install_tool_methods() -> None:
    for spec in catalog.TOOLS:
        if spec.name == "session_stop":  # `session_stop(ID)` above: DELETE /v1/sessions/ID
            continue
        for cls, is_async in ((Client, False), (AsyncClient, True)):
            if spec.name.isidentifier() and not hasattr(cls, spec.name):
                setattr(cls, spec.name, _tool_method(spec, is_async))


_install_tool_methods()
