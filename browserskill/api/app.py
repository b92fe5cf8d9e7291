"""The `/v1` HTTP API as a Starlette app. Every answer goes through `respond`/`error_response`,
which read the one error table for status codes and retry headers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from browserskill.api.batch import run_batch
from browserskill.api.cli_call import CliCall
from browserskill.api.listeners import CONNECTION_LOST
from browserskill.api.reply import Reply
from browserskill.api.wire import Answer, BodyAbandoned, Headers, parse_object, read_body, render
from browserskill.base import boundaries, catalog, contract, controls
from browserskill.base.errors import CODES, LASTING, SHOULD_RETRY, BskError, invalid
from browserskill.browser.storage_state import read_state_file
from browserskill.session.operations import Operation
from browserskill.session.sessions import SESSION_START_TIMEOUT_S

if TYPE_CHECKING:
    from browserskill.api.dashboard import Dashboard
    from browserskill.daemon.core import Daemon

log = logging.getLogger(__name__)

def _headers(code: str | None, body: dict[str, Any]) -> dict[str, str]:
    if code is None or CODES[code].http < 300:
        return {}
    details = (body.get("error") or {}).get("details") or {}
    if code in SHOULD_RETRY and not details.get(LASTING):
        return {"X-Should-Retry": "true", "Retry-After": "1"}
    return {"X-Should-Retry": "false"}


def answer(body: dict[str, Any], code: str | None = None, status: int | None = None) -> Answer:
    """The one rule for an answer's status and headers: the error table's."""
    http = status or (CODES[code].http if code else 200)
    return Answer(http, _headers(code, body), render(body))


def respond(body: dict[str, Any], code: str | None = None, status: int | None = None) -> Response:
    return answer(body, code, status).response()


def error_answer(err: BskError) -> Answer:
    return answer({"error": err.to_dict()}, err.code)


def error_response(err: BskError) -> Response:
    return error_answer(err).response()


def op_answer(result: dict[str, Any]) -> Answer:
    error = result.get("error")
    if result.get("state") != "ended":
        return answer(result, status=202)
    return answer(result, error["code"] if error else None)


def op_response(result: dict[str, Any]) -> Response:
    return op_answer(result).response()


def failed(e: Exception, what: str) -> Answer:
    """No traceback ever reaches a client: known errors by the table, bugs as `internal`
    (logged). Called in the `except` that caught `e`."""
    if isinstance(e, BskError):
        return error_answer(e)
    if isinstance(e, BodyAbandoned):  # the client hung up mid-body: an answer nobody reads
        return Answer(400, content_type=None)
    log.exception("request %s failed", what)
    return error_answer(BskError("internal", f"internal error: {e}",
                                 hint="this is a bug; see the daemon log"))


Handler = Callable[[Request], Awaitable[Response]]
Receive = Callable[[], Awaitable[Any]]
ReadBody = Callable[[], Awaitable[bytes]]


def guarded(fn: Handler) -> Handler:
    """`failed`'s rule around a Starlette handler."""

    async def wrapper(request: Request) -> Response:
        try:
            return await fn(request)
        except Exception as e:
            return failed(e, f"{request.method} {request.url.path}").response()

    wrapper.__name__ = fn.__name__
    return wrapper


async def json_body(request: Request) -> dict[str, Any]:
    return parse_object(await read_body(request.scope, request.receive))


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.pop(name, False)
    if not isinstance(value, bool):
        raise invalid(name, "must be true or false")
    return value


def _bool_query(request: Request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None or raw == "false":
        return False
    if raw == "true":
        return True
    raise invalid(name, f"must be true or false, got {raw!r}")


def _int_query(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(name, f"must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise invalid(name, f"must be from {lo} to {hi}")
    return value


def _webmcp_call(body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """`{tool_ref | name, input, timeout_sec}` as webmcp_invoke params and a deadline."""
    from browserskill.tools.webmcp_client import REF

    ref, name = body.pop("tool_ref", None), body.pop("name", None)
    if (ref is None) == (name is None):
        raise invalid("tool_ref", "give exactly one of tool_ref and name")
    for field, value in (("tool_ref", ref), ("name", name)):
        if value is not None and (not isinstance(value, str) or catalog.is_blank(value)):
            raise invalid(field, "must be a non-empty string")
    if ref is not None and not REF.match(ref):
        raise invalid("tool_ref", f"{ref!r} is not a tool_ref (they look like t1/f0/echo)",
                      hint="give a tool's plain name as `name`")
    timeout_sec, timeout_ms = body.pop("timeout_sec", None), None
    if timeout_sec is not None:
        if isinstance(timeout_sec, bool) or not isinstance(timeout_sec, int | float) \
                or not 1 <= timeout_sec <= 120:
            raise invalid("timeout_sec", f"must be a number of seconds from 1 to 120, "
                                         f"got {timeout_sec!r}")
        timeout_ms = int(timeout_sec * 1000)
    params = {"tool": ref if ref is not None else name, "input": body.pop("input", None)}
    if body:
        raise invalid(next(iter(body)), "unknown field (accepted: tool_ref, name, input, "
                                        "timeout_sec, wait, detach)")
    return params, timeout_ms


def _one_header(headers: Headers, name: str) -> str | None:
    """A header that names an operation: two of it would be two names for one call."""
    wanted = name.lower().encode("latin-1")  # as the listener gives them: lower case
    value, count = None, 0
    for key, raw in headers:  # a loop, not a comprehension: this runs on every call
        if key == wanted:
            value, count = raw, count + 1
    if count > 1:
        raise BskError("invalid_params", f"{name}: {count} {name} headers; send one",
                       hint=f"send the {name} header once", details={"field": name})
    return value.decode("latin-1") if value is not None else None


async def _disconnected(receive: Receive) -> None:
    """Returns when the client hangs up (the body has already been read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def build_app(daemon: Daemon, dashboard: Dashboard) -> Any:
    dispatcher = daemon.dispatcher
    # The control calls' handlers, each under its control's name (base/controls.py): the
    # routes below are made from that list, so a handler serves nothing until declared.
    handlers: dict[str, Handler] = {}

    def handles(name: str) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            assert name in controls.BY_NAME and name not in handlers, name
            handlers[name] = guarded(fn)
            return fn
        return register

    async def settle(op: Operation, detach: bool, lost: asyncio.Future[None] | None,
                     receive: Receive | None, marked: bool = False) -> Answer:
        """Answer when the operation ends; a caller that hangs up first cancels it.
        `lost`: our listeners' CONNECTION_LOST; a test's app has none, and its `receive`
        says when the caller is gone. `marked`: the call asked for page text in nonce
        markers (boundaries.py)."""
        if not detach:
            gone = lost if lost is not None else asyncio.ensure_future(
                _disconnected(receive))  # type: ignore[arg-type]
            try:
                await asyncio.wait({op.done.future, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if gone is not lost:
                    gone.cancel()
            if not op.done.is_set():
                dispatcher.cancel(op.op_id, contract.CancelReason.CLIENT_DISCONNECTED)
        result = op.to_result()
        return op_answer(boundaries.mark(result) if marked and op.ended else result)

    async def finish(op: Operation, detach: bool, request: Request,
                     marked: bool = False) -> Response:
        return (await settle(op, detach, request.scope.get(CONNECTION_LOST), request.receive,
                             marked)).response()

    async def call_tool(sid: str, tool: str, headers: Headers, read: ReadBody,
                        lost: asyncio.Future[None] | None, receive: Receive | None = None,
                        ) -> Answer:
        """`POST /v1/sessions/{sid}/tools/{tool}`, whichever route brought it: the
        request's path parameters, header list and body reader (and `settle`'s `lost`,
        `receive`), `failed`'s rule around it."""
        try:
            if tool in catalog.BY_NAME and catalog.BY_NAME[tool].hidden:  # session_stop
                raise invalid("tool", "stop a session with DELETE /v1/sessions/{sid}")
            body = parse_object(await read())
            if tool == "batch":  # several operations, not one (api/batch.py)
                return await call_batch(sid, body, headers, lost, receive)
            wait, detach = _flag(body, "wait"), _flag(body, "detach")
            marked = _flag(body, "boundaries")
            timeout_ms = body.pop("timeout_ms", None)
            key, op_id = _one_header(headers, "Idempotency-Key"), _one_header(headers, "X-Op-Id")
            if detach or lost is None:
                op = await dispatcher.submit(sid, tool, body, wait=wait, timeout_ms=timeout_ms,
                                             idempotency_key=key, op_id=op_id)
                return await settle(op, detach, lost, receive, marked)
            # The caller waits for the end: the operation runs in this request's task.
            op, run = await dispatcher.prepare(sid, tool, body, wait=wait, timeout_ms=timeout_ms,
                                               idempotency_key=key, op_id=op_id)
            if run is None:  # the key named an earlier operation
                return await settle(op, False, lost, receive, marked)

            def hung_up(_: object) -> None:
                op.request_cancel(contract.CancelReason.CLIENT_DISCONNECTED)

            lost.add_done_callback(hung_up)
            try:
                await run
            finally:
                lost.remove_done_callback(hung_up)
            result = op.to_result()
            return op_answer(boundaries.mark(result) if marked else result)
        except Exception as e:
            return failed(e, f"POST /v1/sessions/{sid}/tools/{tool}")

    async def call_batch(sid: str, body: dict[str, Any], headers: Headers,
                         lost: asyncio.Future[None] | None, receive: Receive | None,
                         ) -> Answer:
        wait, marked = _flag(body, "wait"), _flag(body, "boundaries")
        timeout_ms = body.pop("timeout_ms", None)
        run = asyncio.ensure_future(run_batch(
            dispatcher, sid, catalog.BY_NAME["batch"].validate(body), wait=wait,
            timeout_ms=timeout_ms, batch_id=_one_header(headers, "X-Op-Id"),
            idempotency_key=_one_header(headers, "Idempotency-Key"),
            cwd="/"))  # no caller's directory over HTTP: a relative path is from the root
        gone = lost if lost is not None else asyncio.ensure_future(
            _disconnected(receive))  # type: ignore[arg-type]
        try:
            ends: set[asyncio.Future[Any]] = {run, gone}
            await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if gone is not lost:
                gone.cancel()
            if not run.done():  # the caller went away: the running step is cancelled
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)
        if run.cancelled():
            return Answer(400, content_type=None)  # an answer nobody reads
        result = boundaries.mark(run.result()) if marked else run.result()
        error = result.get("error")
        done = answer(result, error["code"] if error else None)
        if result["dispatched"] != "no":  # a step reached the page: never sent again blindly
            done.headers["X-Should-Retry"] = "false"
            done.headers.pop("Retry-After", None)
        return done

    async def call_tool_route(request: Request) -> Response:
        """A tool call through Starlette's router (a path `_Activity` leaves to it)."""
        scope = request.scope
        return (await call_tool(request.path_params["sid"], request.path_params["tool"],
                                scope["headers"], lambda: read_body(scope, request.receive),
                                scope.get(CONNECTION_LOST), request.receive)).response()

    @handles("webmcp_tools")
    async def webmcp_tools(request: Request) -> Response:
        headers = request.scope["headers"]
        op = await dispatcher.submit(
            request.path_params["sid"], "webmcp_list", {},
            wait=_bool_query(request, "wait"), op_id=_one_header(headers, "X-Op-Id"))
        return await finish(op, False, request)

    @handles("webmcp_invoke")
    async def webmcp_invoke(request: Request) -> Response:
        body = await json_body(request)
        wait, detach = _flag(body, "wait"), _flag(body, "detach")
        marked = _flag(body, "boundaries")
        params, timeout_ms = _webmcp_call(body)
        headers = request.scope["headers"]
        op = await dispatcher.submit(
            request.path_params["sid"], "webmcp_invoke", params, wait=wait,
            timeout_ms=timeout_ms, idempotency_key=_one_header(headers, "Idempotency-Key"),
            op_id=_one_header(headers, "X-Op-Id"))
        return await finish(op, detach, request, marked)

    @handles("session_start")
    async def create_session(request: Request) -> Response:
        body = await json_body(request)
        timeout_ms = contract.check_timeout_ms(body.pop("timeout_ms", None))
        params = catalog.SESSION_START.validate(body)
        state = (await read_state_file(params["state"])
                 if params["state"] else None)
        create = asyncio.ensure_future(daemon.sessions.create(
            params["session_id"], params["label"], params["browser"],
            isolated=params["isolated"], state=state, download_dir=params["download_dir"],
            cdp_url=params["cdp_url"], grid=params["grid"],
            allow_domains=params["allow_domain"], block_domains=params["block_domain"],
            timeout=timeout_ms / 1000 if timeout_ms else SESSION_START_TIMEOUT_S))
        gone = asyncio.ensure_future(_disconnected(request.receive))
        try:
            await asyncio.wait({create, gone}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            create.cancel()
            raise
        finally:
            gone.cancel()
        if not create.done():
            # The caller hung up (Ctrl-C) while a Grid slot was awaited or a browser was
            # reached: a session started for nobody would hold that slot, so it is undone.
            create.cancel()
            await asyncio.gather(create, return_exceptions=True)
            raise BskError("cancelled", "the caller went away before the session started")
        return respond(create.result().summary(), status=201)

    @handles("session_list")
    async def list_sessions(request: Request) -> Response:
        # Sessions the last restart could not re-adopt, with why (docs/design.md).
        ended = [{"session_id": sid, "reason": why}
                 for sid, why in daemon.readopted.get("reasons", {}).items()
                 if sid not in daemon.sessions.sessions]
        return respond({"sessions": [s.summary() for s in daemon.sessions.sessions.values()],
                        "ended_at_restart": ended})

    @handles("session_stop")
    async def stop_session(request: Request) -> Response:
        sid = request.path_params["sid"]
        daemon.sessions.get(sid)
        body = await json_body(request)
        wait = _flag(body, "wait") or _bool_query(request, "wait")
        timeout_ms = body.pop("timeout_ms", None)
        if body:
            raise invalid(next(iter(body)), "unknown field (accepted: wait, timeout_ms)")
        op = await dispatcher.submit(sid, "session_stop", {}, wait=wait, timeout_ms=timeout_ms)
        return await finish(op, False, request)

    @handles("op_get")
    async def get_op(request: Request) -> Response:
        return respond(dispatcher.find(request.path_params["op_id"]))

    @handles("op_list")
    async def list_ops(request: Request) -> Response:
        limit = _int_query(request, "limit", 50, 1, 1000)
        session = request.query_params.get("session")
        return respond({"ops": daemon.journal.list(session, limit)})

    @handles("op_cancel")
    async def cancel_op(request: Request) -> Response:
        return respond(dispatcher.cancel(request.path_params["op_id"]))

    @handles("op_wait")
    async def wait_op(request: Request) -> Response:
        op_id = request.path_params["op_id"]
        timeout_ms = _int_query(request, "timeout_ms", 30_000, 0, contract.MAX_TIMEOUT_MS)
        op = dispatcher.live(op_id)
        if op is not None:
            try:
                await asyncio.wait_for(op.done.wait(), timeout_ms / 1000)
            except TimeoutError:
                pass
        return op_response(dispatcher.find(op_id))

    @handles("health")
    async def health(request: Request) -> Response:
        return respond({"ok": True, "version": daemon.version})

    @handles("daemon_info")
    async def daemon_info(request: Request) -> Response:
        return respond(daemon.info())

    @handles("policy")
    async def show_policy(request: Request) -> Response:
        # Read-only: the policy is set when the daemon starts; no route changes it.
        narrowed = {sid: s.narrowing for sid, s in daemon.sessions.sessions.items()
                    if s.narrowing}
        return respond({"policy": daemon.policy.to_json(), "sessions_narrowed": narrowed})

    @handles("status")
    async def status(request: Request) -> Response:
        if _bool_query(request, "connect"):
            await daemon.browser.ensure()
        return respond({**daemon.info(), "browser": daemon.browser.info(),
                        "sessions": len(daemon.sessions.sessions)})

    @handles("browsers")
    async def browsers(request: Request) -> Response:
        hub = daemon.extensions
        if hub is None:
            return respond({"listening": False, "browsers": [],
                            "hint": "start the daemon with --extension-port PORT"})
        return respond({"listening": True, **hub.info()})

    def extension_hub() -> Any:
        if daemon.extensions is None:  # the daemon's own option, not a browser's failure
            raise BskError("not_configured", "the daemon runs without its extension "
                           "listener: there is nothing to pair with", hint="stop the daemon "
                           "and start it with `--extension-port PORT` (or BSK_EXTENSION_PORT)",
                           details={"option": "extension_port"})
        return daemon.extensions

    @handles("extension_pair")
    async def extension_pair(request: Request) -> Response:
        return respond(extension_hub().pairing_code())

    @handles("extension_unpair")
    async def extension_unpair(request: Request) -> Response:
        return respond(await extension_hub().unpair(request.path_params["browser_id"]))

    @handles("doctor")
    async def doctor(request: Request) -> Response:
        return respond(await daemon.doctor())

    @handles("daemon_stop")
    async def stop_daemon(request: Request) -> Response:
        daemon.request_stop("stopped by request")
        return respond({"stopping": True, "pid": daemon.pid})

    @handles("dashboard")
    async def show_dashboard(request: Request) -> Response:
        url = await dashboard.start()
        return respond({"url": url, "port": dashboard.port})

    @handles("tools")
    async def tools(request: Request) -> Response:
        return respond({"tools": [
            {"name": t.name, "effect": t.effect.value, "summary": t.summary,
             "cli": " ".join(t.words), "input_schema": t.input_schema()}
            for t in catalog.TOOLS
        ]})

    @handles("openapi")
    async def openapi(request: Request) -> Response:
        from browserskill.api.openapi import document

        return respond(document())

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        path = request.url.path
        if status == 405:  # the path exists: say which methods it has
            allowed = sorted({m for r in routes if r.matches(request.scope)[0] != Match.NONE
                              for m in (r.methods or ())})
            response = error_response(BskError(
                "method_not_allowed", f"method: {request.method} {path} is not an endpoint "
                f"(allowed: {', '.join(allowed)})", hint="see GET /v1/openapi.json",
                details={"field": "method", "allowed": allowed}))
            response.headers["Allow"] = ", ".join(allowed)
            return response
        if status == 404:
            return error_response(BskError(
                "path_not_found", f"no endpoint {request.method} {path}",
                hint="GET /v1/openapi.json lists every path and its methods",
                details={"path": path}))
        return error_response(BskError("internal", str(exc)))

    cli_call = CliCall(dispatcher)
    routes = [
        # First: the router tries routes in order, and nearly every request is a tool call
        # (the clients', or bsk's launcher's).
        Route("/v1/sessions/{sid}/tools/{tool}", call_tool_route, methods=["POST"]),
        Route("/v1/cli", cli_call, methods=["POST"]),  # bsk's launcher only
        # Every other route is a control's (base/controls.py), served by its handler.
        *(Route(c.path, handlers[c.name], methods=[c.method]) for c in controls.CONTROLS),
    ]
    routes += daemon.test_routes  # a test hook's (docs/design.md, test hooks); none otherwise
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    return _Activity(app, daemon, call_tool, cli_call)


ToolCall = Callable[[str, str, Headers, ReadBody, "asyncio.Future[None] | None",
                    Receive | None], Awaitable[Answer]]


class _Activity:
    """Counts requests in flight, so the idle timer never stops a daemon mid-call.

    A tool call (`POST /v1/sessions/{sid}/tools/{tool}`, nearly every request, and
    `POST /v1/cli`, bsk's) goes straight to its handler: it already answers every error
    by the table (`failed`), so Starlette's middleware and router add only CPU to it.
    Every other request, and any path Starlette would treat otherwise (a trailing
    slash, a root path), goes through the app. The Unix listener serves both tool calls
    without ASGI at all (api/hot_route.py), through `tool_call` and `cli_call`: the same
    handlers, the same count."""

    def __init__(self, app: Any, daemon: Daemon, call_tool: ToolCall, cli: CliCall,
                 ) -> None:
        self.app = app
        self.daemon = daemon
        self.call_tool = call_tool
        self.cli = cli

    async def tool_call(self, sid: str, tool: str, headers: Headers, read: ReadBody,
                        lost: asyncio.Future[None]) -> Answer:
        """`POST /v1/sessions/{sid}/tools/{tool}` as the Unix listener brings it."""
        with self.daemon.serving():
            return await self.call_tool(sid, tool, headers, read, lost, None)

    async def cli_call(self, headers: Headers, read: ReadBody, lost: asyncio.Future[None],
                       reply: Reply) -> None:
        """`POST /v1/cli` as the Unix listener brings it."""
        with self.daemon.serving():
            await self.cli.serve(headers, read, lost, None, reply)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        with self.daemon.serving():
            parts = scope["path"].split("/")
            if (len(parts) == 6 and scope["method"] == "POST" and parts[1] == "v1"
                    and parts[2] == "sessions" and parts[4] == "tools" and parts[3]
                    and parts[5] and not scope.get("root_path")):
                done = await self.call_tool(parts[3], parts[5], scope["headers"],
                                            lambda: read_body(scope, receive),
                                            scope.get(CONNECTION_LOST), receive)
                await done.response()(scope, receive, send)
            elif scope["path"] == "/v1/cli" and scope["method"] == "POST" \
                    and not scope.get("root_path"):  # bsk's launcher: every agent action
                await self.cli(scope, receive, send)
            else:
                await self.app(scope, receive, send)

