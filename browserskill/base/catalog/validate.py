"""The validator: a tool call's params object checked against its definition's fields.

Every surface's params go through `validate` (the HTTP API, the MCP server, the CLI's
arguments, the dispatcher), so a value is refused the same way wherever it comes from:
invalid_params naming the field. Stdlib only.
"""

from __future__ import annotations

import json
import math

from browserskill.base.errors import BskError, invalid

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.fields import ParamFields, ToolFields


# The params that name an element: a ref, or a locator (base/locator_syntax.py).
TARGET_PARAMS = frozenset({"ref", "source", "target", "frame"})


def validate(spec: ToolFields, raw: Any) -> dict[str, Any]:
    """Check a params object; return it with defaults filled in, or raise invalid_params."""
    if not isinstance(raw, dict):
        raise BskError("invalid_params", "params must be a JSON object")
    known = _param_names(spec)
    for key in raw:
        if key not in known:
            names = ", ".join(p.name for p in spec.params) or "none"
            raise invalid(key, f"unknown parameter for {spec.name} (accepted: {names})")
    out: dict[str, Any] = {}
    for p in spec.params:
        if key_missing(raw, p.name):
            if p.required:
                raise invalid(p.name, "is required", hint=f"usage: bsk {spec.usage()}")
            out[p.name] = p.default
            continue
        out[p.name] = check_value(p, raw[p.name])
        if p.name in TARGET_PARAMS and isinstance(out[p.name], str):
            from browserskill.base import locator_syntax

            if locator_syntax.is_locator(out[p.name]):  # its syntax, here: nothing sent
                locator_syntax.parse(p.name, out[p.name])
    return out


# Each spec's param names, made once (a spec is a tuple: it can't hold them itself).
_PARAM_NAMES: dict[int, tuple[ToolFields, frozenset[str]]] = {}


def _param_names(spec: ToolFields) -> frozenset[str]:
    held = _PARAM_NAMES.get(id(spec))
    if held is None or held[0] is not spec:
        held = _PARAM_NAMES[id(spec)] = (spec, frozenset(p.name for p in spec.params))
    return held[1]


def key_missing(raw: dict[str, Any], name: str) -> bool:
    return name not in raw or raw[name] is None


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


# Integers JavaScript and CDP carry exactly; beyond them a value is not what was meant.
MAX_SAFE_INTEGER = 2**53 - 1


def check_value(p: ParamFields, value: Any) -> Any:
    if p.type == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 2.0 is the integer 2
    ok = isinstance(value, _PY_TYPES[p.type])
    if p.type in ("integer", "number") and isinstance(value, bool):
        ok = False
    if not ok:
        raise invalid(p.name, f"must be {p.type}, got {type(value).__name__}")
    if p.type == "number" and not math.isfinite(value):  # NaN passes every range check
        raise invalid(p.name, f"must be a finite number, got {value}")
    if p.type in ("integer", "number") and abs(value) > MAX_SAFE_INTEGER:
        raise invalid(p.name, f"{value:g} is out of range")
    if p.type == "array":
        if p.nargs == "+" and not value:
            raise invalid(p.name, "must not be empty")
        for item in value:
            if not isinstance(item, str):
                raise invalid(p.name, "items must be strings")
    if p.path and any("\0" in v for v in (value if isinstance(value, list) else [value])):
        raise invalid(p.name, "a file path can't contain a NUL character")
    if p.path and not all(v.startswith("/") for v in (value if isinstance(value, list)
                                                       else [value])):
        raise invalid(p.name, "must be an absolute path (the CLI makes it absolute)")
    if p.choices and value not in p.choices:
        raise invalid(p.name, f"must be one of {', '.join(map(str, p.choices))}, got {value!r}")
    if p.minimum is not None and value < p.minimum:
        raise invalid(p.name, f"must be ≥ {p.minimum}, got {value}")
    if p.maximum is not None and value > p.maximum:
        raise invalid(p.name, f"must be ≤ {p.maximum}, got {value}")
    if p.max_length is not None and isinstance(value, str) and len(value) > p.max_length:
        raise invalid(p.name, f"must be at most {p.max_length} characters")
    if p.max_length is not None and p.type == "object" and len(json.dumps(
            value, ensure_ascii=False, separators=(",", ":")).encode(errors="surrogatepass")) \
            > p.max_length:
        raise invalid(p.name, f"must be at most {p.max_length} bytes as JSON")
    if p.type == "string" and p.required and not p.blank_ok and is_blank(value):
        raise invalid(p.name, "must not be empty")
    return value


# "Not blank" in a schema: a character that is whitespace neither in Python's sense
# (str.isspace: also \x1c-\x1f, \x85) nor in ECMAScript regexes' (also \ufeff).
NOT_BLANK = "[^\\s\\x1c-\\x1f\\x85\\ufeff]"


def is_blank(text: str) -> bool:
    """No character that `NOT_BLANK` matches."""
    return not text.replace("\ufeff", "").strip()
