"""snapshot: the accessibility tree as compact text, with refs bound to their documents.

Each frame's tree is computed in the page by `snapshot.js`, in BrowserSkill's isolated
world of that frame (in the CDP session that owns it: the page's, or an out-of-process
iframe's), and spliced in under its <iframe>. Refs are bound to tab, frame, document
(loader) and element; refs inside iframes carry the frame's number (`f1e7`). The same
element keeps its ref across snapshots of one document. Closed shadow roots, which the
page's JavaScript can't reach, are found through CDP and handed to the script
(`read_closed_roots`): only when its walk met hosts that may hold one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserskill.base.catalog.reading import SnapshotParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.session.sessions import RefBinding, Session
from browserskill.tools import snapshot_diff
from browserskill.tools.context import ToolContext
from browserskill.tools.input import restore_hover
from browserskill.tools.refs import check_binding, isolated_world
from browserskill.tools.registry import implements
from browserskill.tools.roles import ACTIONABLE, REF_ROLES

# Listeners that make an element clickable (the page's own, in any world).
CLICK_EVENTS = frozenset({"click", "dblclick", "auxclick", "contextmenu", "mousedown",
                          "mouseup", "pointerdown", "pointerup", "touchstart"})
# Listeners that make an element a place to drop on (HTML drag and drop).
DROP_EVENTS = frozenset({"drop"})
# Events only form controls fire: an element that listens for them as well as for clicks
# is a framework's delegation root (React's app container listens for every event there
# is), serving whatever is inside it — not one thing to click or drop on. Left out of
# both, its content shows as it is (docs/snapshot.md, "Items a container's one listener
# serves get the refs").
DELEGATION_EVENTS = frozenset({"input", "change", "submit", "reset"})
MAX_REFS_PER_SESSION = 50_000
# Documents (and views of them) whose last snapshot a session keeps for `--diff`.
MAX_DIFF_BASES = 16


@dataclass
class DiffBases:
    """A session's last snapshot lines of each document (and view of it), oldest first:
    the base of its next `snapshot --diff`."""

    lines: dict[tuple[Any, ...], list[str]] = field(default_factory=dict)


NEW_DOCUMENT_NOTE = ("[new document, or a view not snapshotted before (the whole page, "
                     "--interactive and each --ref keep their own last snapshot): all of "
                     "it follows; the next --diff with the same options shows only changes]")


@dataclass
class Node:
    role: str
    name: str = ""
    value: str | None = None
    states: list[str] = field(default_factory=list)
    ref: str | None = None
    iframe_index: int | None = None  # an <iframe> whose frame is spliced in here
    children: list[Node] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role}
        if self.name:
            out["name"] = self.name
        if self.value is not None:
            out["value"] = self.value
        if self.states:
            out["states"] = self.states
        if self.ref:
            out["ref"] = self.ref
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


_SCRIPT = (Path(__file__).with_name("snapshot.js")).read_text()
_LISTENED_GROUP = "bsk-listened"
_MARK_LISTENED = ("function(drops, ...els) { const clicks = els.length - drops; "
                  "globalThis.__bskListened = new WeakSet(els.slice(0, clicks)); "
                  "globalThis.__bskDropTargets = new WeakSet(els.slice(clicks)); "
                  "return els.length; }")


async def mark_listened(ctx: ToolContext, tab: Tab, world: int, sid: str) -> int:
    """Tell snapshot.js which elements have click/mouse listeners of the page's own, and
    which `drop` listeners (places to drop on).

    Listeners added with addEventListener live in the page's world, out of the isolated
    world's sight; one DOMDebugger.getEventListeners over the whole document (depth -1)
    lists them with their nodes, which are then handed to the isolated world at once.
    Chosen over patching addEventListener in the main world: nothing is injected into the
    page, it also sees listeners added before BrowserSkill attached, and it costs a few
    milliseconds on ordinary pages (bench/snapshot.py). Asked about the page world's own
    `document`, without `pierce` (which reports every world's listeners and shadow roots'
    too, but crashed Chromium 156's renderer after ~17 snapshots of a plain page):
    listeners inside shadow roots go unseen. Returns how many were marked."""
    try:
        # The document as the page's own world sees it: listeners are reported for the
        # world of the object asked about.
        doc = await ctx.inspect("Runtime.evaluate", {
            "expression": "document", "contextId": world, "objectGroup": _LISTENED_GROUP},
            tab=tab, session_id=sid)
        described = await ctx.inspect("DOM.describeNode", {"objectId": doc["result"]["objectId"]},
                                 tab=tab, session_id=sid)
        page_doc = await ctx.inspect("DOM.resolveNode", {
            "backendNodeId": described["node"]["backendNodeId"], "objectGroup": _LISTENED_GROUP},
            tab=tab, session_id=sid)
        found = await ctx.inspect("DOMDebugger.getEventListeners", {
            "objectId": page_doc["object"]["objectId"], "depth": -1, "pierce": False},
            tab=tab, session_id=sid)
        listeners = found.get("listeners", ())
        roots = {listener.get("backendNodeId") for listener in listeners
                 if listener.get("type") in DELEGATION_EVENTS}

        async def handles(events: frozenset[str]) -> list[dict[str, str]]:
            nodes = {listener["backendNodeId"] for listener in listeners
                     if listener.get("type") in events and listener.get("backendNodeId")
                     and listener["backendNodeId"] not in roots}
            resolved = await asyncio.gather(*(ctx.inspect("DOM.resolveNode", {
                "backendNodeId": node, "executionContextId": world,
                "objectGroup": _LISTENED_GROUP}, tab=tab, session_id=sid) for node in nodes),
                return_exceptions=True)
            return [{"objectId": h["object"]["objectId"]} for h in resolved
                    if isinstance(h, dict) and "objectId" in h.get("object", {})]

        clicks, drops = await asyncio.gather(handles(CLICK_EVENTS), handles(DROP_EVENTS))
        await ctx.inspect("Runtime.callFunctionOn", {
            "functionDeclaration": _MARK_LISTENED, "executionContextId": world,
            "arguments": [{"value": len(drops)}, *clicks, *drops], "returnByValue": True},
            tab=tab, session_id=sid)
        return len(clicks) + len(drops)
    except (CdpError, KeyError):
        return 0  # a frame that went away: the script's own retry reads the new one
    finally:
        with contextlib.suppress(CdpError):
            await ctx.inspect("Runtime.releaseObjectGroup", {"objectGroup": _LISTENED_GROUP},
                              tab=tab, session_id=sid)


def _nodes(raw: list[Any], holders: list[Node]) -> list[Node]:
    """The script's compact arrays as `Node`s; iframe placeholders collected in order."""
    out = []
    for item in raw:
        if item[0] == "text":
            out.append(Node("text", item[1]))
            continue
        role, name, value, states, ref, children = item
        node = Node(role, name, value, states, ref)
        if isinstance(children, int):
            node.iframe_index = children
            holders.append(node)
        else:
            node.children = _nodes(children, holders)
        out.append(node)
    return out


@dataclass
class FrameView:
    """One frame's snapshot, its iframes' frames spliced in."""

    text: str
    tree: list[Node] | None = None
    title: str | None = None  # the frame's document.title


async def run_script(ctx: ToolContext, tab: Tab, frame_id: str,
                      options: dict[str, Any]) -> tuple[dict[str, Any], str, int, str]:
    """Run snapshot.js in the frame's isolated world; retried if the document changes,
    and again (once per level of nesting) when it found closed shadow roots to enter."""
    sid = tab.session_for_frame(frame_id)
    for _attempt in range(3):
        loader = tab.frames.get(frame_id, "")
        world = await isolated_world(ctx, tab, frame_id)
        options["prefix"] = ("" if frame_id == tab.main_frame_id
                             else f"f{tab.frame_ordinal(frame_id)}")
        await mark_listened(ctx, tab, world, sid)
        value: dict[str, Any] | None = None
        for _level in range(MAX_CLOSED_ROOT_LEVELS + 1):
            value = await _walk(ctx, tab, world, sid, options)
            if (value is None or not value.get("candidates")
                    or not await read_closed_roots(ctx, tab, world, sid, value["candidates"])):
                break
        if value is None:
            tab.worlds.pop((frame_id, loader), None)  # the document went away: read the new one
            continue
        if tab.frames.get(frame_id, "") == loader:
            return value, loader, world, sid
    raise CdpError("snapshot", 0, "the frame kept navigating while it was read")


async def _walk(ctx: ToolContext, tab: Tab, world: int, sid: str,
                options: dict[str, Any]) -> dict[str, Any] | None:
    """One run of snapshot.js: its head (refs, next, …) with the text; None if the
    document went away meanwhile."""
    options["next"] = ctx.session.ref_seq + 1
    try:
        answer = await ctx.inspect("Runtime.evaluate", {
            "expression": f"({_SCRIPT})({json.dumps(options)})", "contextId": world,
            "returnByValue": True}, tab=tab, session_id=sid)
    except CdpError:
        return None
    if "exceptionDetails" in answer:
        details = answer["exceptionDetails"]
        raise RuntimeError("snapshot script failed: "
                           + (details.get("exception", {}).get("description")
                              or details.get("text", "")))
    head, _, text = answer["result"]["value"].partition("\n")
    value: dict[str, Any] = json.loads(head)
    value["text"] = text
    ctx.session.ref_seq = max(ctx.session.ref_seq, value["next"] - 1)
    return value


# Closed roots inside closed roots are found one level per walk: at most this many more.
MAX_CLOSED_ROOT_LEVELS = 3
# Up to this many candidate hosts are described one by one (a round trip each, in
# parallel); more, and the whole document is described once (its cost grows with the
# document, not with the hosts: a page of a thousand light-DOM custom elements).
DESCRIBE_EACH_MAX = 40
_CLOSED_GROUP = "bsk-closed-roots"
_KEEP_CLOSED = """function(...pairs) {
  const bsk = globalThis.__bsk;
  for (const host of bsk.candidates) bsk.asked.add(host);
  bsk.candidates = [];
  let added = 0;
  for (let i = 0; i < pairs.length; i += 2) {
    if (bsk.closed.get(pairs[i]) !== pairs[i + 1]) added++;
    bsk.closed.set(pairs[i], pairs[i + 1]);
  }
  return added;
}"""


def _closed_pairs(node: dict[str, Any]) -> list[tuple[int, int]]:
    """(host, closed root) backend node ids in a described DOM subtree, in its shadow
    roots too (not in iframes' documents: each frame is read in its own world)."""
    out = []
    for root in node.get("shadowRoots", ()):
        if root.get("shadowRootType") == "closed":
            out.append((node["backendNodeId"], root["backendNodeId"]))
        out.extend(_closed_pairs(root))
    for child in node.get("children", ()):
        out.extend(_closed_pairs(child))
    return out


async def read_closed_roots(ctx: ToolContext, tab: Tab, world: int, sid: str,
                            count: int) -> int:
    """Hand snapshot.js the closed shadow roots of the `count` hosts its walk listed.

    Page JS can't see a closed root (`el.shadowRoot` is null); CDP can:
    `DOM.describeNode` of a host lists its shadow roots and their type, and
    `DOM.resolveNode` gives the isolated world a handle on one. Only pages where the walk
    found candidates pay (defined custom elements without an open root, each asked once
    per document: snapshot.js); a page without them pays nothing. Returns how many
    closed roots were new."""
    async def send(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await ctx.inspect(method, params, tab=tab, session_id=sid)

    try:
        if count > DESCRIBE_EACH_MAX:
            doc = await send("Runtime.evaluate", {
                "expression": "document", "contextId": world, "objectGroup": _CLOSED_GROUP})
            whole = await send("DOM.describeNode", {
                "objectId": doc["result"]["objectId"], "depth": -1, "pierce": True})
            pairs = _closed_pairs(whole["node"])
        else:
            listed = await send("Runtime.evaluate", {
                "expression": "globalThis.__bsk.candidates", "contextId": world,
                "objectGroup": _CLOSED_GROUP})
            props = await send("Runtime.getProperties", {
                "objectId": listed["result"]["objectId"], "ownProperties": True})
            hosts = [p["value"]["objectId"] for p in props.get("result", ())
                     if p.get("name", "").isdigit() and "objectId" in p.get("value", {})]
            described = await asyncio.gather(*(send("DOM.describeNode", {
                "objectId": host, "depth": 0}) for host in hosts), return_exceptions=True)
            pairs = [pair for found in described if isinstance(found, dict)
                     for pair in _closed_pairs(found["node"])]
        handles = await asyncio.gather(*(send("DOM.resolveNode", {
            "backendNodeId": node, "executionContextId": world,
            "objectGroup": _CLOSED_GROUP}) for pair in pairs for node in pair),
            return_exceptions=True)
        args = []
        for host, root in zip(handles[::2], handles[1::2], strict=True):
            if isinstance(host, dict) and isinstance(root, dict):
                args += [{"objectId": host["object"]["objectId"]},
                         {"objectId": root["object"]["objectId"]}]
        kept = await send("Runtime.callFunctionOn", {
            "functionDeclaration": _KEEP_CLOSED, "executionContextId": world,
            "arguments": args, "returnByValue": True})
        return int(kept.get("result", {}).get("value") or 0)
    except (CdpError, KeyError):
        return 0  # a frame that went away: the script's own retry reads the new one
    finally:
        with contextlib.suppress(CdpError):
            await send("Runtime.releaseObjectGroup", {"objectGroup": _CLOSED_GROUP})


async def read_frame(ctx: ToolContext, tab: Tab, frame_id: str, *, root_ref: str | None,
                     interactive: bool, as_tree: bool, depth: int = 0) -> FrameView:
    options = {"refRoles": sorted(REF_ROLES), "actionable": sorted(ACTIONABLE),
               "rootRef": root_ref, "interactive": interactive, "asTree": as_tree}
    value, loader, world, sid = await run_script(ctx, tab, frame_id, options)
    if value.get("missing"):
        raise BskError("stale_ref", f"ref {root_ref} is not in the page any more",
                       hint="take a full snapshot", details={"ref": root_ref},
                       dispatched=Dispatched.NO)
    session = ctx.session
    for ref, role, name in value["refs"]:
        held = session.refs.get(ref)
        # A ref the page's registry holds is this document's (refs are kept per
        # document): bound to it even if an older binding of that name lingers.
        if held is None or (held.tab_id, held.frame_id, held.loader_id) != (
                tab.tab_id, frame_id, loader):
            session.refs[ref] = RefBinding(tab.tab_id, frame_id, loader, role, name)
    children: dict[int, FrameView] = {}

    async def child(index: int) -> FrameView:
        if index not in children:
            children[index] = await read_iframe(ctx, tab, world, sid, index, interactive,
                                                as_tree, depth)
        return children[index]

    lines: list[str] = []
    for line in value["text"].split("\n") if value["text"] else ():
        body = line.lstrip(" ")
        if not body.startswith("\x00"):
            lines.append(line)
            continue
        pad = line[: len(line) - len(body)]
        view = await child(int(body[1:]))
        lines.extend(pad + inner for inner in view.text.split("\n") if view.text)
    tree = None
    if as_tree:
        holders: list[Node] = []
        tree = _nodes(value["tree"], holders)
        for holder in holders:
            view = await child(holder.iframe_index or 0)
            holder.children = view.tree or []
    return FrameView("\n".join(lines), tree, value.get("title"))


async def read_iframe(ctx: ToolContext, tab: Tab, world: int, sid: str, index: int,
                      interactive: bool, as_tree: bool, depth: int) -> FrameView:
    if depth >= 4:
        return FrameView("- text: (nested too deep; snapshot the frame by its ref)")
    try:
        element = await ctx.inspect("Runtime.evaluate", {
            "expression": f"globalThis.__bsk.iframes[{index}]", "contextId": world},
            tab=tab, session_id=sid)
        described = await ctx.inspect("DOM.describeNode", {
            "objectId": element["result"]["objectId"]}, tab=tab, session_id=sid)
    except (CdpError, KeyError):
        return FrameView("")
    frame_id = described["node"].get("frameId")
    if not frame_id or frame_id not in tab.frames:
        return FrameView("- text: (frame not loaded yet)", [Node("text", "(frame not loaded yet)")])
    try:
        return await read_frame(ctx, tab, frame_id, root_ref=None, interactive=interactive,
                                as_tree=as_tree, depth=depth + 1)
    except CdpError:
        return FrameView("- text: (frame not readable yet)",
                         [Node("text", "(frame not readable yet)")])


def truncate(text: str, max_tokens: int | None) -> tuple[str, dict[str, Any] | None]:
    """Cut at a line boundary near max_tokens (chars/4), with a visible note."""
    if not max_tokens or len(text) <= max_tokens * 4:
        return text, None
    budget = max_tokens * 4
    lines = text.split("\n")
    kept, used = [], 0
    for line in lines:
        if used + len(line) + 1 > budget:
            break
        kept.append(line)
        used += len(line) + 1
    cut = len(lines) - len(kept)
    note = {"lines_cut": cut, "tokens_cut_estimate": (len(text) - used) // 4}
    kept.append(f"[… {cut} more lines (~{note['tokens_cut_estimate']} tokens) cut by "
                f"--max-tokens {max_tokens}; raise it, use --interactive, or --ref REF "
                "for one part]")
    return "\n".join(kept), note


def _prune_refs(session: Session) -> None:
    excess = len(session.refs) - MAX_REFS_PER_SESSION
    if excess > 0:
        for ref in list(session.refs)[:excess]:
            del session.refs[ref]


@implements("snapshot")
async def snapshot(ctx: ToolContext, params: SnapshotParams) -> dict[str, Any]:
    tab = ctx.tab
    await restore_hover(ctx, tab)
    frame_id = tab.main_frame_id or ""
    if params["ref"]:
        _, binding = check_binding(ctx, params["ref"])
        frame_id = binding.frame_id
    view = await read_frame(ctx, tab, frame_id, root_ref=params["ref"],
                            interactive=params["interactive"], as_tree=params["tree"])
    _prune_refs(ctx.session)
    # The base of the next `--diff`: this document, seen the same way (docs/snapshot.md).
    key = (tab.tab_id, frame_id, tab.frames.get(frame_id, ""), params["interactive"],
           params["ref"])
    lines = view.text.split("\n") if view.text else []
    bases = ctx.feature(DiffBases).lines
    base = bases.pop(key, None)
    bases[key] = lines
    while len(bases) > MAX_DIFF_BASES:
        del bases[next(iter(bases))]
    changes = None
    if params.get("diff"):
        if base is None:
            view.text = NEW_DOCUMENT_NOTE + ("\n" + view.text if view.text else "")
        else:
            changes = snapshot_diff.diff(base, lines)
            view.text = changes.text((" -i" if params["interactive"] else "") +
                                     (f" --ref {params['ref']}" if params["ref"] else ""))
    text, cut = truncate(view.text, params["max_tokens"])
    if frame_id == tab.main_frame_id and view.title is not None:
        tab.title = view.title
    else:  # a ref's iframe was read: the tab's title is the top document's
        title = await ctx.inspect("Runtime.evaluate", {"expression": "document.title",
                                                       "returnByValue": True}, tab=tab)
        tab.title = title.get("result", {}).get("value", "") or ""
    out: dict[str, Any] = {"tab_id": tab.tab_id, "url": tab.url, "title": tab.title,
                           "snapshot": text}
    if cut:
        out["truncated"] = cut
    if params.get("diff"):
        out["diff"] = ({"base": "new_document"} if changes is None
                       else {"base": "last_snapshot", **changes.to_json()})
    if view.tree is not None and changes is None:  # a diff's point is not to send it all
        out["tree"] = [n.to_json() for n in view.tree]
    return out
