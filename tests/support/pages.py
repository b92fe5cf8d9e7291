"""Reading snapshots the way an agent does, and scenarios shared by several tests."""

from __future__ import annotations

import json
import re

from support.cli import Bsk


def ref_of(snapshot: str, role: str, name: str) -> str:
    """The ref of the node with this role and name in a snapshot's text."""
    match = re.search(rf'- {role} "{re.escape(name)}"[^\n]*\[ref=(\w+)\]', snapshot)
    assert match, f"no {role} {name!r} in:\n{snapshot}"
    return match.group(1)


def clicks_report_the_state_they_left(s: Bsk, site: str) -> None:
    """A click answers with what it left the element as (read right after its release):
    expanded, checked, or gone (the page re-rendered it)."""
    s.ok("open", f"{site}/click.html")
    snap = s.ok("snapshot")["result"]["snapshot"]
    details = ref_of(snap, "button", "Details")
    assert s.ok("click", details)["result"]["element"] == {"expanded": True}
    assert s.ok("click", details)["result"]["element"] == {"expanded": False}
    assert s.ok("click", ref_of(snap, "checkbox", "Agree"))["result"]["element"] == {
        "checked": True}
    rerender = s.ok("click", ref_of(snap, "button", "Re-render me"))["result"]
    assert rerender["element"] == {"removed": True}
    assert s("eval", "document.querySelectorAll('#rerender').length").value == 1


_SNAPSHOT_LINE = re.compile(
    r'^\s*- (?P<role>[^\s":]+)(?: (?P<name>"(?:[^"\\\n]|\\.)*"))?(?P<states>(?: \[[^\]\n]*\])*)')


def find_ref(snapshot: str, role: str, name_pattern: str, nth: int = 0) -> str | None:
    """The ref an agent would pick from a snapshot's text alone: the `nth` node (in
    document order; -1 the last) that has a ref, whose role matches `role` whole and whose
    accessible name matches `name_pattern` (re.search: "^$" is unnamed, "" any name); None
    if there is none. Roles and names are read from the lines as rendered (`- role "name"
    [state] [ref=e7]: value`), so whatever the snapshot does not show cannot be found."""
    refs = []
    for line in snapshot.splitlines():
        match = _SNAPSHOT_LINE.match(line)
        if not match or not re.fullmatch(role, match["role"]):
            continue
        ref = re.search(r"\[ref=(\w+)\]", match["states"])
        name = json.loads(match["name"]) if match["name"] else ""
        if ref and re.search(name_pattern, name):
            refs.append(ref.group(1))
    return refs[nth] if -len(refs) <= nth < len(refs) else None
