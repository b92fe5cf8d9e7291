"""Reading the page: its accessibility snapshot, a screenshot, a script's value.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

import json
from typing import TypedDict

from browserskill.base.catalog.params import EVAL_MAX_CHARS, EVAL_MAX_CHARS_LIMIT, TARGET_MAX, M, R
from browserskill.base.catalog.spec import Param, ToolSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "core"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "eval", ("eval",), M,
        "Run JavaScript in the page; awaits promises and returns the value. Each call has "
        "its own scope (top-level const/let don't collide between calls). A script "
        "exception is a result with ok=false, not a failure.",
        (Param("expression", "string", "JavaScript expression or statements (with --ref: a "
               "function of the element, or an expression using `el`)",
               required=True, positional=True, max_length=1_000_000, stdin=True),
         Param("ref", "string", "run the function with this element as its argument, e.g. "
               "--ref e3 'el => el.value'", max_length=64),
         Param("frame", "string", "ref of an <iframe>: run in that frame's document",
               max_length=64),
         Param("max_chars", "integer", "cut the value at this many characters (of its JSON "
               "text, for an object)", default=EVAL_MAX_CHARS, minimum=100,
               maximum=EVAL_MAX_CHARS_LIMIT)),
        example="bsk eval 'document.title'",
    ),
    ToolSpec(
        "snapshot", ("snapshot",), R,
        "Accessibility tree of the current tab, one node per line, with refs (e12) to act on: "
        "controls, links, and anything clickable, focusable, draggable, droppable or editable. "
        "Iframes "
        "are included; their refs carry the frame (f1e7).",
        (Param("interactive", "boolean", "only actionable nodes, with the named containers "
               "around them", default=False, short="-i"),
         Param("max_tokens", "integer", "truncate the text to about this many tokens "
               "(chars/4), saying what was cut", minimum=50, maximum=10_000_000),
         Param("ref", "string", "only the subtree of this ref (or locator)",
               max_length=TARGET_MAX),
         Param("tree", "boolean", "also return the structured tree (the CLI's --json sets it)",
               default=False),
         Param("diff", "boolean", "only what changed since this session's last snapshot of "
               "the same document taken the same way (-i or whole) (added, removed and "
               "changed lines with their ancestors; "
               "refs of unchanged elements stay valid), or `no changes`; a new document "
               "gives the full snapshot, saying so", default=False)),
        example="bsk snapshot --interactive",
        json_param="tree",
    ),
    ToolSpec(
        "screenshot", ("screenshot",), R,
        "Capture the current tab as PNG or JPEG: the viewport, the full page, or one element.",
        (Param("path", "string", "file to write: .png, .jpg or .jpeg picks the format "
               "(default: a new PNG file in the state dir)",
               positional=True, path=True),
         Param("full_page", "boolean", "the whole scrollable page, not just the viewport",
               default=False),
         Param("ref", "string", "only this element (scrolled into view): a ref or a "
               "locator", max_length=TARGET_MAX)),
        example="bsk screenshot --full-page page.png",
    ),
)


class EvalParams(TypedDict):
    expression: str
    ref: str | None
    frame: str | None
    max_chars: int


class SnapshotParams(TypedDict):
    interactive: bool
    max_tokens: int | None
    ref: str | None
    tree: bool
    diff: bool


class ScreenshotParams(TypedDict):
    path: str | None
    full_page: bool
    ref: str | None


PARAMS: dict[str, type] = {"eval": EvalParams, "snapshot": SnapshotParams,
                           "screenshot": ScreenshotParams}


def _eval(r: dict[str, Any]) -> str:
    if not r.get("ok", True):
        return f"threw: {r.get('exception')}"
    if r.get("description"):
        return str(r["description"])
    if r.get("type") == "undefined":
        return "undefined"
    value = r.get("value")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text + (f"\n[… {r['note']}]" if r.get("truncated") else "")


def _snapshot(r: dict[str, Any]) -> str:
    head = f"# {r.get('tab_id')} · {r.get('url')}" + (f" · {r['title']}" if r.get("title") else "")
    return f"{head}\n{r.get('snapshot', '')}"


def _screenshot(r: dict[str, Any]) -> str:
    return f"{r['path']} ({r['width']}x{r['height']}, {r['bytes']} bytes)"


RENDERERS: dict[Words, Renderer] = {
    ("eval",): _eval, ("snapshot",): _snapshot, ("screenshot",): _screenshot,
}
