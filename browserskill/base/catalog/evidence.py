"""Evidence of what happened: the page's HTML and console, a PDF, a video, a performance
trace, a recorded script.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import LIMIT, SINCE, TARGET_MAX, NoParams, R, S
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import cursor_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "evidence"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "html", ("html",), R, "The HTML of the page, or of one element (outerHTML).",
        (Param("ref", "string", "element ref or locator (default: the whole document)",
               positional=True, max_length=TARGET_MAX),
         Param("max_chars", "integer", "cut the HTML at this many characters",
               default=50_000, minimum=100, maximum=5_000_000)),
        example="bsk html e4",
    ),
    ToolSpec(
        "console", ("console",), R,
        "Console messages and uncaught errors of the current tab. Oldest first; without "
        "--since the latest ones; pass the returned next_since as --since for newer ones.",
        (SINCE, LIMIT),
        example="bsk console --since 12",
    ),
    ToolSpec(
        "pdf", ("pdf",), R,
        "Print the current tab to a PDF file (print media, backgrounds included).",
        (Param("path", "string", "PDF file to write", required=True, positional=True,
               path=True),
         Param("landscape", "boolean", "landscape orientation", default=False),
         Param("format", "string", "paper size", default="A4", choices=("A4", "Letter"))),
        example="bsk pdf page.pdf --format Letter",
    ),
    ToolSpec(
        "video_start", ("video", "start"), S,
        "Start recording the current tab as video (its screencast frames, 25 fps). The "
        "recording runs until `video stop PATH` or the session ends, and shows in "
        "`session list`.",
        (Param("size", "string", "frame size WxH, e.g. 800x600 (default: the viewport's; "
               "the page is scaled to fit)", max_length=20),),
        example="bsk video start --size 800x600",
    ),
    ToolSpec(
        "video_stop", ("video", "stop"), S,
        "Stop the session's video recording and write it to PATH: .webm (VP8) or .mp4 "
        "(H.264). A video a daemon crash cut short (`interrupted` in `session list`) is "
        "written the same way, with everything recorded until the crash.",
        (Param("path", "string", "video file to write (.webm or .mp4)", required=True,
               positional=True, path=True),),
        example="bsk video stop run.webm", default_timeout_s=120.0,
    ),
    ToolSpec(
        "trace_start", ("trace", "start"), S,
        "Start a performance trace (Chrome's Tracing) from the current tab. It runs until "
        "`trace stop PATH` or the session ends, and shows in `session list`. Chromium "
        "traces the whole browser, one trace at a time: other sessions' pages show up "
        "too, and another session's `trace start` is refused until this one stops.",
        (Param("categories", "string", "trace categories, comma-separated (default: "
               "DevTools' performance panel's)", max_length=4000),
         Param("screenshots", "boolean", "include screenshots (filmstrip)", default=False)),
        example="bsk trace start --screenshots",
    ),
    ToolSpec(
        "trace_stop", ("trace", "stop"), S,
        "Stop the trace and write it to PATH as Chrome trace JSON (open it in Perfetto "
        "or DevTools' Performance panel). A trace outlives a daemon crash: the next daemon "
        "re-adopts it and this writes all of it.",
        (Param("path", "string", "trace file to write (.json)", required=True,
               positional=True, path=True),),
        example="bsk trace stop trace.json", default_timeout_s=120.0,
    ),
    ToolSpec(
        "record_start", ("record", "start"), S,
        "Record what happens in this session's tabs — a person's clicks and typing in the "
        "dashboard's live view, and the agent's own calls: clicks, fills, selects, checks, "
        "key presses, navigations, uploads — until `bsk record stop FILE`.",
        (), example="bsk record start",
    ),
    ToolSpec(
        "record_stop", ("record", "stop"), S,
        "Stop recording and write the script: one bsk command per line, each target a "
        "locator (role and name where unique, else css= or text=), passwords as "
        "${BSK_SECRET_N}. The CLI's replay command runs it.",
        (Param("path", "string", "file to write the script to", required=True,
               positional=True, path=True),),
        example="bsk record stop login.bsk",
    ),
)


class HtmlParams(TypedDict):
    ref: str | None
    max_chars: int


class ConsoleParams(TypedDict):
    since: int | None
    limit: int


class PdfParams(TypedDict):
    path: str
    landscape: bool
    format: str


class VideoStartParams(TypedDict):
    size: str | None


class PathParams(TypedDict):
    """video stop, trace stop, record stop."""

    path: str


class TraceStartParams(TypedDict):
    categories: str | None
    screenshots: bool


PARAMS: dict[str, type] = {"html": HtmlParams, "console": ConsoleParams, "pdf": PdfParams,
                           "video_start": VideoStartParams, "video_stop": PathParams,
                           "trace_stop": PathParams, "record_stop": PathParams,
                           "trace_start": TraceStartParams, "record_start": NoParams}


def _html(r: dict[str, Any]) -> str:
    text = r.get("html", "")
    if r.get("truncated"):
        text += (f"\n[… cut at {r['chars']} of {r['total_chars']} characters; "
                 "raise --max-chars to see more]")
    return text


def _console(r: dict[str, Any]) -> str:
    lines = []
    for e in r.get("entries", []):
        where = f"  ({e['url']}:{e.get('line', '?')})" if e.get("url") else ""
        lines.append(f"[{e['seq']}] {e['level']:<7} {e['text']}{where}")
    lines.append(cursor_line(r, len(r.get("entries", []))))
    return "\n".join(lines)


def _evidence_written(r: dict[str, Any]) -> str:
    extra = (f"  {r['size']}, {r['frames']} frame{'' if r['frames'] == 1 else 's'}, "
             f"{r['duration_s']} s" if "frames" in r else "")
    if r.get("interrupted"):  # a video a daemon crash cut short (tools/evidence.py)
        extra += f"  {r.get('duration_s')} s\n{r['interrupted']}"
    return f"wrote {r['path']} ({r['bytes']} bytes){extra}"


def _recording_started(r: dict[str, Any]) -> str:
    what = f"{r['size']} at {r['fps']} fps" if r["recording"] == "video" else \
        f"{len(r['categories'])} categories"
    return (f"recording {r['recording']} of tab {r['tab_id']} ({what}); stop with "
            f"`bsk {r['recording']} stop FILE`")


def _script_recording(r: dict[str, Any]) -> str:
    return (f"recording this session's tabs ({', '.join(r.get('tabs') or []) or 'none yet'}) "
            "as a script; stop with `bsk record stop FILE`")


def _script_written(r: dict[str, Any]) -> str:
    text = f"wrote {r['path']}: {r['commands']} command(s); run it with `bsk replay FILE`"
    if r.get("secrets"):
        text += f"\n  it needs {', '.join(r['secrets'])} set (recorded passwords)"
    return text


RENDERERS: dict[Words, Renderer] = {
    ("html",): _html, ("console",): _console, ("pdf",): _evidence_written,
    ("video", "stop"): _evidence_written, ("trace", "stop"): _evidence_written,
    ("video", "start"): _recording_started, ("trace", "start"): _recording_started,
    ("record", "start"): _script_recording, ("record", "stop"): _script_written,
}
