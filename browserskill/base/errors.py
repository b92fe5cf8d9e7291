"""The one table of error codes, read by the CLI, the HTTP API and the MCP server.

Each code fixes the HTTP status, the CLI exit code and the defaults for `dispatched`
and `retry_safe` (docs/design.md §3). Stdlib only: the CLI imports this on every call.
"""

from __future__ import annotations

from collections import namedtuple
from enum import StrEnum  # `re` loads `enum` anyway; the launcher (cli/fast.py) loads neither

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any


class Dispatched(StrEnum):
    """Did anything that could change the page reach the browser (`dispatched`)?

    Here, with the table that fixes each code's default, so that a `BskError` takes one;
    the contract (browserskill/base/contract.py) lists it with the result shape's other
    words."""

    NO = "no"
    YES = "yes"
    UNKNOWN = "unknown"


_NO, _YES, _UNKNOWN = Dispatched.NO, Dispatched.YES, Dispatched.UNKNOWN

# dispatched: the default when the raiser does not know better.
# retry_safe: the default; any failure that sent nothing is safe to retry (docs/design.md §3),
# except a cancel or a user's interrupt, which a retry would override.
# (A namedtuple, not a dataclass: dataclasses would add ~15 ms to every `bsk` start.)
Code = namedtuple("Code", "name http exit dispatched retry_safe meaning")


_TABLE = [
    Code("invalid_params", 400, 2, _NO, True, "bad input; the message says which field and why"),
    Code("method_not_allowed", 405, 2, _NO, True,
         "the path has no such method; the Allow header lists the ones it has"),
    Code("not_configured", 409, 2, _NO, True,
         "the daemon runs without what this needs (an option it was not started with)"),
    Code("session_not_found", 404, 3, _NO, True, "unknown session id"),
    Code("op_not_found", 404, 3, _NO, True, "unknown operation id"),
    Code("tab_not_found", 404, 3, _NO, True,
         "unknown tab id in this session; the message lists its tabs (`bsk tab list`)"),
    Code("request_not_found", 404, 3, _NO, True,
         "unknown request id in the current tab's network buffer (`bsk network` lists them)"),
    Code("path_not_found", 404, 3, _NO, True,
         "no such HTTP path; GET /v1/openapi.json lists every one"),
    Code("ref_not_found", 409, 4, _NO, True, "ref unknown here; take a new snapshot"),
    Code("stale_ref", 409, 4, _NO, True, "the ref's document or node is gone; snapshot again"),
    Code("session_busy", 409, 5, _NO, True, "another operation holds the session"),
    Code("user_interrupted", 409, 6, _NO, False, "the user took over; ask before acting"),
    Code("cancelled", 409, 7, _NO, False, "cancelled; details say whether compensation ran"),
    Code("tool_not_found", 404, 3, _NO, True, "WebMCP tool gone; list tools again"),
    Code("tool_page_unloaded", 410, 8, _YES, False, "the tool's page went away; it may have run"),
    Code("outcome_unknown", 504, 9, _UNKNOWN, False, "effect unknown; inspect before acting"),
    Code("browser_unavailable", 503, 10, _NO, True, "no browser connected, or it is starting"),
    Code("action_failed", 422, 11, _YES, False, "the browser could not do it"),
    Code("journal_unavailable", 507, 12, _NO, True,
         "the journal can't be written (disk full?): nothing was sent; free space, retry"),
    Code("blocked_by_policy", 403, 13, _NO, True,
         "the person's policy does not let pages reach this URL; nothing was sent"),
    Code("denied_by_policy", 403, 13, _NO, True,
         "a deny rule of the person's policy refuses this operation; nothing was sent"),
    Code("denied", 403, 14, _NO, False,
         "denied where approvals are given (a policy `confirm` rule held it): nothing sent"),
    Code("approval_timeout", 408, 15, _NO, True,
         "no person approved it before its deadline (a policy `confirm` rule held it): "
         "nothing was sent"),
    Code("page_error", 200, 0, _YES, False, "a script threw in eval: a result, not a failure"),
    Code("internal", 500, 1, _UNKNOWN, False, "a bug; logged with the op id"),
]

CODES: dict[str, Code] = {c.name: c for c in _TABLE}

# Statuses an ended operation can carry, by error code (success is "completed").
STATUS_FOR_CODE = {"cancelled": "cancelled", "outcome_unknown": "outcome_unknown"}

# Codes where nothing was dispatched and waiting helps: the only ones worth a retry.
SHOULD_RETRY = {"session_busy", "browser_unavailable", "journal_unavailable"}
# In an error's details: waiting won't mend it (no browser installed), so even a code
# of SHOULD_RETRY answers X-Should-Retry: false.
LASTING = "lasting"
# Failures a retry must not override even though nothing was sent (a read's cancel aside:
# repeating a read overrides nothing).
NEVER_RETRY_SAFE = {"cancelled", "user_interrupted", "denied"}


def retry_safe_for(code: str, dispatched: str, read_only: bool = False) -> bool:
    """A failure is safe to repeat when nothing reached the browser — bar a person's stop or
    denial, and a cancel of a tool that acts (docs/contract-notes.md, retry_safe on failures)."""
    if dispatched != Dispatched.NO:
        return False
    return read_only if code == "cancelled" else code not in NEVER_RETRY_SAFE


def exit_code(code: str | None) -> int:
    if not code:
        return 0
    entry = CODES.get(code)
    return entry.exit if entry else 1


class BskError(Exception):
    """An error with a code from the table. Raised anywhere; rendered in one place."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        hint: str = "",
        details: dict[str, Any] | None = None,
        dispatched: Dispatched | None = None,
        retry_safe: bool | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.details = details or {}
        self.dispatched = dispatched
        self.retry_safe = retry_safe  # None: the table's rule (`retry_safe_for`)

    @property
    def entry(self) -> Code:
        return CODES[self.code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "details": self.details,
        }


def invalid(field: str, problem: str, hint: str = "") -> BskError:
    return BskError(
        "invalid_params", f"{field}: {problem}", hint=hint, details={"field": field}
    )
