"""The extension in a *headed* Chromium, as in the user's own browser: real windows on a
virtual X server (the session's Xvfb). One browser and daemon for the whole module; the
scenarios shared with test_extension.py (headless) come from conftest."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import pytest
from conftest import (
    ExtensionBrowser,
    agent_session,
    browser_cdp,
    in_ci,
    log_in_through_the_relay,
    ref_of,
    stop_button_interrupts,
    the_connected_browser,
    wait_until,
)

WINDOWS = ("chrome.windows.getAll({populate: true}).then(ws => ws.map(w => ({id: w.id, "
           "type: w.type, state: w.state, focused: w.focused, width: w.width, "
           "height: w.height, tabs: w.tabs.map(t => t.url)})))")


def windows(ext: ExtensionBrowser) -> dict[int, dict[str, Any]]:
    """The browser's windows as the extension sees them (chrome.windows), by id."""
    return {w["id"]: w for w in ext.worker_eval(WINDOWS)}


def test_handshake_in_a_headed_browser(headed_ext_browser: ExtensionBrowser) -> None:
    b = the_connected_browser(headed_ext_browser)
    listed = headed_ext_browser.bsk("browsers", as_json=False)
    assert listed.code == 0 and b["browser_id"] in listed.stdout, listed.stdout
    # Really headed: no "HeadlessChrome" in the user agent, and a real window.
    assert "Headless" not in headed_ext_browser.worker_eval("navigator.userAgent")
    (user,) = windows(headed_ext_browser).values()
    assert (user["type"], user["state"]) == ("normal", "normal")


def test_agent_window_is_a_window_of_its_own(headed_ext_browser: ExtensionBrowser,
                                            site: str) -> None:
    ext = headed_ext_browser
    before = windows(ext)
    s = agent_session(ext, "window")
    window_id = ext.worker_eval("bsk.agent.window.windowId")
    # A new normal window beside the user's, which keeps the focus ...
    now = windows(ext)
    assert set(now) == {*before, window_id}
    agent = now[window_id]
    assert (agent["type"], agent["state"], agent["focused"]) == ("normal", "normal", False)
    assert agent["tabs"] == ["about:blank"] and agent["width"] and agent["height"]
    assert [w["focused"] for w in before.values()] == [True]
    assert [w["focused"] for i, w in now.items() if i != window_id] == [True]
    # ... and the relay works in it.
    log_in_through_the_relay(s, site)
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    found = browser_cdp(ext.chromium, "Browser.getWindowForTarget",  # a direct client
                        {"targetId": tab["target_id"]})
    assert found["windowId"] == window_id
    assert found["bounds"]["windowState"] == "normal"
    now = windows(ext)
    assert now[window_id]["tabs"] == [f"{site}/login.html"]
    assert {i: w["tabs"] for i, w in now.items() if i != window_id} == {
        i: w["tabs"] for i, w in before.items()}  # the user's windows are untouched
    s.ok("session", "stop")
    wait_until(lambda: window_id not in windows(ext), what="the Agent Window to close")
    assert set(windows(ext)) == set(before)


def test_overlay_stop_interrupts_in_a_headed_browser(headed_ext_browser: ExtensionBrowser,
                                                     site: str) -> None:
    s = agent_session(headed_ext_browser, "stop")
    stop_button_interrupts(headed_ext_browser, s, site)
    s.ok("session", "stop")


@pytest.fixture(scope="module")
def xdotool(xvfb: str) -> Any:
    """Runs xdotool on the session's X display (to see and act as the user does there)."""
    if not shutil.which("xdotool"):
        why = "xdotool is not installed (Debian/Ubuntu: apt-get install xdotool)"
        if in_ci():
            pytest.fail(f"{why}, yet this is CI (CI=true): scripts/install.sh installs it",
                        pytrace=False)
        pytest.skip(why)
    env = {**os.environ, "DISPLAY": xvfb}

    def run(*args: str) -> str:
        done = subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True,
                              timeout=10)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    return run


def test_a_click_leaves_the_focus_with_the_user(headed_ext_browser: ExtensionBrowser,
                                               xdotool: Any, site: str) -> None:
    """Chrome activates the window a DevTools press lands in; the extension gives the
    focus straight back to the user's window, and the agent's page behaves as focused."""
    ext = headed_ext_browser
    user_id = min(i for i, w in windows(ext).items() if w["type"] == "normal")
    (user_page,) = [t["targetId"] for t in ext.page_targets()
                    if browser_cdp(ext.chromium, "Browser.getWindowForTarget",
                                   {"targetId": t["targetId"]})["windowId"] == user_id]
    browser_cdp(ext.chromium, "Runtime.evaluate", {"expression": (
        "document.title = 'User notes'; document.body.innerHTML = '<textarea id=notes "
        "style=\"position: fixed; inset: 0; width: 100%; height: 100%\"></textarea>'")},
        session_of=user_page)

    def focus_is_the_users() -> bool:
        now = windows(ext)
        return (xdotool("getwindowfocus", "getwindowname").startswith("User notes")
                and now[user_id]["focused"]
                and not any(w["focused"] for i, w in now.items() if i != user_id))

    def notes() -> str:
        return browser_cdp(ext.chromium, "Runtime.evaluate", {
            "expression": "document.activeElement.id + ':' + notes.value",
            "returnByValue": True}, session_of=user_page)["result"]["value"]

    # The user works in their window (focused as a window manager does on their click),
    # typing in a page of theirs (a real X click puts the caret there).
    ext.worker_eval(f"chrome.windows.update({user_id}, {{focused: true}}).then(() => true)")
    wait_until(focus_is_the_users, what="the user's window to have the focus")
    bounds = ext.worker_eval(f"chrome.windows.get({user_id})")
    xdotool("mousemove", str(bounds["left"] + bounds["width"] // 2),
            str(bounds["top"] + bounds["height"] // 2), "click", "1")
    wait_until(lambda: notes() == "notes:", what="the user's textarea to have the focus")
    assert focus_is_the_users()
    s = agent_session(ext, "focus")
    agent_id = ext.worker_eval("bsk.agent.focus.windowId")
    s.ok("open", f"{site}/login.html")
    s.ok("eval", "window.seen = []; for (const t of ['mousedown', 'mouseup', 'click', "
         "'focus', 'blur']) document.addEventListener(t, e => seen.push(t + ' ' + "
         "(e.target.id || e.target.nodeName)), true); addEventListener('blur', () => "
         "seen.push('window blur')); true")
    snap = s.ok("snapshot")["result"]["snapshot"]
    s.ok("click", ref_of(snap, "textbox", "Username"))
    wait_until(focus_is_the_users, what="the focus to be back in the user's window")
    assert not windows(ext)[agent_id]["focused"]
    # The page got the whole click and the focus moved to the input, for the page; it
    # sees no blur once the focus is given back (focus emulation: it stays focused).
    state = "({seen, active: document.activeElement.id, focused: document.hasFocus()})"
    assert s("eval", state).value == {
        "seen": ["mousedown username", "focus username", "mouseup username",
                 "click username"], "active": "username", "focused": True}
    # A whole login flow (fill, fill, click): the focus stays with the user throughout.
    log_in_through_the_relay(s, site)
    wait_until(focus_is_the_users, what="the focus to be back in the user's window")
    # And the user's typing goes where they type, not to the agent's page.
    xdotool("type", "--delay", "0", "notes")
    wait_until(lambda: notes() == "notes:notes", what="the user's typing to reach the user")
    assert s("eval", "[username.value, password.value, document.hasFocus()]").value == [
        "jane", "secret", True]
    s.ok("session", "stop")
    wait_until(lambda: agent_id not in windows(ext), what="the Agent Window to close")
    assert focus_is_the_users()
