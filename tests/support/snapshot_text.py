"""Reading a snapshot's text the way an agent does: find a node by its role and name,
take its ref — in any of the three tools' snapshots. Stdlib only (bench/conformance.py
reads the peers' snapshots with it too).

The tools print one node a line, `- ROLE "NAME" … ref=REF …`, in brackets of their own:
bsk `[level=1] [ref=e12]` (frames `f1e7`), playwright-cli `[ref=e12] [cursor=pointer]`,
agent-browser `[level=1, ref=e12]`; playwright-cli's YAML quotes a line holding ": "
whole, in single quotes. A name is the JSON-quoted string the tool printed
(empty when it printed none). The matching rules (support/conformance_tasks.py's
docstring): the role matches whole, the name by `re.search` (`"^$"`: unnamed, `""`:
any), nodes without a ref are skipped, the `nth` (0-based; -1 the last) match is taken.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_LINE = re.compile(r"""^\s*- '?(?P<role>[^\s":']+)(?: (?P<name>"(?:[^"\\\n]|\\.)*"))?"""
                   r"(?P<rest>[^\n]*)$", re.M)
_REF = re.compile(r"[\[ ,]ref=@?(\w+)[\],]")


@dataclass(frozen=True)
class Node:
    role: str
    name: str
    ref: str | None  # None: the tool printed the node but gave it no ref to act on


def nodes(text: str) -> list[Node]:
    """Every node line of a snapshot, in order."""
    out = []
    for m in _LINE.finditer(text):
        ref = _REF.search(m["rest"])
        try:
            name = json.loads(m["name"]) if m["name"] else ""
        except ValueError:  # an escape JSON does not know: read it as printed
            name = m["name"][1:-1]
        out.append(Node(m["role"], name, ref.group(1) if ref else None))
    return out


def find_node(text: str, role: str, name_pattern: str, nth: int = 0, *,
              with_ref: bool = True) -> Node | None:
    """The `nth` node (negative: from the end) whose role matches `role` whole and whose
    name matches `name_pattern` (re.search); only nodes with a ref unless `with_ref` is
    False."""
    matches = [node for node in nodes(text)
               if (node.ref is not None or not with_ref) and re.fullmatch(role, node.role)
               and re.search(name_pattern, node.name)]
    try:
        return matches[nth]
    except IndexError:
        return None


def find_ref(text: str, role: str, name_pattern: str, nth: int = 0) -> str | None:
    """The ref an agent would pick from the snapshot's text alone, or None when the
    snapshot shows no such node with a ref."""
    node = find_node(text, role, name_pattern, nth)
    return node.ref if node else None
