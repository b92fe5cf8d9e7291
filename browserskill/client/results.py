"""What a call returns and raises: `Result`, `Session`, and one exception class per
error code (all `BrowserSkillError`, carrying the op fields)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from browserskill.base import advice
from browserskill.base.errors import CODES

# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorInfo:
    code: str
    message: str = ""
    hint: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ErrorInfo:
        """The hint in the client's words (`snapshot()`, `timeout=`: base/advice.py); the
        answer as the daemon gave it stays in `Result.raw`."""
        return cls(str(d.get("code") or "internal"), d.get("message") or "",
                   advice.in_terms(d.get("hint") or "", advice.PYTHON),
                   dict(d.get("details") or {}))


@dataclass(frozen=True)
class Result:
    """One operation's result shape (docs/design.md §3). `state` is not `ended` for a detached call
    that is still running."""

    op_id: str | None
    session_id: str | None
    tool: str | None
    state: str | None
    status: str | None
    dispatched: str
    retry_safe: bool
    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    started_at: str | None = None
    ended_at: str | None = None
    timeline: list[Any] | None = None
    cancel: str | None = None  # on an op cancel: "requested" or "already_ended"
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        error = d.get("error")
        return cls(
            op_id=d.get("op_id"), session_id=d.get("session_id"), tool=d.get("tool"),
            state=d.get("state"), status=d.get("status"),
            dispatched=d.get("dispatched") or "unknown",
            retry_safe=bool(d.get("retry_safe")), result=d.get("result"),
            error=ErrorInfo.from_dict(error) if isinstance(error, dict) else None,
            started_at=d.get("started_at"), ended_at=d.get("ended_at"),
            timeline=d.get("timeline"), cancel=d.get("cancel"), raw=d,
        )

    @property
    def ok(self) -> bool:
        """Completed, and not a script that threw (`page_error`)."""
        return self.status == "completed" and self.error is None

    @property
    def ended(self) -> bool:
        return self.state == "ended"

    @property
    def value(self) -> Any:
        """`result["value"]`: an eval's value."""
        return (self.result or {}).get("value")

    def raise_for_error(self) -> Result:
        """Raise the error class of this result's code (page_error included), else return it."""
        if self.error is not None:
            raise error_from(self.raw, self.error)
        return self


@dataclass(frozen=True)
class Session:
    session_id: str
    label: str | None = None
    tabs: int = 0
    current_tab: str | None = None
    busy: dict[str, Any] | None = None  # the operation holding the session, if any
    queued: int = 0
    created_at: float | None = None
    # Where it runs: {"kind": "embedded", "isolated": …} or {"kind": "extension", …}.
    placement: dict[str, Any] | None = None
    # Recordings running now, by kind ("video", "trace"): {"state", "tab_id", …}.
    recordings: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Session:
        return cls(d["session_id"], d.get("label"), d.get("tabs", 0), d.get("current_tab"),
                   d.get("busy"), d.get("queued", 0), d.get("created_at"), d.get("placement"),
                   d.get("recordings"))


# -- errors: one class per code of the table ------------------------------------------------


class BrowserSkillError(Exception):
    """An operation (or a call that never became one) did not complete.

    Carries the op fields: `op_id` (None when the call was refused before it became an
    operation), `status`, `dispatched`, `retry_safe`, `code`, `message`, `hint`, `details`,
    and `result` (the whole `Result`, when there was an operation)."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, op_id: str | None = None,
                 session_id: str | None = None, tool: str | None = None,
                 status: str | None = None, dispatched: str | None = None,
                 retry_safe: bool | None = None, hint: str = "",
                 details: dict[str, Any] | None = None, result: Result | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        if code is not None and code != type(self).code:
            self.code = code  # type: ignore[misc]  # an unknown code on the base class
        entry = CODES.get(self.code, CODES["internal"])
        self.message = message
        self.op_id = op_id
        self.session_id = session_id
        self.tool = tool
        self.status = status or ("cancelled" if self.code == "cancelled" else
                                 "outcome_unknown" if self.code == "outcome_unknown" else
                                 "failed")
        self.dispatched = dispatched or entry.dispatched
        self.retry_safe = entry.retry_safe if retry_safe is None else retry_safe
        self.hint = hint
        self.details = details or {}
        self.result = result
        # The error as the daemon said it (its hint in the CLI's words, which `hint` says
        # in Python's): what another front end built on the client translates itself.
        self.given: dict[str, Any] | None = None

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


# "cancelled" is not asyncio.CancelledError; page_error is a result, never raised by a call.
_CLASS_NAMES = {"cancelled": "OperationCancelledError", "page_error": "PageError"}


def _class_name(code: str) -> str:
    return _CLASS_NAMES.get(code) or "".join(w.title() for w in code.split("_")) + "Error"


ERRORS: dict[str, type[BrowserSkillError]] = {}
for _code in CODES.values():
    _cls = type(_class_name(_code.name), (BrowserSkillError,), {
        "code": _code.name, "http_status": _code.http, "exit_code": _code.exit,
        "__doc__": f"{_code.name} (HTTP {_code.http}, exit {_code.exit}): {_code.meaning}.",
        "__module__": "browserskill.client",
    })
    ERRORS[_code.name] = _cls
del _code, _cls


def error_class(code: str) -> type[BrowserSkillError]:
    return ERRORS.get(code, BrowserSkillError)


def error_from(answer: dict[str, Any], error: ErrorInfo) -> BrowserSkillError:
    has_op = bool(answer.get("op_id"))
    cls = error_class(error.code)
    raised = cls(error.message or error.code, op_id=answer.get("op_id"),
                session_id=answer.get("session_id"), tool=answer.get("tool"),
                status=answer.get("status") if has_op else None,
                dispatched=answer.get("dispatched") if has_op else None,
                retry_safe=answer.get("retry_safe") if has_op else None,
                hint=error.hint, details=error.details,
                result=Result.from_dict(answer) if has_op else None,
                code=error.code if cls is BrowserSkillError else None)
    given = answer.get("error")
    raised.given = given if isinstance(given, dict) else None
    return raised
