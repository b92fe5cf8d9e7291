"""snapshot: the accessibility tree as compact text, with refs bound to their documents.

Each frame's tree is computed in the page by `snapshot.js`, in BrowserSkill's isolated
world of that frame (in the CDP session that owns it: the page's, or an out-of-process
iframe's), and spliced in under its <iframe>. Refs are bound to tab, frame, document
(loader) and element; refs inside iframes carry the frame's number (`f1e7`). The same
element keeps its ref across snapshots of one document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.dispatch.sessions import RefBinding, Session
from browserskill.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.input import restore_hover
from browserskill.tools.refs import check_binding, isolated_world
from browserskill.tools.registry import implements

# Roles an agent acts on; with --interactive only these (and their context) are shown.
ACTIONABLE = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox",
    "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider",
    "spinbutton", "treeitem", "textarea", "MenuListPopup", "ListBoxOption",
})
# Roles that also get a ref: things an agent reads or targets by ref.
REF_ROLES = ACTIONABLE | {"heading", "img", "image", "dialog", "alertdialog", "Iframe",
                          "region", "form"}
MAX_REFS_PER_SESSION = 50_000


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


def _bind(session: Session, tab: Tab, frame_id: str, loader: str, nodes: list[Node]) -> None:
    for node in nodes:
        if node.ref and node.ref not in session.refs:
            session.refs[node.ref] = RefBinding(tab.tab_id, frame_id, loader, node.role,
                                                node.name)
        _bind(session, tab, frame_id, loader, node.children)


async def read_frame(ctx: ToolContext, tab: Tab, frame_id: str, root_ref: str | None = None,
                     depth: int = 0) -> list[Node]:
    """One frame's tree, computed in the page, with its iframes' trees spliced in."""
    session = ctx.session
    sid = tab.session_for_frame(frame_id)
    for _attempt in range(3):
        loader = tab.frames.get(frame_id, "")
        world = await isolated_world(ctx, tab, frame_id)
        options = {"prefix": "" if frame_id == tab.main_frame_id
                   else f"f{tab.frame_ordinal(frame_id)}",
                   "next": session.ref_seq + 1, "refRoles": sorted(REF_ROLES),
                   "rootRef": root_ref}
        try:
            answer = await ctx.inspect("Runtime.evaluate", {
                "expression": f"({_SCRIPT})({json.dumps(options)})", "contextId": world,
                "returnByValue": True}, tab=tab, session_id=sid)
        except CdpError:
            tab.worlds.pop((frame_id, loader), None)  # the document went away: read the new one
            continue
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise RuntimeError("snapshot script failed: "
                               + (details.get("exception", {}).get("description")
                                  or details.get("text", "")))
        value = json.loads(answer["result"]["value"])
        if tab.frames.get(frame_id, "") == loader:
            break
    else:
        return [Node("text", "(the frame kept navigating; snapshot again)")]
    session.ref_seq = max(session.ref_seq, value["next"] - 1)
    if value.get("missing"):
        raise BskError("stale_ref", f"ref {root_ref} is not in the page any more",
                       hint="take a full snapshot", details={"ref": root_ref},
                       dispatched="no")
    holders: list[Node] = []
    nodes = _nodes(value["tree"], holders)
    _bind(session, tab, frame_id, loader, nodes)
    if depth < 4:
        for holder in holders:
            holder.children = await read_iframe(ctx, tab, world, sid, holder, depth)
    return nodes


async def read_iframe(ctx: ToolContext, tab: Tab, world: int, sid: str, holder: Node,
                      depth: int) -> list[Node]:
    index = holder.iframe_index
    try:
        element = await ctx.inspect("Runtime.evaluate", {
            "expression": f"globalThis.__bsk.iframes[{index}]", "contextId": world},
            tab=tab, session_id=sid)
        described = await ctx.inspect("DOM.describeNode", {
            "objectId": element["result"]["objectId"]}, tab=tab, session_id=sid)
    except (CdpError, KeyError):
        return []
    frame_id = described["node"].get("frameId")
    if not frame_id or frame_id not in tab.frames:
        return [Node("text", "(frame not loaded yet)")]
    try:
        return await read_frame(ctx, tab, frame_id, depth=depth + 1)
    except CdpError:
        return [Node("text", "(frame not readable yet)")]


def prune_interactive(nodes: list[Node]) -> list[Node]:
    """Keep actionable nodes and the named containers around them."""
    out: list[Node] = []
    for node in nodes:
        kept = prune_interactive(node.children)
        if node.role in ACTIONABLE:
            out.append(Node(node.role, node.name, node.value, node.states, node.ref,
                            children=kept))
        elif kept:
            if node.name and node.role != "text":
                out.append(Node(node.role, node.name, None, node.states, node.ref,
                                children=kept))
            else:
                out.extend(kept)
    return out


def render(nodes: list[Node], lines: list[str], depth: int = 0) -> list[str]:
    pad = "  " * depth
    for n in nodes:
        if n.role == "text":
            lines.append(f"{pad}- text: {n.name}")
            continue
        line = f"{pad}- {n.role}"
        if n.name:
            line += " " + json.dumps(n.name, ensure_ascii=False)
        for state in n.states:
            line += f" [{state}]"
        if n.ref:
            line += f" [ref={n.ref}]"
        if n.value is not None:
            line += f": {n.value}"
        lines.append(line)
        render(n.children, lines, depth + 1)
    return lines


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
async def snapshot(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.tab
    await restore_hover(ctx, tab)
    if params["ref"]:
        _, binding = check_binding(ctx, params["ref"])
        nodes = await read_frame(ctx, tab, binding.frame_id, root_ref=params["ref"])
    else:
        nodes = await read_frame(ctx, tab, tab.main_frame_id or "")
    _prune_refs(ctx.session)
    if params["interactive"]:
        nodes = prune_interactive(nodes)
    text, cut = truncate("\n".join(render(nodes, [])), params["max_tokens"])
    title = await ctx.inspect("Runtime.evaluate", {"expression": "document.title",
                                                   "returnByValue": True}, tab=tab)
    tab.title = title.get("result", {}).get("value", "") or ""
    out: dict[str, Any] = {"tab_id": tab.tab_id, "url": tab.url, "title": tab.title,
                           "snapshot": text}
    if cut:
        out["truncated"] = cut
    if params["tree"]:
        out["tree"] = [n.to_json() for n in nodes]
    return out
