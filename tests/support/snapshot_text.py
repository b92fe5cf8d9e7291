"""Reading a snapshot's text the way an agent does: find a node by its role and name,
take its ref. Stdlib only (bench/conformance.py reads the peers' snapshots with it too).

The three tools print one node a line, `- ROLE "NAME" … ref=REF …`, in brackets of their
own: bsk `[ref=e12]` (frames `f1e7`), playwright-cli `[ref=e12]`, agent-browser
`[required, ref=e12]`. A name is what the tool quoted (empty when it printed none), with
`\\"` for a quote inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r'^\s*- (?P<role>[A-Za-z][\w-]*)(?: "(?P<name>(?:[^"\\]|\\.)*)")?'
                   r'(?P<rest>[^\n]*)$', re.M)
_REF = re.compile(r"\bref=@?(\w+)")


@dataclass(frozen=True)
class Node:
    role: str
    name: str
    ref: str | None  # None: the tool printed the node but gave it no ref to act on
    line: int  # 0-based index among the snapshot's node lines


def nodes(text: str) -> list[Node]:
    """Every node line of a snapshot, in order."""
    out = []
    for i, m in enumerate(_LINE.finditer(text)):
        ref = _REF.search(m.group("rest"))
        name = (m.group("name") or "").replace('\\"', '"').replace("\\\\", "\\")
        out.append(Node(m.group("role"), name, ref.group(1) if ref else None, i))
    return out


def find_node(text: str, role: str, name_regex: str, *,
              after: tuple[str, str] | None = None) -> Node | None:
    """The first node whose role and whole name match `role` and `name_regex` (an empty
    regex: an unnamed node), refs or not. `after=(role, name_regex)`: only nodes after the
    first match of that one (an icon with no name, read by its place: "the link after
    Today")."""
    found = nodes(text)
    if after is not None:
        anchor = next((n for n in found if re.fullmatch(after[0], n.role)
                       and re.fullmatch(after[1], n.name)), None)
        if anchor is None:
            return None
        found = found[anchor.line + 1:]
    return next((n for n in found if re.fullmatch(role, n.role)
                 and re.fullmatch(name_regex, n.name)), None)


def find_ref(text: str, role: str, name_regex: str, *,
             after: tuple[str, str] | None = None) -> str | None:
    """The ref of the first node with this role and a name matching `name_regex`, or None
    when the snapshot shows no such node, or shows it without a ref."""
    node = find_node(text, role, name_regex, after=after)
    return node.ref if node else None
