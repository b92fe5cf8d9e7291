"""Emulation: a device and its surroundings, the window's size, the browser's permissions.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import M
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

_PERMISSION_NAMES = Param(
    "names", "array", "permission names as the web knows them: geolocation, "
    "notifications, camera, microphone, clipboard-read, clipboard-write, midi, …",
    required=True, positional=True, nargs="+")
_PERMISSION_ORIGIN = Param("origin", "string", "the origin they are for (default: the "
                           "current tab's)", max_length=8192)
_PERMISSION_NOTE = ("Permissions belong to the session's browser context: its own with "
                    "--isolated, else the shared profile's.")


# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "emulation"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "emulate", ("emulate",), M,
        "Emulate a device and its surroundings in the current tab: viewport, scale, mobile, "
        "user agent, or a named --device; color scheme, reduced motion, print media; "
        "offline or a slow network; a slower CPU; geolocation (its permission granted); "
        "timezone and locale. Settings add up across calls until --reset; the result reads "
        "back what the page now sees.",
        (Param("device", "string", "a device from Playwright's device list, e.g. "
               "\"iPhone 13\" or \"Pixel 7\" (viewport, scale, mobile, touch, user agent; "
               "other flags given with it win)", max_length=200),
         Param("width", "integer", "viewport width in CSS pixels", minimum=1,
               maximum=10_000),
         Param("height", "integer", "viewport height in CSS pixels", minimum=1,
               maximum=10_000),
         Param("scale", "number", "device scale factor (devicePixelRatio)", minimum=0.1,
               maximum=10),
         Param("mobile", "boolean", "mobile viewport and touch events (--no-mobile: off)"),
         Param("user_agent", "string", "user agent string", max_length=2000),
         Param("color_scheme", "string", "prefers-color-scheme",
               choices=("light", "dark", "no-preference")),
         Param("reduced_motion", "boolean", "prefers-reduced-motion: reduce "
               "(--no-reduced-motion: no-preference)"),
         Param("media", "string", "CSS media type", choices=("screen", "print")),
         Param("offline", "boolean", "no network at all; navigator.onLine is false "
               "(--no-offline: back online)"),
         Param("network", "string", "network throttling, DevTools' presets",
               choices=("slow-3g", "fast-3g", "off")),
         Param("cpu", "number", "CPU slowdown factor (1: none, 4: four times slower)",
               minimum=1, maximum=100),
         Param("geolocation", "string", "LAT,LON[,ACCURACY_M]; also grants the geolocation "
               "permission to the page's origin", max_length=100),
         Param("timezone", "string", "IANA timezone, e.g. Europe/Berlin", max_length=100),
         Param("locale", "string", "locale for Intl and navigator.language(s), e.g. de-DE",
               max_length=100),
         Param("reset", "boolean", "clear all emulation in this tab", default=False),
         Param("off", "boolean", "the same as --reset", default=False)),
        example="bsk emulate --device \"iPhone 13\" --color-scheme dark --timezone Asia/Tokyo",
    ),
    ToolSpec(
        "window_resize", ("window", "resize"), M,
        "Resize this session's browser windows (each of its tabs in the embedded browser "
        "has one); viewports follow, and the session's new tabs get the size too. Other "
        "sessions' windows are untouched. In the user's browser (extension): only the "
        "session's Agent Window.",
        (Param("width", "integer", "window width in pixels", required=True, positional=True,
               minimum=100, maximum=10_000),
         Param("height", "integer", "window height in pixels", required=True,
               positional=True, minimum=100, maximum=10_000)),
        example="bsk window resize 1024 768",
    ),
    ToolSpec(
        "permissions_grant", ("permissions", "grant"), M,
        "Grant browser permissions to an origin (default: the current tab's). "
        + _PERMISSION_NOTE,
        (_PERMISSION_NAMES, _PERMISSION_ORIGIN),
        example="bsk permissions grant geolocation notifications",
    ),
    ToolSpec(
        "permissions_clear", ("permissions", "clear"), M,
        "Set permissions back to ask (the default) for an origin (default: the current "
        "tab's). " + _PERMISSION_NOTE,
        (_PERMISSION_NAMES, _PERMISSION_ORIGIN),
        example="bsk permissions clear geolocation",
    ),
)


class EmulateParams(TypedDict):
    device: str | None
    width: int | None
    height: int | None
    scale: float | None
    mobile: bool | None
    user_agent: str | None
    color_scheme: str | None
    reduced_motion: bool | None
    media: str | None
    offline: bool | None
    network: str | None
    cpu: float | None
    geolocation: str | None
    timezone: str | None
    locale: str | None
    reset: bool
    off: bool


class WindowResizeParams(TypedDict):
    width: int
    height: int


class PermissionsParams(TypedDict):
    """permissions grant, permissions clear."""

    names: list[str]
    origin: str | None


PARAMS: dict[str, type] = {"emulate": EmulateParams, "window_resize": WindowResizeParams,
                           "permissions_grant": PermissionsParams,
                           "permissions_clear": PermissionsParams}


def _view(page: dict[str, Any]) -> str:
    return f"page sees {page.get('width')}x{page.get('height')} @{page.get('scale')}x"


def _emulate(r: dict[str, Any]) -> str:
    e = r.get("emulation")
    if not e:
        return f"emulation off; {_view(r.get('page', {}))}"
    parts = []
    if "width" in e or "height" in e:
        parts.append(f"{e.get('width', 'auto')}x{e.get('height', 'auto')}")
    if "scale" in e:
        parts.append(f"@{e['scale']}x")
    if "mobile" in e:
        parts.append("mobile" if e["mobile"] else "desktop")
    if "user_agent" in e:
        parts.append(f"user agent {short(e['user_agent'], 60)}")
    shown = {"width", "height", "scale", "mobile", "user_agent"}
    parts += [f"{k.replace('_', '-')}={v}" for k, v in e.items() if k not in shown]
    note = f"\nnote: {r['note']}" if r.get("note") else ""
    return f"emulating {' '.join(parts)}; {_view(r.get('page', {}))}{note}"


def _window(r: dict[str, Any]) -> str:
    w = r.get("window", {})
    note = f"\nnote: {r['note']}" if r.get("note") else ""
    return f"window {w.get('width')}x{w.get('height')}; {_view(r.get('page', {}))}{note}"


def _permissions(r: dict[str, Any]) -> str:
    return f"{', '.join(r['permissions'])}: {r['setting']} for {r['origin']}"


RENDERERS: dict[Words, Renderer] = {
    ("emulate",): _emulate, ("window", "resize"): _window,
    ("permissions", "grant"): _permissions, ("permissions", "clear"): _permissions,
}
