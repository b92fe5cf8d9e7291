"""Every tool's handler, loaded: a tool's handler is the function under
`@implements("<tool name>")` (tools/registry.py) in one of `MODULES`, imported here like
any module; those whose tool takes a target get its locators bound first. Apart from
`registry` because the locators use tool modules (the snapshot's script) that register
through it: one module doing both was an import cycle.

Invariant: every catalog tool has exactly one handler, and every handler is a catalog
tool's (`registry.implements` refuses a second or an unknown name; `load` a missing one;
tests/test_handlers.py checks the source too)."""

from __future__ import annotations

from typing import Any

from browserskill.browser.tab import DialogOpened
from browserskill.errors import BskError
from browserskill.tools import (
    borrow,
    dialogs,
    downloads,
    effects,
    emulation,
    evaluate,
    evidence,
    forms,
    help,
    input,
    keyboard,
    mouse,
    navigation,
    network,
    observe,
    policy_check,
    recording,
    routes,
    screenshot,
    session,
    snapshot,
    state,
    tabs,
    webmcp,
)
from browserskill.tools.catalog import ACTING_TOOLS, BY_NAME, TARGET_PARAMS
from browserskill.tools.context import ToolContext
from browserskill.tools.locators import bind_locators
from browserskill.tools.registry import HANDLERS, Handler, implements

# The modules that implement tools, each registering its own as it is imported (above).
MODULES = (navigation, evaluate, snapshot, screenshot, input, tabs, session, dialogs, forms,
           keyboard, observe, emulation, webmcp, borrow, state, downloads, mouse, network,
           routes, help, recording, evidence)


@implements("batch")
async def _batch(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    """A batch is several operations (browserskill/api/batch.py runs them), never one."""
    raise BskError("invalid_params", "tool: a batch runs its commands as operations of "
                   "their own, not as one", hint="POST /v1/sessions/{sid}/tools/batch",
                   details={"field": "tool"}, dispatched="no")


def load() -> dict[str, Handler]:
    """Every tool's handler; those that take a target also take a locator for it."""
    missing = set(BY_NAME) - set(HANDLERS)
    if missing:
        raise RuntimeError(f"tools without an implementation: {sorted(missing)}")
    watched = {name: _with_effects(name, fn) if name in ACTING_TOOLS else fn
               for name, fn in HANDLERS.items()}
    return {name: _with_locators(name, fn) if any(
        p.name in TARGET_PARAMS for p in BY_NAME[name].params) else fn
        for name, fn in watched.items()}


def _with_effects(name: str, fn: Handler) -> Handler:
    """The handler, watched: its result gets `effects`, what the page was seen to do
    (tools/effects.py). A dialog that ends the action carries them to the dispatcher."""

    async def run(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
        window = await effects.begin(ctx, name, params)
        try:
            result = await fn(ctx, params)
        except DialogOpened as e:
            if window is not None:
                e.effects = await effects.observe(ctx, window, None, params,
                                                  dialog=e.dialog)
            raise
        if window is not None and isinstance(result, dict):
            result["effects"] = await effects.observe(ctx, window, result, params)
        return result

    return run


def _with_locators(name: str, fn: Handler) -> Handler:
    """The handler, run on the refs its locators name (resolved once, before it starts)."""
    spec = BY_NAME[name]

    async def run(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
        params, located = await bind_locators(ctx, spec, params)
        if located:  # now the policy's rules about targets can see the element
            ruling = policy_check.verdict_for(ctx.session, name, params)
            if ruling.kind == "deny":
                raise policy_check.denied(ruling, name)
            if ruling.kind == "confirm":  # a person answers before anything is sent
                await ctx.wait_for_approval(ruling, params)
        result = await fn(ctx, params)
        if located and isinstance(result, dict):
            result = {**result, "located": located}
        return result

    return run
