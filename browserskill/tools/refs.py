"""Turning a ref back into a live node, or saying honestly why it can't be.

A ref is never re-resolved by role or name: if its document was replaced or its node is
gone, the answer is `stale_ref` (nothing dispatched) and the agent snapshots again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.dispatch.sessions import RefBinding
from browserskill.errors import BskError
from browserskill.tools.context import ToolContext

SNAPSHOT_HINT = "take a new snapshot (`bsk snapshot`) and use a ref from it"


@dataclass
class Resolved:
    ref: str
    tab: Tab
    binding: RefBinding
    object_id: str
    session_id: str  # the CDP session that owns the node's frame


def _stale(ref: str, why: str) -> BskError:
    return BskError("stale_ref", f"ref {ref} is stale: {why}", hint=SNAPSHOT_HINT,
                    details={"ref": ref}, dispatched="no")


def check_binding(ctx: ToolContext, ref: str) -> tuple[Tab, RefBinding]:
    """What can be known without asking the browser: is the ref ours, here, current?"""
    binding = ctx.session.refs.get(ref)
    if binding is None:
        raise BskError("ref_not_found", f"no ref {ref!r} in this session's snapshots",
                       hint=SNAPSHOT_HINT, details={"ref": ref}, dispatched="no")
    if binding.tab_id != ctx.session.current_tab_id:
        raise BskError(
            "ref_not_found", f"ref {ref} belongs to tab {binding.tab_id}, not the current tab",
            hint=f"`bsk tab select {binding.tab_id}` first, or snapshot this tab",
            details={"ref": ref, "tab_id": binding.tab_id}, dispatched="no",
        )
    tab = ctx.session.tabs.get(binding.tab_id)
    if tab is None or tab.gone:
        raise _stale(ref, "its tab is closed")
    if tab.frames.get(binding.frame_id) != binding.loader_id:
        raise _stale(ref, "the page it came from was replaced (navigation or reload)")
    return tab, binding


async def isolated_world(ctx: ToolContext, tab: Tab, frame_id: str) -> int:
    """BrowserSkill's own JavaScript world in a frame's current document (made on first use).

    Page scripts share the DOM with it but not its globals, so they can't see or change
    the ref registry kept there."""
    loader = tab.frames.get(frame_id, "")
    world = tab.worlds.get((frame_id, loader))
    if world is None:
        answer = await ctx.inspect("Page.createIsolatedWorld", {
            "frameId": frame_id, "worldName": "browserskill"},
            tab=tab, session_id=tab.session_for_frame(frame_id))
        world = answer["executionContextId"]
        for key in [k for k in tab.worlds if k[0] == frame_id]:
            del tab.worlds[key]  # that document is gone
        tab.worlds[(frame_id, loader)] = world
    return world


async def resolve(ctx: ToolContext, ref: str) -> Resolved:
    ref = ref.strip()
    tab, binding = check_binding(ctx, ref)
    session_id = tab.session_for_frame(binding.frame_id)
    world = tab.worlds.get((binding.frame_id, binding.loader_id))
    if world is None:
        raise _stale(ref, "the daemon no longer holds its page's refs (it restarted)")
    # One round trip: the element if it is still in its document, else what became of it.
    lookup = (f"(() => {{ const el = globalThis.__bsk && __bsk.refs.get({json.dumps(ref)});"
              " return el ? (el.isConnected ? el : 'removed') : 'gone'; })()")
    try:
        found = await ctx.inspect("Runtime.evaluate", {"expression": lookup, "contextId": world},
                                  tab=tab, session_id=session_id)
    except CdpError:
        raise _stale(ref, "its page is gone") from None
    element = found.get("result", {})
    if element.get("subtype") != "node":
        removed = element.get("value") == "removed"
        raise _stale(ref, "its element was removed from the page" if removed
                     else "its element no longer exists")
    object_id = element["objectId"]
    return Resolved(ref, tab, binding, object_id, session_id)


async def call_on(ctx: ToolContext, target: Resolved, function: str, *args: object,
                  act: bool = False) -> object:
    """Run a function with the element as `this`; return its JSON value."""
    send = ctx.act if act else ctx.inspect
    answer = await send("Runtime.callFunctionOn", {
        "objectId": target.object_id, "functionDeclaration": function, "returnByValue": True,
        "awaitPromise": True, "arguments": [{"value": a} for a in args],
    }, tab=target.tab, session_id=target.session_id)
    if "exceptionDetails" in answer:
        details = answer["exceptionDetails"]
        text = details.get("exception", {}).get("description") or details.get("text", "")
        raise BskError("action_failed", f"the page threw while acting on {target.ref}: {text}",
                       details={"reason": "page_threw", "ref": target.ref},
                       dispatched="yes" if act else "no")
    return answer.get("result", {}).get("value")
