"""Every tool's handler, loaded: a tool's handler is the function under
`@implements("<tool name>")` (tools/registry.py) in one of `MODULES`, imported here like
any module; each is wrapped in what its spec asks for (tools/call_hooks.py: its locators
bound first, its effects watched). Apart from `registry` because the locators use tool
modules (the snapshot's script) that register through it: one module doing both was an
import cycle.

Invariant: every catalog tool has exactly one handler, and every handler is a catalog
tool's (`registry.implements` refuses a second or an unknown name; `load` a missing one;
tests/test_handlers.py checks the source too)."""

from __future__ import annotations

from typing import Any

from browserskill.base.catalog import BY_NAME
from browserskill.base.catalog.ops import BatchParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.tools import (
    borrow,
    call_hooks,
    dialogs,
    downloads,
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
    recording,
    routes,
    screenshot,
    session,
    snapshot,
    state,
    tabs,
    webmcp,
)
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import HANDLERS, Handler, implements

# The modules that implement tools, each registering its own as it is imported (above).
MODULES = (navigation, evaluate, snapshot, screenshot, input, tabs, session, dialogs, forms,
           keyboard, observe, emulation, webmcp, borrow, state, downloads, mouse, network,
           routes, help, recording, evidence)


@implements("batch")
async def _batch(ctx: ToolContext, params: BatchParams) -> dict[str, Any]:
    """A batch is several operations (browserskill/api/batch.py runs them), never one."""
    raise BskError("invalid_params", "tool: a batch runs its commands as operations of "
                   "their own, not as one", hint="POST /v1/sessions/{sid}/tools/batch",
                   details={"field": "tool"}, dispatched=Dispatched.NO)


def load() -> dict[str, Handler]:
    """Every tool's handler, wrapped as its spec asks (`call_hooks.around`)."""
    missing = set(BY_NAME) - set(HANDLERS)
    if missing:
        raise RuntimeError(f"tools without an implementation: {sorted(missing)}")
    return {name: call_hooks.around(name, fn) for name, fn in HANDLERS.items()}
