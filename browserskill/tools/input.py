"""Browser-native input (click), sent as recorded steps."""

from __future__ import annotations

from typing import Any

from browserskill.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.navigation import wait_for_document
from browserskill.tools.refs import Resolved, resolve
from browserskill.tools.registry import implements

# Scroll into view, then report what (if anything) the element's centre point hits instead.
_PREPARE = """function() {
  if (!this.isConnected) return {error: "detached"};
  this.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  return {ok: true};
}"""
_HIT_TEST = """function(x, y) {
  const root = this.getRootNode();
  const hit = (root.elementFromPoint ? root : document).elementFromPoint(x, y);
  if (!hit) return {covered: true, by: "nothing (outside the viewport)"};
  if (hit === this || this.contains(hit)) return {ok: true};
  const label = hit.closest && hit.closest("label");
  if (label && label.control === this) return {ok: true};
  let desc = hit.tagName.toLowerCase();
  if (hit.id) desc += "#" + hit.id;
  if (hit.classList && hit.classList.length) desc += "." + [...hit.classList].join(".");
  const text = (hit.innerText || "").trim().slice(0, 60);
  return {covered: true, by: desc + (text ? ` ("${text}")` : "")};
}"""


async def click_point(ctx: ToolContext, target: Resolved, ref: str) -> tuple[float, float]:
    """Scroll the element into view and find a point on it that really hits it."""
    tab, oid = target.tab, target.object_id
    await ctx.inspect("Runtime.callFunctionOn", {"objectId": oid, "functionDeclaration":
                                                  _PREPARE, "returnByValue": True}, tab=tab)
    try:
        quads = (await ctx.inspect("DOM.getContentQuads", {"objectId": oid}, tab=tab))["quads"]
    except Exception:
        quads = []
    boxes = [q for q in quads if _area(q) > 0.5]
    if not boxes:
        raise BskError("action_failed", f"{ref} is hidden or has no size, so it can't be clicked",
                       hint="check it is visible (snapshot), or act on another element",
                       details={"reason": "not_visible", "ref": ref}, dispatched="no")
    quad = boxes[0]
    x, y = sum(quad[0::2]) / 4, sum(quad[1::2]) / 4
    hit = await ctx.inspect("Runtime.callFunctionOn", {
        "objectId": oid, "functionDeclaration": _HIT_TEST, "returnByValue": True,
        "arguments": [{"value": x}, {"value": y}],
    }, tab=tab)
    verdict = hit.get("result", {}).get("value") or {}
    if verdict.get("covered"):
        raise BskError("action_failed", f"{ref} is covered by {verdict['by']}",
                       hint="close or scroll away what covers it, then snapshot again",
                       details={"reason": "covered", "ref": ref, "covered_by": verdict["by"]},
                       dispatched="no")
    return x, y


def _area(quad: list[float]) -> float:
    xs, ys = quad[0::2], quad[1::2]
    return abs(sum(xs[i] * ys[(i + 1) % 4] - xs[(i + 1) % 4] * ys[i] for i in range(4))) / 2


@implements("click")
async def click(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    ref = params["ref"]
    target = await resolve(ctx, ref)
    tab = target.tab
    x, y = await click_point(ctx, target, ref)
    requested = tab.navigation_requests
    committed = tab.navigations
    base = {"x": x, "y": y, "button": "left", "clickCount": 1}
    await ctx.step("mouseMoved", "Input.dispatchMouseEvent", {"type": "mouseMoved", **base},
                   tab=tab)

    async def release() -> None:
        await tab.send("Input.dispatchMouseEvent", {"type": "mouseReleased", **base}, timeout=2)

    held = ctx.on_cancel("mouse_released", release, undoes_effect=False)
    await ctx.step("mousePressed", "Input.dispatchMouseEvent",
                   {"type": "mousePressed", "buttons": 1, **base}, tab=tab)
    await ctx.step("mouseReleased", "Input.dispatchMouseEvent",
                   {"type": "mouseReleased", **base}, tab=tab)
    ctx.settled(held)
    result: dict[str, Any] = {"ref": ref, "clicked": True, "tab_id": tab.tab_id}
    if tab.navigation_requests > requested:
        await tab.until(lambda: tab.navigations > committed, ctx.remaining())
        loader = tab.main_loader()
        if loader and params["wait_until"] != "commit":
            await wait_for_document(ctx, tab, loader, params["wait_until"])
        result["navigated"] = True
    result["url"] = tab.url
    return result
