"""tab list|new|select|close: only ever this session's own tabs."""

from __future__ import annotations

from typing import Any

from browserskill.base.catalog.tabs import TabIdParams, TabListParams, TabNewParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.browser.link import LinkError
from browserskill.browser.tab import DialogOpened, Tab, TabGone
from browserskill.tools.context import ToolContext
from browserskill.tools.navigation import (
    check_policy,
    navigate,
    new_current_tab,
    normalize_url,
)
from browserskill.tools.registry import implements


def describe(tab: Tab, current: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"tab_id": tab.tab_id, "url": tab.url, "title": tab.title,
                           "current": tab.tab_id == current, "target_id": tab.target_id}
    if tab.gone:
        out["gone"] = tab.gone
    return out


async def _retitled(ctx: ToolContext, tab: Tab) -> Tab:
    """The tab with its page's title now: Chromium sends no event when a document sets
    its title (a tab the page opened kept the address it was given as title), so it is
    asked, as a snapshot or `open` asks. A tab that can't answer keeps the one it had."""
    if not tab.gone:
        try:
            info = await ctx.inspect("Target.getTargetInfo", tab=tab)
        except (LinkError, TabGone, DialogOpened, TimeoutError):
            return tab
        tab.title = info.get("targetInfo", {}).get("title", tab.title)
    return tab


@implements("tab_list")
async def tab_list(ctx: ToolContext, params: TabListParams) -> dict[str, Any]:
    current = ctx.session.current_tab_id
    # (a copy: a tab the page opens may join while a title is asked)
    tabs = [describe(await _retitled(ctx, t), current) for t in list(ctx.session.tabs.values())]
    if params.get("scope", "agent") != "agent":
        from browserskill.tools.borrow import user_tabs

        users = await user_tabs(ctx)
        return {"tabs": users if params["scope"] == "user" else tabs + users}
    return {"tabs": tabs}


@implements("tab_new")
async def tab_new(ctx: ToolContext, params: TabNewParams) -> dict[str, Any]:
    url = normalize_url(params["url"]) if params["url"] else None
    if url:
        check_policy(ctx, url)
    tab, close_half_made_tab, made = await new_current_tab(ctx)
    if url:
        try:
            await navigate(ctx, tab, url, params["wait_until"])
        except BskError:
            await close_half_made_tab()  # a failed open leaves no tab behind
            raise
    ctx.settled(made)
    return describe(tab, ctx.session.current_tab_id)


@implements("tab_select")
async def tab_select(ctx: ToolContext, params: TabIdParams) -> dict[str, Any]:
    tab = ctx.session.tab(params["tab_id"])
    if tab.gone:
        raise BskError("action_failed", f"tab {tab.tab_id} is gone: {tab.gone}",
                       details={"reason": "tab_gone"}, dispatched=Dispatched.NO)
    ctx.session.current_tab_id = tab.tab_id
    await ctx.backend.show(tab, ctx.remaining())
    return describe(await _retitled(ctx, tab), tab.tab_id)


@implements("tab_close")
async def tab_close(ctx: ToolContext, params: TabIdParams) -> dict[str, Any]:
    tab = ctx.session.tab(params["tab_id"])
    ctx.backend.check_close(tab)  # a user's borrowed tab is returned, never closed
    ctx.mark_dispatched()
    ctx.session.forget_tab(tab.tab_id)
    await ctx.backend.close_tab(tab)
    return {"closed": tab.tab_id, "current_tab": ctx.session.current_tab_id,
            "tabs_left": len(ctx.session.tabs)}
