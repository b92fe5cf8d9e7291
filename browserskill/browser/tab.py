"""A page target as tools see it: commands, frames, and conditions to wait on.

The tab follows its own CDP events to know each frame's current document (loader id),
which lifecycle events each document reached, and whether the target is gone. Its
out-of-process iframes are attached automatically (flattened child sessions), so frame
tracking, snapshots and WebMCP see them too. Waiting is on conditions over that state,
woken by events, never on fixed sleeps.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, cast

from browserskill.browser.buffers import DOMAINS as OBSERVED_DOMAINS
from browserskill.browser.buffers import TabBuffers
from browserskill.browser.link import (
    BrowserLink,
    CdpError,
    Command,
    LinkClosed,
    LinkError,
    Requester,
    SequenceRelay,
    TargetHandle,
    await_reply,
)
from browserskill.webmcp.tools import TabTools

log = logging.getLogger(__name__)

_LIFECYCLE = {"load": "load", "domcontentloaded": "DOMContentLoaded", "commit": "commit",
              "networkidle": "networkIdle"}
_SAME_DOCUMENT = frozenset({"sameDocument", "historySameDocument"})  # no new document
_NAVIGATION_REQUESTED = frozenset({
    "Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameScheduledNavigation"
})

# (cdp session id, method, params): every event of the page and of its iframe sessions.
TabListener = Callable[[str, str, dict[str, Any]], None]


class TabGone(Exception):
    """The tab was closed or crashed."""


class TabCrashed(TabGone):
    """The tab's renderer crashed; a reload or a navigation brings it back."""


# Why a tab is crashed when BrowserSkill crashed it itself (`crash_hung`).
HUNG = ("the tab's renderer hung (its script could not be stopped), so BrowserSkill "
        "crashed it; its page state (form input, scroll, script state) is lost")


# Commands the page's own thread answers: none while a JavaScript dialog blocks it (a
# dialog's answer, a navigation, the browser's target commands still go through).
_PAGE_ANSWERS = ("Runtime.", "DOM.", "DOMDebugger.", "Input.", "Accessibility.",
                 "Page.createIsolatedWorld")


class DialogOpened(Exception):
    """The page opened a JavaScript dialog while a command was pending."""

    def __init__(self, dialog: dict[str, Any]) -> None:
        super().__init__(f"the page opened a {dialog.get('type', '')} dialog")
        self.dialog = dialog
        self.effects: dict[str, Any] | None = None  # what the action did before (tools/effects.py)




@dataclass
class ChildSession:
    """An out-of-process iframe attached under this tab."""

    session_id: str
    target_id: str  # equals the iframe's frame id
    url: str
    parent_session: str  # the session it was attached under (owns its <iframe> element)
    unsubscribe: Callable[[], None]


class Tab(Requester):
    def __init__(self, link: BrowserLink, tab_id: str, handle: TargetHandle) -> None:
        self.link = link
        self.tab_id = tab_id
        self.target_id = handle.target_id
        self.session_id = handle.session_id
        self.main_frame_id: str | None = None
        self.url = "about:blank"
        self.title = ""
        self.frames: dict[str, str] = {}  # frame id -> current loader id
        self.frame_session: dict[str, str] = {}  # frame id -> cdp session that owns it
        self.children: dict[str, ChildSession] = {}  # by cdp session id
        self.navigations = 0  # main-frame commits and same-document navigations
        self.navigation_requests = 0  # main-frame navigations asked for or started
        # Main-frame loads begun and ended: a load that ends with no commit was a
        # navigation that made no new document (204, a download, a cancelled one).
        self.main_loads_started = 0
        self.main_loads_stopped = 0
        self.gone: str | None = None  # why the tab can no longer be used
        self.crashed: str | None = None  # set while the renderer is dead (reload recovers)
        self.crash_seq = 0
        self._crash_reason: str | None = None  # what the next crash is, if we caused it
        self.listeners: list[TabListener] = []
        self._in_flight: set[asyncio.Future[Any]] = set()
        # (frame id, loader id) -> BrowserSkill's isolated world in that document
        self.worlds: dict[tuple[str, str], int] = {}
        # frame id -> the page's own (main) world in its current document, as the
        # Runtime events of its CDP session say (`eval --frame` runs there)
        self.main_worlds: dict[str, int] = {}
        self.buffers = TabBuffers(handle.session_id)  # console and network ring buffers
        self.listeners.append(self.buffers.on_event)
        self.webmcp = TabTools(handle.session_id, handle.target_id)  # its frames' page tools
        self.listeners.append(self.webmcp.on_event)
        self.starting: set[asyncio.Task[None]] = set()  # iframe sessions being set up
        # Workers the page started (dedicated, and any other worker Chromium attaches
        # with it): only interception (routes, the policy) is set up in them, through
        # `child_setup`.
        self.workers: dict[str, Callable[[], None]] = {}  # session id -> unsubscribe
        # New iframes and workers wait for `child_setup` before they run (set by the
        # session's routes under a policy: nothing they request may slip past it).
        self.pause_children = False
        # A popup Chromium holds paused (browser/manager.py, under a policy): `release`
        # lets it run once its session's interception is on.
        self.held: Callable[[], Awaitable[None]] | None = None
        # Run for each new iframe session once it observes (routes install themselves).
        self.child_setup: list[Callable[[str], Awaitable[None]]] = []
        self.popups_requested = 0  # new windows this page asked for (Page.windowOpen)
        # Of those, the ones Chromium made (a target with this opener; the popup blocker
        # makes none for the rest), and the ones the session took as its tabs (or failed
        # to): counted by the session (session/sessions.py), which closes those past its
        # bound instead.
        self.popups_created = 0
        self.popups_taken = 0
        self.popup_base = 0  # popups_created when the last input began (bounds a storm)
        self.drag_data: dict[str, Any] | None = None  # an intercepted HTML5 drag
        self.dialog: dict[str, Any] | None = None  # the JavaScript dialog open now
        self.dialog_seq = 0  # dialogs opened so far: a change means one opened
        self.dialog_session: str | None = None
        # While a navigation leaves the page: (navigations then, dialogs dismissed noted)
        self._leaving: tuple[int, list[dict[str, Any]]] | None = None
        self.dialogs_left = 0
        self.document_dialogs = 0  # dialogs the current document opened so far
        self._commits = 0
        # The main frame's documents that committed (recent ones): loader id ->
        # (page_requests, main_starts, main_commits) when it did
        self._at_commit: OrderedDict[str, tuple[int, int, int]] = OrderedDict()
        self._page_requests = 0  # main-frame navigations the page itself asked for
        # loader id -> its number among the main-frame navigations to a new document
        # started (recent ones: a page starting one every 10 ms keeps ~0.3 s of them)
        self._started: OrderedDict[str, int] = OrderedDict()
        self._starts = 0
        self._dismissals: set[asyncio.Task[None]] = set()
        self._ordinals: dict[str, int] = {}
        # loader id -> lifecycle event names seen (bounded: recent documents only)
        self._lifecycle: OrderedDict[str, set[str]] = OrderedDict()
        self._wakeups: set[asyncio.Future[None]] = set()
        self._unsubscribe = link.subscribe(
            handle.session_id, lambda m, p: self._on_event(handle.session_id, m, p)
        )

    async def start(self) -> None:
        await self.send("Page.enable")
        await self.send("Page.setLifecycleEventsEnabled", {"enabled": True})
        await self._observe(self.session_id)
        await self._enable_webmcp(self.session_id)
        tree = await self.send("Page.getFrameTree")
        self._record_frames(tree["frameTree"], self.session_id)
        await self.send("Target.setAutoAttach", self.auto_attach_params())

    async def _observe(self, session_id: str, timeout: float = 30.0) -> None:
        """Enable the domains that fill the console and network buffers."""
        for method, params in OBSERVED_DOMAINS:
            await self.send(method, params, session_id=session_id, timeout=timeout)

    async def _enable_webmcp(self, session_id: str, timeout: float = 30.0) -> None:
        """WebMCP tool events from the start: a later `enable` misses same-origin iframes'."""
        try:
            await self.send("WebMCP.enable", session_id=session_id, timeout=timeout)
        except CdpError as e:  # a browser without WebMCP: no page tools, nothing else lost
            log.info("WebMCP.enable on %s: %s", session_id, e)

    def _record_frames(self, node: dict[str, Any], session_id: str) -> None:
        frame = node["frame"]
        self.frames[frame["id"]] = frame["loaderId"]
        self.frame_session[frame["id"]] = session_id
        if not frame.get("parentId") and session_id == self.session_id:
            self.main_frame_id = frame["id"]
            self.url = frame.get("url", self.url)
        for child in node.get("childFrames", ()):
            self._record_frames(child, session_id)

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      session_id: str | None = None) -> asyncio.Future[dict[str, Any]]:
        """Send a command in this tab (its page's session unless told); return its
        answer's future, failed early if the page goes away or opens a dialog (`send`
        then raises `DialogOpened`: a page blocked on alert/confirm/prompt/beforeunload
        answers nothing until the dialog is handled, so waiting would hang the call)."""
        if self.gone:
            raise TabGone(self.gone)
        blocked = method.startswith(_PAGE_ANSWERS)
        if blocked and self.dialog is not None:  # opened since the call began: it would hang
            raise DialogOpened(self.dialog)
        seq = self.dialog_seq
        reply = await self.link.request(method, params, session_id=session_id or self.session_id)
        self._in_flight.add(reply)
        reply.add_done_callback(self._in_flight.discard)
        if blocked and self.dialog_seq != seq and not reply.done():  # opened as it went out
            reply.set_exception(DialogOpened(self.dialog or {}))
            reply.exception()  # retrieved here if nobody is left to await it
        return reply

    async def send_sequence(self, commands: list[Command], *,
                            timeout: float) -> list[dict[str, Any]]:
        """Run commands in order in this tab through a link that `relays_sequences`: one
        round trip in all. If the call ends early (a dialog, its deadline, a cancel), the
        commands not yet sent are not sent."""
        if self.gone:
            raise TabGone(self.gone)
        # Only called when `self.link.relays_sequences`: such a link is a SequenceRelay.
        relay = cast(SequenceRelay, self.link)
        pending = await relay.request_sequence(commands, session_id=self.session_id)
        self._in_flight.add(pending.reply)
        try:
            what = f"{commands[0].method} and {len(commands) - 1} more"
            return await await_reply(what, pending.reply, timeout)
        finally:
            self._in_flight.discard(pending.reply)
            await pending.abort()

    def _fail_in_flight(self, error: Exception) -> None:
        """The page can't answer what is pending (a dialog blocks it, it crashed, it closed)."""
        for reply in list(self._in_flight):
            if not reply.done():
                reply.set_exception(error)
                reply.exception()  # retrieved here if nobody is left to await it

    def session_for_frame(self, frame_id: str) -> str:
        return self.frame_session.get(frame_id, self.session_id)

    def child_by_frame(self, frame_id: str) -> ChildSession | None:
        """The child session whose root frame this is (an out-of-process iframe)."""
        for child in self.children.values():
            if child.target_id == frame_id:
                return child
        return None

    def frame_ordinal(self, frame_id: str) -> int:
        """A small, stable number for a frame of this tab (0 = main): prefixes its refs."""
        if frame_id == self.main_frame_id:
            return 0
        return self._ordinals.setdefault(frame_id, len(self._ordinals) + 1)

    # -- out-of-process iframes --------------------------------------------------------

    async def release(self) -> None:
        """A held popup runs now (its first navigation goes out, intercepted)."""
        held, self.held = self.held, None
        if held is not None:
            await held()

    def auto_attach_params(self) -> dict[str, Any]:
        return {"autoAttach": True, "waitForDebuggerOnStart": self.pause_children,
                "flatten": True}

    def _child_attached(self, parent_session: str, params: dict[str, Any]) -> None:
        info = params.get("targetInfo", {})
        if info.get("type") != "iframe":
            self._worker_attached(params)
            return
        sid = params["sessionId"]
        unsubscribe = self.link.subscribe(sid, lambda m, p: self._on_event(sid, m, p))
        self.children[sid] = ChildSession(sid, info["targetId"], info.get("url", ""),
                                          parent_session, unsubscribe)
        task = asyncio.get_running_loop().create_task(
            self._start_child(sid, bool(params.get("waitingForDebugger"))))
        self.starting.add(task)
        task.add_done_callback(self.starting.discard)

    def _worker_attached(self, params: dict[str, Any]) -> None:
        sid = params.get("sessionId")
        kind = params.get("targetInfo", {}).get("type", "")
        waiting = bool(params.get("waitingForDebugger"))
        if not sid:
            return
        worker = kind.endswith("worker")
        if worker:
            self.workers[sid] = self.link.subscribe(sid, lambda m, p: self._on_event(sid, m, p))
        elif not waiting:
            return
        task = asyncio.get_running_loop().create_task(self._start_worker(sid, worker, waiting))
        self.starting.add(task)
        task.add_done_callback(self.starting.discard)

    async def _start_worker(self, sid: str, worker: bool, waiting: bool) -> None:
        """A worker: interception (`child_setup`) first, then, if Chromium paused it for
        us, it runs. Another kind of target that was paused just runs."""
        try:
            if worker:
                for step in list(self.child_setup):
                    await step(sid)
        except (LinkError, TabGone, TimeoutError) as e:
            log.info("worker session %s: %s", sid, e)
        if waiting:
            try:
                await self.send("Runtime.runIfWaitingForDebugger", session_id=sid, timeout=10)
            except (LinkError, TabGone, TimeoutError) as e:
                log.info("resuming %s: %s", sid, e)

    async def _start_child(self, sid: str, waiting: bool = False) -> None:
        try:
            await self.send("Page.enable", session_id=sid, timeout=10)
            await self.send("Page.setLifecycleEventsEnabled", {"enabled": True},
                            session_id=sid, timeout=10)
            await self._observe(sid, timeout=10)
            for setup in list(self.child_setup):
                await setup(sid)
            await self._enable_webmcp(sid, timeout=10)
            tree = await self.send("Page.getFrameTree", session_id=sid, timeout=10)
            self._record_frames(tree["frameTree"], sid)
            await self.send("Target.setAutoAttach", self.auto_attach_params(),
                            session_id=sid, timeout=10)
        except (LinkError, TabGone, TimeoutError) as e:
            log.info("iframe session %s: %s", sid, e)
        if waiting:  # set up: now it may load
            try:
                await self.send("Runtime.runIfWaitingForDebugger", session_id=sid, timeout=10)
            except (LinkError, TabGone, TimeoutError) as e:
                log.info("resuming iframe session %s: %s", sid, e)
        self._wake()

    def _child_detached(self, params: dict[str, Any]) -> None:
        unsubscribe = self.workers.pop(params.get("sessionId", ""), None)
        if unsubscribe is not None:
            unsubscribe()
        child = self.children.pop(params.get("sessionId", ""), None)
        if child is not None:
            child.unsubscribe()

    # -- events ----------------------------------------------------------------------

    def _on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "Page.lifecycleEvent":
            seen = self._lifecycle.setdefault(params["loaderId"], set())
            seen.add(params["name"])
            while len(self._lifecycle) > 32:
                self._lifecycle.popitem(last=False)
        elif method == "Page.frameNavigated":
            self._frame_navigated(session_id, params)
        elif method in _NAVIGATION_REQUESTED:
            if params.get("frameId") == self.main_frame_id:
                self.navigation_requests += 1
                if method != "Page.frameStartedNavigating":  # the page's own asking
                    self._page_requests += 1
                elif params.get("loaderId") and \
                        params.get("navigationType") not in _SAME_DOCUMENT:
                    self._starts += 1  # a new document's: it may commit, now or later
                    self._started[params["loaderId"]] = self._starts
                    while len(self._started) > 32:
                        self._started.popitem(last=False)
        elif method == "Page.navigatedWithinDocument":
            if params.get("frameId") == self.main_frame_id:
                self.url = params.get("url", self.url)
                self.navigations += 1
        elif method == "Page.frameDetached":
            if params.get("reason") != "swap":
                self.frames.pop(params["frameId"], None)
        elif method == "Page.windowOpen" and session_id == self.session_id:
            self.popups_requested += 1
        elif method == "Page.javascriptDialogOpening" and self._dismissing(params):
            self.document_dialogs += 1
            self._dismiss(session_id, params)
        elif method == "Page.javascriptDialogOpening":
            self.document_dialogs += 1
            self.dialog = {k: params.get(k) for k in ("type", "message", "defaultPrompt", "url")}
            self.dialog_session = session_id
            self.dialog_seq += 1
            self._fail_in_flight(DialogOpened(self.dialog))
        elif method == "Page.javascriptDialogClosed":
            self.dialog = None
        elif method == "Input.dragIntercepted":
            self.drag_data = params.get("data")
        elif method == "Target.attachedToTarget":
            self._child_attached(session_id, params)
        elif method == "Target.detachedFromTarget":
            self._child_detached(params)
        elif method == "Page.frameStartedLoading" and params.get("frameId") == self.main_frame_id:
            self.main_loads_started += 1
        elif method == "Page.frameStoppedLoading" and params.get("frameId") == self.main_frame_id:
            self.main_loads_stopped += 1
        elif method.startswith("Runtime.executionContext"):
            self._track_main_world(session_id, method, params)
        elif method == "Inspector.targetCrashed" and session_id == self.session_id:
            self.mark_crashed()
        elif method == "Inspector.detached" and session_id == self.session_id:
            self.gone = f"the tab was detached ({params.get('reason', 'unknown')})"
        for listener in list(self.listeners):
            try:
                listener(session_id, method, params)
            except Exception:
                log.exception("tab listener failed on %s", method)
        self._wake()

    def _track_main_world(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.executionContextCreated":
            context = params.get("context") or {}
            aux = context.get("auxData") or {}
            if aux.get("isDefault") and aux.get("frameId"):
                self.main_worlds[aux["frameId"]] = context["id"]
        elif method == "Runtime.executionContextDestroyed":
            gone = params.get("executionContextId")
            for frame_id in [f for f, c in self.main_worlds.items() if c == gone and
                             self.frame_session.get(f, self.session_id) == session_id]:
                del self.main_worlds[frame_id]
        elif method == "Runtime.executionContextsCleared":
            for frame_id in [f for f in self.main_worlds
                             if self.frame_session.get(f, self.session_id) == session_id]:
                del self.main_worlds[frame_id]

    def _frame_navigated(self, session_id: str, params: dict[str, Any]) -> None:
        frame = params["frame"]
        self.frames[frame["id"]] = frame["loaderId"]
        self.frame_session[frame["id"]] = session_id
        seen = self._lifecycle.setdefault(frame["loaderId"], set())
        seen.add("commit")
        if params.get("type") == "BackForwardCacheRestore":
            seen.update(("DOMContentLoaded", "load"))  # restored pages fire no load
        if not frame.get("parentId") and session_id == self.session_id:
            self.main_frame_id = frame["id"]
            self.url = frame.get("url", "")
            self.navigations += 1
            self._commits += 1
            self._at_commit[frame["loaderId"]] = (self._page_requests, self._starts,
                                                  self._commits)
            self._at_commit.move_to_end(frame["loaderId"])  # a page back from the cache
            while len(self._at_commit) > 32:
                self._at_commit.popitem(last=False)
            self.document_dialogs = 0
            self.crashed = None  # a new document: the renderer is back

    # -- dialogs of a page being left ----------------------------------------------------

    def leave_dialogs(self) -> list[dict[str, Any]]:
        """Until the main frame commits its next document, dismiss the alerts, confirms
        and prompts of the page being left, as they open, instead of stopping on them (a
        page opening one every few ms would otherwise never let a navigation commit).
        The one open now is dismissed too. Returns the list they are noted in (type and
        message, the first few; `dialogs_left` counts them all). beforeunload dialogs
        are never answered this way: they ask whether to leave."""
        self._leaving = (self.navigations, [])
        self.dialogs_left = 0
        if self.dialog is not None and self.dialog.get("type") != "beforeunload":
            self._dismiss(self.dialog_session or self.session_id, self.dialog)
            self.dialog = None
        return self._leaving[1]

    def stop_leaving(self) -> None:
        self._leaving = None

    def _dismissing(self, params: dict[str, Any]) -> bool:
        return (self._leaving is not None and self._leaving[0] == self.navigations
                and params.get("type") != "beforeunload")

    def _dismiss(self, session_id: str, dialog: dict[str, Any]) -> None:
        assert self._leaving is not None
        self.dialogs_left += 1
        if len(self._leaving[1]) < 3:
            self._leaving[1].append({k: dialog.get(k) for k in ("type", "message")})
        task = asyncio.get_running_loop().create_task(self._dismiss_now(session_id))
        self._dismissals.add(task)  # kept referenced until done
        task.add_done_callback(self._dismissals.discard)

    async def _dismiss_now(self, session_id: str) -> None:
        try:
            await self.send("Page.handleJavaScriptDialog", {"accept": False},
                            session_id=session_id, timeout=5.0)
        except (LinkError, TabGone, TimeoutError) as e:
            log.info("dismissing a dialog of the page being left: %s", e)

    def mark_changed(self) -> None:
        """Something outside the tab's own events changed state its waiters look at."""
        self._wake()

    def mark_crashed(self) -> None:
        if not self.crashed:
            self.crashed = self._crash_reason or "the tab's renderer crashed"
            self._crash_reason = None
            self.crash_seq += 1
            self._fail_in_flight(TabCrashed(self.crashed))
        self._wake()

    async def busy(self, within: float, session_id: str | None = None) -> bool:
        """True if the page's main thread does not answer a trivial evaluation in
        `within` seconds: it is running script (or hung)."""
        probe = await self.request("Runtime.evaluate", {"expression": "0"},
                                   session_id=session_id)
        # Shielded: its late failure (a link that died meanwhile) is retrieved, not logged.
        probe.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            await asyncio.wait_for(asyncio.shield(probe), within)
            return False
        except TimeoutError:
            return True
        except (CdpError, DialogOpened):  # a dialog blocks it, not script
            return False

    async def crash_hung(self, timeout: float) -> None:
        """End a renderer that answers nothing, not even `Runtime.terminateExecution` (a
        hang outside script, e.g. chrome://hang): `Page.crash` is carried out by the
        browser process, so it works where the renderer can't listen. The tab is then
        crashed like any other (`crashed` says why): a navigation brings it back in a
        new renderer. `Page.crash` never answers; the crash event is what is awaited."""
        if self.crashed:
            return
        self._crash_reason = HUNG
        reply = await self.request("Page.crash")
        reply.add_done_callback(lambda f: f.cancelled() or f.exception())
        await self.until(lambda: self.crashed, timeout)

    def mark_gone(self, reason: str) -> None:
        if not self.gone:
            self.gone = reason
            self._fail_in_flight(TabGone(reason))
        self._wake()

    def _wake(self) -> None:
        for fut in self._wakeups:
            if not fut.done():
                fut.set_result(None)
        self._wakeups.clear()

    async def until(self, condition: Callable[[], Any], timeout: float) -> Any:
        """Wait until `condition()` is truthy, re-checking after each event of this tab.

        A dialog opening meanwhile raises `DialogOpened`: the page is blocked on it.
        """
        seq, crashes = self.dialog_seq, self.crash_seq
        async with asyncio.timeout(timeout):
            while True:
                value = condition()
                if value:
                    return value
                if self.dialog_seq != seq:
                    raise DialogOpened(self.dialog or {})
                if self.crash_seq != crashes:
                    raise TabCrashed(self.crashed or "the tab's renderer crashed")
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

    def committed(self, loader_id: str) -> bool:
        """The main frame's document `loader_id` committed (it may be gone since)."""
        return loader_id in self._at_commit

    def navigated_on(self, loader_id: str) -> bool:
        """The main frame's document `loader_id` asked for a navigation after it
        committed (its own: a script, a form, a refresh)."""
        return self._page_requests > self.requests_at_commit(loader_id)

    @property
    def page_requests(self) -> int:
        """Main-frame navigations the pages asked for themselves so far."""
        return self._page_requests

    def requests_at_commit(self, loader_id: str) -> int:
        """`page_requests` when the main frame's document `loader_id` committed."""
        at = self._at_commit.get(loader_id)
        return self._page_requests if at is None else at[0]

    @property
    def main_starts(self) -> int:
        """Main-frame navigations to a new document started so far
        (`Page.frameStartedNavigating`)."""
        return self._starts

    def rivals(self, since: int, loader_id: str, ours: Collection[str]) -> list[str]:
        """Main-frame navigations not in `ours` that started after `since` (`main_starts`
        then) and had not committed when the document `loader_id` did. Chromium can
        commit one of them after it (one queued behind a committing navigation), and the
        page may not have said it asked for it (no `frameRequestedNavigation`)."""
        _, starts, commit = self._at_commit.get(loader_id, (0, self._starts, self._commits + 1))

        def committed_before(other: str) -> bool:
            at = self._at_commit.get(other)
            return at is not None and at[2] < commit

        return [other for other, n in self._started.items()
                if since < n <= starts and other not in ours and not committed_before(other)]

    @property
    def main_commits(self) -> int:
        """Main-frame documents committed so far (same-document navigations aside)."""
        return self._commits

    def reached(self, loader_id: str, wait_until: str) -> bool:
        return _LIFECYCLE[wait_until] in self._lifecycle.get(loader_id, ())

    def main_loader(self) -> str | None:
        return self.frames.get(self.main_frame_id or "")

    def close(self) -> None:
        self._unsubscribe()
        for child in self.children.values():
            child.unsubscribe()
        self.children.clear()
        for unsubscribe in self.workers.values():
            unsubscribe()
        self.workers.clear()
        self.mark_gone("the tab was closed")
