"""Downloads: what the session's actions downloaded, and waiting for the rest.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from browserskill.base.catalog.params import NoParams, R
from browserskill.base.catalog.spec import ToolSpec
from browserskill.base.catalog.text import download_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "downloads"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "download_list", ("download", "list"), R,
        "This session's downloads, oldest first: path, suggested file name, bytes, state "
        "(in_progress, completed, canceled). Files land in $BSK_HOME/downloads/SESSION/.",
        example="bsk download list",
    ),
    ToolSpec(
        "download_wait", ("download", "wait"), R,
        "Wait until a download not reported yet has finished and none is still running; "
        "bounded by --timeout. An action that starts a download already reports it "
        "(result.downloads), finished or in_progress: wait for the in_progress ones here.",
        example="bsk download wait --timeout 120",
    ),
)


PARAMS: dict[str, type] = {"download_list": NoParams, "download_wait": NoParams}


def _downloads(r: dict[str, Any]) -> str:
    items = r.get("downloads") or []
    lines = [download_line(d) for d in items]
    if "waited_ms" in r:
        lines.insert(0, f"waited {r['waited_ms']} ms")
    elif not items:
        lines.append("(no downloads in this session)")
    if r.get("directory"):
        lines.append(f"# files go to {r['directory']}")
    return "\n".join(lines)


RENDERERS: dict[Words, Renderer] = {
    ("download", "list"): _downloads, ("download", "wait"): _downloads,
}
