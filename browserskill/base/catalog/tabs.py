"""Tabs and dialogs: list, open, select and close the session's tabs; answer a dialog.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.fields import TAB_ID_ERRORS
from browserskill.base.catalog.params import WAIT_UNTIL, M, R
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "core"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "dialog_accept", ("dialog", "accept"), M,
        "Accept the open alert/confirm/prompt/beforeunload dialog (TEXT answers a prompt).",
        (Param("text", "string", "text for a prompt", positional=True, max_length=100_000),),
        during_dialog=True, acting=True
    ),
    ToolSpec("dialog_dismiss", ("dialog", "dismiss"), M, "Dismiss the open dialog.",
             during_dialog=True, acting=True),
    ToolSpec("tab_list", ("tab", "list"), R,
             "List this session's tabs; in an extension browser, --scope user lists the "
             "user's own tabs (ids like u123, to borrow) and all lists both.",
             (Param("scope", "string", "whose tabs", default="agent",
                    choices=("agent", "user", "all")),),
             during_dialog=True, after_crash=True),
    ToolSpec(
        "tab_new", ("tab", "new"), M, "Open a new tab in this session and make it current.",
        (Param("url", "string", "address to open", positional=True, max_length=8192),
         WAIT_UNTIL),
        during_dialog=True, after_crash=True,
    ),
    ToolSpec(
        "tab_select", ("tab", "select"), R, "Make one of this session's tabs current.",
        (Param("tab_id", "string", "tab id from `bsk tab list`", required=True,
               positional=True, max_length=64),),
        during_dialog=True, after_crash=True, errors=TAB_ID_ERRORS,
    ),
    ToolSpec(
        "tab_close", ("tab", "close"), M, "Close one of this session's tabs.",
        (Param("tab_id", "string", "tab id from `bsk tab list`", required=True,
               positional=True, max_length=64),),
        during_dialog=True, after_crash=True, errors=TAB_ID_ERRORS,
    ),
)


class DialogAcceptParams(TypedDict):
    text: str | None
    settle: int | None


class DialogDismissParams(TypedDict):
    settle: int | None


class TabListParams(TypedDict):
    scope: str


class TabNewParams(TypedDict):
    url: str | None
    wait_until: str


class TabIdParams(TypedDict):
    """tab select, tab close."""

    tab_id: str


PARAMS: dict[str, type] = {"dialog_accept": DialogAcceptParams,
                           "dialog_dismiss": DialogDismissParams, "tab_list": TabListParams,
                           "tab_new": TabNewParams, "tab_select": TabIdParams,
                           "tab_close": TabIdParams}


def _dialog_answer(r: dict[str, Any]) -> str:
    d = r.get("dialog") or {}
    verb = "accepted" if r.get("accepted") else "dismissed"
    return (f"{verb} the {d.get('type', '')} dialog {short(d.get('message', ''))}"
            + (f"; page: {r.get('url')}" if r.get("url") else ""))


def _tab_line(t: dict[str, Any]) -> str:
    mark = "*" if t.get("current") else " "
    gone = f"  [gone: {t['gone']}]" if t.get("gone") else ""
    title = f"  {t['title']}" if t.get("title") else ""
    return f"{mark} {t['tab_id']:<4} {t.get('url', '')}{title}{gone}"


def _tab_list(r: dict[str, Any]) -> str:
    return "\n".join(_tab_line(t) for t in r.get("tabs", [])) or "(no tabs)"


def _tab_closed(r: dict[str, Any]) -> str:
    return f"closed {r['closed']}; current tab: {r.get('current_tab') or 'none'}"


RENDERERS: dict[Words, Renderer] = {
    ("dialog", "accept"): _dialog_answer, ("dialog", "dismiss"): _dialog_answer,
    ("tab", "list"): _tab_list, ("tab", "new"): _tab_line,
    ("tab", "select"): _tab_line, ("tab", "close"): _tab_closed,
}
