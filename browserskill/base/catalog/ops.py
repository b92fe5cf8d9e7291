"""What runs other tools or is about the session itself: `batch`, `session start` and
`session stop` (control calls with params of their own, defined here once for the CLI,
the HTTP API and OpenAPI), and `op show` / `op cancel` as tools for MCP.

Their text is the control commands' (browserskill/base/render.py): `batch` prints each
step as its own command would, `session …` and `op …` as the CLI's control commands do.
`PARAMS`: what the handlers of the two that are tools read (a TypedDict each, kept equal
to the spec by tests/test_catalog.py).
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.fields import SESSION_STOP_ERRORS
from browserskill.base.catalog.params import BATCH_MAX_STEPS, M, NoParams, R, S
from browserskill.base.catalog.spec import Param, ToolSpec

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "core"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("session_stop", ("session", "stop"), S,
             "End the session and close its tabs (queued behind running operations).",
             # Reached by its own route (DELETE /v1/sessions/ID, `session stop ID|--all`,
             # the end of an MCP connection), never as a plain tool.
             hidden=True, during_dialog=True, after_crash=True, errors=SESSION_STOP_ERRORS),
    ToolSpec(
        "batch", ("batch",), M,
        "Run several commands in one call, in order, each its own operation with its own "
        "honest result (op id, status, dispatched), stopping at the first that does not "
        "complete unless --continue (the rest are not sent). A command is one "
        "line as the CLI's replay command reads it (`click e3`, `fill e4 'hello'`); the "
        "CLI also reads them from stdin, one a line. --timeout is the whole batch's "
        "deadline (default 300 s); each command ends by its own deadline or the batch's, "
        "whichever is first.",
        (Param("commands", "array", f"the commands, e.g. 'click e3' 'snapshot --diff' (at "
               f"most {BATCH_MAX_STEPS}); none on the CLI: read from stdin",
               positional=True, nargs="*"),
         Param("continue", "boolean", "go on after a command that does not complete",
               default=False),
         Param("settle", "integer", "each acting step's --settle unless it gives one; "
               "0: no waiting", minimum=0, maximum=30_000)),
        example="bsk batch 'fill e4 ada@example.com' 'click e5' 'snapshot --diff'",
        default_timeout_s=300.0,
    ),
)


# `continue` is a Python keyword: the functional form.
BatchParams = TypedDict("BatchParams", {"commands": list[str] | None, "continue": bool,
                                         "settle": int | None})


PARAMS: dict[str, type] = {"session_stop": NoParams, "batch": BatchParams}


# Starting a session is a control call, not an operation; its parameters are defined
# here once for the CLI, the HTTP API and the OpenAPI document.
SESSION_START = ToolSpec(
    "session_start", ("session", "start"), S,
    "Start a session with a tab of its own, in a window of its own; use it with -s ID or "
    "BSK_SESSION=ID. Sessions share the browser profile (cookies, storage, cache) unless "
    "started --isolated, which gives one a browser context of its own; --state FILE "
    "starts an isolated session from a saved state. --cdp-url and --grid put it in "
    "another browser (docs/scaling-out.md).",
    (Param("session_id", "string", "the new session's id (default: one is made up)",
           positional=True, max_length=64),
     Param("label", "string", "a name people see (extension overlay, session list)",
           max_length=200),
     Param("browser", "string", "where it runs: embedded (default), extension, or a "
           "browser id or label from `bsk browsers`", max_length=200),
     Param("cdp_url", "string", "run it in a browser someone else runs: its DevTools "
           "endpoint, http(s)://HOST:PORT (found through /json/version where served) or "
           "ws(s)://… used as is; a query string (?token=…) is kept", max_length=2000),
     Param("grid", "string", "run it on a Selenium Grid 4 at this URL "
           "(http://HOST:4444): a WebDriver session of its own, released when the "
           "session ends; the slot is awaited up to --timeout (default: the daemon's "
           "--grid, BSK_GRID_URL)", max_length=2000),
     Param("isolated", "boolean", "a browser context of its own: cookies, storage, cache "
           "and permissions apart from every other session", default=False),
     Param("state", "string", "storageState JSON file (from `bsk state save` or "
           "Playwright) to start from; needs --isolated", path=True),
     Param("download_dir", "string", "where its downloads go (default: "
           "$BSK_HOME/downloads/SESSION)", path=True),
     Param("allow_domain", "array", "narrow the daemon's policy: this session's pages "
           "reach only these domains (globs, ports allowed; repeat for more), each within "
           "the policy's allow_domains (docs/safety.md)"),
     Param("block_domain", "array", "narrow the daemon's policy: this session's pages "
           "never reach these domains (globs; repeat for more)")),
    example="bsk session start alice --isolated --state alice.json",
)

# What to ask about an operation by id, for clients that have no CLI (MCP): the
# control calls `op show` and `op cancel`, as tools.
_OP_ID = Param("op_id", "string", "an op_id from an earlier answer (session_busy names "
               "the holder's)", required=True, positional=True, max_length=64)
OP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("op_show", ("op", "show"), R,
             "How an operation ended, or that it still runs: state, status, dispatched.",
             (_OP_ID,)),
    ToolSpec("op_cancel", ("op", "cancel"), M,
             "Cancel a running operation (e.g. the one holding the session).", (_OP_ID,)),
)
