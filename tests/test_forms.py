"""Form tools against real Chromium: fill, select, check/uncheck, upload, and their errors."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import Bsk
from support.pages import ref_of


@pytest.fixture
def form(bsk: Bsk, site: str) -> tuple[Bsk, str]:
    bsk.ok("open", f"{site}/form.html")
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def events(bsk: Bsk) -> list[str]:
    return bsk("eval", "window.events").value


def failed(r: Any, code: str, reason: str | None = None) -> dict[str, Any]:
    """Assert a failure that reached nothing in the browser; return its error."""
    answer = r.json
    assert answer["error"]["code"] == code, answer
    assert answer["dispatched"] == "no", answer
    if reason:
        assert answer["error"]["details"]["reason"] == reason, answer
    return answer["error"]


def test_fill_text_fields_textarea_and_contenteditable(form: tuple[Bsk, str]) -> None:
    bsk, snap = form
    name = ref_of(snap, "textbox", "Name")
    filled = bsk.ok("fill", name, "Jane Doe")
    assert filled["status"] == "completed" and filled["retry_safe"] is False
    assert filled["result"]["value"] == "Jane Doe" and filled["result"]["matches"] is True
    assert bsk("eval", "document.querySelector('#name').value").value == "Jane Doe"
    # Real input: one input event per insertion, and one change (the browser's own)
    assert events(bsk) == ["input:name", "change:name"]
    # The field keeps focus, so a following key press goes to it
    assert bsk("eval", "document.activeElement.id").value == "name"

    bio = ref_of(snap, "textbox", "Bio")
    assert bsk.ok("fill", bio, "line one\nline two")["result"]["value"] == "line one\nline two"
    notes = ref_of(snap, "textbox", "Notes")
    assert bsk.ok("fill", notes, "fresh notes")["result"]["value"] == "fresh notes"
    assert bsk("eval", "document.querySelector('#notes').innerText").value == "fresh notes"
    assert "input:notes" in events(bsk)

    cleared = bsk.ok("fill", name, "")["result"]
    assert cleared["value"] == "" and cleared["matches"] is True

    # The browser applies the field's own rules, and the result says so
    short = bsk.ok("fill", ref_of(snap, "textbox", "Short field"), "abcdef")["result"]
    assert short["value"] == "abc" and short["matches"] is False

    # A field without a caret (range) gets its value set, with input and change
    level = ref_of(snap, "slider", "Level")
    assert bsk.ok("fill", level, "30")["result"]["value"] == "30"
    assert events(bsk)[-2:] == ["input:level", "change:level"]


def test_fill_refuses_what_is_not_editable(form: tuple[Bsk, str]) -> None:
    bsk, snap = form
    for role, label, why, reason in [
            ("textbox", "Disabled field", "disabled", "element_disabled"),
            ("textbox", "Read-only field", "read-only", "element_readonly"),
            ("button", "Go", "<button>", "not_editable"),
            ("checkbox", "Agree", "type=checkbox", "not_editable")]:
        r = bsk("fill", ref_of(snap, role, label), "x")
        assert r.code == 11, r.stdout
        error = failed(r, "action_failed", reason)
        assert r.json["retry_safe"] is True  # nothing was sent
        assert why in error["message"]
    assert bsk("eval", "[off.value, ro.value]").value == ["fixed", "fixed"]
    bad = bsk("fill", ref_of(snap, "slider", "Level"), "lots")
    failed(bad, "action_failed", "invalid_value")
    assert bsk("eval", "level.value").value == "50"
    assert events(bsk) == []


def test_fill_on_a_label_names_the_field_it_labels(bsk: Bsk, site: str) -> None:
    """`text=Volume` finds the words, which are the <label>'s: the refusal says which
    field that label is for, and how to name the field itself."""
    bsk.ok("open", f"{site}/conformance/jqueryui-slider.html")
    r = bsk("fill", "text=Volume:", "5")
    error = failed(r, "action_failed", "not_editable")
    assert "it labels <input type=text id=amount>" in error["message"], error
    assert "role=textbox[name=" in error["hint"], error


def test_select_by_value_or_label(form: tuple[Bsk, str]) -> None:
    bsk, snap = form
    color = ref_of(snap, "combobox", "Color")
    by_label = bsk.ok("select", color, "Blue")["result"]
    assert by_label["values"] == ["b"] and by_label["labels"] == ["Blue"]
    assert by_label["changed"] is True
    assert bsk.ok("select", color, "g")["result"]["values"] == ["g"]
    again = bsk.ok("select", color, "g")["result"]
    assert again["changed"] is False
    assert bsk("eval", "color.value").value == "g"
    assert events(bsk)[:2] == ["input:color", "change:color"]

    toppings = ref_of(snap, "listbox", "Toppings")
    many = bsk.ok("select", toppings, "cheese", "Olives")["result"]
    assert many["values"] == ["cheese", "olives"]

    missing = bsk("select", color, "purple")
    assert missing.code == 11
    error = failed(missing, "action_failed", "option_missing")
    assert error["details"]["missing"] == ["purple"]
    assert {"value": "b", "label": "Blue"} in error["details"]["options"]
    assert "'b' (Blue)" in error["message"]
    failed(bsk("select", color, "Gone"), "action_failed", "option_disabled")
    failed(bsk("select", color, "r", "g"), "invalid_params")
    failed(bsk("select", ref_of(snap, "textbox", "Name"), "x"), "action_failed", "not_a_select")
    assert bsk("eval", "color.value").value == "g"


def test_check_and_uncheck(form: tuple[Bsk, str]) -> None:
    bsk, snap = form
    agree = ref_of(snap, "checkbox", "Agree")
    checked = bsk.ok("check", agree)
    assert checked["result"]["checked"] is True and checked["result"]["changed"] is True
    assert bsk("eval", "agree.checked").value is True
    already = bsk.ok("check", agree)["result"]
    assert already["checked"] is True and already["changed"] is False
    # Nothing was sent, so there is nothing to watch (no "nothing changed at once", as
    # if a click had been tried).
    assert "effects" not in already, already
    assert bsk.text("check", agree).strip() == f"{agree}: already checked"
    assert bsk.ok("uncheck", agree)["result"]["checked"] is False
    assert bsk.ok("uncheck", ref_of(snap, "checkbox", "Newsletter"))["result"]["changed"]

    small = ref_of(snap, "radio", "Small")
    assert bsk.ok("check", small)["result"]["checked"] is True
    assert bsk("eval", "document.querySelector('#size-l').checked").value is False
    failed(bsk("uncheck", small), "action_failed", "not_checkable")

    switch = ref_of(snap, "switch", "Dark mode")
    assert bsk.ok("check", switch)["result"]["checked"] is True
    assert bsk("eval", "sw.getAttribute('aria-checked')").value == "true"
    # A visually hidden checkbox is clicked through its label
    assert bsk.ok("check", ref_of(snap, "checkbox", "Fancy"))["result"]["checked"] is True
    assert bsk("eval", "fancy.checked").value is True

    stubborn = bsk("check", ref_of(snap, "checkbox", "Stubborn"))
    assert stubborn.code == 11
    assert stubborn.json["error"]["details"]["reason"] == "state_unchanged"
    assert stubborn.json["dispatched"] == "yes"  # it clicked; the page refused
    failed(bsk("check", ref_of(snap, "button", "Go")), "action_failed", "not_checkable")


def test_upload_files(form: tuple[Bsk, str], tmp_path: Path) -> None:
    bsk, snap = form
    one, two = tmp_path / "one.txt", tmp_path / "two.csv"
    one.write_text("hello")
    two.write_text("a,b\n1,2\n")
    avatar, docs = ref_of(snap, "button", "Avatar"), ref_of(snap, "button", "Documents")

    up = bsk.ok("upload", avatar, str(one))["result"]
    assert up["files"] == [{"name": "one.txt", "size": 5, "type": "text/plain"}]
    assert events(bsk) == ["input:avatar", "change:avatar"]
    both = bsk.ok("upload", docs, str(one), str(two))["result"]
    assert [f["name"] for f in both["files"]] == ["one.txt", "two.csv"]

    # The CLI makes relative paths absolute against the caller's directory
    proc = subprocess.run(bsk.argv(("upload", avatar, "two.csv"), True), env=bsk.env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert bsk("eval", "avatar.files[0].name").value == "two.csv"

    missing = bsk("upload", avatar, str(tmp_path / "nope.png"))
    assert missing.code == 2
    error = failed(missing, "invalid_params")
    assert "nope.png" in error["message"] and error["details"]["field"] == "files"
    failed(bsk("upload", avatar, str(one), str(two)), "invalid_params")  # not multiple
    r = bsk("upload", ref_of(snap, "textbox", "Name"), str(one))
    assert r.code == 11
    failed(r, "action_failed", "not_file_input")


def test_login_fixture(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/login.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    bsk.ok("fill", ref_of(snap, "textbox", "Username"), "jane")
    bsk.ok("fill", ref_of(snap, "textbox", "Password"), "secret")
    clicked = bsk.ok("click", ref_of(snap, "button", "Log in"))["result"]
    assert not clicked.get("navigated")
    assert bsk.ok("wait", "--text", "Welcome, jane")["status"] == "completed"
    assert bsk("eval", "document.querySelector('#result').textContent").value == "Welcome, jane"
    # Enter in the password field submits too, still without navigating
    bsk.ok("fill", ref_of(snap, "textbox", "Username"), "joe")
    bsk.ok("fill", ref_of(snap, "textbox", "Password"), "pw")
    pressed = bsk.ok("press", "Enter")["result"]
    assert not pressed.get("navigated")
    assert bsk("eval", "document.querySelector('#result').textContent").value == "Welcome, joe"


def test_stale_refs_after_navigation(form: tuple[Bsk, str], site: str, tmp_path: Path) -> None:
    bsk, snap = form
    name, color = ref_of(snap, "textbox", "Name"), ref_of(snap, "combobox", "Color")
    agree, avatar = ref_of(snap, "checkbox", "Agree"), ref_of(snap, "button", "Avatar")
    file = tmp_path / "f.txt"
    file.write_text("x")
    bsk.ok("open", f"{site}/form.html")  # the same page, a new document
    for args in [("fill", name, "x"), ("select", color, "r"), ("check", agree),
                 ("uncheck", agree), ("upload", avatar, str(file)), ("html", name),
                 ("screenshot", "--ref", name)]:
        r = bsk(*args)
        assert r.code == 4, (args, r.stdout)
        failed(r, "stale_ref")
    for args in [("fill", "e99999", "x"), ("select", "e99999", "x"), ("check", "e99999")]:
        failed(bsk(*args), "ref_not_found")


def test_forms_in_same_origin_and_cross_origin_iframes(bsk: Bsk, site: str,
                                                       cross_site: str) -> None:
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/form-frames.html?cross={port}")
    snap = ""
    for _ in range(50):  # the frames load after the page: snapshot until both are in
        snap = bsk.ok("snapshot")["result"]["snapshot"]
        if snap.count('textbox "Username"') == 2:
            break
    users = re.findall(r'textbox "Username"[^\n]*\[ref=(\w+)\]', snap)
    passwords = re.findall(r'textbox "Password"[^\n]*\[ref=(\w+)\]', snap)
    assert len(users) == len(passwords) == 2, snap
    for who, user, password in zip(("same", "cross"), users, passwords, strict=True):
        assert bsk.ok("fill", user, who)["result"]["value"] == who
        bsk.ok("fill", password, "pw")
        # The keys go to the focused field, in whichever frame it is
        typed = bsk.ok("type", "!")["result"]
        assert typed["focused"] == "iframe#" + who
        assert not bsk.ok("press", "Enter")["result"].get("navigated")
    html = bsk.ok("html", users[1])["result"]["html"]
    assert html.startswith('<input id="username"')
    shot = bsk.ok("screenshot", "--ref", users[1])["result"]
    assert shot["width"] > 50 and shot["height"] > 5
    same = bsk("eval", "document.querySelector('#same').contentDocument"
                       ".querySelector('#result').textContent").value
    assert same == "Welcome, same"
    after = bsk.ok("snapshot")["result"]["snapshot"]
    assert "Welcome, cross" in after, after


def test_select_on_a_librarys_hidden_select_says_to_use_its_control(bsk: Bsk,
                                                                     site: str) -> None:
    """Tom Select hides the <select> it replaces (1 px, clipped) and does not watch it:
    choosing there changed a value its combobox never showed, and the answer said
    selected. Refused, nothing sent; its combobox, not a <select>, says what to do."""
    bsk.ok("open", f"{site}/conformance/tom-select.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    # The snapshot lists its choices but gives it no ref: nothing there to act on.
    hidden_line = next(x for x in snap.splitlines() if 'listbox "Select a state..."' in x)
    assert "[ref=" not in hidden_line, hidden_line
    hidden = bsk("select", "css=select", "Texas")  # reached by a locator all the same
    error = failed(hidden, "action_failed", "select_hidden")
    assert hidden.json["dispatched"] == "no" and "click the control" in error["hint"]
    assert bsk("eval", "document.querySelector('select').value").value == ""
    combo = ref_of(snap, "combobox", "States")
    error = failed(bsk("select", combo, "Texas"), "action_failed", "not_a_select")
    assert error["hint"].startswith("this is the page's own control") and combo in error["hint"]
    # Its listed options are the ones a locator finds: the hidden <select>'s own (no box,
    # in a 1 px select) are not visible, so the name is not ambiguous.
    bsk.ok("click", combo)
    bsk.ok("click", 'role=option[name="Wyoming"]')
    assert bsk("eval", "document.querySelector('select').value").value == "WY"
    # A batch line is split as a shell would split it, its quotes dropped: the name reads
    # without them too. (Tom Select keeps its menu open after a choice.)
    bsk.ok("batch", 'click role=option[name="New York"]')
    assert bsk("eval", "[...document.querySelector('select').selectedOptions]"
                       ".map(o => o.value)").value == ["WY", "NY"]
