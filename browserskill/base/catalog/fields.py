"""What a tool's definition holds: its effect, its parameters' fields, its own fields.

The records are namedtuples, not dataclasses: dataclasses would add ~15 ms to every
whole `bsk` start. `spec.py` gives them their methods (schema, validation); the
validator and the schema emitter read these fields only, so they need nothing else.
Stdlib only.
"""

from __future__ import annotations

import enum
from collections import namedtuple


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
TAB_ID_ERRORS = (*TOOL_ERRORS, "tab_not_found")  # the tools that take one of its tab ids
SESSION_STOP_ERRORS = ("invalid_params", "session_not_found", "session_busy", "cancelled",
                       "outcome_unknown", "browser_unavailable", "action_failed",
                       "journal_unavailable", "internal")


class ParamFields(namedtuple(
    "ParamFields",
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
        "stdin",  # on the CLI: `-` as its value reads the value from stdin (`eval -`)
    ],
    defaults=(False, None, (), None, None, None, False, None, False, False, None, None,
              False),
)):
    __slots__ = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


class ToolFields(namedtuple(
    "ToolFields",
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
        "acting",  # acts on a page: reports what it was seen to change (takes `settle`)
        "capability",  # its MCP group (`bsk mcp --caps`): its family's; None if hidden
    ],
    defaults=((), "", 30.0, None, None, None, False, False, False, TOOL_ERRORS, False,
              None),
)):
    __slots__ = ()

    def usage(self) -> str:
        parts = [" ".join(self.words)]
        for p in self.params:
            if p.positional:
                token = p.name.upper() + ("…" if p.type == "array" else "")
                parts.append(token if p.required else f"[{token}]")
        return " ".join(parts)
