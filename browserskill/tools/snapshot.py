"""snapshot: the accessibility tree as compact text, with refs bound to their documents.

Each frame's tree comes from `Accessibility.getFullAXTree` in the CDP session that owns
the frame (the page's, or an out-of-process iframe's), spliced in under its <iframe>.
Refs are bound to tab, frame, document (loader) and node; refs inside iframes carry the
frame's number (`f1e7`). The same node keeps its ref across snapshots of one document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.dispatch.sessions import RefBinding, Session
from browserskill.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.input import restore_hover
from browserskill.tools.refs import check_binding
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
# Containers without a name add nothing but depth.
FLATTEN_ROLES = frozenset({"generic", "none", "presentation", "LineBreak", "paragraph",
                           "Section", "group", "div", "span", "LabelText", "Canvas",
                           "RootWebArea", "WebArea", "Pre", "Abbr", "Mark", "Time",
                           "strong", "emphasis", "Ruby", "DescriptionListDetail"})
SKIP_ROLES = frozenset({"InlineTextBox", "LayoutTableCell", "ListMarker"})
STATES = ("checked", "disabled", "expanded", "selected", "pressed", "required", "level",
          "invalid", "readonly")
MAX_REFS_PER_SESSION = 50_000


@dataclass
class Node:
    role: str
    name: str = ""
    value: str | None = None
    states: list[str] = field(default_factory=list)
    ref: str | None = None
    backend_id: int | None = None
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


def _v(field_: dict[str, Any] | None) -> Any:
    return None if not field_ else field_.get("value")


def _clean(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


class FrameReader:
    """Turns one frame's AX nodes into `Node`s, assigning refs as it goes."""

    def __init__(self, session: Session, tab: Tab, frame_id: str, loader_id: str,
                 nodes: list[dict[str, Any]]) -> None:
        self.session = session
        self.tab = tab
        self.frame_id = frame_id
        self.loader_id = loader_id
        self.prefix = f"f{tab.frame_ordinal(frame_id)}" if frame_id != tab.main_frame_id else ""
        self.by_id = {n["nodeId"]: n for n in nodes}
        self.iframes: list[Node] = []  # placeholders to fill with their frame's tree
        self._known = {
            b.backend_node_id: ref for ref, b in session.refs.items()
            if b.tab_id == tab.tab_id and b.loader_id == loader_id and b.frame_id == frame_id
        }

    def ref_for(self, backend: int, role: str, name: str) -> str:
        ref = self._known.get(backend)
        if ref is None:
            ref = self.prefix + self.session.next_ref()
            self.session.refs[ref] = RefBinding(self.tab.tab_id, self.frame_id, self.loader_id,
                                                backend, role, name)
            self._known[backend] = ref
        return ref

    def read(self, root_id: str) -> list[Node]:
        out: list[Node] = []
        self._walk(root_id, out, ())
        return out

    def _walk(self, node_id: str, out: list[Node], parent_text: tuple[str, ...]) -> None:
        # Iterative over siblings, recursive over depth (DOM depth is small).
        ax = self.by_id.get(node_id)
        if ax is None:
            return
        role = _v(ax.get("role")) or ""
        children = ax.get("childIds", ())
        if ax.get("ignored") or role in SKIP_ROLES:
            for child in children:
                self._walk(child, out, parent_text)
            return
        name = _clean(_v(ax.get("name")) or "")
        if role == "StaticText":
            if name and name not in parent_text:
                out.append(Node("text", name))
            return
        if role in FLATTEN_ROLES and not (name and role not in ("RootWebArea", "WebArea")):
            for child in children:
                self._walk(child, out, parent_text)
            return
        node = Node(role, name)
        value = _v(ax.get("value"))
        if value not in (None, "") and role != "heading":
            node.value = _clean(str(value), 500)
        for prop in ax.get("properties", ()):
            pname, pval = prop["name"], _v(prop.get("value"))
            if pname not in STATES or pval in (None, "", False, "false"):
                if not (pname == "expanded" and pval is False):
                    continue
            node.states.append(pname if pval is True or pval == "true" else f"{pname}={pval}")
        backend = ax.get("backendDOMNodeId")
        if backend is not None:
            node.backend_id = backend
            if role in REF_ROLES:
                node.ref = self.ref_for(backend, role, name)
        if role == "Iframe":
            self.iframes.append(node)
        text = (name, node.value) if node.value else (name,)
        for child in children:
            self._walk(child, node.children, text)
        out.append(node)


async def read_frame(ctx: ToolContext, tab: Tab, frame_id: str, session_id: str,
                     own_root: bool, depth: int = 0) -> list[Node]:
    """One frame's tree, with its iframes' trees spliced in (to a sane depth)."""
    params = {} if own_root else {"frameId": frame_id}
    while True:
        loader = tab.frames.get(frame_id, "")
        tree = await ctx.inspect("Accessibility.getFullAXTree", params, session_id=session_id)
        if tab.frames.get(frame_id, "") == loader:
            break  # else the document changed under us: read the new one
    nodes = tree.get("nodes", [])
    if not nodes:
        return []
    reader = FrameReader(ctx.session, tab, frame_id, loader, nodes)
    top = reader.read(nodes[0]["nodeId"])
    if depth < 4:
        for holder in reader.iframes:
            holder.children = await read_iframe(ctx, tab, holder, session_id, depth)
    return top


async def read_iframe(ctx: ToolContext, tab: Tab, holder: Node, session_id: str,
                      depth: int) -> list[Node]:
    try:
        described = await ctx.inspect("DOM.describeNode", {"backendNodeId": holder.backend_id},
                                      session_id=session_id)
    except CdpError:
        return []
    frame_id = described["node"].get("frameId")
    if not frame_id:
        return []
    child = tab.child_by_frame(frame_id)
    try:
        if child is not None:
            return await read_frame(ctx, tab, frame_id, child.session_id, True, depth + 1)
        return await read_frame(ctx, tab, frame_id, session_id, False, depth + 1)
    except CdpError:
        return [Node("text", "(frame not readable yet)")]


def prune_interactive(nodes: list[Node]) -> list[Node]:
    """Keep actionable nodes and the named containers around them."""
    out: list[Node] = []
    for node in nodes:
        kept = prune_interactive(node.children)
        if node.role in ACTIONABLE:
            out.append(Node(node.role, node.name, node.value, node.states, node.ref,
                            node.backend_id, kept))
        elif kept:
            if node.name and node.role != "text":
                out.append(Node(node.role, node.name, None, node.states, node.ref,
                                node.backend_id, kept))
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


def find(nodes: list[Node], ref: str) -> Node | None:
    for n in nodes:
        if n.ref == ref:
            return n
        hit = find(n.children, ref)
        if hit:
            return hit
    return None


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
    if params["ref"]:
        check_binding(ctx, params["ref"])
    await restore_hover(ctx, tab)
    nodes = await read_frame(ctx, tab, tab.main_frame_id or "", tab.session_id, True)
    _prune_refs(ctx.session)
    if params["ref"]:
        root = find(nodes, params["ref"])
        if root is None:
            raise BskError("stale_ref", f"ref {params['ref']} is not in the page any more",
                           hint="take a full snapshot", details={"ref": params["ref"]},
                           dispatched="no")
        nodes = [root]
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
