"""What an action did to the page (`result.effects`, docs/outcomes.md "Effects"), against
real Chromium. Each report is checked against what the page itself recorded: its own
MutationObserver, fetch and error log (`pageLog`), read back with eval."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from support.cli import Bsk, kill_daemon_hard
from support.pages import ref_of


@pytest.fixture
def page(bsk: Bsk, site: str, cross_site: str) -> tuple[Bsk, str]:
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/effects.html?cross={port}")
    bsk.ok("wait", "--text", "Send me news")  # the cross-origin frame is in
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def page_log(bsk: Bsk, frame: str | None = None) -> dict[str, Any]:
    args = ("--frame", frame) if frame else ()
    return bsk("eval", "pageLog", *args).value


def mutations_since(bsk: Bsk, before: dict[str, Any]) -> list[dict[str, Any]]:
    return page_log(bsk)["mutations"][len(before["mutations"]):]


def test_a_dead_button_changed_nothing_and_says_so(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    dead = ref_of(snap, "button", "Dead button")
    before = page_log(bsk)
    answer = bsk.ok("click", dead)
    assert answer["status"] == "completed"  # an observation, never a verdict
    effects = answer["result"]["effects"]
    assert effects["none"] is True and effects["settled"] is True, effects
    assert mutations_since(bsk, before) == []  # the page agrees: nothing happened
    text = bsk("click", dead, as_json=False).stdout.strip()
    assert text == (f"clicked {dead} — nothing on the page changed at once "
                    "(--settle MS waits for a later change)")


def test_a_throwing_handler_changed_nothing_but_its_error_is_named(
        page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    before = page_log(bsk)
    answer = bsk.ok("click", ref_of(snap, "button", "Broken button"))
    assert answer["status"] == "completed"
    effects = answer["result"]["effects"]
    assert effects["none"] is True, effects
    assert any("the handler is broken" in e for e in effects["page_errors"])
    after = page_log(bsk)
    assert after["errors"][len(before["errors"]):] == ["Uncaught Error: the handler is broken"]
    assert mutations_since(bsk, before) == []


def test_a_text_change_is_named(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    before = page_log(bsk)
    rename = ref_of(snap, "button", "Rename")
    r = bsk("click", rename, as_json=False)
    assert r.code == 0 and r.stdout.strip() == (
        f'clicked {rename} → "Renamed once" appeared; "Nothing yet" went away')
    added = [m["added"] for m in mutations_since(bsk, before) if m["type"] == "childList"]
    assert added == [["Renamed once"]]
    # The same text again: the page re-rendered it, nothing a reader sees changed
    again = bsk.ok("click", rename)["result"]["effects"]
    assert "text_appeared" not in again.get("dom", {}) and again["none"] is False


def test_page_text_is_quoted_as_the_page_wrote_it(page: tuple[Bsk, str]) -> None:
    """Quotes in the page's text are escaped, not rewritten: the quoted text read back as a
    JSON string is the page's own, and `bsk wait --text` finds it."""
    bsk, _ = page
    bsk.ok("eval", """const b = document.createElement("button"); b.textContent = "Quote";
        b.onclick = () => {
          document.getElementById("status").textContent = 'Size: 5" screen, it\\'s "new"';
          document.getElementById("answer").textContent = '{"a":1}'; };
        document.body.append(b)""")
    text = bsk("click", "text=Quote", as_json=False).stdout
    quoted = [json.loads(q) for q in re.findall(r'("(?:[^"\\]|\\.)*") appeared', text)]
    assert quoted == ['Size: 5" screen, it\'s "new"', '{"a":1}'], text
    for copied in quoted:
        assert bsk.ok("wait", "--text", copied)["status"] == "completed"


def test_a_fetch_and_its_answer_are_both_reported(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    order = ref_of(snap, "button", "Place order")
    effects = bsk.ok("click", order)["result"]["effects"]
    assert effects["settled"] is True
    [request] = effects["requests"]
    assert request["method"] == "POST" and request["url"].endswith("/api/order")
    assert request["status"] == 201
    assert effects["dom"]["text_appeared"] == ["Order #1 placed"]
    log = page_log(bsk)
    assert log["fetches"] == [{"method": "POST", "url": "/api/order", "status": 201}]
    assert bsk("eval", "answer.textContent").value == "Order #1 placed"
    # The text line says it in one line
    text = bsk("click", order, as_json=False).stdout.strip()
    assert text.startswith(f"clicked {order} → ") and "POST /api/order 201" in text


def test_a_menu_that_opens_names_its_items_with_refs_that_act(
        page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    button = ref_of(snap, "button", "Actions")
    before = page_log(bsk)
    effects = bsk.ok("click", button)["result"]["effects"]
    dom = effects["dom"]
    items = {e["name"]: e for e in dom["appeared"] if e["role"] == "menuitem"}
    assert set(items) == {"Edit", "Delete"} and all(e.get("ref") for e in items.values())
    assert {"role": "menu", "name": "Actions"} in dom["appeared"]
    assert dom["states"] == [{"ref": button, "role": "button", "name": "Actions",
                              "changed": {"expanded": [False, True]}}]
    seen = mutations_since(bsk, before)
    assert {"type": "attributes", "attribute": "aria-expanded", "added": [],
            "removed": 0} in seen
    assert [m["added"] for m in seen if m["added"]] == [["EditDelete"]]
    # The refs it gave act without a new snapshot, and a snapshot keeps them
    clicked = bsk.ok("click", items["Delete"]["ref"])
    assert clicked["status"] == "completed"
    again = bsk.ok("snapshot")["result"]["snapshot"]
    assert ref_of(again, "menuitem", "Edit") == items["Edit"]["ref"]
    # Closing it: the items went away, the state went back
    closed = bsk.ok("click", button)["result"]["effects"]["dom"]
    assert {e["name"] for e in closed["gone"] if e["role"] == "menuitem"} == {"Edit", "Delete"}
    assert closed["states"][0]["changed"] == {"expanded": [True, False]}
    # Refs given this way are counted: a new document's refs never reuse them
    bsk.ok("reload")
    fresh = bsk.ok("snapshot")["result"]["snapshot"]
    assert bsk.ok("click", ref_of(fresh, "button", "Dead button"))["status"] == "completed"


def test_a_field_that_reformats_what_is_typed_reports_the_value(
        page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    phone = ref_of(snap, "textbox", "Phone")
    effects = bsk.ok("fill", phone, "5551234567")["result"]["effects"]
    assert effects["none"] is False
    assert effects["dom"]["states"] == [{"ref": phone, "role": "textbox", "name": "Phone",
                                         "changed": {"value": ["", "(555) 123-4567"]}}]
    assert bsk("eval", "document.querySelector('#phone').value").value == "(555) 123-4567"
    # Typing into a field that keeps what is typed: that is the input itself, not an effect
    plain = ref_of(snap, "textbox", "Plain")
    bsk.ok("click", plain)
    before = page_log(bsk)
    typed = bsk.ok("type", "hello")["result"]
    assert typed["value"] == "hello" and typed["effects"]["none"] is True, typed
    assert mutations_since(bsk, before) == []


def test_a_checkbox_in_a_cross_origin_iframe(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    box = ref_of(snap, "checkbox", "Send me news")
    assert box.startswith("f")
    frame = ref_of(snap, "iframe", "preferences")
    assert bsk("eval", "location.origin", "--frame", frame).value.startswith(
        "http://localhost:")  # another site: an out-of-process iframe
    before = page_log(bsk, frame)
    effects = bsk.ok("check", box)["result"]["effects"]
    assert effects["dom"]["states"] == [{"ref": box, "role": "checkbox",
                                         "name": "Send me news",
                                         "changed": {"checked": [False, True]}}]
    assert effects["dom"]["text_appeared"] == ["Subscribed"]
    after = page_log(bsk, frame)
    assert after["changes"] == [True]
    added = [m["added"] for m in after["mutations"][len(before["mutations"]):] if m["added"]]
    assert added == [["Subscribed"]]


def test_a_dialog_blocks_the_watch_and_its_answer_reports_what_followed(
        page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    opened = bsk.ok("click", ref_of(snap, "button", "Delete all"))["result"]
    assert opened["dialog"]["type"] == "confirm"
    effects = opened["effects"]
    assert effects["dialog"] == {"type": "confirm", "message": "Delete everything?"}
    assert effects["none"] is False and effects["unobserved"] == ["a dialog blocks the page"]
    accepted = bsk.ok("dialog", "accept")["result"]["effects"]
    assert accepted["dom"]["text_appeared"] == ["Deleted"], accepted
    assert accepted["dom"]["text_gone"] == ["Nothing yet"]
    assert bsk("eval", "document.getElementById('status').textContent").value == "Deleted"


def test_the_watch_is_bounded_and_settle_sets_it(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    dead = ref_of(snap, "button", "Dead button")
    assert "effects" not in bsk.ok("click", dead, "--settle", "0")["result"]
    longer = bsk.ok("click", dead, "--settle", "400")["result"]["effects"]
    assert longer["none"] is True and longer["watched_ms"] >= 400
    # A page that keeps changing: the watch ends at the bound, saying it did not settle
    animated = bsk.ok("click", ref_of(snap, "button", "Animate forever"))["result"]["effects"]
    assert animated["settled"] is False and animated["none"] is False
    assert 1000 <= animated["watched_ms"] < 2500, animated
    # ... and never past the call's own deadline
    short = bsk("click", dead, "--timeout", "0.8")
    assert short.code == 0, short.stdout
    assert short.json["result"]["effects"]["watched_ms"] < 800
    bad = bsk("click", dead, "--settle", "-5")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "settle"


def test_settle_over_http_is_the_catalog_parameter(page: tuple[Bsk, str],
                                                   api: httpx.Client) -> None:
    bsk, snap = page
    url = f"/v1/sessions/{bsk.session}/tools/click"
    rename = ref_of(snap, "button", "Rename")
    watched = api.post(url, json={"ref": rename}).json()
    assert watched["result"]["effects"]["dom"]["text_appeared"] == ["Renamed once"]
    assert "effects" not in api.post(url, json={"ref": rename, "settle": 0}).json()["result"]
    bad = api.post(url, json={"ref": rename, "settle": "soon"})
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "settle"


def test_a_form_posted_then_redirected_reports_the_post(bsk: Bsk, site: str) -> None:
    """The usual post-then-redirect form: the POST that did the work is listed (its 303),
    before the GET it led to — not only the page that followed."""
    bsk.ok("open", f"{site}/post_redirect.html")
    button = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Log in")
    effects = bsk.ok("click", button)["result"]["effects"]
    asked = [(r["method"], r["url"].rsplit("/", 1)[-1], r.get("status"))
             for r in effects["requests"]]
    assert asked[:2] == [("POST", "login", 303), ("GET", "counter.html", 200)], asked


def test_a_library_modal_is_named_once_its_transitions_end(bsk: Bsk, site: str) -> None:
    """Bootstrap's modal fades its backdrop in, then shows itself by a class word and
    slides in: the report waits out the transitions and names the dialog and its buttons,
    whose refs act at once; the stylesheet's inline icon (a data: URL) is no request."""
    bsk.ok("open", f"{site}/conformance/bootstrap-modal.html")
    launch = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Launch demo modal")
    effects = bsk.ok("click", launch)["result"]["effects"]
    appeared = {(e["role"], e["name"]): e["ref"] for e in effects["dom"]["appeared"]}
    assert ("dialog", "Modal title") in appeared, effects
    assert not [r for r in effects.get("requests", []) if r["url"].startswith("data:")]
    save = appeared[("button", "Save changes")]
    closed = bsk.ok("click", save)["result"]["effects"]
    assert ("dialog", "Modal title") in {(e["role"], e["name"]) for e in closed["dom"]["gone"]}
    assert bsk("eval", "window.saved === true && window.hidden === true").value is True


def test_a_menu_shown_by_a_class_word_appeared(bsk: Bsk, site: str) -> None:
    """Bootstrap's dropdown shows its menu by adding `show`: its items are named with
    refs, and the one picked through them is the page's choice."""
    bsk.ok("open", f"{site}/conformance/bootstrap-dropdown.html")
    toggle = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Dropdown button")
    effects = bsk.ok("click", toggle)["result"]["effects"]
    items = {e["name"]: e["ref"] for e in effects["dom"]["appeared"] if e["role"] == "button"}
    assert set(items) == {"Action", "Another action", "Something else here"}, effects
    bsk.ok("click", items["Another action"])
    assert bsk("eval", "window.chosen").value == "Another action"


def test_refs_a_page_holds_are_not_given_again_after_a_daemon_restart(
        bsk: Bsk, site: str) -> None:
    """A daemon killed and restarted counts refs from 1 again, but the page keeps the
    refs it gave: the modal that appears must not take the button's `e1` (it did, and
    `e1` then named the modal)."""
    bsk.ok("open", f"{site}/conformance/bootstrap-modal.html")
    launch = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Launch demo modal")
    kill_daemon_hard(bsk.home)
    again = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Launch demo modal")
    assert again == launch  # the same document: its refs stay
    appeared = bsk.ok("click", launch)["result"]["effects"]["dom"]["appeared"]
    assert launch not in {e.get("ref") for e in appeared}, appeared
    assert "Launch demo modal" in bsk.ok("html", launch)["result"]["html"]


def test_escape_on_a_focused_modal_that_closes_it_is_an_effect(bsk: Bsk, site: str) -> None:
    """Bootstrap's modal takes focus and closes on Escape: the key's target is the modal,
    not a field typed into, so its closing is reported, not taken as the key's echo."""
    bsk.ok("open", f"{site}/conformance/bootstrap-modal.html")
    launch = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Launch demo modal")
    bsk.ok("click", launch)
    effects = bsk.ok("press", "Escape")["result"]["effects"]
    assert effects["none"] is False, effects
    assert ("dialog", "Modal title") in {(e["role"], e.get("name"))
                                         for e in effects["dom"].get("gone", [])}, effects


def test_a_web_components_dialog_opening_and_closing_is_named(bsk: Bsk, site: str) -> None:
    """Shoelace's `<sl-dialog>` opens by its `open` attribute; its dialog role lives in
    its shadow root, and is named there: appeared, then gone."""
    bsk.ok("open", f"{site}/conformance/shoelace-dialog.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    opened = bsk.ok("click", ref_of(snap, "button", "Open Dialog"))["result"]["effects"]
    assert ("dialog", "Dialog") in {(e["role"], e.get("name"))
                                    for e in opened["dom"].get("appeared", [])}, opened
    done = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Done")
    closed = bsk.ok("click", done)["result"]["effects"]
    assert ("dialog", "Dialog") in {(e["role"], e.get("name"))
                                    for e in closed["dom"].get("gone", [])}, closed
    # It fades out in its shadow root, which the document's animations do not list: the
    # watch waits for that too, so what is said gone is gone (before, the next click
    # found the button still covered by the fading dialog).
    again = bsk.ok("click", ref_of(snap, "button", "Open Dialog"))["result"]["effects"]
    assert ("dialog", "Dialog") in {(e["role"], e.get("name"))
                                    for e in again["dom"].get("appeared", [])}, again


def test_a_select_changed_by_the_page_is_reported_by_what_it_shows(
        bsk: Bsk, site: str) -> None:
    """flatpickr keeps its month in a <select> whose option values are numbers (0-11):
    a change is told as the month a person sees, as the snapshot shows it — never the
    option's value ("1" → "2")."""
    bsk.ok("open", f"{site}/conformance/flatpickr.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    bsk.ok("click", ref_of(snap, "textbox", "Departure"))
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    month = ref_of(snap, "combobox", "Month")
    assert re.search(rf'combobox "Month" \[ref={month}\]: February', snap), snap
    effects = bsk.ok("click", ref_of(snap, "clickable", "flatpickr prev month"))["result"][
        "effects"]
    changed = [s["changed"] for s in effects["dom"]["states"] if s.get("ref") == month]
    assert changed == [{"value": ["February", "January"]}], effects


def test_the_option_picked_is_named_as_the_choice_shown(bsk: Bsk, site: str) -> None:
    """react-select closes its menu as the option is picked: the option "Vanilla" goes,
    and "Vanilla" is what the field and the app's own line show now. Before, the text was
    dropped as the gone option's name: the report said only that "none" went away."""
    bsk.ok("open", f"{site}/conformance/react-select.html")
    field = ref_of(bsk.ok("snapshot", "--interactive")["result"]["snapshot"], "combobox",
                   "Flavour")
    opened = bsk.ok("click", field)["result"]["effects"]
    options = {e["name"]: e["ref"] for e in opened["dom"]["appeared"] if e["role"] == "option"}
    picked = bsk.ok("click", options["Vanilla"])
    effects = picked["result"]["effects"]["dom"]
    assert "Vanilla" in effects["text_appeared"], effects
    assert "none" in effects["text_gone"], effects
    assert ("option", "Vanilla") in {(e["role"], e.get("name")) for e in effects["gone"]}
    assert bsk("eval", "document.querySelector('p').textContent").value == \
        "Your choice: Vanilla"


def test_a_flag_taken_away_is_off(bsk: Bsk, site: str) -> None:
    """Tom Select marks the option under the pointer with aria-selected="true" and drops
    the attribute from the one it leaves: that option's `selected` went to false, as the
    snapshot shows it (before: `true → null`)."""
    bsk.ok("open", f"{site}/conformance/tom-select.html")
    field = ref_of(bsk.ok("snapshot", "--interactive")["result"]["snapshot"], "combobox",
                   "States")
    bsk.ok("click", field)
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    options = {name: ref_of(snap, "option", name) for name in ("Alabama", "Texas")}
    states = bsk.ok("hover", options["Texas"])["result"]["effects"]["dom"]["states"]
    assert {s["ref"]: s["changed"] for s in states} == {
        options["Alabama"]: {"selected": [True, False]},
        options["Texas"]: {"selected": [False, True]}}, states
    assert bsk("eval", "document.querySelector('.ts-dropdown [aria-selected]')"
                       ".textContent").value == "Texas"


@pytest.mark.parametrize(("widget", "first", "onto"), [
    ("sortablejs", "item 1", "item 3"), ("jqueryui-sortable", "Item 1", "Item 3")])
def test_a_reordered_list_says_what_moved_and_where_it_is_now(
        bsk: Bsk, site: str, widget: str, first: str, onto: str) -> None:
    """A drag that reorders a list moves a node: before, the report was only "the DOM
    changed (5 attributes)", with a hint to wait for something more. Now it names the
    item and its place among the list's items, which the snapshot then shows."""
    bsk.ok("open", f"{site}/conformance/{widget}.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    item = ref_of(snap, "listitem", first)
    dragged = bsk.ok("drag", item, ref_of(snap, "listitem", onto))
    moved = dragged["result"]["effects"]["dom"]["moved_to"]
    assert [(e["role"], e["name"], e["ref"]) for e in moved] == [("listitem", first, item)]
    (at, of), = [e["position"] for e in moved]
    items = re.findall(r'- listitem "([^"]+)"', bsk.ok("snapshot")["result"]["snapshot"])
    assert of == len(items) and items[at - 1] == first and at > 1, (items, moved)
    text = bsk.text("drag", item, ref_of(snap, "listitem", items[0]))
    assert re.search(rf'moved: listitem "{first}" {item} \(now 1 of {of}\)', text), text


def test_a_grid_row_selected_by_its_cell_is_named(bsk: Bsk, site: str) -> None:
    """ag-grid selects the row of the cell clicked (aria-selected on the row, which has no
    ref): before, "the DOM changed (6 attributes)" and a hint to wait. Now the row is
    named with its state, and so is the row it leaves on the next click."""
    bsk.ok("open", f"{site}/conformance/ag-grid.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    effects = bsk.ok("click", ref_of(snap, "gridcell", "Make 2"))["result"]["effects"]
    assert effects["dom"]["states"] == [{"role": "row", "name": "Make 2 Model 2 1002",
                                         "held": False,
                                         "changed": {"selected": [False, True]}}], effects
    text = bsk.text("click", ref_of(snap, "gridcell", "Make 3"))
    assert ('row "Make 2 Model 2 1002" selected true → false; '
            'row "Make 3 Model 3 1003" selected false → true') in text, text
    assert bsk("eval", "gridApi.getSelectedRows().map(r => r.make)").value == ["Make 3"]
    # Sorting: the header's aria-sort is the change; the sort-order digit ag-grid writes
    # into a hidden span is nothing anyone saw (before: '"1" went away').
    price = bsk.ok("click", ref_of(snap, "clickable", "Price"))["result"]["effects"]["dom"]
    assert {"role": "columnheader", "name": "Price", "held": False,
            "changed": {"sort": ["none", "ascending"]}} in price["states"], price
    assert "text_gone" not in price and "text_appeared" not in price, price


def test_what_a_reopened_dropdown_empties_was_not_on_the_page(bsk: Bsk, site: str) -> None:
    """Select2 detaches its dropdown on close; on open it attaches it again and replaces
    the old options in it: those were not on the page before the click, so they did not
    go (before: 'gone: option "Alabama" e68, …' while "Alabama" showed)."""
    bsk.ok("open", f"{site}/conformance/select2.html")
    field = ref_of(bsk.ok("snapshot", "--interactive")["result"]["snapshot"], "combobox",
                   "Alabama")
    for _ in range(2):
        opened = bsk.ok("click", field)["result"]["effects"]["dom"]
        assert "gone" not in opened, opened
        assert ("option", "Alabama") in {(e["role"], e["name"]) for e in opened["appeared"]}
        closed = bsk.ok("press", "Escape")["result"]["effects"]["dom"]
        assert ("option", "Alabama") in {(e["role"], e["name"]) for e in closed["gone"]}
    assert bsk("eval", "document.querySelector('.select2-dropdown') === null").value is True


def test_bolding_words_is_no_text_that_appeared(bsk: Bsk, site: str) -> None:
    """Quill bolds the selected words by moving their text into a new <strong>: the
    words were there before, so they did not appear; the bold button's state is what
    changed."""
    bsk.ok("open", f"{site}/conformance/quill.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    bold = ref_of(snap, "button", "bold")
    editor = re.search(r"- textbox \[ref=(\w+)\]", snap)
    assert editor is not None, snap
    # Quill marks, in its closed heading picker, the item for the caret's line: nothing
    # a person sees went (before: `gone: button "Normal"`, the picker's own name).
    into = bsk.ok("click", editor.group(1))["result"]["effects"]
    assert "gone" not in into.get("dom", {}) and "text_gone" not in into.get("dom", {}), into
    assert bsk("eval", "document.querySelector('.ql-picker-item.ql-selected') !== null"
                       " && quill.hasFocus()").value is True
    bsk.ok("press", "Control+A")
    effects = bsk.ok("click", bold)["result"]["effects"]
    assert bsk("eval", "quill.getFormat(0, 12).bold").value is True
    assert "text_appeared" not in effects["dom"], effects
    assert [s["changed"] for s in effects["dom"]["states"] if s["ref"] == bold] == [
        {"pressed": [False, True]}], effects
    # Part of a line: Quill splits the text node and moves the word into a <strong>; the
    # text is where it was (before: '"Hello World! Second" appeared; "sentence."
    # appeared; "Hello World! Second sentence." went away').
    bsk.ok("click", bold)  # off again
    bsk.ok("press", "End")
    bsk.ok("type", " Second sentence.")
    bsk.ok("eval", "quill.setSelection(20, 9)")  # 'sentence.'
    part = bsk.ok("click", bold)["result"]["effects"]["dom"]
    assert bsk("eval", "document.querySelector('.ql-editor').innerHTML").value == \
        "<p>Hello World! Second <strong>sentence.</strong></p>"
    assert "text_appeared" not in part and "text_gone" not in part, part


def test_the_element_state_agrees_with_the_effects_and_the_snapshot(
        page: tuple[Bsk, str]) -> None:
    """A toggle that opens a frame after the click (tom-select does): `element now`
    and the effect both say what the next snapshot shows. (The next animation frame is
    within the reaction window the watch promises, base/effects.py REACTION_MS; a 30 ms
    timer, as this test once used, is caught only when the click's round trip happens to
    take the rest: a clean-clone CI once saw no effect.)"""
    bsk, _ = page
    bsk.ok("eval", """const b = document.createElement("button"); b.textContent = "Later";
        b.setAttribute("aria-expanded", "false");
        b.onclick = () => requestAnimationFrame(
            () => b.setAttribute("aria-expanded", "true"));
        document.body.append(b)""")
    result = bsk.ok("click", "text=Later")["result"]
    [state] = [s for s in result["effects"]["dom"]["states"] if s["ref"] == result["ref"]]
    assert state["changed"]["expanded"] == [False, True], result
    assert result["element"] == {"expanded": True}, result
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    assert f'button "Later" [expanded] [focused] [ref={result["ref"]}]' in snap


def test_a_select_fields_own_control_neither_appears_nor_goes(bsk: Bsk, site: str) -> None:
    """Shoelace's select opens and closes by its host's `open` attribute; its own
    combobox, shown before and after, is named neither appeared nor gone beside the list
    that did (a closing dialog, still fading out, is gone: test above)."""
    bsk.ok("open", f"{site}/conformance/shoelace-select.html")
    combobox = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "combobox", "Select one")
    effects = bsk.ok("click", combobox)["result"]["effects"]
    appeared = {(e["role"], e.get("ref")) for e in effects["dom"]["appeared"]}
    assert ("combobox", combobox) not in appeared, effects
    assert any(role == "listbox" for role, _ in appeared), effects
    option = next(e["ref"] for e in effects["dom"]["appeared"] if e["role"] == "option")
    picked = bsk.ok("click", option)["result"]["effects"]
    gone = {(e["role"], e.get("ref")) for e in picked["dom"].get("gone", [])}
    assert ("combobox", combobox) not in gone, picked  # still drawn, the same ref
    assert f'combobox "Select one" [expanded=false] [focused] [ref={combobox}]' in \
        bsk.ok("snapshot")["result"]["snapshot"]


def test_open_with_settle_sees_a_redirect_the_page_makes_after_its_load(
        bsk: Bsk, site: str) -> None:
    """`open` waits for the load it asked for; with `--settle MS` it also watches the page
    until it is quiet, so the page sending itself on 50 ms after its load is reported
    (before, `--settle` did nothing on `open`: "settled" after 40 ms, on the old URL)."""
    answer = bsk.ok("open", f"{site}/redirect_after_load.html", "--settle", "300")["result"]
    assert answer["url"] == f"{site}/redirect_after_load.html"  # the load it waited for
    effects = answer["effects"]
    assert effects["navigation"]["url"] == f"{site}/other.html", effects
    assert effects["settled"] is True and effects["watched_ms"] >= 300, effects
    assert bsk("eval", "location.pathname").value == "/other.html"
