"""Every tool's definition, once: name, effect, parameters, help, and its text.

The CLI builds its arguments from this, the HTTP API validates request bodies and
writes its OpenAPI document from it, the MCP server derives input schemas from it, and
the CLI and the MCP server print its tools' results with the renderers beside them.

One module per tool family (the MCP capability groups, `core` split by what its tools
do), each holding its tools' specs and their text renderers side by side; the handlers'
typed params (TypedDicts) sit beside the specs they mirror (tests/test_catalog.py keeps
them equal). The records are `fields.py`/`spec.py`'s, the validator `validate.py`, the
JSON Schema emitter `schema.py`, the parameters families share `params.py`, the
renderers' shared helpers `text.py`. This package puts them together: `TOOLS` in the
order every surface lists them, `BY_NAME`, `BY_WORDS`, `RENDERERS`.
Stdlib only, pure data: the whole CLI imports it (the launcher's tool calls do not).
"""

from __future__ import annotations

from browserskill.base.catalog import (
    downloads,
    emulation,
    evidence,
    forms,
    human,
    input,
    mouse,
    navigation,
    network,
    ops,
    reading,
    state,
    tabs,
    webmcp,
)
from browserskill.base.catalog.fields import (
    SESSION_STOP_ERRORS,
    TOOL_ERRORS,
    WEBMCP_ERRORS,
    Effect,
)
from browserskill.base.catalog.network import ABORT_REASONS
from browserskill.base.catalog.ops import SESSION_START
from browserskill.base.catalog.params import (
    BATCH_MAX_STEPS,
    EVAL_MAX_CHARS,
    EVAL_MAX_CHARS_LIMIT,
    LOCATOR_HELP,
    SETTLE,
    SETTLE_DEFAULT_MS,
    TARGET_MAX,
    WAIT_UNTIL,
)
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.validate import (
    MAX_SAFE_INTEGER,
    NOT_BLANK,
    TARGET_PARAMS,
    check_value,
    is_blank,
    key_missing,
)
from browserskill.base.errors import BskError

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from browserskill.base.catalog.text import Renderer, Words

__all__ = [
    "ABORT_REASONS", "ACTING_TOOLS", "BATCH_MAX_STEPS", "BY_NAME", "BY_WORDS",
    "CAPABILITIES", "CAPABILITY_OF", "EVAL_MAX_CHARS", "EVAL_MAX_CHARS_LIMIT", "FAMILIES",
    "HIDDEN_WORDS", "LOCATOR_HELP", "MAX_SAFE_INTEGER", "NOT_BLANK", "OP_TOOLS", "RENDERERS",
    "SESSION_START", "SESSION_STOP_ERRORS", "SETTLE", "SETTLE_DEFAULT_MS", "TARGET_MAX",
    "TARGET_PARAMS", "TOOLS", "TOOL_ERRORS", "WAIT_UNTIL", "WEBMCP_ERRORS", "Effect", "Param",
    "ToolSpec", "check_value", "get", "is_blank", "key_missing", "tool_names",
]

# The tool families, each a module with its `TOOLS` and their `RENDERERS`.
FAMILIES = (navigation, reading, input, forms, mouse, tabs, webmcp, ops, network, evidence,
            emulation, state, human, downloads)

# The order every surface lists the tools in (help, docs, OpenAPI, MCP): the order they
# were added in, kept so that what agents and people have seen stays where it was. A
# tool added since comes after these, in its family's order: adding one touches only
# its family module (its spec, renderer and params), its handler and its test.
ORDER = (
    "open", "back", "forward", "reload", "eval", "snapshot", "screenshot", "click",
    "dblclick", "hover", "drag", "scroll", "dialog_accept", "dialog_dismiss", "tab_list",
    "tab_borrow", "tab_return", "tab_new", "tab_select", "tab_close", "session_stop",
    "fill", "type", "press", "select", "check", "uncheck", "upload", "wait", "request_help",
    "record_start", "record_stop", "batch", "html", "console", "network", "emulate",
    "window_resize", "mouse_move", "mouse_down", "mouse_up", "mouse_click",
    "mouse_dblclick", "mouse_wheel", "download_list", "download_wait", "webmcp_list",
    "webmcp_invoke", "cookies_list", "cookies_set", "cookies_delete", "cookies_clear",
    "storage_list", "storage_get", "storage_set", "storage_delete", "storage_clear",
    "state_save", "state_load", "pdf", "video_start", "video_stop", "trace_start",
    "trace_stop", "permissions_grant", "permissions_clear", "network_show", "network_har",
    "route_add", "route_list", "route_remove", "route_clear",
)

# Each family's tools, given its MCP group (the hidden ones none) and, those that act on
# a page (`acting`: they report what they were seen to change, docs/outcomes.md
# "Effects"), `SETTLE` as their last param.
_DEFINED: dict[str, ToolSpec] = {
    t.name: t._replace(capability=None if t.hidden else family.CAPABILITY,
                       params=(*t.params, SETTLE) if t.acting else t.params)
    for family in FAMILIES for t in family.TOOLS}
if not set(ORDER) <= set(_DEFINED):
    raise RuntimeError(f"catalog ORDER names no tool: {sorted(set(ORDER) - set(_DEFINED))}")

TOOLS: tuple[ToolSpec, ...] = tuple(sorted(
    _DEFINED.values(), key=lambda t: ORDER.index(t.name) if t.name in ORDER else len(ORDER)))
ACTING_TOOLS = frozenset(t.name for t in TOOLS if t.acting)
# `op show` and `op cancel` as MCP tools (over HTTP and the CLI they are controls).
OP_TOOLS: tuple[ToolSpec, ...] = tuple(t._replace(capability=ops.CAPABILITY)
                                       for t in ops.OP_TOOLS)

# The MCP capability groups (docs/mcp.md): `bsk mcp` offers `core`; a client opts into
# the others with `--caps GROUP,…` (or `all`), so a connection pays only for the tools it
# can use. Every tool but the hidden ones is in exactly one: its family's.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    cap: tuple(t.name for t in (*TOOLS, *OP_TOOLS) if t.capability == cap)
    for cap in dict.fromkeys(["core", *(f.CAPABILITY for f in FAMILIES)])}
CAPABILITY_OF: dict[str, str] = {t.name: t.capability for t in (*TOOLS, *OP_TOOLS)
                                  if t.capability}

BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
# Command words of the tools reached by a route of their own (help and docs skip them).
HIDDEN_WORDS: set[tuple[str, ...]] = {t.words for t in TOOLS if t.hidden}
BY_WORDS: dict[tuple[str, ...], ToolSpec] = {t.words: t for t in TOOLS}

# Every tool's text renderer, by command words (a family's own, merged).
RENDERERS: dict[Words, Renderer] = {
    words: fn for f in FAMILIES for words, fn in getattr(f, "RENDERERS", {}).items()}


def tool_names() -> frozenset[str]:
    """Every tool a policy rule may name (`tool`): the queued ones and session start."""
    return frozenset(BY_NAME) | {SESSION_START.name}


def get(name: str) -> ToolSpec:
    """The tool called `name`; an unknown one is an unknown path, as over HTTP it is
    (`POST /v1/sessions/{sid}/tools/NAME`, one path per tool in the OpenAPI document)."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise BskError(
            "path_not_found",
            f"no tool {name!r} (no endpoint POST /v1/sessions/{{sid}}/tools/{name})",
            hint="GET /v1/tools (`bsk tools`) lists the tools",
            details={"tool": name},
        )
    return spec
