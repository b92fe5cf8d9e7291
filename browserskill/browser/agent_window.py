"""`AgentWindow`: a session's place in the user's browser — its own window, its tabs,
and the user tabs it borrowed (with where each came from, to put it back)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.browser.extension_link import ExtensionLink, RestrictedPage
from browserskill.browser.link import LinkError
from browserskill.browser.tab import Tab

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from browserskill.browser.backend import SessionView


class ExtensionBrowserView(Protocol):
    """What an Agent Window uses of its browser (`extension.ExtensionBrowser`, which
    holds the windows: named here by shape, so neither module imports the other)."""

    instance_id: str
    link: ExtensionLink | None
    sessions: dict[str, AgentWindow]
    leftovers: dict[str, AgentWindow]
    borrows: dict[int, str]  # chrome tab id -> session id

    @property
    def connected(self) -> bool: ...

    def describe(self) -> str: ...


def restricted_error(e: RestrictedPage) -> BskError:
    """The link's refusal of a browser page, as the session's caller hears it."""
    return BskError("action_failed", str(e), hint="BrowserSkill never touches chrome:// "
                    "pages, the extension store or other extensions' pages",
                    details={"reason": "restricted_page"}, dispatched=Dispatched.NO)


@dataclass
class Borrow:
    chrome_tab_id: int
    window_id: int
    index: int
    url: str


class AgentWindow:
    """A session's place in an extension browser: its window, tabs and borrowed tabs.

    The session's `Backend` (browser/backend.py), so tools need not know which browser
    they are in."""

    placement = "extension"
    context_id: str | None = None  # the user's own profile

    def __init__(self, browser: ExtensionBrowserView, session: SessionView) -> None:
        self.ext = browser
        self.session = session
        self.window_id: int | None = None
        self.chrome_tabs: dict[str, int] = {}  # session tab id -> chrome tab id
        self.borrowed: dict[str, Borrow] = {}  # session tab id -> where it came from
        self.elsewhere: set[int] = set()  # chrome tabs of ours in other windows (popups)
        self.ended = False
        # The link was lost (or the daemon restarted): until the extension reconnects and
        # its tabs are re-attached, calls are browser_unavailable and nothing is sent.
        self.waiting = False
        # Why the user took the browser back (Cancel on Chrome's debugging bar): the
        # session is ending; its own tabs are left open to the user, nothing re-attached.
        self.revoked: str | None = None

    # -- what the dispatcher and SessionManager call ---------------------------------

    @property
    def link(self) -> ExtensionLink | None:
        return self.ext.link

    @property
    def owner(self) -> object:
        return self.ext

    def lost(self) -> bool:
        return self.ext.link is None or self.ext.link.closed or self.waiting

    def lost_hint(self) -> str:
        return "call again once the extension has reconnected: its Agent Window's tabs " \
               "are re-adopted"

    def require_link(self) -> ExtensionLink:
        link = self.ext.link
        if link is None or link.closed:
            raise BskError("browser_unavailable",
                           f"the extension in browser {self.ext.describe()} is not connected",
                           hint="wait for it to reconnect (its popup shows the state), then "
                                "call again; `bsk browsers` lists connected browsers")
        return link

    def before_dispatch(self) -> None:
        """Checked when an operation on the session's pages gets the session, before
        anything is sent."""
        if self.revoked:
            raise BskError("session_not_found",
                           f"session {self.session.id!r} ended: {self.revoked}",
                           hint="start a new session if the user agrees",
                           details={"session_id": self.session.id})
        self.require_link()
        if self.waiting:
            raise BskError("browser_unavailable", f"the extension in browser "
                           f"{self.ext.describe()} is reconnecting this session's tabs",
                           hint="call again in a moment")

    def check_close(self, tab: Tab) -> None:
        if tab.tab_id in self.borrowed:
            raise BskError("action_failed", f"tab {tab.tab_id} is the user's (borrowed): "
                           "the agent can't close it",
                           hint=f"give it back with `bsk tab return {tab.tab_id}`",
                           details={"reason": "borrowed_tab"}, dispatched=Dispatched.NO)

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
        if not self.ext.connected:  # nothing reaches the browser now: see session_ended
            return
        if tab.tab_id in self.borrowed:  # session stop gives borrowed tabs back
            await self.return_tab(tab)
            return
        chrome_tab = self.chrome_tabs.pop(tab.tab_id, None)
        self._forget_window_if_empty()
        if chrome_tab is not None and self.revoked:  # the user's now: left open as it is
            await self._quietly({"op": "overlay", "tabId": chrome_tab, "on": False})
        elif chrome_tab is not None:
            await self._quietly({"op": "tab_close", "tabId": chrome_tab})

    def _forget_window_if_empty(self) -> None:
        """Our own last tab is leaving: Chrome closes the window by itself, and that is
        not the user closing the Agent Window (the next new tab opens a new one)."""
        if not set(self.chrome_tabs.values()) - self.elsewhere:
            self.window_id = None

    async def adopt_tab(self, tab_id: str, target_id: str, opener: Tab | None = None) -> Tab:
        """A tab the session's own page opened (window.open, target=_blank): attached as
        one of the session's (it stays in the window Chrome opened it in). `target_id`
        is the Chrome tab id."""
        return await self.attach(tab_id, int(target_id))

    async def recover_tabs(self, lost: list[Tab],
                           timeout: float) -> tuple[list[tuple[Tab, str]], str | None]:
        return [], None  # the extension's reconnect re-adopts them (`ExtensionHub._reconcile`)

    async def show(self, tab: Tab, timeout: float) -> None:
        await tab.send("Page.bringToFront", timeout=timeout)

    async def ask_for_help(self, tab: Tab, reason: str | None) -> None:
        """The tab's overlay turns into the request (Done / Decline), or back to Stop."""
        chrome_tab = self.chrome_tabs.get(tab.tab_id)
        if chrome_tab is not None:
            await self._quietly({"op": "overlay", "tabId": chrome_tab, "on": True,
                                 "session_id": self.session.id, "label": self.session.label,
                                 "help": reason})

    async def ensure_shown(self, tab: Tab, timeout: float) -> None:
        return None  # the user arranges their browser's tabs; the overlay says whose it is

    def windows_to_follow(self, tab: Tab, tabs: list[Tab]) -> list[Tab]:
        return []  # one Agent Window; tabs elsewhere (popups) are not the agent's to size

    def resized(self, width: int, height: int) -> None:
        return None

    async def return_tab(self, tab: Tab) -> dict[str, Any]:
        """Detach and put a borrowed tab back where it was (or somewhere sensible)."""
        b = self.borrowed[tab.tab_id]
        tab.close()
        link = self.require_link()
        if set(self.chrome_tabs) == {tab.tab_id}:
            self.chrome_tabs.pop(tab.tab_id, None)
            self._forget_window_if_empty()
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
        if not self.ext.connected:
            # The browser is away (stopped meanwhile, or its grace period ran out): its
            # tabs are left as they are, borrowed ones still reserved; if the extension
            # reconnects, the hub gives them back and closes the window (`_tidy`).
            self.ext.leftovers[self.session.id] = self
            return
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

    def stored(self) -> dict[str, Any]:
        """What the session store keeps, to re-adopt this window after a daemon restart."""
        return {"id": self.ext.instance_id, "window_id": self.window_id,
                "tabs": dict(self.chrome_tabs), "elsewhere": sorted(self.elsewhere),
                "borrowed": {t: [b.chrome_tab_id, b.window_id, b.index, b.url]
                             for t, b in self.borrowed.items()}}

    def restore(self, stored: dict[str, Any]) -> None:
        """The stored window, waiting for its browser to reconnect (its tabs unattached)."""
        self.waiting = True
        self.window_id = stored.get("window_id")
        self.chrome_tabs = {str(t): int(c) for t, c in (stored.get("tabs") or {}).items()}
        self.elsewhere = {int(c) for c in stored.get("elsewhere") or ()}
        for tab_id, (chrome_tab, window_id, index, url) in (stored.get("borrowed")
                                                            or {}).items():
            self.borrowed[tab_id] = Borrow(int(chrome_tab), window_id, index, url)
            self.ext.borrows[int(chrome_tab)] = self.session.id

    def describe(self) -> dict[str, Any]:
        return {"kind": self.placement, "browser": self.ext.instance_id,
                "window_id": self.window_id, "borrowed": sorted(self.borrowed)}
