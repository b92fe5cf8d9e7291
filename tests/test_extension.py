"""The user's own browser through the real BrowserSkill extension (headless Chromium with
--load-extension): handshake, the relay, borrow/return, user interrupt, lost link.
test_extension_headed.py runs the core of it in a headed Chromium (on Xvfb)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from support.chromium import PageDevTools, browser_cdp
from support.cli import Bsk, alive, answer_of, daemon_pid, kill_daemon_hard, live_ops
from support.extension import (
    BrowserWithExtension,
    agent_session,
    answer_prompt,
    log_in_through_the_relay,
    stop_button_interrupts,
    the_connected_browser,
)
from support.pages import clicks_report_the_state_they_left, ref_of
from support.site import open_gate
from support.wait import wait_until

from browserskill.base.paths import log_path


def test_handshake_lists_the_browser(ext_browser: BrowserWithExtension) -> None:
    the_connected_browser(ext_browser)


def test_session_tools_through_the_relay(ext_browser: BrowserWithExtension, site: str) -> None:
    before = {t["targetId"] for t in ext_browser.page_targets()}
    s = agent_session(ext_browser)
    log_in_through_the_relay(s, site)
    # The session's tab is a new one (its Agent Window), not the user's.
    (mine,) = s.ok("tab", "list")["result"]["tabs"]
    assert mine["target_id"] not in before
    s.ok("session", "stop")
    wait_until(lambda: mine["target_id"] not in {t["targetId"] for t in
                                                 ext_browser.page_targets()},
               what="the Agent Window's tab to close")


def test_restricted_pages_are_refused(ext_browser: BrowserWithExtension) -> None:
    s = agent_session(ext_browser)
    r = s("open", "chrome://settings")
    assert r.code == 11, r.stdout
    assert "does not open a browser page" in r.json["error"]["message"]
    assert s("eval", "1 + 1").value == 2  # the session goes on


def user_tab(ext: BrowserWithExtension, site: str, page: str) -> tuple[str, PageDevTools]:
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


def test_borrow_approved_then_returned(ext_browser: BrowserWithExtension, site: str) -> None:
    _, hand = user_tab(ext_browser, site, "counter.html")
    s = agent_session(ext_browser)
    before = listed(s, "counter.html")
    assert before["borrowed_by"] is None
    assert listed(s, "#other")["window_id"] == before["window_id"]
    nowhere = s("tab", "borrow", "u999999")  # no such tab of the user's: not found
    assert nowhere.code == 3 and nowhere.json["error"]["code"] == "tab_not_found", nowhere
    assert "--scope user" in nowhere.json["error"]["hint"]
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
    gone = s("tab", "return", tab_id)  # given back already: not one of the session's tabs
    assert gone.code == 3 and gone.json["error"]["code"] == "tab_not_found", gone
    after = listed(s, "counter.html")
    assert after["borrowed_by"] is None and after["window_id"] == before["window_id"]
    # The user's page is theirs again: no overlay left in it.
    assert hand.find("data-bsk", "stop") is None
    hand.close()


def test_session_stop_returns_borrowed_tabs(ext_browser: BrowserWithExtension, site: str) -> None:
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


def test_borrow_denied_or_unanswered_leaves_the_tab(ext_browser: BrowserWithExtension,
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
        ext_browser: BrowserWithExtension, site: str) -> None:
    stop_button_interrupts(ext_browser, agent_session(ext_browser), site)


def slow_press(ext: BrowserWithExtension, site: str, gate: str) -> tuple[Bsk, Any, str]:
    """A session clicking a button whose mousedown blocks the page until the test opens
    `{gate}-slow-down`; returned once the click's steps are recorded as sent: (session,
    the CLI process, its op id)."""
    s = agent_session(ext)
    s.ok("open", f"{site}/slow-input.html?gate={gate}")
    button = ref_of(s.ok("snapshot")["result"]["snapshot"], "button", "Slow press")
    clicking = s.popen("click", button)
    (op,) = wait_until(lambda: [o for o in live_ops(s, "dispatched") if "mousePressed" in
                                json.dumps(s.ok("op", "show", o["op_id"]))],
                       what="mousePressed sent")
    return s, clicking, op["op_id"]


def test_lost_websocket_mid_click_is_outcome_unknown_then_readopted(
        ext_browser: BrowserWithExtension, site: str) -> None:
    gate = f"drop-{uuid.uuid4().hex[:8]}"
    s, clicking, _ = slow_press(ext_browser, site, gate)
    ext_browser.worker_eval("bsk.reconnectNow(), true")  # the WebSocket drops
    code, answer = answer_of(clicking)
    open_gate(f"{gate}-slow-down")
    assert code == 9 and answer["status"] == "outcome_unknown"
    assert "mousePressed" in answer["error"]["details"].get("steps_sent", [])
    # The extension reconnects with the same instance id: the session's tab is
    # re-adopted (same tab id), not duplicated.
    last: list[Any] = []  # the last refusal, for a failure to say what it was

    def readopted() -> bool:
        r = s("eval", "document.title")
        last[:] = [r.json.get("error") if r.json else r.stdout]
        return r.code == 0

    try:
        wait_until(readopted, what="the re-adopted tab")
    except AssertionError as e:
        log = log_path(s.home)
        tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
        raise AssertionError(f"{e}; the last eval said {last}; daemon log:\n"
                             + "\n".join(tail)) from e
    assert [t["tab_id"] for t in s.ok("tab", "list")["result"]["tabs"]] == ["t1"]
    assert len(ext_browser.connected()) == 1


def test_a_message_between_a_new_connection_and_its_welcome_is_not_sent(
        ext_browser: BrowserWithExtension, site: str) -> None:
    # A page's event can fire while a new connection is still being welcomed (after a
    # drop, as above). Sent then, it reaches the daemon before the hello, which refuses
    # the browser for good (bad_handshake): it must wait for the welcome, or be dropped.
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    ext_browser.worker_eval("""(async () => {
        const turn = () => new Promise((r) => {  // a task's turn, never clamped as timers are
          const channel = new MessageChannel();
          channel.port1.onmessage = r;
          channel.port2.postMessage(0);
        });
        bsk.reconnectNow();
        const until = Date.now() + 5000;  // a ping on every turn until it is welcomed
        while (bsk.link.state === "connected" && Date.now() < until) await turn();  // the old one's
        while (bsk.link.state !== "connected" && Date.now() < until) {
          bsk.send({ type: "ping", t: Date.now() });
          await turn();
        }
        return true;
      })()""")
    try:
        wait_until(lambda: ext_browser.worker_eval("bsk.link.state") == "connected", 10,
                   "the extension to be welcomed again")
    except AssertionError as e:  # refused, before the fix: a ping came before the hello
        raise AssertionError(f"{e}; its link: {ext_browser.worker_eval('bsk.link')}") from e
    wait_until(lambda: s("eval", "document.title").code == 0, what="the re-adopted tab")


def test_a_click_cancelled_mid_sequence_never_sends_its_release_on_the_element(
        ext_browser: BrowserWithExtension, site: str) -> None:
    # The extension runs move/press/release itself; the cancel must stop it before the
    # release, which then goes off the page: the element is never clicked.
    gate = f"abort-{uuid.uuid4().hex[:8]}"
    s, clicking, op_id = slow_press(ext_browser, site, gate)
    s.ok("op", "cancel", op_id)  # while the page holds its mousedown
    # The page goes on only once the extension holds the daemon's abort of the sequence.
    wait_until(lambda: ext_browser.worker_eval("bsk.abortsPending") > 0,
               what="the abort at the extension")
    open_gate(f"{gate}-slow-down")
    code, answer = answer_of(clicking)
    assert code == 9 and answer["status"] == "outcome_unknown", answer
    assert answer["error"]["details"]["steps_sent"] == [
        "mouseMoved", "mousePressed", "mouseReleased"]  # recorded before the one hop
    assert [c["action"] for c in answer["error"]["details"]["compensation"]] == [
        "mouse_released"]
    events = wait_until(lambda: (lambda r: r.value if r.code == 0 else None)(
        s("eval", "window.events")), what="the page to answer again")
    assert "slow-down:up" not in events and "slow-down:click" not in events, events
    assert s("eval", "window.pressedNow").value is False  # and no button is held


def test_clicks_report_their_state_through_the_relay(ext_browser: BrowserWithExtension,
                                                     site: str) -> None:
    # The read rides in the click's own sequence through the extension.
    clicks_report_the_state_they_left(agent_session(ext_browser), site)


def test_only_the_extension_may_connect(ext_browser: BrowserWithExtension, site: str) -> None:
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
    # (tests/test_extension_pairing.py: it must prove its pairing too.)
    origin = "chrome-extension://pebaeafhdkemkkghlhipicmckejioeln"
    with connect(url, origin=origin) as ws:  # type: ignore[arg-type]
        assert json.loads(ws.recv(timeout=5))["type"] == "challenge"
        ws.send(json.dumps({"type": "hello", "protocol": 99, "min_protocol": 99,
                            "instance_id": "x"}))
        refused = json.loads(ws.recv(timeout=5))
        assert refused["type"] == "refused" and "protocol" in refused["reason"]


def test_borrow_cancelled_while_asking_is_undone(ext_browser: BrowserWithExtension,
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


def test_webmcp_list_and_invoke_through_the_relay(ext_browser: BrowserWithExtension,
                                                  site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/webmcp.html")
    tools = {t["name"]: t for t in s.ok("webmcp", "list")["result"]["tools"]}
    assert {"echo", "add_item", "fail"} <= set(tools)
    assert tools["echo"]["tool_ref"] == "t1/f0/echo"
    answer = s.ok("webmcp", "invoke", "echo", "--input", '{"text": "hi"}')["result"]
    assert answer["status"] == "completed" and answer["ok"] is True
    assert answer["output"] == {"echo": {"text": "hi"}, "title": "WebMCP tools"}
    added = s.ok("webmcp", "invoke", "t1/f0/add_item", "--input", '{"item": "lamp"}')
    assert added["result"]["output"]["added"] == "lamp"
    assert s("eval", "window.runs").value == ["echo", "add_item:lamp"]  # each ran once
    failed = s("webmcp", "invoke", "fail")
    assert failed.code == 0 and "out of stock" in failed.json["result"]["exception"]
    # A deadline under a pending call: WebMCP.cancelInvocation goes through the relay too.
    r = s("--timeout", "1", "webmcp", "invoke", "hang")
    assert r.code == 9 and r.json["status"] == "outcome_unknown"
    assert r.json["error"]["details"]["tool_status"] == "Canceled"


def test_daemon_killed_then_extension_sessions_are_readopted(ext_browser: BrowserWithExtension,
                                                              site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    s.ok("eval", "window.kept = 42")
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    gone = agent_session(ext_browser, "gone")
    (gone_tab,) = gone.ok("tab", "list")["result"]["tabs"]
    pid = kill_daemon_hard(ext_browser.bsk.home)
    # While no daemon runs, the user closes one session's Agent Window.
    browser_cdp(ext_browser.chromium, "Target.closeTarget", {"targetId": gone_tab["target_id"]})
    wait_until(lambda: gone_tab["target_id"] not in {t["targetId"] for t in
                                                     ext_browser.page_targets()},
               what="the closed Agent Window's tab to go")
    # The next call spawns a new daemon (with the extension port from the environment);
    # until the extension has reconnected, calls are browser_unavailable.
    first = s("eval", "window.kept")
    assert first.code == 0 or first.json["error"]["code"] == "browser_unavailable", first
    wait_until(lambda: s("eval", "window.kept").code == 0, what="the re-adopted session")
    assert daemon_pid(ext_browser.bsk.home) not in (None, pid)
    assert s("eval", "window.kept").value == 42  # the same page, its state intact
    (again,) = s.ok("tab", "list")["result"]["tabs"]
    assert (again["tab_id"], again["target_id"]) == ("t1", tab["target_id"])
    assert sum(t["targetId"] == tab["target_id"] for t in ext_browser.page_targets()) == 1
    snap = s.ok("snapshot")["result"]["snapshot"]
    s.ok("click", ref_of(snap, "button", "Add one"))
    # The session whose window was closed meanwhile ended, saying why.
    r = wait_until(lambda: (lambda r: r if r.code != 0 and r.json["error"]["code"] ==
                            "session_not_found" else None)(gone("eval", "1")),
                   what="the closed window's session to end")
    assert "Agent Window was closed" in r.json["error"]["message"]
    assert ext_browser.bsk.ok("status")["sessions_at_start"][
        "awaiting_browser"] == ["agent", "gone"]
    assert len(ext_browser.connected()) == 1


def test_gone_tab_versus_gone_browser_is_judged_by_the_sessions_own_link(
        ext_browser: BrowserWithExtension, site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    second = s.ok("tab", "new", f"{site}/login.html")["result"]["tab_id"]
    (closed,) = [t for t in s.ok("tab", "list")["result"]["tabs"] if t["tab_id"] == second]
    # The user closes one agent tab (the daemon's own browser is not even running): the
    # tab is gone, the browser is not.
    browser_cdp(ext_browser.chromium, "Target.closeTarget", {"targetId": closed["target_id"]})
    # Once the daemon knows (a call racing the close may have reached the page: that one
    # would honestly be outcome_unknown), calls on it fail at once, nothing sent.
    wait_until(lambda: any(t["tab_id"] == second and t.get("gone")
                           for t in s.ok("tab", "list")["result"]["tabs"]),
               what="the closed tab to be known gone")
    r = s("eval", "1")
    assert r.json["error"]["code"] == "action_failed", r.stdout
    assert r.json["error"]["details"]["reason"] == "tab_gone"
    # The extension disconnected while the daemon's own browser runs (another session):
    # the extension session's calls are browser_unavailable, nothing sent.
    ext_browser.bsk.ok("session", "start", "embedded")
    assert ext_browser.worker_eval("bsk.configure({port: 1})")  # pointed nowhere
    wait_until(lambda: not ext_browser.connected(), what="the extension to disconnect")
    for args in (("eval", "1"), ("click", "e1"), ("snapshot",)):  # on the gone tab
        r = s(*args)
        assert r.json["error"]["code"] == "browser_unavailable", r.stdout
        assert r.json["dispatched"] == "no"
    assert ext_browser.bsk.with_session("embedded")("eval", "1 + 1").value == 2
    assert ext_browser.worker_eval(f"bsk.configure({{port: {ext_browser.port}}})")
    wait_until(lambda: s("tab", "list").code == 0 and ext_browser.connected(),
               what="the extension to reconnect")
    wait_until(lambda: s("tab", "select", "t1").code == 0, what="the re-adopted tab")
    assert s("eval", "document.title").value == "Counter"


def test_tabs_the_agents_page_opens_join_its_session(ext_browser: BrowserWithExtension,
                                                     site: str) -> None:
    before = {t["targetId"] for t in ext_browser.page_targets()}
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/click.html")
    snap = s.ok("snapshot")["result"]["snapshot"]
    assert s.ok("click", ref_of(snap, "link", "Open in new tab"))["result"]["new_tabs"] == [
        "t2"]
    assert s.ok("click", ref_of(snap, "button", "Pop up"))["result"]["new_tabs"] == ["t3"]
    tabs = {t["tab_id"]: t for t in s.ok("tab", "list")["result"]["tabs"]}
    assert set(tabs) == {"t1", "t2", "t3"} and tabs["t1"]["current"]
    s.ok("tab", "select", "t2")
    assert s("eval", "document.title").value == "Other"
    s.ok("tab", "select", "t3")
    assert s("eval", "location.pathname").value == "/other.html"
    # A tab the user opens from their own tab is not the agent's.
    (user_target,) = [t["targetId"] for t in ext_browser.page_targets()
                      if t["targetId"] in before and t["url"] == "about:blank"][:1]
    browser_cdp(ext_browser.chromium, "Runtime.evaluate",
                {"expression": f"window.open('{site}/other.html')", "userGesture": True},
                session_of=user_target)
    wait_until(lambda: sum(t["url"].endswith("/other.html")
                           for t in ext_browser.page_targets()) == 3, what="the user's tab")
    assert set(t["tab_id"] for t in s.ok("tab", "list")["result"]["tabs"]) == {
        "t1", "t2", "t3"}
    # The agent's own new tab is not taken for one its page opened.
    assert s.ok("tab", "new", f"{site}/counter.html")["result"]["tab_id"] == "t4"
    assert s("eval", "document.title").value == "Counter"
    assert len(s.ok("tab", "list")["result"]["tabs"]) == 4
    s.ok("session", "stop")
    wait_until(lambda: sum(t["url"].endswith("/other.html")
                           for t in ext_browser.page_targets()) == 1,
               what="the session's tabs to close, the user's to stay")


def test_session_store_gains_the_browser_column_on_an_older_database() -> None:
    import sqlite3

    from browserskill.session.session_store import SessionStore

    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript("""CREATE TABLE sessions (session_id TEXT PRIMARY KEY, label TEXT,
        created_at REAL NOT NULL, tabs TEXT NOT NULL, current_tab TEXT,
        tab_seq INTEGER NOT NULL, ended_at REAL, ended_reason TEXT);
        INSERT INTO sessions VALUES ('old', NULL, 1.0, '[["t1", "T"]]', 't1', 1, NULL, NULL);
    """)
    store = SessionStore(db)
    (old,) = store.open_sessions()
    assert (old.session_id, old.tabs, old.browser) == ("old", [("t1", "T")], None)
    SessionStore(db)  # a second start finds the column there
    assert [r[1] for r in db.execute("PRAGMA table_info(sessions)")].count("browser") == 1


def test_popup_window_opened_by_the_agents_page_joins_its_session(
        ext_browser: BrowserWithExtension, site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    s.ok("eval", "window.open('/other.html', 'pop', 'popup,width=320,height=240'), 1")
    wait_until(lambda: len(s.ok("tab", "list")["result"]["tabs"]) == 2, what="the popup")
    s.ok("tab", "select", "t2")
    wait_until(lambda: s("eval", "document.title").value == "Other", what="the popup's page")
    # Its overlay (with Stop) is there, and back after the popup navigates.
    s.ok("open", f"{site}/counter.html")
    (popup,) = [t for t in s.ok("tab", "list")["result"]["tabs"] if t["tab_id"] == "t2"]
    hand = PageDevTools(ext_browser.chromium, popup["target_id"])
    wait_until(lambda: hand.find("data-bsk", "stop") is not None,
               what="the popup's overlay after its navigation")
    hand.close()
    s.ok("session", "stop")
    wait_until(lambda: not any(t["url"].endswith("/other.html")
                               for t in ext_browser.page_targets()),
               what="the popup to close with the session")


def test_window_resize_resizes_the_agent_window_only(ext_browser: BrowserWithExtension,
                                                     site: str) -> None:
    def window_of(target_id: str) -> dict[str, Any]:  # as the browser itself says
        return browser_cdp(ext_browser.chromium, "Browser.getWindowForTarget",
                           {"targetId": target_id})

    user = next(t for t in ext_browser.page_targets() if t["url"] == "about:blank")
    users_window = window_of(user["targetId"])
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/counter.html")
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    agent_window = window_of(tab["target_id"])
    assert agent_window["windowId"] != users_window["windowId"]
    resized = s.ok("window", "resize", "900", "600")["result"]
    assert (resized["tab_id"], resized["window_id"]) == ("t1", agent_window["windowId"])
    assert {k: resized["window"][k] for k in ("width", "height", "windowState")} == {
        "width": 900, "height": 600, "windowState": "normal"}
    assert isinstance(resized["window"]["left"], int)
    assert resized["page"]["width"] == 900
    assert s("eval", "[outerWidth, outerHeight, innerWidth]").value == [900, 600, 900]
    # A minimized window is set to normal first, as over CDP.
    browser_cdp(ext_browser.chromium, "Browser.setWindowBounds", {
        "windowId": agent_window["windowId"], "bounds": {"windowState": "minimized"}})
    again = s.ok("window", "resize", "1000", "650")["result"]["window"]
    assert (again["width"], again["height"], again["windowState"]) == (1000, 650, "normal")
    assert s("eval", "[outerWidth, outerHeight]").value == [1000, 650]
    assert window_of(tab["target_id"])["bounds"]["width"] == 1000
    # The user's window was never touched.
    assert window_of(user["targetId"])["bounds"] == users_window["bounds"]
    # Nor is a popup window the agent's page opened (not the Agent Window): refused.
    s.ok("eval", "window.open('/other.html', 'pop', 'popup,width=320,height=240'), 1")
    wait_until(lambda: len(s.ok("tab", "list")["result"]["tabs"]) == 2, what="the popup")
    s.ok("tab", "select", "t2")
    popup = next(t for t in s.ok("tab", "list")["result"]["tabs"] if t["tab_id"] == "t2")
    before = window_of(popup["target_id"])["bounds"]
    r = s("window", "resize", "800", "500")
    assert r.code == 11 and r.json["dispatched"] == "no", r.stdout
    assert "not an Agent Window" in r.json["error"]["message"]
    assert window_of(popup["target_id"])["bounds"] == before


GRACE_S = 3  # the extension grace of the daemons below (BSK_EXTENSION_GRACE)


def grace_browser(make_bsk: Any, tmp_path: Any, idle_s: float = 1800) -> Any:
    """ext_browser with a short reconnect grace (and idle timeout) in the daemon's env."""
    from support.chromium import free_port
    from support.extension import extension_browser

    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port), BSK_EXTENSION_GRACE=str(GRACE_S),
                      BSK_IDLE_TIMEOUT=str(idle_s))
    return extension_browser(runner, port, tmp_path / "chromium.log")


def test_a_browser_that_never_reconnects_ends_its_sessions_after_the_grace(
        make_bsk: Any, tmp_path: Any, site: str) -> None:
    import time

    with grace_browser(make_bsk, tmp_path, idle_s=5) as ext:
        s = agent_session(ext)
        s.ok("open", f"{site}/counter.html")
        (tab,) = s.ok("tab", "list")["result"]["tabs"]
        assert ext.worker_eval("bsk.configure({port: 1})")  # pointed nowhere: gone for good
        wait_until(lambda: not ext.connected(), what="the extension to disconnect")
        (b,) = ext.bsk.ok("browsers")["browsers"]
        assert b["sessions"] == ["agent"] and 0 < b["grace_ends_at"] - time.time() <= GRACE_S
        # Meanwhile: browser_unavailable, nothing sent, as before.
        r = s("eval", "1")
        assert r.json["error"]["code"] == "browser_unavailable" and r.json["error"]["hint"]
        assert r.json["dispatched"] == "no"
        ended = wait_until(lambda: (lambda r: r if r.code != 0 and r.json["error"]["code"]
                                    == "session_not_found" else None)(s("eval", "1")),
                           GRACE_S + 15, "the session to end after the grace")
        assert (f"the browser's extension did not reconnect within {GRACE_S} s"
                in ended.json["error"]["message"])
        assert ext.bsk.ok("session", "list")["sessions"] == []
        assert "grace_ends_at" not in ext.bsk.ok("browsers")["browsers"][0]
        # The Agent Window could not be closed meanwhile; when the extension comes back,
        # it is tidied up.
        assert tab["target_id"] in {t["targetId"] for t in ext.page_targets()}
        assert ext.worker_eval(f"bsk.configure({{port: {ext.port}}})")
        wait_until(lambda: tab["target_id"] not in {t["targetId"] for t in
                                                     ext.page_targets()},
                   what="the ended session's Agent Window to close")
        # Nothing left to wait for: the daemon idles out (no more calls from here on).
        pid = daemon_pid(ext.bsk.home)
        assert pid is not None
        wait_until(lambda: not alive(pid), 30, "the daemon to exit when idle")


def test_a_browser_that_reconnects_within_the_grace_keeps_its_sessions(
        make_bsk: Any, tmp_path: Any, site: str) -> None:
    import time

    with grace_browser(make_bsk, tmp_path) as ext:
        s = agent_session(ext)
        s.ok("open", f"{site}/counter.html")
        s.ok("eval", "window.kept = 7")
        assert ext.worker_eval("bsk.configure({port: 1})")
        wait_until(lambda: not ext.connected(), what="the extension to disconnect")
        deadline = ext.bsk.ok("browsers")["browsers"][0]["grace_ends_at"]
        assert ext.worker_eval(f"bsk.configure({{port: {ext.port}}})")
        wait_until(lambda: s("eval", "window.kept").code == 0, what="the re-adopted session")
        assert "grace_ends_at" not in ext.bsk.ok("browsers")["browsers"][0]
        wait_until(lambda: time.time() > deadline + 1, GRACE_S + 5,
                   "the grace period the reconnect cancelled to pass")
        assert s("eval", "window.kept").value == 7  # the same session, the same page
        assert [x["session_id"] for x in ext.bsk.ok("session", "list")["sessions"]] == [
            "agent"]


def test_state_tools_through_the_relay(ext_browser: BrowserWithExtension, site: str,
                                       tmp_path: Path) -> None:
    """Cookies, storage and state save/load work in the user's browser too (its profile:
    an extension session is never isolated)."""
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/login.html")
    s.ok("cookies", "set", "relay_cookie", "v1", "--http-only")
    listed = {c["name"]: c for c in s.ok("cookies", "list", "--url", site)["result"]["cookies"]}
    assert listed["relay_cookie"]["httpOnly"] is True
    s.ok("storage", "set", "relay_key", "v2")
    assert s.ok("storage", "get", "relay_key")["result"]["value"] == "v2"
    saved = s.ok("state", "save", str(tmp_path / "state.json"))["result"]
    assert saved["origins"] == [site]
    state = json.loads((tmp_path / "state.json").read_text())
    assert {"name": "relay_key", "value": "v2"} in state["origins"][0]["localStorage"]
    assert s.ok("cookies", "delete", "relay_cookie")["result"]["deleted"] == 1
    refused = ext_browser.bsk("session", "start", "iso", "--browser", "extension",
                              "--isolated")
    assert refused.code == 2 and refused.json["error"]["details"]["field"] == "isolated"
