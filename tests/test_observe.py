"""Reading the page over time against real Chromium: wait, html, console, network, and
screenshot's --full-page and --ref."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import Bsk, answer_of, live_ops
from support.pages import ref_of
from support.wait import wait_until

from browserskill.tools.screenshot import png_size


@pytest.fixture
def page(bsk: Bsk, site: str) -> tuple[Bsk, str]:
    bsk.ok("open", f"{site}/observe.html")
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def test_wait_for_text_and_selector(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    bsk.ok("click", ref_of(snap, "button", "Show later"))  # adds #arrived after 800 ms
    assert bsk("eval", "!!document.querySelector('#arrived')").value is False
    waited = bsk.ok("wait", "--text", "Arrived   late")  # whitespace-insensitive
    assert waited["retry_safe"] is True and waited["status"] == "completed"
    assert waited["result"]["text"] == "Arrived   late"
    assert bsk("eval", "!!document.querySelector('#arrived')").value is True
    found = bsk.ok("wait", "--selector", "p#arrived")["result"]
    assert found["element"] == "p#arrived" and found["visible"] is True


def test_wait_is_rearmed_in_a_new_document(page: tuple[Bsk, str], site: str) -> None:
    bsk, snap = page
    bsk.ok("click", ref_of(snap, "button", "Leave later"))  # navigates after 1 s
    waited = bsk.ok("wait", "--text", "Other page")["result"]
    assert waited["url"] == f"{site}/other.html"


def test_wait_for_navigation_and_network_idle(page: tuple[Bsk, str], site: str) -> None:
    bsk, snap = page
    bsk.ok("click", ref_of(snap, "button", "Fetch"))
    idle = bsk.ok("wait", "--network-idle")["result"]
    assert idle["in_flight"] == 0
    fetched = [e for e in bsk.ok("network")["result"]["entries"] if e["type"] == "Fetch"]
    assert fetched and fetched[-1]["state"] == "finished" and fetched[-1]["status"] == 200

    bsk.ok("click", ref_of(snap, "button", "Leave later"))
    nav = bsk.ok("wait", "--navigation")["result"]
    assert nav["navigated"] is True and nav["url"] == f"{site}/other.html"


def test_wait_errors(page: tuple[Bsk, str]) -> None:
    bsk, _ = page
    r = bsk("--timeout", "1", "wait", "--text", "Never there")
    assert r.code == 11
    answer = r.json
    assert answer["error"]["details"]["reason"] == "timeout" and answer["dispatched"] == "no"
    assert answer["status"] == "failed"
    for args in [(), ("--text", "a", "--ms", "5"), ("--selector", "##nope"),
                 ("--ms", "50000", "--timeout", "10"), ("--text", " ")]:
        bad = bsk("wait", *args)
        assert bad.code == 2, (args, bad.stdout)
        assert bad.json["error"]["code"] == "invalid_params"
    assert bsk.ok("wait", "--ms", "50")["result"]["waited_ms"] == 50


# -- wait in iframes -----------------------------------------------------------------


@pytest.fixture
def frames_page(bsk: Bsk, site: str, cross_site: str) -> tuple[Bsk, str]:
    """wait-frames.html: a same-origin iframe and a cross-site (out-of-process) one."""
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/wait-frames.html?cross={port}")
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def devtools_of(bsk: Bsk) -> tuple[str, str]:
    """The browser's DevTools endpoint and the session's page target."""
    return (bsk.ok("status")["browser"]["cdp_endpoint"],
            bsk.ok("tab", "list")["result"]["tabs"][0]["target_id"])


def live_waits(devtools: tuple[str, str], cross_site: str) -> int:
    """How many `wait` observers are running in the tab's frames now, counted in
    BrowserSkill's isolated worlds by a second DevTools client (the page's and the
    out-of-process iframes' targets)."""
    from websockets.sync.client import connect

    endpoint, page = devtools
    with connect(endpoint, max_size=None) as ws:
        ids = iter(range(1, 10_000))

        def send(method: str, params: dict[str, Any], session: str | None = None,
                 events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
            msg_id = next(ids)
            ws.send(json.dumps({"id": msg_id, "method": method, "params": params,
                                **({"sessionId": session} if session else {})}))
            while True:
                got = json.loads(ws.recv(timeout=10))
                if got.get("id") == msg_id:
                    assert "error" not in got, (method, got["error"])
                    return dict(got["result"])
                if events is not None and got.get("sessionId") == session:
                    events.append(got)

        targets = [page] + [t["targetId"] for t in send("Target.getTargets", {})["targetInfos"]
                            if t["type"] == "iframe" and t["url"].startswith(cross_site)]
        total = 0
        for target in targets:
            session = send("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"]
            events: list[dict[str, Any]] = []
            send("Runtime.enable", {}, session, events)  # reports the contexts there now
            for event in events:
                context = event["params"].get("context", {})
                if event["method"] != "Runtime.executionContextCreated" or \
                        context.get("name") != "browserskill":
                    continue
                answer = send("Runtime.evaluate", {
                    "expression": "globalThis.__bskWaits ? __bskWaits.size : 0",
                    "contextId": context["id"], "returnByValue": True}, session)
                total += answer["result"].get("value", 0)
            send("Target.detachFromTarget", {"sessionId": session})
        return total


def test_wait_for_text_later_in_a_same_origin_iframe(frames_page: tuple[Bsk, str],
                                                      site: str) -> None:
    bsk, snap = frames_page
    bsk.ok("click", ref_of(snap, "button", "Same later"))  # the frame adds it 800 ms later
    waited = bsk.ok("wait", "--text", "Same frame arrival")["result"]
    assert waited["frame_url"] == f"{site}/wait-frame.html?name=same"
    assert waited["url"].startswith(f"{site}/wait-frames.html")
    framed = "document.querySelector('#same').contentDocument.querySelector('#in-same')"
    assert bsk("eval", f"!!{framed}").value is True
    main = bsk.ok("wait", "--text", "Waiting on frames")["result"]  # the main frame's own
    assert "frame_url" not in main


def test_wait_for_a_selector_in_an_out_of_process_iframe(frames_page: tuple[Bsk, str],
                                                         cross_site: str) -> None:
    bsk, snap = frames_page
    bsk.ok("click", ref_of(snap, "button", "Cross later"))
    found = bsk.ok("wait", "--selector", "p#in-cross")["result"]
    assert found["element"] == "p#in-cross" and found["visible"] is True
    assert found["frame_url"] == f"{cross_site}/wait-frame.html?name=cross"
    # The observers of the frames that did not win were stopped, not left to their budget
    # (the call's 30 s deadline): gone well before it.
    devtools = devtools_of(bsk)
    wait_until(lambda: live_waits(devtools, cross_site) == 0, 10, "the losing observers to stop")


def test_wait_sees_an_iframe_added_meanwhile(frames_page: tuple[Bsk, str], site: str) -> None:
    bsk, snap = frames_page
    bsk.ok("click", ref_of(snap, "button", "Frame later"))  # an iframe 800 ms later
    assert bsk("eval", "document.querySelectorAll('iframe').length").value == 2
    waited = bsk.ok("wait", "--text", "Late frame text")["result"]  # its content: later still
    assert waited["frame_url"] == f"{site}/wait-frame.html?name=late&text=Late+frame+text"


def test_wait_follows_an_iframe_into_another_process(frames_page: tuple[Bsk, str],
                                                     cross_site: str) -> None:
    bsk, snap = frames_page
    # The same-origin iframe navigates to the other site 800 ms later: a new document,
    # now in an out-of-process frame.
    bsk.ok("click", ref_of(snap, "button", "Frame away later"))
    waited = bsk.ok("wait", "--text", "Other page")["result"]
    assert waited["frame_url"] == f"{cross_site}/other.html"


def test_wait_in_frames_times_out_in_time_and_stops_its_observers(
        frames_page: tuple[Bsk, str], cross_site: str) -> None:
    bsk, _ = frames_page
    devtools = devtools_of(bsk)
    r = bsk("--timeout", "1", "wait", "--selector", "p#never")
    assert r.code == 11, r.stdout
    # "did not happen", answered before the deadline (not a cancelled call)
    assert r.json["status"] == "failed" and r.json["dispatched"] == "no"
    assert r.json["error"]["details"]["reason"] == "timeout"
    assert live_waits(devtools, cross_site) == 0
    bad = bsk("wait", "--selector", "##nope")
    assert bad.code == 2 and bad.json["error"]["code"] == "invalid_params"
    # A cancelled wait stops the observer it armed in every frame.
    waiting = bsk.popen("--timeout", "60", "wait", "--text", "Never there")
    wait_until(lambda: live_waits(devtools, cross_site) == 3, 20, "an observer in each frame")
    (op,) = live_ops(bsk, "dispatched")
    bsk.ok("op", "cancel", op["op_id"])
    code, answer = answer_of(waiting)
    assert code == 7 and answer["status"] == "cancelled", answer
    wait_until(lambda: live_waits(devtools, cross_site) == 0, 10, "the observers to be stopped")


def test_html_of_document_and_element(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    whole = bsk.ok("html")["result"]
    assert whole["html"].startswith("<!DOCTYPE html>") and whole["truncated"] is False
    assert whole["chars"] == whole["total_chars"] == len(whole["html"])
    cut = bsk.ok("html", "--max-chars", "100")["result"]
    assert cut["truncated"] is True and cut["chars"] == 100
    assert cut["total_chars"] == whole["total_chars"]
    box = bsk.ok("html", ref_of(snap, "(?:img|image)", "Blue box"))["result"]
    assert box["html"] == '<div id="box" role="img" aria-label="Blue box"></div>'
    text = bsk("html", "--max-chars", "100", as_json=False)
    assert "raise --max-chars" in text.stdout


def test_console_buffer_and_cursor(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    answer = bsk.ok("console")
    assert answer["retry_safe"] is True  # a read
    first = answer["result"]
    texts = [(e["level"], e["text"]) for e in first["entries"] if e["source"] == "console"]
    assert texts == [("log", "hello 42 {a: 1}"), ("warning", "careful"), ("error", "bad thing")]
    assert all(e["url"].endswith("/observe.html") for e in first["entries"]
               if e["source"] == "console")
    cursor = first["next_since"]
    assert bsk.ok("console", "--since", str(cursor))["result"]["entries"] == []

    bsk.ok("click", ref_of(snap, "button", "Fail"))
    bsk.ok("eval", "console.info('after')")
    newer = bsk.ok("console", "--since", str(cursor))["result"]["entries"]
    assert [e["level"] for e in newer] == ["error", "info"]
    assert "boom from a timer" in newer[0]["text"] and newer[0]["source"] == "exception"

    one = bsk.ok("console", "--since", "0", "--limit", "1")["result"]
    assert len(one["entries"]) == 1 and one["more"] is True
    rest = bsk.ok("console", "--since", str(one["next_since"]), "--limit", "1000")["result"]
    assert rest["more"] is False and rest["entries"][-1]["text"] == "after"
    human = bsk("console", "--since", str(cursor), as_json=False).stdout
    assert "boom from a timer" in human and "next: --since" in human


def test_network_buffer(page: tuple[Bsk, str], site: str) -> None:
    bsk, _ = page
    first = bsk.ok("network")["result"]
    doc = [e for e in first["entries"] if e["url"] == f"{site}/observe.html"]
    assert doc and doc[-1]["status"] == 200 and doc[-1]["type"] == "Document"
    assert doc[-1]["state"] == "finished" and doc[-1]["method"] == "GET"
    cursor = first["next_since"]
    # A fetch's promise resolves at the response's headers, before its body has arrived
    # (the request is still in flight then), and Chromium reports network events apart
    # from the eval's answer, so they may come after it: read the body, then wait for
    # the buffer to see every request end before reading it.
    bsk.ok("eval", "fetch('/missing.json').then(r => r.text()).then(() => 'read')")
    bsk.ok("eval", "fetch('http://127.0.0.1:9/').catch(e => 'refused')")
    bsk.ok("wait", "--network-idle")
    newer = bsk.ok("network", "--since", str(cursor))["result"]
    by_url = {e["url"]: e for e in newer["entries"]}
    assert by_url[f"{site}/missing.json"]["status"] == 404
    refused = by_url["http://127.0.0.1:9/"]
    assert refused["state"] == "failed" and refused["error"].startswith("net::ERR_")
    assert newer["in_flight"] == 0


def test_screenshot_full_page_and_element(page: tuple[Bsk, str], tmp_path: Path) -> None:
    bsk, snap = page
    view = bsk.ok("screenshot", str(tmp_path / "view.png"))["result"]
    full = bsk.ok("screenshot", "--full-page", str(tmp_path / "full.png"))["result"]
    assert full["full_page"] is True
    assert full["height"] > 3000 > view["height"]
    assert png_size((tmp_path / "full.png").read_bytes()) == (full["width"], full["height"])
    box = ref_of(snap, "(?:img|image)", "Blue box")
    element = bsk.ok("screenshot", "--ref", box, str(tmp_path / "box.png"))["result"]
    assert (element["width"], element["height"]) == (200, 100)
    both = bsk("screenshot", "--ref", box, "--full-page")
    assert both.code == 2 and both.json["dispatched"] == "no"


def test_screenshot_writes_the_format_its_file_name_says(page: tuple[Bsk, str],
                                                          tmp_path: Path) -> None:
    """.jpg/.jpeg write JPEG, .png PNG; any other name is refused before the browser is
    asked, and no file is made."""
    bsk, _ = page
    png = bsk.ok("screenshot", str(tmp_path / "view.png"))["result"]
    assert (tmp_path / "view.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in ("view.jpg", "view.JPEG"):
        jpeg = bsk.ok("screenshot", str(tmp_path / name))["result"]
        data = (tmp_path / name).read_bytes()
        assert data[:3] == b"\xff\xd8\xff" and jpeg["bytes"] == len(data), name
        assert (jpeg["width"], jpeg["height"]) == (png["width"], png["height"])
    for name in ("view.txt", "view"):
        refused = bsk("screenshot", str(tmp_path / name))
        assert refused.code == 2 and refused.json["error"]["code"] == "invalid_params"
        assert refused.json["dispatched"] == "no" and refused.json["error"]["hint"]
        assert not (tmp_path / name).exists()


# -- the ring buffers, without a browser ------------------------------------------------


def test_ring_cursor_and_eviction() -> None:
    from browserskill.browser.buffers import Ring

    ring = Ring(3)
    for n in range(5):
        ring.put(n, {"n": n})
    latest = ring.read(None, 2)  # no cursor: the latest entries
    assert [e["n"] for e in latest["entries"]] == [3, 4] and latest["next_since"] == 5
    old = ring.read(0, 10)
    assert [e["n"] for e in old["entries"]] == [2, 3, 4] and old["missed"] is True
    page = ring.read(2, 1)
    assert [e["seq"] for e in page["entries"]] == [3] and page["more"] is True
    assert ring.read(page["next_since"], 10)["missed"] is False
    ring.put(3, {"n": 3, "again": True})  # an update moves the entry after the cursor
    newer = ring.read(5, 10)
    assert newer["entries"] == [{"n": 3, "again": True, "seq": 6}]
    assert ring.read(99, 10) == {"entries": [], "next_since": 6, "more": False,
                                 "missed": False}


def test_network_entries_follow_a_request() -> None:
    from browserskill.browser.buffers import TabBuffers

    b = TabBuffers("main")
    b.on_event("main", "Network.requestWillBeSent", {
        "requestId": "1", "loaderId": "L1", "type": "Fetch", "timestamp": 10.0,
        "request": {"url": "http://x/a", "method": "POST"}})
    assert b.inflight and b.read_network(0, 10)["entries"][0]["state"] == "pending"
    b.on_event("main", "Network.responseReceived", {
        "requestId": "1", "response": {"status": 201, "statusText": "Created",
                                       "mimeType": "application/json"}})
    b.on_event("main", "Network.loadingFinished", {"requestId": "1", "timestamp": 10.25,
                                                   "encodedDataLength": 42})
    entry, = b.read_network(0, 10)["entries"]
    assert (entry["id"], entry["method"], entry["status"], entry["state"]) == (
        "r1", "POST", 201, "finished")
    assert entry["duration_ms"] == 250.0 and entry["transfer_bytes"] == 42 and not b.inflight
    b.on_event("child", "Runtime.consoleAPICalled", {
        "type": "warning", "args": [{"type": "string", "value": "in frame"},
                                    {"type": "number", "value": 1}]})
    msg, = b.read_console(None, 10)["entries"]
    assert (msg["level"], msg["text"], msg["iframe"]) == ("warning", "in frame 1", True)
