"""Acting where refs alone fall short, against real Chromium: coordinates (`bsk mouse`),
downloads, `eval --ref/--frame` and its own scope, disabled targets, and the human text
every action prints (dialogs, new tabs, downloads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.cli import Bsk
from support.pages import ref_of


def canvas_events(bsk: Bsk) -> list[dict[str, Any]]:
    """What the canvas saw, bar plain moves with no button down."""
    return [e for e in bsk("eval", "events").value
            if e["type"] != "mousemove" or e["buttons"]]


# -- coordinates -----------------------------------------------------------------------


def test_mouse_draws_on_a_canvas(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_canvas.html")
    moved = bsk.ok("mouse", "move", "10", "10")
    assert moved["status"] == "completed" and moved["retry_safe"] is False
    down = bsk.ok("mouse", "down", "50", "60")["result"]
    assert down["buttons_held"] == ["left"]
    bsk.ok("mouse", "move", "100", "60")
    up = bsk.ok("mouse", "up", "150", "60")["result"]
    assert "buttons_held" not in up and "note" not in up
    assert [(e["type"], e["x"], e["y"], e["buttons"]) for e in canvas_events(bsk)] == [
        ("mousedown", 50, 60, 1), ("mousemove", 100, 60, 1), ("mousemove", 150, 60, 1),
        ("mouseup", 150, 60, 0), ("click", 150, 60, 0)]


def test_mouse_click_dblclick_right_and_wheel(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_canvas.html")
    bsk.ok("mouse", "click", "20", "30", "--button", "right")
    bsk.ok("mouse", "dblclick", "30", "40")
    wheel = bsk.ok("mouse", "wheel", "40", "50", "--dy", "120")
    assert wheel["result"]["scrolled_by"] == {"dx": 0, "dy": 120}
    seen = [(e["type"], e["button"]) for e in canvas_events(bsk)]
    assert seen == [("mousedown", 2), ("contextmenu", 2), ("mouseup", 2),
                    ("mousedown", 0), ("mouseup", 0), ("click", 0),
                    ("mousedown", 0), ("mouseup", 0), ("click", 0), ("dblclick", 0),
                    ("wheel", 0)]
    assert canvas_events(bsk)[-1]["dy"] == 120
    text = bsk("mouse", "click", "20", "30", as_json=False).stdout
    # The canvas only logs what it saw: nothing on the page changed (result.effects)
    assert text.strip() == ("mouse clicked at 20,30 — nothing on the page changed at once "
                            "(--settle MS waits for a later change)")


def test_mouse_outside_the_viewport_sends_nothing(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_canvas.html")
    r = bsk("mouse", "click", "5000", "10")
    assert r.code == 2 and r.json["error"]["details"]["field"] == "x"
    assert "outside the viewport" in r.json["error"]["message"]
    assert r.json["dispatched"] == "no" and r.json["retry_safe"] is True
    assert bsk("eval", "events.length").value == 0
    bad = bsk("mouse", "move", "ten", "10")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "x"


def test_mouse_click_reports_what_it_started(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_download.html")
    box = bsk("eval", "(() => { const r = document.getElementById('attr')"
                      ".getBoundingClientRect(); return [r.x + 5, r.y + 5]; })()").value
    clicked = bsk.ok("mouse", "click", str(box[0]), str(box[1]))["result"]
    # A download link clicked by coordinates: no ref to tell it was one, so the download
    # is reported if it began within the call, and `download wait` has it either way.
    got = clicked.get("downloads") or bsk.ok("download", "wait")["result"]["downloads"]
    assert got[0]["suggested_filename"] == "report-2026.csv"


def test_a_link_that_makes_no_page_answers_promptly(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_nodoc.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    clicked = bsk("click", ref_of(snap, "link", "No content"), "--timeout", "10")
    assert clicked.code == 0, clicked.stdout + clicked.stderr  # was: internal at 30 s
    result = clicked.json["result"]
    assert "navigated" not in result and "without a new page" in result["note"]
    assert result["url"] == f"{site}/act_nodoc.html"


def test_a_navigation_past_the_deadline_is_outcome_unknown(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_nodoc.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    r = bsk("click", ref_of(snap, "link", "Slow page"), "--timeout", "1")
    assert r.code == 9, r.stdout + r.stderr  # not `internal`: the deadline, honestly
    assert r.json["status"] == "outcome_unknown" and r.json["dispatched"] == "yes"
    assert r.json["error"]["details"]["reason"] == "deadline"


# -- downloads -------------------------------------------------------------------------


@pytest.fixture
def downloads_page(bsk: Bsk, site: str) -> tuple[Bsk, str]:
    bsk.ok("open", f"{site}/act_download.html")
    return bsk, bsk.ok("snapshot", "--interactive")["result"]["snapshot"]


def session_dir(bsk: Bsk) -> Path:
    return bsk.home / "downloads" / str(bsk.session)


def test_download_links_complete_with_the_file(downloads_page: tuple[Bsk, str]) -> None:
    bsk, snap = downloads_page
    clicked = bsk.ok("click", ref_of(snap, "link", "Download report"))  # download= link
    d = clicked["result"]["downloads"]
    assert [(x["suggested_filename"], x["state"], x["bytes"]) for x in d] == [
        ("report-2026.csv", "completed", 20)]
    path = Path(d[0]["path"])
    assert path == session_dir(bsk) / "report-2026.csv"
    assert path.read_text() == "id,amount\n1,10\n2,20\n"
    assert path.stat().st_mode & 0o077 == 0  # the state dir's files are the user's alone
    assert "navigated" not in clicked["result"]
    # A plain link to a file the browser won't show: a navigation that became a download.
    plain = bsk.ok("click", ref_of(snap, "link", "Get data"))["result"]
    assert plain["downloads"][0]["path"] == str(session_dir(bsk) / "act_data.bin")
    assert Path(plain["downloads"][0]["path"]).stat().st_size == 5000
    # A script-made blob link; the same name again gets a number.
    bsk.ok("click", ref_of(snap, "link", "Save notes"))
    again = bsk.ok("click", ref_of(snap, "link", "Download report"))["result"]
    assert again["downloads"][0]["path"] == str(session_dir(bsk) / "report-2026 (2).csv")
    listed = bsk.ok("download", "list")["result"]
    names = [x["suggested_filename"] for x in listed["downloads"]]
    assert names == ["report-2026.csv", "act_data.bin", "notes.txt", "report-2026.csv"]
    assert listed["directory"] == str(session_dir(bsk))
    assert (session_dir(bsk) / "notes.txt").read_text() == "hello notes\n"
    assert not any((bsk.home / "downloads" / ".incoming").iterdir())


def test_a_download_that_fails_says_so_promptly(downloads_page: tuple[Bsk, str]) -> None:
    bsk, snap = downloads_page
    r = bsk.ok("click", ref_of(snap, "link", "Missing file"))["result"]  # a 404
    assert [(d["suggested_filename"], d["state"]) for d in r["downloads"]] == [
        ("act_missing.csv", "canceled")]
    assert not (session_dir(bsk) / "act_missing.csv").exists()
    text = bsk("click", ref_of(snap, "link", "Missing file"), as_json=False).stdout
    assert "download failed or canceled: act_missing.csv" in text


def test_download_text_output_prints_the_path(downloads_page: tuple[Bsk, str]) -> None:
    bsk, snap = downloads_page
    text = bsk("click", ref_of(snap, "link", "Get data"), as_json=False).stdout
    path = session_dir(bsk) / "act_data.bin"
    # The link's request is among what the click was seen to do (result.effects)
    assert text.splitlines() == [f"clicked {ref_of(snap, 'link', 'Get data')} → "
                                 "GET /act_data.bin 200",
                                 f"downloaded: {path} (5000 bytes)"]
    listed = bsk("download", "list", as_json=False).stdout
    assert f"downloaded: {path} (5000 bytes)" in listed


def test_opening_a_file_address_downloads_it(downloads_page: tuple[Bsk, str],
                                             site: str) -> None:
    bsk, _ = downloads_page
    opened = bsk.ok("open", f"{site}/act_data.bin")["result"]
    assert opened["downloads"][0]["state"] == "completed"
    assert opened["url"] == f"{site}/act_download.html"  # the tab stayed where it was


def test_download_wait(downloads_page: tuple[Bsk, str]) -> None:
    bsk, _ = downloads_page
    nothing = bsk("download", "wait", "--timeout", "1")
    assert nothing.code == 11 and nothing.json["error"]["details"]["reason"] == "timeout"
    assert nothing.json["dispatched"] == "no" and nothing.json["retry_safe"] is True
    # A download the page starts later, on its own: `download wait` reports it.
    bsk.ok("eval", "setTimeout(() => document.getElementById('blob').click(), 300)")
    waited = bsk.ok("download", "wait")["result"]
    assert [x["suggested_filename"] for x in waited["downloads"]] == ["notes.txt"]
    assert Path(waited["downloads"][0]["path"]).read_text() == "hello notes\n"


def test_sessions_keep_their_downloads_apart(downloads_page: tuple[Bsk, str],
                                              shared_bsk: Bsk, site: str) -> None:
    bsk, _ = downloads_page
    other = shared_bsk.with_session(str(bsk.session) + "-b")
    shared_bsk.ok("session", "start", str(other.session))
    try:
        other.ok("open", f"{site}/act_download.html")
        other_snap = other.ok("snapshot", "--interactive")["result"]["snapshot"]
        theirs = other.ok("click", ref_of(other_snap, "link", "Download report"))["result"]
        assert Path(theirs["downloads"][0]["path"]).parent == session_dir(other)
        assert bsk.ok("download", "list")["result"]["downloads"] == []
    finally:
        other("session", "stop", "--wait")


# -- disabled targets, dialogs, new tabs: what the text says ----------------------------


def test_a_disabled_button_is_not_clicked(downloads_page: tuple[Bsk, str]) -> None:
    bsk, snap = downloads_page
    r = bsk("click", ref_of(snap, "button", "Disabled button"))
    assert r.code == 11
    error = r.json["error"]
    assert error["details"]["reason"] == "element_disabled"
    assert r.json["dispatched"] == "no" and r.json["retry_safe"] is True
    assert bsk("eval", "document.title").value == "Downloads"
    text = bsk("click", ref_of(snap, "button", "Disabled button"), as_json=False).stderr
    assert "is disabled" in text and "dispatched: no" in text


def test_action_text_says_what_happened(downloads_page: tuple[Bsk, str]) -> None:
    bsk, snap = downloads_page
    alert = bsk("click", ref_of(snap, "button", "Show alert"), as_json=False)
    assert alert.code == 0
    assert "the page opened an alert dialog: \"Saved!\"" in alert.stdout
    assert "None" not in alert.stdout and "bsk dialog accept" in alert.stdout
    accepted = bsk("dialog", "accept", as_json=False).stdout.strip()
    assert accepted.startswith('accepted the alert dialog "Saved!"')
    hovered = bsk("hover", ref_of(snap, "button", "Show alert"), as_json=False).stdout
    assert hovered.startswith(f"hovering over {ref_of(snap, 'button', 'Show alert')}")
    scrolled = bsk("scroll", "--dy", "50", as_json=False).stdout
    assert scrolled.startswith("scrolled the page by dx=0, dy=50")
    tab = bsk("click", ref_of(snap, "link", "Open in new tab"), as_json=False).stdout
    assert "opened new tab(s): t2" in tab and "bsk tab select" in tab
    for out in (hovered, scrolled, tab):
        assert not out.lstrip().startswith("{"), out


# -- eval -------------------------------------------------------------------------------


def test_eval_has_its_own_scope(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_frame.html")
    assert bsk("eval", "const c = 1; c").value == 1
    assert bsk("eval", "const c = 2; c").value == 2  # was: Identifier 'c' already declared
    bsk.ok("eval", "let d = 1")
    assert bsk("eval", "const d = 3; d").value == 3
    assert bsk("eval", "await new Promise(r => setTimeout(() => r(5), 10))").value == 5
    assert bsk("eval", "let d = 1", as_json=False).stdout.strip() == "undefined"


def test_eval_says_why_its_value_did_not_come_back(bsk: Bsk, site: str) -> None:
    """A value JSON can't hold (`window`, a cycle) and a page that navigates while the
    script awaits: each named, with a hint, and the script ran (dispatched yes)."""
    bsk.ok("open", f"{site}/other.html")
    for code in ("window", "const o = {}; o.o = o; o"):
        r = bsk("eval", code)
        assert r.code != 0, r.stdout
        error = r.json["error"]
        assert "can't be returned as JSON" in error["message"], error
        assert "JSON.stringify" in error["hint"] and r.json["dispatched"] == "yes", r.json
    r = bsk("eval", f"setTimeout(() => location.href = '{site}/counter.html', 50); "
                    "await new Promise(r => setTimeout(r, 5000)); 1")
    error = r.json["error"]
    assert "navigated away" in error["message"] and error["hint"], r.json
    assert r.json["dispatched"] == "yes", r.json
    assert bsk.ok("eval", "location.pathname")["result"]["value"] == "/counter.html"


def test_eval_describes_the_elements_it_returns(bsk: Bsk, site: str) -> None:
    """A list of elements came back as `{"0": {}, "1": {}}`: each is described as a single
    element is (`button#inc`)."""
    bsk.ok("open", f"{site}/counter.html")
    assert bsk.ok("eval", "document.querySelector('#inc')")["result"]["description"] == \
        "button#inc"
    assert bsk.ok("eval", "document.querySelectorAll('button, a')")["result"]["value"] == [
        "button#inc", "a#next"]
    assert bsk.ok("eval", "[...document.getElementsByTagName('h1')]")["result"]["value"] == [
        "h1"]
    assert bsk.ok("eval", "({first: document.querySelector('h1'), n: 2})")["result"][
        "value"] == {"first": "h1", "n": 2}
    assert bsk.ok("eval", "({a: [1, null], b: 'x'})")["result"]["value"] == {
        "a": [1, None], "b": "x"}


def test_eval_on_an_element_and_in_a_frame(bsk: Bsk, site: str, cross_site: str) -> None:
    bsk.ok("open", f"{site}/act_frame.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    query, frame = ref_of(snap, "textbox", "Query"), ref_of(snap, "iframe", "Inner")
    assert bsk("eval", "--ref", query, "el => el.value").value == "hello world"
    assert bsk("eval", "--ref", query, "el.value.length").value == 11
    assert bsk("eval", "--ref", query, "el => window.where").value == "top"  # the page's world
    threw = bsk("eval", "--ref", query, "el => { throw new Error('boom') }")
    assert threw.code == 0 and threw.json["result"]["ok"] is False
    assert bsk("eval", "--frame", frame, "document.title + ' ' + typeof where").value == \
        "Inner undefined"
    not_frame = bsk("eval", "--frame", query, "1")
    assert not_frame.code == 2 and not_frame.json["error"]["details"]["field"] == "frame"
    # An out-of-process iframe (another site) runs in its own process: same answer.
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/frames.html?cross={port}")
    bsk.ok("wait", "--text", "Inner button")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    cross = ref_of(snap, "iframe", "cross origin")
    assert bsk("eval", "--frame", cross, "location.host").value == f"localhost:{port}"
    bsk.ok("eval", "--frame", cross, "const x = 1")
    assert bsk("eval", "--frame", cross, "const x = 2; x").value == 2
    stale = bsk("eval", "--ref", "e999", "el => 1")
    assert stale.code == 4 and stale.json["dispatched"] == "no"


def test_typing_into_a_read_only_field_sends_nothing(downloads_page: tuple[Bsk, str]) -> None:
    bsk, _ = downloads_page
    bsk.ok("eval", "document.getElementById('ro').focus()")
    r = bsk("type", "abc")
    assert r.code == 11 and r.json["error"]["details"]["reason"] == "element_readonly"
    assert r.json["dispatched"] == "no" and r.json["retry_safe"] is True
    assert bsk("eval", "document.getElementById('ro').value").value == "fixed"
    bsk.ok("eval", "document.getElementById('name').focus()")
    assert bsk.ok("type", "abc")["result"]["value"] == "abc"
