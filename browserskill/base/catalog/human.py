"""A person in the loop: hand the session to a person, borrow and return a user's tab.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.fields import TAB_ID_ERRORS
from browserskill.base.catalog.params import M, S
from browserskill.base.catalog.spec import Param, ToolSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "human"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "request_help", ("request-help",), S,
        "Hand the session to a person (a login with two-factor, a captcha, a choice the "
        "agent must not make): it shows on the dashboard (bsk show) with the reason, "
        "the person acts in its live view, and agent calls meanwhile are session_busy. "
        "Ends completed when the person presses Done or the --until condition holds, "
        "saying what changed (URL, title, new tabs); user_interrupted if they press "
        "Decline; failed (reason timeout) at the call's deadline (--timeout, default 300 s).",
        (Param("reason", "string", "what the person should do, shown to them",
               required=True, positional=True, max_length=2000),
         Param("until", "string", "also done when this holds in the current tab: text=TEXT "
               "(visible text), url=TEXT (the URL contains it) or selector=CSS",
               max_length=10_000)),
        example='bsk request-help "Log in with your 2FA code" --until url=/inbox',
        default_timeout_s=300.0,
    ),
    ToolSpec(
        "tab_borrow", ("tab", "borrow"), M,
        "Borrow one of the user's tabs (extension browser): the user approves in the tab "
        "(no answer: denied), then it moves into the Agent Window and becomes current.",
        (Param("tab_id", "string", "user tab id from `bsk tab list --scope user` (u123)",
               required=True, positional=True, max_length=64),
         Param("prompt_timeout", "number", "seconds the user has to answer (default 30)",
               default=30, minimum=1, maximum=300)),
        example="bsk tab borrow u123", default_timeout_s=330.0, errors=TAB_ID_ERRORS,
    ),
    ToolSpec(
        "tab_return", ("tab", "return"), M,
        "Give a borrowed tab back: it goes back to its window and place (or a sensible "
        "window if that one is gone, saying so).",
        (Param("tab_id", "string", "the borrowed tab's id in this session (or its u123 id)",
               required=True, positional=True, max_length=64),),
        example="bsk tab return t2", errors=TAB_ID_ERRORS,
    ),
)


class RequestHelpParams(TypedDict):
    reason: str
    until: str | None


class TabBorrowParams(TypedDict):
    tab_id: str
    prompt_timeout: float


class TabReturnParams(TypedDict):
    tab_id: str


PARAMS: dict[str, type] = {"request_help": RequestHelpParams, "tab_borrow": TabBorrowParams,
                           "tab_return": TabReturnParams}


def _helped(r: dict[str, Any]) -> str:
    how = "the person pressed Done" if r.get("ended_by") == "done" else \
        f"{r.get('until')} holds"
    text = (f"helped ({how}, after {r.get('waited_ms', 0) / 1000:.1f} s): "
            f"{r.get('tab_id')} {r.get('url')} — {r.get('title')}")
    if r.get("url") != r.get("url_before"):
        text += f"\n  was {r.get('url_before')}"
    for key, what in (("new_tabs", "new tabs"), ("closed_tabs", "closed tabs")):
        if r.get(key):
            text += f"\n  {what}: {', '.join(r[key])}"
    return text


def _tab_borrowed(r: dict[str, Any]) -> str:
    return f"borrowed {r.get('user_tab')} as {r.get('tab_id')} (now current): {r.get('url')}"


def _tab_returned(r: dict[str, Any]) -> str:
    return f"returned {r.get('returned')}; current tab: {r.get('current_tab') or 'none'}"


RENDERERS: dict[Words, Renderer] = {
    ("request-help",): _helped, ("tab", "borrow"): _tab_borrowed,
    ("tab", "return"): _tab_returned,
}
