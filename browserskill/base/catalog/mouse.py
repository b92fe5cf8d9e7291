"""Mouse at viewport coordinates: move, press, release, click, wheel — where no ref fits.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import (
    MODIFIERS,
    MOUSE_BUTTON,
    MOUSE_X,
    MOUSE_Y,
    WAIT_UNTIL,
    WHEEL,
    T,
)
from browserskill.base.catalog.spec import ToolSpec
from browserskill.base.catalog.text import acted, effect_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "mouse"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "mouse_move", ("mouse", "move"), T,
        "Move the mouse to viewport coordinates (CSS pixels from the top-left of the tab's "
        "viewport). The fallback when no ref fits: canvases, maps, custom widgets. A button "
        "held by `mouse down` stays held (that drags).",
        (MOUSE_X, MOUSE_Y), example="bsk mouse move 120 80", acting=True
    ),
    ToolSpec(
        "mouse_down", ("mouse", "down"), T,
        "Move to X Y and press a mouse button there, keeping it held until `mouse up`. "
        "A cancelled press releases the button again.",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON), example="bsk mouse down 120 80", acting=True
    ),
    ToolSpec(
        "mouse_up", ("mouse", "up"), T,
        "Move to X Y and release a mouse button there (ends a drag begun with `mouse down`).",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON, WAIT_UNTIL), example="bsk mouse up 300 80", acting=True
    ),
    ToolSpec(
        "mouse_click", ("mouse", "click"), T,
        "Click at viewport coordinates (move, press, release), reporting what it started "
        "(navigation, dialog, new tab, download). Prefer `click REF` where there is a ref: "
        "it checks what is under the point first.",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON, MODIFIERS, WAIT_UNTIL),
        example="bsk mouse click 200 150", acting=True
    ),
    ToolSpec(
        "mouse_dblclick", ("mouse", "dblclick"), T,
        "Double-click at viewport coordinates.",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON, MODIFIERS, WAIT_UNTIL),
        example="bsk mouse dblclick 200 150", acting=True
    ),
    ToolSpec(
        "mouse_wheel", ("mouse", "wheel"), T,
        "Turn the mouse wheel over viewport coordinates: scrolls whatever is under X Y.",
        (MOUSE_X, MOUSE_Y,
         *WHEEL),
        example="bsk mouse wheel 200 150 --dy 300", acting=True
    ),
)


class MouseMoveParams(TypedDict):
    x: float
    y: float
    settle: int | None


class MouseDownParams(TypedDict):
    x: float
    y: float
    button: str
    settle: int | None


class MouseUpParams(TypedDict):
    x: float
    y: float
    button: str
    wait_until: str
    settle: int | None


class MouseClickParams(TypedDict):
    """mouse click, mouse dblclick."""

    x: float
    y: float
    button: str
    modifiers: list[str] | None
    wait_until: str
    settle: int | None


class MouseWheelParams(TypedDict):
    x: float
    y: float
    dx: int
    dy: int
    settle: int | None

PARAMS: dict[str, type] = {"mouse_move": MouseMoveParams, "mouse_down": MouseDownParams,
                           "mouse_up": MouseUpParams, "mouse_click": MouseClickParams,
                           "mouse_dblclick": MouseClickParams, "mouse_wheel": MouseWheelParams}


def _mouse(verb: str) -> Renderer:
    def render(r: dict[str, Any]) -> str:
        if "x" not in r:
            return acted(f"mouse {verb}")(r)
        button = f" ({r['button']} button)" if r.get("button", "left") != "left" else ""
        text = f"mouse {verb} at {r['x']:g},{r['y']:g}{button}"
        if r.get("scrolled_by"):
            text += f" by dx={r['scrolled_by']['dx']}, dy={r['scrolled_by']['dy']}"
        if r.get("buttons_held"):
            text += f"; held: {', '.join(r['buttons_held'])} (release: bsk mouse up X Y)"
        if r.get("note"):
            text += f"\nnote: {r['note']}"
        return text + effect_lines(r)

    return render


RENDERERS: dict[Words, Renderer] = {
    ("mouse", "move"): _mouse("moved"), ("mouse", "down"): _mouse("down"),
    ("mouse", "up"): _mouse("up"), ("mouse", "click"): _mouse("clicked"),
    ("mouse", "dblclick"): _mouse("double-clicked"), ("mouse", "wheel"): _mouse("wheel"),
}
