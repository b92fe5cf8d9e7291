"""session stop: an ordinary queued operation, so it never overlaps a running call."""

from __future__ import annotations

from typing import Any

from browserskill.base.catalog.params import NoParams
from browserskill.session.sessions import Recordings
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements


@implements("session_stop")
async def session_stop(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    ctx.mark_dispatched()
    closed = await ctx.end_session()
    out: dict[str, Any] = {"session_id": ctx.session.id, "stopped": True, "tabs_closed": closed}
    saved = ctx.feature(Recordings).saved
    if saved:  # videos and traces it was still recording
        out["recordings_saved"] = saved
    return out
