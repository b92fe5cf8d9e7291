"""The user's own browser, through the BrowserSkill extension (`extension/`).

`ExtensionHub` listens on 127.0.0.1:PORT for the extension's WebSocket: only the pinned
extension origin may connect, and its first message must be a handshake within 5 s.
Each connected browser (known by the stable instance id it sends) is an
`ExtensionBrowser`; each connection is an `ExtensionLink`, which implements the same
`BrowserLink` interface as `CdpLink` by relaying CDP through `chrome.debugger`, so tools
work unchanged. A session bound to a browser gets an `AgentWindow`: its tabs live in a
window of their own, and user tabs it borrows are remembered with where they came from.

Lost connection: every tab on it is marked gone and the dispatcher ends that browser's
operations (dispatched → outcome_unknown, queued → browser_unavailable). The extension
reconnects with the same instance id; its still-open Agent Windows are re-adopted with
the same session and tab ids, never duplicated.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import websockets
from websockets.asyncio.server import ServerConnection, serve

from browserskill import __version__
from browserskill.browser.link import (
    CdpError,
    EventHandler,
    LinkClosed,
    LinkError,
    TargetHandle,
    await_reply,
)
from browserskill.browser.tab import Tab
from browserskill.errors import BskError, invalid

if TYPE_CHECKING:
    from browserskill.dispatch.operations import Operation
    from browserskill.dispatch.sessions import Session

log = logging.getLogger(__name__)

# The id Chromium derives from the "key" in extension/manifest.json.
EXTENSION_ID = "pebaeafhdkemkkghlhipicmckejioeln"
EXTENSION_ORIGIN = f"chrome-extension://{EXTENSION_ID}"
DEFAULT_PORT = 47800  # the extension's default; the daemon listens only when asked
PROTOCOL, MIN_PROTOCOL = 1, 1  # versions this daemon speaks: [MIN_PROTOCOL, PROTOCOL]
HANDSHAKE_S = 5.0
HEARTBEAT_MS = 10_000
SILENCE_S = 35.0  # no message (heartbeats included) for this long: the link is dead
MAX_MESSAGE = 256 * 1024 * 1024
BORROW_PROMPT_S = 30.0


def negotiate(theirs_min: int, theirs_max: int) -> int | None:
    """Compatibility rule: the highest protocol version in both ranges, or none."""
    lo, hi = max(MIN_PROTOCOL, theirs_min), min(PROTOCOL, theirs_max)
    return hi if lo <= hi else None


def tab_session(chrome_tab_id: int) -> str:
    return f"tab-{chrome_tab_id}"


class ExtensionLink:
    """One WebSocket connection to the extension: a BrowserLink over chrome.debugger."""

    def __init__(self, ws: ServerConnection, browser: ExtensionBrowser) -> None:
        self._ws = ws
        self.browser = browser
        self.endpoint = f"extension:{browser.instance_id}"
        self._next_id = 0
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._subscribers: dict[str | None, list[EventHandler]] = {}
        self._close_handlers: list[Callable[[str], None]] = []
        self._closed_reason: str | None = None
        self._children: dict[str, int] = {}  # iframe CDP session id -> chrome tab id
        self._last_heard = time.monotonic()
        self.message_handler: Callable[[dict[str, Any]], None] | None = None
        self._reader = asyncio.create_task(self._read_loop(), name="extension-reader")
        self._watchdog = asyncio.create_task(self._watch(), name="extension-watchdog")

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def close_reason(self) -> str | None:
        return self._closed_reason

    async def _post(self, message: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Send one message that expects an answer; return the answer's future."""
        if self._closed_reason is not None:
            raise LinkClosed(self._closed_reason)
        self._next_id += 1
        msg_id = self._next_id
        what = message.get("method") or message["op"]
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (what, fut)
        fut.add_done_callback(lambda _: self._pending.pop(msg_id, None))
        try:
            await self._ws.send(json.dumps({"id": msg_id, **message}))
        except websockets.ConnectionClosed as e:
            self._mark_closed(f"extension connection closed: {e}")
            raise LinkClosed(self._closed_reason or "closed") from None
        except BaseException:
            fut.cancel()
            raise
        return fut

    async def call(self, message: dict[str, Any], *, timeout: float = 30.0) -> dict[str, Any]:
        """One tab/window operation of the extension (`op`), answered or failed."""
        return await await_reply(message["op"], await self._post(message), timeout)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        if session_id is None:
            fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            if method == "Browser.getVersion":
                fut.set_result(await self.version())
            else:
                fut.set_exception(CdpError(
                    method, -32601, "browser-level commands are not available through the "
                    "extension (chrome.debugger attaches to tabs)"))
            return fut
        message: dict[str, Any] = {"op": "cdp", "method": method, "params": params or {}}
        if session_id.startswith("tab-"):
            message["tabId"] = int(session_id[4:])
        elif session_id in self._children:
            message["tabId"] = self._children[session_id]
            message["sessionId"] = session_id
        else:
            raise CdpError(method, -32001, f"no session {session_id} on this link")
        return await self._post(message)

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        return await await_reply(method, await self.request(method, params,
                                                            session_id=session_id), timeout)

    def subscribe(self, session_id: str | None, handler: EventHandler) -> Callable[[], None]:
        handlers = self._subscribers.setdefault(session_id, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return unsubscribe

    def on_close(self, handler: Callable[[str], None]) -> None:
        self._close_handlers.append(handler)

    async def create_tab(self, url: str = "about:blank") -> TargetHandle:
        made = await self.call({"op": "tab_create", "url": url})
        return await self.attach(made["tabId"])

    async def attach(self, chrome_tab_id: int) -> TargetHandle:
        info = await self.call({"op": "attach", "tabId": chrome_tab_id})
        return TargetHandle(info["targetId"], tab_session(chrome_tab_id))

    async def close_tab(self, target_id: str) -> None:
        raise CdpError("close_tab", -32601, "close extension tabs through their Agent Window")

    async def version(self) -> dict[str, Any]:
        b = self.browser
        return {"product": f"{b.name}/{b.version}", "protocolVersion": "1.3",
                "userAgent": "", "jsVersion": "", "extension": b.extension_version}

    async def close(self) -> None:
        self._mark_closed("closed by the daemon")
        await self._ws.close()
        self._reader.cancel()

    async def wait_closed(self) -> None:
        await asyncio.wait({self._reader})

    async def _watch(self) -> None:
        while self._closed_reason is None:
            await asyncio.sleep(5)
            if time.monotonic() - self._last_heard > SILENCE_S:
                log.warning("extension %s silent for %.0fs: dropping the link",
                            self.browser.instance_id, SILENCE_S)
                self._mark_closed("the extension stopped sending heartbeats")
                await self._ws.close(1011, "heartbeat timeout")
                return

    async def _read_loop(self) -> None:
        reason = "extension connection closed"
        try:
            async for raw in self._ws:
                self._last_heard = time.monotonic()
                self._dispatch(json.loads(raw))
        except websockets.ConnectionClosed as e:
            reason = f"extension connection closed ({e})"
        except asyncio.CancelledError:
            reason = "closed by the daemon"
            raise
        except Exception as e:
            log.exception("extension reader failed")
            reason = f"extension reader failed: {e}"
        finally:
            self._watchdog.cancel()
            self._mark_closed(reason)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        msg_id = msg.get("id")
        if msg_id is not None:
            entry = self._pending.get(msg_id)
            if entry is None or entry[1].done():
                return
            what, fut = entry
            if "error" in msg:
                fut.set_exception(_error(what, msg["error"]))
            else:
                fut.set_result(msg.get("result") or {})
            return
        kind = msg.get("type")
        if kind == "event":
            self._event(msg)
        elif kind == "ping":
            asyncio.get_running_loop().create_task(self._pong(msg.get("t")))
        elif kind in ("detached", "tab_removed"):
            reason = msg.get("reason") or "target_closed"
            self._emit(tab_session(msg.get("tabId", -1)), "Inspector.detached",
                       {"reason": reason})
            if self.message_handler:
                self.message_handler(msg)
        elif self.message_handler is not None:
            self.message_handler(msg)

    async def _pong(self, t: Any) -> None:
        try:
            await self._ws.send(json.dumps({"type": "pong", "t": t}))
        except websockets.ConnectionClosed:
            pass

    def _event(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method", ""), msg.get("params") or {}
        tab_id = msg.get("tabId")
        key = msg.get("sessionId") or tab_session(tab_id)
        if method == "Target.attachedToTarget" and isinstance(tab_id, int):
            self._children[params.get("sessionId", "")] = tab_id
        elif method == "Target.detachedFromTarget":
            self._children.pop(params.get("sessionId", ""), None)
        self._emit(key, method, params)

    def _emit(self, key: str, method: str, params: dict[str, Any]) -> None:
        for handler in list(self._subscribers.get(key, ())):
            try:
                handler(method, params)
            except Exception:
                log.exception("event handler failed for %s", method)

    def _mark_closed(self, reason: str) -> None:
        if self._closed_reason is not None:
            return
        self._closed_reason = reason
        for what, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(LinkClosed(f"{what}: {reason}"))
        for handler in self._close_handlers:
            try:
                handler(reason)
            except Exception:
                log.exception("close handler failed")


def _error(what: str, err: dict[str, Any]) -> LinkError:
    code, message = err.get("code", ""), err.get("message", "")
    if code == "cdp":
        try:
            inner = json.loads(message)
        except ValueError:
            inner = {"code": -32000, "message": message}
        return CdpError(what, inner.get("code") or -32000, inner.get("message", ""),
                        inner.get("data") or "")
    if code == "restricted":
        return RestrictedPage(message)
    return ExtensionOpError(code, f"{what}: {message}")


class ExtensionOpError(LinkError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RestrictedPage(LinkError):
    """The extension refuses browser pages, the extension store and other extensions."""


def restricted_error(e: RestrictedPage) -> BskError:
    return BskError("action_failed", str(e), hint="BrowserSkill never touches chrome:// "
                    "pages, the extension store or other extensions' pages",
                    details={"reason": "restricted_page"}, dispatched="no")


@dataclass
class Borrow:
    chrome_tab_id: int
    window_id: int
    index: int
    url: str


class AgentWindow:
    """A session's place in an extension browser: its window, tabs and borrowed tabs.

    Stands in for the `BrowserManager` in that session's tool calls (`new_tab`,
    `close_tab`), so tools need not know which browser they are in."""

    def __init__(self, browser: ExtensionBrowser, session: Session) -> None:
        self.ext = browser
        self.session = session
        self.window_id: int | None = None
        self.chrome_tabs: dict[str, int] = {}  # session tab id -> chrome tab id
        self.borrowed: dict[str, Borrow] = {}  # session tab id -> where it came from
        self.ended = False

    # -- what the dispatcher and SessionManager call ---------------------------------

    @property
    def link(self) -> ExtensionLink | None:
        return self.ext.link

    def require_link(self) -> ExtensionLink:
        link = self.ext.link
        if link is None or link.closed:
            raise BskError("browser_unavailable",
                           f"the extension in browser {self.ext.describe()} is not connected",
                           hint="wait for it to reconnect (its popup shows the state), then "
                                "call again; `bsk browsers` lists connected browsers")
        return link

    def before_dispatch(self, op: Operation, session: Session) -> None:
        """Checked when an operation gets the session, before anything is sent."""
        from browserskill.tools import catalog

        effect = catalog.BY_NAME[op.tool].effect
        if session.user_interrupted and effect in (catalog.Effect.MUTATION,
                                                   catalog.Effect.TRANSIENT_INPUT):
            session.user_interrupted = False
            raise BskError("user_interrupted", "the user pressed Stop in the browser and took "
                           "over this session's tabs",
                           hint="ask the user before acting again; the next call goes ahead",
                           details={"session_id": session.id})
        if op.tool != "session_stop":
            self.require_link()

    def check_close(self, tab: Tab) -> None:
        if tab.tab_id in self.borrowed:
            raise BskError("action_failed", f"tab {tab.tab_id} is the user's (borrowed): "
                           "the agent can't close it",
                           hint=f"give it back with `bsk tab return {tab.tab_id}`",
                           details={"reason": "borrowed_tab"}, dispatched="no")

    async def new_tab(self, tab_id: str, url: str = "about:blank") -> Tab:
        link = self.require_link()
        if self.window_id is None:
            made = await link.call({"op": "window_create", "session_id": self.session.id,
                                       "label": self.session.label or "", "url": url})
            self.window_id = made["windowId"]
        else:
            made = await link.call({"op": "tab_create", "windowId": self.window_id,
                                       "url": url})
        chrome_tab = made["tabId"]
        try:
            return await self.attach(tab_id, chrome_tab)
        except BaseException:
            await asyncio.shield(self._quietly({"op": "tab_close", "tabId": chrome_tab}))
            raise

    async def attach(self, tab_id: str, chrome_tab: int) -> Tab:
        link = self.require_link()
        try:
            handle = await link.attach(chrome_tab)
        except RestrictedPage as e:
            raise restricted_error(e) from None
        tab = Tab(link, tab_id, handle)
        self.chrome_tabs[tab_id] = chrome_tab
        try:
            await tab.start()
        except BaseException:
            tab.close()
            self.chrome_tabs.pop(tab_id, None)
            await asyncio.shield(self._quietly({"op": "detach", "tabId": chrome_tab}))
            raise
        await self._quietly({"op": "overlay", "tabId": chrome_tab, "on": True,
                             "session_id": self.session.id, "label": self.session.label})
        return tab

    async def close_tab(self, tab: Tab) -> None:
        tab.close()
        if tab.tab_id in self.borrowed:  # session stop gives borrowed tabs back
            await self.return_tab(tab)
            return
        chrome_tab = self.chrome_tabs.pop(tab.tab_id, None)
        if chrome_tab is not None:
            await self._quietly({"op": "tab_close", "tabId": chrome_tab})

    async def adopt_tab(self, tab_id: str, target_id: str) -> Tab:
        raise BskError("action_failed", "adopting tabs by target id is not available in an "
                       "extension browser", details={"reason": "unsupported"})

    async def return_tab(self, tab: Tab) -> dict[str, Any]:
        """Detach and put a borrowed tab back where it was (or somewhere sensible)."""
        b = self.borrowed[tab.tab_id]
        tab.close()
        link = self.require_link()
        await link.call({"op": "detach", "tabId": b.chrome_tab_id})
        placed = await link.call({"op": "tab_restore", "tabId": b.chrome_tab_id,
                                     "windowId": b.window_id, "index": b.index})
        self.borrowed.pop(tab.tab_id, None)
        self.chrome_tabs.pop(tab.tab_id, None)
        self.ext.borrows.pop(b.chrome_tab_id, None)
        out = {"tab_id": tab.tab_id, "user_tab": f"u{b.chrome_tab_id}",
               "window_id": placed["windowId"], "index": placed["index"]}
        if placed.get("fallback"):
            out["note"] = placed["fallback"]
        return out

    async def session_ended(self) -> None:
        self.ended = True
        self.ext.sessions.pop(self.session.id, None)
        for chrome_tab, sid in list(self.ext.borrows.items()):
            if sid == self.session.id:
                self.ext.borrows.pop(chrome_tab, None)
        await self._quietly({"op": "session_end", "session_id": self.session.id})
        if self.window_id is not None and not self.borrowed:
            await self._quietly({"op": "window_close", "windowId": self.window_id})

    async def _quietly(self, message: dict[str, Any]) -> None:
        link = self.ext.link
        if link is None or link.closed:
            return
        try:
            await link.call(message, timeout=5)
        except LinkError as e:
            log.info("%s: %s", message.get("op"), e)

    def describe(self) -> dict[str, Any]:
        return {"browser": self.ext.instance_id, "window_id": self.window_id,
                "borrowed": sorted(self.borrowed)}


@dataclass
class ExtensionBrowser:
    """A browser with the extension, known by its stable instance id across reconnects."""

    instance_id: str
    name: str = ""
    version: str = ""
    label: str = ""
    extension_version: str = ""
    protocol: int = PROTOCOL
    link: ExtensionLink | None = None
    connected_at: float = 0.0
    sessions: dict[str, AgentWindow] = field(default_factory=dict)
    borrows: dict[int, str] = field(default_factory=dict)  # chrome tab id -> session id

    @property
    def connected(self) -> bool:
        return self.link is not None and not self.link.closed

    def describe(self) -> str:
        return f"{self.instance_id}" + (f" ({self.label})" if self.label else "")

    def info(self) -> dict[str, Any]:
        return {"browser_id": self.instance_id, "label": self.label or None,
                "name": self.name, "version": self.version, "connected": self.connected,
                "extension_version": self.extension_version, "protocol": self.protocol,
                "connected_at": self.connected_at or None,
                "sessions": sorted(self.sessions)}


class ExtensionHub:
    """The extension WebSocket listener and the browsers connected through it."""

    def __init__(self, port: int, *, host: str = "127.0.0.1") -> None:
        self.port = port
        self.host = host
        self.browsers: dict[str, ExtensionBrowser] = {}
        self._server: Any = None
        # Wired by the daemon: end ops of sessions on a lost link; a user's Stop; a
        # window closed by hand; sessions to re-create after a daemon restart.
        self.on_lost: Callable[[str, set[str]], None] = lambda reason, sids: None
        self.on_interrupt: Callable[[str], None] = lambda sid: None
        self.on_window_closed: Callable[[str], None] = lambda sid: None
        self.on_connected: Callable[[ExtensionBrowser, list[dict[str, Any]]], Any] | None = None

    async def start(self) -> None:
        self._server = await serve(
            self._serve, self.host, self.port, process_request=self._check_request,
            max_size=MAX_MESSAGE, compression=None, ping_interval=None)
        sock = next(iter(self._server.sockets))
        self.port = sock.getsockname()[1]
        log.info("extension listener on %s:%d (origin %s)", self.host, self.port,
                 EXTENSION_ORIGIN)

    async def stop(self) -> None:
        for b in self.browsers.values():
            if b.link is not None:
                try:
                    await b.link.close()
                except Exception:
                    pass
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _check_request(self, conn: ServerConnection, request: Any) -> Any:
        origin = request.headers.get("Origin")
        if origin != EXTENSION_ORIGIN:
            log.warning("refused a WebSocket from origin %r", origin)
            return conn.respond(HTTPStatus.FORBIDDEN,
                                "only the BrowserSkill extension may connect here\n")
        return None

    async def _serve(self, ws: ServerConnection) -> None:
        try:
            hello = json.loads(await asyncio.wait_for(ws.recv(), HANDSHAKE_S))
            browser, sessions = self._handshake(hello)
        except TimeoutError:
            await ws.close(1008, "no handshake within 5 s")
            return
        except (ValueError, TypeError, KeyError) as e:
            await _refuse(ws, f"bad handshake: {e}")
            return
        except _Refused as e:
            await _refuse(ws, str(e))
            return
        except websockets.ConnectionClosed:
            return
        old = browser.link
        if old is not None and not old.closed:
            await old.close()  # the same browser again: the new connection wins
        link = ExtensionLink(ws, browser)
        link.message_handler = lambda msg: self._on_message(browser, msg)
        link.on_close(lambda reason: self._lost(browser, reason))
        browser.link = link
        browser.connected_at = time.time()
        await ws.send(json.dumps({"type": "welcome", "protocol": browser.protocol,
                                  "daemon_version": __version__,
                                  "heartbeat_ms": HEARTBEAT_MS}))
        log.info("extension connected: %s %s %s", browser.describe(), browser.name,
                 browser.version)
        try:
            await self._reconcile(browser, link, sessions)
        except Exception:
            log.exception("reconciling sessions of %s", browser.describe())
        await link.wait_closed()

    def _handshake(self, hello: Any) -> tuple[ExtensionBrowser, list[dict[str, Any]]]:
        if not isinstance(hello, dict) or hello.get("type") != "hello":
            raise _Refused("the first message must be the handshake (type: hello)")
        theirs_max = int(hello["protocol"])
        theirs_min = int(hello.get("min_protocol", theirs_max))
        agreed = negotiate(theirs_min, theirs_max)
        if agreed is None:
            raise _Refused(f"protocol {theirs_min}-{theirs_max} is not supported: this "
                           f"daemon speaks {MIN_PROTOCOL}-{PROTOCOL}; update the "
                           f"{'daemon' if theirs_min > PROTOCOL else 'extension'}")
        instance = hello["instance_id"]
        if not isinstance(instance, str) or not 1 <= len(instance) <= 64:
            raise _Refused("instance_id must be a string of 1-64 characters")
        browser = self.browsers.get(instance) or ExtensionBrowser(instance)
        info = hello.get("browser") or {}
        browser.name = str(info.get("name", ""))[:64]
        browser.version = str(info.get("version", ""))[:64]
        browser.label = str(hello.get("label") or "")[:64]
        browser.extension_version = str(hello.get("extension_version", ""))[:32]
        browser.protocol = agreed
        self.browsers[instance] = browser
        sessions = hello.get("sessions") or []
        return browser, [s for s in sessions if isinstance(s, dict)]

    async def _reconcile(self, browser: ExtensionBrowser, link: ExtensionLink,
                         reported: list[dict[str, Any]]) -> None:
        """Re-adopt the still-open Agent Windows of sessions we know; end the others."""
        open_windows = {s.get("session_id"): s for s in reported}
        for sid, win in list(browser.sessions.items()):
            seen = open_windows.get(sid)
            alive = {t.get("tabId") for t in (seen or {}).get("tabs", [])}
            borrowed_alive = {b.chrome_tab_id for b in win.borrowed.values()} & await \
                self._existing(link, {b.chrome_tab_id for b in win.borrowed.values()})
            await self.readopt(win, alive | borrowed_alive)
        if self.on_connected is not None:
            await self.on_connected(browser, reported)
        await link._ws.send(json.dumps({"type": "sessions",
                                        "sessions": sorted(browser.sessions)}))

    async def _existing(self, link: ExtensionLink, chrome_tabs: set[int]) -> set[int]:
        out = set()
        for chrome_tab in chrome_tabs:
            got = await link.call({"op": "tab_get", "tabId": chrome_tab})
            if got.get("tab"):
                out.add(chrome_tab)
        return out

    async def readopt(self, win: AgentWindow, alive: set[int]) -> None:
        """Attach the session's surviving tabs anew (same tab ids); forget the rest."""
        session = win.session
        for tab_id, chrome_tab in list(win.chrome_tabs.items()):
            if chrome_tab not in alive:
                session.forget_tab(tab_id)
                win.chrome_tabs.pop(tab_id, None)
                b = win.borrowed.pop(tab_id, None)
                if b is not None:
                    win.ext.borrows.pop(b.chrome_tab_id, None)
                continue
            try:
                tab = await win.attach(tab_id, chrome_tab)
            except Exception as e:
                log.warning("re-adopting %s/%s: %s", session.id, tab_id, e)
                session.forget_tab(tab_id)
                win.chrome_tabs.pop(tab_id, None)
                continue
            session.tabs[tab_id] = tab
            if win.borrowed.get(tab_id):
                await win._quietly({"op": "session_bind", "session_id": session.id,
                                    "label": session.label, "windowId": win.window_id})
        if session.tabs:
            if session.current_tab_id not in session.tabs:
                session.current_tab_id = next(iter(session.tabs))
            await win._quietly({"op": "session_bind", "session_id": session.id,
                                "label": session.label or "", "windowId": win.window_id})
        else:
            self.on_window_closed(session.id)

    def _on_message(self, browser: ExtensionBrowser, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "interrupt":
            sid = msg.get("session_id")
            if isinstance(sid, str) and sid in browser.sessions:
                log.info("user interrupt for session %s", sid)
                self.on_interrupt(sid)
        elif kind == "window_removed":
            for sid, win in list(browser.sessions.items()):
                if win.window_id == msg.get("windowId"):
                    self.on_window_closed(sid)

    def _lost(self, browser: ExtensionBrowser, reason: str) -> None:
        log.warning("extension link of %s closed: %s", browser.describe(), reason)
        for win in browser.sessions.values():
            for tab in win.session.tabs.values():
                tab.mark_gone(f"the extension's connection was lost ({reason})")
        self.on_lost(reason, set(browser.sessions))

    # -- choosing a browser ------------------------------------------------------------

    def choose(self, wanted: str) -> ExtensionBrowser:
        connected = [b for b in self.browsers.values() if b.connected]
        if wanted == "extension":
            if len(connected) == 1:
                return connected[0]
            if not connected:
                raise BskError("browser_unavailable", "no browser with the BrowserSkill "
                               "extension is connected",
                               hint=f"load extension/ in Chrome/Edge and point it at port "
                                    f"{self.port} (its options page)")
            raise invalid("browser", "several browsers are connected: choose one by id or "
                          "label", hint="see `bsk browsers`",
                          details={"browsers": [b.info() for b in connected]})
        matches = [b for b in self.browsers.values()
                   if wanted in (b.instance_id, b.label)]
        if len(matches) > 1:
            raise invalid("browser", f"label {wanted!r} names several browsers: use its id",
                          hint="see `bsk browsers`")
        if not matches:
            raise invalid("browser", f"no browser {wanted!r} (give embedded, extension, or a "
                          "browser id or label from `bsk browsers`)")
        if not matches[0].connected:
            raise BskError("browser_unavailable",
                           f"browser {matches[0].describe()} is not connected now",
                           hint="wait for its extension to reconnect, then call again")
        return matches[0]

    def agent_window(self, wanted: str, session: Session) -> AgentWindow:
        browser = self.choose(wanted)
        win = AgentWindow(browser, session)
        browser.sessions[session.id] = win
        return win

    def info(self) -> dict[str, Any]:
        return {"port": self.port, "origin": EXTENSION_ORIGIN,
                "browsers": [b.info() for b in self.browsers.values()]}


class _Refused(Exception):
    pass


async def _refuse(ws: ServerConnection, reason: str) -> None:
    log.warning("refused an extension handshake: %s", reason)
    try:
        await ws.send(json.dumps({"type": "refused", "reason": reason}))
        await ws.close(1008, reason[:120])
    except websockets.ConnectionClosed:
        pass


def bind_session(hub: ExtensionHub | None, wanted: str, session: Session) -> AgentWindow:
    """The Agent Window for a new session in the browser `wanted` names."""
    if hub is None:
        raise BskError("browser_unavailable", "the extension listener is off",
                       hint="start the daemon with `--extension-port PORT` (or "
                            f"BSK_EXTENSION_PORT; the extension's default is {DEFAULT_PORT})")
    return hub.agent_window(wanted, session)


def wire(hub: ExtensionHub, sessions: Any, dispatcher: Any) -> None:
    """Connect the hub's browser-side happenings to sessions and operations."""

    def interrupt(sid: str) -> None:
        session = sessions.sessions.get(sid)
        if session is None:
            return
        session.user_interrupted = True
        for op in list(dispatcher.ops.values()):
            if op.session_id == sid and not op.ended and op.state != "queued":
                dispatcher.cancel(op.op_id, "user_interrupt")

    async def end_session(sid: str) -> None:
        session = sessions.sessions.get(sid)
        if session is None:
            return
        for tab in session.tabs.values():
            tab.mark_gone("its Agent Window was closed")
        live = [op for op in dispatcher.ops.values() if op.session_id == sid and not op.ended]
        for op in live:
            op.request_cancel("window_closed")
        for op in live:
            await op.done.wait()
        if sessions.sessions.get(sid) is session:
            await sessions.close(session, "its Agent Window was closed")

    def window_closed(sid: str) -> None:
        asyncio.get_running_loop().create_task(end_session(sid))

    hub.on_lost = dispatcher._link_lost
    hub.on_interrupt = interrupt
    hub.on_window_closed = window_closed
    sessions.extensions = hub
