"""The JSON Schema emitter: a parameter's schema and a tool's input schema.

The HTTP API's OpenAPI document and the MCP server's tool list read these, so a schema
says what `validate.py` accepts (the same bounds, `NOT_BLANK` for a required string).
Stdlib only.
"""

from __future__ import annotations

from browserskill.base.catalog.validate import NOT_BLANK

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.fields import ParamFields, ToolFields


def param_schema(p: ParamFields) -> dict[str, Any]:
    s: dict[str, Any] = {"type": p.type, "description": p.help}
    if p.type == "array":
        s["items"] = {"type": "string"}
        if p.nargs == "+":
            s["minItems"] = 1
    if p.path:  # absolute (the CLI makes it so), no NUL
        (s["items"] if p.type == "array" else s)["pattern"] = "^/[^\\x00]*$"
    if p.choices:
        s["enum"] = list(p.choices)
    if p.default is not None:
        s["default"] = p.default
    if p.minimum is not None:
        s["minimum"] = p.minimum
    if p.maximum is not None:
        s["maximum"] = p.maximum
    if p.max_length is not None:  # for an object: its size as JSON, in bytes
        s["maxLength" if p.type != "object" else "x-maxJsonBytes"] = p.max_length
    if p.type == "string" and p.required and not p.blank_ok:
        s["minLength"] = 1
        if not p.path:  # an absolute path's own pattern already says "not blank"
            s["pattern"] = NOT_BLANK  # `check_value` refuses whitespace alone
    return s


def input_schema(spec: ToolFields) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p.name: param_schema(p) for p in spec.params},
        "required": [p.name for p in spec.params if p.required],
        "additionalProperties": False,
    }
