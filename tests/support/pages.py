"""Reading snapshots the way an agent does, and scenarios shared by several tests."""

from __future__ import annotations

import re

from support.cli import Bsk


def ref_of(snapshot: str, role: str, name: str) -> str:
    """The ref of the node with this role and name in a snapshot's text."""
    match = re.search(rf'- {role} "{re.escape(name)}"[^\n]*\[ref=(\w+)\]', snapshot)
    assert match, f"no {role} {name!r} in:\n{snapshot}"
    return match.group(1)


def release(bsk: Bsk, site: str, *tags: str) -> None:
    """Ends counter.html's `gated(TAG)` calls: another session sets their keys on the
    origin (the holding session itself is busy, so it cannot)."""
    other = bsk.with_session("releaser")
    other.ok("session", "start", "releaser")
    try:
        other.ok("open", f"{site}/counter.html")
        other.ok("eval", ";".join(f"localStorage.setItem('release-{t}', '1')" for t in tags))
    finally:
        other.ok("session", "stop")


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


