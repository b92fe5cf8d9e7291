"""Reach: on pages built like web apps (tests/pages/reach_*.html), every element a person
could act on has a ref in `snapshot --interactive`, and locators reach the same elements;
a locator that matches nothing or several elements sends nothing. Also what a snapshot
must show faithfully: whole values, one line per sentence, link targets, placeholders,
focus, colours, canvas, header roles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.cli import Bsk
from support.pages import ref_of


def interactive(bsk: Bsk) -> str:
    return str(bsk.ok("snapshot", "--interactive")["result"]["snapshot"])


def full(bsk: Bsk) -> str:
    return str(bsk.ok("snapshot")["result"]["snapshot"])


def refs_of(snapshot: str, role: str, name_part: str) -> list[str]:
    """Refs of the nodes with this role whose name contains name_part, in order."""
    return re.findall(rf'- {role} "[^"\n]*{re.escape(name_part)}[^"\n]*"[^\n]*\[ref=(\w+)\]',
                      snapshot)


def test_inbox_rows_and_their_icons_have_refs(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_inbox.html")
    snap = interactive(bsk)
    # Each row is a div with a listener and a pointer cursor; its icons are spans with
    # listeners of their own: all of them get refs, nested as on the page.
    assert len(refs_of(snap, "clickable", "Star")) == 3, snap
    assert len(refs_of(snap, "clickable", "Delete")) == 3, snap
    bsk.ok("click", refs_of(snap, "clickable", "Star")[0])
    after = full(bsk)
    assert refs_of(after, "clickable", "Starred"), after  # Alice's star, toggled
    assert "No message open" in after  # the star did not open the row
    bsk.ok("click", refs_of(snap, "clickable", "Quarterly report")[0])
    assert "Reading: Quarterly report" in full(bsk)
    bsk.ok("click", refs_of(snap, "clickable", "Delete")[2])
    assert "Re: the offsite" not in full(bsk)
    assert bsk("eval", "events").value == ["star:Lunch tomorrow?", "open:Quarterly report",
                                           "delete:Re: the offsite"]


def test_tree_of_spans_without_a_ref_for_the_delegating_list(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_tree.html")
    snap = full(bsk)
    # The spans have a cursor; the <ul> has the one listener for all of them: it is a
    # wrapper of refs, not something to click itself.
    assert re.search(r"^- list$", snap, re.M), snap
    bsk.ok("click", ref_of(interactive(bsk), "clickable", "Documents"))
    snap = interactive(bsk)
    bsk.ok("click", ref_of(snap, "clickable", "Budget.xlsx"))
    assert re.search(r"- status\n\s+- text: Budget.xlsx", full(bsk))


def test_date_picker_links_without_href(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_datepicker.html")
    snap = interactive(bsk)
    # <a> without href and with a listener only (no cursor, no tabindex): still a link.
    bsk.ok("click", ref_of(snap, "link", "\u203a"))
    snap = full(bsk)
    assert "April 2026" in snap
    bsk.ok("click", ref_of(snap, "clickable", "15"))
    assert re.search(r'- textbox "Date" \[readonly\][^\n]*: 2026-04-15', full(bsk))


def test_sortable_list_drag_one_down_and_one_up(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_sortable.html")
    snap = interactive(bsk)
    assert "[draggable]" in snap
    bsk.ok("drag", ref_of(snap, "listitem", "Apples"), ref_of(snap, "listitem", "Cheese"))
    assert "Bread, Cheese, Apples, Dates" in full(bsk)
    bsk.ok("drag", ref_of(snap, "listitem", "Dates"), ref_of(snap, "listitem", "Bread"))
    assert "Dates, Bread, Cheese, Apples" in full(bsk)


def test_custom_slider(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_slider.html")
    slider = ref_of(interactive(bsk), "slider", "Volume")
    bsk.ok("click", slider)
    bsk.ok("press", "ArrowRight")
    bsk.ok("press", "ArrowRight")
    assert re.search(r'- slider "Volume" [^\n]*\[ref=\w+\]: 52', full(bsk))


def test_canvas_drawing_app(bsk: Bsk, site: str, tmp_path: Path) -> None:
    bsk.ok("open", f"{site}/reach_canvas.html")
    pad = ref_of(interactive(bsk), "canvas", "Drawing pad")
    bsk.ok("click", pad)
    assert bsk("eval", "dots").value == [[151, 100]]  # its middle: 300 x 200, 1px border
    shot = tmp_path / "pad.png"
    bsk.ok("screenshot", str(shot), "--ref", pad)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_dialog_opening_div_and_disabled_button(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_dialog.html")
    snap = interactive(bsk)
    assert re.search(r'- button "Delete project" \[disabled\] \[ref=\w+\]', snap), snap
    bsk.ok("click", ref_of(snap, "clickable", "+ New project"))
    snap = interactive(bsk)
    bsk.ok("fill", ref_of(snap, "textbox", "Project name"), "Apollo")
    bsk.ok("click", ref_of(snap, "button", "Create"))
    assert re.search(r"- listitem\n\s+- text: Apollo", full(bsk))


def test_snapshot_fidelity(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_fidelity.html")
    snap = full(bsk)
    essay = " ".join(f"word{i}" for i in range(120)) + " THE-END"
    assert '- textbox "Essay" [ref=' in snap and essay in snap  # whole, no "…"
    assert "- text: The quick brown fox jumps over the lazy dog." in snap  # one line
    assert re.search(r'- textbox "Search mail" \[ref=\w+\]$', snap, re.M)  # name = placeholder
    assert re.search(r'- textbox "Name" \[focused\] \[placeholder="Jane Doe"\] \[ref=', snap)
    assert re.search(r'- button "Colour" \[ref=\w+\]: #ff8800', snap)
    assert re.search(r'- link "Other page" \[url=/other.html\?tab=2\] \[ref=', snap)
    assert re.search(r'- link "External docs" \[url=example.com/docs/start\] \[ref=', snap)
    assert re.search(r'- columnheader "Name"\n\s+- columnheader "Score"', snap), snap
    assert re.search(r'- rowheader "Alice"\n\s+- cell "9"', snap), snap
    # Whole in --ref and in the JSON tree too; cut only by --max-tokens, saying so.
    essay_ref = ref_of(snap, "textbox", "Essay")
    assert essay in bsk.ok("snapshot", "--ref", essay_ref)["result"]["snapshot"]
    tree = bsk.ok("snapshot", "--tree")["result"]["tree"]
    values = [n.get("value") for n in tree]
    assert essay in values
    cut = bsk.ok("snapshot", "--max-tokens", "50")["result"]
    assert "cut by --max-tokens 50" in cut["snapshot"] and cut["truncated"]["lines_cut"] > 0


def test_locators_reach_what_refs_do(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_checkout.html")
    done = bsk.ok("click", "css=#save")
    assert done["result"]["located"]["ref"] and bsk("eval", "window.saved").value == 1
    # Into the payment iframe: the chain names the frame, then the button in it.
    pay = bsk.ok("click", 'css=iframe#pay >> role=button[name="Pay"]')
    assert pay["result"]["located"]["ref"].startswith("f")
    assert "- text: Paid" in full(bsk)
    bsk.ok("fill", "css=#pay >> role=textbox[name='Card']", "4242")
    assert re.search(r'- textbox "Card" [^\n]*: 4242', full(bsk))
    bsk.ok("click", "text=Save cart")  # exact text
    bsk.ok("click", "text=save c")  # else a substring, any case
    assert bsk("eval", "window.saved").value == 3

    bsk.ok("open", f"{site}/reach_inbox.html")
    bsk.ok("click", "text=Quarterly report")
    assert "Reading: Quarterly report" in full(bsk)
    part = bsk.ok("snapshot", "--ref", "css=#list")["result"]  # any target param takes them
    assert "Quarterly report" in part["snapshot"] and "Inbox" not in part["snapshot"]
    bsk.ok("open", f"{site}/reach_sortable.html")
    bsk.ok("drag", "text=Dates", 'role=listitem[name="Apples"]')
    assert "Dates, Apples, Bread, Cheese" in full(bsk)


def test_each_page_solved_through_locators(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_tree.html")
    bsk.ok("click", "text=Pictures")
    bsk.ok("click", 'role=clickable[name="Beach.jpg"]')
    assert re.search(r"- status\n\s+- text: Beach.jpg", full(bsk))
    bsk.ok("open", f"{site}/reach_datepicker.html")
    bsk.ok("click", "css=a.prev")
    bsk.ok("click", "text=28")
    assert re.search(r'- textbox "Date" [^\n]*: 2026-02-28', full(bsk))
    bsk.ok("open", f"{site}/reach_slider.html")
    bsk.ok("click", 'role=slider[name="Volume"]')
    bsk.ok("press", "PageDown")
    assert re.search(r'- slider "Volume" [^\n]*: 40', full(bsk))
    bsk.ok("open", f"{site}/reach_canvas.html")
    bsk.ok("click", "css=#pad")
    assert bsk("eval", "dots.length").value == 1
    bsk.ok("open", f"{site}/reach_dialog.html")
    bsk.ok("click", "text=+ New project")
    bsk.ok("fill", "css=dialog input", "Hermes")
    bsk.ok("click", "role=button[name=\"Create\"]")
    assert re.search(r"- listitem\n\s+- text: Hermes", full(bsk))
    bsk.ok("open", f"{site}/reach_fidelity.html")
    essay = bsk.ok("snapshot", "--ref", 'role=textbox[name="Essay"]')["result"]["snapshot"]
    assert essay.endswith("THE-END")


def test_ambiguous_or_missing_locators_send_nothing(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/reach_inbox.html")
    many = bsk("click", 'role=clickable[name="Star"]')
    assert many.code == 2, many.stdout
    answer = many.json
    assert answer["error"]["code"] == "invalid_params" and answer["dispatched"] == "no"
    details = answer["error"]["details"]
    assert details["field"] == "ref" and details["count"] == 3
    assert [m["name"] for m in details["matches"]] == ["Star"] * 3
    assert all(m["ref"] in answer["error"]["message"] for m in details["matches"])
    none = bsk("click", "text=No such message")
    assert none.code == 4 and none.json["error"]["code"] == "ref_not_found"
    assert none.json["dispatched"] == "no"
    assert bsk("eval", "events").value == []  # nothing reached the page
    # A candidate's ref works as any ref.
    bsk.ok("click", details["matches"][1]["ref"])
    assert bsk("eval", "events").value == ["star:Quarterly report"]


@pytest.mark.parametrize(("target", "code", "says"), [
    ("#list", 4, "`css=#list`"),
    (".row", 4, "`css=.row`"),
    ("Quarterly report", 4, "`text=Quarterly report`"),
    ('role=button[name="Pay]', 2, 'role=ROLE[name="NAME"]'),  # a quote left open
    ("css=##", 2, "not a valid selector"),
    ("css=h1 >> text=Inbox", 2, "not a loaded iframe"),
    ("frame=x", 4, "`text=frame=x`"),
])
def test_bad_targets_say_what_to_do(bsk: Bsk, site: str, target: str, code: int,
                                    says: str) -> None:
    bsk.ok("open", f"{site}/reach_inbox.html")
    r = bsk("click", target)
    assert r.code == code, r.stdout
    error = r.json["error"]
    assert says in error["message"] + error["hint"], error
    assert r.json["dispatched"] == "no"
    assert bsk("eval", "events").value == []


def test_many_snapshots_leave_the_page_alive(bsk: Bsk, site: str) -> None:
    # Listeners are read at every snapshot; one way of reading them (pierce) crashed
    # Chromium's renderer after ~17 snapshots of the same document.
    bsk.ok("open", f"{site}/reach_inbox.html")
    for _ in range(25):
        snap = interactive(bsk)
    assert len(refs_of(snap, "clickable", "Star")) == 3
    bsk.ok("click", "text=Quarterly report")
    assert bsk("eval", "events").value == ["open:Quarterly report"]


def test_a_quoted_text_locator_is_the_whole_text(bsk: Bsk, site: str) -> None:
    """`text="…"` is Playwright's exact form (the whole text, case and all); it searched
    for the quotes themselves. Unquoted stays a search, any case."""
    bsk.ok("open", f"{site}/counter.html")
    r = bsk("click", 'text="Add"')  # "Add one" is not "Add"
    assert r.code == 4 and 'nothing visible matches text="Add"' in r.json["error"]["message"]
    assert bsk("eval", "window.count").value is None
    bsk.ok("click", 'text="Add one"')
    bsk.ok("click", "text=add")
    assert bsk("eval", "window.count").value == 2
