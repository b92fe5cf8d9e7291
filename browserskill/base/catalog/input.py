"""Input on an element or the focused one: click, double-click, hover, drag, scroll, type, press.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import (
    LOCATOR_HELP,
    MODIFIERS,
    REF,
    SECRET,
    TARGET_MAX,
    WAIT_UNTIL,
    WHEEL,
    T,
)
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import acted, effect_lines, short, went

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "core"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "click", ("click",), T,
        "Click an element by ref: scrolls it into view and checks nothing covers it first.",
        (REF, Param("button", "string", "mouse button", default="left",
                    choices=("left", "right", "middle")),
         Param("count", "integer", "clicks in a row (2 = double click)", default=1,
               minimum=1, maximum=3),
         MODIFIERS, WAIT_UNTIL),
        example="bsk click e12", acting=True
    ),
    ToolSpec("dblclick", ("dblclick",), T, "Double-click an element by ref.",
             (REF, MODIFIERS, WAIT_UNTIL), example="bsk dblclick e12", acting=True),
    ToolSpec(
        "hover", ("hover",), T,
        "Move the mouse over an element; the session keeps the hover for later reads.",
        (REF,), example="bsk hover e4", acting=True
    ),
    ToolSpec(
        "drag", ("drag",), T, "Drag one element onto another (mouse or HTML5 drag and drop).",
        (Param("source", "string", "ref (or locator) to drag", required=True,
               positional=True, max_length=TARGET_MAX),
         Param("target", "string", "ref (or locator) to drop on", required=True,
               positional=True, max_length=TARGET_MAX)),
        example="bsk drag e3 e9", acting=True
    ),
    ToolSpec(
        "scroll", ("scroll",), T,
        "Scroll the page or an element by pixels (mouse wheel), or an element into view.",
        (Param("ref", "string", "element to scroll, a ref or a locator (default: the page)",
               positional=True, max_length=TARGET_MAX),
         *WHEEL,
         Param("into_view", "boolean", "scroll REF into view instead", default=False)),
        example="bsk scroll --dy 600", acting=True
    ),
    ToolSpec(
        "type", ("type",), T,
        "Type TEXT key by key into the focused element, or into --ref (focused first); "
        "fill replaces a value instead. --secret NAME types a stored secret.",
        (Param("text", "string", "text to type; \\n presses Enter (or give --secret)",
               positional=True, max_length=10_000, blank_ok=True), WAIT_UNTIL, SECRET,
         Param("ref", "string", "element to focus and type into" + LOCATOR_HELP,
               max_length=TARGET_MAX)),
        example='bsk type "hello world"', acting=True
    ),
    ToolSpec(
        "press", ("press",), T,
        "Press a key or chord in the focused element. E.g. Enter, Tab, Escape, ArrowDown, "
        "Control+A, Shift+Tab, Meta+Enter.",
        (Param("key", "string", "key name or chord joined with +", required=True,
               positional=True, max_length=100), WAIT_UNTIL),
        example="bsk press Control+A", acting=True
    ),
)


class ClickParams(TypedDict):
    ref: str
    button: str
    count: int
    modifiers: list[str] | None
    wait_until: str
    settle: int | None


class DblclickParams(TypedDict):
    ref: str
    modifiers: list[str] | None
    wait_until: str
    settle: int | None


class HoverParams(TypedDict):
    ref: str
    settle: int | None


class DragParams(TypedDict):
    source: str
    target: str
    settle: int | None


class ScrollParams(TypedDict):
    ref: str | None
    dx: int
    dy: int
    into_view: bool
    settle: int | None


class TypeParams(TypedDict):
    text: str | None
    wait_until: str
    secret: str | None
    ref: str | None
    settle: int | None


class PressParams(TypedDict):
    key: str
    wait_until: str
    settle: int | None


PARAMS: dict[str, type] = {"click": ClickParams, "dblclick": DblclickParams,
                           "hover": HoverParams, "drag": DragParams, "scroll": ScrollParams,
                           "type": TypeParams, "press": PressParams}


def _hover(r: dict[str, Any]) -> str:
    if "ref" not in r:
        return acted("hovered")(r)
    return (f"hovering over {r['ref']} (at {r.get('x', 0):.0f},{r.get('y', 0):.0f})"
            + effect_lines(r))


def _drag(r: dict[str, Any]) -> str:
    if "source" not in r:
        return acted("dragged")(r)
    return f"dragged {r['source']} onto {r['target']}" + effect_lines(r)


def _scroll(r: dict[str, Any]) -> str:
    if r.get("into_view"):
        return f"scrolled {r.get('ref')} into view"
    what = r.get("ref") or "the page"
    by = r.get("scrolled_by") or {}
    pos = r.get("position") or {}
    mover = {"page": "the page ", "ancestor": f"{pos.get('ref') or pos.get('element')} "
             "around it "}.get(pos.get("of", ""), "") if r.get("ref") else ""
    where = (f"; {mover}now at x={pos.get('x')}, y={pos.get('y')} (of max y "
             f"{pos.get('max_y')})" + ("" if pos.get("moved", True) else ", unmoved")
             if pos else "")
    if (r.get("element") or {}).get("removed"):
        where = "; it left the page as it scrolled (a virtualized list): snapshot again"
    return f"scrolled {what} by dx={by.get('dx', 0)}, dy={by.get('dy', 0)}{where}"


def _focus(r: dict[str, Any], lead: str) -> str:
    """Where focus is once the keys were sent (read after them: a key such as Tab or
    Enter may have moved it, so `press` doesn't say the key went there)."""
    if r.get("navigated") or r.get("downloads") or r.get("new_tabs"):
        return went(r)
    if not r.get("focused"):
        return "; no element has focus now (the keys went to the page)"
    value = f", value now {short(r['value'])}" if "value" in r else ""
    where = f"{r['focused_ref']} ({r['focused']})" if r.get("focused_ref") else r["focused"]
    return f"{lead}{where}{value}"


def _type(r: dict[str, Any]) -> str:
    return f"typed {r['typed']} char{'' if r['typed'] == 1 else 's'}" + _focus(r, " in ")


def _press(r: dict[str, Any]) -> str:
    return f"pressed {r['key']}" + _focus(r, "; focus now on ")


RENDERERS: dict[Words, Renderer] = {
    ("click",): acted("clicked"), ("dblclick",): acted("double-clicked"), ("hover",): _hover,
    ("drag",): _drag, ("scroll",): _scroll, ("type",): _type, ("press",): _press,
}
