"""screenshot: the current tab's viewport as a PNG file."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

from browserskill.errors import invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@implements("screenshot")
async def screenshot(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    if params["path"]:
        path = Path(params["path"])
        if not path.is_absolute():
            raise invalid("path", "must be an absolute path (the CLI makes it so)")
        if path.is_dir():
            raise invalid("path", f"{path} is a directory; give a file name")
        if not path.parent.is_dir():
            raise invalid("path", f"directory {path.parent} does not exist")
    else:
        folder = Path(ctx.state_dir) / "screenshots"
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{ctx.op.op_id}.png"
    shot = await ctx.inspect("Page.captureScreenshot", {"format": "png"})
    data = base64.b64decode(shot["data"])
    try:
        path.write_bytes(data)
    except OSError as e:
        raise invalid("path", f"can't write {path}: {e.strerror}") from None
    width, height = png_size(data)
    return {"path": str(path), "bytes": len(data), "width": width, "height": height,
            "tab_id": ctx.tab.tab_id, "url": ctx.tab.url}
