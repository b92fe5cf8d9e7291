"""dialog accept|dismiss: answer the alert, confirm, prompt or beforeunload that is open.

Dialogs are reported in the result of the action that opened them (the dispatcher turns
a `DialogOpened` into that result), so no call ever hangs on one.
"""

from __future__ import annotations

from typing import Any

from browserskill.base.catalog.tabs import DialogAcceptParams, DialogDismissParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements


async def answer(ctx: ToolContext, accept: bool, text: str | None) -> dict[str, Any]:
    tab = ctx.tab
    dialog = tab.dialog
    if dialog is None:
        raise BskError("action_failed", "no dialog is open in the current tab",
                       details={"reason": "no_dialog"}, dispatched=Dispatched.NO)
    params: dict[str, Any] = {"accept": accept}
    if text is not None:
        params["promptText"] = text
    await ctx.act("Page.handleJavaScriptDialog", params, tab=tab,
                  session_id=tab.dialog_session)
    return {"dialog": dialog, "accepted": accept, "tab_id": tab.tab_id, "url": tab.url}


@implements("dialog_accept")
async def dialog_accept(ctx: ToolContext, params: DialogAcceptParams) -> dict[str, Any]:
    return await answer(ctx, True, params["text"])


@implements("dialog_dismiss")
async def dialog_dismiss(ctx: ToolContext, params: DialogDismissParams) -> dict[str, Any]:
    return await answer(ctx, False, None)
