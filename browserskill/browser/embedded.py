"""`EmbeddedPlacement`: a session's place in the daemon's own Chromium.

Every tab the session opens gets a window of its own (`Target.createTarget` with
`newWindow`): tabs that share a window hide each other — `document.visibilityState`
"hidden", timers throttled to about one a second, no animation frames, screenshots and
scrolls that wait for frames that never come (docs/design.md, placement). A tab the
session's page opens (window.open, target=_blank) lands in its opener's window; the
placement remembers which tab is in front in each window and puts the session's current
tab back in front before a call on it.

Isolated (`--isolated`), the session also gets a browser context of its own — cookies,
storage, cache and permissions apart from every other session — created with
`disposeOnDetach: false`, so that it survives a daemon restart for re-adoption, and
disposed when the session ends.

Invariant: the placement shows, sizes and closes only its own tabs and windows.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from browserskill.browser.link import BrowserLink
    from browserskill.browser.manager import BrowserManager
    from browserskill.browser.tab import Tab

log = logging.getLogger(__name__)


class EmbeddedPlacement:
    placement = "embedded"

    def __init__(self, manager: BrowserManager, *, context_id: str | None = None,
                 window_size: tuple[int, int] | None = None) -> None:
        self.manager = manager
        self.context_id = context_id  # None: the shared persistent profile
        self.window_size = window_size  # set by `window resize`; new windows get it
        # The browser's life this context belongs to: a relaunched browser lost it.
        self._generation = manager.generation
        self._window_of: dict[str, str] = {}  # target id -> its window (first target's id)
        self._front: dict[str, str] = {}  # window -> the target id in front of it

    @classmethod
    async def start(cls, manager: BrowserManager, *, isolated: bool) -> EmbeddedPlacement:
        if not isolated:
            return cls(manager)
        return cls(manager, context_id=await manager.create_context())

    # -- Backend ------------------------------------------------------------------------

    @property
    def link(self) -> BrowserLink | None:
        return self.manager.link

    @property
    def owner(self) -> object:
        return self.manager

    def lost(self) -> bool:
        return self.manager.link is None or self.manager.link.closed

    def lost_hint(self) -> str:
        return ("call again: the daemon relaunches or reconnects it and brings this "
                "session's tabs back (reopened at their last URL if the pages died)")

    def before_dispatch(self, tool: str) -> None:
        return None  # the embedded browser is launched or reconnected on demand

    async def new_tab(self, tab_id: str, url: str = "about:blank") -> Tab:
        tab = await self.manager.new_tab(tab_id, url, context_id=self.context_id,
                                         window_size=self.window_size)
        self._window_of[tab.target_id] = tab.target_id
        self._front[tab.target_id] = tab.target_id
        return tab

    async def adopt_tab(self, tab_id: str, target_id: str, opener: Tab | None = None) -> Tab:
        tab = await self.manager.adopt_tab(tab_id, target_id)
        window = self._window_of.get(opener.target_id, target_id) if opener else target_id
        self._window_of[target_id] = window
        self._front[window] = target_id  # a new tab comes up in front of its window
        return tab

    def check_close(self, tab: Tab) -> None:
        return None

    async def recover_tabs(self, lost: list[Tab],
                           timeout: float) -> tuple[list[tuple[Tab, str]], str | None]:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        await self.manager.ensure()  # relaunches the embedded browser, or reconnects
        alive = await self.manager.page_targets()
        also_lost = None
        if self.context_id is not None and self._generation != self.manager.generation:
            contexts = await self.manager.contexts()
            if self.context_id not in contexts:  # died with its browser: a new, empty one
                self.context_id = await self.manager.create_context()
                also_lost = "this isolated session's cookies and storage died with it"
        self._generation = self.manager.generation
        out: list[tuple[Tab, str]] = []
        for old in lost:
            if old.target_id in alive:
                out.append((await self.adopt_tab(old.tab_id, old.target_id), "reattached"))
                continue
            tab = await self.new_tab(old.tab_id)
            out.append((tab, "reopened"))
            if old.url and old.url != "about:blank":
                await self.manager.open_in(tab, old.url, max(0.001, end - loop.time()))
        return out, also_lost

    async def close_tab(self, tab: Tab) -> None:
        window = self._window_of.pop(tab.target_id, None)
        if window is not None and self._front.get(window) == tab.target_id:
            del self._front[window]  # the next call's ensure_shown says who is in front
        await self.manager.close_tab(tab)

    async def show(self, tab: Tab, timeout: float) -> None:
        await tab.send("Page.bringToFront", timeout=timeout)
        window = self._window_of.setdefault(tab.target_id, tab.target_id)
        self._front[window] = tab.target_id

    async def ask_for_help(self, tab: Tab, reason: str | None) -> None:
        return None  # a headless window no one sees: the dashboard shows the request

    async def ensure_shown(self, tab: Tab, timeout: float) -> None:
        window = self._window_of.get(tab.target_id)
        if window is None or self._front.get(window) == tab.target_id:
            return
        try:
            await self.show(tab, timeout)
        except Exception as e:  # best effort: the call itself meets the trouble and says so
            log.info("bringing tab %s to front: %s", tab.tab_id, e)

    def windows_to_follow(self, tab: Tab, tabs: list[Tab]) -> list[Tab]:
        mine = self._window_of.get(tab.target_id, tab.target_id)
        seen = {mine}
        out = []
        for other in tabs:
            window = self._window_of.get(other.target_id, other.target_id)
            if window not in seen and not other.gone:
                seen.add(window)
                out.append(other)
        return out

    def resized(self, width: int, height: int) -> None:
        self.window_size = (width, height)

    async def session_ended(self) -> None:
        if self.context_id is not None and self._generation == self.manager.generation:
            await self.manager.dispose_context(self.context_id)

    def stored(self) -> dict[str, Any]:
        return {"placement": self.placement, "context_id": self.context_id,
                "window_size": list(self.window_size) if self.window_size else None}

    @classmethod
    def restore(cls, manager: BrowserManager, stored: dict[str, Any]) -> EmbeddedPlacement:
        size = stored.get("window_size")
        return cls(manager, context_id=stored.get("context_id"),
                   window_size=(int(size[0]), int(size[1])) if size else None)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.placement, "browser": self.manager.mode,
                               "isolated": self.context_id is not None}
        if self.context_id is not None:
            out["context_id"] = self.context_id
        if self.window_size is not None:
            out["window_size"] = list(self.window_size)
        return out
