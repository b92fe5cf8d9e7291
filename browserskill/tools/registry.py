"""Tool implementations by name; every catalog entry must have exactly one."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from browserskill.tools.catalog import BY_NAME
from browserskill.tools.context import ToolContext

Handler = Callable[[ToolContext, dict[str, Any]], Awaitable[dict[str, Any]]]

HANDLERS: dict[str, Handler] = {}

_MODULES = ("navigation", "evaluate", "snapshot", "screenshot", "input", "tabs", "session",
            "dialogs", "forms", "keyboard", "observe", "emulation", "webmcp", "borrow",
            "downloads", "mouse")


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
    for module in _MODULES:
        importlib.import_module(f"browserskill.tools.{module}")
    missing = set(BY_NAME) - set(HANDLERS)
    if missing:
        raise RuntimeError(f"tools without an implementation: {sorted(missing)}")
    return HANDLERS
