"""screenshot: the current tab's viewport, its full page, or one element, as an image file.

Invariant: the bytes written are in the format the file name says (.png, .jpg/.jpeg); a
name that says another (or none) is refused before anything is sent to the browser.
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

from browserskill.base import user_files
from browserskill.base.catalog.reading import ScreenshotParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.input import restore_hover
from browserskill.tools.output_files import check_writable
from browserskill.tools.pointer import frame_origin
from browserskill.tools.refs import call_on, resolve
from browserskill.tools.registry import implements

# The file name's extension picks the format Page.captureScreenshot encodes.
FORMATS = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg"}


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def jpeg_size(data: bytes) -> tuple[int, int]:
    """From the frame header (SOFn), found by walking the segments."""
    at = 2
    while at + 9 < len(data):
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return 0, 0


def _format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise invalid("path", f"{path.name}: the file name must end in .png, .jpg or .jpeg "
                      "(that picks the format)",
                      hint=f"e.g. {path.with_suffix('.png').name}")
    return fmt


_ELEMENT_BOX = """function() {
  this.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  const r = this.getBoundingClientRect();
  return {x: r.left, y: r.top, width: r.width, height: r.height};
}"""


async def _clip(ctx: ToolContext, params: ScreenshotParams) -> dict[str, Any]:
    """Page.captureScreenshot options for --full-page or --ref (none: the viewport)."""
    if params["ref"]:
        target = resolve(ctx, params["ref"])
        box: Any = await call_on(ctx, target, _ELEMENT_BOX)
        if box["width"] < 1 or box["height"] < 1:
            raise BskError("action_failed", f"{params['ref']} is hidden or has no size",
                           details={"reason": "not_visible", "ref": params["ref"]},
                           dispatched=Dispatched.NO)
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
async def screenshot(ctx: ToolContext, params: ScreenshotParams) -> dict[str, Any]:
    if params["ref"] and params["full_page"]:
        raise invalid("full_page", "give --full-page or --ref, not both")
    if params["path"]:
        path = Path(params["path"])
        if not path.is_absolute():
            raise invalid("path", "must be an absolute path (the CLI makes it so)")
        fmt = _format(path)
        check_writable(path)
    else:
        fmt = "png"
        folder = Path(ctx.state_dir) / "screenshots"
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{ctx.op_id}.png"
    await restore_hover(ctx, ctx.tab)
    extra = await _clip(ctx, params)
    shot = await ctx.inspect("Page.captureScreenshot", {"format": fmt, **extra})
    data = base64.b64decode(shot["data"])
    await user_files.write_file(path, data)
    width, height = png_size(data) if fmt == "png" else jpeg_size(data)
    out = {"path": str(path), "bytes": len(data), "width": width, "height": height,
           "format": fmt,
           "tab_id": ctx.tab.tab_id, "url": ctx.tab.url}
    if params["ref"]:
        out["ref"] = params["ref"]
    elif params["full_page"]:
        out["full_page"] = True
    return out
