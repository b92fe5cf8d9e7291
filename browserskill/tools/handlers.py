"""Every tool's handler, loaded: the tool modules register themselves with
`registry.implements` as they are imported; each is wrapped in what its spec asks for
(tools/call_hooks.py: its locators bound first, its effects watched). Apart from
`registry` because the locators use tool modules (the snapshot's script) that register
through it: one module doing both was an import cycle."""

from __future__ import annotations

import importlib
from typing import Any

from browserskill.errors import BskError
from browserskill.tools import call_hooks
from browserskill.tools.catalog import BY_NAME
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import HANDLERS, Handler, implements

_MODULES = ("navigation", "evaluate", "snapshot", "screenshot", "input", "tabs", "session",
            "dialogs", "forms", "keyboard", "observe", "emulation", "webmcp", "borrow",
            "state", "downloads", "mouse", "network", "routes", "help",
            "recording", "evidence")


@implements("batch")
async def _batch(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    """A batch is several operations (browserskill/api/batch.py runs them), never one."""
    raise BskError("invalid_params", "tool: a batch runs its commands as operations of "
                   "their own, not as one", hint="POST /v1/sessions/{sid}/tools/batch",
                   details={"field": "tool"}, dispatched="no")


def load() -> dict[str, Handler]:
    """Every tool's handler, wrapped as its spec asks (`call_hooks.around`)."""
    for module in _MODULES:
        importlib.import_module(f"browserskill.tools.{module}")
    missing = set(BY_NAME) - set(HANDLERS)
    if missing:
        raise RuntimeError(f"tools without an implementation: {sorted(missing)}")
    return {name: call_hooks.around(name, fn) for name, fn in HANDLERS.items()}
