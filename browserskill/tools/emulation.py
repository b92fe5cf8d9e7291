"""Device emulation, permissions and window size — emulate, permissions, window resize.

`emulate` settings belong to the tab (its CDP session) and add up across calls: a later
`--scale 2` keeps an earlier `--width 390 --height 844`; each call re-sends only the groups
it touches (viewport, user agent and language, media, network, CPU, timezone,
geolocation), computed from all the tab's settings. `--reset` clears them all. Input is
checked before anything is sent. The result reads back what the page now sees.

Permissions are the browser context's (`Browser.setPermission`, browser-level): the
session's own context when isolated, else the shared profile's (docs/design.md,
isolation).
"""

from __future__ import annotations

import weakref
import zoneinfo
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from browserskill.base.catalog.emulation import EmulateParams, PermissionsParams, WindowResizeParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.extension_link import ExtensionOpError
from browserskill.browser.link import CdpError, LinkError, TargetHandle
from browserskill.browser.tab import Tab
from browserskill.tools.context import ToolContext
from browserskill.tools.devices import device
from browserskill.tools.registry import implements

_SEEN = """({
  width: window.innerWidth, height: window.innerHeight, scale: window.devicePixelRatio,
  user_agent: navigator.userAgent, touch: navigator.maxTouchPoints > 0,
  language: navigator.language, timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  online: navigator.onLine, media: matchMedia("print").matches ? "print" : "screen",
  color_scheme: matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light",
  reduced_motion: matchMedia("(prefers-reduced-motion: reduce)").matches,
})"""

# After a window resize: the page's view once its window has the new outer size and its
# viewport fits in it (the browser resizes the page asynchronously: a clean-clone CI
# under Xvfb once read innerWidth 1280 after a resize to 900), or as it is when time is
# up. An emulated viewport keeps its size: only the window is waited for then.
_SEEN_RESIZED = """new Promise(resolve => {
  const W = %d, H = %d, EMULATED = %s;
  const read = () => resolve(%s);
  const done = () => outerWidth === W && outerHeight === H &&
    (EMULATED || (innerWidth <= outerWidth && innerHeight <= outerHeight));
  if (done()) return read();
  const end = () => { removeEventListener("resize", check); clearInterval(poll);
                      clearTimeout(timer); read(); };
  const check = () => { if (done()) end(); };
  const timer = setTimeout(end, %d);
  const poll = setInterval(check, 50);  // the window's size changes without an event
  addEventListener("resize", check);
})"""

RESIZE_SEEN_S = 5.0  # how long a resize's answer waits for the page to take the new size

# Per tab: the emulation settings in force (gone with the tab), and the origin whose
# geolocation permission `--geolocation` granted (set back to ask on --reset; one granted
# before, or by `permissions grant|clear` since, is someone's choice and stays).
_SETTINGS: weakref.WeakKeyDictionary[Tab, dict[str, Any]] = weakref.WeakKeyDictionary()
_GRANTED: weakref.WeakKeyDictionary[Tab, str] = weakref.WeakKeyDictionary()
_FIELDS = ("device", "width", "height", "scale", "mobile", "user_agent", "color_scheme",
           "reduced_motion", "media", "offline", "network", "cpu", "geolocation", "timezone",
           "locale")
_METRICS = {"device", "width", "height", "scale", "mobile"}
_AGENT = {"device", "user_agent", "locale"}
_MEDIA = {"media", "color_scheme", "reduced_motion"}
_NETWORK = {"offline", "network"}

# DevTools' throttling presets (front_end/core/sdk/NetworkManager.ts): bytes/s, ms.
_THROTTLING: dict[str, dict[str, float]] = {
    "slow-3g": {"downloadThroughput": 500 * 1000 / 8 * 0.8,
                "uploadThroughput": 500 * 1000 / 8 * 0.8, "latency": 400 * 5},
    "fast-3g": {"downloadThroughput": 1.6 * 1000 * 1000 / 8 * 0.9,
                "uploadThroughput": 750 * 1000 / 8 * 0.9, "latency": 150 * 3.75},
    "off": {"downloadThroughput": -1, "uploadThroughput": -1, "latency": 0},
}


async def page_view(ctx: ToolContext, tab: Tab) -> dict[str, Any]:
    """What the page sees now."""
    answer = await ctx.inspect("Runtime.evaluate", {"expression": _SEEN, "returnByValue": True},
                               tab=tab)
    value = answer.get("result", {}).get("value")
    return value if isinstance(value, dict) else {}


def offline(tab: Tab) -> bool:
    """Whether `emulate --offline` cuts this tab's network now."""
    return bool(_SETTINGS.get(tab, {}).get("offline"))


def parse_geolocation(text: str) -> dict[str, float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (2, 3):
        raise invalid("geolocation", f"expected LAT,LON or LAT,LON,ACCURACY, got {text!r}",
                      hint="e.g. --geolocation 48.8584,2.2945,10")
    lat, lon, acc = numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 10.0
    if not -90 <= lat <= 90 or not -180 <= lon <= 180 or not 0 <= acc <= 1e7:
        raise invalid("geolocation", "latitude must be within ±90, longitude within ±180, "
                      "accuracy (metres) ≥ 0")
    return {"latitude": lat, "longitude": lon, "accuracy": acc}


def _check(given: dict[str, Any]) -> None:
    """Refuse bad input before anything is sent."""
    if "device" in given:
        device(given["device"])
    if "geolocation" in given:
        parse_geolocation(given["geolocation"])
    if "timezone" in given:
        try:
            zoneinfo.ZoneInfo(given["timezone"])
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            raise invalid("timezone", f"unknown timezone {given['timezone']!r}",
                          hint="an IANA name, e.g. Europe/Berlin or America/New_York") from None
    if given.get("offline") and given.get("network") not in (None, "off"):
        raise invalid("network", "--offline already cuts the network; don't throttle it too")


def web_origin(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None


async def set_permissions(ctx: ToolContext, names: list[str], origin: str | None,
                          setting: str) -> None:
    """Browser-level `Browser.setPermission` in the session's browser context."""
    context = ctx.backend.context_id
    link = ctx.tab.link
    done: list[str] = []
    for name in names:
        params: dict[str, Any] = {"permission": {"name": name}, "setting": setting}
        if origin is not None:
            params["origin"] = origin
        if context is not None:
            params["browserContextId"] = context
        # A refused command changed nothing, but what this call did before it stays done.
        before = ctx.dispatched
        ctx.mark_dispatched()
        try:
            await link.send("Browser.setPermission", params, timeout=ctx.remaining())
        except CdpError as e:
            already = f" ({', '.join(done)}: {setting} already)" if done else ""
            if "current context" in e.message:  # Chromium: not a secure origin
                raise BskError(
                    "invalid_params", f"origin: {origin} is not a secure context: Chromium "
                    f"grants {name} only to https:// origins and localhost{already}",
                    hint="use the site's https:// origin", details={"field": "origin"},
                    dispatched=before) from None
            if e.code == -32602:  # Chromium's "Invalid PermissionDescriptor name: …"
                raise BskError(
                    "invalid_params", f"names: {name}: {e.message}{already}",
                    hint="a permission name as in navigator.permissions.query, "
                         "e.g. geolocation, notifications, clipboard-read",
                    details={"field": "names"}, dispatched=before) from None
            raise BskError("action_failed", f"the browser refused the permission: {e}",
                           hint="permissions need the daemon's own browser: the extension "
                                "reaches tabs only" if e.code == -32601 else "",
                           details={"reason": "browser_error"}, dispatched=Dispatched.YES) from None
        except LinkError as e:  # the extension's relay has no browser-level target
            raise BskError("action_failed", f"can't set permissions here: {e}",
                           hint="permissions need the daemon's own browser (embedded)",
                           details={"reason": "unsupported"},
                           dispatched=ctx.dispatched) from None
        done.append(name)


async def _reset(ctx: ToolContext, tab: Tab) -> None:
    await ctx.act("Emulation.clearDeviceMetricsOverride", tab=tab)
    await ctx.act("Emulation.setTouchEmulationEnabled", {"enabled": False}, tab=tab)
    await ctx.act("Emulation.setUserAgentOverride", {"userAgent": ""}, tab=tab)
    await ctx.act("Emulation.setLocaleOverride", {}, tab=tab)
    await ctx.act("Emulation.setEmulatedMedia", {"media": "", "features": []}, tab=tab)
    await ctx.act("Network.emulateNetworkConditions", {"offline": False, **_THROTTLING["off"]},
                  tab=tab)
    await ctx.act("Emulation.setCPUThrottlingRate", {"rate": 1}, tab=tab)
    await ctx.act("Emulation.setTimezoneOverride", {"timezoneId": ""}, tab=tab)
    await ctx.act("Emulation.clearGeolocationOverride", tab=tab)
    origin = _GRANTED.pop(tab, None)
    if origin is not None:
        await set_permissions(ctx, ["geolocation"], origin, "prompt")
    _SETTINGS.pop(tab, None)


async def _apply(ctx: ToolContext, tab: Tab, settings: dict[str, Any],
                 given: dict[str, Any]) -> str | None:
    """Send the groups `given` touches, from all of `settings`; a note, if any."""
    dev = device(settings["device"]) if "device" in settings else {}
    touched = set(given)
    note = None
    if "locale" in touched:
        # First: Chromium checks the locale only here, and a refused one must leave the
        # other settings (Accept-Language among them) as they were.
        sent_before = ctx.effect_sent
        try:
            await ctx.act("Emulation.setLocaleOverride", {"locale": given["locale"]}, tab=tab)
        except CdpError as e:
            raise BskError(
                "invalid_params", f"locale: {given['locale']!r}: {e.message}",
                hint="a BCP 47 locale, e.g. de-DE or pt-BR", details={"field": "locale"},
                dispatched=Dispatched.YES if sent_before else Dispatched.NO) from None
    if _METRICS & touched:
        viewport = dev.get("viewport") or {}
        await ctx.act("Emulation.setDeviceMetricsOverride", {
            "width": settings.get("width", viewport.get("width", 0)),
            "height": settings.get("height", viewport.get("height", 0)),
            "deviceScaleFactor": settings.get("scale", dev.get("deviceScaleFactor", 0)),
            "mobile": bool(settings.get("mobile", dev.get("isMobile", False))),
        }, tab=tab)
    if {"mobile", "device"} & touched:
        touch = settings.get("mobile", dev.get("hasTouch", False))
        await ctx.act("Emulation.setTouchEmulationEnabled",
                      {"enabled": bool(touch), "maxTouchPoints": 5}, tab=tab)
    if _AGENT & touched:
        agent: dict[str, Any] = {"userAgent": settings.get("user_agent",
                                                           dev.get("userAgent", ""))}
        if "locale" in settings:
            agent["acceptLanguage"] = settings["locale"]
        await ctx.act("Emulation.setUserAgentOverride", agent, tab=tab)
    if _MEDIA & touched:
        features = []
        if "color_scheme" in settings:
            features.append({"name": "prefers-color-scheme", "value": settings["color_scheme"]})
        if "reduced_motion" in settings:
            features.append({"name": "prefers-reduced-motion",
                             "value": "reduce" if settings["reduced_motion"] else "no-preference"})
        await ctx.act("Emulation.setEmulatedMedia",
                      {"media": settings.get("media", ""), "features": features}, tab=tab)
    if _NETWORK & touched:
        await ctx.act("Network.emulateNetworkConditions", {
            "offline": bool(settings.get("offline")),
            **_THROTTLING[settings.get("network", "off")]}, tab=tab)
    if "cpu" in touched:
        await ctx.act("Emulation.setCPUThrottlingRate", {"rate": settings["cpu"]}, tab=tab)
    if "timezone" in touched:
        await ctx.act("Emulation.setTimezoneOverride", {"timezoneId": settings["timezone"]},
                      tab=tab)
    if "geolocation" in touched:
        await ctx.act("Emulation.setGeolocationOverride",
                      parse_geolocation(settings["geolocation"]), tab=tab)
        origin = web_origin(tab.url)
        if origin is None:
            note = ("the page has no web origin yet, so no geolocation permission was "
                    "granted: open a page, then `bsk permissions grant geolocation`")
        else:
            before = await ctx.inspect("Runtime.evaluate", {
                "expression": "navigator.permissions.query({name: 'geolocation'})"
                              ".then(s => s.state, () => null)",
                "awaitPromise": True, "returnByValue": True}, tab=tab)
            granted_before = before.get("result", {}).get("value") == "granted"
            try:
                await set_permissions(ctx, ["geolocation"], origin, "granted")
            except BskError as e:
                if e.details.get("field") != "origin":
                    raise
                # The override is set, the other settings too: say why the page can't read it.
                note = (f"{origin} is not a secure context, where pages can't read "
                        "geolocation (and Chromium grants it no permission): open the "
                        "site over https:// or on localhost")
            else:
                if not granted_before:
                    _GRANTED[tab] = origin
    return note


@implements("emulate")
async def emulate(ctx: ToolContext, params: EmulateParams) -> dict[str, Any]:
    fields: Mapping[str, Any] = params  # the settings by name
    given = {k: fields[k] for k in _FIELDS if fields[k] is not None}
    reset = params["reset"] or params["off"]
    if reset:
        if given:
            raise invalid("reset", f"--reset clears everything; don't combine it with "
                          f"{', '.join('--' + k.replace('_', '-') for k in given)}")
    elif not given:
        raise invalid("emulate", "nothing to emulate: give --device, --width/--height, "
                      "--scale, --mobile, --user-agent, --color-scheme, --reduced-motion, "
                      "--media, --offline, --network, --cpu, --geolocation, --timezone, "
                      "--locale, or --reset", hint="bsk emulate --help")
    _check(given)
    tab = ctx.tab
    if reset:
        await _reset(ctx, tab)
        return {"tab_id": tab.tab_id, "emulation": None, "page": await page_view(ctx, tab)}
    settings = {**_SETTINGS.get(tab, {}), **given}
    note = await _apply(ctx, tab, settings, given)
    _SETTINGS[tab] = settings
    out = {"tab_id": tab.tab_id, "emulation": settings, "page": await page_view(ctx, tab)}
    if note:
        out["note"] = note
    return out


async def _permissions(ctx: ToolContext, params: PermissionsParams, setting: str
                       ) -> dict[str, Any]:
    origin = params["origin"]
    if origin is not None:
        if web_origin(origin) is None:
            raise invalid("origin", f"{origin!r} is not an http(s) origin")
        origin = web_origin(origin)
    else:
        origin = web_origin(ctx.tab.url)
        if origin is None:
            raise invalid("origin", f"the current tab ({ctx.tab.url}) has no web origin",
                          hint="open a page first, or give --origin https://example.com")
    await set_permissions(ctx, list(dict.fromkeys(params["names"])), origin, setting)
    if "geolocation" in params["names"]:  # now the caller's choice: --reset leaves it
        for tab in [t for t, o in _GRANTED.items() if o == origin]:
            del _GRANTED[tab]
    return {"origin": origin, "permissions": params["names"],
            "setting": setting, "context": "isolated" if ctx.backend.context_id else "shared"}


@implements("permissions_grant")
async def permissions_grant(ctx: ToolContext, params: PermissionsParams) -> dict[str, Any]:
    return await _permissions(ctx, params, "granted")


@implements("permissions_clear")
async def permissions_clear(ctx: ToolContext, params: PermissionsParams) -> dict[str, Any]:
    return await _permissions(ctx, params, "prompt")


@implements("window_resize")
async def window_resize(ctx: ToolContext, params: WindowResizeParams) -> dict[str, Any]:
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
                       dispatched=ctx.dispatched) from None
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
                       details={"reason": "browser_error"}, dispatched=Dispatched.YES) from None
    return window_id, await link.window_bounds(window_id, timeout=ctx.remaining())


async def _resized_view(ctx: ToolContext, tab: Tab, bounds: dict[str, Any]) -> dict[str, Any]:
    budget = int(max(0.0, min(RESIZE_SEEN_S, ctx.remaining() - 0.5)) * 1000)
    script = _SEEN_RESIZED % (bounds.get("width", 0), bounds.get("height", 0),
                              "true" if tab in _SETTINGS else "false", _SEEN.strip(), budget)
    answer = await ctx.inspect("Runtime.evaluate", {"expression": script, "awaitPromise": True,
                                                    "returnByValue": True}, tab=tab)
    value = answer.get("result", {}).get("value")
    return value if isinstance(value, dict) else {}
