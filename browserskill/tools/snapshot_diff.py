"""`snapshot --diff`: what changed between two snapshots of one document, as lines.

Pure (no I/O): two lists of rendered snapshot lines in, a `Diff` out
(tests/test_snapshot_diff.py, with hypothesis). Invariants:
- A line is one node; its depth is its indentation (two spaces a level, as snapshot.js
  renders). A line with a ref is the same element in both snapshots whatever its text
  (snapshot.js keeps an element's ref across snapshots of one document): its text
  differing is a *change*, not a removal and an addition. A line without a ref is matched
  by its whole text, indentation included.
- Every line of either snapshot is accounted for exactly once: unchanged, added (new
  side), removed (old side) or changed (both sides).
- Each reported line comes with its ancestors (the nearest shallower lines above it), each
  printed once, so the agent can place it without the rest of the tree.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

_REF = re.compile(r" \[ref=((?:f\d+)?e\d+)\]")

ADDED, REMOVED, CHANGED, CONTEXT = "+", "-", "~", " "


def depth(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2


def ref_of(line: str) -> str | None:
    found = _REF.search(line)
    return found.group(1) if found else None


def _key(line: str) -> tuple[str, ...]:
    ref = ref_of(line)
    return ("ref", ref) if ref else ("line", line)


@dataclass
class Change:
    """One reported line: `op` is +, -, ~ (changed: `old` is what it was) or a space
    (an unchanged ancestor shown to place the lines below it)."""

    op: str
    line: str
    old: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": {"+": "added", "-": "removed", "~": "changed",
                                      " ": "context"}[self.op], "line": self.line.strip()}
        out["depth"] = depth(self.line)
        if self.old is not None:
            out["was"] = self.old.strip()
        return out


@dataclass
class Diff:
    added: int = 0
    removed: int = 0
    changed: int = 0
    unchanged: int = 0
    lines: list[Change] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def text(self, view: str = "") -> str:
        """`view`: how the snapshot was taken (" -i", " --ref e4"): the base is the last
        one taken so, and the header says which."""
        if self.empty:
            lines = "line" if self.unchanged == 1 else "lines"
            return f"no changes ({self.unchanged} {lines} as in the last snapshot{view})"
        head = (f"# since the last snapshot{view}: {self.added} added, {self.removed} removed, "
                f"{self.changed} changed; {self.unchanged} unchanged lines not shown "
                "(their refs still act)")
        body = []
        for c in self.lines:
            if c.op == CHANGED and c.old is not None:
                body.append(f"~ {c.line}  ({was(c.old, c.line)})")
            else:
                body.append(f"{c.op} {c.line}")
        return "\n".join([head, *body])

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added, "removed": self.removed, "changed": self.changed,
                "unchanged": self.unchanged,
                "lines": [c.to_json() for c in self.lines]}


_LINE = re.compile(r'^- (?P<role>[^\s:"\[]+)(?: (?P<name>"(?:[^"\\]|\\.)*"))?'
                   r'(?P<states>(?: \[[^\]]*\])*)(?:: (?P<value>.*))?$')
_STATE = re.compile(r"\[([^\]]*)\]")


def _parts(line: str) -> tuple[str, str, list[str], str | None] | None:
    """(role, name, states but the ref, value) of a snapshot line, if it reads as one."""
    found = _LINE.match(line.strip())
    if not found:
        return None
    states = [s for s in _STATE.findall(found["states"] or "") if not s.startswith("ref=")]
    return found["role"], found["name"] or "", states, found["value"]


def was(old: str, new: str) -> str:
    """What a changed line was, said by what differs (a name, states, a value), not by
    the whole old line again; the whole line when it does not read as a node."""
    o, n = _parts(old), _parts(new)
    if o is None or n is None:
        return "was: " + old.strip()
    said = []
    if o[0] != n[0]:
        said.append(f"was {o[0]}")
    if o[1] != n[1]:
        said.append(f"was {o[1]}" if o[1] else "had no name")
    gained = [s for s in n[2] if s not in o[2]]
    lost = [s for s in o[2] if s not in n[2]]
    if gained:
        said.append("now " + ", ".join(gained))
    if lost:
        said.append("no longer " + ", ".join(lost))
    if o[3] != n[3]:
        said.append(f"value was {json.dumps(o[3], ensure_ascii=False)}" if o[3] is not None
                    else "had no value")
    return "; ".join(said) or "moved"


def diff(old: list[str], new: list[str]) -> Diff:
    """What turned `old` into `new` (both: a snapshot's lines, top to bottom)."""
    old_keys, new_keys = [_key(x) for x in old], [_key(x) for x in new]
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    # Each event sits at a position in the new list (removed lines: where they were cut).
    events: list[tuple[int, int, Change, int | None, int | None]] = []  # pos, order, …
    removed: list[int] = []
    added: list[int] = []
    result = Diff()
    removed_at: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if old[i] != new[j]:
                    events.append((j, 1, Change(CHANGED, new[j], old[i]), None, j))
                    result.changed += 1
                else:
                    result.unchanged += 1
            continue
        for i in range(i1, i2):
            removed.append(i)
            removed_at[i] = j1
        added.extend(range(j1, j2))
    # An element (ref) cut in one place and put in another moved: one change, not two.
    added_by_ref = {ref: j for j in added if (ref := ref_of(new[j]))}
    moved: set[int] = set()
    for i in removed:
        ref = ref_of(old[i])
        to = added_by_ref.get(ref) if ref else None
        if to is not None and to not in moved:
            moved.add(to)  # (not a place to hang removed lines under: it is elsewhere now)
            events.append((to, 1, Change(CHANGED, new[to], old[i]), None, to))
            result.changed += 1
        else:
            events.append((removed_at[i], 0, Change(REMOVED, old[i]), i, None))
            result.removed += 1
    for j in added:
        if j not in moved:
            events.append((j, 1, Change(ADDED, new[j]), None, j))
            result.added += 1
    events.sort(key=lambda e: (e[0], e[1], e[3] if e[3] is not None else -1))
    reported_new = {e[4] for e in events if e[4] is not None}
    shown: set[int] = set()  # new-side lines already printed (as context or as events)
    for _pos, _order, change, old_index, new_index in events:
        if new_index is not None:
            chain = _above(new, new_index, depth(new[new_index]))
        else:  # a removed line: the new lines that hold the place it was cut from (its
            # old parent may now sit above lines already printed: order comes first)
            assert old_index is not None
            chain = _above(new, _pos, depth(old[old_index]))
        chain = [j for j in chain if j not in reported_new]
        for j in sorted(chain):
            if j not in shown:
                shown.add(j)
                result.lines.append(Change(CONTEXT, new[j]))
        if new_index is not None:
            shown.add(new_index)
        result.lines.append(change)
    return result


def _above(lines: list[str], pos: int, want: int) -> list[int]:
    """Indexes of the nearest line above `pos` shallower than depth `want`, then the
    nearest shallower than that one, up to the top: what holds a line at `pos`."""
    out = []
    for k in range(pos - 1, -1, -1):
        if want == 0:
            break
        d = depth(lines[k])
        if d < want:
            out.append(k)
            want = d
    return out
