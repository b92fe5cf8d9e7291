"""Turning a ref back into a live node, or saying honestly why it can't be."""

from __future__ import annotations

from dataclasses import dataclass

from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.dispatch.sessions import RefBinding
from browserskill.errors import BskError
from browserskill.tools.context import ToolContext

SNAPSHOT_HINT = "take a new snapshot (`bsk snapshot`) and use a ref from it"


@dataclass
class Resolved:
    tab: Tab
    binding: RefBinding
    object_id: str


def _stale(ref: str, why: str) -> BskError:
    return BskError("stale_ref", f"ref {ref} is stale: {why}", hint=SNAPSHOT_HINT,
                    details={"ref": ref}, dispatched="no")


async def resolve(ctx: ToolContext, ref: str) -> Resolved:
    ref = ref.strip()
    binding = ctx.session.refs.get(ref)
    if binding is None:
        raise BskError("ref_not_found", f"no ref {ref!r} in this session's snapshots",
                       hint=SNAPSHOT_HINT, details={"ref": ref}, dispatched="no")
    tab = ctx.session.tabs.get(binding.tab_id)
    if tab is None or tab.gone:
        raise _stale(ref, "its tab is closed")
    if binding.tab_id != ctx.session.current_tab_id:
        raise BskError(
            "ref_not_found", f"ref {ref} belongs to tab {binding.tab_id}, not the current tab",
            hint=f"`bsk tab select {binding.tab_id}` first, or snapshot this tab",
            details={"ref": ref, "tab_id": binding.tab_id}, dispatched="no",
        )
    if tab.frames.get(binding.frame_id) != binding.loader_id:
        raise _stale(ref, "the page it came from was replaced (navigation or reload)")
    try:
        node = await ctx.inspect("DOM.resolveNode", {"backendNodeId": binding.backend_node_id},
                                 tab=tab)
    except CdpError:
        raise _stale(ref, "its element no longer exists") from None
    object_id = node["object"]["objectId"]
    connected = await ctx.inspect("Runtime.callFunctionOn", {
        "objectId": object_id, "functionDeclaration": "function(){return this.isConnected}",
        "returnByValue": True,
    }, tab=tab)
    if not connected.get("result", {}).get("value"):
        raise _stale(ref, "its element was removed from the page")
    return Resolved(tab, binding, object_id)
