"""The user's own browser through the real BrowserSkill extension (headless Chromium with
--load-extension): handshake, the relay, borrow/return, user interrupt, lost link."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from conftest import Bsk, ExtensionBrowser, PageDevTools, live_ops, ref_of, wait_until


def answer_of(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out)


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
    assert r.code == 11, r.stdout
    assert "does not open a browser page" in r.json["error"]["message"]
    assert s("eval", "1 + 1").value == 2  # the session goes on


def user_tab(ext: ExtensionBrowser, site: str, page: str) -> tuple[str, PageDevTools]:
    """The user's own tab (the browser's first one) showing `page`, driven directly."""
    target = next(t for t in ext.page_targets() if t["url"] == "about:blank")["targetId"]
    hand = PageDevTools(ext.chromium, target)
    # A second tab in the same window, so the window outlives the borrow of this one.
    hand.send("Target.createTarget", {"url": "about:blank#other", "newWindow": False},
              browser=True)
    hand.send("Page.navigate", {"url": f"{site}/{page}"})
    wait_until(lambda: hand.send("Runtime.evaluate", {"expression": "document.readyState",
                                                      "returnByValue": True})
               ["result"]["value"] == "complete", what="the user's page to load")
    return target, hand


def listed(s: Bsk, page: str) -> dict[str, Any]:
    return next(t for t in s.ok("tab", "list", "--scope", "user")["result"]["tabs"]
                if t["url"].endswith(page))


def answer_prompt(hand: PageDevTools, button: str) -> None:
    node = wait_until(lambda: hand.find("data-bsk", button), what=f"the {button} button")
    hand.click(node)


def test_borrow_approved_then_returned(ext_browser: ExtensionBrowser, site: str) -> None:
    _, hand = user_tab(ext_browser, site, "counter.html")
    s = agent_session(ext_browser)
    before = listed(s, "counter.html")
    assert before["borrowed_by"] is None
    assert listed(s, "#other")["window_id"] == before["window_id"]
    borrowing = s.popen("tab", "borrow", before["tab_id"])
    answer_prompt(hand, "approve")
    code, answer = answer_of(borrowing)
    assert code == 0, answer
    tab_id = answer["result"]["tab_id"]
    assert answer["result"]["from"] == {"window_id": before["window_id"],
                                        "index": before["index"]}
    # Now the agent's current tab, in the Agent Window; tools work on it.
    assert s("eval", "document.title").value == "Counter"
    moved = listed(s, "counter.html")
    assert moved["borrowed_by"] == "agent" and moved["window_id"] != before["window_id"]
    # Nobody else can borrow it; the agent can't close it.
    other = ext_browser.bsk.with_session("other")
    ext_browser.bsk.ok("session", "start", "other", "--browser", "extension")
    r = other("tab", "borrow", before["tab_id"])
    assert r.code == 11 and r.json["error"]["details"]["reason"] == "already_borrowed"
    r = s("tab", "close", tab_id)
    assert r.code == 11 and r.json["error"]["details"]["reason"] == "borrowed_tab"
    back = s.ok("tab", "return", tab_id)["result"]
    assert (back["window_id"], back["index"]) == (before["window_id"], before["index"])
    after = listed(s, "counter.html")
    assert after["borrowed_by"] is None and after["window_id"] == before["window_id"]
    # The user's page is theirs again: no overlay left in it.
    assert hand.find("data-bsk", "stop") is None
    hand.close()


def test_session_stop_returns_borrowed_tabs(ext_browser: ExtensionBrowser, site: str) -> None:
    _, hand = user_tab(ext_browser, site, "counter.html")
    s = agent_session(ext_browser)
    before = listed(s, "counter.html")
    borrowing = s.popen("tab", "borrow", before["tab_id"])
    answer_prompt(hand, "approve")
    assert answer_of(borrowing)[0] == 0
    s.ok("session", "stop")
    watcher = agent_session(ext_browser, "watcher")
    after = listed(watcher, "counter.html")
    assert (after["window_id"], after["index"], after["borrowed_by"]) == (
        before["window_id"], before["index"], None)
    assert hand.send("Runtime.evaluate", {"expression": "document.title", "returnByValue":
                                          True})["result"]["value"] == "Counter"  # not closed
    hand.close()


def test_borrow_denied_or_unanswered_leaves_the_tab(ext_browser: ExtensionBrowser,
                                                    site: str) -> None:
    _, hand = user_tab(ext_browser, site, "counter.html")
    s = agent_session(ext_browser)
    before = listed(s, "counter.html")
    borrowing = s.popen("tab", "borrow", before["tab_id"])
    answer_prompt(hand, "deny")
    code, answer = answer_of(borrowing)
    assert code == 11 and answer["error"]["details"] == {"reason": "borrow_denied",
                                                         "answer": "denied"}
    # No answer within the countdown: denied (fails closed).
    r = s("tab", "borrow", before["tab_id"], "--prompt-timeout", "1")
    assert r.code == 11 and r.json["error"]["details"]["answer"] == "timeout"
    assert hand.find("data-bsk", "approve") is None  # the prompt is gone
    after = listed(s, "counter.html")
    assert (after["window_id"], after["index"], after["borrowed_by"]) == (
        before["window_id"], before["index"], None)
    hand.close()


def test_user_interrupt_stops_the_call_and_refuses_the_next_change_once(
        ext_browser: ExtensionBrowser, site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    hand = PageDevTools(ext_browser.chromium, tab["target_id"])
    running = s.popen("eval", "await slow('x', 20000)")
    wait_until(lambda: live_ops(s, "dispatched"), what="the eval to be dispatched")
    answer_prompt(hand, "stop")  # the user presses Stop in the agent tab's overlay
    code, answer = answer_of(running)
    assert code == 9 and answer["error"]["details"]["reason"] == "user_interrupt"
    assert s.ok("snapshot")["result"]["snapshot"]  # reads still work
    r = s("eval", "window.count = 1")
    assert r.code == 6 and r.json["error"]["code"] == "user_interrupted"
    assert r.json["dispatched"] == "no"
    assert s("eval", "1 + 1").value == 2  # only once
    hand.close()


def test_lost_websocket_mid_click_is_outcome_unknown_then_readopted(
        ext_browser: ExtensionBrowser, site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/slow-input.html")
    button = ref_of(s.ok("snapshot")["result"]["snapshot"], "button", "Slow press")
    clicking = s.popen("click", button)
    wait_until(lambda: [o for o in live_ops(s, "dispatched")
                        if "mousePressed" in json.dumps(s.ok("op", "show", o["op_id"]))],
               what="mousePressed sent")
    ext_browser.worker_eval("bsk.reconnectNow(), true")  # the WebSocket drops
    code, answer = answer_of(clicking)
    assert code == 9 and answer["status"] == "outcome_unknown"
    assert "mousePressed" in answer["error"]["details"].get("steps_sent", [])
    # The extension reconnects with the same instance id: the session's tab is
    # re-adopted (same tab id), not duplicated.
    wait_until(lambda: s("eval", "document.title").code == 0, what="the re-adopted tab")
    assert [t["tab_id"] for t in s.ok("tab", "list")["result"]["tabs"]] == ["t1"]
    assert len(ext_browser.connected()) == 1


def test_only_the_extension_may_connect(ext_browser: ExtensionBrowser, site: str) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    # A page on localhost trying the daemon's port is refused.
    opened = s("eval", "await new Promise(r => { const w = new WebSocket("
               f"'ws://127.0.0.1:{ext_browser.port}/'); w.onopen = () => r('open'); "
               "w.onerror = () => r('refused'); })").value
    assert opened == "refused"
    url = f"ws://127.0.0.1:{ext_browser.port}/"
    for origin in (site, "chrome-extension://someotherextensionidxxxxxxxxxxxx", None):
        try:
            connect(url, origin=origin, open_timeout=5).close()  # type: ignore[arg-type]
            raise AssertionError(f"origin {origin} was let in")
        except InvalidStatus as e:
            assert e.response.status_code == 403
    # The right origin must still say hello first: a wrong handshake is refused.
    origin = "chrome-extension://pebaeafhdkemkkghlhipicmckejioeln"
    with connect(url, origin=origin) as ws:  # type: ignore[arg-type]
        ws.send(json.dumps({"type": "hello", "protocol": 99, "min_protocol": 99,
                            "instance_id": "x"}))
        refused = json.loads(ws.recv(timeout=5))
        assert refused["type"] == "refused" and "protocol" in refused["reason"]


def test_borrow_cancelled_while_asking_is_undone(ext_browser: ExtensionBrowser,
                                                 site: str) -> None:
    _, hand = user_tab(ext_browser, site, "counter.html")
    s = agent_session(ext_browser)
    before = listed(s, "counter.html")
    borrowing = s.popen("tab", "borrow", before["tab_id"])
    wait_until(lambda: hand.find("data-bsk", "approve"), what="the borrow prompt")
    (op,) = live_ops(s, "dispatched")
    s.ok("op", "cancel", op["op_id"])
    code, answer = answer_of(borrowing)
    assert code == 7 and answer["status"] == "cancelled", answer
    assert [c["action"] for c in answer["error"]["details"]["compensation"]] == [
        "prompt_dismissed"]
    wait_until(lambda: hand.find("data-bsk", "approve") is None, what="the prompt to go")
    after = listed(s, "counter.html")
    assert (after["window_id"], after["index"], after["borrowed_by"]) == (
        before["window_id"], before["index"], None)
    # Nothing is left reserved: it can be asked for again.
    again = s.popen("tab", "borrow", before["tab_id"])
    answer_prompt(hand, "approve")
    assert answer_of(again)[0] == 0
    hand.close()
