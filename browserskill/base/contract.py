"""The contract every surface shares: the result shape, per-call options, op ids.

Stated once here and read by the CLI, the HTTP API and its OpenAPI document, the MCP
server and both Python clients (docs/design.md §3). Stdlib only and no `re`: the CLI
imports this on every call.

Invariants:
- Every answer about an operation has the result shape (`RESULT_SCHEMA`): `status`,
  `dispatched` (`no` / `yes` / `unknown`) and `retry_safe` are always there. A call
  refused before it became an operation has the same shape with `op_id` null
  (`refused`).
- A call's deadline is 1 ms to `MAX_TIMEOUT_S`; a tool may narrow it (the catalog's
  `timeout_range_s`). One rule computes it (`op_deadline_s`) and the time a caller waits
  for the answer (`wire_timeout_s`): the daemon, the CLI, both clients and MCP all use
  them, so no caller gives up before the daemon answers.
- An op id is `op_` and 6-64 letters, digits, `_` or `-`; whoever names an operation
  (a client, the CLI, the daemon) mints it with `new_op_id`.
- Cancelling a call one named goes one way everywhere (`CancelThenWait`): cancel by id
  (retrying while the call may still be on its way), then ask how it ended.
"""

from __future__ import annotations

import os
from enum import StrEnum  # already loaded by the whole CLI (`re` needs it); not by fast.py

# `Dispatched` lives with the error table (each code's default); it is the contract's too.
from browserskill.base.errors import CODES, STATUS_FOR_CODE, invalid
from browserskill.base.errors import Dispatched as Dispatched

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any, Protocol

    class ToolDeadline(Protocol):  # what a deadline needs of a catalog ToolSpec
        @property
        def name(self) -> str: ...
        @property
        def default_timeout_s(self) -> float: ...
        @property
        def timeout_range_s(self) -> tuple[float, float] | None: ...

DEFAULT_SESSION = "default"  # the session a call without one uses

# -- per-call options ------------------------------------------------------------------

MAX_TIMEOUT_S = 600
MAX_TIMEOUT_MS = MAX_TIMEOUT_S * 1000
IDEMPOTENCY_KEY_MAX = 256

# The options every tool call takes besides its parameters (HTTP body fields; MCP
# arguments take `wait` and `timeout_ms`).
CALL_OPTIONS: dict[str, dict[str, Any]] = {
    "wait": {"type": "boolean", "default": False,
             "description": "if another call holds the session, queue FIFO behind it "
                            "instead of failing session_busy"},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS,
                   "description": "the operation's deadline; passing it cancels the "
                                  "operation"},
    "detach": {"type": "boolean", "default": False,
               "description": "answer 202 at once; follow with GET /v1/ops/{op_id}/wait"},
    "boundaries": {"type": "boolean", "default": False,
                   "description": "wrap what the page wrote (snapshot, html, eval value, "
                                  "console, bodies, WebMCP output) in markers with a fresh "
                                  "nonce (docs/safety.md, \"Content boundaries\")"},
}


def check_timeout_ms(value: Any, tool: str = "", range_s: tuple[float, float] | None = None,
                     ) -> int | None:
    """A call's `timeout_ms` (None: the tool's default), or invalid_params naming it."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 2.0 is the integer 2
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 1 <= value <= MAX_TIMEOUT_MS:
        raise invalid("timeout_ms", f"must be an integer from 1 to {MAX_TIMEOUT_MS}")
    if range_s:  # e.g. webmcp_invoke: 1-120 s
        lo, hi = (int(x * 1000) for x in range_s)
        if not lo <= value <= hi:
            raise invalid("timeout_ms", f"must be from {lo} to {hi} for {tool}")
    return value


def check_timeout_s(text: str, command: str = "",
                    range_s: tuple[float, float] | None = None) -> float:
    """The CLI's `--timeout SECONDS`, or invalid_params naming it."""
    try:
        seconds = float(text)
    except ValueError:
        raise invalid("timeout", f"must be a number of seconds, got {text!r}") from None
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise invalid("timeout", f"must be more than 0 and at most {MAX_TIMEOUT_S} seconds")
    if range_s:
        lo, hi = range_s
        if not lo <= seconds <= hi:
            raise invalid("timeout", f"must be {lo:g}-{hi:g} seconds for `{command}`, "
                          f"got {seconds:g}")
    return seconds


# How long past the operation's deadline a caller waits for its answer: the daemon's
# cleanup (cancelling what went out, docs/design.md) and the answer's trip back.
WIRE_MARGIN_S = 30.0
DEFAULT_TIMEOUT_S = 30.0  # a call that is no catalog tool's (the daemon says why)
WAIT_ANSWER_MARGIN_S = 0.25  # what `wait` keeps of its deadline to answer (tools/observe.py)
PAUSE_MARGIN_S = 5.0  # `wait --ms N` gets N plus this, when its default is shorter


def op_deadline_s(spec: ToolDeadline | None, params: Mapping[str, Any],
                  timeout_s: float | None = None) -> float:
    """An operation's deadline in seconds: the caller's, else the tool's default stretched
    to fit a pause the caller asked for (`wait --ms 45000` gets 45 s plus a margin)."""
    if timeout_s:
        return timeout_s
    if spec is None:
        return DEFAULT_TIMEOUT_S
    pause = pause_s(spec, params)
    if pause:
        return max(spec.default_timeout_s, pause + PAUSE_MARGIN_S)
    return spec.default_timeout_s


def pause_s(spec: ToolDeadline, params: Mapping[str, Any]) -> float:
    """The pause a call asks for (`wait --ms N`: N/1000), else 0."""
    ms = params.get("ms") if spec.name == "wait" else None
    return ms / 1000 if isinstance(ms, int) and not isinstance(ms, bool) and ms > 0 else 0.0


def least_s(spec: ToolDeadline, params: Mapping[str, Any]) -> float:
    """The shortest deadline a call can end well within: a pause it asks for and the time
    kept after it to answer, or the least deadline the tool accepts."""
    pause = pause_s(spec, params)
    if pause:
        return pause + WAIT_ANSWER_MARGIN_S
    return spec.timeout_range_s[0] if spec.timeout_range_s else 0.0


def wire_timeout_s(spec: ToolDeadline | None, params: Mapping[str, Any],
                   timeout_s: float | None = None) -> float:
    """How long a caller waits for a tool call's answer: its operation's deadline plus
    `WIRE_MARGIN_S`. Every front end reads it from here (tests/test_deadlines.py)."""
    return op_deadline_s(spec, params, timeout_s) + WIRE_MARGIN_S


def valid_idempotency_key(key: str) -> bool:
    return 1 <= len(key) <= IDEMPOTENCY_KEY_MAX


# -- ids -------------------------------------------------------------------------------

OP_ID_PREFIX = "op_"
OP_ID_LENGTH = (6, 64)  # after the prefix
OP_ID_RULE = "op_ and 6-64 letters, digits, '_' or '-'"
SESSION_ID_MAX = 64
SESSION_ID_RULE = "1-64 letters, digits, '_', '.', '-'"
# The same rule for JSON Schema (OpenAPI); `valid_session_id` is what the daemon checks.
SESSION_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


_ASCII_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ID_CHARS = {extra: frozenset(_ASCII_ALNUM + extra) for extra in ("_-", "_.-")}


def _id_chars(text: str, extra: str) -> bool:
    # A set comparison, not a loop in Python: the daemon checks an op id on every call.
    return frozenset(text) <= _ID_CHARS[extra]


def valid_op_id(text: str) -> bool:
    """The one op-id rule: the daemon refuses others, the CLI and clients mint only these."""
    lo, hi = OP_ID_LENGTH
    rest = text[len(OP_ID_PREFIX):]
    return text.startswith(OP_ID_PREFIX) and lo <= len(rest) <= hi and _id_chars(rest, "_-")


def new_op_id() -> str:
    """A fresh op id (12 hex digits: the caller names its operation before sending it)."""
    return OP_ID_PREFIX + os.urandom(6).hex()


def valid_session_id(text: str) -> bool:
    return (0 < len(text) <= SESSION_ID_MAX and text[0].isascii() and text[0].isalnum()
            and _id_chars(text, "_.-"))


# -- secrets typed into a page ---------------------------------------------------------

# Text typed into a password field is never shown or stored (docs/outcomes.md,
# "Passwords"): a tool's params that may be such text read SECRET_MASK in the journal,
# `op show`/`op list` and the dashboard until the tool knows its target is no password
# field — for good when it is one, and its answer says SECRET_MASK for the value too.
SECRET_MASK = "••••••"
MAYBE_SECRET: dict[str, tuple[str, ...]] = {"fill": ("text",), "type": ("text",)}


# -- the result shape ------------------------------------------------------------------

# The words of the result shape, as StrEnums so that a typo is mypy's error: each member
# is its wire value (`State.ENDED == "ended"`, and JSON and the journal write "ended").


class State(StrEnum):
    """Where an operation is (`state`)."""

    QUEUED = "queued"
    # A policy `confirm` rule holds it for a person (docs/safety.md, Approvals).
    AWAITING_APPROVAL = "awaiting_approval"
    DISPATCHED = "dispatched"
    CLEANING_UP = "cleaning_up"
    ENDED = "ended"


class Status(StrEnum):
    """How an operation ended (`status`; null while it runs)."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    OUTCOME_UNKNOWN = "outcome_unknown"


class CancelReason(StrEnum):
    """Why an operation's scope tripped: its timeline's `cancel_requested`, and
    `details.reason` of the error it ends with (docs/outcomes.md)."""

    CANCEL = "cancel"  # asked by its op id: `bsk op cancel`, a client, the dashboard
    DEADLINE = "deadline"  # its deadline passed
    CLIENT_DISCONNECTED = "client_disconnected"  # the caller hung up
    DAEMON_STOPPING = "daemon_stopping"
    LINK_LOST = "link_lost"  # the browser connection was lost
    USER_INTERRUPT = "user_interrupt"  # a person pressed Stop or took over
    DEBUGGING_CANCELLED = "debugging_cancelled"  # the extension's debugging bar: Cancel
    WINDOW_CLOSED = "window_closed"  # its session's Agent Window closed


STATES = tuple(s.value for s in State)
STATUSES = tuple(s.value for s in Status)
DISPATCHED = tuple(d.value for d in Dispatched)

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {"enum": sorted(CODES)},
        "message": {"type": "string"},
        "hint": {"type": "string"},
        "details": {"type": "object"},
    },
}

RESULT_FIELDS = ("op_id", "session_id", "tool", "state", "status", "dispatched",
                 "retry_safe", "result", "error", "started_at", "ended_at")


def result_schema(error: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one JSON schema of the result shape. `error`: the error's schema (OpenAPI
    passes a `$ref` to its component); inline by default."""
    return {
        "type": "object",
        "description": "Every operation ends with this shape (docs/design.md §3); a call "
                       "refused before it became an operation has it too, with op_id null.",
        "required": ["op_id", "session_id", "tool", "state", "status", "dispatched",
                     "retry_safe"],
        "properties": {
            "op_id": {"type": ["string", "null"]},
            "session_id": {"type": ["string", "null"]},
            "tool": {"type": ["string", "null"]},
            "state": {"enum": list(STATES)},
            "status": {"enum": [*STATUSES, None]},  # None: still running (detached)
            "dispatched": {"enum": list(DISPATCHED)},
            "retry_safe": {"type": "boolean"},
            "result": {"type": ["object", "null"]},
            "error": {"oneOf": [error or ERROR_SCHEMA, {"type": "null"}]},
            "started_at": {"type": ["string", "null"]},
            "ended_at": {"type": ["string", "null"]},
        },
    }


RESULT_SCHEMA = result_schema()


def result(*, op_id: str | None, session_id: str | None, tool: str | None, state: str,
           status: str | None, dispatched: str, retry_safe: bool,
           result: dict[str, Any] | None = None, error: dict[str, Any] | None = None,
           started_at: str | None = None, ended_at: str | None = None) -> dict[str, Any]:
    """An answer in the result shape, every field present."""
    return {"op_id": op_id, "session_id": session_id, "tool": tool, "state": state,
            "status": status, "dispatched": dispatched, "retry_safe": retry_safe,
            "result": result, "error": error, "started_at": started_at,
            "ended_at": ended_at}


def error_dict(code: str, message: str, hint: str = "",
               details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "hint": hint, "details": details or {}}


def refused(error: dict[str, Any], *, op_id: str | None = None,
            session_id: str | None = None, tool: str | None = None,
            status: str | None = None, dispatched: str | None = None,
            retry_safe: bool | None = None) -> dict[str, Any]:
    """The result shape of a call that ended without an operation's own answer: refused
    before it became one, or ended where the caller stands (the daemon went away, the
    call never arrived). Unknown fields come from the error table."""
    entry = CODES.get(error.get("code") or "internal", CODES["internal"])
    return result(op_id=op_id, session_id=session_id, tool=tool, state=State.ENDED,
                  status=status or STATUS_FOR_CODE.get(entry.name, Status.FAILED),
                  dispatched=dispatched or entry.dispatched,
                  retry_safe=entry.retry_safe if retry_safe is None else retry_safe,
                  error=error)


# -- cancel, then wait for the outcome -------------------------------------------------

CANCEL_GRACE_S = 10.0  # after cancelling, how long to wait for the operation's own ending
CANCEL_ARRIVAL_S = 1.0  # how long a cancel may find no operation yet (the call in flight)
CANCEL_POLL_S = 0.05


class CancelThenWait:
    """Cancel an operation the caller named, then learn how it really ended — without
    I/O: the CLI, the blocking and the async client drive it with their own transport.

    The cancel may reach the daemon before the call itself (404 for a moment): it is
    sent again every `CANCEL_POLL_S` for up to `CANCEL_ARRIVAL_S`. Still 404 then: the
    call never arrived, so nothing reached the browser (`never_arrived`). Otherwise the
    operation's own ending is the answer (`wait_path`, or the call's own reply)."""

    def __init__(self, op_id: str, now: float,
                 quote: Callable[[str], str] = lambda s: s) -> None:
        self.op_id = op_id
        self.give_up_at = now + CANCEL_ARRIVAL_S
        self.cancel_path = f"/v1/ops/{quote(op_id)}/cancel"
        self.wait_path = f"/v1/ops/{quote(op_id)}/wait?timeout_ms={int(CANCEL_GRACE_S * 1000)}"

    def again(self, status: int, now: float) -> bool:
        """Send the cancel again? (the daemon does not know the operation yet)"""
        return status == 404 and now <= self.give_up_at

    def never_arrived(self, session_id: str | None, tool: str | None = None,
                      ) -> dict[str, Any]:
        return refused(error_dict("cancelled", "interrupted before the daemon received the "
                                  "call", "nothing reached the browser",
                                  {"reason": CancelReason.CANCEL}),
                       op_id=self.op_id, session_id=session_id, tool=tool,
                       status=Status.CANCELLED, dispatched=Dispatched.NO, retry_safe=False)


# -- batch: several operations' answers as one (docs/outcomes.md, "Batches") ------------


def batch_step_op_id(batch_id: str, k: int) -> str:
    """Step k's op id: `<batch id>-k`, the id's end cut to fit when it is long (a clash
    with an existing op id refuses that step, sending nothing)."""
    suffix = f"-{k}"
    room = len(OP_ID_PREFIX) + OP_ID_LENGTH[1] - len(suffix)
    return batch_id[:room] + suffix


def batch_steps(batch_id: str, op_ids: Iterable[str]) -> list[str]:
    """Those of `op_ids` that are steps of batch `batch_id`, in step order (the inverse
    of `batch_step_op_id`, a cut id's steps too)."""
    steps: dict[str, int] = {}
    for op_id in op_ids:
        _, dash, k = op_id.rpartition("-")
        if dash and k.isdigit() and k[0] != "0" and batch_step_op_id(batch_id, int(k)) == op_id:
            steps[op_id] = int(k)
    return sorted(steps, key=steps.__getitem__)


def batch_steps_prefix(batch_id: str) -> str:
    """What the op id of each of a batch's steps starts with (to look them up by range)."""
    return batch_step_op_id(batch_id, 10**6).rpartition("-")[0]


def batch_step_key(key: str, k: int) -> str:
    """Step k's idempotency key: `<key>#k` (a key too long for that: its SHA-256's)."""
    import hashlib

    if len(key) + len(f"#{k}") > IDEMPOTENCY_KEY_MAX:
        key = "sha256:" + hashlib.sha256(key.encode(errors="surrogatepass")).hexdigest()
    return f"{key}#{k}"


def batch_answer(session_id: str | None, commands: list[str], answers: list[dict[str, Any]],
                 why_not_sent: str | None = None) -> dict[str, Any]:
    """`bsk batch`'s answer from its steps' own: `answers[k]` is command k's answer (each
    an operation's, or a refusal's); commands past them were not sent. Its status, error
    and op_id are the first step that did not complete (else the last step's); it was
    dispatched if any step was; a retry is safe only if no step that reached the browser
    was unsafe to repeat; it started when its first step did and ended with its last (the
    steps' own times: ISO strings, so they order as text). Pure: the daemon and the CLI
    (after a Ctrl-C) both build it."""
    steps: list[dict[str, Any]] = []
    for k, command in enumerate(commands, 1):
        if k <= len(answers):
            steps.append({"step": k, "command": command, **answers[k - 1]})
        else:
            steps.append({"step": k, "command": command, "sent": False,
                          "why": why_not_sent or "not reached"})
    failed = [s for s in steps[:len(answers)] if s.get("status") != Status.COMPLETED]
    decider = failed[0] if failed else (steps[len(answers) - 1] if answers else None)
    sent = [a.get("dispatched") for a in answers]
    dispatched = (Dispatched.YES if Dispatched.YES in sent else Dispatched.UNKNOWN
                  if Dispatched.UNKNOWN in sent else Dispatched.NO)
    error, status = None, Status.COMPLETED
    if failed:
        error = dict(failed[0].get("error") or error_dict("internal", "no error given"))
        error["message"] = (f"step {failed[0]['step']} ({failed[0]['command']}): "
                            f"{error.get('message', '')}")
        status = failed[0].get("status") or Status.FAILED
    elif len(answers) < len(commands):  # every step sent completed, the rest were not sent
        k = len(answers) + 1
        error = error_dict("cancelled", f"step {k} ({commands[k - 1]}) and after were not "
                           f"sent: {why_not_sent or 'not reached'}",
                           "raise --timeout, or send the rest again",
                           {"reason": "batch_deadline", "step": k})
        status = Status.CANCELLED
    started = [a["started_at"] for a in answers if a.get("started_at")]
    ended = [a["ended_at"] for a in answers if a.get("ended_at")]
    return result(
        op_id=decider.get("op_id") if decider else None, session_id=session_id,
        tool="batch", state=State.ENDED, status=status,
        started_at=min(started, default=None), ended_at=max(ended, default=None),
        dispatched=dispatched,
        retry_safe=all(a.get("retry_safe") or a.get("dispatched") == Dispatched.NO
                       for a in answers),
        error=error,
        result={"steps": steps,
                "completed": sum(1 for a in answers if a.get("status") == Status.COMPLETED),
                "failed": len(failed), "not_sent": len(commands) - len(answers)})
