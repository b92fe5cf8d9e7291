"""Where to put the mouse for an element: in view, on the element itself, in page coordinates.

A point is chosen in the element's own frame (scrolled into view, once its box has
stopped moving, centre of its first visible box, checked with `elementFromPoint` so a
covering element is named instead of clicked), then moved to top-level coordinates by
adding the offsets of every <iframe> on the way up — including out-of-process ones, whose
owners live in another session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.browser.tab import Tab
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import Resolved, call_on


@dataclass(frozen=True)
class HoverPoint:
    tab_id: str
    ref: str
    x: float
    y: float
    navigations: int  # the tab's document count then: a new document drops the hover


@dataclass
class Pointer:
    """A session's pointer (its state between calls)."""

    # Where `hover` (or `mouse move`) left it, put back before reads that depend on it
    # (`input.restore_hover`); None once an input moved it elsewhere.
    hover: HoverPoint | None = None
    buttons_held: set[str] = field(default_factory=set)  # by `mouse down`, until `mouse up`

_LOCATE = """async function(viaLabel, enabledOnly) {
  // viaLabel: a hidden control (a styled checkbox) is reached through its label.
  const control = this;
  // A disabled control takes no click: say so rather than click where nothing listens.
  if (enabledOnly && control.matches && (control.matches(":disabled")
      || control.closest("[aria-disabled=true]"))) return {disabled: true};
  const el = (viaLabel && this.labels && this.labels[0]) || this;
  el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  // An element still moving (a modal sliding or fading in, a menu unfolding) is pressed
  // where it comes to rest, as a person waits for it: its transitions done and its box
  // the same two frames running, at most 2 s (a page that never stops is pressed where it
  // is then). Widgets ignore a press mid-transition (Bootstrap's modal does:
  // tests/test_conformance_widgets.py; docs/contract-notes.md "Real widget libraries").
  const frame = () => new Promise(r => { requestAnimationFrame(() => r()); setTimeout(r, 100); });
  const same = (a, b) => a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;
  const until = performance.now() + 2000;
  // First the CSS transitions and animations on it or around it that will end: a transform
  // the compositor has not started yet reads as a box at rest for frames, and the widget
  // is still mid-transition then.
  const around = t => {
    for (let n = el; n; n = n.parentNode || n.host) if (n === t) return true;
    return false;
  };
  const ending = document.getAnimations().filter(a => a.effect && a.effect.target
      && a.playState === "running"
      && a.effect.getComputedTiming().endTime !== Infinity && around(a.effect.target));
  if (ending.length) await Promise.race([
      Promise.all(ending.map(a => a.finished.catch(() => null))),
      new Promise(r => setTimeout(r, until - performance.now()))]);
  for (let box = el.getBoundingClientRect(); performance.now() < until;) {
    await frame();
    const now = el.getBoundingClientRect();
    if (same(box, now)) break;
    box = now;
  }
  const style = getComputedStyle(el);
  const rects = [...el.getClientRects()].filter(r => r.width >= 1 && r.height >= 1);
  if (!rects.length || style.visibility === "hidden") return {hidden: true};
  const r = rects[0];
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const root = el.getRootNode();
  const hit = (root.elementFromPoint ? root : document).elementFromPoint(x, y);
  const label = hit && hit.closest && hit.closest("label");
  // Text slotted into a shadow tree (a web component's label) is hit as its host: the
  // hosts around `el` are `el` too at its own centre.
  let host = root.host, hosting = false;
  while (host && !hosting) { hosting = hit === host; host = host.getRootNode().host; }
  const mine = hit && (hit === el || el.contains(hit) || hosting ||
                       (label && label.control === control));
  if (mine) return {x, y};
  if (!hit) return {covered: "nothing (outside the viewport)"};
  let desc = hit.tagName.toLowerCase();
  if (hit.id) desc += "#" + hit.id;
  if (hit.classList && hit.classList.length) desc += "." + [...hit.classList].slice(0, 3).join(".");
  const text = (hit.innerText || "").trim().replace(/\\s+/g, " ").slice(0, 60);
  return {covered: desc + (text ? ` ("${text}")` : "")};
}"""


async def frame_origin(ctx: ToolContext, tab: Tab, frame_id: str) -> tuple[float, float]:
    """Top-left of a frame's viewport in the top-level page's coordinates."""
    if frame_id == tab.main_frame_id:
        return 0.0, 0.0
    child = tab.child_by_frame(frame_id)
    owner_session = child.parent_session if child else tab.session_for_frame(frame_id)
    owner = await ctx.inspect("DOM.getFrameOwner", {"frameId": frame_id}, tab=tab,
                              session_id=owner_session)
    box = await ctx.inspect("DOM.getBoxModel", {"backendNodeId": owner["backendNodeId"]},
                            tab=tab, session_id=owner_session)
    x, y = box["model"]["content"][0], box["model"]["content"][1]
    if owner_session == tab.session_id:
        return x, y
    outer = tab.children.get(owner_session)
    if outer is None:
        return x, y
    ox, oy = await frame_origin(ctx, tab, outer.target_id)
    return x + ox, y + oy


async def point_for(ctx: ToolContext, target: Resolved, *, via_label: bool = False,
                    enabled_only: bool = False) -> tuple[float, float]:
    """A top-level point that really hits the element (or, `via_label`, its label), or
    action_failed saying why not (`enabled_only`: also when the element is disabled).
    The ref's lookup and the hit test are one round trip."""
    ref = target.ref
    spot: Any = await call_on(ctx, target, _LOCATE, via_label, enabled_only)
    if not isinstance(spot, dict):
        spot = {}
    if spot.get("disabled"):
        raise BskError("action_failed", f"{ref} is disabled: nothing was clicked",
                       hint="if the page enables it once something is done (a field "
                            "filled, a load finished), do that or wait for it (`bsk wait "
                            "--text …`), then snapshot again; some stay disabled (an item "
                            "not on offer)",
                       details={"reason": "element_disabled", "ref": ref}, dispatched=Dispatched.NO)
    if spot.get("hidden"):
        raise BskError("action_failed", f"{ref} is hidden or has no size",
                       hint="check it is visible (snapshot), or act on another element",
                       details={"reason": "not_visible", "ref": ref}, dispatched=Dispatched.NO)
    if spot.get("covered"):
        raise BskError("action_failed", f"{ref} is covered by {spot['covered']}",
                       hint="close or scroll away what covers it, then snapshot again",
                       details={"reason": "covered", "ref": ref,
                                "covered_by": spot["covered"]}, dispatched=Dispatched.NO)
    ox, oy = await frame_origin(ctx, target.tab, target.binding.frame_id)
    return spot["x"] + ox, spot["y"] + oy
