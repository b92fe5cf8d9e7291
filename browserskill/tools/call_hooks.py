"""What runs on a tool call besides its handler, declared here, by feature.

Invariant: the dispatcher runs every `BEFORE_DISPATCH` gate once the call holds its
session and before it is journaled dispatched (one that raises refuses it, nothing
sent), every `BEFORE_CALL` hook, in order, once a call is
dispatched and before its handler, and every `AFTER_CALL` hook once the call completed;
it names no feature itself. A before-call hook that raises ends the call like its handler
would; an after-call hook's trouble is only logged (the call is done). `AROUND` wraps the
handlers whose spec asks for it (`handlers.load`), innermost first. A feature that needs
to see every call adds its hook here, beside its own state (`ctx.feature`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from browserskill.base.catalog import ACTING_TOOLS, BY_NAME, TARGET_PARAMS, ToolSpec
from browserskill.base.policy import Verdict
from browserskill.session.sessions import Session
from browserskill.tools import downloads, effects, locators, policy_check, recording, routes
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import Handler

# (the session, the tool, its params, how to ask a person: raises unless they approve)
Gate = Callable[[Session, str, dict[str, Any], Callable[[Verdict], Awaitable[None]]],
                Awaitable[None]]
BeforeCall = Callable[[ToolContext], Awaitable[None]]
# (the call's context, its params, its result)
AfterCall = Callable[[ToolContext, dict[str, Any], dict[str, Any]], Awaitable[None]]

BEFORE_DISPATCH: tuple[Gate, ...] = (
    policy_check.before_dispatch,  # the person's policy: deny, or confirm with a person
)
BEFORE_CALL: tuple[BeforeCall, ...] = (
    downloads.before_call,  # every tab saves its downloads under the state dir
    routes.before_call,  # every tab has the session's routes and policy before it acts
)
AFTER_CALL: tuple[AfterCall, ...] = (
    recording.after_call,  # `record start`: the script notes what the agent did
)
AROUND: tuple[tuple[Callable[[ToolSpec], bool], Callable[[str, Handler], Handler]], ...] = (
    # its result says what the page was seen to do (`effects`)
    (lambda spec: spec.name in ACTING_TOOLS, effects.watched),
    # its target's locators resolved first; the policy's rules about targets checked
    (lambda spec: any(p.name in TARGET_PARAMS for p in spec.params), locators.bound),
)


def around(name: str, fn: Handler) -> Handler:
    """The tool's handler in the wrappers its spec asks for (`AROUND`)."""
    spec = BY_NAME[name]
    for applies, wrap in AROUND:
        if applies(spec):
            fn = wrap(name, fn)
    return fn
