"""What runs on every tool call besides its handler, declared here, by feature.

Invariant: the dispatcher runs every `BEFORE_CALL` hook, in order, once a call is
dispatched and before its handler, and every `AFTER_CALL` hook once the call completed;
it names no feature itself. A before-call hook that raises ends the call like its handler
would; an after-call hook's trouble is only logged (the call is done). A feature that
needs to see every call adds its hook here, beside its own state (`ctx.feature`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from browserskill.tools import downloads, recording, routes
from browserskill.tools.context import ToolContext

BeforeCall = Callable[[ToolContext], Awaitable[None]]
# (the call's context, its params, its result)
AfterCall = Callable[[ToolContext, dict[str, Any], dict[str, Any]], Awaitable[None]]

BEFORE_CALL: tuple[BeforeCall, ...] = (
    downloads.before_call,  # every tab saves its downloads under the state dir
    routes.before_call,  # every tab has the session's routes and policy before it acts
)
AFTER_CALL: tuple[AfterCall, ...] = (
    recording.after_call,  # `record start`: the script notes what the agent did
)
