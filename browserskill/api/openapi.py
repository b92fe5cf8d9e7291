"""The OpenAPI document, generated from the tool catalog, the control calls
(base/controls.py) and the error table.

The repo keeps a copy (`openapi.json` beside this file, regenerated with
`python -m browserskill.api.openapi --write`); a test checks it equals the served one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from browserskill import __version__
from browserskill.base import catalog, contract, controls
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
def _parameter(field: controls.Field) -> dict[str, Any]:
    out = {"name": field.name, "in": field.where,
           "required": field.required or field.where == "path", "schema": field.schema}
    if field.help:
        out["description"] = field.help
    return out


def _body_schema(body: controls.Body) -> dict[str, Any]:
    if body.schema is not None:
        return body.schema
    spec = catalog.SESSION_START if body.tool == "session_start" else catalog.BY_NAME[body.tool]
    schema = spec.input_schema()
    for name, extra in (body.fields or {}).items():
        schema["properties"][name] = {**schema["properties"].get(name, {}), **extra}
    return {**schema, **(body.extra or {})}


def _control(c: controls.Control) -> dict[str, Any]:
    """A control call's operation (base/controls.py): what it takes, what it answers."""
    op: dict[str, Any] = {"operationId": c.name, "summary": c.summary}
    if c.description:
        op["description"] = c.description
    if c.params:
        op["parameters"] = [_parameter(f) for f in c.params]
    if c.body is not None:
        op["requestBody"] = {"required": c.body.required, "content": {
            "application/json": {"schema": _body_schema(c.body)}}}
    if c.answers == "operation":  # its result, or its error by status
        op["responses"] = {**_responses(list(c.errors)), **(_DETACHED if c.may_run_on
                                                            else {})}
    else:
        op["responses"] = {str(c.status): {"description": c.ok_description},
                           **_errors([*c.errors, "internal"])}
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


IDEMPOTENCY_KEY = _parameter(controls.IDEMPOTENCY_KEY)


def document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for spec in catalog.TOOLS:
        if spec.hidden:  # session_stop: DELETE /v1/sessions/{sid}, a control
            continue
        schema = _tool_body(spec)
        paths[f"/v1/sessions/{{sid}}/tools/{spec.name}"] = {"post": {
            "operationId": f"tool_{spec.name}",
            "summary": spec.summary,
            "description": f"Effect: {spec.effect.value}. CLI: `bsk {spec.usage()}`.",
            "parameters": [_parameter(controls.SID), IDEMPOTENCY_KEY],
            "requestBody": {"required": bool(schema["required"] or spec.exactly_one),
                            "content": {"application/json": {"schema": schema}}},
            "responses": {**_responses(list(spec.errors)), **_DETACHED},
        }}
    for c in controls.CONTROLS:
        paths.setdefault(c.path, {})[c.method.lower()] = _control(c)
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
