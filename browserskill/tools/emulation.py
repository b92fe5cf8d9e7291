"""Device emulation and window size — emulate, window resize.

`emulate` settings belong to the tab (its CDP session) and add up across calls: a later
`--scale 2` keeps an earlier `--width 390 --height 844`. `--off` clears them all. The
result reads back what the page now sees (innerWidth, devicePixelRatio, userAgent).
"""

from __future__ import annotations

import weakref
from typing import Any

from browserskill.browser.extension_link import ExtensionOpError
from browserskill.browser.link import CdpError, TargetHandle
from browserskill.browser.tab import Tab
from browserskill.errors import BskError, invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements

_SEEN = """({
  width: window.innerWidth, height: window.innerHeight, scale: window.devicePixelRatio,
  user_agent: navigator.userAgent, touch: navigator.maxTouchPoints > 0,
})"""

# After a window resize: the page's view once its window has the new outer size (the
# browser resizes the page asynchronously), or as it is when time is up.
_SEEN_RESIZED = """new Promise(resolve => {
  const W = %d, H = %d;
  const read = () => resolve(%s);
  if (outerWidth === W && outerHeight === H) return read();
  const timer = setTimeout(() => { removeEventListener("resize", check); read(); }, %d);
  const check = () => {
    if (outerWidth !== W || outerHeight !== H) return;
    removeEventListener("resize", check);
    clearTimeout(timer);
    read();
  };
  addEventListener("resize", check);
})"""

# Per tab: the emulation settings in force (gone with the tab).
_SETTINGS: weakref.WeakKeyDictionary[Tab, dict[str, Any]] = weakref.WeakKeyDictionary()
_FIELDS = ("width", "height", "scale", "mobile", "user_agent")


async def page_view(ctx: ToolContext, tab: Tab) -> dict[str, Any]:
    """What the page sees now."""
    answer = await ctx.inspect("Runtime.evaluate", {"expression": _SEEN, "returnByValue": True},
                               tab=tab)
    value = answer.get("result", {}).get("value")
    return value if isinstance(value, dict) else {}


@implements("emulate")
async def emulate(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    given = {k: params[k] for k in _FIELDS if params[k] is not None}
    if params["off"]:
        if given:
            raise invalid("off", f"--off clears everything; don't combine it with "
                          f"{', '.join('--' + k.replace('_', '-') for k in given)}")
    elif not given:
        raise invalid("emulate", "nothing to emulate: give --width/--height, --scale, "
                      "--mobile, --user-agent, or --off", hint="bsk emulate --help")
    tab = ctx.tab
    if params["off"]:
        await ctx.act("Emulation.clearDeviceMetricsOverride", tab=tab)
        await ctx.act("Emulation.setTouchEmulationEnabled", {"enabled": False}, tab=tab)
        await ctx.act("Emulation.setUserAgentOverride", {"userAgent": ""}, tab=tab)
        _SETTINGS.pop(tab, None)
        return {"tab_id": tab.tab_id, "emulation": None, "page": await page_view(ctx, tab)}
    settings = {**_SETTINGS.get(tab, {}), **given}
    if {"width", "height", "scale", "mobile"} & set(given):
        await ctx.act("Emulation.setDeviceMetricsOverride", {
            "width": settings.get("width", 0), "height": settings.get("height", 0),
            "deviceScaleFactor": settings.get("scale", 0),
            "mobile": bool(settings.get("mobile")),
        }, tab=tab)
    if "mobile" in given:
        await ctx.act("Emulation.setTouchEmulationEnabled",
                      {"enabled": bool(given["mobile"]), "maxTouchPoints": 5}, tab=tab)
    if "user_agent" in given:
        await ctx.act("Emulation.setUserAgentOverride", {"userAgent": given["user_agent"]},
                      tab=tab)
    _SETTINGS[tab] = settings
    return {"tab_id": tab.tab_id, "emulation": settings, "page": await page_view(ctx, tab)}


@implements("window_resize")
async def window_resize(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    """The session's windows, through its link: CDP's Browser.* window commands, or through
    the extension chrome.windows on the session's Agent Window (never a user's window).
    Other sessions' windows are never touched; the session's new tabs get the size too."""
    tab = ctx.tab
    size = (params["width"], params["height"])
    others = ctx.backend.windows_to_follow(tab, list(ctx.session.tabs.values()))
    window_id, bounds = await _resize_window_of(ctx, tab, size)
    for other in others:
        await _resize_window_of(ctx, other, size)
    ctx.backend.resized(*size)
    out: dict[str, Any] = {"tab_id": tab.tab_id, "window_id": window_id,
                           "window": {k: bounds.get(k) for k in ("left", "top", "width",
                                                                 "height", "windowState")},
                           "page": await _resized_view(ctx, tab, bounds)}
    if others:
        out["other_tabs_resized"] = [t.tab_id for t in others]
    if tab in _SETTINGS:
        out["note"] = "emulation is on in this tab: its viewport stays as emulated"
    return out


async def _resize_window_of(ctx: ToolContext, tab: Tab,
                            size: tuple[int, int]) -> tuple[int, dict[str, Any]]:
    link = tab.link
    try:
        window = await link.window_of(TargetHandle(tab.target_id, tab.session_id),
                                      timeout=ctx.remaining())
    except (CdpError, ExtensionOpError) as e:
        raise BskError("action_failed", f"can't resize the window of tab {tab.tab_id}: {e}",
                       details={"reason": "browser_error"},
                       dispatched="yes" if ctx.op.effect_sent else "no") from None
    window_id = window["windowId"]
    try:
        if window.get("bounds", {}).get("windowState", "normal") != "normal":
            ctx.mark_dispatched()
            await link.set_window_bounds(window_id, {"windowState": "normal"},
                                         timeout=ctx.remaining())
        ctx.mark_dispatched()
        await link.set_window_bounds(window_id, {"width": size[0], "height": size[1]},
                                     timeout=ctx.remaining())
    except (CdpError, ExtensionOpError) as e:
        raise BskError("action_failed", f"the browser did not resize the window: {e}",
                       details={"reason": "browser_error"}, dispatched="yes") from None
    return window_id, await link.window_bounds(window_id, timeout=ctx.remaining())


async def _resized_view(ctx: ToolContext, tab: Tab, bounds: dict[str, Any]) -> dict[str, Any]:
    budget = int(max(0.0, min(2.0, ctx.remaining() - 0.5)) * 1000)
    script = _SEEN_RESIZED % (bounds.get("width", 0), bounds.get("height", 0), _SEEN.strip(),
                              budget)
    answer = await ctx.inspect("Runtime.evaluate", {"expression": script, "awaitPromise": True,
                                                    "returnByValue": True}, tab=tab)
    value = answer.get("result", {}).get("value")
    return value if isinstance(value, dict) else {}
