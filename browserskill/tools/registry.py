"""Tool implementations by name: `@implements("click")` marks click's handler (find a
tool's with `grep -rn 'implements("click")' browserskill/tools`). Every catalog entry
must have exactly one (`implements` refuses a second or an unknown name, `handlers.load`
a missing one; the modules that register are listed in tools/handlers.py).

Each handler types its params as its tool's TypedDict (declared beside the spec in
browserskill/base/catalog/, kept equal to it by tests/test_catalog.py, which checks the
handler takes it): the dispatcher hands it the validated params, every one of the
spec's params there, defaults filled in (None where there is no default)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from browserskill.base.catalog import BY_NAME
from browserskill.tools.context import ToolContext

Handler = Callable[[ToolContext, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]

# A handler as written: its params typed as its tool's TypedDict (a validated params dict).
Impl = TypeVar("Impl", bound=Callable[[ToolContext, Any], Coroutine[Any, Any, dict[str, Any]]])

HANDLERS: dict[str, Handler] = {}


def implements(name: str) -> Callable[[Impl], Impl]:
    if name not in BY_NAME:
        raise KeyError(f"{name} is not in the tool catalog")

    def register(fn: Impl) -> Impl:
        if name in HANDLERS:
            raise KeyError(f"{name} implemented twice")
        HANDLERS[name] = fn
        return fn

    return register
