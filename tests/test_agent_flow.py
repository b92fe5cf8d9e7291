"""The flow an agent runs: open, snapshot, click, eval, screenshot, tabs, history."""

from __future__ import annotations

import socket
from pathlib import Path

from support.cli import Bsk
from support.pages import ref_of


def test_open_snapshot_click_eval_screenshot(bsk: Bsk, site: str, tmp_path: Path) -> None:
    opened = bsk.ok("open", f"{site}/counter.html")
    assert opened["status"] == "completed" and opened["dispatched"] == "yes"
    assert opened["result"]["url"] == f"{site}/counter.html"
    assert opened["result"]["title"] == "Counter"

    snap = bsk.ok("snapshot")
    assert snap["retry_safe"] is True  # a read
    text = snap["result"]["snapshot"]
    assert 'heading "Counter"' in text
    button = ref_of(text, "button", "Add one")

    clicked = bsk.ok("click", button)
    assert clicked["retry_safe"] is False  # input: a retry would click again
    assert bsk.ok("eval", "window.count")["result"]["value"] == 1
    assert bsk("eval", "document.querySelector('#out').textContent").value == "count 1"

    shot = tmp_path / "page.png"
    result = bsk.ok("screenshot", str(shot))["result"]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["bytes"] == len(data) and result["width"] > 100 and result["height"] > 100


def test_screenshot_relative_path_is_the_callers(bsk: Bsk, site: str, tmp_path: Path) -> None:
    bsk.ok("open", f"{site}/counter.html")
    import subprocess

    proc = subprocess.run(bsk.argv(("screenshot", "rel.png"), True), env=bsk.env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "rel.png").stat().st_size > 0


def test_eval_results_and_page_errors(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    assert bsk("eval", "Promise.resolve(6 * 7)").value == 42
    assert bsk("eval", "await new Promise(r => setTimeout(() => r('late'), 50))").value == "late"
    assert bsk("eval", "({a: [1, 2], b: null})").value == {"a": [1, 2], "b": None}
    assert bsk("eval", "NaN").value == "NaN"
    assert bsk("eval", "undefined").value is None
    node = bsk.ok("eval", "document.body")["result"]
    assert node["value"] is None and node["description"] == "body"

    thrown = bsk("eval", "throw new TypeError('nope')")
    assert thrown.code == 0  # page_error is a result, not a failure
    answer = thrown.json
    assert answer["status"] == "completed" and answer["result"]["ok"] is False
    assert "TypeError: nope" in answer["result"]["exception"]
    assert answer["error"]["code"] == "page_error"


def test_a_syntax_error_is_told_in_the_callers_own_code(bsk: Bsk, site: str) -> None:
    """The code runs inside a wrapper (its own scope; with --ref, a function of the
    element): a syntax error names what is wrong in the caller's text and where in it,
    never the wrapper's `}` or a column shifted by the wrapper."""
    bsk.ok("open", f"{site}/counter.html")

    def thrown(*args: str) -> tuple[str, int, int]:
        r = bsk("eval", *args).json["result"]
        return r["exception"], r["line"], r["column"]

    assert thrown("(") == ("SyntaxError: Unexpected end of input", 0, 1)
    assert thrown("const a = 1;\nfoo(a,") == ("SyntaxError: Unexpected end of input", 1, 6)
    assert thrown("let x = ;") == ("SyntaxError: Unexpected token ';'", 0, 8)
    assert thrown("1;\n  let y = ;") == ("SyntaxError: Unexpected token ';'", 1, 10)
    text = bsk("eval", "(", as_json=False)
    assert "Unexpected end of input" in text.stdout + text.stderr and "'}'" not in text.stderr
    button = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Add one")
    assert thrown("--ref", button, "el => el +* 2") == (
        "SyntaxError: Unexpected token '*'", 0, 10)
    assert thrown("--ref", button, "el => f(el")[0] == "SyntaxError: Unexpected end of input"
    # Thrown while running: as the page said it, with its stack.
    assert "in JSON" in thrown("JSON.parse('{')")[0]


def test_navigation_history_and_stale_refs(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    link = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "link", "Other page")
    button = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Add one")
    clicked = bsk.ok("click", link)["result"]
    assert clicked["navigated"] is True and clicked["url"] == f"{site}/other.html"

    stale = bsk("click", button)
    assert stale.code == 4
    assert stale.json["error"]["code"] == "stale_ref" and stale.json["dispatched"] == "no"

    assert bsk.ok("back")["result"]["url"] == f"{site}/counter.html"
    assert bsk.ok("forward")["result"]["url"] == f"{site}/other.html"
    assert bsk.ok("reload")["result"]["url"] == f"{site}/other.html"
    nowhere = bsk("forward")
    assert nowhere.code == 11 and nowhere.json["error"]["details"]["reason"] == "no_history"
    assert nowhere.json["dispatched"] == "no"

    unknown = bsk("click", "e99999")
    assert unknown.code == 4 and unknown.json["error"]["code"] == "ref_not_found"
    # A role and a name written as the snapshot writes them: the hint says the locator.
    for written in ('button "Go"', "button=Go"):
        named = bsk("click", written)
        assert named.code == 4 and named.json["dispatched"] == "no"
        assert '`role=button[name="Go"]`' in named.json["error"]["hint"], named.json
    assert "`text=Go on`" in bsk("click", "Go on").json["error"]["hint"]


def test_open_failure_is_action_failed(bsk: Bsk, site: str) -> None:
    # Port 9 is on Chromium's restricted list: it never connects there, server or not.
    r = bsk("open", "http://127.0.0.1:9/")
    assert r.code == 11
    assert r.json["error"]["details"]["reason"] == "navigation_error"
    assert r.json["error"]["details"]["error_text"] == "net::ERR_UNSAFE_PORT"
    assert "another port" in r.json["error"]["hint"], r.json["error"]
    assert r.json["dispatched"] == "yes"
    # A port nothing listens on: Chromium's error page, and the way back is said.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    bsk.ok("open", f"{site}/other.html")
    r = bsk("open", f"http://127.0.0.1:{closed}/")
    assert r.json["error"]["details"]["error_text"] == "net::ERR_CONNECTION_REFUSED"
    assert "`bsk back`" in r.json["error"]["hint"], r.json["error"]
    assert bsk.ok("back")["result"]["url"] == f"{site}/other.html"


def test_open_says_the_pages_http_status(bsk: Bsk, site: str) -> None:
    """A 404 is a page too: `open` completes, and says the server's status."""
    missing = bsk.ok("open", f"{site}/no-such-page.html")["result"]
    assert missing["http_status"] == 404, missing
    assert bsk.ok("open", f"{site}/other.html")["result"]["http_status"] == 200
    text = bsk.text("open", f"{site}/no-such-page.html")
    assert text.startswith(f"{site}/no-such-page.html (HTTP 404)"), text


def test_tabs_are_the_sessions_own(bsk: Bsk, shared_bsk: Bsk, site: str) -> None:
    first = bsk.ok("tab", "list")["result"]["tabs"]
    assert [t["tab_id"] for t in first] == ["t1"]
    new = bsk.ok("tab", "new", f"{site}/other.html")["result"]
    assert new["tab_id"] == "t2" and new["current"] is True
    assert bsk.ok("eval", "document.title")["result"]["value"] == "Other"
    bsk.ok("tab", "select", "t1")
    assert bsk.ok("eval", "location.href")["result"]["value"] == "about:blank"

    other = shared_bsk.with_session(bsk.session + "-other")
    other.ok("session", "start", other.session)
    try:
        assert [t["tab_id"] for t in other.ok("tab", "list")["result"]["tabs"]] == ["t1"]
        foreign = other("tab", "close", "t2")  # t2 is the first session's tab, not this one's
        assert foreign.code == 3 and foreign.json["error"]["code"] == "tab_not_found"
        assert foreign.json["error"]["details"]["tabs"] == ["t1"]  # its own, listed
    finally:
        other("session", "stop")
    assert len(bsk.ok("tab", "list")["result"]["tabs"]) == 2

    closed = bsk.ok("tab", "close", "t2")["result"]
    assert closed["tabs_left"] == 1 and closed["current_tab"] == "t1"


def test_open_after_every_tab_closed_opens_one(bsk: Bsk, site: str) -> None:
    """A session whose tabs were all closed is as a new one: `open` opens a tab (it
    answered "no open tab" before), and a tool that needs a page says to `open` one."""
    bsk.ok("tab", "close", "t1")
    assert bsk.ok("tab", "list")["result"]["tabs"] == []
    lost = bsk("snapshot")
    assert lost.json["error"]["details"]["reason"] == "no_tab", lost.json
    assert "`bsk open URL`" in lost.json["error"]["hint"]
    opened = bsk.ok("open", f"{site}/other.html")["result"]
    assert opened["url"] == f"{site}/other.html" and opened["http_status"] == 200
    tabs = bsk.ok("tab", "list")["result"]["tabs"]
    assert [(t["tab_id"], t["current"]) for t in tabs] == [("t2", True)], tabs
    assert bsk.ok("eval", "document.title")["result"]["value"] == "Other"
