"""Browser-native pointer input — click, dblclick, hover, drag, scroll — sent as recorded steps.

Each step is recorded before it is sent, so an interrupted action can say exactly which
steps may have reached Chrome. A pressed button has a compensation that releases it.
After the input, the result waits only for what the input started: a main-frame
navigation, or new tabs the page opened.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from browserskill.base.catalog.input import (
    ClickParams,
    DblclickParams,
    DragParams,
    HoverParams,
    ScrollParams,
)
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import CdpError, Command
from browserskill.browser.tab import Tab
from browserskill.session.sessions import MAX_POPUPS_PER_ACTION
from browserskill.tools import downloads
from browserskill.tools.context import Step, ToolContext
from browserskill.tools.navigation import error_page, wait_for_document
from browserskill.tools.pointer import HoverPoint, Pointer, point_for
from browserskill.tools.refs import call_answer, call_on, call_request, resolve
from browserskill.tools.registry import implements

MODIFIERS = {"Alt": 1, "Control": 2, "Ctrl": 2, "Meta": 4, "Command": 4, "Shift": 8}
BUTTONS = {"left": 1, "right": 2, "middle": 4}
# After a navigation that made no document, how long a download may take to announce
# itself (Chromium sends Page.downloadWillBegin just after the load stops).
NO_DOCUMENT_GRACE_S = 0.5
# A new window the page asked for (Page.windowOpen) has its target created right after
# (~10 ms); one with none by then was refused by Chromium's popup blocker.
POPUP_GRACE_S = 0.5


def modifier_mask(names: list[str] | None) -> int:
    mask = 0
    for name in names or []:
        for part in name.split("+"):
            key = part.strip().capitalize() if part.strip().lower() != "ctrl" else "Ctrl"
            if key not in MODIFIERS:
                raise invalid("modifiers", f"unknown modifier {part!r} "
                              "(use Alt, Control, Meta, Shift)")
            mask |= MODIFIERS[key]
    return mask


@dataclass
class Marks:
    """Counters before an input, to tell afterwards what the input started."""

    tab: Tab
    requested: int
    committed: int
    popups: int
    created: int
    taken: int
    adopted: int
    downloads: int
    loads_started: int
    loads_stopped: int
    navigations_blocked: int = 0

    @classmethod
    def take(cls, ctx: ToolContext, tab: Tab) -> Marks:
        tab.popup_base = tab.popups_created  # the popup bound counts from here
        return cls(tab, tab.navigation_requests, tab.navigations, tab.popups_requested,
                   tab.popups_created, tab.popups_taken,
                   len(ctx.session.popups_of(tab.tab_id)), downloads.count(ctx),
                   tab.main_loads_started, tab.main_loads_stopped,
                   tab.buffers.navigations_blocked)

    def load_ended_without_commit(self) -> bool:
        """A main-frame load began after the input and ended, and no document came."""
        tab = self.tab
        return (tab.navigations == self.committed and tab.main_loads_started > self.loads_started
                and tab.main_loads_stopped > self.loads_stopped)


async def after_input(ctx: ToolContext, marks: Marks, wait_until: str, *,
                      expect_download: bool = False) -> dict[str, Any]:
    """What the input started: new tabs, a navigation (loaded as far as `wait_until`), or
    downloads (a navigation that turns into a download never commits: it ends there)."""
    tab = marks.tab
    out: dict[str, Any] = {}

    def downloading() -> bool:
        return downloads.count(ctx) > marks.downloads

    wanted = tab.popups_requested - marks.popups
    if wanted > 0:
        out.update(await _new_tabs(ctx, marks))
    if tab.navigation_requests > marks.requested or tab.navigations > marks.committed:
        await tab.until(lambda: tab.navigations > marks.committed or downloading()
                        or marks.load_ended_without_commit(), ctx.remaining())
        if marks.load_ended_without_commit() and not downloading():
            # A download's own event comes right after its load stops: give it a moment.
            try:
                await tab.until(downloading, min(NO_DOCUMENT_GRACE_S, ctx.remaining()))
            except TimeoutError:
                out["note"] = ("the navigation it started ended without a new page "
                               "(no content, or it was cancelled)")
        if tab.navigations > marks.committed:
            loader = tab.main_loader()
            if loader and wait_until != "commit":
                out.update(await wait_for_document(ctx, tab, loader, wait_until))
            out["navigated"] = True
    if tab.buffers.navigations_blocked > marks.navigations_blocked:
        # The input was sent; the page it would have led to was refused, nothing sent.
        url, why = tab.buffers.last_navigation_blocked
        raise BskError("blocked_by_policy", f"the input was sent, and the navigation it "
                       f"started was refused: {url}: {why}",
                       hint="the person who started the daemon set this policy (`bsk policy "
                            "show`); the tab shows Chromium's error page: `bsk back`",
                       details={"url": url, "rule": why, **out}, dispatched=Dispatched.YES)
    if out.get("navigated") and (failed := error_page(tab)) is not None:
        # The input was sent; the page it led to did not load (as `open` says of it).
        raise BskError(
            failed.code, f"the input was sent, and the {failed.message}",
            hint=failed.hint + "; the tab shows Chromium's error page: `bsk back`",
            details={**out, **failed.details}, dispatched=Dispatched.YES)
    if expect_download or downloading():
        out["downloads"] = await downloads.settle(ctx, marks.downloads, expect=expect_download)
    out["url"] = tab.url
    return out


def _taken(marks: Marks, count: int) -> bool:
    """The session took `count` of the tabs the input opened (or failed to)."""
    return marks.tab.popups_taken - marks.taken >= count


async def _new_tabs(ctx: ToolContext, marks: Marks) -> dict[str, Any]:
    """The tabs the input opened, once the session took each one Chromium made, and how
    many the popup blocker refused. Past `MAX_POPUPS_PER_ACTION` the session closes new
    tabs as they come. (Where popups are allowed, a page's loop of window.open keeps its
    renderer busy until it ends, ~40 ms a window, and no `terminateExecution` stops it
    while it waits for each new window: the first new tabs, sharing that renderer, are
    set up only then.)"""
    tab = marks.tab

    def created() -> int:
        return tab.popups_created - marks.created

    def storm() -> bool:
        return created() > MAX_POPUPS_PER_ACTION

    while True:
        asked = tab.popups_requested
        try:  # a window Chromium makes has its target right after its request
            await tab.until(lambda: created() >= tab.popups_requested - marks.popups
                            or storm(), min(POPUP_GRACE_S, ctx.remaining()))
        except TimeoutError:
            pass  # the rest were blocked
        await tab.until(functools.partial(_taken, marks, min(created(), MAX_POPUPS_PER_ACTION)),
                        ctx.remaining())
        if storm() or tab.popups_requested == asked:
            break  # past the bound, or the page asked for no more meanwhile
    wanted = tab.popups_requested - marks.popups
    out: dict[str, Any] = {"new_tabs": ctx.session.popups_of(tab.tab_id)[marks.adopted:]}
    blocked = 0 if storm() else max(0, wanted - created())
    if storm():
        out["popups_closed"] = created() - MAX_POPUPS_PER_ACTION
        out["popups_note"] = (
            f"the page kept opening new windows ({wanted} asked for so far): past "
            f"{MAX_POPUPS_PER_ACTION} per action they are closed as they come "
            f"({out['popups_closed']} so far)")
    elif blocked:
        out["popups_blocked"] = blocked
        out["popups_note"] = (f"the page asked for {wanted} new windows: "
                              f"{len(out['new_tabs'])} opened (new_tabs), {blocked} refused "
                              "by Chromium's popup blocker")
    return out


async def mouse(ctx: ToolContext, tab: Tab, step: str, x: float, y: float, **extra: Any) -> None:
    kind = {"move": "mouseMoved", "press": "mousePressed", "release": "mouseReleased",
            "wheel": "mouseWheel"}[step.split(":")[0]]
    await ctx.step(step if ":" in step else kind, "Input.dispatchMouseEvent",
                   {"type": kind, "x": x, "y": y, **extra}, tab=tab)


async def release_off_page(tab: Tab, button: str) -> None:
    """Compensation for a pressed button: release it off the page, so the button is no
    longer held but the element it was pressed on gets no click (Chromium then sends
    mouseup and click to <html>, the common ancestor, never to the pressed element)."""
    for kind in ("mouseMoved", "mouseReleased"):
        await tab.send("Input.dispatchMouseEvent",
                       {"type": kind, "x": -1, "y": -1, "button": button,
                        "buttons": BUTTONS[button] if kind == "mouseMoved" else 0,
                        "clickCount": 1}, timeout=2)


async def click_at(ctx: ToolContext, tab: Tab, x: float, y: float, *, button: str,
                   count: int, modifiers: int,
                   then: Command | None = None) -> dict[str, Any] | None:
    """Move there, press and release `count` times; a cancel mid-way releases the button
    off the page. The press goes out without waiting for the move's answer (which waits
    for the next frame; Chromium keeps input in order); each release only once its press
    was answered. Through the extension the steps travel as one sequence, one hop, and so
    does `then`, a read once the last release was answered (its answer is returned)."""
    base = {"button": button, "modifiers": modifiers}
    mouse = "Input.dispatchMouseEvent"
    steps = [Step("mouseMoved", Command(mouse, {"type": "mouseMoved", "x": x, "y": y,
                                               "modifiers": modifiers},
                                        answered_first=False))]
    for n in range(1, count + 1):
        steps.append(Step("mousePressed", Command(mouse, {
            "type": "mousePressed", "x": x, "y": y, "clickCount": n,
            "buttons": BUTTONS[button], **base})))
        steps.append(Step("mouseReleased", Command(mouse, {
            "type": "mouseReleased", "x": x, "y": y, "clickCount": n, **base})))

    async def release() -> None:
        await release_off_page(tab, button)

    held = ctx.on_cancel("mouse_released", release, undoes_effect=False,
                         after_step="mousePressed")
    answer = await ctx.steps(steps, tab=tab, then=then)
    ctx.settled(held)
    return answer


async def click_ref(ctx: ToolContext, ref: str, *, button: str = "left", count: int = 1,
                    modifiers: int = 0, wait_until: str = "load") -> dict[str, Any]:
    target = resolve(ctx, ref)
    tab = target.tab
    x, y = await point_for(ctx, target, enabled_only=True)
    marks = Marks.take(ctx, tab)
    # The element's state after the click is read right after the last release; in the
    # tab's own session that read rides along with the click's steps.
    read = Command("Runtime.evaluate", call_request(target, _STATE))
    own_session = target.session_id == tab.session_id
    answer = await click_at(ctx, tab, x, y, button=button, count=count, modifiers=modifiers,
                            then=read if own_session else None)
    if not own_session:
        try:
            answer = await ctx.inspect(read.method, read.params, tab=tab,
                                       session_id=target.session_id)
        except CdpError:
            answer = None
    ctx.feature(Pointer).hover = None  # the mouse is here now
    result: dict[str, Any] = {"ref": ref, "tab_id": tab.tab_id}
    if count > 1:
        result["count"] = count
    state = _state_after(target, answer) or {}
    download_link = bool(state.pop("download", False)) and button == "left"
    result.update(await after_input(ctx, marks, wait_until, expect_download=download_link))
    if state and "navigated" not in result:
        result["element"] = state
    return result


_STATE = """function() {
  const s = {};
  if (this.type === "checkbox" || this.type === "radio") s.checked = this.checked;
  if (this.getAttribute && this.getAttribute("aria-expanded") !== null)
    s.expanded = this.getAttribute("aria-expanded") === "true";
  if (this.getAttribute && this.getAttribute("aria-pressed") !== null)
    s.pressed = this.getAttribute("aria-pressed") === "true";
  // A link with a download attribute: its download is what the click started.
  if (this.closest && this.closest("a[download][href]")) s.download = true;
  return s;
}"""


def _state_after(target: Any, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the click left the element as; nothing if that could not be read."""
    if answer is None:
        return None
    try:
        state = call_answer(target, answer, acted=True, sent_before=True)
    except BskError as e:
        # The click replaced the element (a re-render) or its document: say so, no more.
        return {"removed": True} if e.details.get("reason") == "element_removed" else None
    return state if isinstance(state, dict) and state else None


@implements("click")
async def click(ctx: ToolContext, params: ClickParams) -> dict[str, Any]:
    if params["count"] > 3:
        raise invalid("count", "must be 1, 2 or 3")
    return await click_ref(ctx, params["ref"], button=params["button"], count=params["count"],
                           modifiers=modifier_mask(params["modifiers"]),
                           wait_until=params["wait_until"])


@implements("dblclick")
async def dblclick(ctx: ToolContext, params: DblclickParams) -> dict[str, Any]:
    return await click_ref(ctx, params["ref"], count=2,
                           modifiers=modifier_mask(params["modifiers"]),
                           wait_until=params["wait_until"])


@implements("hover")
async def hover(ctx: ToolContext, params: HoverParams) -> dict[str, Any]:
    target = resolve(ctx, params["ref"])
    x, y = await point_for(ctx, target)
    await mouse(ctx, target.tab, "move", x, y)
    ctx.feature(Pointer).hover = HoverPoint(target.tab.tab_id, params["ref"], x, y,
                                      target.tab.navigations)
    return {"ref": params["ref"], "tab_id": target.tab.tab_id, "x": x, "y": y}


async def restore_hover(ctx: ToolContext, tab: Tab) -> None:
    """Put the pointer back where `hover` left it, before a read that depends on it."""
    state = ctx.feature(Pointer).hover
    if state is None or state.tab_id != tab.tab_id:
        return
    if state.navigations != tab.navigations:
        ctx.feature(Pointer).hover = None  # a new document: the hovered element is gone
        return
    await ctx.inspect("Input.dispatchMouseEvent",
                      {"type": "mouseMoved", "x": state.x, "y": state.y}, tab=tab)


@implements("drag")
async def drag(ctx: ToolContext, params: DragParams) -> dict[str, Any]:
    source = resolve(ctx, params["source"])
    target = resolve(ctx, params["target"])
    tab = source.tab
    sx, sy = await point_for(ctx, source)
    tx, ty = await target_point(ctx, target)
    marks = Marks.take(ctx, tab)
    await tab.send("Input.setInterceptDrags", {"enabled": True}, timeout=ctx.remaining())
    try:
        await mouse(ctx, tab, "move", sx, sy)

        async def release() -> None:
            await release_off_page(tab, "left")

        held = ctx.on_cancel("mouse_released", release, undoes_effect=False)
        await mouse(ctx, tab, "press", sx, sy, button="left", buttons=1, clickCount=1)
        steps = 5
        for i in range(1, steps + 1):
            x, y = sx + (tx - sx) * i / steps, sy + (ty - sy) * i / steps
            await mouse(ctx, tab, "move", x, y, button="left", buttons=1)
        if tab.drag_data is not None:  # the page started an HTML5 drag: finish it as one
            data = tab.drag_data
            for kind in ("dragEnter", "dragOver", "drop"):
                await ctx.step(kind, "Input.dispatchDragEvent",
                               {"type": kind, "x": tx, "y": ty, "data": data}, tab=tab)
        await mouse(ctx, tab, "release", tx, ty, button="left", clickCount=1)
        ctx.settled(held)
    finally:
        tab.drag_data = None
        await tab.send("Input.setInterceptDrags", {"enabled": False}, timeout=2)
    ctx.feature(Pointer).hover = None
    result = {"source": params["source"], "target": params["target"], "tab_id": tab.tab_id}
    result.update(await after_input(ctx, marks, "load"))
    return result


async def target_point(ctx: ToolContext, target: Any) -> tuple[float, float]:
    """Drop point: the target's centre; being covered by the dragged thing is fine."""
    try:
        return await point_for(ctx, target)
    except BskError as e:
        if e.details.get("reason") != "covered":
            raise
    from browserskill.tools.pointer import frame_origin

    box = await call_on(ctx, target, "function(){const r=this.getBoundingClientRect();"
                        "return {x: r.left + r.width/2, y: r.top + r.height/2}}")
    ox, oy = await frame_origin(ctx, target.tab, target.binding.frame_id)
    assert isinstance(box, dict)
    return box["x"] + ox, box["y"] + oy


_SCROLL_POS = """function() {
  const el = this === window || this === document ? document.scrollingElement : this;
  return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() =>
    r({x: el.scrollLeft, y: el.scrollTop, max_y: el.scrollHeight - el.clientHeight}))));
}"""


# A wheel over an element scrolls the nearest box around it that can still move that way
# (a grid's viewport, a list, the page), not the element itself. Before it: the
# element's chain of boxes (up through shadow roots, to the page) with their positions,
# kept on the element in BrowserSkill's isolated world (the page never sees it); after:
# the innermost box that moved is the one reported, or, if none moved (already at the
# end), the innermost that can scroll.
_SCROLL_CHAIN = """function() {
  const chain = [];
  for (let n = this; n; n = n.parentElement
       || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null))
    chain.push([n, n.scrollLeft, n.scrollTop]);
  const page = document.scrollingElement;
  if (page && !chain.some(c => c[0] === page)) chain.push([page, page.scrollLeft, page.scrollTop]);
  this[Symbol.for('bsk.scrollChain')] = chain;
}"""
_SCROLL_MOVED = """function() {
  const key = Symbol.for('bsk.scrollChain'), chain = this[key] || [[this, 0, 0]];
  delete this[key];
  const page = document.scrollingElement;
  const scrolls = n => {
    if (n === page) return true;
    const s = getComputedStyle(n);
    return (n.scrollHeight > n.clientHeight && /auto|scroll/.test(s.overflowY))
      || (n.scrollWidth > n.clientWidth && /auto|scroll/.test(s.overflowX));
  };
  return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => {
    const moved = chain.find(([n, x, y]) => n.scrollLeft !== x || n.scrollTop !== y);
    const el = moved ? moved[0] : (chain.map(c => c[0]).find(scrolls) || page || this);
    const out = {x: el.scrollLeft, y: el.scrollTop, max_y: el.scrollHeight - el.clientHeight,
                 moved: !!moved, of: el === this ? 'element' : el === page ? 'page' : 'ancestor'};
    if (out.of === 'ancestor') {
      const refs = globalThis.__bsk && __bsk.refs;
      for (const [ref, node] of refs || []) if (node === el) { out.ref = ref; break; }
      const role = el.getAttribute('role'), label = el.getAttribute('aria-label');
      out.element = '<' + el.localName + (el.id ? ' id=' + el.id : '')
        + (role ? ' role=' + role : '') + (label ? ' aria-label="' + label + '"' : '') + '>';
    }
    r(out);
  })));
}"""


@implements("scroll")
async def scroll(ctx: ToolContext, params: ScrollParams) -> dict[str, Any]:
    dx, dy = params["dx"], params["dy"]
    ref = params["ref"]
    if params["into_view"]:
        if not ref:
            raise invalid("into_view", "needs a REF to scroll into view")
        target = resolve(ctx, ref)
        await call_on(ctx, target, "function(){this.scrollIntoView({block: 'center', "
                      "behavior: 'instant'})}", act=True)
        return {"ref": ref, "into_view": True}
    if dx == 0 and dy == 0:
        raise invalid("dy", "give --dx and/or --dy (pixels; negative scrolls up/left), "
                      "or --into-view with a REF")
    tab = ctx.tab
    if ref:
        target = resolve(ctx, ref)
        x, y = await point_for(ctx, target)
        await call_on(ctx, target, _SCROLL_CHAIN)
    else:
        metrics = await ctx.inspect("Page.getLayoutMetrics", tab=tab)
        view = metrics["cssVisualViewport"]
        x, y = view["clientWidth"] / 2, view["clientHeight"] / 2
    await mouse(ctx, tab, "wheel", x, y, deltaX=dx, deltaY=dy)
    if ref:
        try:
            pos = await call_on(ctx, target, _SCROLL_MOVED)
        except BskError as e:
            if e.details.get("reason") != "element_removed":
                raise
            # A virtualized list recycles the row the wheel turned over: the scroll
            # happened; say the element went, as a click does (_state_after).
            return {"ref": ref, "scrolled_by": {"dx": dx, "dy": dy}, "position": None,
                    "element": {"removed": True}}
    else:
        answer = await ctx.inspect("Runtime.evaluate", {
            "expression": f"({_SCROLL_POS}).call(document)", "awaitPromise": True,
            "returnByValue": True}, tab=tab)
        pos = answer.get("result", {}).get("value")
    return {"ref": ref, "scrolled_by": {"dx": dx, "dy": dy}, "position": pos}
