"""Every tool's definition, once: name, effect, parameters, help.

The CLI builds its arguments from this, the HTTP API validates request bodies and
writes its OpenAPI document from it, and the MCP server derives input schemas from it.
Stdlib only, pure data: the CLI imports it on every call.
"""

from __future__ import annotations

import enum
import json
import math
from collections import namedtuple

from browserskill.base.contract import MAX_TIMEOUT_MS
from browserskill.base.errors import BskError, invalid

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any


class Effect(enum.Enum):
    """What a tool can do to the page; fixes retry safety on success."""

    READ = "read"  # looks, changes nothing the page can see
    TRANSIENT_INPUT = "transient_input"  # browser-native input sent in steps
    MUTATION = "mutation"  # navigates, runs script, opens or closes tabs
    SESSION = "session"  # changes the session itself (stop)

    @property
    def retry_safe(self) -> bool:
        return self is Effect.READ


# The error codes a tool call can end with (a tool's `errors`; docs/outcomes.md).
TOOL_ERRORS = ("invalid_params", "session_not_found", "ref_not_found", "stale_ref",
               "session_busy", "user_interrupted", "cancelled", "outcome_unknown",
               "browser_unavailable", "action_failed", "journal_unavailable", "internal")
WEBMCP_ERRORS = (*TOOL_ERRORS, "tool_not_found", "tool_page_unloaded")
SESSION_STOP_ERRORS = ("invalid_params", "session_not_found", "session_busy", "cancelled",
                       "outcome_unknown", "browser_unavailable", "action_failed",
                       "journal_unavailable", "internal")


# Records are namedtuples, not dataclasses: dataclasses would add ~15 ms to every `bsk`.
_ParamFields = namedtuple(
    "_ParamFields",
    [
        "name", "type", "help",  # type: string | integer | number | boolean | array | object
        "required", "default", "choices", "minimum", "maximum", "max_length",
        "positional",  # on the CLI: a positional argument, not --flag
        "nargs",  # CLI nargs for positional arrays ("+" or "*")
        "path",  # a local file path: the CLI makes it absolute
        "blank_ok",  # a required string that may be empty or blank (text to type)
        "bare",  # on the CLI: the value of the flag given alone (`--abort`); a value
                 # follows it only if it is one of `choices`
        "short",  # on the CLI: a one-letter alias too (`-i`), the one peers' users type
    ],
    defaults=(False, None, (), None, None, None, False, None, False, False, None, None),
)


class Param(_ParamFields):
    __slots__ = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {"type": self.type, "description": self.help}
        if self.type == "array":
            s["items"] = {"type": "string"}
            if self.nargs == "+":
                s["minItems"] = 1
        if self.path:  # absolute (the CLI makes it so), no NUL
            (s["items"] if self.type == "array" else s)["pattern"] = "^/[^\\x00]*$"
        if self.choices:
            s["enum"] = list(self.choices)
        if self.default is not None:
            s["default"] = self.default
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.max_length is not None:  # for an object: its size as JSON, in bytes
            s["maxLength" if self.type != "object" else "x-maxJsonBytes"] = self.max_length
        if self.type == "string" and self.required and not self.blank_ok:
            s["minLength"] = 1
            if not self.path:  # an absolute path's own pattern already says "not blank"
                s["pattern"] = NOT_BLANK  # `check_value` refuses whitespace alone
        return s


_ToolFields = namedtuple(
    "_ToolFields",
    [
        "name", "words",  # words: CLI command words, e.g. ("tab", "new")
        "effect", "summary", "params", "example", "default_timeout_s",
        "json_param",  # a boolean param the CLI's --json also turns on
        "timeout_range_s",  # (low, high) deadlines it accepts, if limited
        "exactly_one",  # params of which exactly one must be given (truthy), if any
        "hidden",  # reached by a route of its own, not as a plain tool (CLI, HTTP, MCP)
        "during_dialog",  # runs while a JavaScript dialog blocks the page
        "after_crash",  # runs on a tab whose renderer crashed (brings it back or leaves it)
        "errors",  # the error codes a call of it can end with (OpenAPI's responses)
    ],
    defaults=((), "", 30.0, None, None, None, False, False, False, TOOL_ERRORS),
)


class ToolSpec(_ToolFields):
    __slots__ = ()

    @property
    def on_pages(self) -> bool:
        """It works on the session's pages (so they are recovered and shown first, and
        its browser must be there); False for what ends the session itself."""
        return self.effect is not Effect.SESSION

    @property
    def capability(self) -> str | None:
        """Its MCP capability group (`CAPABILITIES`); None for the hidden ones."""
        return CAPABILITY_OF.get(self.name)

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
        known = _param_names(self)
        for key in raw:
            if key not in known:
                names = ", ".join(p.name for p in self.params) or "none"
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


# Each spec's param names, made once (a spec is a tuple: it can't hold them itself).
_PARAM_NAMES: dict[int, tuple[ToolSpec, frozenset[str]]] = {}


def _param_names(spec: ToolSpec) -> frozenset[str]:
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


def check_value(p: Param, value: Any) -> Any:
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


WAIT_UNTIL = Param(
    "wait_until",
    "string",
    "when a navigation counts as done",
    default="load",
    choices=("load", "domcontentloaded", "commit"),
)

# `batch`: how many commands one call may carry.
BATCH_MAX_STEPS = 100

# Params that name an element: a ref from a snapshot (e12, f1e7) or a locator
# (browserskill/tools/locators.py), resolved once at call time to exactly one element.
TARGET_PARAMS = frozenset({"ref", "source", "target", "frame"})
TARGET_MAX = 4096
# eval's value, cut in the page where it can be (docs/outcomes.md, "Bounded results").
EVAL_MAX_CHARS = 1_000_000
EVAL_MAX_CHARS_LIMIT = 5_000_000
LOCATOR_HELP = ('; or a locator: css=SELECTOR, text=TEXT, role=ROLE[name="NAME"], '
                'chained into an iframe with " >> "')
REF = Param("ref", "string", "element ref from the last snapshot, e.g. e12" + LOCATOR_HELP,
            required=True, positional=True, max_length=TARGET_MAX)
# A stored secret by name (browserskill/base/vault.py): the agent names it, never holds it.
SECRET = Param("secret", "string", "name of a stored secret to enter instead of TEXT (a "
               "person stores it with the CLI's secret set command); refused on a frame of "
               "another origin", max_length=64)
MODIFIERS = Param("modifiers", "array", "keys held during the action: Alt, Control, Meta, "
                  "Shift (repeat, or join with +)")

# Viewport coordinates for `mouse …`, in CSS pixels.
MOUSE_X = Param("x", "number", "CSS pixels from the viewport's left edge", required=True,
                positional=True, minimum=0, maximum=100_000)
MOUSE_Y = Param("y", "number", "CSS pixels from the viewport's top edge", required=True,
                positional=True, minimum=0, maximum=100_000)
MOUSE_BUTTON = Param("button", "string", "mouse button", default="left",
                     choices=("left", "right", "middle"))

# The ring buffers' cursor (console, network).
SINCE = Param("since", "integer", "cursor from an earlier call (next_since); without it, the "
              "latest entries", minimum=0, maximum=MAX_SAFE_INTEGER)
LIMIT = Param("limit", "integer", "at most this many entries", default=100, minimum=1,
              maximum=1000)

# Wheel offsets (scroll, mouse wheel): bounded, a huge one would keep the page busy.
WHEEL = (Param("dx", "integer", "pixels right (negative: left)", default=0,
               minimum=-1_000_000, maximum=1_000_000),
         Param("dy", "integer", "pixels down (negative: up)", default=0,
               minimum=-1_000_000, maximum=1_000_000))

_R, _T, _M, _S = Effect.READ, Effect.TRANSIENT_INPUT, Effect.MUTATION, Effect.SESSION

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "open", ("open",), _M, "Navigate the current tab to a URL and wait for it to load.",
        (Param("url", "string", "address to open (http, https, file, data, about)",
               required=True, positional=True, max_length=8192), WAIT_UNTIL),
        example="bsk open https://example.com", after_crash=True, during_dialog=True,
    ),
    ToolSpec("back", ("back",), _M, "Go back in the current tab's history.", (WAIT_UNTIL,),
             after_crash=True),
    ToolSpec("forward", ("forward",), _M, "Go forward in the current tab's history.",
             (WAIT_UNTIL,), after_crash=True),
    ToolSpec("reload", ("reload",), _M, "Reload the current tab.", (WAIT_UNTIL,),
             after_crash=True),
    ToolSpec(
        "eval", ("eval",), _M,
        "Run JavaScript in the page; awaits promises and returns the value. Each call has "
        "its own scope (top-level const/let don't collide between calls). A script "
        "exception is a result with ok=false, not a failure.",
        (Param("expression", "string", "JavaScript expression or statements (with --ref: a "
               "function of the element, or an expression using `el`)",
               required=True, positional=True, max_length=1_000_000),
         Param("ref", "string", "run the function with this element as its argument, e.g. "
               "--ref e3 'el => el.value'", max_length=64),
         Param("frame", "string", "ref of an <iframe>: run in that frame's document",
               max_length=64),
         Param("max_chars", "integer", "cut the value at this many characters (of its JSON "
               "text, for an object)", default=EVAL_MAX_CHARS, minimum=100,
               maximum=EVAL_MAX_CHARS_LIMIT)),
        example="bsk eval 'document.title'",
    ),
    ToolSpec(
        "snapshot", ("snapshot",), _R,
        "Accessibility tree of the current tab, one node per line, with refs (e12) to act on: "
        "controls, links, and anything clickable, focusable, draggable, droppable or editable. "
        "Iframes "
        "are included; their refs carry the frame (f1e7).",
        (Param("interactive", "boolean", "only actionable nodes, with the named containers "
               "around them", default=False, short="-i"),
         Param("max_tokens", "integer", "truncate the text to about this many tokens "
               "(chars/4), saying what was cut", minimum=50, maximum=10_000_000),
         Param("ref", "string", "only the subtree of this ref (or locator)",
               max_length=TARGET_MAX),
         Param("tree", "boolean", "also return the structured tree (the CLI's --json sets it)",
               default=False),
         Param("diff", "boolean", "only what changed since this session's last snapshot of "
               "the same document taken the same way (-i or whole) (added, removed and "
               "changed lines with their ancestors; "
               "refs of unchanged elements stay valid), or `no changes`; a new document "
               "gives the full snapshot, saying so", default=False)),
        example="bsk snapshot --interactive",
        json_param="tree",
    ),
    ToolSpec(
        "screenshot", ("screenshot",), _R,
        "Capture the current tab as PNG: the viewport, the full page, or one element.",
        (Param("path", "string", "file to write (default: a new file in the state dir)",
               positional=True, path=True),
         Param("full_page", "boolean", "the whole scrollable page, not just the viewport",
               default=False),
         Param("ref", "string", "only this element (scrolled into view): a ref or a "
               "locator", max_length=TARGET_MAX)),
        example="bsk screenshot --full-page page.png",
    ),
    ToolSpec(
        "click", ("click",), _T,
        "Click an element by ref: scrolls it into view and checks nothing covers it first.",
        (REF, Param("button", "string", "mouse button", default="left",
                    choices=("left", "right", "middle")),
         Param("count", "integer", "clicks in a row (2 = double click)", default=1,
               minimum=1, maximum=3),
         MODIFIERS, WAIT_UNTIL),
        example="bsk click e12",
    ),
    ToolSpec("dblclick", ("dblclick",), _T, "Double-click an element by ref.",
             (REF, MODIFIERS, WAIT_UNTIL), example="bsk dblclick e12"),
    ToolSpec(
        "hover", ("hover",), _T,
        "Move the mouse over an element; the session keeps the hover for later reads.",
        (REF,), example="bsk hover e4",
    ),
    ToolSpec(
        "drag", ("drag",), _T, "Drag one element onto another (mouse or HTML5 drag and drop).",
        (Param("source", "string", "ref (or locator) to drag", required=True,
               positional=True, max_length=TARGET_MAX),
         Param("target", "string", "ref (or locator) to drop on", required=True,
               positional=True, max_length=TARGET_MAX)),
        example="bsk drag e3 e9",
    ),
    ToolSpec(
        "scroll", ("scroll",), _T,
        "Scroll the page or an element by pixels (mouse wheel), or an element into view.",
        (Param("ref", "string", "element to scroll, a ref or a locator (default: the page)",
               positional=True, max_length=TARGET_MAX),
         *WHEEL,
         Param("into_view", "boolean", "scroll REF into view instead", default=False)),
        example="bsk scroll --dy 600",
    ),
    ToolSpec(
        "dialog_accept", ("dialog", "accept"), _M,
        "Accept the open alert/confirm/prompt/beforeunload dialog (TEXT answers a prompt).",
        (Param("text", "string", "text for a prompt", positional=True, max_length=100_000),),
        during_dialog=True,
    ),
    ToolSpec("dialog_dismiss", ("dialog", "dismiss"), _M, "Dismiss the open dialog.",
             during_dialog=True),
    ToolSpec("tab_list", ("tab", "list"), _R,
             "List this session's tabs; in an extension browser, --scope user lists the "
             "user's own tabs (ids like u123, to borrow) and all lists both.",
             (Param("scope", "string", "whose tabs", default="agent",
                    choices=("agent", "user", "all")),),
             during_dialog=True, after_crash=True),
    ToolSpec(
        "tab_borrow", ("tab", "borrow"), _M,
        "Borrow one of the user's tabs (extension browser): the user approves in the tab "
        "(no answer: denied), then it moves into the Agent Window and becomes current.",
        (Param("tab_id", "string", "user tab id from `bsk tab list --scope user` (u123)",
               required=True, positional=True, max_length=64),
         Param("prompt_timeout", "number", "seconds the user has to answer (default 30)",
               default=30, minimum=1, maximum=300)),
        example="bsk tab borrow u123", default_timeout_s=330.0,
    ),
    ToolSpec(
        "tab_return", ("tab", "return"), _M,
        "Give a borrowed tab back: it goes back to its window and place (or a sensible "
        "window if that one is gone, saying so).",
        (Param("tab_id", "string", "the borrowed tab's id in this session (or its u123 id)",
               required=True, positional=True, max_length=64),),
        example="bsk tab return t2",
    ),
    ToolSpec(
        "tab_new", ("tab", "new"), _M, "Open a new tab in this session and make it current.",
        (Param("url", "string", "address to open", positional=True, max_length=8192),
         WAIT_UNTIL),
        during_dialog=True, after_crash=True,
    ),
    ToolSpec(
        "tab_select", ("tab", "select"), _R, "Make one of this session's tabs current.",
        (Param("tab_id", "string", "tab id from `bsk tab list`", required=True,
               positional=True, max_length=64),),
        during_dialog=True, after_crash=True,
    ),
    ToolSpec(
        "tab_close", ("tab", "close"), _M, "Close one of this session's tabs.",
        (Param("tab_id", "string", "tab id from `bsk tab list`", required=True,
               positional=True, max_length=64),),
        during_dialog=True, after_crash=True,
    ),
    ToolSpec("session_stop", ("session", "stop"), _S,
             "End the session and close its tabs (queued behind running operations).",
             # Reached by its own route (DELETE /v1/sessions/ID, `session stop ID|--all`,
             # the end of an MCP connection), never as a plain tool.
             hidden=True, during_dialog=True, after_crash=True, errors=SESSION_STOP_ERRORS),
    ToolSpec(
        "fill", ("fill",), _M,
        "Replace the value of a text field, textarea or contenteditable with TEXT. It is "
        "entered as real input (input and change events fire); empty TEXT clears the field. "
        "--secret NAME enters a stored secret instead, only on a frame of its origins; its "
        "value is shown and stored nowhere.",
        (REF, Param("text", "string", "the new value (or give --secret)", positional=True,
                    max_length=100_000, blank_ok=True), SECRET),
        example='bsk fill e3 "jane@example.com"',
    ),
    ToolSpec(
        "type", ("type",), _T,
        "Type TEXT key by key into the focused element (fill replaces a value instead). "
        "--secret NAME types a stored secret instead, refused on a frame of another origin.",
        (Param("text", "string", "text to type; \\n presses Enter (or give --secret)",
               positional=True, max_length=10_000, blank_ok=True), WAIT_UNTIL, SECRET),
        example='bsk type "hello world"',
    ),
    ToolSpec(
        "press", ("press",), _T,
        "Press a key or chord in the focused element. E.g. Enter, Tab, Escape, ArrowDown, "
        "Control+A, Shift+Tab, Meta+Enter.",
        (Param("key", "string", "key name or chord joined with +", required=True,
               positional=True, max_length=100), WAIT_UNTIL),
        example="bsk press Control+A",
    ),
    ToolSpec(
        "select", ("select",), _M,
        "Select options of a <select> by value or label. Several for a multiple select; "
        "input and change events fire.",
        (REF, Param("values", "array", "option values or labels", required=True,
                    positional=True, nargs="+")),
        example="bsk select e7 blue",
    ),
    ToolSpec(
        "check", ("check",), _T,
        "Check a checkbox, radio button or switch. A real click, only if it is not checked.",
        (REF,), example="bsk check e5",
    ),
    ToolSpec(
        "uncheck", ("uncheck",), _T,
        "Uncheck a checkbox or switch. A real click, only if it is checked.",
        (REF,), example="bsk uncheck e5",
    ),
    ToolSpec(
        "upload", ("upload",), _M,
        "Set the files of a file input (<input type=file>). input and change events fire.",
        (REF, Param("files", "array", "local files to upload (absolute paths over HTTP)",
                    required=True, positional=True, nargs="+", path=True)),
        example="bsk upload e9 ./photo.png",
    ),
    ToolSpec(
        "wait", ("wait",), _R,
        "Wait for text, a selector, a navigation, network idle, an element or text to go "
        "away, or N ms. Exactly one "
        "condition; waits on page events, bounded by --timeout; not met: action_failed. "
        "Text and selectors are looked for in every frame, iframes too (found in one: "
        "frame_url).",
        (Param("text", "string", "text that appears in the visible text of the page or "
               "of one of its iframes", max_length=10_000),
         Param("selector", "string", "CSS selector of an element that appears (in the "
               "page or in one of its iframes)", max_length=10_000),
         Param("navigation", "boolean", "the next navigation of the tab (or the one in "
               "progress) loads", default=False),
         Param("network_idle", "boolean", "no network requests for 500 ms after the page "
               "loaded", default=False),
         Param("ms", "integer", "milliseconds to wait (the call's deadline stretches to "
               "fit unless --timeout is given)", minimum=0, maximum=MAX_TIMEOUT_MS),
         Param("gone", "string", "ref of an element that goes away (removed, hidden, or "
               "its page replaced)", max_length=64),
         Param("text_gone", "string", "text that is no longer in the visible text of the "
               "page (its main frame)", max_length=10_000),
         WAIT_UNTIL),
        example='bsk wait --text "Welcome"',
        exactly_one=("text", "selector", "navigation", "network_idle", "ms"),
    ),
    ToolSpec(
        "request_help", ("request-help",), _S,
        "Hand the session to a person (a login with two-factor, a captcha, a choice the "
        "agent must not make): it shows on the dashboard (bsk show) with the reason, "
        "the person acts in its live view, and agent calls meanwhile are session_busy. "
        "Ends completed when the person presses Done or the --until condition holds, "
        "saying what changed (URL, title, new tabs); user_interrupted if they press "
        "Decline; failed (reason timeout) at the call's deadline (--timeout, default 300 s).",
        (Param("reason", "string", "what the person should do, shown to them",
               required=True, positional=True, max_length=2000),
         Param("until", "string", "also done when this holds in the current tab: text=TEXT "
               "(visible text), url=TEXT (the URL contains it) or selector=CSS",
               max_length=10_000)),
        example='bsk request-help "Log in with your 2FA code" --until url=/inbox',
        default_timeout_s=300.0,
    ),
    ToolSpec(
        "record_start", ("record", "start"), _S,
        "Record what happens in this session's tabs — a person's clicks and typing in the "
        "dashboard's live view, and the agent's own calls: clicks, fills, selects, checks, "
        "key presses, navigations, uploads — until `record stop FILE`.",
        (), example="bsk record start",
    ),
    ToolSpec(
        "record_stop", ("record", "stop"), _S,
        "Stop recording and write the script: one bsk command per line, each target a "
        "locator (role and name where unique, else css= or text=), passwords as "
        "${BSK_SECRET_N}. The CLI's replay command runs it.",
        (Param("path", "string", "file to write the script to", required=True,
               positional=True, path=True),),
        example="bsk record stop login.bsk",
    ),
    ToolSpec(
        "batch", ("batch",), _M,
        "Run several commands in one call, in order, each its own operation with its own "
        "honest result (op id, status, dispatched), stopping at the first that does not "
        "complete unless --continue; the rest are reported as not sent. A command is one "
        "line as the CLI's replay command reads it (`click e3`, `fill e4 'hello'`); the "
        "CLI also reads them from stdin, one a line. --timeout is the whole batch's "
        "deadline (default 300 s); each command ends by its own deadline or the batch's, "
        "whichever is first.",
        (Param("commands", "array", f"the commands, e.g. 'click e3' 'snapshot --diff' (at "
               f"most {BATCH_MAX_STEPS}); none on the CLI: read from stdin",
               positional=True, nargs="*"),
         Param("continue", "boolean", "go on after a command that does not complete",
               default=False)),
        example="bsk batch 'fill e4 ada@example.com' 'click e5' 'snapshot --diff'",
        default_timeout_s=300.0,
    ),
    ToolSpec(
        "html", ("html",), _R, "The HTML of the page, or of one element (outerHTML).",
        (Param("ref", "string", "element ref or locator (default: the whole document)",
               positional=True, max_length=TARGET_MAX),
         Param("max_chars", "integer", "cut the HTML at this many characters",
               default=50_000, minimum=100, maximum=5_000_000)),
        example="bsk html e4",
    ),
    ToolSpec(
        "console", ("console",), _R,
        "Console messages and uncaught errors of the current tab. Oldest first; without "
        "--since the latest ones; pass the returned next_since as --since for newer ones.",
        (SINCE, LIMIT),
        example="bsk console --since 12",
    ),
    ToolSpec(
        "network", ("network",), _R,
        "Network requests of the current tab (method, URL, status, state). Oldest first; a "
        "request comes again when it changes state; pass next_since as --since to poll.",
        (SINCE, LIMIT),
        example="bsk network --since 40",
    ),
    ToolSpec(
        "emulate", ("emulate",), _M,
        "Emulate a device and its surroundings in the current tab: viewport, scale, mobile, "
        "user agent, or a named --device; color scheme, reduced motion, print media; "
        "offline or a slow network; a slower CPU; geolocation (its permission granted); "
        "timezone and locale. Settings add up across calls until --reset; the result reads "
        "back what the page now sees.",
        (Param("device", "string", "a device from Playwright's device list, e.g. "
               "\"iPhone 13\" or \"Pixel 7\" (viewport, scale, mobile, touch, user agent; "
               "other flags given with it win)", max_length=200),
         Param("width", "integer", "viewport width in CSS pixels", minimum=1,
               maximum=10_000),
         Param("height", "integer", "viewport height in CSS pixels", minimum=1,
               maximum=10_000),
         Param("scale", "number", "device scale factor (devicePixelRatio)", minimum=0.1,
               maximum=10),
         Param("mobile", "boolean", "mobile viewport and touch events (--no-mobile: off)"),
         Param("user_agent", "string", "user agent string", max_length=2000),
         Param("color_scheme", "string", "prefers-color-scheme",
               choices=("light", "dark", "no-preference")),
         Param("reduced_motion", "boolean", "prefers-reduced-motion: reduce "
               "(--no-reduced-motion: no-preference)"),
         Param("media", "string", "CSS media type", choices=("screen", "print")),
         Param("offline", "boolean", "no network at all; navigator.onLine is false "
               "(--no-offline: back online)"),
         Param("network", "string", "network throttling, DevTools' presets",
               choices=("slow-3g", "fast-3g", "off")),
         Param("cpu", "number", "CPU slowdown factor (1: none, 4: four times slower)",
               minimum=1, maximum=100),
         Param("geolocation", "string", "LAT,LON[,ACCURACY_M]; also grants the geolocation "
               "permission to the page's origin", max_length=100),
         Param("timezone", "string", "IANA timezone, e.g. Europe/Berlin", max_length=100),
         Param("locale", "string", "locale for Intl and navigator.language(s), e.g. de-DE",
               max_length=100),
         Param("reset", "boolean", "clear all emulation in this tab", default=False),
         Param("off", "boolean", "the same as --reset", default=False)),
        example="bsk emulate --device \"iPhone 13\" --color-scheme dark --timezone Asia/Tokyo",
    ),
    ToolSpec(
        "window_resize", ("window", "resize"), _M,
        "Resize this session's browser windows (each of its tabs in the embedded browser "
        "has one); viewports follow, and the session's new tabs get the size too. Other "
        "sessions' windows are untouched. In the user's browser (extension): only the "
        "session's Agent Window.",
        (Param("width", "integer", "window width in pixels", required=True, positional=True,
               minimum=100, maximum=10_000),
         Param("height", "integer", "window height in pixels", required=True,
               positional=True, minimum=100, maximum=10_000)),
        example="bsk window resize 1024 768",
    ),
    ToolSpec(
        "mouse_move", ("mouse", "move"), _T,
        "Move the mouse to viewport coordinates (CSS pixels from the top-left of the tab's "
        "viewport). The fallback when no ref fits: canvases, maps, custom widgets. A button "
        "held by `mouse down` stays held (that drags).",
        (MOUSE_X, MOUSE_Y), example="bsk mouse move 120 80",
    ),
    ToolSpec(
        "mouse_down", ("mouse", "down"), _T,
        "Move to X Y and press a mouse button there, keeping it held until `mouse up`. "
        "A cancelled press releases the button again.",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON), example="bsk mouse down 120 80",
    ),
    ToolSpec(
        "mouse_up", ("mouse", "up"), _T,
        "Move to X Y and release a mouse button there (ends a drag begun with `mouse down`).",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON, WAIT_UNTIL), example="bsk mouse up 300 80",
    ),
    ToolSpec(
        "mouse_click", ("mouse", "click"), _T,
        "Click at viewport coordinates (move, press, release), reporting what it started "
        "(navigation, dialog, new tab, download). Prefer `click REF` where there is a ref: "
        "it checks what is under the point first.",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON, MODIFIERS, WAIT_UNTIL),
        example="bsk mouse click 200 150",
    ),
    ToolSpec(
        "mouse_dblclick", ("mouse", "dblclick"), _T,
        "Double-click at viewport coordinates.",
        (MOUSE_X, MOUSE_Y, MOUSE_BUTTON, MODIFIERS, WAIT_UNTIL),
        example="bsk mouse dblclick 200 150",
    ),
    ToolSpec(
        "mouse_wheel", ("mouse", "wheel"), _T,
        "Turn the mouse wheel over viewport coordinates: scrolls whatever is under X Y.",
        (MOUSE_X, MOUSE_Y,
         *WHEEL),
        example="bsk mouse wheel 200 150 --dy 300",
    ),
    ToolSpec(
        "download_list", ("download", "list"), _R,
        "This session's downloads, oldest first: path, suggested file name, bytes, state "
        "(in_progress, completed, canceled). Files land in $BSK_HOME/downloads/SESSION/.",
        example="bsk download list",
    ),
    ToolSpec(
        "download_wait", ("download", "wait"), _R,
        "Wait until a download not reported yet has finished and none is still running; "
        "bounded by --timeout. An action that starts a download already reports it "
        "(result.downloads), finished or in_progress: wait for the in_progress ones here.",
        example="bsk download wait --timeout 120",
    ),
    ToolSpec(
        "webmcp_list", ("webmcp", "list"), _R,
        "List the WebMCP tools the session's pages expose (every frame of every tab): "
        "tool_ref, description, input schema, annotations, source. The text is the page's.",
        example="bsk webmcp list", errors=WEBMCP_ERRORS,
    ),
    ToolSpec(
        "webmcp_invoke", ("webmcp", "invoke"), _M,
        "Call a page's WebMCP tool by name or tool_ref with a JSON object input; --timeout "
        "(1-120 s, default 60) bounds it. Its output is page-provided and untrusted.",
        (Param("tool", "string", "tool name, or its tool_ref from `bsk webmcp list`",
               required=True, positional=True, max_length=256),
         Param("input", "object", "the tool's input, a JSON object (at most 1 MiB)",
               max_length=1_048_576)),
        example='bsk webmcp invoke add_item --input \'{"item": "lamp"}\'',
        default_timeout_s=60.0, timeout_range_s=(1.0, 120.0), errors=WEBMCP_ERRORS,
    ),
)


_COOKIE_URL = Param("url", "string", "the cookies a request to this URL would send",
                    max_length=8192)
_SESSION_STORAGE = Param("session_storage", "boolean", "sessionStorage instead of "
                         "localStorage", default=False)
_KEY = Param("name", "string", "the storage key", required=True, positional=True,
             max_length=10_000, blank_ok=True)
_STATE_NOTE = ("Cookies are the session's browser context's: its own with `session start "
               "--isolated`, else the shared profile's, which every non-isolated session "
               "sees too.")

STATE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("cookies_list", ("cookies", "list"), _R,
             "List cookies, HttpOnly ones included. " + _STATE_NOTE, (_COOKIE_URL,),
             example="bsk cookies list --url https://example.com/"),
    ToolSpec(
        "cookies_set", ("cookies", "set"), _M,
        "Set a cookie for --url, or --domain and --path; with neither, for the current "
        "tab's page. " + _STATE_NOTE,
        (Param("name", "string", "cookie name", required=True, positional=True,
               max_length=4096),
         Param("value", "string", "cookie value", required=True, positional=True,
               max_length=4096, blank_ok=True),
         Param("url", "string", "the URL it belongs to (sets domain, path, secure)",
               max_length=8192),
         Param("domain", "string", "its domain (a leading dot includes subdomains)",
               max_length=255),
         Param("path", "string", "its path (default /)", max_length=4096),
         Param("http_only", "boolean", "hidden from page script", default=False),
         Param("secure", "boolean", "sent over https only", default=False),
         Param("same_site", "string", "SameSite policy", choices=("Strict", "Lax", "None")),
         Param("expires", "number", "expiry, seconds since the epoch (default: a session "
               "cookie)", minimum=0, maximum=253_402_300_799)),
        example="bsk cookies set theme dark --url https://example.com/",
    ),
    ToolSpec("cookies_delete", ("cookies", "delete"), _M,
             "Delete the cookies named NAME (all of them, or those of --url, or of --domain "
             "and --path).",
             (Param("name", "string", "cookie name", required=True, positional=True,
                    max_length=4096),
              Param("url", "string", "only the one a request to this URL would send",
                    max_length=8192),
              Param("domain", "string", "only those of this domain", max_length=255),
              Param("path", "string", "only those of this path", max_length=4096)),
             example="bsk cookies delete sid --domain example.com"),
    ToolSpec("cookies_clear", ("cookies", "clear"), _M,
             "Delete every cookie of the session's browser context. In the shared profile "
             "that is every non-isolated session's cookies."),
    ToolSpec("storage_list", ("storage", "list"), _R,
             "List the current tab's origin's localStorage (or --session-storage).",
             (_SESSION_STORAGE,), example="bsk storage list"),
    ToolSpec("storage_get", ("storage", "get"), _R,
             "Read one key of the current tab's origin's storage (not set: action_failed).",
             (_KEY, _SESSION_STORAGE), example="bsk storage get token"),
    ToolSpec("storage_set", ("storage", "set"), _M,
             "Set a key in the current tab's origin's storage (pages already open see it "
             "on their next read).",
             (_KEY, Param("value", "string", "the value", required=True, positional=True,
                          max_length=5_000_000, blank_ok=True), _SESSION_STORAGE),
             example="bsk storage set theme dark"),
    ToolSpec("storage_delete", ("storage", "delete"), _M,
             "Remove a key from the current tab's origin's storage.",
             (_KEY, _SESSION_STORAGE), example="bsk storage delete token"),
    ToolSpec("storage_clear", ("storage", "clear"), _M,
             "Remove every key of the current tab's origin's storage.", (_SESSION_STORAGE,)),
    ToolSpec(
        "state_save", ("state", "save"), _R,
        "Save the session's cookies and the localStorage of every web origin its pages "
        "have been on (or that it loaded) to PATH, in Playwright's storageState JSON "
        "(written 0600: it holds credentials).",
        (Param("path", "string", "file to write", required=True, positional=True,
               path=True),),
        example="bsk state save login.json",
    ),
    ToolSpec(
        "state_load", ("state", "load"), _M,
        "Load cookies and localStorage from a storageState JSON file (bsk's or "
        "Playwright's) into the session. A new isolated session can start from one too "
        "(session start with --isolated --state FILE).",
        (Param("path", "string", "storageState file to read", required=True,
               positional=True, path=True),),
        example="bsk state load login.json",
    ),
)

_PERMISSION_NAMES = Param(
    "names", "array", "permission names as the web knows them: geolocation, "
    "notifications, camera, microphone, clipboard-read, clipboard-write, midi, …",
    required=True, positional=True, nargs="+")
_PERMISSION_ORIGIN = Param("origin", "string", "the origin they are for (default: the "
                           "current tab's)", max_length=8192)
_PERMISSION_NOTE = ("Permissions belong to the session's browser context: its own with "
                    "--isolated, else the shared profile's.")

# Evidence of what happened in a tab (PDF, video, trace) and the browser's permissions.
EVIDENCE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "pdf", ("pdf",), _R,
        "Print the current tab to a PDF file (print media, backgrounds included).",
        (Param("path", "string", "PDF file to write", required=True, positional=True,
               path=True),
         Param("landscape", "boolean", "landscape orientation", default=False),
         Param("format", "string", "paper size", default="A4", choices=("A4", "Letter"))),
        example="bsk pdf page.pdf --format Letter",
    ),
    ToolSpec(
        "video_start", ("video", "start"), _S,
        "Start recording the current tab as video (its screencast frames, 25 fps). The "
        "recording runs until `video stop PATH` or the session ends, and shows in "
        "`session list`.",
        (Param("size", "string", "frame size WxH, e.g. 800x600 (default: the viewport's; "
               "the page is scaled to fit)", max_length=20),),
        example="bsk video start --size 800x600",
    ),
    ToolSpec(
        "video_stop", ("video", "stop"), _S,
        "Stop the session's video recording and write it to PATH: .webm (VP8) or .mp4 "
        "(H.264). A video a daemon crash cut short (`interrupted` in `session list`) is "
        "written the same way, with everything recorded until the crash.",
        (Param("path", "string", "video file to write (.webm or .mp4)", required=True,
               positional=True, path=True),),
        example="bsk video stop run.webm", default_timeout_s=120.0,
    ),
    ToolSpec(
        "trace_start", ("trace", "start"), _S,
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
        "trace_stop", ("trace", "stop"), _S,
        "Stop the trace and write it to PATH as Chrome trace JSON (open it in Perfetto "
        "or DevTools' Performance panel). A trace outlives a daemon crash: the next daemon "
        "re-adopts it and this writes all of it.",
        (Param("path", "string", "trace file to write (.json)", required=True,
               positional=True, path=True),),
        example="bsk trace stop trace.json", default_timeout_s=120.0,
    ),
    ToolSpec(
        "permissions_grant", ("permissions", "grant"), _M,
        "Grant browser permissions to an origin (default: the current tab's). "
        + _PERMISSION_NOTE,
        (_PERMISSION_NAMES, _PERMISSION_ORIGIN),
        example="bsk permissions grant geolocation notifications",
    ),
    ToolSpec(
        "permissions_clear", ("permissions", "clear"), _M,
        "Set permissions back to ask (the default) for an origin (default: the current "
        "tab's). " + _PERMISSION_NOTE,
        (_PERMISSION_NAMES, _PERMISSION_ORIGIN),
        example="bsk permissions clear geolocation",
    ),
)
TOOLS = TOOLS + STATE_TOOLS + EVIDENCE_TOOLS

_ROUTE_PATTERN = Param("pattern", "string", "URL glob, Playwright's: * any characters "
                       "but /, ** any characters, {a,b} either; matched against the whole "
                       "URL, e.g. '**/api/*'", required=True, positional=True,
                       max_length=8192)
# Playwright's route.abort() names, mapped to CDP's by browser/routing.py.
ABORT_REASONS = ("failed", "aborted", "timedout", "accessdenied", "connectionclosed",
                 "connectionreset", "connectionrefused", "connectionaborted",
                 "connectionfailed", "namenotresolved", "internetdisconnected",
                 "addressunreachable", "blockedbyclient", "blockedbyresponse")

NETWORK_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "network_show", ("network", "show"), _R,
        "One request of the current tab's network buffer by id (from `bsk network`): "
        "method, URL, status, timing, request and response headers, redirects; with "
        "--body its response body (text as text, cut at --max-body chars with a note; "
        "binary saved to a file), with --request-body what it sent.",
        (Param("id", "string", "request id from `bsk network`, e.g. r12", required=True,
               positional=True, max_length=64),
         Param("body", "boolean", "include the response body", default=False),
         Param("request_body", "boolean", "include the request body (POST data)",
               default=False),
         Param("max_body", "integer", "cut a text body at this many characters (the "
               "whole body is saved to a file then)", default=100_000, minimum=100,
               maximum=5_000_000)),
        example="bsk network show r12 --body",
    ),
    ToolSpec(
        "network_har", ("network", "har"), _R,
        "Write the session's network buffer (every tab's) to PATH as HAR 1.2, which "
        "Chrome DevTools and HAR viewers open; written 0600 (it holds headers and "
        "cookies). --content embeds the response bodies Chromium still holds.",
        (Param("path", "string", "file to write", required=True, positional=True,
               path=True),
         Param("content", "boolean", "embed response bodies (text as text, binary as "
               "base64)", default=False)),
        example="bsk network har session.har",
    ),
    ToolSpec(
        "route_add", ("route", "add"), _M,
        "Answer this session's requests whose URL matches PATTERN with a mock (--status, "
        "--body or --file, --header, --content-type), or make them fail (--abort "
        "[REASON]); --times N ends it after N requests. Only this session's tabs (their "
        "iframes too) are affected; the same PATTERN again replaces the route; the newest "
        "matching route wins.",
        (_ROUTE_PATTERN,
         Param("status", "integer", "HTTP status of the mock", default=200, minimum=100,
               maximum=599),
         Param("body", "string", "the mock's body, as text", max_length=5_000_000,
               blank_ok=True),
         Param("file", "string", "a file whose bytes are the mock's body (its type "
               "guessed from its name unless --content-type)", path=True),
         Param("header", "array", "a response header NAME:VALUE (repeat for more)"),
         Param("content_type", "string", "the mock's Content-Type (default: from --file's "
               "name, else text/plain)", max_length=1000),
         Param("abort", "string", "fail the request instead, with this network error",
               choices=ABORT_REASONS, bare="failed"),
         Param("times", "integer", "answer only this many requests, then go away",
               minimum=1, maximum=1_000_000)),
        example="bsk route add '**/api/items' --body '[]' --content-type application/json",
    ),
    ToolSpec("route_list", ("route", "list"), _R,
             "This session's routes, the one that wins first: pattern, what it answers, "
             "hits, times left.", example="bsk route list"),
    ToolSpec("route_remove", ("route", "remove"), _M,
             "Remove this session's route for PATTERN (as given to `route add`).",
             (_ROUTE_PATTERN,), example="bsk route remove '**/api/items'"),
    ToolSpec("route_clear", ("route", "clear"), _M, "Remove all of this session's routes.",
             example="bsk route clear"),
)
TOOLS = TOOLS + NETWORK_TOOLS

# Tools that act on a page report what they were seen to change (`result.effects`,
# docs/outcomes.md "Effects"), watched until the page settles; --settle sets that window.
SETTLE_DEFAULT_MS = 100  # browserskill/base/effects.py QUIET_MS; bounded there too
SETTLE = Param("settle", "integer", "quiet ms ending the effects watch; 0 off",
               minimum=0, maximum=30_000)
ACTING_TOOLS = frozenset({
    "open", "back", "forward", "reload", "click", "dblclick", "hover", "drag", "scroll",
    "fill", "type", "press", "select", "check", "uncheck", "upload", "dialog_accept",
    "dialog_dismiss", "mouse_move", "mouse_down", "mouse_up", "mouse_click",
    "mouse_dblclick", "mouse_wheel", "webmcp_invoke"})
TOOLS = tuple(t._replace(params=(*t.params, SETTLE)) if t.name in ACTING_TOOLS else t
              for t in TOOLS)

# Starting a session is a control call, not an operation; its parameters are defined
# here once for the CLI, the HTTP API and the OpenAPI document.
SESSION_START = ToolSpec(
    "session_start", ("session", "start"), _S,
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
    ToolSpec("op_show", ("op", "show"), _R,
             "How an operation ended, or that it still runs: state, status, dispatched.",
             (_OP_ID,)),
    ToolSpec("op_cancel", ("op", "cancel"), _M,
             "Cancel a running operation (e.g. the one holding the session).", (_OP_ID,)),
)

def tool_names() -> frozenset[str]:
    """Every tool a policy rule may name (`tool`): the queued ones and session start."""
    return frozenset(BY_NAME) | {SESSION_START.name}


# Capability groups (docs/mcp.md): `bsk mcp` offers `core`; a client opts into the others
# with `--caps GROUP,…` (or `all`), so a connection pays only for the tools it can use.
# Every tool but the hidden ones is in exactly one group (tests/test_mcp_footprint.py).
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "core": ("open", "back", "forward", "reload", "snapshot", "screenshot", "click",
             "dblclick", "hover", "drag", "scroll", "fill", "type", "press", "select",
             "check", "uncheck", "upload", "eval", "wait", "tab_list", "tab_new",
             "tab_select", "tab_close", "dialog_accept", "dialog_dismiss", "webmcp_list",
             "webmcp_invoke", "op_show", "op_cancel", "batch"),
    "network": ("network", "network_show", "network_har", "route_add", "route_list",
                "route_remove", "route_clear"),
    "evidence": ("html", "console", "pdf", "video_start", "video_stop", "trace_start",
                 "trace_stop", "record_start", "record_stop"),
    "emulation": ("emulate", "window_resize", "permissions_grant", "permissions_clear"),
    "state": ("cookies_list", "cookies_set", "cookies_delete", "cookies_clear",
              "storage_list", "storage_get", "storage_set", "storage_delete",
              "storage_clear", "state_save", "state_load"),
    "human": ("request_help", "tab_borrow", "tab_return"),
    "mouse": ("mouse_move", "mouse_down", "mouse_up", "mouse_click", "mouse_dblclick",
              "mouse_wheel"),
    "downloads": ("download_list", "download_wait"),
}
CAPABILITY_OF: dict[str, str] = {n: cap for cap, names in CAPABILITIES.items() for n in names}

BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
# Command words of the tools reached by a route of their own (help and docs skip them).
HIDDEN_WORDS: set[tuple[str, ...]] = {t.words for t in TOOLS if t.hidden}


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
