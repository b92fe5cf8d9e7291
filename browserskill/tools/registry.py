"""Tool implementations by name; every catalog entry must have exactly one (`handlers.load`
checks it)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from browserskill.tools.catalog import BY_NAME
from browserskill.tools.context import ToolContext

Handler = Callable[[ToolContext, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]

HANDLERS: dict[str, Handler] = {}

def implements(name: str) -> Callable[[Handler], Handler]:
    if name not in BY_NAME:
        raise KeyError(f"{name} is not in the tool catalog")

    def register(fn: Handler) -> Handler:
        if name in HANDLERS:
            raise KeyError(f"{name} implemented twice")
        HANDLERS[name] = fn
        return fn

    return register
