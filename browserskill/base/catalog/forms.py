"""Forms: fill a field, select options, check and uncheck, upload files.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import REF, SECRET, M, T
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import short, went

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "core"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "fill", ("fill",), M,
        "Replace the value of a text field, textarea or contenteditable with TEXT, as real "
        "input (input and change events fire; a field that suggests as you type keeps "
        "focus, its change comes when you leave it); empty TEXT clears it. "
        "--secret NAME enters a stored secret instead, only on a frame of its origins; its "
        "value is shown and stored nowhere.",
        (REF, Param("text", "string", "the new value (or give --secret)", positional=True,
                    max_length=100_000, blank_ok=True), SECRET),
        example='bsk fill e3 "jane@example.com"', acting=True
    ),
    ToolSpec(
        "select", ("select",), M,
        "Select options of a <select> by value or label. Several for a multiple select; "
        "input and change events fire.",
        (REF, Param("values", "array", "option values or labels", required=True,
                    positional=True, nargs="+")),
        example="bsk select e7 blue", acting=True
    ),
    ToolSpec(
        "check", ("check",), T,
        "Check a checkbox, radio button or switch. A real click, only if it is not checked.",
        (REF,), example="bsk check e5", acting=True
    ),
    ToolSpec(
        "uncheck", ("uncheck",), T,
        "Uncheck a checkbox or switch. A real click, only if it is checked.",
        (REF,), example="bsk uncheck e5", acting=True
    ),
    ToolSpec(
        "upload", ("upload",), M,
        "Set the files of a file input (<input type=file>). input and change events fire. "
        "REF may also be what opens a file chooser when clicked (a \"Select file\" "
        "button over a hidden input, a label, a drop zone): it is clicked for real and "
        "the files go to the input that opened the chooser.",
        (REF, Param("files", "array", "local files to upload (absolute paths over HTTP)",
                    required=True, positional=True, nargs="+", path=True)),
        example="bsk upload e9 ./photo.png", acting=True
    ),
)


class FillParams(TypedDict):
    ref: str
    text: str | None
    secret: str | None
    settle: int | None


class SelectParams(TypedDict):
    ref: str
    values: list[str]
    settle: int | None


class CheckParams(TypedDict):
    """check, uncheck."""

    ref: str
    settle: int | None


class UploadParams(TypedDict):
    ref: str
    files: list[str]
    settle: int | None

PARAMS: dict[str, type] = {"fill": FillParams, "select": SelectParams, "check": CheckParams,
                           "uncheck": CheckParams, "upload": UploadParams}


def _fill(r: dict[str, Any]) -> str:
    text = f"filled {r['ref']}: {short(r.get('value', ''))}"
    return text + ("" if r.get("matches", True) else f"  [{r.get('note', 'value differs')}]")


def _select(r: dict[str, Any]) -> str:
    picked = ", ".join(v if v == label else f"{v} ({label})"
                       for v, label in zip(r["values"], r["labels"], strict=False))
    return f"{r['ref']}: selected {picked or 'nothing'}" + ("" if r["changed"] else
                                                           " (already selected)")


def _checked(r: dict[str, Any]) -> str:
    checked = r.get("checked")
    state = "checked" if checked is True else "unchecked" if checked is False else str(checked)
    if r.get("navigated"):
        return f"{r['ref']}: clicked{went(r)}"
    return f"{r['ref']}: {'' if r.get('changed') else 'already '}{state}"


def _upload(r: dict[str, Any]) -> str:
    files = ", ".join(f"{f['name']} ({f['size']} B)" for f in r.get("files", []))
    how = " (through the file chooser it opened)" if r.get("via") == "file_chooser" else ""
    return f"{r['ref']}: {len(r.get('files', []))} file(s) set{how}: {files}"


RENDERERS: dict[Words, Renderer] = {
    ("fill",): _fill, ("select",): _select, ("check",): _checked, ("uncheck",): _checked,
    ("upload",): _upload,
}
