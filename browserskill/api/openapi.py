"""The OpenAPI document, generated from the tool catalog and the error table.

The repo keeps a copy (`openapi.json` beside this file, regenerated with
`python -m browserskill.api.openapi --write`); a test checks it equals the served one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from browserskill import __version__
from browserskill.base import catalog, contract
from browserskill.base.errors import CODES, SHOULD_RETRY

CHECKED_IN = Path(__file__).with_name("openapi.json")

ERROR = contract.ERROR_SCHEMA
RESULT = contract.result_schema({"$ref": "#/components/schemas/Error"})
# docs/http-api.md: every error body is {"error": …}, plus the operation's fields when the call
# became an operation (refused before that, e.g. bad params: the error alone).
ERROR_BODY = {
    "type": "object",
    "description": "An error, with the operation's fields when an operation exists.",
    "required": ["error"],
    "properties": {**RESULT["properties"], "error": {"$ref": "#/components/schemas/Error"}},
}
_RESULT_REF = {"$ref": "#/components/schemas/Result"}
_ERROR_BODY_REF = {"$ref": "#/components/schemas/ErrorBody"}
ALL_CODES = sorted(CODES)
CALL_OPTIONS = contract.CALL_OPTIONS


def _errors(codes: list[str]) -> dict[str, Any]:
    """One response per HTTP status the codes map to, each with X-Should-Retry."""
    out: dict[str, Any] = {}
    by_status: dict[int, list[str]] = {}
    for code in codes:
        entry = CODES[code]
        if entry.http >= 300:
            by_status.setdefault(entry.http, []).append(code)
    for status, names in sorted(by_status.items()):
        retry = sorted({"true" if n in SHOULD_RETRY else "false" for n in names})
        out[str(status)] = {
            "description": ", ".join(names),
            "headers": {"X-Should-Retry": {"schema": {"type": "string", "enum": retry}}},
            "content": {"application/json": {"schema": _ERROR_BODY_REF}},
        }
    return out


def _responses(codes: list[str]) -> dict[str, Any]:
    return {"200": {"description": "ended: completed (or page_error, a result)",
                    "content": {"application/json": {"schema": _RESULT_REF}}},
            **_errors(codes)}


_DETACHED = {"202": {"description": "still running (detached, or not ended in time): "
                                    "follow with GET /v1/ops/{op_id}/wait",
                     "content": {"application/json": {"schema": _RESULT_REF}}}}
_WAIT_QUERY = {"name": "wait", "in": "query", "required": False,
               "schema": {"type": "boolean"},
               "description": "true: queue FIFO behind a running operation (else "
                              "session_busy); `true` or `false`, anything else is a 400"}


WEBMCP_INVOKE = {
    "type": "object",
    "description": "Give exactly one of tool_ref and name.",
    "properties": {
        "tool_ref": {"type": "string", "maxLength": 256, "pattern": r"^t\d+/f\d+/.",
                     "description": "from GET …/webmcp/tools, e.g. t1/f0/add_item"},
        "name": {"type": "string", "minLength": 1, "maxLength": 256,
                 "pattern": catalog.NOT_BLANK,
                 "description": "the tool's name; an ambiguous name is invalid_params "
                                "naming the candidates"},
        "input": {"type": "object", "description": "the tool's input (at most 1 MiB as JSON)"},
        "timeout_sec": {"type": "number", "minimum": 1, "maximum": 120, "default": 60,
                        "description": "the call's deadline; passing it ends outcome_unknown"},
        "wait": CALL_OPTIONS["wait"],
        "detach": CALL_OPTIONS["detach"],
        "boundaries": CALL_OPTIONS["boundaries"],
    },
    "oneOf": [{"required": ["tool_ref"]}, {"required": ["name"]}],
    "additionalProperties": False,
}
def _responses_op(summary: str, codes: list[str]) -> dict[str, Any]:
    """An endpoint that answers with an operation: its result, or its error by status."""
    return {"summary": summary, "responses": {**_responses(codes), **_DETACHED}}


_WEBMCP_NOTE = (
    "The output is page-provided and untrusted (result.untrusted = true). A tool whose page "
    "reloads, navigates or crashes before it answers fails fast with 410 "
    "tool_page_unloaded (keeps invocation_id; the tool may have run); a tool that does not "
    "answer by the deadline ends 504 outcome_unknown. Both carry X-Should-Retry: false.")


def _simple(summary: str, codes: list[str] | None = None, *, status: int = 200,
            params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary,
                          "responses": {str(status): {"description": "ok"}, **_errors(
                              [*(codes or []), "internal"])}}
    if params:
        op["parameters"] = params
    return op


def _session_start() -> dict[str, Any]:
    spec = catalog.SESSION_START
    op = _simple(spec.summary, ["invalid_params", "browser_unavailable",
                                "session_not_found", "not_configured"], status=201)
    op["operationId"] = spec.name
    schema = spec.input_schema()
    schema["properties"]["session_id"]["pattern"] = contract.SESSION_ID_PATTERN
    schema["properties"]["timeout_ms"] = {
        **contract.CALL_OPTIONS["timeout_ms"],
        "description": "deadline for the start (a Grid's free slot is awaited up to it; "
                       "default 60000)"}
    # A saved state starts an isolated session only.
    schema["dependentSchemas"] = {"state": {"required": ["isolated"],
                                            "properties": {"isolated": {"const": True}}}}
    op["requestBody"] = {"required": False, "content": {"application/json": {
        "schema": schema}}}
    op["responses"]["201"]["description"] = "the session, started (its summary)"
    return op


def _tool_body(spec: catalog.ToolSpec) -> dict[str, Any]:
    """The request body of a tool call: its parameters and the per-call options, with
    the catalog's rules (ranges, non-blank strings, exactly one of a set)."""
    schema = spec.input_schema()
    options = dict(CALL_OPTIONS)
    if spec.name == "batch":  # it answers when its last step ends (api/batch.py)
        del options["detach"]
    if spec.timeout_range_s:  # e.g. webmcp_invoke: 1-120 s
        lo, hi = (int(x * 1000) for x in spec.timeout_range_s)
        options["timeout_ms"] = {**options["timeout_ms"], "minimum": lo, "maximum": hi}
    schema["properties"] = {**schema["properties"], **options}
    if spec.exactly_one:
        by_name = {p.name: p for p in spec.params}
        branches = []
        for name in spec.exactly_one:
            if by_name[name].type == "boolean":
                branches.append({"required": [name], "properties": {name: {"const": True}}})
            elif by_name[name].type == "string":
                branches.append({"required": [name], "properties": {
                    name: {"minLength": 1, "pattern": catalog.NOT_BLANK}}})
            else:
                branches.append({"required": [name]})
        schema["oneOf"] = branches
        schema["description"] = "Give exactly one of " + ", ".join(spec.exactly_one) + "."
    return schema


IDEMPOTENCY_KEY = {"name": "Idempotency-Key", "in": "header", "required": False,
                   "schema": {"type": "string", "minLength": 1, "maxLength": 256},
                   "description": "one key, one operation: a repeat answers the first call's "
                                  "result (the same key with other parameters is a 400)"}


def document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for spec in catalog.TOOLS:
        if spec.hidden:  # session_stop: DELETE /v1/sessions/{sid} below
            continue
        schema = _tool_body(spec)
        paths[f"/v1/sessions/{{sid}}/tools/{spec.name}"] = {"post": {
            "operationId": f"tool_{spec.name}",
            "summary": spec.summary,
            "description": f"Effect: {spec.effect.value}. CLI: `bsk {spec.usage()}`.",
            "parameters": [
                {"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}},
                IDEMPOTENCY_KEY,
            ],
            "requestBody": {"required": bool(schema["required"] or spec.exactly_one),
                            "content": {"application/json": {"schema": schema}}},
            "responses": {**_responses(list(spec.errors)), **_DETACHED},
        }}
    sid = [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}}]
    op_id = [{"name": "op_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    paths.update({
        "/v1/health": {"get": _simple("Liveness and version.")},
        "/v1/status": {"get": _simple(
            "Daemon, browser (version, CDP endpoint) and sessions.", ["invalid_params",
                                                                     "browser_unavailable"],
            params=[{"name": "connect", "in": "query", "required": False,
                     "schema": {"type": "boolean"},
                     "description": "true: start or reach the browser first"}])},
        "/v1/daemon": {"get": _simple("Daemon pid, socket, version, uptime.")},
        "/v1/daemon/stop": {"post": _simple("Stop the daemon.")},
        "/v1/policy": {"get": _simple(
            "The person's policy the daemon was started with (`daemon start --policy`, "
            "BSK_POLICY), and the sessions that narrowed it; read-only (docs/safety.md).")},
        "/v1/doctor": {"get": _simple("Health checks with fixes.")},
        "/v1/browsers": {"get": _simple("The extension listener and the browsers connected "
                                        "to it (none without --extension-port).")},
        "/v1/tools": {"get": _simple("Tool catalog with input schemas.")},
        "/v1/dashboard": {"post": _simple(
            "Start the dashboard (once) and answer a one-time link to it (good once, for 5 "
            "minutes): loopback only; the page exchanges it for the dashboard's cookie "
            "(docs/dashboard.md).")},
        "/v1/openapi.json": {"get": _simple("This document.")},
        "/v1/sessions": {
            "post": _session_start(),
            "get": _simple("List sessions."),
        },
        "/v1/sessions/{sid}": {"delete": {**_responses_op(
            "Stop a session: an ordinary queued operation.",
            list(catalog.BY_NAME["session_stop"].errors)),
            "parameters": [*sid, _WAIT_QUERY],
            "requestBody": {"required": False, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {"wait": CALL_OPTIONS["wait"],
                               "timeout_ms": CALL_OPTIONS["timeout_ms"]}}}}}}},
        "/v1/sessions/{sid}/webmcp/tools": {"get": {
            "operationId": "webmcp_tools",
            "summary": catalog.BY_NAME["webmcp_list"].summary,
            "description": "An ordinary queued operation. Tool names, descriptions and "
                           "schemas are page-provided and untrusted.",
            "parameters": [*sid, _WAIT_QUERY],
            "responses": _responses(["invalid_params", "session_not_found", "session_busy",
                                     "user_interrupted", "cancelled", "outcome_unknown",
                                     "browser_unavailable", "action_failed", "internal"]),
        }},
        "/v1/sessions/{sid}/webmcp/invoke": {"post": {
            "operationId": "webmcp_invoke",
            "summary": catalog.BY_NAME["webmcp_invoke"].summary,
            "description": _WEBMCP_NOTE,
            "parameters": [*sid, IDEMPOTENCY_KEY],
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": WEBMCP_INVOKE}}},
            "responses": {**_responses(list(catalog.BY_NAME["webmcp_invoke"].errors)),
                          **_DETACHED},
        }},
        "/v1/ops": {"get": _simple("Recent operations, newest first.", ["invalid_params"],
                                   params=[
            {"name": "session", "in": "query", "required": False,
             "schema": {"type": "string"}, "description": "only this session's"},
            {"name": "limit", "in": "query", "required": False,
             "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}}])},
        "/v1/ops/{op_id}": {"get": _simple("One operation with its timeline.",
                                           ["op_not_found"], params=op_id)},
        "/v1/ops/{op_id}/cancel": {"post": _simple("Cancel an operation.", ["op_not_found"],
                                                   params=op_id)},
        "/v1/ops/{op_id}/wait": {"get": {
            **_responses_op("Wait for an operation to end, then answer as the operation "
                            "itself did (its own status and error); 202 if it is still "
                            "running after timeout_ms.", ALL_CODES),
            "parameters": [*op_id, {
                "name": "timeout_ms", "in": "query", "required": False,
                "schema": {"type": "integer", "minimum": 0, "maximum": contract.MAX_TIMEOUT_MS,
                           "default": 30000}}]}},
    })
    # Pairing the extension (docs/extension.md, "Pairing"): its own block, added to.
    paths.update({
        "/v1/extension/pair": {"post": _simple(
            "A one-time pairing code (valid 5 minutes) for the user to enter in the "
            "extension's options page; the code pending before it is void.",
            ["invalid_params", "not_configured"])},
        "/v1/extension/pairings/{browser_id}": {"delete": {**_simple(
            "Forget a paired browser and disconnect it.", ["invalid_params",
                                                            "not_configured"]),
            "parameters": [{"name": "browser_id", "in": "path", "required": True,
                            "schema": {"type": "string"}}]}},
    })
    return {
        "openapi": "3.1.0",
        "info": {"title": "BrowserSkill daemon API", "version": __version__,
                 "description": "Operations on a real browser with honest outcomes. "
                                "Non-2xx answers carry X-Should-Retry."},
        "paths": paths,
        "components": {"schemas": {"Result": RESULT, "Error": ERROR,
                                   "ErrorBody": ERROR_BODY}},
    }


def main() -> int:
    text = json.dumps(document(), indent=2, sort_keys=True) + "\n"
    if "--write" in sys.argv:
        CHECKED_IN.write_text(text)
        print(f"wrote {CHECKED_IN}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
