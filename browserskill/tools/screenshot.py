"""screenshot: the current tab's viewport, its full page, or one element, as a PNG file."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

from browserskill.base import user_files
from browserskill.base.errors import BskError, invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.input import restore_hover
from browserskill.tools.output_files import check_writable
from browserskill.tools.pointer import frame_origin
from browserskill.tools.refs import call_on, resolve
from browserskill.tools.registry import implements


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])
    return width, height


_ELEMENT_BOX = """function() {
  this.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  const r = this.getBoundingClientRect();
  return {x: r.left, y: r.top, width: r.width, height: r.height};
}"""


async def _clip(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    """Page.captureScreenshot options for --full-page or --ref (none: the viewport)."""
    if params["ref"]:
        target = resolve(ctx, params["ref"])
        box: Any = await call_on(ctx, target, _ELEMENT_BOX)
        if box["width"] < 1 or box["height"] < 1:
            raise BskError("action_failed", f"{params['ref']} is hidden or has no size",
                           details={"reason": "not_visible", "ref": params["ref"]},
                           dispatched="no")
        ox, oy = await frame_origin(ctx, target.tab, target.binding.frame_id)
        view = (await ctx.inspect("Page.getLayoutMetrics", tab=target.tab))["cssVisualViewport"]
        return {"captureBeyondViewport": True, "clip": {
            "x": box["x"] + ox + view["pageX"], "y": box["y"] + oy + view["pageY"],
            "width": box["width"], "height": box["height"], "scale": 1}}
    if params["full_page"]:
        size = (await ctx.inspect("Page.getLayoutMetrics"))["cssContentSize"]
        return {"captureBeyondViewport": True, "clip": {
            "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}
    return {}


@implements("screenshot")
async def screenshot(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    if params["ref"] and params["full_page"]:
        raise invalid("full_page", "give --full-page or --ref, not both")
    if params["path"]:
        path = Path(params["path"])
        if not path.is_absolute():
            raise invalid("path", "must be an absolute path (the CLI makes it so)")
        check_writable(path)
    else:
        folder = Path(ctx.state_dir) / "screenshots"
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{ctx.op_id}.png"
    await restore_hover(ctx, ctx.tab)
    extra = await _clip(ctx, params)
    shot = await ctx.inspect("Page.captureScreenshot", {"format": "png", **extra})
    data = base64.b64decode(shot["data"])
    await user_files.write_file(path, data)
    width, height = png_size(data)
    out = {"path": str(path), "bytes": len(data), "width": width, "height": height,
           "tab_id": ctx.tab.tab_id, "url": ctx.tab.url}
    if params["ref"]:
        out["ref"] = params["ref"]
    elif params["full_page"]:
        out["full_page"] = True
    return out
