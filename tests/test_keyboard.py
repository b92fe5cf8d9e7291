"""Keyboard tools against real Chromium (type, press), and the key table itself."""

from __future__ import annotations

import pytest
from support.cli import Bsk
from support.pages import ref_of

from browserskill.browser import keys


@pytest.fixture
def page(bsk: Bsk, site: str) -> tuple[Bsk, str]:
    bsk.ok("open", f"{site}/keys.html")
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def seen(bsk: Bsk) -> list[str]:
    """Key events the page saw since the last call, then forget them."""
    return bsk("eval", "window.keys.splice(0)").value


def test_type_goes_key_by_key_into_the_focused_field(page: tuple[Bsk, str]) -> None:
    bsk, _ = page
    assert bsk("eval", "document.activeElement.id").value == "first"  # autofocus
    typed = bsk.ok("type", "Hi 5!")
    assert typed["retry_safe"] is False
    result = typed["result"]
    assert result["typed"] == 5 and result["focused"] == "input#first"
    assert result["value"] == "Hi 5!"
    assert seen(bsk) == ["keydown:H", "keyup:H", "keydown:i", "keyup:i", "keydown: ",
                         "keyup: ", "keydown:5", "keyup:5", "keydown:!", "keyup:!"]
    # Characters no key makes are inserted as text
    assert bsk.ok("type", " é✓")["result"]["value"] == "Hi 5! é✓"


def test_type_into_a_ref_or_locator_focuses_it_first(page: tuple[Bsk, str]) -> None:
    """`type --ref`: no click first (agent-browser's `type @e TEXT`); the keys go where
    the result says, and a locator works as a ref does."""
    bsk, text = page
    second = ref_of(text, "textbox", "Second")
    typed = bsk.ok("type", "abc", "--ref", second)["result"]
    assert typed["focused_ref"] == second and typed["value"] == "abc"
    assert bsk("eval", "document.querySelector('#first').value").value == ""  # untouched
    by_locator = bsk.ok("type", "xy", "--ref", "css=#first")["result"]
    assert by_locator["focused"] == "input#first" and by_locator["value"] == "xy"
    label = ref_of(text, "textbox", "Search")  # a field typed into after others: appended
    assert bsk.ok("type", "q", "--ref", label)["result"]["value"] == "q"
    gone = bsk("type", "zz", "--ref", "e999")
    assert gone.code != 0 and gone.json["error"]["code"] == "ref_not_found"
    assert gone.json["dispatched"] == "no"


def test_press_keys_and_chords(page: tuple[Bsk, str]) -> None:
    bsk = page[0]
    bsk.ok("type", "hello")
    seen(bsk)
    bsk.ok("press", "Control+A")
    assert seen(bsk) == ["keydown:Control:ctrl", "keydown:a:ctrl", "keyup:a:ctrl",
                         "keyup:Control"]
    assert bsk.ok("press", "Backspace")["result"]["value"] == ""
    bsk.ok("type", "abc")
    bsk.ok("press", "ArrowLeft")
    bsk.ok("press", "Shift+Home")
    assert seen(bsk)[-4:] == ["keydown:Shift:shift", "keydown:Home:shift", "keyup:Home:shift",
                              "keyup:Shift"]
    assert bsk.ok("press", "Delete")["result"]["value"] == "c"
    assert bsk.ok("press", "Escape")["result"]["value"] == "escaped"  # the page's handler
    moved = bsk.ok("press", "Tab")["result"]
    assert moved["focused"] == "input#second"
    # ... by the ref the snapshot gave it, too: what an agent knows it by.
    assert moved["focused_ref"] == ref_of(page[1], "textbox", "Second")
    said = bsk.text("press", "Shift+Tab")
    first = ref_of(page[1], "textbox", "First")
    # Focus as it is after the key (which moved it): not where the key was pressed.
    assert said.startswith(f"pressed Shift+Tab; focus now on {first} (input#first)"), said
    chord = bsk.ok("press", "Control+Shift+ArrowLeft")
    assert chord["status"] == "completed"
    assert seen(bsk)[-6:] == ["keydown:Control:ctrl", "keydown:Shift:ctrl+shift",
                              "keydown:ArrowLeft:ctrl+shift", "keyup:ArrowLeft:ctrl+shift",
                              "keyup:Shift:ctrl", "keyup:Control"]


def test_enter_submits_a_form_and_waits_for_the_navigation(page: tuple[Bsk, str],
                                                           site: str) -> None:
    bsk, snap = page
    bsk.ok("fill", ref_of(snap, "textbox", "Search"), "cats")
    pressed = bsk.ok("press", "Enter")["result"]
    assert pressed["navigated"] is True
    assert pressed["url"] == f"{site}/other.html?q=cats"
    assert bsk("eval", "document.title").value == "Other"


def test_type_newlines_in_a_textarea(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    bsk.ok("fill", ref_of(snap, "textbox", "Area"), "")
    result = bsk.ok("type", "one\ntwo")["result"]
    assert result["focused"] == "textarea#area" and result["value"] == "one\ntwo"
    # `op list` says what was typed as it was: a line break and a leading space are the
    # text's own, so such text is quoted there (plain text stays plain).
    bsk.ok("type", " three")
    rows = bsk("op", "list", as_json=False).stdout.splitlines()
    assert rows[0].endswith(' type         ended       completed       " three"'), rows
    assert rows[1].endswith(' type         ended       completed       "one\\ntwo"'), rows


def test_bad_keys_are_invalid_params(page: tuple[Bsk, str]) -> None:
    bsk, _ = page
    for combo in ("Hyper+x", "Control+", "a+b", "NoSuchKey", "Shift+Shift+a"):
        r = bsk("press", combo)
        assert r.code == 2, (combo, r.stdout)
        answer = r.json
        assert answer["error"]["code"] == "invalid_params" and answer["dispatched"] == "no"
        assert "Control+A" in answer["error"]["details"]["examples"]
    assert seen(bsk) == []


def test_cancel_mid_typing_releases_the_held_key(page: tuple[Bsk, str]) -> None:
    bsk, _ = page
    # 10,000 keys take far longer than 4 s; 4 s leaves a loaded machine time to send the
    # first ones (at 1.5 s CI once ended before any was sent: an honest `cancelled`).
    r = bsk("--timeout", "4", "type", "x" * 10_000)
    answer = r.json
    assert answer["status"] == "outcome_unknown", answer  # some keys reached the page
    details = answer["error"]["details"]
    assert "keyDown:x" in details["steps_sent"]  # the last steps, and how many in all
    assert details.get("steps_sent_count", len(details["steps_sent"])) >= len(
        details["steps_sent"])
    assert [c["action"] for c in details.get("compensation", [])] == ["key_released"], answer
    assert details["compensation"][0]["ok"] is True
    held = 0  # nothing is left held down (a release for a press cut off before it
    for event in seen(bsk):  # reached Chrome is harmless)
        held = held + 1 if event == "keydown:x" else max(0, held - 1)
    assert held == 0


# -- the key table, without a browser ---------------------------------------------------


def test_chord_parsing() -> None:
    c = keys.parse_chord("Control+Shift+ArrowLeft")
    assert [m.key for m in c.modifiers] == ["Control", "Shift"] and c.key.key == "ArrowLeft"
    plus = keys.parse_chord("Control++")
    assert plus.key.key == "+" and plus.key.text == ""  # no text with Control held
    assert keys.parse_chord("+").key.code == "Equal"
    shifted = keys.parse_chord("Shift+a").key
    assert (shifted.key, shifted.text, shifted.code) == ("A", "A", "KeyA")
    assert keys.parse_chord("Control+A").key.key == "a"
    assert keys.parse_chord("Shift+1").key.text == "!"
    assert keys.parse_chord("enter").key.text == "\r"
    assert keys.parse_chord("Ctrl+Esc").key.key == "Escape"
    assert keys.parse_chord("Cmd+Enter").modifiers[0].key == "Meta"
    assert keys.parse_chord("Space").key.text == " "
    assert keys.parse_chord("F12").key.key_code == 123
    for bad in ("", "Control+", "a+b", "Hyper", "Control+Control+a", " Enter"):
        with pytest.raises(keys.BadKeyError):
            keys.parse_chord(bad)
    with pytest.raises(keys.BadKeyError, match=r"unknown key 'Enterr' \(did you mean Enter\?\)"):
        keys.parse_chord("Enterr")
    with pytest.raises(keys.BadKeyError, match=r"did you mean Escape\?"):
        keys.parse_chord("Control+Escpe")
    assert keys.modifier_bits(["Alt", "Control", "Meta", "Shift"]) == 15
