"""snapshot: the accessibility tree as compact text, with refs bound to their documents."""

from __future__ import annotations

import json
from typing import Any

from browserskill.browser.tab import Tab
from browserskill.dispatch.sessions import RefBinding, Session
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements

# Roles an agent acts on or reads by ref.
REF_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox",
    "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider",
    "spinbutton", "treeitem", "heading", "img", "image", "textarea", "cell", "gridcell",
    "columnheader", "rowheader", "row", "dialog", "alertdialog", "form", "table",
})
# Containers without a name add nothing but depth.
FLATTEN_ROLES = frozenset({"generic", "none", "presentation", "LineBreak", "paragraph",
                           "Section", "group", "div", "span", "LabelText"})
SKIP_ROLES = frozenset({"InlineTextBox", "LayoutTableCell"})
STATES = ("checked", "disabled", "expanded", "selected", "pressed", "required", "level",
          "invalid", "readonly", "focused")
MAX_REFS_PER_SESSION = 50_000


def _value(field: dict[str, Any] | None) -> Any:
    return None if not field else field.get("value")


class _Renderer:
    def __init__(self, session: Session, tab: Tab, frame_id: str, loader_id: str,
                 nodes: list[dict[str, Any]]) -> None:
        self.session = session
        self.tab = tab
        self.frame_id = frame_id
        self.loader_id = loader_id
        self.by_id = {n["nodeId"]: n for n in nodes}
        self.lines: list[str] = []
        self.refs = 0
        self._known = {
            (b.tab_id, b.loader_id, b.backend_node_id): ref
            for ref, b in session.refs.items()
            if b.tab_id == tab.tab_id and b.loader_id == loader_id
        }

    def ref_for(self, node: dict[str, Any], role: str, name: str) -> str:
        backend = node["backendDOMNodeId"]
        key = (self.tab.tab_id, self.loader_id, backend)
        ref = self._known.get(key)
        if ref is None:  # the same node keeps its ref across snapshots of one document
            ref = self.session.next_ref()
            self.session.refs[ref] = RefBinding(
                self.tab.tab_id, self.frame_id, self.loader_id, backend, role, name
            )
            self._known[key] = ref
        self.refs += 1
        return ref

    def render(self, node_id: str, depth: int, parent_text: tuple[str, ...]) -> None:
        node = self.by_id.get(node_id)
        if node is None:
            return
        role = _value(node.get("role")) or ""
        name = (_value(node.get("name")) or "").strip()
        children = node.get("childIds", ())
        if node.get("ignored") or role in SKIP_ROLES:
            for child in children:
                self.render(child, depth, parent_text)
            return
        if role == "StaticText":
            if name and name not in parent_text:
                self.lines.append(f"{'  ' * depth}- text: {_quote_text(name)}")
            return
        if (role in FLATTEN_ROLES and not name) or role in ("RootWebArea", "WebArea"):
            for child in children:
                self.render(child, depth, parent_text)
            return
        line = f"{'  ' * depth}- {role}"
        if name:
            line += f" {json.dumps(name, ensure_ascii=False)}"
        props = {p["name"]: _value(p.get("value")) for p in node.get("properties", ())}
        for state in STATES:
            value = props.get(state)
            if value in (None, False, "false", "") and state != "expanded":
                continue
            if value is None:
                continue
            line += f" [{state}]" if value is True or value == "true" else f" [{state}={value}]"
        if role in REF_ROLES and node.get("backendDOMNodeId"):
            line += f" [ref={self.ref_for(node, role, name)}]"
        value = _value(node.get("value"))
        if value not in (None, "") and role not in ("heading",):
            line += f": {_quote_text(str(value))}"
        self.lines.append(line)
        text = (name, str(value)) if value not in (None, "") else (name,)
        for child in children:
            self.render(child, depth + 1, text)


def _quote_text(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


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
                f"--max-tokens {max_tokens}; raise it to see them]")
    return "\n".join(kept), note


def _prune_refs(session: Session) -> None:
    excess = len(session.refs) - MAX_REFS_PER_SESSION
    if excess > 0:
        for ref in list(session.refs)[:excess]:
            del session.refs[ref]


@implements("snapshot")
async def snapshot(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.tab
    while True:
        loader = tab.main_loader() or ""
        tree = await ctx.inspect("Accessibility.getFullAXTree", tab=tab)
        if tab.main_loader() == loader:
            break  # else the document changed under us: read the new one
    nodes = tree.get("nodes", [])
    renderer = _Renderer(ctx.session, tab, tab.main_frame_id or "", loader, nodes)
    if nodes:
        renderer.render(nodes[0]["nodeId"], 0, ())
    _prune_refs(ctx.session)
    text, cut = truncate("\n".join(renderer.lines), params["max_tokens"])
    title = await ctx.inspect("Runtime.evaluate", {"expression": "document.title",
                                                   "returnByValue": True}, tab=tab)
    tab.title = title.get("result", {}).get("value", "") or ""
    out: dict[str, Any] = {"tab_id": tab.tab_id, "url": tab.url, "title": tab.title,
                           "refs": renderer.refs, "snapshot": text}
    if cut:
        out["truncated"] = cut
    return out
