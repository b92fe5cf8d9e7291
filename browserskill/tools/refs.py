"""Turning a ref back into a live node, or saying honestly why it can't be.

A ref is never re-resolved by role or name: if its document was replaced or its node is
gone, the answer is `stale_ref` (nothing dispatched) and the agent snapshots again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.session.sessions import RefBinding, Session
from browserskill.tools.context import ToolContext
from browserskill.tools.roles import REF_ROLES

SNAPSHOT_HINT = "take a new snapshot (`bsk snapshot`) and use a ref from it"


@dataclass
class Resolved:
    """A ref checked against what the daemon knows (its tab, document and world); whether
    its element is still there is learned by the first call on it, in the same round trip."""

    ref: str
    tab: Tab
    binding: RefBinding
    world: int  # BrowserSkill's isolated world in the element's document
    session_id: str  # the CDP session that owns the node's frame


_REF_SHAPE = re.compile(r"^(f\d+)?e\d+$")


def looks_like_ref(text: str) -> bool:
    """`e7`, `f1e7`: a snapshot ref's shape (a locator has another)."""
    return bool(_REF_SHAPE.match(text))


def not_a_ref_hint(ref: str) -> str:
    """What to do about an unknown ref; a CSS selector or text passed as one gets told
    to say what it is (a locator), since no snapshot will ever give it a ref."""
    if _REF_SHAPE.match(ref):
        return SNAPSHOT_HINT
    if ref[:1] in "#.[" or re.match(r"^[a-z][a-z0-9-]*[#.\[:]", ref):
        return (f"refs look like e12; to use a CSS selector say so: `css={ref}` (a "
                "locator), or " + SNAPSHOT_HINT)
    # `button=Save`, `option "Vanilla"`: a role and a name, as the snapshot writes them.
    named = re.match(r'^([a-z]+)(?:\s*=\s*|\s+)"?([^"]+?)"?$', ref)
    if named and named[1] in REF_ROLES | {"clickable"}:
        return (f"refs look like e12; to find an element by its role and name say so: "
                f"`role={named[1]}[name=\"{named[2]}\"]` (or text=…, css=…), or "
                + SNAPSHOT_HINT)
    return (f"refs look like e12; to find an element by its text say so: "
            f"`text={ref}` (or role=ROLE[name=\"…\"], css=…), or " + SNAPSHOT_HINT)


def _stale(ref: str, why: str) -> BskError:
    return BskError("stale_ref", f"ref {ref} is stale: {why}", hint=SNAPSHOT_HINT,
                    details={"ref": ref}, dispatched=Dispatched.NO)


def check_binding(ctx: ToolContext, ref: str) -> tuple[Tab, RefBinding]:
    """What can be known without asking the browser: is the ref ours, here, current?"""
    return check_ref(ctx.session, ref)


def check_ref(session: Session, ref: str) -> tuple[Tab, RefBinding]:
    """`check_binding` for a session (the dispatcher asks it before holding a call for a
    person: a call whose ref is stale is refused at once, never sent for approval)."""
    binding = session.refs.get(ref)
    if binding is None:
        raise BskError("ref_not_found", f"no ref {ref!r} in this session's snapshots",
                       hint=not_a_ref_hint(ref), details={"ref": ref}, dispatched=Dispatched.NO)
    if binding.tab_id != session.current_tab_id:
        raise BskError(
            "ref_not_found", f"ref {ref} belongs to tab {binding.tab_id}, not the current tab",
            hint=f"`bsk tab select {binding.tab_id}` first, or snapshot this tab",
            details={"ref": ref, "tab_id": binding.tab_id}, dispatched=Dispatched.NO,
        )
    tab = session.tabs.get(binding.tab_id)
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


def resolve(ctx: ToolContext, ref: str) -> Resolved:
    """The ref's binding, or `ref_not_found`/`stale_ref` when the daemon can tell already."""
    ref = ref.strip()
    tab, binding = check_binding(ctx, ref)
    world = tab.worlds.get((binding.frame_id, binding.loader_id))
    if world is None:
        raise _stale(ref, "the daemon no longer holds its page's refs (it restarted)")
    return Resolved(ref, tab, binding, world, tab.session_for_frame(binding.frame_id))


# The element by its ref, then the function on it: one round trip. A missing element
# comes back as what became of it, never as an error from the page.
_CALL = """(async () => {{
  const el = globalThis.__bsk && __bsk.refs.get({ref});
  if (!el) return {{stale: "gone"}};
  if (!el.isConnected) return {{stale: "removed"}};
  return {{value: await ({function}).apply(el, {args})}};
}})()"""

_STALE_WHY = {"gone": "its element no longer exists",
              "removed": "its element was removed from the page"}


def call_request(target: Resolved, function: str, *args: object) -> dict[str, Any]:
    """The `Runtime.evaluate` params that run a function on the ref's element (`call_on`
    sends them; a click sends them in its input sequence)."""
    expression = _CALL.format(ref=json.dumps(target.ref), function=function.strip(),
                              args=json.dumps(list(args)))
    return {"expression": expression, "contextId": target.world, "returnByValue": True,
            "awaitPromise": True}


def call_answer(target: Resolved, answer: dict[str, Any], *, acted: bool,
                sent_before: bool) -> object:
    """The function's JSON value from `call_request`'s answer, or why there is none."""
    if "exceptionDetails" in answer:
        details = answer["exceptionDetails"]
        text = details.get("exception", {}).get("description") or details.get("text", "")
        raise BskError("action_failed", f"the page threw while acting on {target.ref}: {text}",
                       details={"reason": "page_threw", "ref": target.ref},
                       dispatched=Dispatched.YES if acted or sent_before else Dispatched.NO)
    value = answer.get("result", {}).get("value") or {}
    stale = value.get("stale")
    if stale is None:
        return value.get("value")
    if not sent_before:
        raise _stale(target.ref, _STALE_WHY.get(stale, stale))
    raise BskError("action_failed", f"{target.ref} left the page mid-action "
                   f"({_STALE_WHY.get(stale, stale)})", hint=SNAPSHOT_HINT,
                   details={"reason": "element_removed", "ref": target.ref},
                   dispatched=Dispatched.YES)


async def call_on(ctx: ToolContext, target: Resolved, function: str, *args: object,
                  act: bool = False) -> object:
    """Run a function with the element as `this`; return its JSON value.

    Raises `stale_ref` if the element is gone; if this operation already sent something
    that may have changed the page, `action_failed` (element_removed) instead, saying so."""
    sent_before = ctx.effect_sent
    send = ctx.act if act else ctx.inspect
    try:
        answer = await send("Runtime.evaluate", call_request(target, function, *args),
                            tab=target.tab, session_id=target.session_id)
    except CdpError:
        if sent_before or act:
            raise
        raise _stale(target.ref, "its page is gone") from None
    return call_answer(target, answer, acted=act, sent_before=sent_before)


async def element_handle(ctx: ToolContext, target: Resolved) -> str:
    """A CDP object id for the element, for the few commands that need a node handle."""
    lookup = (f"(() => {{ const el = globalThis.__bsk && __bsk.refs.get({json.dumps(target.ref)});"
              " return el ? (el.isConnected ? el : 'removed') : 'gone'; })()")
    try:
        found = await ctx.inspect("Runtime.evaluate", {"expression": lookup,
                                                       "contextId": target.world},
                                  tab=target.tab, session_id=target.session_id)
    except CdpError:
        raise _stale(target.ref, "its page is gone") from None
    element = found.get("result", {})
    if element.get("subtype") != "node":
        raise _stale(target.ref, _STALE_WHY.get(element.get("value"), "its element is gone"))
    return str(element["objectId"])
