"""The user's own browser, through the BrowserSkill extension (`extension/`).

`ExtensionHub` listens on 127.0.0.1:PORT for the extension's WebSocket: only the pinned
extension origin may connect, and its first message must be a handshake within 5 s that
proves the browser was paired (`extension_pairing.py`); nothing else becomes a browser.
Until then a connection is unadmitted, and the listener holds only so many of those
(`admission.py`).
Each connected browser (known by the stable instance id it sends) is an
`ExtensionBrowser`; each connection is an `ExtensionLink`, which implements the same
`BrowserLink` interface as `CdpLink` by relaying CDP through `chrome.debugger`, so tools
work unchanged. A session bound to a browser gets an `AgentWindow`: its tabs live in a
window of their own, and user tabs it borrows are remembered with where they came from.

Lost connection: every tab on it is marked gone and the dispatcher ends that browser's
operations (dispatched → outcome_unknown, queued → browser_unavailable). The extension
reconnects with the same instance id; its still-open Agent Windows are re-adopted with
the same session and tab ids, never duplicated. After a daemon restart the session store
brings those sessions back bound to their browser's instance id (`expect`), waiting for
it to reconnect; the same reconciliation then re-adopts or ends them. A browser that
does not come back within the grace period (`--extension-grace`) has its sessions ended,
saying so; if it reconnects later, their Agent Windows are tidied up (borrowed tabs given
back, the windows closed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import websockets
from websockets.asyncio.server import ServerConnection, serve

from browserskill import __version__
from browserskill.base import background
from browserskill.base.admission import ACCEPT_BACKLOG, HEADER_READ_S, Admission
from browserskill.base.errors import BskError, invalid
from browserskill.browser.agent_window import AgentWindow
from browserskill.browser.extension_link import ExtensionLink
from browserskill.browser.extension_pairing import (
    WRONG_CODE_DELAY_S,
    Pairings,
    Refused,
    welcome_proof,
)
from browserskill.browser.extension_protocol import (
    DEFAULT_PORT,
    EXTENSION_ORIGIN,
    HANDSHAKE_S,
    HEARTBEAT_MS,
    MAX_MESSAGE,
    MIN_PROTOCOL,
    PROTOCOL,
    RECONNECT_GRACE_S,
    negotiate,
)
from browserskill.browser.link import LinkError

log = logging.getLogger(__name__)
# websockets logs every connection's opening and closing at INFO: a flood would fill the
# daemon's log. Refusals that matter are logged by the hub itself.
_WS_LOG = logging.getLogger(f"{__name__}.websocket")
_WS_LOG.setLevel(logging.WARNING)

if TYPE_CHECKING:
    from browserskill.browser.backend import SessionView


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
    # Sessions that ended while the browser was away: their windows are tidied up when
    # it reconnects (borrowed tabs given back, the Agent Window closed).
    leftovers: dict[str, AgentWindow] = field(default_factory=dict)
    # While disconnected with sessions: the timer that ends them, and when it fires.
    grace: asyncio.TimerHandle | None = None
    grace_ends_at: float | None = None

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
                "sessions": sorted(self.sessions),
                **({"grace_ends_at": self.grace_ends_at} if self.grace_ends_at else {})}


class ExtensionHub:
    """The extension WebSocket listener and the browsers connected through it."""

    def __init__(self, port: int, pairings: Pairings, *, host: str = "127.0.0.1",
                 grace_s: float = RECONNECT_GRACE_S) -> None:
        self.port = port
        self.host = host
        self.pairings = pairings  # who may connect (extension_pairing.py)
        self.grace_s = grace_s  # how long a lost browser's sessions wait (0: until stopped)
        self.browsers: dict[str, ExtensionBrowser] = {}
        self._server: Any = None
        self.admission = Admission("the extension listener")
        # Wired by the daemon: end ops of sessions on a lost link; a user's Stop; a
        # window closed by hand; sessions to re-create after a daemon restart.
        self.on_lost: Callable[[str, set[str]], None] = lambda reason, sids: None
        self.on_interrupt: Callable[[str], None] = lambda sid: None
        self.on_help_answer: Callable[[str, str], None] = lambda sid, answer: None
        # The popup's Approve / Deny of a held operation of one of this browser's sessions
        # (docs/safety.md, Approvals): (browser's session ids, op id, approve | deny).
        self.on_approval_answer: Callable[[set[str], str, str], None] = lambda s, o, a: None
        self.on_reconnected: Callable[[], None] = lambda: None
        self.on_window_closed: Callable[..., None] = lambda sid, reason="": None
        self.on_readopted: Callable[[SessionView], None] = lambda session: None
        self.on_tab_opened: Callable[[AgentWindow, str, int], None] = lambda w, t, c: None
        self.on_debugging_cancelled: Callable[[str, str], None] = lambda sid, reason: None
        self.on_connected: Callable[[ExtensionBrowser, list[dict[str, Any]]], Any] | None = None

    async def start(self) -> None:
        # Until its handshake proves a pairing a connection is unadmitted (admission.py):
        # a few at a time, each with HEADER_READ_S for its upgrade, HANDSHAKE_S for its hello.
        counted = type("Counted", (_Counted,), {"admission": self.admission})
        self._server = await serve(
            self._serve, self.host, self.port, process_request=self._check_request,
            max_size=MAX_MESSAGE, compression=None, ping_interval=None,
            open_timeout=HEADER_READ_S, create_connection=counted, backlog=ACCEPT_BACKLOG,
            logger=_WS_LOG)
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
            self._stop_grace(b)  # after the close: losing the link would start it again
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _check_request(self, conn: ServerConnection, request: Any) -> Any:
        origins = request.headers.get_all("Origin")
        if len(origins) > 1:  # ambiguous: refused before anything reads either
            log.warning("refused a WebSocket with %d Origin headers", len(origins))
            return conn.respond(HTTPStatus.BAD_REQUEST, "send exactly one Origin header\n")
        origin = origins[0] if origins else None
        if origin != EXTENSION_ORIGIN:
            log.warning("refused a WebSocket from origin %r", origin)
            return conn.respond(HTTPStatus.FORBIDDEN,
                                "only the BrowserSkill extension may connect here\n")
        return None

    async def _serve(self, ws: ServerConnection) -> None:
        # The challenge first: the handshake must prove the pairing secret over this nonce.
        server_nonce = secrets.token_hex(16)
        try:
            await ws.send(json.dumps({"type": "challenge", "nonce": server_nonce,
                                      "protocol": PROTOCOL, "min_protocol": MIN_PROTOCOL}))
            hello = json.loads(await asyncio.wait_for(ws.recv(), HANDSHAKE_S))
            browser, sessions, secret = self._handshake(hello, server_nonce)
        except TimeoutError:
            await ws.close(1008, "no handshake within 5 s")
            return
        except (ValueError, TypeError, KeyError) as e:
            await _refuse(ws, "bad_handshake", f"bad handshake: {e}")
            return
        except Refused as e:
            if e.wrong_code:  # a guess costs its connection, not the owner's code
                await asyncio.sleep(WRONG_CODE_DELAY_S)
            await _refuse(ws, e.code, str(e))
            return
        except websockets.ConnectionClosed:
            return
        if isinstance(ws, _Counted):
            ws.admitted()
        old = browser.link
        if old is not None and not old.closed:
            await old.close()  # the same browser again: the new connection wins
        link = ExtensionLink(ws, browser)
        link.message_handler = lambda msg: self._on_message(browser, msg)
        link.on_close(lambda reason: self._lost(browser, reason))
        browser.link = link
        browser.connected_at = time.time()
        self._stop_grace(browser)  # back in time: its sessions are re-adopted below
        await ws.send(json.dumps({"type": "welcome", "protocol": browser.protocol,
                                  "daemon_version": __version__,
                                  "heartbeat_ms": HEARTBEAT_MS,
                                  "paired": isinstance(hello.get("pair"), dict),
                                  "proof": welcome_proof(secret, server_nonce, hello)}))
        log.info("extension connected: %s %s %s", browser.describe(), browser.name,
                 browser.version)
        try:
            await self._reconcile(browser, link, sessions)
        except Exception:
            log.exception("reconciling sessions of %s", browser.describe())
        self.on_reconnected()  # what waits for its popup's approval, as of now
        await link.wait_closed()

    def _handshake(self, hello: Any, server_nonce: str
                   ) -> tuple[ExtensionBrowser, list[dict[str, Any]], bytes]:
        """The browser a handshake names, once it proved its pairing (nothing about a
        browser changes before that), its open Agent Windows, and its secret."""
        if not isinstance(hello, dict) or hello.get("type") != "hello":
            raise Refused("bad_handshake",
                          "the first message must be the handshake (type: hello)")
        theirs_max = _version(hello, "protocol", None)
        theirs_min = _version(hello, "min_protocol", theirs_max)
        agreed = negotiate(theirs_min, theirs_max)
        if agreed is None:
            raise Refused("protocol", f"protocol {theirs_min}-{theirs_max} is not supported: "
                          f"this daemon speaks {MIN_PROTOCOL}-{PROTOCOL}; update the "
                          f"{'daemon' if theirs_min > PROTOCOL else 'extension'}")
        instance = hello["instance_id"]
        if not isinstance(instance, str) or not 1 <= len(instance) <= 64:
            raise Refused("bad_handshake", "instance_id must be a string of 1-64 characters")
        info = hello.get("browser") or {}
        secret, just_paired = self.pairings.verify(hello, server_nonce)
        if just_paired:
            self.pairings.add(instance, secret, {
                "name": str(info.get("name", ""))[:64],
                "label": str(hello.get("label") or "")[:64]})
            log.info("paired browser %s", instance)
        browser = self.browsers.get(instance) or ExtensionBrowser(instance)
        browser.name = str(info.get("name", ""))[:64]
        browser.version = str(info.get("version", ""))[:64]
        browser.label = str(hello.get("label") or "")[:64]
        browser.extension_version = str(hello.get("extension_version", ""))[:32]
        browser.protocol = agreed
        self.browsers[instance] = browser
        sessions = hello.get("sessions") or []
        return browser, [s for s in sessions if isinstance(s, dict)], secret

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
        for sid, win in list(browser.leftovers.items()):
            del browser.leftovers[sid]
            await self._tidy(win, open_windows.get(sid))
        if self.on_connected is not None:
            await self.on_connected(browser, reported)
        await link._ws.send(json.dumps({"type": "sessions",
                                        "sessions": sorted(browser.sessions)}))

    async def _tidy(self, win: AgentWindow, seen: dict[str, Any] | None) -> None:
        """A session that ended while its browser was away: give its borrowed tabs back
        and close its Agent Window. Only when the extension still reports that window:
        then this is the same browser run, and the chrome tab ids are still those tabs."""
        mine = set(win.chrome_tabs.values())
        for b in win.borrowed.values():
            win.ext.borrows.pop(b.chrome_tab_id, None)
            mine.discard(b.chrome_tab_id)
        if seen is None:
            return
        log.info("tidying up the Agent Window of ended session %s", win.session.id)
        for b in win.borrowed.values():
            await win._quietly({"op": "detach", "tabId": b.chrome_tab_id})
            await win._quietly({"op": "tab_restore", "tabId": b.chrome_tab_id,
                                "windowId": b.window_id, "index": b.index})
        # Its own tabs still in its window: one the user dragged out is the user's now.
        still_there = {t.get("tabId") for t in seen.get("tabs") or []}
        for chrome_tab in sorted(mine & still_there):
            await win._quietly({"op": "tab_close", "tabId": chrome_tab})
        await win._quietly({"op": "session_end", "session_id": win.session.id})
        if isinstance(seen.get("windowId"), int):
            await win._quietly({"op": "window_close", "windowId": seen["windowId"]})

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
        win.waiting = False
        if session.tabs:
            if session.current_tab_id not in session.tabs:
                session.current_tab_id = next(iter(session.tabs))
            await win._quietly({"op": "session_bind", "session_id": session.id,
                                "label": session.label or "", "windowId": win.window_id})
            self.on_readopted(session)
        else:
            self.on_window_closed(session.id, "its Agent Window was closed while the "
                                  "extension was not connected to the daemon")

    def _on_message(self, browser: ExtensionBrowser, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "interrupt":
            sid = msg.get("session_id")
            if isinstance(sid, str) and sid in browser.sessions:
                log.info("user interrupt for session %s", sid)
                self.on_interrupt(sid)
        elif kind == "help_answer":
            sid, answer = msg.get("session_id"), msg.get("answer")
            if isinstance(sid, str) and sid in browser.sessions and answer in ("done",
                                                                              "decline"):
                self.on_help_answer(sid, answer)
        elif kind == "approval_answer":
            # From the extension's own popup, never a page: the extension refuses one
            # shown in a tab bsk drives, and so does this (its tab, if any, is named).
            driven = {t for w in browser.sessions.values() for t in w.chrome_tabs.values()}
            op_id, answer = msg.get("op_id"), msg.get("answer")
            if msg.get("tabId") in driven:
                log.warning("an approval from a tab bsk drives was refused (%s)", op_id)
            elif isinstance(op_id, str) and answer in ("approve", "deny"):
                self.on_approval_answer(set(browser.sessions), op_id, answer)
        elif kind == "tab_opened" and isinstance(msg.get("tabId"), int):
            wins = [w for w in browser.sessions.values() if not w.waiting and not w.revoked
                    and (w.window_id == msg.get("windowId")
                or msg.get("openerTabId") in w.chrome_tabs.values())]
            if wins:
                background.start(
                    self._opened(wins, msg["tabId"], msg.get("openerTabId"),
                                 msg.get("windowId")), name="extension-tab-opened")
        elif kind == "window_removed":
            for sid, win in list(browser.sessions.items()):
                if win.window_id == msg.get("windowId"):
                    self.on_window_closed(sid)
        elif kind == "detached" and msg.get("reason") == "canceled_by_user":
            self._debugging_cancelled(browser)

    def _debugging_cancelled(self, browser: ExtensionBrowser) -> None:
        """The user pressed Cancel on Chrome's '"BrowserSkill" started debugging this
        browser' bar, and Chrome detached every tab: they took their browser back. Every
        session on it ends (calls in flight end as interrupted); nothing is re-attached,
        their Agent Windows are left open to the user, borrowed tabs go back."""
        reason = ("the user cancelled debugging in the browser (Cancel on its \"started "
                  f"debugging this browser\" bar; browser {browser.describe()})")
        for sid, win in list(browser.sessions.items()):
            if win.revoked is None:
                log.warning("ending session %s: %s", sid, reason)
                win.revoked = reason
                self.on_debugging_cancelled(sid, reason)

    async def _opened(self, wins: list[AgentWindow], chrome_tab: int, opener: Any,
                      window_id: Any) -> None:
        """A new tab near a session's tabs: its session's if one of them really opened it
        (CDP's openerId); otherwise left alone."""
        link = wins[0].link
        if link is None or link.closed:
            return
        try:
            info = await link.call({"op": "attach", "tabId": chrome_tab}, timeout=10)
        except LinkError as e:  # closed at once, say: the opener's click must not wait for it
            log.info("a tab opened near an agent tab: %s", e)
            for win in wins:
                opener_id = next((t for t, c in win.chrome_tabs.items() if c == opener), None)
                if opener_id is not None:
                    self.on_tab_opened(win, opener_id, chrome_tab)  # fails, and says so
                    return
            return
        for win in wins:
            opener = next((t for t in win.session.tabs.values()
                           if info.get("openerId") and t.target_id == info["openerId"]), None)
            if opener is not None:
                if window_id != win.window_id:  # a popup window: not the Agent Window
                    win.elsewhere.add(chrome_tab)
                self.on_tab_opened(win, opener.tab_id, chrome_tab)
                return
        await wins[0]._quietly({"op": "detach", "tabId": chrome_tab})

    def _lost(self, browser: ExtensionBrowser, reason: str) -> None:
        log.warning("extension link of %s closed: %s", browser.describe(), reason)
        for win in browser.sessions.values():
            win.waiting = True
            for tab in win.session.tabs.values():
                tab.mark_gone(f"the extension's connection was lost ({reason})")
        self.on_lost(reason, set(browser.sessions))
        self._start_grace(browser)

    # -- a browser that does not come back ---------------------------------------------

    def _start_grace(self, browser: ExtensionBrowser) -> None:
        """The browser is away: its sessions wait for it `grace_s` at most, then end."""
        if (self.grace_s <= 0 or browser.grace is not None or browser.connected
                or not browser.sessions):
            return
        browser.grace = asyncio.get_running_loop().call_later(
            self.grace_s, self._grace_over, browser)
        browser.grace_ends_at = time.time() + self.grace_s

    def _stop_grace(self, browser: ExtensionBrowser) -> None:
        if browser.grace is not None:
            browser.grace.cancel()
        browser.grace = None
        browser.grace_ends_at = None

    def _grace_over(self, browser: ExtensionBrowser) -> None:
        browser.grace = None
        browser.grace_ends_at = None
        if browser.connected:
            return
        reason = (f"the browser's extension did not reconnect within {self.grace_s:g} s "
                  f"(browser {browser.describe()})")
        log.warning("ending the sessions of %s: %s", browser.describe(), reason)
        for sid in sorted(browser.sessions):
            self.on_window_closed(sid, reason)

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
            raise BskError("invalid_params", "browser: several browsers are connected: "
                           "choose one by id or label", hint="see `bsk browsers`",
                           details={"field": "browser",
                                    "browsers": [b.info() for b in connected]})
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

    def agent_window(self, wanted: str, session: SessionView) -> AgentWindow:
        browser = self.choose(wanted)
        win = AgentWindow(browser, session)
        browser.sessions[session.id] = win
        return win

    def expect(self, session: SessionView, stored: dict[str, Any]) -> AgentWindow:
        """After a daemon restart: a stored session's Agent Window, bound to its browser
        (known by instance id) before that browser reconnects; `_reconcile` re-attaches
        its tabs, with the same tab ids, when it does."""
        instance = str(stored["id"])
        browser = self.browsers.setdefault(instance, ExtensionBrowser(instance))
        win = AgentWindow(browser, session)
        win.restore(stored)
        browser.sessions[session.id] = win
        self._start_grace(browser)
        return win

    def info(self) -> dict[str, Any]:
        return {"port": self.port, "origin": EXTENSION_ORIGIN, "grace_s": self.grace_s,
                "browsers": [b.info() for b in self.browsers.values()],
                "paired": self.pairings.info()}

    # -- pairing ---------------------------------------------------------------------------

    def pairing_code(self) -> dict[str, Any]:
        """A code for the user to enter in the extension's options page (one pending)."""
        return {**self.pairings.new_code(), "port": self.port}

    async def unpair(self, browser_id: str) -> dict[str, Any]:
        """Forget a browser's secret and drop its connection: it must pair again."""
        if not self.pairings.remove(browser_id):
            raise invalid("browser_id", f"no paired browser {browser_id!r}",
                          hint="`bsk browsers` lists the paired ones")
        browser = self.browsers.get(browser_id)
        if browser is not None and browser.link is not None and not browser.link.closed:
            await browser.link.close()
        log.info("unpaired browser %s", browser_id)
        return {"unpaired": browser_id,
                "disconnected": browser is not None and browser.link is not None}


def show_approvals(hub: ExtensionHub, pending: list[dict[str, Any]]) -> None:
    """Tell each connected browser which of its sessions' operations wait for a person's
    approval (its popup lists them with Approve / Deny)."""
    for browser in hub.browsers.values():
        link = browser.link
        if link is None or link.closed:
            continue
        mine = [p for p in pending if p["session_id"] in browser.sessions]
        task = asyncio.get_running_loop().create_task(
            link._ws.send(json.dumps({"type": "approvals", "pending": mine})))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


def _version(hello: dict[str, Any], field: str, default: int | None) -> int:
    value = hello.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 16:
        raise Refused("bad_handshake", f"{field} must be a protocol version (a whole number), "
                      f"got {str(value)[:40]}")
    return value


class _Counted(ServerConnection):
    """A connection counted as unadmitted from its accept until `admitted()`."""

    admission: Admission
    _waiting = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self.admission.enter():
            self._waiting = True
        else:
            assert isinstance(transport, asyncio.Transport)
            transport.abort()  # over the cap: the fd goes back at once

    def admitted(self) -> None:
        if self._waiting:
            self._waiting = False
            self.admission.leave()

    def connection_lost(self, exc: Exception | None) -> None:
        self.admitted()
        super().connection_lost(exc)


async def _refuse(ws: ServerConnection, code: str, reason: str) -> None:
    """Say why (the extension's popup shows it), then close: 1008, policy violation."""
    log.warning("refused an extension handshake (%s): %s", code, reason)
    try:
        await ws.send(json.dumps({"type": "refused", "code": code, "reason": reason}))
        await ws.close(1008, _close_reason(f"{code}: {reason}"))
    except websockets.ConnectionClosed:
        pass


def _close_reason(text: str) -> str:
    """A WebSocket close reason holds at most 123 bytes of UTF-8."""
    data = text.encode()[:123]
    return data.decode(errors="ignore")


def bind_session(hub: ExtensionHub | None, wanted: str, session: SessionView) -> AgentWindow:
    """The Agent Window for a new session in the browser `wanted` names."""
    if hub is None:
        raise BskError("not_configured", "the extension listener is off",
                       hint="start the daemon with `--extension-port PORT` (or "
                            f"BSK_EXTENSION_PORT; the extension's default is {DEFAULT_PORT})")
    return hub.agent_window(wanted, session)
