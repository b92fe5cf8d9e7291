"""A page target as tools see it: commands, and conditions to wait on.

The tab follows its own CDP events to know each frame's current document (loader id),
which lifecycle events each document reached, and whether the target is gone. Waiting
is on conditions over that state, woken by events, never on fixed sleeps.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from browserskill.browser.link import BrowserLink, LinkClosed, TargetHandle

_LIFECYCLE = {"load": "load", "domcontentloaded": "DOMContentLoaded", "commit": "commit"}


_NAVIGATION_REQUESTED = frozenset({
    "Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameScheduledNavigation"
})


class TabGone(Exception):
    """The tab was closed or crashed."""


class Tab:
    def __init__(self, link: BrowserLink, tab_id: str, handle: TargetHandle) -> None:
        self.link = link
        self.tab_id = tab_id
        self.target_id = handle.target_id
        self.session_id = handle.session_id
        self.main_frame_id: str | None = None
        self.url = "about:blank"
        self.title = ""
        self.frames: dict[str, str] = {}  # frame id -> current loader id
        self.navigations = 0  # main-frame commits and same-document navigations
        self.navigation_requests = 0  # main-frame navigations the page asked for
        self.gone: str | None = None  # why the tab can no longer be used
        # loader id -> lifecycle event names seen (bounded: recent documents only)
        self._lifecycle: OrderedDict[str, set[str]] = OrderedDict()
        self._wakeups: set[asyncio.Future[None]] = set()
        self._unsubscribe = link.subscribe(handle.session_id, self._on_event)

    async def start(self) -> None:
        await self.send("Page.enable")
        await self.send("Page.setLifecycleEventsEnabled", {"enabled": True})
        tree = await self.send("Page.getFrameTree")
        self._record_frames(tree["frameTree"])

    def _record_frames(self, node: dict[str, Any]) -> None:
        frame = node["frame"]
        self.frames[frame["id"]] = frame["loaderId"]
        if not frame.get("parentId"):
            self.main_frame_id = frame["id"]
            self.url = frame.get("url", self.url)
        for child in node.get("childFrames", ()):
            self._record_frames(child)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0
    ) -> dict[str, Any]:
        if self.gone:
            raise TabGone(self.gone)
        return await self.link.send(method, params, session_id=self.session_id, timeout=timeout)

    # -- events ----------------------------------------------------------------------

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.lifecycleEvent":
            seen = self._lifecycle.setdefault(params["loaderId"], set())
            seen.add(params["name"])
            while len(self._lifecycle) > 16:
                self._lifecycle.popitem(last=False)
        elif method == "Page.frameNavigated":
            frame = params["frame"]
            self.frames[frame["id"]] = frame["loaderId"]
            seen = self._lifecycle.setdefault(frame["loaderId"], set())
            seen.add("commit")
            if params.get("type") == "BackForwardCacheRestore":
                seen.update(("DOMContentLoaded", "load"))  # restored pages fire no load
            if not frame.get("parentId"):
                self.main_frame_id = frame["id"]
                self.url = frame.get("url", "")
                self.navigations += 1
        elif method in _NAVIGATION_REQUESTED:
            if params.get("frameId") == self.main_frame_id:
                self.navigation_requests += 1
        elif method == "Page.navigatedWithinDocument":
            if params.get("frameId") == self.main_frame_id:
                self.url = params.get("url", self.url)
                self.navigations += 1
        elif method == "Page.frameDetached":
            if params.get("reason") != "swap":
                self.frames.pop(params["frameId"], None)
        elif method == "Inspector.targetCrashed":
            self.gone = "the tab's renderer crashed"
        elif method == "Inspector.detached":
            self.gone = f"the tab was detached ({params.get('reason', 'unknown')})"
        self._wake()

    def mark_gone(self, reason: str) -> None:
        if not self.gone:
            self.gone = reason
        self._wake()

    def _wake(self) -> None:
        for fut in self._wakeups:
            if not fut.done():
                fut.set_result(None)
        self._wakeups.clear()

    async def until(self, condition: Callable[[], Any], timeout: float) -> Any:
        """Wait until `condition()` is truthy, re-checking after each event of this tab."""
        async with asyncio.timeout(timeout):
            while True:
                value = condition()
                if value:
                    return value
                if self.gone:
                    raise TabGone(self.gone)
                if self.link.closed:
                    raise LinkClosed("browser connection closed")
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._wakeups.add(fut)
                try:
                    await fut
                finally:
                    self._wakeups.discard(fut)

    def reached(self, loader_id: str, wait_until: str) -> bool:
        return _LIFECYCLE[wait_until] in self._lifecycle.get(loader_id, ())

    def main_loader(self) -> str | None:
        return self.frames.get(self.main_frame_id or "")

    def close(self) -> None:
        self._unsubscribe()
        self.mark_gone("the tab was closed")
