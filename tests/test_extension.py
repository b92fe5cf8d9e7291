"""The user's own browser through the real BrowserSkill extension (headless Chromium with
--load-extension): handshake, the relay, borrow/return, user interrupt, lost link."""

from __future__ import annotations

from conftest import Bsk, ExtensionBrowser, wait_until
from test_interruption import ref_of


def test_handshake_lists_the_browser(ext_browser: ExtensionBrowser) -> None:
    (b,) = ext_browser.connected()
    assert b["label"] == "test-browser"
    assert b["protocol"] == 1
    assert b["name"] and b["version"]
    assert len(b["browser_id"]) >= 8


def agent_session(ext: ExtensionBrowser, sid: str = "agent") -> Bsk:
    started = ext.bsk.ok("session", "start", sid, "--browser", "extension", "--label", "tester")
    assert started["browser"]["browser"] == ext.connected()[0]["browser_id"]
    return ext.bsk.with_session(sid)


def test_session_tools_through_the_relay(ext_browser: ExtensionBrowser, site: str) -> None:
    before = {t["targetId"] for t in ext_browser.page_targets()}
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/login.html")
    # The session's tab is a new one (its Agent Window), not the user's.
    (mine,) = s.ok("tab", "list")["result"]["tabs"]
    assert mine["target_id"] not in before
    snap = s.ok("snapshot")["result"]["snapshot"]
    s.ok("fill", ref_of(snap, "textbox", "Username"), "jane")
    s.ok("fill", ref_of(snap, "textbox", "Password"), "secret")
    s.ok("click", ref_of(snap, "button", "Log in"))
    assert s("eval", "document.getElementById('result').textContent").value == "Welcome, jane"
    # The overlay lives in a closed shadow root: the snapshot does not see into it.
    assert "Stop" not in s.ok("snapshot")["result"]["snapshot"]
    s.ok("session", "stop")
    wait_until(lambda: mine["target_id"] not in {t["targetId"] for t in
                                                 ext_browser.page_targets()},
               what="the Agent Window's tab to close")


def test_restricted_pages_are_refused(ext_browser: ExtensionBrowser) -> None:
    s = agent_session(ext_browser)
    r = s("open", "chrome://settings")
    assert r.code != 0
    assert s("eval", "1 + 1").value == 2  # the session goes on
