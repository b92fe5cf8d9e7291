"""tab list|new|select|close: only ever this session's own tabs."""

from __future__ import annotations

from typing import Any

from browserskill.browser.tab import Tab
from browserskill.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.navigation import navigate, normalize_url
from browserskill.tools.registry import implements


def describe(tab: Tab, current: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"tab_id": tab.tab_id, "url": tab.url, "title": tab.title,
                           "current": tab.tab_id == current, "target_id": tab.target_id}
    if tab.gone:
        out["gone"] = tab.gone
    return out


@implements("tab_list")
async def tab_list(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    current = ctx.session.current_tab_id
    return {"tabs": [describe(t, current) for t in ctx.session.tabs.values()]}


@implements("tab_new")
async def tab_new(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    url = normalize_url(params["url"]) if params["url"] else None
    ctx.op.effect_sent = True
    ctx.op.dispatched = "yes"
    tab = await ctx.browser.new_tab(ctx.session.next_tab_id())
    try:
        ctx.session.add_tab(tab)
        if url:
            await navigate(ctx, tab, url, params["wait_until"])
    except BaseException:
        # Compensation: a tab this call half made is closed, not left behind.
        ctx.session.forget_tab(tab.tab_id)
        await ctx.browser.close_tab(tab)
        raise
    return describe(tab, ctx.session.current_tab_id)


@implements("tab_select")
async def tab_select(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.session.tab(params["tab_id"])
    if tab.gone:
        raise BskError("action_failed", f"tab {tab.tab_id} is gone: {tab.gone}",
                       details={"reason": "tab_gone"}, dispatched="no")
    ctx.session.current_tab_id = tab.tab_id
    await ctx.inspect("Page.bringToFront", tab=tab)
    return describe(tab, tab.tab_id)


@implements("tab_close")
async def tab_close(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.session.tab(params["tab_id"])
    ctx.op.effect_sent = True
    ctx.op.dispatched = "yes"
    ctx.session.forget_tab(tab.tab_id)
    await ctx.browser.close_tab(tab)
    return {"closed": tab.tab_id, "current_tab": ctx.session.current_tab_id,
            "tabs_left": len(ctx.session.tabs)}
