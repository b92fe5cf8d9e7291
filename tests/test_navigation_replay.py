"""`open` leaving a page that keeps navigating itself, replayed from orders Chromium gave.

The real-browser test (test_traps.py: open trap_navloop.html, then open other.html) met
each order below about one run in four on a 2-CPU machine and failed on it. The events
were recorded from the daemon's own event handler (Chromium 156, 2026-12-03, loader ids
renamed: Pn the page's own documents, On ours; times in ms after the first
`Page.navigate`). Here they are played on the virtual clock to the real `Tab` and
`navigate`, so each order is met every run:

- OVERTAKEN: ours commits, then a document the page started before it commits after it
  (the page's navigation was queued behind ours). `open` sends again, and the second one
  of ours lands. Before the fix, the first (replaced) document was still taken as the one
  that landed, so every retry was "overtaken" at once: three sends, `navigation_loop`,
  while the tab sat on other.html. The recording's third `Page.navigate` and its
  document's events are left out: the fixed tool does not send it.
- UNANNOUNCED: a navigation the page starts while ours is pending, with no
  `frameRequestedNavigation` before it, commits after ours has loaded. Before the fix
  `open` answered "completed" at other.html and the tab then showed the loop page; now it
  waits for it, sends again, and lands (the page asks for another document meanwhile, so
  it then gives that its 1 s grace too).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any, cast

import pytest
import test_interleavings as ti
from support.fake_links import FakeLink

from browserskill.browser.link import TargetHandle
from browserskill.browser.tab import Tab
from browserskill.tools.context import ToolContext
from browserskill.tools.downloads import SessionDownloads
from browserskill.tools.navigation import navigate

MAIN = "FRAME_MAIN"
SITE = "http://127.0.0.1:8000"
OTHER = f"{SITE}/other.html"


def loop_page(n: int) -> str:
    return f"{SITE}/trap_navloop.html?n={n}"


# (ms, what, loader id, url or lifecycle name). `answer` is a `Page.navigate` reply, in
# the order they were sent.
OVERTAKEN: list[tuple[float, str, str, str]] = [
    (55.7, "started", "P1", loop_page(1)),
    (56.1, "started", "O1", OTHER),
    (56.4, "committed", "P1", loop_page(1)),
    (65.2, "lifecycle", "P1", "DOMContentLoaded"),
    (81.1, "answer", "O1", ""),
    (98.5, "started", "P2", loop_page(2)),
    (117.9, "committed", "O1", OTHER),
    (164.2, "committed", "P2", loop_page(2)),
    (182.2, "started", "O2", OTHER),
    (191.5, "lifecycle", "P2", "DOMContentLoaded"),
    (198.7, "answer", "O2", ""),
    (223.9, "committed", "O2", OTHER),
    (240.6, "lifecycle", "O2", "DOMContentLoaded"),
    (240.9, "lifecycle", "O2", "load"),
]

UNANNOUNCED: list[tuple[float, str, str, str]] = [
    (-14.2, "requested", "", loop_page(1)),
    (-6.6, "started", "P1", loop_page(1)),
    (9.5, "started", "O1", OTHER),
    (22.3, "committed", "P1", loop_page(1)),
    (42.7, "lifecycle", "P1", "DOMContentLoaded"),
    (52.0, "answer", "O1", ""),
    (65.9, "started", "P2", loop_page(2)),  # no frameRequestedNavigation before it
    (80.1, "committed", "O1", OTHER),
    (100.0, "lifecycle", "O1", "DOMContentLoaded"),
    (100.8, "lifecycle", "O1", "load"),
    (161.7, "committed", "P2", loop_page(2)),
    (190.7, "lifecycle", "P2", "DOMContentLoaded"),
    (195.5, "started", "O2", OTHER),
    (203.8, "requested", "", loop_page(3)),
    (219.9, "answer", "O2", ""),
    (279.0, "committed", "O2", OTHER),
    (279.5, "lifecycle", "O2", "DOMContentLoaded"),
    (279.6, "lifecycle", "O2", "load"),
]


class Recorded:
    """The browser's side: plays the recorded events at their times from the first
    `Page.navigate`, and answers each with the recorded reply."""

    def __init__(self, order: list[tuple[float, str, str, str]]) -> None:
        self.order = order
        self.navigations: list[float] = []  # when each Page.navigate arrived (ms)
        self.replies: list[asyncio.Future[dict[str, Any]]] = []
        self.player: asyncio.Task[None] | None = None

    def sent(self, method: str) -> None:
        pass

    def answer(self, link: FakeLink, method: str, params: dict[str, Any],
               reply: asyncio.Future[dict[str, Any]]) -> None:
        now = asyncio.get_running_loop().time() * 1000
        if method == "Page.navigate":
            self.navigations.append(now)
            recorded = sum(what == "answer" for _, what, _, _ in self.order)
            if len(self.navigations) > recorded:
                raise AssertionError(f"Page.navigate #{len(self.navigations)} sent at "
                                     f"{now:.1f} ms; the recording answers {recorded}")
            self.replies.append(reply)
            if self.player is None:
                self.player = asyncio.get_running_loop().create_task(self.play(link))
        elif method == "Runtime.evaluate":  # document.title, once it landed
            reply.set_result({"result": {"type": "string", "value": "title"}})
        else:
            raise AssertionError(f"unexpected {method}")

    async def play(self, link: FakeLink) -> None:
        start = asyncio.get_running_loop().time()
        answered = 0
        for ms, what, loader, arg in self.order:
            if ms < 0:  # before the first send: `leaving` played it
                continue
            await asyncio.sleep(max(0.0, start + ms / 1000 - asyncio.get_running_loop().time()))
            if what == "answer":
                reply = self.replies[answered]  # sent by then, as in the recording
                reply.set_result({"frameId": MAIN, "loaderId": loader})
                answered += 1
            else:
                link.emit("S", *event(what, loader, arg))


def event(what: str, loader: str, arg: str) -> tuple[str, dict[str, Any]]:
    if what == "started":
        return "Page.frameStartedNavigating", {"frameId": MAIN, "loaderId": loader,
                                               "url": arg, "navigationType": "differentDocument"}
    if what == "requested":
        return "Page.frameRequestedNavigation", {"frameId": MAIN, "reason": "scriptInitiated",
                                                 "url": arg, "disposition": "currentTab"}
    if what == "committed":
        return "Page.frameNavigated", {"frame": {"id": MAIN, "loaderId": loader, "url": arg},
                                       "type": "Navigation"}
    return "Page.lifecycleEvent", {"frameId": MAIN, "loaderId": loader, "name": arg}


class Context:
    """What `navigate` uses of a ToolContext: one deadline, commands sent in the tab."""

    def __init__(self, downloads: Path, deadline_s: float) -> None:
        self.deadline = asyncio.get_running_loop().time() + deadline_s
        self.downloads = SessionDownloads(directory=downloads)

    def remaining(self) -> float:
        return self.deadline - asyncio.get_running_loop().time()

    def feature(self, kind: type) -> SessionDownloads:
        return self.downloads

    async def act(self, method: str, params: dict[str, Any], *, tab: Tab) -> dict[str, Any]:
        return await tab.send(method, params, timeout=self.remaining())

    inspect = act


def leaving(link: FakeLink, order: list[tuple[float, str, str, str]], *,
            navigates_itself: bool) -> None:
    """The tab on the loop page it is about to leave (P0), and what the recording saw
    before the first send."""
    link.emit("S", *event("committed", "P0", loop_page(0)))
    if navigates_itself:  # it already asked for its next document
        link.emit("S", *event("requested", "", loop_page(1)))
    for ms, what, loader, arg in order:
        if ms < 0:
            link.emit("S", *event(what, loader, arg))


def replay(order: list[tuple[float, str, str, str]], *,
           navigates_itself: bool = False) -> tuple[Recorded, dict[str, Any]]:
    """Run `open OTHER` against the recorded order: its result, with the tab's URL
    after it (`url_now`), and what the browser's side saw."""
    far = Recorded(order)
    loop = ti.VirtualClockLoop()

    async def run() -> dict[str, Any]:
        link = FakeLink(far, "recorded")
        tab = Tab(link, "tab-1", TargetHandle("T", "S"))
        tab.main_frame_id = MAIN
        leaving(link, order, navigates_itself=navigates_itself)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                ctx = cast(ToolContext, Context(Path(tmp), 10.0))
                result = await navigate(ctx, tab, OTHER, "load", unstuck=True)
            return {**result, "url_now": tab.url}
        finally:
            if far.player is not None:
                far.player.cancel()

    try:
        return far, loop.run_until_complete(run())
    finally:
        loop.close()


def test_a_retry_after_ours_was_overtaken_lands_on_its_own_document() -> None:
    far, result = replay(OVERTAKEN, navigates_itself=True)
    assert result is not None
    assert result["url"] == OTHER and result["url_now"] == OTHER
    assert len(far.navigations) == 2, far.navigations  # the overtaken one and the retry
    # sent again as the page's document replaced ours
    assert far.navigations == [0.0, pytest.approx(164.2)]


def test_a_navigation_the_page_started_unannounced_during_ours_is_waited_for() -> None:
    """Ours loaded at 100.8 ms; the page's document, started during ours, committed at
    161.7: `open` must not answer in between; it sends again then, and lands."""
    far, result = replay(UNANNOUNCED)
    assert result["url"] == OTHER and result["url_now"] == OTHER
    assert len(far.navigations) == 2, far.navigations
    assert far.navigations == [0.0, pytest.approx(161.7)]
