"""Tool implementations by name; every catalog entry must have exactly one."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from typing import Any

from browserskill.tools.catalog import BY_NAME, TARGET_PARAMS
from browserskill.tools.context import ToolContext

Handler = Callable[[ToolContext, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]

HANDLERS: dict[str, Handler] = {}

_MODULES = ("navigation", "evaluate", "snapshot", "screenshot", "input", "tabs", "session",
            "dialogs", "forms", "keyboard", "observe", "emulation", "webmcp", "borrow",
            "state", "downloads", "mouse", "network", "routes", "help",
            "recording", "evidence")


def implements(name: str) -> Callable[[Handler], Handler]:
    if name not in BY_NAME:
        raise KeyError(f"{name} is not in the tool catalog")

    def register(fn: Handler) -> Handler:
        if name in HANDLERS:
            raise KeyError(f"{name} implemented twice")
        HANDLERS[name] = fn
        return fn

    return register


def load() -> dict[str, Handler]:
    """Every tool's handler; those that take a target also take a locator for it."""
    for module in _MODULES:
        importlib.import_module(f"browserskill.tools.{module}")
    missing = set(BY_NAME) - set(HANDLERS)
    if missing:
        raise RuntimeError(f"tools without an implementation: {sorted(missing)}")
    return {name: _with_locators(name, fn) if any(
        p.name in TARGET_PARAMS for p in BY_NAME[name].params) else fn
        for name, fn in HANDLERS.items()}


def _with_locators(name: str, fn: Handler) -> Handler:
    """The handler, run on the refs its locators name (resolved once, before it starts)."""
    from browserskill.tools.locators import bind_locators  # it imports tool modules

    spec = BY_NAME[name]

    async def run(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
        params, located = await bind_locators(ctx, spec, params)
        result = await fn(ctx, params)
        if located and isinstance(result, dict):
            result = {**result, "located": located}
        return result

    return run
