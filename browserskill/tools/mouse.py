"""`mouse move|down|up|click|dblclick|wheel X Y`: the pointer at viewport coordinates.

The explicit fallback when no ref fits (a canvas, a map, a custom widget): CSS pixels
from the top-left of the current tab's viewport, checked against the viewport before
anything is sent. The steps and their honesty are a click's (`tools/input.py`): each is
recorded before it can reach Chrome, and a press that a cancel interrupts is released
off the page (`mouse_released`). A button pressed by a completed `mouse down` stays held
on purpose, so later moves carry it (a drag) until `mouse up`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from browserskill.base.catalog.mouse import (
    MouseClickParams,
    MouseDownParams,
    MouseMoveParams,
    MouseUpParams,
    MouseWheelParams,
)
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.input import (
    BUTTONS,
    Marks,
    after_input,
    click_at,
    modifier_mask,
    mouse,
    release_off_page,
)
from browserskill.tools.pointer import HoverPoint, Pointer
from browserskill.tools.registry import implements


async def _point(ctx: ToolContext, params: Mapping[str, Any]) -> tuple[float, float]:
    """X Y, refused (nothing sent) unless inside the tab's viewport."""
    x, y = float(params["x"]), float(params["y"])
    metrics = await ctx.inspect("Page.getLayoutMetrics")
    view = metrics.get("cssVisualViewport") or metrics.get("visualViewport") or {}
    width, height = view.get("clientWidth", 0), view.get("clientHeight", 0)
    for name, value, limit in (("x", x, width), ("y", y, height)):
        if width and height and value >= limit:
            raise invalid(name, f"{value:g} is outside the viewport ({width:g}x{height:g} "
                          "CSS pixels)", hint="coordinates count from the viewport's "
                          "top-left; `bsk screenshot` shows what is where")
    return x, y


def _held_mask(ctx: ToolContext) -> int:
    mask = 0
    for button in ctx.feature(Pointer).buttons_held:
        mask |= BUTTONS[button]
    return mask


def _moved(ctx: ToolContext, x: float, y: float) -> None:
    tab = ctx.tab
    ctx.feature(Pointer).hover = HoverPoint(tab.tab_id, f"{x:g},{y:g}", x, y, tab.navigations)


def _base(ctx: ToolContext, x: float, y: float) -> dict[str, Any]:
    out: dict[str, Any] = {"x": x, "y": y, "tab_id": ctx.tab.tab_id}
    held = sorted(ctx.feature(Pointer).buttons_held)
    if held:
        out["buttons_held"] = held
    return out


@implements("mouse_move")
async def mouse_move(ctx: ToolContext, params: MouseMoveParams) -> dict[str, Any]:
    x, y = await _point(ctx, params)
    held = _held_mask(ctx)
    extra: dict[str, Any] = {"buttons": held} if held else {}
    if held:
        extra["button"] = sorted(ctx.feature(Pointer).buttons_held)[0]
    await mouse(ctx, ctx.tab, "move", x, y, **extra)
    _moved(ctx, x, y)
    return _base(ctx, x, y)


@implements("mouse_down")
async def mouse_down(ctx: ToolContext, params: MouseDownParams) -> dict[str, Any]:
    x, y = await _point(ctx, params)
    button = params["button"]
    held = ctx.feature(Pointer).buttons_held
    if button in held:
        raise BskError("action_failed", f"the {button} button is already down",
                       hint=f"release it first: bsk mouse up X Y --button {button}",
                       details={"reason": "button_held", "button": button},
                       dispatched=Dispatched.NO)
    tab = ctx.tab
    await mouse(ctx, tab, "move", x, y)

    async def release() -> None:
        await release_off_page(tab, button)

    pressed = ctx.on_cancel("mouse_released", release, undoes_effect=False,
                            after_step="mousePressed")
    await mouse(ctx, tab, "press", x, y, button=button, buttons=_held_mask(ctx) |
                BUTTONS[button], clickCount=1)
    ctx.settled(pressed)  # held on purpose from here on, until `mouse up`
    held.add(button)
    _moved(ctx, x, y)
    return {**_base(ctx, x, y), "button": button}


@implements("mouse_up")
async def mouse_up(ctx: ToolContext, params: MouseUpParams) -> dict[str, Any]:
    x, y = await _point(ctx, params)
    button = params["button"]
    tab = ctx.tab
    marks = Marks.take(ctx, tab)
    held = ctx.feature(Pointer).buttons_held
    was_held = button in held
    mask = _held_mask(ctx)
    await mouse(ctx, tab, "move", x, y, **({"button": button, "buttons": mask} if mask else {}))
    held.discard(button)  # once sent, it is up whatever the answer
    await mouse(ctx, tab, "release", x, y, button=button, buttons=_held_mask(ctx),
                clickCount=1)
    _moved(ctx, x, y)
    result = {**_base(ctx, x, y), "button": button}
    if not was_held:
        result["note"] = f"the {button} button was not down (no `mouse down` before)"
    result.update(await after_input(ctx, marks, params["wait_until"]))
    return result


async def _click(ctx: ToolContext, params: MouseClickParams, count: int) -> dict[str, Any]:
    x, y = await _point(ctx, params)
    tab = ctx.tab
    modifiers = modifier_mask(params["modifiers"])
    marks = Marks.take(ctx, tab)
    await click_at(ctx, tab, x, y, button=params["button"], count=count, modifiers=modifiers)
    _moved(ctx, x, y)
    result = {**_base(ctx, x, y), "button": params["button"]}
    if count > 1:
        result["count"] = count
    result.update(await after_input(ctx, marks, params["wait_until"]))
    return result


@implements("mouse_click")
async def mouse_click(ctx: ToolContext, params: MouseClickParams) -> dict[str, Any]:
    return await _click(ctx, params, 1)


@implements("mouse_dblclick")
async def mouse_dblclick(ctx: ToolContext, params: MouseClickParams) -> dict[str, Any]:
    return await _click(ctx, params, 2)


@implements("mouse_wheel")
async def mouse_wheel(ctx: ToolContext, params: MouseWheelParams) -> dict[str, Any]:
    dx, dy = params["dx"], params["dy"]
    if dx == 0 and dy == 0:
        raise invalid("dy", "give --dx and/or --dy (pixels; negative scrolls up/left)")
    x, y = await _point(ctx, params)
    await mouse(ctx, ctx.tab, "wheel", x, y, deltaX=dx, deltaY=dy)
    _moved(ctx, x, y)
    return {**_base(ctx, x, y), "scrolled_by": {"dx": dx, "dy": dy}}
