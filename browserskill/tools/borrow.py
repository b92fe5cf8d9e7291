"""tab borrow / tab return, and the user's own tabs (`tab list --scope user|all`).

Only in a session bound to an extension browser (its `AgentWindow`). A borrow asks the
user in the tab itself (approve / deny; no answer within the countdown is a deny), then
moves the tab into the Agent Window, remembering where it was. A borrow cancelled midway
puts the tab back; `tab return` and session stop do the same.
"""

from __future__ import annotations

from typing import Any

from browserskill.base.catalog.human import TabBorrowParams, TabReturnParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.agent_window import AgentWindow, Borrow
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements


def _window(ctx: ToolContext, field: str) -> AgentWindow:
    win = ctx.backend
    if not isinstance(win, AgentWindow):
        raise invalid(field, "the user's tabs exist only in a session in the user's browser",
                      hint="start one with `bsk session start --browser extension`")
    return win


def _user_tab_id(text: str) -> int | None:
    digits = text[1:] if text[:1] in ("u", "U") else ""
    return int(digits) if digits.isdigit() else None


async def user_tabs(ctx: ToolContext) -> list[dict[str, Any]]:
    win = _window(ctx, "scope")
    found = await win.require_link().call({"op": "tabs_query"})
    out = []
    for t in found["tabs"]:
        if t.get("agent_session") and not t.get("borrowed_by"):
            continue  # an Agent Window's own tab
        out.append({"tab_id": f"u{t['tabId']}", "url": t["url"], "title": t["title"],
                    "window_id": t["windowId"], "index": t["index"], "active": t["active"],
                    "borrowed_by": t.get("borrowed_by"), "restricted": t.get("restricted")})
    return out


@implements("tab_borrow")
async def tab_borrow(ctx: ToolContext, params: TabBorrowParams) -> dict[str, Any]:
    win = _window(ctx, "tab_id")
    session = ctx.session
    link = win.require_link()
    chrome = _user_tab_id(params["tab_id"])
    if chrome is None:
        raise invalid("tab_id", f"{params['tab_id']!r} is not a user tab id (they look like "
                      "u123)", hint="see `bsk tab list --scope user`")
    got = (await link.call({"op": "tab_get", "tabId": chrome}))["tab"]
    if got is None:
        raise BskError("tab_not_found", f"no tab {params['tab_id']} in the browser",
                       hint="`bsk tab list --scope user` lists the user's tabs",
                       details={"tab_id": params["tab_id"]})
    holder = win.ext.borrows.get(chrome)
    if holder is not None:
        raise BskError("action_failed", f"tab {params['tab_id']} is already borrowed by "
                       f"session {holder}", hint="wait until it is returned",
                       details={"reason": "already_borrowed", "session_id": holder},
                       dispatched=Dispatched.NO)
    if chrome in win.chrome_tabs.values() or any(
            w.window_id == got["windowId"] for w in win.ext.sessions.values()):
        raise invalid("tab_id", f"tab {params['tab_id']} is an agent's tab, not the user's")
    win.ext.borrows[chrome] = session.id  # reserved: no other session can ask meanwhile
    moving = False
    try:
        ctx.mark_dispatched()  # the prompt reaches the browser (the tab is not touched)

        async def dismiss_prompt() -> None:
            await link.call({"op": "prompt_cancel", "tabId": chrome}, timeout=2)

        asking = ctx.on_cancel("prompt_dismissed", dismiss_prompt)
        wait_s = params["prompt_timeout"]
        answer = await link.call({"op": "borrow_prompt", "tabId": chrome,
                                  "session_id": session.id, "label": session.label or "",
                                  "timeout_s": wait_s}, timeout=min(ctx.remaining(), wait_s + 10))
        ctx.settled(asking)
        if answer.get("reason") == "restricted":
            raise BskError("action_failed", answer.get("message", "restricted page"),
                           details={"reason": "restricted_page"}, dispatched=Dispatched.NO)
        if not answer.get("approved"):
            why = {"timeout": f"no answer within {wait_s:g}s: denied (it fails closed)",
                   "denied": "the user denied it"}.get(answer.get("reason", ""),
                                                       f"not approved ({answer.get('reason')})")
            raise BskError("action_failed", f"borrowing {params['tab_id']}: {why}",
                           hint="ask the user, or work in the Agent Window's own tabs",
                           details={"reason": "borrow_denied", "answer": answer.get("reason")},
                           dispatched=Dispatched.YES)
        tab_id = session.next_tab_id()
        origin_window, origin_index = got["windowId"], got["index"]
        previous = session.current_tab_id

        async def put_back() -> None:
            win.borrowed.pop(tab_id, None)
            win.chrome_tabs.pop(tab_id, None)
            tab = session.tabs.get(tab_id)
            if tab is not None:
                session.forget_tab(tab_id)
                tab.close()
                session.current_tab_id = previous if previous in session.tabs else \
                    session.current_tab_id
            await link.call({"op": "detach", "tabId": chrome}, timeout=2)
            await link.call({"op": "tab_restore", "tabId": chrome, "windowId": origin_window,
                             "index": origin_index}, timeout=2)
            win.ext.borrows.pop(chrome, None)

        moved = ctx.on_cancel("tab_returned", put_back)
        moving = True
        await link.call({"op": "tab_move", "tabId": chrome, "windowId": win.window_id,
                         "index": -1, "borrowed_by": session.id})
        win.borrowed[tab_id] = Borrow(chrome, origin_window, origin_index, got.get("url", ""))
        tab = await win.attach(tab_id, chrome)
        session.add_tab(tab)
        ctx.settled(moved)
    except BaseException:
        if not moving:
            win.ext.borrows.pop(chrome, None)
        raise
    return {"tab_id": tab_id, "user_tab": f"u{chrome}", "url": tab.url, "title": got["title"],
            "from": {"window_id": origin_window, "index": origin_index}, "current": True}


@implements("tab_return")
async def tab_return(ctx: ToolContext, params: TabReturnParams) -> dict[str, Any]:
    win = _window(ctx, "tab_id")
    tab_id = params["tab_id"]
    chrome = _user_tab_id(tab_id)
    if chrome is not None and tab_id not in ctx.session.tabs:
        tab_id = next((t for t, b in win.borrowed.items() if b.chrome_tab_id == chrome), tab_id)
    tab = ctx.session.tab(tab_id)
    if tab_id not in win.borrowed:
        raise invalid("tab_id", f"tab {tab_id} is not a borrowed tab",
                      hint="close the Agent Window's own tabs with `bsk tab close`")
    ctx.mark_dispatched()
    placed = await win.return_tab(tab)
    ctx.session.forget_tab(tab_id)
    return {"returned": tab_id, **placed, "current_tab": ctx.session.current_tab_id}
