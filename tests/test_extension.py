"""The user's own browser through the real BrowserSkill extension (headless Chromium with
--load-extension): handshake, the relay, borrow/return, user interrupt, lost link."""

from __future__ import annotations

from conftest import ExtensionBrowser


def test_handshake_lists_the_browser(ext_browser: ExtensionBrowser) -> None:
    (b,) = ext_browser.connected()
    assert b["label"] == "test-browser"
    assert b["protocol"] == 1
    assert b["name"] and b["version"]
    assert len(b["browser_id"]) >= 8
