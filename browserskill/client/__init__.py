"""Python client for the BrowserSkill daemon: `Client` (blocking) and `AsyncClient` (asyncio).

Both speak the `/v1` HTTP API, over the daemon's Unix socket by default (starting the
daemon on first use, as `bsk` does) or over TCP with a bearer token::

    from browserskill import Client

    with Client() as bsk:
        bsk.session_start()                 # a session of its own; the client now uses it
        bsk.open("https://example.com")
        print(bsk.snapshot().result["snapshot"])
        bsk.click("e3")                      # raises StaleRefError, SessionBusyError, …
        bsk.session_stop()

Every tool in the catalog is a method (`open`, `click`, `snapshot`, `tab_new`, …) with its
parameters as arguments, plus the per-call options `session`, `wait`, `timeout` (seconds),
`key` (idempotency key), `detach` and `op_id`; `call(tool, params)` reaches any tool.
Every control call (browserskill/base/controls.py) is a method too: `session_start`,
`session_list`, `session_stop`, `op_get`, `op_list`, `op_cancel`, `op_wait`, `health`,
`status`, `tools` (written by hand), and `daemon_info`, `daemon_stop`, `policy`, `doctor`,
`browsers`, `extension_pair`, `extension_unpair`, `dashboard`, `openapi` (made from their
declaration: path parameters as arguments, the JSON answer returned).
A call returns a `Result` (the result shape, docs/design.md §3) when the operation completed —
including an `eval` whose script threw (`result.ok` false, `error.code == "page_error"`) —
and raises the exception class of its error code otherwise (`StaleRefError`,
`OutcomeUnknownError`, …; all `BrowserSkillError`, carrying the op fields).

Nothing is retried, except answers that say a retry is safe and waiting helps
(`session_busy`, `browser_unavailable`: `X-Should-Retry: true`), at most `retries` times
(default 2; `Client(retries=0)` raises at once) — and never a call given its own `op_id`,
which would run under another id. Stopping the session the client acts in
(`session_stop()`) returns it to the session it was made with.
Cancelling a call (KeyboardInterrupt; cancelling the awaiting task) cancels its operation.
"""

from __future__ import annotations

from browserskill.base.contract import new_op_id
from browserskill.client.aio import AsyncClient
from browserskill.client.methods import install_control_methods, install_tool_methods
from browserskill.client.results import (
    ERRORS,
    BrowserSkillError,
    ErrorInfo,
    Result,
    Session,
    error_class,
)
from browserskill.client.sync import Client

__all__ = [
    "ERRORS",
    "AsyncClient",
    "BrowserSkillError",
    "Client",
    "ErrorInfo",
    "Result",
    "Session",
    "error_class",
    "new_op_id",
]

TYPE_CHECKING = False
if TYPE_CHECKING:  # the classes the loop below makes, spelled for type checkers
    from browserskill.client.generated import *  # noqa: F403

# One exception class per error code: SessionBusyError, StaleRefError, …
for _cls in ERRORS.values():
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _cls

install_control_methods()  # before the tools': a control's name is never a tool's
install_tool_methods()
