"""Pointer tools and refs: click variants, covered/hidden/detached elements, hover, drag,
scroll, dialogs, new tabs, iframes (same-origin and out-of-process)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from support.cli import Bsk
from support.pages import clicks_report_the_state_they_left, ref_of
from support.wait import wait_until


@pytest.fixture
def lab(bsk: Bsk, site: str) -> tuple[Bsk, str]:
    bsk.ok("open", f"{site}/click.html")
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def hits(bsk: Bsk) -> list[dict[str, Any]]:
    return bsk("eval", "window.hits").value


def test_click_variants(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    bsk.ok("click", ref_of(snap, "button", "Plain"), "--modifiers", "Control+Shift")
    bsk.ok("dblclick", ref_of(snap, "button", "Double me"))
    bsk.ok("click", ref_of(snap, "button", "Right me"), "--button", "right")
    names = [(h["name"], h["ctrl"], h["shift"]) for h in hits(bsk)]
    assert names == [("plain", True, True), ("dbl", False, False), ("context", False, False)]


def test_a_click_reaches_the_page_as_a_user_s_would(lab: tuple[Bsk, str]) -> None:
    # The press goes out before the move is answered: the page must still see the move
    # first, at the same point, then press, release and click, on the element.
    bsk, snap = lab
    bsk.ok("eval", "window.seen = []; for (const t of ['mousemove', 'mouseover', "
                   "'mousedown', 'mouseup', 'click']) document.addEventListener(t, e => "
                   "seen.push([t, e.target.textContent, e.clientX, e.clientY]), true)")
    bsk.ok("click", ref_of(snap, "button", "Plain"))
    seen = [e for e in bsk("eval", "window.seen").value if e[1] == "Plain"]
    kinds = [e[0] for e in seen]
    assert kinds.index("mousemove") < kinds.index("mousedown") < kinds.index("mouseup") \
        < kinds.index("click"), kinds
    assert kinds.count("click") == 1
    assert len({(x, y) for _, _, x, y in seen}) == 1  # all at one point


def test_clicks_report_the_state_they_left(bsk: Bsk, site: str) -> None:
    clicks_report_the_state_they_left(bsk, site)


def test_click_far_element_scrolls_it_into_view(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    result = bsk.ok("click", ref_of(snap, "button", "Far away"))
    assert result["dispatched"] == "yes"
    assert [h["name"] for h in hits(bsk)] == ["far"]


def test_covered_hidden_and_zero_size_fail_without_dispatch(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    covered = bsk("click", ref_of(snap, "button", "Covered"))
    assert covered.code == 11 and covered.json["dispatched"] == "no"
    details = covered.json["error"]["details"]
    assert details["reason"] == "covered" and "overlay" in details["covered_by"]
    assert "Cookie banner" in details["covered_by"]
    # Hidden buttons are not in the accessibility tree; bind refs to them through a
    # visible snapshot, then hide them.
    zero = bsk("eval", "document.querySelector('#zero').getBoundingClientRect().width")
    assert zero.value == 0
    bsk.ok("eval", "document.querySelector('#plain').style.display = 'none'")
    hidden = bsk("click", ref_of(snap, "button", "Plain"))
    assert hidden.code == 11 and hidden.json["error"]["details"]["reason"] == "not_visible"
    assert hidden.json["dispatched"] == "no"
    assert hits(bsk) == []


def test_detached_element_is_stale(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    ref = ref_of(snap, "button", "Remove me later")
    bsk.ok("eval", "document.querySelector('#remove').remove()")
    r = bsk("click", ref)
    assert r.code == 4 and r.json["error"]["code"] == "stale_ref"
    assert r.json["dispatched"] == "no"


def test_stale_after_reload_and_ref_from_another_tab(lab: tuple[Bsk, str], site: str) -> None:
    bsk, snap = lab
    plain = ref_of(snap, "button", "Plain")
    bsk.ok("reload")
    assert bsk("click", plain).json["error"]["code"] == "stale_ref"
    fresh = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Plain")
    bsk.ok("tab", "new", f"{site}/counter.html")
    other_tab = bsk("click", fresh)
    assert other_tab.code == 4 and other_tab.json["error"]["code"] == "ref_not_found"
    assert "t1" in other_tab.json["error"]["hint"]
    # The first tab's refs survive a snapshot of the second tab.
    bsk.ok("snapshot")
    bsk.ok("tab", "select", "t1")
    bsk.ok("click", fresh)
    assert [h["name"] for h in hits(bsk)] == ["plain"]


def test_hover_reveals_menu_and_is_kept(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    assert "Settings" not in snap
    bsk.ok("hover", ref_of(snap, "button", "Menu"))
    after = bsk.ok("snapshot")["result"]["snapshot"]
    assert 'link "Settings"' in after
    assert bsk("eval", "document.querySelector('#hover-zone').matches(':hover')").value is True


def test_drag_and_drop(lab: tuple[Bsk, str]) -> None:
    bsk, _ = lab
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    assert "Card" in snap
    # The slots are plain divs; give them refs through roles.
    bsk.ok("eval", "for (const id of ['drag-src', 'drop']) "
           "document.getElementById(id).setAttribute('role', 'button')")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    result = bsk.ok("drag", ref_of(snap, "button", "Card"), ref_of(snap, "button", "Drop here"))
    assert result["status"] == "completed"
    assert "dropped:card" in [h["name"] for h in hits(bsk)]


def test_scroll_page_element_and_into_view(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    page = bsk.ok("scroll", "--dy", "400")["result"]
    assert page["position"]["y"] >= 300
    box = bsk.ok("scroll", ref_of(snap, "region", "Scroll box"), "--dy", "300")["result"]
    assert box["position"]["y"] >= 200
    far = ref_of(snap, "button", "Far away")
    bsk.ok("scroll", far, "--into-view")
    top = bsk("eval", "document.querySelector('#far').getBoundingClientRect().top").value
    assert 0 <= top < bsk("eval", "innerHeight").value
    missing = bsk("scroll")
    assert missing.code == 2 and missing.json["error"]["code"] == "invalid_params"
    assert box["position"]["of"] == "element" and box["position"]["moved"] is True


def test_scrolling_over_a_cell_reports_the_grid_that_moved(bsk: Bsk, site: str) -> None:
    """The wheel over a cell scrolls the grid's viewport around it, not the cell: the
    answer gives the viewport's position and names it, as a user sees the rows move."""
    bsk.ok("open", f"{site}/scroll_grid.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    cell = ref_of(snap, "button", "Order 1")
    moved = bsk.ok("scroll", cell, "--dy", "120")["result"]["position"]
    top = bsk("eval", "document.getElementById('viewport').scrollTop").value
    assert top > 0 and bsk("eval", "scrollY").value == 0
    assert moved["of"] == "ancestor" and moved["moved"] is True, moved
    assert (moved["y"], moved["max_y"]) == (top, 30 * 40 - 200), moved
    assert "role=grid" in moved["element"]
    text = bsk("scroll", cell, "--dy", "40", as_json=False).stdout
    assert "around it now at x=0, y=" in text and f"y={top}," not in text, text


def test_dialogs_are_reported_and_never_hang(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    opened = bsk.ok("--timeout", "10", "click", ref_of(snap, "button", "Alert"))
    assert opened["status"] == "completed"
    assert opened["result"]["dialog"]["type"] == "alert"
    assert opened["result"]["dialog"]["message"] == "Saved!"
    blocked = bsk("eval", "1 + 1")
    assert blocked.code == 11 and blocked.json["error"]["details"]["reason"] == "dialog_open"
    assert blocked.json["dispatched"] == "no"
    assert bsk.ok("dialog", "accept")["result"]["accepted"] is True
    assert [h["name"] for h in hits(bsk)] == ["after-alert"]

    assert bsk.ok("click", ref_of(snap, "button", "Confirm"))["result"]["dialog"]["type"] == (
        "confirm")
    bsk.ok("dialog", "dismiss")
    bsk.ok("click", ref_of(snap, "button", "Prompt"))
    bsk.ok("dialog", "accept", "Ada")
    assert [h["name"] for h in hits(bsk)][1:] == ["confirm:false", "prompt:Ada"]
    none = bsk("dialog", "accept")
    assert none.code == 11 and none.json["error"]["details"]["reason"] == "no_dialog"


def test_clicks_that_open_tabs_report_them(lab: tuple[Bsk, str]) -> None:
    bsk, snap = lab
    blank = bsk.ok("click", ref_of(snap, "link", "Open in new tab"))["result"]
    assert blank["new_tabs"] == ["t2"]
    popup = bsk.ok("click", ref_of(snap, "button", "Pop up"))["result"]
    assert popup["new_tabs"] == ["t3"]
    tabs = {t["tab_id"]: t for t in bsk.ok("tab", "list")["result"]["tabs"]}
    assert tabs["t1"]["current"] and set(tabs) == {"t1", "t2", "t3"}
    bsk.ok("tab", "select", "t2")
    assert bsk("eval", "document.title").value == "Other"


def test_a_tab_the_page_opened_shows_its_pages_title(lab: tuple[Bsk, str]) -> None:
    """Chromium sends no event as a document sets its title: a tab opened by
    window.open lists its page's title, as the snapshot header shows it, not its URL."""
    bsk, snap = lab
    [tab] = bsk.ok("click", ref_of(snap, "button", "Pop up"))["result"]["new_tabs"]
    selected = bsk.ok("tab", "select", tab)["result"]
    bsk.ok("wait", "--text", "Other page")  # its document is in
    listed = {t["tab_id"]: t for t in bsk.ok("tab", "list")["result"]["tabs"]}
    assert listed[tab]["title"] == "Other", listed
    assert listed["t1"]["title"] == "Click lab"
    assert bsk.ok("tab", "select", tab)["result"]["title"] == "Other", selected
    assert bsk.text("snapshot").splitlines()[0].endswith(" · Other")


def test_iframes_same_origin_and_out_of_process(bsk: Bsk, site: str, cross_site: str) -> None:
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/frames.html?cross={port}")
    snap = ""
    for _ in range(50):  # both frames load after the page; snapshot until both are in
        snap = bsk.ok("snapshot")["result"]["snapshot"]
        if snap.count('button "Inner button"') == 2:
            break
    refs = re.findall(r'button "Inner button" \[ref=(\w+)\]', snap)
    assert len(refs) == 2, snap
    assert all(re.fullmatch(r"f\d+e\d+", r) for r in refs), refs
    for ref in refs:
        bsk.ok("click", ref)
    same = bsk("eval", "document.querySelector('#same').contentWindow.clicked").value
    assert same == 1
    after = bsk.ok("snapshot")["result"]["snapshot"]
    assert after.count('button "Inner clicked 1"') == 2, after


def test_snapshot_options(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/big-table.html")
    full = bsk.ok("snapshot")["result"]
    assert "Customer 42" in full["snapshot"]
    interactive = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    assert 'searchbox "Filter orders"' in interactive and 'button "Export"' in interactive
    assert "Customer" not in interactive
    assert len(interactive) * 2 <= len(full["snapshot"])
    cut = bsk.ok("snapshot", "--max-tokens", "200")["result"]
    assert len(cut["snapshot"]) < 1200 and cut["truncated"]["lines_cut"] > 1000
    assert "--max-tokens 200" in cut["snapshot"]
    heading = ref_of(full["snapshot"], "heading", "Orders")
    sub = bsk.ok("snapshot", "--ref", heading)["result"]["snapshot"]
    assert sub.startswith('- heading "Orders"') and "Customer" not in sub
    tree = bsk.ok("snapshot", "--interactive")["result"]
    assert "tree" in tree  # the CLI's --json asks for the structured tree
    roles = {n["role"] for n in tree["tree"]}
    assert {"searchbox", "button"} <= roles


def test_a_click_waits_for_a_sliding_element_to_come_to_rest(bsk: Bsk, site: str) -> None:
    # A panel slides in for half a second and ignores a press until it stops (as a
    # Bootstrap modal does): the click lands once the button's box stopped moving.
    bsk.ok("open", f"{site}/moving.html")
    bsk.ok("click", ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Open panel"))
    bsk.ok("click", ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Save"))
    assert bsk("eval", "window.saved").value == "at rest"


def test_scroll_over_a_row_the_list_recycles_completes(bsk: Bsk, site: str) -> None:
    # The wheel turns over a row of a virtualized list, which draws new rows: the scroll
    # happened, and the answer says the row went (as a click's does), not that it failed.
    bsk.ok("open", f"{site}/recycle.html")
    row = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "clickable", "Row 0")
    scrolled = bsk.ok("scroll", row, "--dy", "400")["result"]  # completes, never failed
    # The list redraws on its scroll event: the row is gone by the time the answer reads
    # it (`element.removed`), or just after (the effects report it gone).
    gone = [e.get("ref") for e in scrolled.get("effects", {}).get("dom", {}).get("gone", [])]
    assert scrolled.get("element") == {"removed": True} or row in gone, scrolled
    wait_until(lambda: bsk("eval", "document.getElementById('list').scrollTop").value == 400,
               10, "the list to be scrolled by 400 px")
    assert "Row 10" in bsk.ok("snapshot")["result"]["snapshot"]


def test_a_web_components_button_is_not_covered_by_its_own_label(bsk: Bsk, site: str) -> None:
    """Shoelace's sl-button: the slotted label is hit as the host, which is the button too."""
    bsk.ok("open", f"{site}/shadow_button.html")
    ref = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Open Dialog")
    bsk.ok("click", ref)
    assert bsk("eval", "window.clicks").value == 1
