"""The dashboard (`bsk show`) in a real browser: a second headless Chromium of the test's
own loads it, as a person would, and watches a real session of the shared daemon."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.cli import Bsk
from support.dashboard import Viewer, dashboard_viewer, seconds_since
from support.extension import BrowserWithExtension, agent_session
from support.wait import wait_until
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect


def new_link(runner: Bsk) -> str:
    """A one-time link to the dashboard, as `bsk show --url` prints it."""
    answer = runner.ok("show", "--url")
    assert answer["url"].startswith("http://127.0.0.1:") and "/?code=" in answer["url"]
    assert answer["opened"] is False
    return str(answer["url"])


@pytest.fixture
def dash_url(shared_bsk: Bsk) -> str:
    return new_link(shared_bsk)


@pytest.fixture(scope="module")
def viewer(shared_bsk: Bsk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    with dashboard_viewer(new_link(shared_bsk),
                          tmp_path_factory.mktemp("viewer") / "chromium.log") as v:
        yield v


def test_lists_sessions_and_shows_a_new_operation_within_a_second(
        bsk: Bsk, site: str, viewer: Viewer) -> None:
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    card = f"document.querySelector('[data-session=\"{bsk.session}\"]').innerText"
    viewer.wait(f"(t => t.includes('idle') && t.includes('embedded') && t.includes('1 tab') "
                f"&& t.includes('Dash target'))({card})", 5, "the session's card")
    proc = bsk.popen("wait", "--text", "never there", "--timeout", "3")
    op_id = wait_until(lambda: viewer.eval(
        "(() => { const r = [...document.querySelectorAll('#ops tr')].find("
        "r => r.children[1].textContent === 'wait' && r.dataset.state === 'dispatched');"
        " return r && r.dataset.op; })()"), 5, "the running wait on the dashboard")
    seen_after = seconds_since(bsk.ok("op", "show", op_id)["started_at"])
    assert seen_after < 1.0, f"shown {seen_after:.2f}s after it started"
    proc.communicate(timeout=30)
    viewer.wait(f"document.querySelector('[data-op=\"{op_id}\"]').dataset.status === 'failed'",
                5, "the wait's failure on the dashboard")


def test_live_view_changes_when_the_page_changes(bsk: Bsk, site: str, viewer: Viewer) -> None:
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    seq = viewer.wait("+document.querySelector('#live').dataset.seq", 10, "a first frame")
    assert viewer.pixel(0.5, 0.6) == pytest.approx([255, 255, 255], abs=8)
    bsk.ok("eval", "document.getElementById('pad').style.background = 'rgb(200, 0, 0)'")
    viewer.wait(f"+document.querySelector('#live').dataset.seq > {seq}", 5, "a new frame")
    wait_until(lambda: viewer.pixel(0.5, 0.6)[0] > 170 and viewer.pixel(0.5, 0.6)[1] < 40,
               5, "the live view to turn red")


def test_cancel_from_the_dashboard_ends_the_operation_cancelled(
        bsk: Bsk, site: str, viewer: Viewer) -> None:
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    proc = bsk.popen("wait", "--text", "never there", "--timeout", "60")
    op_id = wait_until(lambda: viewer.eval(
        "(() => { const r = [...document.querySelectorAll('#ops tr')].find("
        "r => r.children[1].textContent === 'wait' && r.dataset.state === 'dispatched');"
        " return r && r.dataset.op; })()"), 10, "the running wait on the dashboard")
    viewer.press(f'[data-cancel="{op_id}"]')
    out, _ = proc.communicate(timeout=30)
    answer = json.loads(out)
    assert answer["op_id"] == op_id and answer["status"] == "cancelled"
    assert answer["dispatched"] == "no" and answer["error"]["details"]["reason"] == "cancel"
    viewer.wait(f"document.querySelector('[data-op=\"{op_id}\"]').dataset.status === "
                "'cancelled'", 5, "the cancel on the dashboard")


def test_stop_from_the_dashboard_stops_the_session(shared_bsk: Bsk, site: str,
                                                   viewer: Viewer) -> None:
    s = shared_bsk.with_session("dash-stop")
    shared_bsk.ok("session", "start", "dash-stop")
    s.ok("open", f"{site}/dash.html")
    viewer.choose("dash-stop")
    viewer.press("#stop")
    wait_until(lambda: "dash-stop" not in [x["session_id"] for x in
                                           shared_bsk.ok("session", "list")["sessions"]],
               15, "the session to stop")
    viewer.wait("!document.querySelector('[data-session=\"dash-stop\"]')", 5)


def _parts(url: str) -> tuple[str, str, str]:
    base, _, code = url.partition("/?code=")
    return base, code, base.removeprefix("http://")


def test_the_dashboard_refuses_requests_without_its_token(shared_bsk: Bsk,
                                                          dash_url: str) -> None:
    base, code, host = _parts(dash_url)
    assert httpx.get(base + "/").status_code == 401
    assert httpx.get(base + "/?code=wrong").status_code == 401
    assert httpx.get(base + "/?token=" + code).status_code == 401  # no token in URLs
    assert httpx.get(base + "/", cookies={"bsk_dashboard": "wrong"}).status_code == 401
    # A foreign Host (DNS rebinding), even with the link, is refused (the link unspent).
    assert httpx.get(dash_url, headers={"Host": f"evil.example:{host.split(':')[1]}"}
                     ).status_code == 403
    first = httpx.get(dash_url)  # the link, exchanged for the cookie
    assert first.status_code == 200 and 'content="0;url=/"' in first.text
    cookie = first.cookies["bsk_dashboard"]
    set_cookie = first.headers["set-cookie"].lower()
    assert "httponly" in set_cookie and "samesite=strict" in set_cookie
    assert cookie not in dash_url  # the link is not the token
    again = httpx.get(dash_url)  # good once
    assert again.status_code == 401 and "used already" in again.json()["error"]["message"]
    page = httpx.get(base + "/", cookies={"bsk_dashboard": cookie})
    assert page.status_code == 200 and "BrowserSkill" in page.text
    assert httpx.get(base + "/", cookies={"bsk_dashboard": cookie},
                     headers={"Host": "evil.example"}).status_code == 403
    origin = {"Origin": base}
    feed = base.replace("http://", "ws://") + "/feed"
    for headers in ({**origin}, {**origin, "Cookie": "bsk_dashboard=wrong"},
                    {"Origin": "http://evil.example", "Cookie": f"bsk_dashboard={cookie}"}):
        with pytest.raises(InvalidStatus) as refused:
            connect(feed, additional_headers=headers, open_timeout=10)
        assert refused.value.response.status_code == 403
    with connect(feed, additional_headers={**origin, "Cookie": f"bsk_dashboard={cookie}"},
                 open_timeout=10) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "state"


def test_show_prints_a_new_one_time_link_each_time(shared_bsk: Bsk, dash_url: str) -> None:
    again = new_link(shared_bsk)
    assert again != dash_url and _parts(again)[0] == _parts(dash_url)[0]
    bad = shared_bsk("show", "--bogus")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "arguments"
    bad = shared_bsk("show", "--url", "--bogus")  # the message names what is wrong
    assert bad.code == 2 and "'--bogus'" in bad.json["error"]["message"], bad.stdout


def test_bsk_show_puts_no_secret_on_the_browsers_command_line(
        shared_bsk: Bsk, tmp_path: Path) -> None:
    """Any user can read a process's command line (`ps`): the browser `bsk show` opens is
    given a file of the user's own (0600), which goes on to a one-time link."""
    argv_file = tmp_path / "argv"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {argv_file}\n')
    browser.chmod(0o700)
    shower = Bsk(shared_bsk.home, DISPLAY=":99", BROWSER=str(browser))
    answer = shower.ok("show")
    assert answer["opened"] is True and "code=" not in answer["url"], answer
    (arg,) = argv_file.read_text().split()
    page = Path(answer["file"])
    assert arg == page.as_uri() and stat.S_IMODE(page.stat().st_mode) == 0o600
    link = page.read_text().partition('url=')[2].partition('"')[0].replace("&amp;", "&")
    assert "/?code=" in link and link not in arg
    with dashboard_viewer(arg, tmp_path / "chromium.log") as viewer:  # the file, as opened
        assert viewer.eval("location.href") == _parts(link)[0] + "/"
    assert httpx.get(link).status_code == 401  # spent by the browser


def test_dashboard_html_is_packaged() -> None:
    from importlib import resources

    assert "WebSocket" in resources.files("browserskill.api").joinpath(
        "dashboard.html").read_text()
    assert Path(__file__).parent.joinpath("pages", "dash.html").exists()


def _live_point(viewer: Viewer, bsk: Bsk, element: str) -> tuple[float, float]:
    """Where an element of the watched page shows in the dashboard's live view."""
    rect = json.loads(bsk.ok("eval", f"JSON.stringify((r => ({{x: r.x + r.width / 2, "
                             f"y: r.y + r.height / 2, w: innerWidth, h: innerHeight}}))("
                             f"{element}.getBoundingClientRect()))")["result"]["value"])
    # Measured once a frame shows: before it the image has no size of its own yet.
    viewer.wait("(i => +i.dataset.seq > 0 && i.complete && i.naturalWidth > 0)("
                "document.querySelector('#live'))", 10, "a first frame in the live view")
    img = viewer.eval("(r => [r.x, r.y, r.width, r.height])("
                      "document.querySelector('#live').getBoundingClientRect())")
    return img[0] + rect["x"] / rect["w"] * img[2], img[1] + rect["y"] / rect["h"] * img[3]


def test_take_over_holds_the_session_and_the_persons_input_reaches_the_page(
        bsk: Bsk, site: str, viewer: Viewer) -> None:
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    pad = _live_point(viewer, bsk, "document.getElementById('clicks')")
    field = _live_point(viewer, bsk, "document.getElementById('name')")
    running = bsk.popen("eval", "await new Promise(r => setTimeout(r, 20000))")
    wait_until(lambda: viewer.eval("[...document.querySelectorAll('#ops tr')].some(r => "
                                   "r.children[2].textContent.includes('20000') && "
                                   "r.dataset.state === 'dispatched')"), 10, "the long eval")
    viewer.press("#take")
    out, _ = running.communicate(timeout=30)
    interrupted = json.loads(out)  # ended as the extension's Stop ends it
    assert running.returncode == 9 and interrupted["status"] == "outcome_unknown"
    assert interrupted["error"]["details"]["reason"] == "user_interrupt"
    viewer.wait("document.querySelector('#live').classList.contains('held')", 5)
    for args in (("snapshot",), ("eval", "1")):  # reads and changes alike
        busy = bsk(*args)
        assert busy.code == 5 and busy.json["error"]["code"] == "session_busy"
        holder = busy.json["error"]["details"]["holder"]
        assert holder["holder"] == "person" and holder["tool"] == "take_over"
        assert "held by a person" in busy.json["error"]["message"]
    viewer.click_at(*pad)
    viewer.click_at(*field)
    for key in "hi":
        viewer.cdp("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": key})
        viewer.cdp("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})
    viewer.press("#back")  # the feed acts in order: the input went before
    wait_until(lambda: bsk("snapshot").code == 0, 10, "the session to be handed back")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    assert 'clickable "clicks: 1"' in snap and 'textbox "Name" [focused] [ref=e2]: hi' in snap
    refused = bsk("eval", "window.lastClick.trusted")  # the agent is told, once
    assert refused.code == 6 and refused.json["error"]["code"] == "user_interrupted"
    assert "from the dashboard" in refused.json["error"]["message"]  # not the extension's Stop
    assert bsk("eval", "window.lastClick.trusted").value is True
    assert bsk("eval", "document.getElementById('name').value").value == "hi"
    take = next(o for o in bsk.ok("op", "list")["ops"] if o["tool"] == "take_over")
    assert take["status"] == "completed" and take["result"]["ended_by"] == "hand_back"


def test_a_dialog_opened_by_the_persons_click_does_not_end_the_live_view(
        bsk: Bsk, site: str, viewer: Viewer) -> None:
    bsk.ok("open", f"{site}/dash.html")
    bsk.ok("eval", "window.alertOnClick = true")
    viewer.choose(bsk.session)
    pad = _live_point(viewer, bsk, "document.getElementById('clicks')")
    viewer.press("#take")
    viewer.wait("document.querySelector('#live').classList.contains('held')", 5)
    viewer.click_at(*pad)  # the page opens an alert under the person's click
    viewer.press("#back")  # the same connection still takes the person's actions
    viewer.wait("!document.querySelector('#live').classList.contains('held')", 10,
                "the hand-back on the dashboard")
    wait_until(lambda: bsk("dialog", "accept").code == 0, 10, "the agent to reach the alert")
    assert bsk("eval", "document.getElementById('clicks').textContent").value == "clicks: 1"


def test_input_from_the_live_view_is_refused_unless_a_person_holds_the_session(
        bsk: Bsk, site: str, dash_url: str) -> None:
    bsk.ok("open", f"{site}/dash.html")
    base = _parts(dash_url)[0]
    cookie = httpx.get(dash_url).cookies["bsk_dashboard"]
    with connect(base.replace("http://", "ws://") + "/feed", additional_headers={
            "Origin": base, "Cookie": f"bsk_dashboard={cookie}"}, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "input", "session": bsk.session, "id": 7,
                            "event": {"kind": "click", "x": 50, "y": 50}}))
        while (msg := json.loads(ws.recv(timeout=10)))["type"] != "ack":
            pass
        assert msg["id"] == 7 and msg["ok"] is False
        assert msg["error"]["code"] == "session_busy"
        ws.send(json.dumps({"type": "bogus", "id": 8}))
        while (msg := json.loads(ws.recv(timeout=10)))["type"] != "ack":
            pass
        assert msg["ok"] is False and msg["error"]["code"] == "invalid_params"
    assert bsk("eval", "document.getElementById('clicks').textContent").value == "clicks: 0"


def test_a_persons_input_in_take_over_is_recorded(bsk: Bsk, site: str, viewer: Viewer,
                                                  tmp_path: Path) -> None:
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    pad = _live_point(viewer, bsk, "document.getElementById('clicks')")
    field = _live_point(viewer, bsk, "document.getElementById('name')")
    bsk.ok("record", "start")
    viewer.press("#take")
    viewer.wait("document.querySelector('#live').classList.contains('held')", 5)
    viewer.click_at(*pad)
    viewer.click_at(*field)
    for key in "hi":
        viewer.cdp("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": key})
        viewer.cdp("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})
    viewer.press("#back")
    wait_until(lambda: bsk("snapshot").code == 0, 10, "the session to be handed back")
    script = tmp_path / "person.bsk"
    bsk.ok("record", "stop", str(script))
    commands = [x for x in script.read_text().splitlines() if not x.startswith("#")]
    assert commands == [f"open {site}/dash.html", "click 'css=#clicks'",
                        "fill 'role=textbox[name=\"Name\"]' hi"], commands


def test_an_extension_session_is_listed_and_watched_live(ext_browser: BrowserWithExtension,
                                                         site: str, tmp_path: Path) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/dash.html")
    url = ext_browser.bsk.ok("show", "--url")["url"]
    with dashboard_viewer(url, tmp_path / "viewer.log") as viewer:
        viewer.choose("agent")
        viewer.wait("document.querySelector('[data-session=\"agent\"]').innerText"
                    ".includes('extension')", 10, "the extension placement")
        seq = viewer.wait("+document.querySelector('#live').dataset.seq", 15,
                          "a frame relayed by the extension")
        s.ok("eval", "document.getElementById('pad').style.background = 'rgb(0, 0, 200)'")
        viewer.wait(f"+document.querySelector('#live').dataset.seq > {seq}", 10, "a new frame")
        wait_until(lambda: viewer.pixel(0.5, 0.6)[2] > 160, 10, "the live view to turn blue")


def test_a_request_for_help_shows_at_the_top_without_choosing_its_session(
        shared_bsk: Bsk, site: str, tmp_path: Path) -> None:
    """A fresh dashboard, no session chosen: the request is at the top the moment it
    arrives, with its Done, and Done there ends it."""
    s = shared_bsk.with_session("dash-help-top")
    shared_bsk.ok("session", "start", "dash-help-top")
    try:
        s.ok("open", f"{site}/dash.html")
        with dashboard_viewer(new_link(shared_bsk), tmp_path / "chromium.log") as viewer:
            proc = s.popen("request-help", "Solve the captcha", "--timeout", "60")
            item = '#waiting [data-waiting="help"][data-waiting-session="dash-help-top"]'
            text = viewer.wait(f"(e => e && e.innerText)(document.querySelector('{item}'))",
                               10, "the request for help at the top")
            assert "Solve the captcha" in text
            assert viewer.eval("document.querySelector('#title').textContent") == \
                "choose a session"  # nothing was chosen
            viewer.press(f'{item} [data-help-done]')
            out, _ = proc.communicate(timeout=30)
            answer = json.loads(out)
            assert answer["status"] == "completed" and answer["result"]["ended_by"] == "done"
            viewer.wait(f"!document.querySelector('{item}')", 10, "the request to go")
    finally:
        s("session", "stop", "--wait")


def test_rows_are_updated_in_place_not_rebuilt(bsk: Bsk, site: str, viewer: Viewer) -> None:
    """The row and the session card under the person's pointer stay the same DOM nodes
    while other operations come and end (a click must not land on a node that is gone)."""
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    first = bsk.ok("eval", "1")["op_id"]
    viewer.wait(f"!!document.querySelector('#ops [data-op=\"{first}\"]')", 10, "the first row")
    viewer.eval(f"window.kept = [document.querySelector('#ops [data-op=\"{first}\"]'), "
                f"document.querySelector('#sessions [data-session=\"{bsk.session}\"]'), "
                f"document.querySelector('#ops [data-op=\"{first}\"] td')]")
    for n in range(4):  # each is several feed events: queued, dispatched, ended, a new row
        op_id = bsk.ok("eval", str(n))["op_id"]
        viewer.wait(f"(r => r && r.dataset.status === 'completed')("
                    f"document.querySelector('#ops [data-op=\"{op_id}\"]'))", 10, "its row")
    assert viewer.eval(
        f"window.kept[0] === document.querySelector('#ops [data-op=\"{first}\"]') && "
        f"window.kept[1] === document.querySelector('#sessions [data-session=\"{bsk.session}\"]')"
        f" && window.kept[2] === document.querySelector('#ops [data-op=\"{first}\"] td') && "
        "window.kept.every(n => n.isConnected)") is True
