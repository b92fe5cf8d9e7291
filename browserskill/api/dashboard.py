"""The dashboard (`bsk show`, docs/dashboard.md): a page served by the daemon on a
loopback port of its own, started on first use, with one WebSocket feed carrying the
sessions and their operations, the live view of one session's current tab, and the
person's actions (cancel, stop, take over, hand back, input, answer a request for help).

Invariants: nothing is reached without this daemon's dashboard token (an HttpOnly
SameSite=Strict cookie), a `Host` naming this listener, and for the feed an `Origin` of
this listener (a web page elsewhere can't open it). The token is in no URL: `bsk show`
gets a one-time link (`Links`: good once, for `LINK_TTL_S`) that the page exchanges for
the cookie, so what a process's command line shows (`ps`) opens nothing once used. The feed's
actions go through the same dispatcher calls as the API's (`cancel`, a queued
`session_stop`, `interrupt`); none is a second path.

Approvals are the one action only this feed (and the extension's popup) can take: the API's
token reaches no approval. A page bsk drives can load this dashboard too (an agent told
to), so an approval counts only when no page bsk drives is on the dashboard's origin while
it is checked, and the approving page answers once more after that check (it was alive,
hence not one of them, all along): `approval_gate` (docs/safety.md, Approvals).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
import socket
import struct
import time
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from browserskill.api import listeners
from browserskill.base.admission import Admission
from browserskill.base.contract import State
from browserskill.base.errors import BskError
from browserskill.browser.screencast import Screencast, send_input
from browserskill.browser.tab import Tab
from browserskill.session.operations import BY_PERSON

if TYPE_CHECKING:
    from browserskill.daemon.core import Daemon
    from browserskill.session.operations import Operation
    from browserskill.session.sessions import Session

log = logging.getLogger(__name__)

COOKIE = "bsk_dashboard"
STATE_EVERY_S = 0.25  # how often the feed looks for changes (a new op shows within this)
OPS_SHOWN = 30  # per session, newest first
PARAM_SUMMARY = 80  # characters of an operation's parameters shown in the timeline
LINK_TTL_S = 300.0  # a one-time link from `bsk show` (time enough to paste it)
LINKS_KEPT = 16
GATE_CHECK_S = 2.0  # asking one page bsk drives for its origin, before an approval counts
CONFIRM_TTL_S = 10.0  # an approval's second step must follow its check within this
# The answer to a one-time link: the cookie, then the page by a navigation of this page's
# own (a same-site one, so the Strict cookie goes with it even when the link was opened
# from a file: page, as `bsk show` does).
SIGNED_IN = ('<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" '
             'content="0;url=/"><title>BrowserSkill</title><a href="/">Open the dashboard</a>')


class DashboardGate:
    """Host, token and Origin checks in front of the dashboard app (HTTP and WebSocket)."""

    def __init__(self, app: Any, token: str, port: int, links: Links) -> None:
        self.app = app
        self.token = token.encode()
        self.links = links
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self.origins = {b"http://" + h for h in self.hosts}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = scope.get("headers") or []
        hosts = [v for k, v in headers if k == b"host"]
        if len(hosts) != 1 or hosts[0] not in self.hosts:
            return await _refuse(scope, send, 403, "Host must name this listener "
                                 "(127.0.0.1:PORT or localhost:PORT)")
        if scope["type"] == "websocket":
            origins = [v for k, v in headers if k == b"origin"]
            if len(origins) != 1 or origins[0] not in self.origins:
                return await _refuse(scope, send, 403, "the feed is for the dashboard's own "
                                     "page (Origin)")
        query = parse_qs(scope.get("query_string", b"").decode())
        code = query.get("code", [""])[0]
        if code and scope["type"] == "http":
            if not self.links.use(code):
                return await _refuse(scope, send, 401, "this dashboard link was used "
                                     f"already or is older than {LINK_TTL_S / 60:g} "
                                     "minutes: run `bsk show` for a new one")
            scope["bsk_signed_in"] = True  # the page sets the cookie
            return await self.app(scope, receive, send)
        if not hmac.compare_digest(_cookie(headers, COOKIE), self.token):
            return await _refuse(scope, send, 401, "no dashboard token: open the link that "
                                 "`bsk show` opens or prints")
        return await self.app(scope, receive, send)


class Links:
    """One-time links to the dashboard: each code is good once, for `LINK_TTL_S`; at
    most `LINKS_KEPT` are pending (a new one drops the oldest)."""

    def __init__(self) -> None:
        self._expiry: dict[str, float] = {}

    def new(self) -> str:
        self._forget_expired()
        while len(self._expiry) >= LINKS_KEPT:
            del self._expiry[next(iter(self._expiry))]
        code = secrets.token_urlsafe(24)
        self._expiry[code] = time.monotonic() + LINK_TTL_S
        return code

    def use(self, given: str) -> bool:
        """Whether `given` is a pending code; it is spent either way it was."""
        self._forget_expired()
        for code in list(self._expiry):
            if hmac.compare_digest(code.encode(), given.encode()):
                del self._expiry[code]
                return True
        return False

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for code in [c for c, t in self._expiry.items() if t <= now]:
            del self._expiry[code]


def _cookie(headers: list[tuple[bytes, bytes]], name: str) -> bytes:
    for k, v in headers:
        if k == b"cookie":
            for part in v.split(b";"):
                key, _, value = part.strip().partition(b"=")
                if key == name.encode():
                    return value
    return b""


async def _refuse(scope: Any, send: Any, status: int, message: str) -> None:
    if scope["type"] == "websocket":  # closing before accepting answers the handshake 403
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    body = json.dumps({"error": {"code": "invalid_params", "message": message,
                                 "hint": "run `bsk show` for the dashboard's URL",
                                 "details": {}}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"x-should-retry", b"false"),
        (b"connection", b"close")]})  # a caller not let in keeps no connection open
    await send({"type": "http.response.body", "body": body})


def session_state(session: Session, op_holder: Operation | None) -> str:
    """idle, busy with X, cleaning up, held by a person: what a person reads first."""
    if op_holder is None:
        return "idle"
    if op_holder.by_person:
        return "held by a person"
    if op_holder.state == State.CLEANING_UP:
        return f"cleaning up {op_holder.tool}"
    return f"busy with {op_holder.tool}"


def op_row(op: Operation) -> dict[str, Any]:
    given = {k: v for k, v in op.shown_params().items()
             if v not in (None, False)}  # not defaults; secrets masked
    params = json.dumps(given, ensure_ascii=False, separators=(",", ":"))
    if len(params) > PARAM_SUMMARY:
        params = params[:PARAM_SUMMARY - 1] + "…"
    ended = op.ended_at or None
    row: dict[str, Any] = {
        "op_id": op.op_id, "tool": op.tool, "params": params, "state": op.state,
        "status": op.status, "dispatched": op.dispatched,
        "steps_sent": len(op.steps_sent), "started_at": op.created_at,
        "duration_s": round((ended - op.created_at), 3) if ended else None,
        "compensation": [e[2] for e in op.timeline if len(e) > 2 and e[1] == "compensation"],
        "by_person": op.by_person,
    }
    if op.error:
        row["error"] = {"code": op.error.get("code"), "message": op.error.get("message")}
    if op.tool == "request_help":
        row["reason"] = op.params.get("reason")
    if op.approval is not None:
        row["approval"] = {k: op.approval.get(k) for k in ("what", "why", "answer", "by")}
    return row


class ApprovalRefused(Exception):
    """An approval that can't count: it may come from a page bsk drives."""


def _origin(url: str) -> str:
    """The web origin a URL's document has (blob: and filesystem: URLs carry it inside)."""
    for prefix in ("blob:", "filesystem:"):
        if url.startswith(prefix):
            url = url[len(prefix):]
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.netloc else ""


class Dashboard:
    """The dashboard's listener, token and live views; started on the first `bsk show`."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.token = secrets.token_urlsafe(32)
        self.port: int | None = None
        self.casts: dict[Tab, Screencast] = {}
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self.admission = Admission("the dashboard listener")
        self.links = Links()

    async def start(self) -> str:
        """A one-time link to the dashboard, listening from now on."""
        async with self._starting:
            if self._task is None or self._task.done():
                sock = socket.create_server(("127.0.0.1", 0))  # loopback only, by design
                self.port = sock.getsockname()[1]
                app = DashboardGate(self._app(), self.token, self.port, self.links)
                self._server = listeners.server(app, self.admission, ws="websockets",
                                                ws_max_size=1 << 16,
                                                timeout_graceful_shutdown=2)
                self._task = asyncio.create_task(self._server.serve(sockets=[sock]),
                                                 name="dashboard")
                log.info("dashboard on http://127.0.0.1:%d", self.port)
        return f"http://127.0.0.1:{self.port}/?code={self.links.new()}"

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 4)

    # -- what the page shows -------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        dispatcher = self.daemon.dispatcher
        ops_by_session: dict[str, list[Operation]] = {}
        for op in dispatcher.ops.values():
            ops_by_session.setdefault(op.session_id, []).append(op)
        sessions = []
        for session in list(self.daemon.sessions.sessions.values()):
            holder = session.queue.holder
            ops = sorted(ops_by_session.get(session.id, []), key=lambda o: o.created_at,
                         reverse=True)[:OPS_SHOWN]
            help_op = holder if holder is not None and holder.tool == "request_help" else None
            sessions.append({
                "session_id": session.id, "label": session.label,
                "placement": session.backend.describe(),
                "state": session_state(session, holder),
                "held_by_person": holder is not None and holder.by_person,
                "taken_over": dispatcher.person.taken_by_person(session.id) is not None,
                "help": ({"op_id": help_op.op_id, "reason": help_op.params.get("reason"),
                          "until": help_op.params.get("until")} if help_op else None),
                "queued": len(session.queue.queued),
                "current_tab": session.current_tab_id,
                "tabs": [{"tab_id": t.tab_id, "url": t.url, "title": t.title,
                          "gone": bool(t.gone)} for t in session.tabs.values()],
                "ops": [op_row(op) for op in ops],
            })
        return {"type": "state", "sessions": sessions, "waiting": self.waiting(sessions)}

    def waiting(self, sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Whatever waits for a person, oldest first: shown at the top, whichever session
        is chosen (approvals to give, requests for help to answer)."""
        out: list[dict[str, Any]] = []
        for op in self.daemon.dispatcher.person.approvals.pending():
            request = op.approval or {}
            out.append({"kind": "approval", "key": f"approval:{op.op_id}",
                        "op_id": op.op_id, "session_id": op.session_id, "tool": op.tool,
                        "what": request.get("what"), "why": request.get("why"),
                        "since": op.created_at})
        for s in sessions:
            if s["help"]:
                out.append({"kind": "help", "key": f"help:{s['help']['op_id']}",
                            "op_id": s["help"]["op_id"], "session_id": s["session_id"],
                            "reason": s["help"]["reason"], "until": s["help"]["until"]})
        return out

    async def pages_on_dashboard(self) -> list[str]:
        """The pages bsk drives that are on this dashboard's origin (an agent's own
        dashboard), described; a page that can't be asked counts by the URL bsk saw last.

        Session tabs are asked for `location.origin` (an about:blank popup or a blob:
        document has its opener's origin without its URL); every other target of each
        browser bsk drives over CDP (a tab not adopted, a worker, an iframe) by its URL."""
        origins = {f"http://127.0.0.1:{self.port}", f"http://localhost:{self.port}"}
        found: list[str] = []
        links: dict[int, Any] = {}
        daemon_link = self.daemon.browser.link
        if daemon_link is not None and not daemon_link.closed:
            links[id(daemon_link)] = daemon_link
        tabs: list[tuple[str, Tab]] = []
        for session in list(self.daemon.sessions.sessions.values()):
            link = session.backend.link
            if (session.backend.placement != "extension" and link is not None
                    and not getattr(link, "closed", False)):
                links[id(link)] = link
            tabs += [(session.id, t) for t in list(session.tabs.values()) if not t.gone]

        async def origin_of(tab: Tab) -> str:
            with contextlib.suppress(Exception):
                answer = await tab.send("Runtime.evaluate", {
                    "expression": "location.origin", "returnByValue": True},
                    timeout=GATE_CHECK_S)
                return str(answer["result"].get("value") or _origin(tab.url)).lower()
            return _origin(tab.url)

        seen = await asyncio.gather(*(origin_of(tab) for _, tab in tabs))  # side by side
        found += [f"tab {tab.tab_id} of session {sid}"
                  for (sid, tab), origin in zip(tabs, seen, strict=True) if origin in origins]
        for link in links.values():
            try:
                targets = await link.send("Target.getTargets", timeout=GATE_CHECK_S)
            except Exception as e:  # fail closed: a browser bsk drives that can't be asked
                raise ApprovalRefused(f"a browser bsk drives did not say what it shows "
                                      f"({e}); try again") from None
            for t in targets.get("targetInfos", []):
                if _origin(t.get("url", "")) in origins:
                    found.append(f"{t.get('type')} {t.get('url')} in a browser bsk drives")
        return found

    # -- the app -----------------------------------------------------------------------

    def _app(self) -> Starlette:
        async def page(request: Request) -> Response:
            if request.scope.get("bsk_signed_in"):
                response: Response = HTMLResponse(SIGNED_IN, headers={
                    "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict",
                                    path="/")
                return response
            html = resources.files("browserskill.api").joinpath("dashboard.html").read_text()
            return HTMLResponse(html, headers={
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'self'; img-src 'self' blob:; "
                "style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; "
                "connect-src 'self'; frame-ancestors 'none'"})

        return Starlette(routes=[Route("/", page, methods=["GET"]),
                                 WebSocketRoute("/feed", self._feed)])

    async def _feed(self, ws: WebSocket) -> None:
        await ws.accept()
        with self.daemon.serving():  # an open dashboard keeps the daemon up
            feed = _Feed(self, ws)
            try:
                await feed.run()
            finally:
                await feed.close()

    async def watch(self, tab: Tab, viewer: Any) -> None:
        cast = self.casts.get(tab)
        if cast is None:
            cast = self.casts[tab] = Screencast(tab)
        await cast.watch(viewer)

    async def unwatch(self, tab: Tab, viewer: Any) -> None:
        cast = self.casts.get(tab)
        if cast is None:
            return
        await cast.unwatch(viewer)
        if not cast.viewers:
            self.casts.pop(tab, None)


class _Feed:
    """One open dashboard page: state pushed when it changes, frames of the watched
    session's current tab (the newest only), and the person's actions."""

    def __init__(self, dash: Dashboard, ws: WebSocket) -> None:
        self.dash = dash
        self.ws = ws
        self.watching: str | None = None  # session id
        self.tab: Tab | None = None
        self.frame: tuple[bytes, dict[str, Any]] | None = None
        self.frame_ready = asyncio.Event()
        self.seq = 0
        self.send_lock = asyncio.Lock()
        # op id -> (token, loop time) of an approval whose check passed, awaiting the
        # page's second step on this same connection
        self.confirming: dict[str, tuple[str, float]] = {}

    def _on_frame(self, data: bytes, meta: dict[str, Any]) -> None:
        self.frame = (data, meta)
        self.frame_ready.set()

    async def _send_json(self, msg: dict[str, Any]) -> None:
        async with self.send_lock:
            await self.ws.send_text(json.dumps(msg))

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._states()), asyncio.create_task(self._frames()),
                 asyncio.create_task(self._commands())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        if self.tab is not None:
            with contextlib.suppress(Exception):
                await self.dash.unwatch(self.tab, self._on_frame)
            self.tab = None

    async def _states(self) -> None:
        last = ""
        while True:
            state = self.dash.state()
            text = json.dumps(state, sort_keys=True)
            if text != last:
                last = text
                async with self.send_lock:
                    await self.ws.send_text(text)
            await self._follow_tab()
            await asyncio.sleep(STATE_EVERY_S)

    async def _follow_tab(self) -> None:
        """Keep the live view on the watched session's current tab."""
        session = self.dash.daemon.sessions.sessions.get(self.watching or "")
        tab = session.tabs.get(session.current_tab_id or "") if session else None
        if tab is not None and tab.gone:
            tab = None
        if tab is self.tab:
            return
        if self.tab is not None:
            await self.dash.unwatch(self.tab, self._on_frame)
        self.tab = tab
        self.frame = None
        if tab is not None:
            try:
                await self.dash.watch(tab, self._on_frame)
            except Exception as e:  # a tab closing meanwhile: the next look retries
                log.info("live view of %s: %s", tab.tab_id, e)
                self.tab = None

    async def _frames(self) -> None:
        while True:
            await self.frame_ready.wait()
            self.frame_ready.clear()
            if self.frame is None or self.tab is None:
                continue
            data, meta = self.frame
            self.seq += 1
            header = json.dumps({"session": self.watching, "tab": self.tab.tab_id,
                                 "seq": self.seq, **meta}).encode()
            async with self.send_lock:
                await self.ws.send_bytes(struct.pack(">I", len(header)) + header + data)

    async def _commands(self) -> None:
        while True:
            try:
                raw = await self.ws.receive_text()
            except (WebSocketDisconnect, KeyError, RuntimeError):
                return
            try:
                msg = json.loads(raw)
                if not isinstance(msg, dict):
                    raise ValueError("a message is a JSON object")
                answer = await self._act(msg)
                await self._send_json({"type": "ack", "id": msg.get("id"), "ok": True,
                                       **answer})
            except BskError as e:
                await self._send_json({"type": "ack", "id": _id(raw), "ok": False,
                                       "error": e.to_dict()})
            except ApprovalRefused as e:
                await self._send_json({"type": "ack", "id": _id(raw), "ok": False,
                                       "error": {"code": "approval_refused",
                                                 "message": str(e)}})
            except (ValueError, TypeError) as e:
                await self._send_json({"type": "ack", "id": _id(raw), "ok": False,
                                       "error": {"code": "invalid_params", "message": str(e)}})
            except (WebSocketDisconnect, RuntimeError):
                return
            except Exception as e:  # one action failing (the tab went, a
                # dialog opened under the input, the link dropped) must not end the
                # person's whole view: that action's answer says what happened
                log.info("dashboard action failed: %r", e)
                await self._send_json({"type": "ack", "id": _id(raw), "ok": False,
                                       "error": {"code": "action_failed",
                                                 "message": f"{type(e).__name__}: {e}"}})

    async def _act(self, msg: dict[str, Any]) -> dict[str, Any]:
        daemon = self.dash.daemon
        dispatcher = daemon.dispatcher
        kind = msg.get("type")
        sid = msg.get("session")
        if kind == "watch":
            self.watching = sid if isinstance(sid, str) else None
            await self._follow_tab()
            return {}
        if kind == "cancel":
            return {"op": dispatcher.cancel(str(msg.get("op_id")))}
        if kind in ("approve", "approve_confirm", "deny"):
            return await self._answer(kind, str(msg.get("op_id")), msg.get("token"))
        if kind not in ("stop", "take_over", "hand_back", "input", "help"):
            raise ValueError(f"unknown message type {kind!r}")
        if not isinstance(sid, str):
            raise ValueError("session: give the session id")
        session = daemon.sessions.get(sid)
        if kind == "stop":
            dispatcher.person.hand_back(sid)  # a person stopping a session they hold lets go first
            op = await dispatcher.submit(sid, "session_stop", {}, wait=True)
            return {"op_id": op.op_id}
        if kind == "take_over":
            return {"op_id": dispatcher.person.take_over(sid).op_id}
        if kind == "hand_back":
            held = dispatcher.person.hand_back(sid)
            return {"op_id": held.op_id if held else None}
        if kind == "help":
            answer = msg.get("answer")
            if answer not in ("done", "decline"):
                raise ValueError("answer must be done or decline")
            return {"op_id": dispatcher.person.answer_help(sid, answer)}
        # input: only while a person holds the session (take-over or a request for help)
        holder = session.queue.holder
        if holder is None or holder.tool not in BY_PERSON or holder.state != State.DISPATCHED:
            raise BskError("session_busy", "take the session over first: input from the "
                           "live view reaches the page only while a person holds it",
                           details={"session_id": sid})
        event = msg.get("event")
        if not isinstance(event, dict):
            raise ValueError("event must be an object")
        await send_input(session.tab(), event)
        return {}

    async def _answer(self, kind: str, op_id: str, token: Any) -> dict[str, Any]:
        """A person's Approve (in two steps: the check, then the page's confirmation on
        this connection) or Deny of a held operation."""
        dispatcher = self.dash.daemon.dispatcher
        op = dispatcher.person.approvals.get(op_id)
        if kind == "deny":  # a refusal needs no check: any page may stop an action
            # Any page showing the dashboard may deny (it only stops a call): not "a person"
            dispatcher.person.answer_approval(op_id, "deny", "the dashboard")
            return {"op_id": op_id}
        loop = asyncio.get_running_loop()
        if kind == "approve":
            driving = await self.dash.pages_on_dashboard()
            if driving:
                why = (f"approval refused: a page bsk drives shows this dashboard "
                       f"({'; '.join(driving[:3])}); an approval must come from a browser "
                       "bsk does not drive. Close that page, then approve again")
                op.note("approval_refused", why)
                self.dash.daemon.journal.record(op)
                log.warning("op %s: %s", op_id, why)
                raise ApprovalRefused(why)
            token = secrets.token_urlsafe(16)
            self.confirming[op_id] = (token, loop.time())
            return {"op_id": op_id, "confirm": token}
        expected = self.confirming.pop(op_id, None)
        if (expected is None or not isinstance(token, str)
                or not hmac.compare_digest(expected[0], token)
                or loop.time() - expected[1] > CONFIRM_TTL_S):
            raise ApprovalRefused("approval refused: its confirmation does not follow a "
                                  "check on this connection; press Approve again")
        dispatcher.person.answer_approval(op_id, "approve", "a person in the dashboard")
        return {"op_id": op_id}


def _id(raw: str) -> Any:
    with contextlib.suppress(ValueError, AttributeError):
        return json.loads(raw).get("id")
    return None
