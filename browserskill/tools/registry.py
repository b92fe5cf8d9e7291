"""Tool implementations by name: `@implements("click")` marks click's handler (find a
tool's with `grep -rn 'implements("click")' browserskill/tools`). Every catalog entry
must have exactly one (`implements` refuses a second or an unknown name, `handlers.load`
a missing one; the modules that register are listed in tools/handlers.py)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from browserskill.base.catalog import BY_NAME
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
