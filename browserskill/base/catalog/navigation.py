"""Navigation: open a URL, go back, forward, reload, wait for a page condition.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import WAIT_UNTIL, M, R
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import download_line, short
from browserskill.base.contract import MAX_TIMEOUT_MS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "core"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "open", ("open",), M, "Navigate the current tab to a URL and wait for it to load.",
        (Param("url", "string", "address to open (http, https, file, data, about)",
               required=True, positional=True, max_length=8192), WAIT_UNTIL),
        example="bsk open https://example.com", after_crash=True, during_dialog=True, acting=True
    ),
    ToolSpec("back", ("back",), M, "Go back in the current tab's history.", (WAIT_UNTIL,),
             after_crash=True, acting=True),
    ToolSpec("forward", ("forward",), M, "Go forward in the current tab's history.",
             (WAIT_UNTIL,), after_crash=True, acting=True),
    ToolSpec("reload", ("reload",), M, "Reload the current tab.", (WAIT_UNTIL,),
             after_crash=True, acting=True),
    ToolSpec(
        "wait", ("wait",), R,
        "Wait for text, a selector, a navigation, network idle, an element or text to go "
        "away, or N ms. Exactly one "
        "condition; waits on page events, bounded by --timeout; not met: action_failed. "
        "Text and selectors are looked for in every frame, iframes too (found in one: "
        "frame_url).",
        (Param("text", "string", "text that appears in the visible text of the page or "
               "of one of its iframes", max_length=10_000),
         Param("selector", "string", "CSS selector of an element that appears (in the "
               "page or in one of its iframes)", max_length=10_000),
         Param("navigation", "boolean", "the next navigation of the tab (or the one in "
               "progress) loads", default=False),
         Param("network_idle", "boolean", "no network requests for 500 ms after the page "
               "loaded", default=False),
         Param("ms", "integer", "milliseconds to wait (the call's deadline stretches to "
               "fit unless --timeout is given)", minimum=0, maximum=MAX_TIMEOUT_MS),
         Param("gone", "string", "ref of an element that goes away (removed, hidden, or "
               "its page replaced)", max_length=64),
         Param("text_gone", "string", "text that is no longer in the visible text of the "
               "page (its main frame)", max_length=10_000),
         WAIT_UNTIL),
        example='bsk wait --text "Welcome"',
        exactly_one=("text", "selector", "navigation", "network_idle", "ms"),
    ),
)


class OpenParams(TypedDict):
    url: str
    wait_until: str
    settle: int | None


class HistoryParams(TypedDict):
    """back, forward, reload."""

    wait_until: str
    settle: int | None


class WaitParams(TypedDict):
    text: str | None
    selector: str | None
    navigation: bool
    network_idle: bool
    ms: int | None
    gone: str | None
    text_gone: str | None
    wait_until: str


PARAMS: dict[str, type] = {"open": OpenParams, "back": HistoryParams,
                           "forward": HistoryParams, "reload": HistoryParams,
                           "wait": WaitParams}


def _page(r: dict[str, Any]) -> str:
    title = f" — {r['title']}" if r.get("title") else ""
    if r.get("downloads"):  # the address was a file: downloaded, the page stayed
        return "\n".join(download_line(d) for d in r["downloads"]) + (
            f"\n(the tab stays on {r.get('url', '')})")
    notes = [r[k] for k in ("renderer_replaced", "dialogs_note", "note") if r.get(k)]
    status = r.get("http_status") or 200
    shown = f" (HTTP {status})" if status >= 400 else ""  # the page is the server's error
    return f"{r.get('url', '')}{shown}{title}" + "".join(f"\nnote: {n}" for n in notes)


def _wait(r: dict[str, Any]) -> str:
    head = f"waited {r.get('waited_ms', 0)} ms"
    if "text" in r:
        return f"{head}: text {short(r['text'])} is on the page"
    if "selector" in r:
        seen = "visible" if r.get("visible") else "present but not visible"
        return f"{head}: {r['selector']} matched {r.get('element')} ({seen})"
    if r.get("navigated"):
        return f"{head}: navigated to {r.get('url')}"
    if "in_flight" in r:
        return f"{head}: network idle"
    if "gone" in r:
        return f"{head}: {r['gone']} is gone ({r.get('why', 'removed or hidden')})"
    if "text_gone" in r:
        return f"{head}: text {short(r['text_gone'])} is no longer on the page"
    return head


RENDERERS: dict[Words, Renderer] = {
    ("open",): _page, ("back",): _page, ("forward",): _page, ("reload",): _page,
    ("wait",): _wait,
}
