"""The control calls (sessions, operations, the daemon), declared once as data.

A control is every HTTP route that is not a catalog tool's: its method and path, its
path/query/header/body parameters, what it answers and with which error codes, its `bsk`
command and its client method. From `CONTROLS`:
- api/app.py serves each at its path, with the handler registered under its name
  (`@handles("op_get")`);
- api/openapi.py writes its path into the OpenAPI document (operationId: its name);
- cli/commands.py makes its `bsk` command: usage and help from here, and the arguments
  parsed here (`CliSpec.flags`, path parameters as positional arguments) unless a runner
  is registered under its name (`@runs("op_get")`) for what needs more;
- client/methods.py makes its method on `Client` and `AsyncClient` (GET/POST/DELETE, the
  JSON answer), unless the class defines it by hand; then tests/test_controls.py holds
  the hand-written method's parameters to `ClientSpec.args`.
tests/test_controls.py checks every control has all of these, and that nothing is served,
commanded or offered that has no control. Adding one touches this list, its handler and
its test.

Pure data and cheap to import: the whole CLI (cli/main.py) reads it, the launcher
(cli/fast.py) never does.
"""

from __future__ import annotations

from collections import namedtuple

from browserskill.base import contract
from browserskill.base.catalog import BY_NAME as TOOL_BY_NAME
from browserskill.base.catalog import NOT_BLANK, SESSION_START
from browserskill.base.errors import CODES

# A parameter outside the body. where: "path" | "query" | "header"; schema: its JSON
# schema; help: one line (OpenAPI's description; "" for none).
Field = namedtuple("Field", "name where schema help required", defaults=("", False))

# The JSON body. schema: the whole schema, or tool: the catalog definition whose
# parameters make it (`input_schema()`), with fields merged into its properties and
# extra added to the schema. required: a body must be sent.
Body = namedtuple("Body", "schema tool fields extra required",
                  defaults=(None, None, None, None, False))

# The `bsk` command. words, usage and summary as in `bsk --help`; flags: (--flag, query
# parameter) switches the generic runner sends as `?param=true`; help_tool: the catalog
# definition whose parameters `--help` lists (session start).
CliSpec = namedtuple("CliSpec", "words usage summary flags help_tool",
                     defaults=((), None))

# The client method (both clients). args: the parameters (after self) of a hand-written
# method, checked against it; None: the method is generated (path parameters positional,
# query parameters keyword-only, the JSON answer returned).
ClientSpec = namedtuple("ClientSpec", "name args", defaults=(None,))

# name: the OpenAPI operationId, the handler's and the runner's registration name.
# answers: "json" (an object; `status` on success) or "operation" (an operation's result:
# 200 ended, its error's status otherwise, 202 still running when `may_run_on`).
# errors: the codes it may answer (a json control adds `internal`).
# tool: the catalog tool this route is the HTTP form of: its CLI command and client
# methods are that tool's (no cli/client here).
Control = namedtuple(
    "Control",
    "name method path summary answers status errors params body description "
    "ok_description may_run_on cli client tool",
    defaults=("json", 200, (), (), None, "", "ok", False, None, None, None))

ALL_CODES = tuple(sorted(CODES))
_STRING = {"type": "string"}
SID = Field("sid", "path", _STRING, required=True)
OP_ID = Field("op_id", "path", _STRING, required=True)
WAIT_QUERY = Field("wait", "query", {"type": "boolean"},
                   "true: queue FIFO behind a running operation (else session_busy); `true` "
                   "or `false`, anything else is a 400")
IDEMPOTENCY_KEY = Field("Idempotency-Key", "header",
                        {"type": "string", "minLength": 1, "maxLength": 256},
                        "one key, one operation: a repeat answers the first call's result "
                        "(the same key with other parameters is a 400)")
_OPTIONS = contract.CALL_OPTIONS

WEBMCP_INVOKE_BODY = {
    "type": "object",
    "description": "Give exactly one of tool_ref and name.",
    "properties": {
        "tool_ref": {"type": "string", "maxLength": 256, "pattern": r"^t\d+/f\d+/.",
                     "description": "from GET …/webmcp/tools, e.g. t1/f0/add_item"},
        "name": {"type": "string", "minLength": 1, "maxLength": 256, "pattern": NOT_BLANK,
                 "description": "the tool's name; an ambiguous name is invalid_params "
                                "naming the candidates"},
        "input": {"type": "object", "description": "the tool's input (at most 1 MiB as JSON)"},
        "timeout_sec": {"type": "number", "minimum": 1, "maximum": 120, "default": 60,
                        "description": "the call's deadline; passing it ends outcome_unknown"},
        "wait": _OPTIONS["wait"],
        "detach": _OPTIONS["detach"],
        "boundaries": _OPTIONS["boundaries"],
    },
    "oneOf": [{"required": ["tool_ref"]}, {"required": ["name"]}],
    "additionalProperties": False,
}

_SESSION_START_USAGE = ("session start [ID] [--label L] [--isolated [--state FILE]] "
                        "[--browser extension|ID|LABEL | --cdp-url URL | --grid URL]")

CONTROLS: tuple[Control, ...] = (
    # -- sessions ---------------------------------------------------------------------------
    Control(
        "session_start", "POST", "/v1/sessions", SESSION_START.summary, status=201,
        errors=("invalid_params", "browser_unavailable", "session_not_found",
                "not_configured"),
        body=Body(tool="session_start", fields={
            "session_id": {"pattern": contract.SESSION_ID_PATTERN},
            "timeout_ms": {**_OPTIONS["timeout_ms"],
                           "description": "deadline for the start (a Grid's free slot is "
                                          "awaited up to it; default 60000)"}},
            # A saved state starts an isolated session only.
            extra={"dependentSchemas": {"state": {
                "required": ["isolated"], "properties": {"isolated": {"const": True}}}}}),
        ok_description="the session, started (its summary)",
        cli=CliSpec(("session", "start"), _SESSION_START_USAGE,
                    "Start a session with its own tab in its own window; use it with -s ID "
                    "or BSK_SESSION=ID. Sessions share the profile's cookies and storage "
                    "unless --isolated. With --browser, in the user's browser (extension): "
                    "its own Agent Window; with --cdp-url, in a browser someone else runs; "
                    "with --grid, in a browser of its own on a Selenium Grid "
                    "(docs/scaling-out.md).", help_tool="session_start"),
        client=ClientSpec("session_start", ("session_id", "label", "isolated", "state",
                                            "browser", "cdp_url", "grid", "allow_domains",
                                            "block_domains", "use"))),
    Control(
        "session_list", "GET", "/v1/sessions", "List sessions.",
        cli=CliSpec(("session", "list"), "session list", "List sessions."),
        client=ClientSpec("session_list", ())),
    Control(
        "session_stop", "DELETE", "/v1/sessions/{sid}",
        "Stop a session: an ordinary queued operation.", answers="operation",
        errors=TOOL_BY_NAME["session_stop"].errors, params=(SID, WAIT_QUERY), may_run_on=True,
        body=Body({"type": "object", "additionalProperties": False,
                   "properties": {"wait": _OPTIONS["wait"],
                                  "timeout_ms": _OPTIONS["timeout_ms"]}}),
        cli=CliSpec(("session", "stop"), "session stop [ID | --all]",
                    "Stop a session and close its tabs (after its running operation)."),
        client=ClientSpec("session_stop", ("session_id", "wait", "timeout"))),
    # -- WebMCP: the HTTP form of two catalog tools ------------------------------------------
    Control(
        "webmcp_tools", "GET", "/v1/sessions/{sid}/webmcp/tools",
        TOOL_BY_NAME["webmcp_list"].summary, answers="operation",
        errors=("invalid_params", "session_not_found", "session_busy", "user_interrupted",
                "cancelled", "outcome_unknown", "browser_unavailable", "action_failed",
                "internal"),
        params=(SID, WAIT_QUERY),
        description="An ordinary queued operation. Tool names, descriptions and schemas "
                    "are page-provided and untrusted.",
        tool="webmcp_list"),
    Control(
        "webmcp_invoke", "POST", "/v1/sessions/{sid}/webmcp/invoke",
        TOOL_BY_NAME["webmcp_invoke"].summary, answers="operation",
        errors=TOOL_BY_NAME["webmcp_invoke"].errors, params=(SID, IDEMPOTENCY_KEY),
        may_run_on=True,
        body=Body(WEBMCP_INVOKE_BODY, required=True),
        description="The output is page-provided and untrusted (result.untrusted = true). "
                    "A tool whose page reloads, navigates or crashes before it answers "
                    "fails fast with 410 tool_page_unloaded (keeps invocation_id; the tool "
                    "may have run); a tool that does not answer by the deadline ends 504 "
                    "outcome_unknown. Both carry X-Should-Retry: false.",
        tool="webmcp_invoke"),
    # -- the user's browsers (docs/extension.md, "Pairing") ---------------------------------
    Control(
        "browsers", "GET", "/v1/browsers",
        "The extension listener and the browsers connected to it (none without "
        "--extension-port).",
        cli=CliSpec(("browsers",), "browsers",
                    "Browsers connected through the BrowserSkill extension (id, label, "
                    "version), and the paired ones."),
        client=ClientSpec("browsers")),
    Control(
        "extension_pair", "POST", "/v1/extension/pair",
        "A one-time pairing code (valid 5 minutes) for the user to enter in the extension's "
        "options page; the code pending before it is void.",
        errors=("invalid_params", "not_configured"),
        cli=CliSpec(("extension", "pair"), "extension pair",
                    "Pair a browser's BrowserSkill extension: prints a one-time code (valid "
                    "5 minutes) to enter in the extension's options page. Until then the "
                    "daemon refuses that browser, whatever Origin it sends."),
        client=ClientSpec("extension_pair")),
    Control(
        "extension_unpair", "DELETE", "/v1/extension/pairings/{browser_id}",
        "Forget a paired browser and disconnect it.",
        errors=("invalid_params", "not_configured"),
        params=(Field("browser_id", "path", _STRING, required=True),),
        cli=CliSpec(("extension", "unpair"), "extension unpair ID",
                    "Forget a paired browser (its id from `bsk browsers`) and disconnect "
                    "it; it must pair again to connect."),
        client=ClientSpec("extension_unpair")),
    # -- the daemon -------------------------------------------------------------------------
    Control(
        "status", "GET", "/v1/status", "Daemon, browser (version, CDP endpoint) and sessions.",
        errors=("invalid_params", "browser_unavailable"),
        params=(Field("connect", "query", {"type": "boolean"},
                      "true: start or reach the browser first"),),
        cli=CliSpec(("status",), "status [--connect]",
                    "Daemon and browser status (--connect starts the browser to report it).",
                    flags=(("--connect", "connect"),)),
        client=ClientSpec("status", ("connect",))),
    Control(
        "health", "GET", "/v1/health", "Liveness and version.",
        cli=CliSpec(("health",), "health",
                    "Is the daemon up: one line with its version (--json: {ok, version})."),
        client=ClientSpec("health", ())),
    Control(
        "doctor", "GET", "/v1/doctor", "Health checks with fixes.",
        cli=CliSpec(("doctor",), "doctor",
                    "Check the set-up and say how to fix problems: the socket, the state "
                    "dir, the journal (writes failing, a journal moved aside as unreadable, "
                    "a damaged WAL's copy: docs/outcomes.md), the browser."),
        client=ClientSpec("doctor")),
    Control(
        "daemon_stop", "POST", "/v1/daemon/stop", "Stop the daemon.",
        cli=CliSpec(("daemon", "stop"), "daemon stop",
                    "Stop the daemon; running operations end honestly."),
        client=ClientSpec("daemon_stop")),
    Control(
        "daemon_info", "GET", "/v1/daemon", "Daemon pid, socket, version, uptime.",
        cli=CliSpec(("daemon", "status"), "daemon status",
                    "Daemon pid, socket, version and uptime; with no daemon running it says "
                    "so and exits 10 (browser_unavailable's code), as `systemctl status` "
                    "exits non-zero."),
        client=ClientSpec("daemon_info")),
    Control(
        "policy", "GET", "/v1/policy",
        "The person's policy the daemon was started with (`daemon start --policy`, "
        "BSK_POLICY), and the sessions that narrowed it; read-only (docs/safety.md).",
        cli=CliSpec(("policy", "show"), "policy show",
                    "The person's policy the daemon runs under (`daemon start --policy "
                    "FILE`, BSK_POLICY): domains, schemes, confirm and deny rules, a line "
                    "each, and the sessions that narrowed it (--json: as data); read-only "
                    "(docs/safety.md)."),
        client=ClientSpec("policy")),
    # -- operations -------------------------------------------------------------------------
    Control(
        "op_get", "GET", "/v1/ops/{op_id}", "One operation with its timeline.",
        errors=("op_not_found",), params=(OP_ID,),
        cli=CliSpec(("op", "show"), "op show ID", "One operation with its timeline."),
        client=ClientSpec("op_get", ("op_id",))),
    Control(
        "op_list", "GET", "/v1/ops", "Recent operations, newest first.",
        errors=("invalid_params",),
        params=(Field("session", "query", _STRING, "only this session's"),
                Field("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000,
                                         "default": 50})),
        cli=CliSpec(("op", "list"), "op list [--all]",
                    "Recent operations of this session (--all: every session)."),
        client=ClientSpec("op_list", ("session", "all_sessions", "limit"))),
    Control(
        "op_cancel", "POST", "/v1/ops/{op_id}/cancel", "Cancel an operation.",
        errors=("op_not_found",), params=(OP_ID,),
        cli=CliSpec(("op", "cancel"), "op cancel ID", "Cancel an operation."),
        client=ClientSpec("op_cancel", ("op_id",))),
    Control(
        "op_wait", "GET", "/v1/ops/{op_id}/wait",
        "Wait for an operation to end, then answer as the operation itself did (its own "
        "status and error); 202 if it is still running after timeout_ms.",
        answers="operation", errors=ALL_CODES, may_run_on=True,
        params=(OP_ID, Field("timeout_ms", "query", {
            "type": "integer", "minimum": 0, "maximum": contract.MAX_TIMEOUT_MS,
            "default": 30000})),
        cli=CliSpec(("op", "wait"), "op wait ID", "Wait for an operation to end."),
        client=ClientSpec("op_wait", ("op_id", "timeout"))),
    # -- the dashboard, the catalog, this API ------------------------------------------------
    Control(
        "dashboard", "POST", "/v1/dashboard",
        "Start the dashboard (once) and answer a one-time link to it (good once, for 5 "
        "minutes): loopback only; the page exchanges it for the dashboard's cookie "
        "(docs/dashboard.md).",
        cli=CliSpec(("show",), "show [--url]",
                    "The live dashboard: every session, its operations as they move, a live "
                    "view of its current tab, cancel, stop, take over. Prints the URL (with "
                    "its token) and opens it when there is a display; --url only prints it. "
                    "Loopback only."),
        client=ClientSpec("dashboard")),
    Control(
        "tools", "GET", "/v1/tools", "Tool catalog with input schemas.",
        cli=CliSpec(("tools",), "tools",
                    "The tool catalog as the daemon serves it: one line per tool (its "
                    "command, what it does, its API name and effect); --json: each tool's "
                    "name, effect, command and input schema."),
        client=ClientSpec("tools", ())),
    Control(
        "openapi", "GET", "/v1/openapi.json", "This document.",
        cli=CliSpec(("openapi",), "openapi",
                    "The daemon's OpenAPI document (every HTTP path, generated from the "
                    "catalog and this list), printed as JSON: a document for tools to read, "
                    "so the output is the same with or without --json."),
        client=ClientSpec("openapi")),
)

BY_NAME: dict[str, Control] = {c.name: c for c in CONTROLS}
BY_WORDS: dict[tuple[str, ...], Control] = {c.cli.words: c for c in CONTROLS if c.cli}


def path_of(control: Control, **values: str) -> str:
    """The control's path with its path parameters filled in (quoted)."""
    from urllib.parse import quote

    path = control.path
    for name, value in values.items():
        path = path.replace("{" + name + "}", quote(value, safe=""))
    return path


def route(name: str, **path_params: str) -> tuple[str, str]:
    """The named control's method and path, its path parameters filled in: what a front
    end sends (`client.call(*route("op_get", op_id=op))`)."""
    control = BY_NAME[name]
    return control.method, path_of(control, **path_params)
