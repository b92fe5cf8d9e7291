"""Every tool's definition, once: name, effect, parameters, help.

The CLI builds its arguments from this, the HTTP API validates request bodies and
writes its OpenAPI document from it, and the MCP server derives input schemas from it.
Stdlib only, pure data: the CLI imports it on every call.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from browserskill.errors import BskError, invalid


class Effect(enum.Enum):
    """What a tool can do to the page; fixes retry safety on success."""

    READ = "read"  # looks, changes nothing the page can see
    TRANSIENT_INPUT = "transient_input"  # browser-native input sent in steps
    MUTATION = "mutation"  # navigates, runs script, opens or closes tabs
    SESSION = "session"  # changes the session itself (stop)

    @property
    def retry_safe(self) -> bool:
        return self is Effect.READ


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # string | integer | number | boolean | array
    help: str
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    positional: bool = False  # on the CLI: a positional argument, not --flag
    nargs: str | None = None  # CLI nargs for positional arrays ("+" or "*")
    path: bool = False  # a local file path: the CLI makes it absolute

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {"type": self.type, "description": self.help}
        if self.type == "array":
            s["items"] = {"type": "string"}
        if self.choices:
            s["enum"] = list(self.choices)
        if self.default is not None:
            s["default"] = self.default
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.max_length is not None:
            s["maxLength"] = self.max_length
        return s


@dataclass(frozen=True)
class ToolSpec:
    name: str
    words: tuple[str, ...]  # CLI command words, e.g. ("tab", "new")
    effect: Effect
    summary: str
    params: tuple[Param, ...] = ()
    example: str = ""
    default_timeout_s: float = 30.0

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def validate(self, raw: Any) -> dict[str, Any]:
        """Check a params object; return it with defaults filled in, or raise invalid_params."""
        if not isinstance(raw, dict):
            raise BskError("invalid_params", "params must be a JSON object")
        known = {p.name: p for p in self.params}
        for key in raw:
            if key not in known:
                names = ", ".join(known) or "none"
                raise invalid(key, f"unknown parameter for {self.name} (accepted: {names})")
        out: dict[str, Any] = {}
        for p in self.params:
            if key_missing(raw, p.name):
                if p.required:
                    raise invalid(p.name, "is required", hint=f"usage: bsk {self.usage()}")
                out[p.name] = p.default
                continue
            out[p.name] = check_value(p, raw[p.name])
        return out

    def usage(self) -> str:
        parts = [" ".join(self.words)]
        for p in self.params:
            if p.positional:
                token = p.name.upper() + ("…" if p.type == "array" else "")
                parts.append(token if p.required else f"[{token}]")
        return " ".join(parts)


def key_missing(raw: dict[str, Any], name: str) -> bool:
    return name not in raw or raw[name] is None


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


def check_value(p: Param, value: Any) -> Any:
    ok = isinstance(value, _PY_TYPES[p.type])
    if p.type in ("integer", "number") and isinstance(value, bool):
        ok = False
    if not ok:
        raise invalid(p.name, f"must be {p.type}, got {type(value).__name__}")
    if p.type == "array":
        if p.nargs == "+" and not value:
            raise invalid(p.name, "must not be empty")
        for item in value:
            if not isinstance(item, str):
                raise invalid(p.name, "items must be strings")
    if p.choices and value not in p.choices:
        raise invalid(p.name, f"must be one of {', '.join(map(str, p.choices))}, got {value!r}")
    if p.minimum is not None and value < p.minimum:
        raise invalid(p.name, f"must be ≥ {p.minimum}, got {value}")
    if p.maximum is not None and value > p.maximum:
        raise invalid(p.name, f"must be ≤ {p.maximum}, got {value}")
    if p.max_length is not None and isinstance(value, str) and len(value) > p.max_length:
        raise invalid(p.name, f"must be at most {p.max_length} characters")
    if p.type == "string" and p.required and not value.strip():
        raise invalid(p.name, "must not be empty")
    return value


WAIT_UNTIL = Param(
    "wait_until",
    "string",
    "when a navigation counts as done",
    default="load",
    choices=("load", "domcontentloaded", "commit"),
)

_R, _T, _M, _S = Effect.READ, Effect.TRANSIENT_INPUT, Effect.MUTATION, Effect.SESSION

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "open", ("open",), _M, "Navigate the current tab to a URL and wait for it to load.",
        (Param("url", "string", "address to open (http, https, file, data, about)",
               required=True, positional=True, max_length=8192), WAIT_UNTIL),
        example="bsk open https://example.com",
    ),
    ToolSpec("back", ("back",), _M, "Go back in the current tab's history.", (WAIT_UNTIL,)),
    ToolSpec("forward", ("forward",), _M, "Go forward in the current tab's history.",
             (WAIT_UNTIL,)),
    ToolSpec("reload", ("reload",), _M, "Reload the current tab.", (WAIT_UNTIL,)),
    ToolSpec(
        "eval", ("eval",), _M,
        "Run JavaScript in the page; awaits promises and returns the value. A script "
        "exception is a result with ok=false, not a failure.",
        (Param("expression", "string", "JavaScript expression or statements",
               required=True, positional=True, max_length=1_000_000),),
        example="bsk eval 'document.title'",
    ),
    ToolSpec(
        "snapshot", ("snapshot",), _R,
        "Accessibility tree of the current tab, one node per line, with refs (e12) to act on.",
        (Param("max_tokens", "integer", "truncate the text to about this many tokens "
               "(chars/4), saying what was cut", minimum=50),),
        example="bsk snapshot",
    ),
    ToolSpec(
        "screenshot", ("screenshot",), _R, "Capture the current tab's viewport as PNG.",
        (Param("path", "string", "file to write (default: a new file in the state dir)",
               positional=True, path=True),),
    ),
    ToolSpec(
        "click", ("click",), _T,
        "Click an element by ref: scrolls it into view and checks nothing covers it first.",
        (Param("ref", "string", "element ref from the last snapshot, e.g. e12",
               required=True, positional=True, max_length=64),
         WAIT_UNTIL),
        example="bsk click e12",
    ),
    ToolSpec("tab_list", ("tab", "list"), _R, "List this session's tabs."),
    ToolSpec(
        "tab_new", ("tab", "new"), _M, "Open a new tab in this session and make it current.",
        (Param("url", "string", "address to open", positional=True, max_length=8192),
         WAIT_UNTIL),
    ),
    ToolSpec(
        "tab_select", ("tab", "select"), _R, "Make one of this session's tabs current.",
        (Param("tab_id", "string", "tab id from `bsk tab list`", required=True,
               positional=True, max_length=64),),
    ),
    ToolSpec(
        "tab_close", ("tab", "close"), _M, "Close one of this session's tabs.",
        (Param("tab_id", "string", "tab id from `bsk tab list`", required=True,
               positional=True, max_length=64),),
    ),
    ToolSpec("session_stop", ("session", "stop"), _S,
             "End the session and close its tabs (queued behind running operations)."),
)

BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
BY_WORDS: dict[tuple[str, ...], ToolSpec] = {t.words: t for t in TOOLS}


def get(name: str) -> ToolSpec:
    spec = BY_NAME.get(name)
    if spec is None:
        raise BskError(
            "invalid_params",
            f"tool: unknown tool {name!r}",
            hint="see `bsk --help` for the tool list",
            details={"field": "tool"},
        )
    return spec
