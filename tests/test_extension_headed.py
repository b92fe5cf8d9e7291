"""The extension in a *headed* Chromium, as in the user's own browser: real windows on a
virtual X server (the session's Xvfb). One browser and daemon for the whole module; the
scenarios shared with test_extension.py (headless) come from tests/support/extension.py."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
import subprocess
from typing import Any

import pytest
from support.chromium import PageDevTools, browser_cdp
from support.cli import answer_of, live_ops
from support.extension import (
    BrowserWithExtension,
    agent_session,
    answer_prompt,
    log_in_through_the_relay,
    stop_button_interrupts,
    the_connected_browser,
)
from support.pages import ref_of
from support.wait import in_ci, wait_until

WINDOWS = ("chrome.windows.getAll({populate: true}).then(ws => ws.map(w => ({id: w.id, "
           "type: w.type, state: w.state, focused: w.focused, width: w.width, "
           "height: w.height, tabs: w.tabs.map(t => t.url)})))")


def windows(ext: BrowserWithExtension) -> dict[int, dict[str, Any]]:
    """The browser's windows as the extension sees them (chrome.windows), by id."""
    return {w["id"]: w for w in ext.worker_eval(WINDOWS)}


def test_handshake_in_a_headed_browser(headed_ext_browser: BrowserWithExtension) -> None:
    b = the_connected_browser(headed_ext_browser)
    listed = headed_ext_browser.bsk("browsers", as_json=False)
    assert listed.code == 0 and b["browser_id"] in listed.stdout, listed.stdout
    # Really headed: no "HeadlessChrome" in the user agent, and a real window.
    assert "Headless" not in headed_ext_browser.worker_eval("navigator.userAgent")
    (user,) = windows(headed_ext_browser).values()
    assert (user["type"], user["state"]) == ("normal", "normal")


def test_agent_window_is_a_window_of_its_own(headed_ext_browser: BrowserWithExtension,
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


def test_overlay_stop_interrupts_in_a_headed_browser(headed_ext_browser: BrowserWithExtension,
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


def test_a_click_leaves_the_focus_with_the_user(headed_ext_browser: BrowserWithExtension,
                                               xdotool: Any, site: str,
                                               cross_site: str) -> None:
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
    # The same in an out-of-process iframe, which renders apart (its own emulation).
    port = cross_site.rsplit(":", 1)[1]
    s.ok("open", f"{site}/form-frames.html?cross={port}")
    frame_url = f"{cross_site}/login.html"
    frame = wait_until(lambda: next((t["targetId"] for t in browser_cdp(
        ext.chromium, "Target.getTargets")["targetInfos"] if t["type"] == "iframe"
        and t["url"] == frame_url), None), what="the out-of-process iframe")
    browser_cdp(ext.chromium, "Runtime.evaluate", {"expression": (
        "window.seen = []; addEventListener('blur', () => seen.push('window blur')); "
        "username.addEventListener('blur', () => seen.push('username blur'))")},
        session_of=frame)
    snap = s.ok("snapshot")["result"]["snapshot"]
    cross_username = re.findall(r'- textbox "Username" \[ref=(f\d+e\d+)\]', snap)[-1]
    s.ok("click", cross_username)
    wait_until(focus_is_the_users, what="the focus to be back in the user's window")
    inside = browser_cdp(ext.chromium, "Runtime.evaluate", {
        "expression": "({seen, active: document.activeElement.id, "
                      "focused: document.hasFocus()})", "returnByValue": True},
        session_of=frame)["result"]["value"]
    assert inside == {"seen": [], "active": "username", "focused": True}, inside
    s.ok("session", "stop")
    wait_until(lambda: agent_id not in windows(ext), what="the Agent Window to close")
    assert focus_is_the_users()


def screen_area(display: str, left: int, top: int, width: int, height: int
                ) -> list[list[tuple[int, int, int]]]:
    """The RGB pixels of a part of the X screen, row by row (XGetImage, through libX11)."""
    x11 = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11") or "libX11.so.6")

    class XImage(ctypes.Structure):
        _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int),
                    ("xoffset", ctypes.c_int), ("format", ctypes.c_int),
                    ("data", ctypes.POINTER(ctypes.c_ubyte)), ("byte_order", ctypes.c_int),
                    ("bitmap_unit", ctypes.c_int), ("bitmap_bit_order", ctypes.c_int),
                    ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
                    ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int)]

    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XDefaultRootWindow.restype = ctypes.c_ulong
    x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x11.XGetImage.restype = ctypes.POINTER(XImage)
    x11.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                              ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    conn = x11.XOpenDisplay(display.encode())
    assert conn, f"cannot open X display {display}"
    try:
        image = x11.XGetImage(conn, x11.XDefaultRootWindow(conn), left, top, width, height,
                              0xFFFFFFFF, 2).contents  # ZPixmap, 32 bits a pixel (BGRX)
        assert image.bits_per_pixel == 32, image.bits_per_pixel
        line = image.bytes_per_line
        raw = ctypes.string_at(image.data, line * height)
    finally:
        x11.XCloseDisplay(conn)
    return [[(raw[r * line + c * 4 + 2], raw[r * line + c * 4 + 1], raw[r * line + c * 4])
             for c in range(width)] for r in range(height)]


def cancel_button(display: str, bounds: dict[str, Any]) -> tuple[int, int] | None:
    """Where the debugging bar's blue Cancel button is, in the top of a window (its
    bounds): the middle of the first button-sized blue blob there (None: not shown)."""
    left, top, width, height = bounds["left"], bounds["top"], bounds["width"], 240
    pixels = screen_area(display, left, top, width, height)

    def blue(r: int, c: int) -> bool:
        red, green, b = pixels[r][c]
        return b > 180 and red < 60 and 60 < green < 120

    seen: set[tuple[int, int]] = set()
    for start in ((r, c) for r in range(height) for c in range(width)):
        if start in seen or not blue(*start):
            continue
        blob, todo = {start}, [start]
        while todo:
            r, c = todo.pop()
            for n in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if 0 <= n[0] < height and 0 <= n[1] < width and n not in blob and blue(*n):
                    blob.add(n)
                    todo.append(n)
        seen |= blob
        rows, cols = [r for r, _ in blob], [c for _, c in blob]
        if 40 < max(cols) - min(cols) < 200 and 15 < max(rows) - min(rows) < 60:
            return left + (min(cols) + max(cols)) // 2, top + (min(rows) + max(rows)) // 2
    return None


def test_cancel_on_the_debugging_bar_ends_the_sessions(headed_ext_browser: BrowserWithExtension,
                                                      xvfb: str, xdotool: Any,
                                                      site: str) -> None:
    """The user presses Cancel on '"BrowserSkill" started debugging this browser': Chrome
    detaches every tab. The sessions on that browser end, saying why; the call in flight
    ends interrupted; nothing is re-attached; the Agent Windows stay open to the user;
    a borrowed tab goes back to the user's window."""
    ext = headed_ext_browser
    user_id = min(i for i, w in windows(ext).items() if w["type"] == "normal")
    chrome_tab = ext.worker_eval(f"chrome.tabs.create({{windowId: {user_id}, "
                                 f"url: '{site}/counter.html#mine'}}).then(t => t.id)")
    index = ext.worker_eval(f"chrome.tabs.get({chrome_tab}).then(t => t.index)")
    a, b = agent_session(ext, "cancel-a"), agent_session(ext, "cancel-b")
    a_window = ext.worker_eval("bsk.agent['cancel-a'].windowId")
    b_window = ext.worker_eval("bsk.agent['cancel-b'].windowId")
    a.ok("open", f"{site}/counter.html")
    (own,) = a.ok("tab", "list")["result"]["tabs"]
    b.ok("open", f"{site}/login.html")
    # Session a borrows the user's tab (the user approves in it).
    mine = next(t for t in ext.page_targets() if t["url"].endswith("#mine"))["targetId"]
    hand = PageDevTools(ext.chromium, mine)
    borrowing = a.popen("tab", "borrow", f"u{chrome_tab}")
    answer_prompt(hand, "approve")
    assert answer_of(borrowing)[0] == 0
    hand.close()
    a.ok("tab", "select", own["tab_id"])
    running = a.popen("eval", "await slow('x', 20000)")
    wait_until(lambda: live_ops(a, "dispatched"), what="the eval to be dispatched")
    # The user presses Cancel on the bar (in the window on top: every window shows it).
    (on_top,) = xdotool("search", "--name", "^Log in - ").split()[:1]
    xdotool("windowraise", on_top)
    x, y = wait_until(lambda: cancel_button(xvfb, ext.worker_eval(
        f"chrome.windows.get({b_window})")), what="the debugging bar's Cancel button")
    xdotool("mousemove", str(x), str(y), "click", "1")
    code, answer = answer_of(running)
    assert code == 9 and answer["error"]["details"]["reason"] == "debugging_cancelled", answer
    for s in (a, b):
        r = s("eval", "1 + 1")
        assert r.code == 3 and r.json["error"]["code"] == "session_not_found", r.stdout
        assert "the user cancelled debugging in the browser" in r.json["error"]["message"]
    assert not {"cancel-a", "cancel-b"} & {x["session_id"] for x in
                                           ext.bsk.ok("session", "list")["sessions"]}
    # Nothing of theirs is closed or touched again: the borrowed tab is back where it
    # was, the Agent Windows stay with their pages (no overlay), nothing is attached.
    wait_until(lambda: ext.worker_eval(f"chrome.tabs.get({chrome_tab}).then(t => "
                                       f"[t.windowId, t.index])") == [user_id, index],
               what="the borrowed tab to be back in the user's window")
    now = windows(ext)
    assert now[a_window]["tabs"] == [f"{site}/counter.html"]
    assert now[b_window]["tabs"] == [f"{site}/login.html"]
    hand = PageDevTools(ext.chromium, own["target_id"])
    wait_until(lambda: hand.find("data-bsk", "stop") is None, what="the overlay to go")
    hand.close()
    assert ext.worker_eval("chrome.debugger.getTargets().then(ts => ts.filter(t => "
                           "t.attached && t.tabId !== undefined).length)") == 0
    assert ext.worker_eval("Object.keys(bsk.agent)") == []
    # The user may let an agent in again: a new session attaches anew.
    again = agent_session(ext, "cancel-again")
    assert again("eval", "1 + 1").value == 2
    again.ok("session", "stop")
    ext.worker_eval(f"Promise.all([{a_window}, {b_window}].map(w => chrome.windows.remove(w)))"
                    f".then(() => chrome.tabs.remove({chrome_tab})).then(() => true)")
