"""Watching what an action does to the page, for `result.effects` (docs/outcomes.md, "Effects").

Every tool that acts on a page (`catalog.ACTING_TOOLS`) runs between `begin` and `observe`
(handlers.py wraps it). `begin`, just before the handler, opens a window in every frame of
the current tab — out-of-process iframes too — through tools/effects.js in BrowserSkill's
isolated world, and notes the tab's counters (navigations, requests, new tabs). `observe`,
once the handler has returned, waits until the page settles — no DOM mutation in any
frame and no request started or ended for the quiet window — bounded by
`effects.bound_ms` and the call's own deadline, never past it; then the pure
`browserskill.base.effects.summarize` turns what was seen into the report. Watching never
changes the call's outcome: a frame that can't be read is listed as unobserved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserskill.base import effects as summary
from browserskill.base.errors import BskError
from browserskill.browser.link import CdpError, CommandTimeout, LinkError
from browserskill.browser.tab import DialogOpened, Tab, TabGone
from browserskill.session.sessions import RefBinding
from browserskill.tools import webmcp_client as webmcp
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import isolated_world
from browserskill.tools.registry import Handler
from browserskill.tools.roles import ACTIONABLE, REF_ROLES
from browserskill.tools.snapshot import _SCRIPT as SNAPSHOT_SCRIPT

log = logging.getLogger(__name__)

_SCRIPT = Path(__file__).with_name("effects.js").read_text()
MAX_FRAMES = 20  # frames watched per action (the main frame and the first iframes)
# Leave this much of the call's deadline for answering: watching never makes it late.
ANSWER_MARGIN_S = 0.3
# Reading a frame's report takes a round trip or two; beyond this it is not answering.
READ_SLACK_S = 0.5
# Tools that write into the element they act on (mutations inside it are the input's).
_EDITING = frozenset({"fill", "type", "press"})


@dataclass
class Window:
    """An action's watch: the tab's counters at its start, and the frames watched."""

    tool: str
    tab: Tab
    quiet_ms: int
    started: float  # loop time
    navigations: int
    commits: int
    url: str
    requests: int
    dialogs: int
    console: int  # the console buffer's cursor: uncaught errors after it are the window's
    frames: dict[str, str] = field(default_factory=dict)  # frame id -> loader id
    has_snap: dict[str, bool] = field(default_factory=dict)
    target_ref: str | None = None
    blocked: bool = False  # begun while a dialog blocked the page: nothing was reset
    # How long a page that has not reacted is watched: the default's short reaction
    # window, or all of an explicit --settle MS.
    reaction_ms: int = summary.REACTION_MS
    unwatched: list[str] = field(default_factory=list)  # why some frame was not watched


def quiet_ms(params: dict[str, Any]) -> int:
    settle = params.get("settle")
    return summary.QUIET_MS if settle is None else int(settle)


async def begin(ctx: ToolContext, tool: str, params: dict[str, Any]) -> Window | None:
    """Open the watch in every frame of the current tab; None when not watching."""
    quiet = quiet_ms(params)
    tab = ctx.session.tab() if ctx.session.current_tab_id else None
    if tool == "webmcp_invoke" and quiet:  # the tool's own tab, which may not be current
        await webmcp.settle(webmcp.live_tabs(ctx.session),
                            min(webmcp.SETTLE_S, ctx.remaining()))
        try:
            tab = webmcp.resolve(ctx.session, params["tool"]).tab
        except BskError:
            return None  # the handler says why, at once
    if quiet == 0 or tab is None or tab.gone or tab.crashed:
        return None
    loop = asyncio.get_running_loop()
    window = Window(tool, tab, quiet, loop.time(), tab.navigations, tab.main_commits,
                    tab.url, tab.buffers.requests_seen, tab.dialog_seq, tab.buffers.console.seq)
    if params.get("settle") is not None:
        window.reaction_ms = quiet
    ref = params.get("ref") if tool not in ("scroll",) else None
    window.target_ref = ref if isinstance(ref, str) else None
    if tab.dialog is not None or tool in summary.NAVIGATES:
        # Blocked by a dialog: the watch of the action that opened it goes on (effects.js
        # keeps its window until the next begin), read once the dialog is answered.
        # A navigation: the new document is the effect.
        if tab.dialog is not None:
            window.blocked = True
            window.frames = dict(tab.frames)
            window.has_snap = {f: False for f in tab.frames}
        return window
    options = {"targetRef": window.target_ref, "editing": tool in _EDITING,
               "targetFocused": tool in ("type", "press") and not window.target_ref}
    frames = [f for f in tab.frames if f == tab.main_frame_id][:1] + \
        [f for f in tab.frames if f != tab.main_frame_id][:MAX_FRAMES - 1]

    async def one(frame_id: str) -> None:
        loader = tab.frames.get(frame_id, "")
        try:
            world = await isolated_world(ctx, tab, frame_id)
            answer = await tab.send("Runtime.evaluate", {
                "expression": f"{_SCRIPT}.begin({json.dumps(options)})",
                "contextId": world, "returnByValue": True},
                session_id=tab.session_for_frame(frame_id),
                timeout=min(READ_SLACK_S, ctx.remaining()))
        except (CommandTimeout, TimeoutError):
            window.unwatched.append("the page did not answer" if frame_id == tab.main_frame_id
                                    else "a frame did not answer")
            return
        except (CdpError, DialogOpened, TabGone, LinkError):
            return  # the frame went away meanwhile: nothing of it to watch
        value = answer.get("result", {}).get("value")
        if isinstance(value, dict):
            window.frames[frame_id] = loader
            window.has_snap[frame_id] = bool(value.get("has_snap"))

    await asyncio.gather(*(one(f) for f in frames))
    return window


async def observe(ctx: ToolContext, window: Window, result: dict[str, Any] | None,
                  params: dict[str, Any], *, dialog: dict[str, Any] | None = None,
                  ) -> dict[str, Any]:
    """Wait for the page to settle (bounded), then report what changed since `begin`.
    Never fails the call: what could not be watched is said in `unobserved`."""
    try:
        return await _observe(ctx, window, result, params, dialog)
    except (CdpError, LinkError, TabGone, DialogOpened, TimeoutError) as e:
        log.info("effects of %s: %s", window.tool, e)
        return {"unobserved": [f"the page could not be read ({e})"], "none": False,
                "settled": False}


async def _observe(ctx: ToolContext, window: Window, result: dict[str, Any] | None,
                   params: dict[str, Any], dialog: dict[str, Any] | None,
                   ) -> dict[str, Any]:
    tab = window.tab
    loop = asyncio.get_running_loop()
    quiet_s = window.quiet_ms / 1000
    deadline = min(window.started + summary.bound_ms(window.quiet_ms) / 1000,
                   loop.time() + max(0.0, ctx.remaining() - ANSWER_MARGIN_S))
    unobserved: list[str] = list(window.unwatched)
    if window.frames and ctx.remaining() <= ANSWER_MARGIN_S:
        unobserved.append("the call's deadline left no time to watch")
        window.frames = {}
    navigated_away = tab.main_commits != window.commits
    frames: dict[str, dict[str, Any]] = {}
    settled = True
    if window.tool in summary.NAVIGATES and params.get("settle") is not None \
            and not window.blocked:
        settled = await _navigation_settles(window, quiet_s, deadline)
    while window.frames:
        if tab.dialog is not None:
            unobserved.append("a dialog blocks the page")
            break
        if tab.main_commits != window.commits or tab.gone:
            break  # a new document: it is the effect; the old one's changes went with it
        frames = await _read_frames(ctx, window, quiet_s, deadline, unobserved)
        dom_quiet = all(f.get("quiet") for f in frames.values())
        if not dom_quiet or loop.time() >= deadline:
            settled = dom_quiet and _network_quiet(window, quiet_s)
            break
        if _network_quiet(window, quiet_s):
            break
        await _until_network_quiet(window, quiet_s, deadline)  # then the DOM again
    navigated_away = tab.main_commits != window.commits
    if dialog is None and tab.dialog_seq != window.dialogs:
        dialog = tab.dialog
    watched_ms = round((loop.time() - window.started) * 1000)
    navigation = None
    if tab.navigations != window.navigations:
        navigation = {"url": tab.url, "same_document": not navigated_away}
    ref_names = {ref: (b.role, b.name) for ref, b in ctx.session.refs.items()
                 if b.tab_id == tab.tab_id}
    effects = summary.summarize(
        window.tool, list(frames.values()), typed=params.get("text"),
        target_ref=window.target_ref, requests=_requests(window), navigation=navigation,
        new_tabs=(result or {}).get("new_tabs") or [], dialog=dialog,
        downloads=(result or {}).get("downloads") or [], ref_names=ref_names,
        unobserved=unobserved, page_errors=_page_errors(window), settled=settled,
        watched_ms=watched_ms, brief=window.reaction_ms < window.quiet_ms)
    if window.tool in summary.NAVIGATES and navigation is None and tab.url != window.url:
        effects["navigation"] = {"url": tab.url, "same_document": False}
        effects["none"] = False
    return effects


async def _read_frames(ctx: ToolContext, window: Window, quiet_s: float, deadline: float,
                       unobserved: list[str]) -> dict[str, dict[str, Any]]:
    """Each watched frame's report once it has been quiet for the window (or at the
    deadline); frames whose document went away since `begin` are left out."""
    tab = window.tab
    loop = asyncio.get_running_loop()
    budget_ms = max(0, round((deadline - loop.time()) * 1000))
    out: dict[str, dict[str, Any]] = {}

    async def one(frame_id: str, loader: str) -> None:
        if tab.frames.get(frame_id) != loader:
            return  # navigated: its old document's changes are gone with it
        sid = tab.session_for_frame(frame_id)
        prefix = "" if frame_id == tab.main_frame_id else f"f{tab.frame_ordinal(frame_id)}"
        options = {"quietMs": round(quiet_s * 1000), "budgetMs": budget_ms,
                   "reactionMs": window.reaction_ms,
                   "active": _reacted(window),
                   "snapOptions": {"prefix": prefix, "next": ctx.session.ref_seq + 1,
                                   "refRoles": sorted(REF_ROLES),
                                   "actionable": sorted(ACTIONABLE)}}
        world = tab.worlds.get((frame_id, loader))
        if world is None:
            return
        install = "" if window.has_snap.get(frame_id) else \
            f"globalThis.__bskSnap = globalThis.__bskSnap || ({SNAPSHOT_SCRIPT});\n"
        try:
            answer = await tab.send("Runtime.evaluate", {
                "expression": f"{install}{_SCRIPT}.settle({json.dumps(options)})",
                "contextId": world, "returnByValue": True, "awaitPromise": True},
                session_id=sid, timeout=max(0.05, min(budget_ms / 1000 + READ_SLACK_S,
                                                      ctx.remaining() - 0.1)))
        except DialogOpened:
            unobserved.append("a dialog blocks the page")
            return
        except (CommandTimeout, TimeoutError, CdpError, TabGone, LinkError):
            if tab.frames.get(frame_id) == loader:
                unobserved.append("a frame did not answer" if frame_id != tab.main_frame_id
                                  else "the page did not answer")
            return
        window.has_snap[frame_id] = True
        value = answer.get("result", {}).get("value")
        if not isinstance(value, dict):
            return
        if value.get("no_window"):
            if window.blocked:  # no action's watch was open when the dialog came
                unobserved.append("the page was not watched before the dialog")
            return
        _bind_new_refs(ctx, tab, frame_id, loader, value)
        out[frame_id] = value

    await asyncio.gather(*(one(f, loader) for f, loader in window.frames.items()))
    return out


def _bind_new_refs(ctx: ToolContext, tab: Tab, frame_id: str, loader: str,
                   value: dict[str, Any]) -> None:
    """Elements that appeared or moved got refs in the page (as a snapshot gives them):
    bind them."""
    session = ctx.session
    for item in [*(value.get("appeared") or ()), *(value.get("moved") or ())]:
        if isinstance(item, list) and len(item) >= 3 and item[2] and item[2] not in session.refs:
            session.refs[item[2]] = RefBinding(tab.tab_id, frame_id, loader, item[0], item[1])
    if isinstance(value.get("next"), int):
        session.ref_seq = max(session.ref_seq, value["next"] - 1)


def _reacted(window: Window) -> bool:
    """The tab did something the DOM does not show: a request, a navigation, a dialog."""
    tab = window.tab
    return (tab.buffers.requests_seen != window.requests or tab.navigations !=
            window.navigations or tab.dialog_seq != window.dialogs)


def _page_errors(window: Window) -> list[str]:
    """Uncaught exceptions thrown in the page during the window, first line of each."""
    entries = window.tab.buffers.console.read(window.console, 10)["entries"]
    return [str(e.get("text", "")).split("\n")[0] for e in entries
            if e.get("source") == "exception"]


def _of_window(window: Window, entry: dict[str, Any]) -> bool:
    """A request started since `begin` that went to a server: a `data:` or `blob:` URL
    (a stylesheet's inline icon) is read from the page itself, not an effect to report."""
    rid = str(entry.get("id", ""))
    return rid[1:].isdigit() and int(rid[1:]) > window.requests and \
        not str(entry.get("url", "")).startswith(("data:", "blob:"))


def _window_requests(window: Window) -> dict[str, dict[str, Any]]:
    """The window's requests, each in its latest state, by id."""
    return {str(entry["id"]): entry for entry in window.tab.buffers.network.entries()
            if _of_window(window, entry) and entry.get("state") != "redirected"}


def _requests(window: Window) -> list[dict[str, Any]]:
    """The window's requests in the order they started, each redirect hop as its own (a
    form's `POST /login 302` before the `GET /home 200` it led to)."""
    seen = [entry for entry in window.tab.buffers.network.entries()
            if _of_window(window, entry)]
    return sorted(seen, key=lambda e: (int(e["id"][1:]), e.get("state") != "redirected",
                                       e.get("_start") or 0))


def _network_quiet(window: Window, quiet_s: float) -> bool:
    """No request of the window in flight, and none started or ended for `quiet_s`."""
    buffers = window.tab.buffers
    if any(e.get("state") == "pending" for e in _window_requests(window).values()):
        return False
    if buffers.requests_seen == window.requests:
        return True  # nothing was asked of the network at all
    return time.monotonic() - buffers.last_network_activity >= quiet_s


async def _until_network_quiet(window: Window, quiet_s: float, deadline: float) -> None:
    loop = asyncio.get_running_loop()
    tab = window.tab
    while not _network_quiet(window, quiet_s):
        left = deadline - loop.time()
        if left <= 0:
            return
        pending = any(e.get("state") == "pending" for e in _window_requests(window).values())
        try:
            if pending:  # woken by the tab's events: a response, a finish
                await tab.until(lambda: not any(
                    e.get("state") == "pending" for e in _window_requests(window).values()),
                    left)
            else:  # the quiet window after the last request ended
                gap = quiet_s - (time.monotonic() - tab.buffers.last_network_activity)
                await asyncio.sleep(max(0.005, min(gap, left)))
        except (TimeoutError, DialogOpened, TabGone):
            return


async def _navigation_settles(window: Window, quiet_s: float, deadline: float) -> bool:
    """A navigation's explicit `--settle`: watch the page it loaded until, for `quiet_s`,
    no request is in flight and the main frame neither asks for nor commits another
    document (a redirect the page makes after its load is then seen, and reported).
    False if the deadline came first."""
    loop = asyncio.get_running_loop()
    while True:
        await _until_network_quiet(window, quiet_s, deadline)
        left = deadline - loop.time()
        if left <= 0:
            return False
        try:
            moved = await _navigates_within(window.tab, min(quiet_s, left))
        except (DialogOpened, TabGone):
            return False  # the report says the dialog, or that the tab is gone
        if not moved and _network_quiet(window, quiet_s):
            return True


async def _navigates_within(tab: Tab, timeout: float) -> bool:
    """Does the main frame ask for or commit a document within `timeout`?"""
    mark = (tab.navigation_requests, tab.main_commits)
    try:
        await tab.until(lambda: (tab.navigation_requests, tab.main_commits) != mark, timeout)
    except TimeoutError:
        return False
    return True


# Tools that send no input when the element is already as asked (`check` on a checked
# box): there is nothing to watch, and "nothing changed at once" would read as if it had.
_SENDS_NOTHING_UNCHANGED = frozenset({"check", "uncheck"})


def watched(name: str, fn: Handler) -> Handler:
    """The handler, watched (tools/call_hooks.py): its result gets `effects`, what the
    page was seen to do. A dialog that ends the action carries them to the dispatcher."""

    async def run(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
        window = await begin(ctx, name, params)
        try:
            result = await fn(ctx, params)
        except DialogOpened as e:
            if window is not None:
                e.effects = await observe(ctx, window, None, params, dialog=e.dialog)
            raise
        if window is not None and isinstance(result, dict) and not (
                name in _SENDS_NOTHING_UNCHANGED and result.get("changed") is False):
            result["effects"] = await observe(ctx, window, result, params)
            _as_left(result)
        return result

    return run


def _as_left(result: dict[str, Any]) -> None:
    """The target's state (`element`, read as the input ended) as the watch last saw it:
    a widget that opens a frame later (tom-select) must not be called closed beside an
    effect saying it opened."""
    element, ref = result.get("element"), result.get("ref")
    dom = (result.get("effects") or {}).get("dom") or {}
    if not isinstance(element, dict):
        return
    for st in dom.get("states") or ():
        if st.get("ref") != ref:
            continue
        for key, (_, after) in st.get("changed", {}).items():
            if key in element:
                element[key] = after == "true" if isinstance(after, str) else bool(after)
