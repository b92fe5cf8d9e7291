"""Sessions on a real Selenium Grid 4 (and on remote CDP endpoints), through the real
daemon and CLI (docs/scaling-out.md).

One standalone Grid serves the module; the tests about spreading and a full Grid share a
hub with two one-slot nodes. The Grid's own view (`/status`, its WebDriver sessions) is
what the assertions check, as a user would.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from conftest import Bsk, Chromium, daemon_pid, in_ci, stop_for_good, wait_until
from support.cli import kill_daemon_hard
from support.grid import Grid, missing


@pytest.fixture(scope="module", autouse=True)
def _needs_grid() -> None:
    why = missing()
    if why is None:
        return
    if in_ci():
        pytest.fail(f"{why}, yet this is CI (CI=true): scripts/install.sh installs it",
                    pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    """A standalone Grid (hub and node in one) with three chrome slots."""
    g = Grid.standalone(tmp_path_factory.mktemp("grid"), max_sessions=3)
    yield g
    g.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    """A hub with two nodes of one chrome slot each."""
    logs = tmp_path_factory.mktemp("hub")
    g = Grid.hub(logs)
    try:
        g.add_node(logs, max_sessions=1)
        g.add_node(logs, max_sessions=1)
        g.wait_ready(nodes=2)
    except BaseException:
        g.stop()
        raise
    yield g
    g.stop()


@pytest.fixture(scope="module")
def gbsk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bsk]:
    """A daemon of the module's own for the tests that don't stop or kill it."""
    home = tmp_path_factory.mktemp("gridhome")
    runner = Bsk(home)
    yield runner
    stop_for_good(runner)


def start_on(runner: Bsk, sid: str, *where: str) -> dict:
    placement = runner.ok("session", "start", sid, *where)["placement"]
    return placement


def test_open_snapshot_click_and_webmcp_through_the_grid(gbsk: Bsk, grid: Grid,
                                                         site: str) -> None:
    placement = start_on(gbsk, "g-basic", "--grid", grid.url)
    assert placement["kind"] == "grid"
    assert placement["webdriver_id"] in grid.sessions()
    assert placement["node"] == grid.sessions()[placement["webdriver_id"]]
    s = gbsk.with_session("g-basic")
    try:
        assert s.ok("open", f"{site}/click.html")["result"]["title"] == "Click lab"
        snap = s.ok("snapshot", "--interactive")["result"]["snapshot"]
        ref = next(line.split("[ref=")[1].rstrip("]") for line in snap.splitlines()
                   if 'button "Plain"' in line)
        s.ok("click", ref)
        assert s.ok("eval", "window.hits.map(h => h.name)")["result"]["value"] == ["plain"]
        # The browser on the node runs with bsk's switches: WebMCP is on, the tab visible.
        s.ok("open", f"{site}/webmcp.html")
        wait_until(lambda: any(t["name"] == "echo" for t in
                               s.ok("webmcp", "list")["result"]["tools"]), 10, "tools")
        answer = s.ok("webmcp", "invoke", "echo", "--input", '{"text": "via grid"}')
        assert answer["result"]["output"]["echo"] == {"text": "via grid"}
        assert s.ok("eval", "document.visibilityState")["result"]["value"] == "visible"
    finally:
        s("session", "stop", "--wait")


def test_session_stop_releases_the_webdriver_session(gbsk: Bsk, grid: Grid) -> None:
    webdriver_id = start_on(gbsk, "g-stop", "--grid", grid.url)["webdriver_id"]
    assert webdriver_id in grid.sessions()
    # The same daemon holds a session in its own browser at the same time.
    assert start_on(gbsk, "g-embedded")["kind"] == "embedded"
    listed = {s["session_id"]: s for s in gbsk.ok("session", "list")["sessions"]}
    assert listed["g-stop"]["placement"]["webdriver_id"] == webdriver_id
    assert listed["g-embedded"]["placement"]["kind"] == "embedded"
    human = gbsk("session", "list", as_json=False).stdout
    assert f"Selenium Grid {grid.url}" in human and webdriver_id in human, human
    grid_line = next(line for line in human.splitlines() if line.startswith("g-stop "))
    assert "a browser of its own" in grid_line and "shared profile" not in grid_line, human
    for sid in ("g-stop", "g-embedded"):
        assert gbsk.with_session(sid).ok("eval", "6 * 7")["result"]["value"] == 42
    gbsk.ok("session", "stop", "g-stop")
    # The Grid's own /status: the slot is free again (its model follows the node's report).
    wait_until(lambda: webdriver_id not in grid.sessions(), 10, "the Grid to free the slot")
    assert gbsk.with_session("g-embedded").ok("eval", "1 + 1")["result"]["value"] == 2
    gbsk.ok("session", "stop", "g-embedded")


def test_two_sessions_spread_over_two_nodes_and_a_full_grid_waits_then_answers(
        make_bsk: Callable[..., Bsk], hub: Grid) -> None:
    runner = make_bsk(BSK_GRID_URL=hub.url)  # the daemon's default Grid
    assert runner.ok("status")["browser"]["default_grid"] == hub.url
    check = next(c for c in runner.ok("doctor")["checks"] if c["check"] == "grid")
    assert check["ok"] and "2 free chrome slot" in check["detail"], check
    a = start_on(runner, "spread-a")
    b = start_on(runner, "spread-b")
    assert a["kind"] == b["kind"] == "grid"
    nodes = hub.sessions()
    assert nodes[a["webdriver_id"]] != nodes[b["webdriver_id"]]  # one per node
    for sid in ("spread-a", "spread-b"):
        assert runner.with_session(sid).ok("eval", "1 + 1")["result"]["value"] == 2

    # Both slots are taken: a third session waits for one up to its deadline, then says
    # so, retry-safe, nothing started on the Grid.
    started = time.monotonic()
    r = runner("--timeout", "3", "session", "start", "spread-c")
    took = time.monotonic() - started
    assert r.code == 10, r.stdout + r.stderr
    assert r.json["error"]["code"] == "browser_unavailable"
    assert r.json["error"]["details"]["reason"] == "grid_full"
    assert 2.5 < took < 10, took
    assert len(hub.sessions()) == 2

    # Ctrl-C while it waits for a slot: the start is undone, and no browser is started
    # on the Grid for it once a slot frees (it would hold that slot for nobody).
    # Meanwhile the session is "still starting" to its calls, and the others are listed.
    interrupted = runner.popen("--timeout", "60", "session", "start", "spread-int")
    wait_until(lambda: "still starting" in runner.with_session("spread-int")(
        "eval", "1").stdout, 10, "the start to wait for a slot")
    busy = runner.with_session("spread-int")("eval", "1")
    assert busy.code == 5 and busy.json["error"]["code"] == "session_busy", busy.stdout
    assert {s["session_id"] for s in runner.ok("session", "list")["sessions"]} == {
        "spread-a", "spread-b"}
    interrupted.send_signal(signal.SIGINT)
    out, err = interrupted.communicate(timeout=30)
    assert interrupted.returncode == 7 and "not started" in out + err, out + err
    wait_until(lambda: runner.with_session("spread-int")("eval", "1").code == 3, 5,
               "the interrupted start to be undone (session_not_found)")

    # A slot frees while it waits: the start succeeds.
    waiting = runner.popen("--timeout", "60", "session", "start", "spread-c")
    wait_until(lambda: "still starting" in runner.with_session("spread-c")(
        "eval", "1").stdout, 10, "the start to wait for a slot")
    runner.ok("session", "stop", "spread-a")
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, out + err
    c = runner.ok("session", "list")["sessions"]
    assert {s["session_id"] for s in c} == {"spread-b", "spread-c"}
    assert len(hub.sessions()) == 2


def test_a_webdriver_session_ended_behind_bsks_back_is_noticed_fast(
        fresh_bsk: Bsk, grid: Grid, site: str) -> None:
    webdriver_id = start_on(fresh_bsk, "g-gone", "--grid", grid.url)["webdriver_id"]
    s = fresh_bsk.with_session("g-gone")
    s.ok("open", f"{site}/click.html")
    grid.delete_session(webdriver_id)  # the Grid leaves its CDP socket open and silent

    started = time.monotonic()
    r = s("open", f"{site}/other.html")
    assert time.monotonic() - started < 5
    assert r.json["error"]["code"] in ("browser_unavailable", "outcome_unknown"), r.stdout
    later = s("snapshot")
    assert later.json["error"]["code"] == "browser_unavailable"
    assert "session stop" in later.json["error"]["hint"]

    started = time.monotonic()
    fresh_bsk.ok("daemon", "stop")
    pid_gone = wait_until(lambda: daemon_pid(fresh_bsk.home) is None, 5, "the daemon's exit")
    assert pid_gone and time.monotonic() - started < 5


def test_a_daemon_killed_hard_readopts_its_grid_session(fresh_bsk: Bsk, grid: Grid,
                                                        site: str) -> None:
    webdriver_id = start_on(fresh_bsk, "g-kill", "--grid", grid.url)["webdriver_id"]
    s = fresh_bsk.with_session("g-kill")
    s.ok("open", f"{site}/click.html")
    s.ok("eval", "window.marker = 42")
    kill_daemon_hard(fresh_bsk.home)

    # The next call starts a new daemon, which re-adopts the session: same session, same
    # tab, the very page (its script state too), the same WebDriver session.
    assert s.ok("eval", "window.marker")["result"]["value"] == 42
    listed = {x["session_id"]: x for x in fresh_bsk.ok("session", "list")["sessions"]}
    assert listed["g-kill"]["current_tab"] == "t1"
    assert listed["g-kill"]["placement"]["webdriver_id"] == webdriver_id
    assert "g-kill" in fresh_bsk.ok("daemon", "status")["sessions_at_start"]["readopted"]
    fresh_bsk.ok("session", "stop", "g-kill")
    wait_until(lambda: webdriver_id not in grid.sessions(), 10, "the Grid to free the slot")


def test_cdp_url_over_http_where_no_json_version_is_served(
        gbsk: Bsk, grid: Grid, site: str, make_bsk: Callable[..., Bsk]) -> None:
    """A Grid's DevTools proxy serves no /json/version: an http:// URL for it is its
    WebSocket, for a session and for the whole daemon."""
    webdriver_id = grid.new_session()
    try:
        http = f"{grid.url}/session/{webdriver_id}/se/cdp"
        placement = start_on(gbsk, "cdp-http", "--cdp-url", http)
        assert placement["kind"] == "cdp" and placement["browser"] == http
        s = gbsk.with_session("cdp-http")
        assert s.ok("open", f"{site}/click.html")["result"]["title"] == "Click lab"
        s.ok("session", "stop")

        # The whole daemon on it: `bsk status` reports the endpoint it really uses.
        runner = make_bsk(BSK_CDP_URL=http)
        browser = runner.ok("status", "--connect")["browser"]
        assert browser["connected"] and browser["cdp_endpoint"] == "ws" + http[4:]
        assert "http_endpoint" not in browser  # a proxy, not a Chromium's own HTTP endpoint
        assert runner.ok("eval", "1 + 1")["result"]["value"] == 2
    finally:
        grid.delete_session(webdriver_id)


def test_cdp_url_keeps_its_query_string(gbsk: Bsk, chromium: Chromium,
                                        make_bsk: Callable[..., Bsk]) -> None:
    """A Browserless-style `?token=` stays on the URL (also through /json/version) and
    is not shown in `session list`."""
    url = chromium.http_url + "?token=s3cret"
    placement = start_on(gbsk, "cdp-query", "--cdp-url", url)
    assert placement["kind"] == "cdp" and "s3cret" not in str(placement)
    s = gbsk.with_session("cdp-query")
    assert s.ok("eval", "1 + 2")["result"]["value"] == 3
    s.ok("session", "stop")

    runner = make_bsk(BSK_CDP_URL=url)
    browser = runner.ok("status", "--connect")["browser"]
    ws = chromium.devtools("/json/version")["webSocketDebuggerUrl"]
    assert browser["cdp_endpoint"] == ws + "?token=s3cret"
    assert browser["http_endpoint"] == chromium.http_url
    assert runner.ok("eval", "2 + 2")["result"]["value"] == 4


def test_bad_placements_are_refused_naming_the_field(gbsk: Bsk, grid: Grid) -> None:
    r = gbsk("session", "start", "bad1", "--grid", "ftp://x")
    assert r.code == 2 and r.json["error"]["details"]["field"] == "grid"
    r = gbsk("session", "start", "bad2", "--grid", grid.url, "--cdp-url", "ws://x:1")
    assert r.code == 2 and "one of" in r.json["error"]["message"]
    started = time.monotonic()
    r = gbsk("--timeout", "3", "session", "start", "bad3", "--grid", "http://127.0.0.1:9")
    assert r.code == 10 and r.json["error"]["code"] == "browser_unavailable"
    assert time.monotonic() - started < 10


def test_malformed_placement_urls_are_refused_naming_the_field(gbsk: Bsk) -> None:
    for flag, field, url in (("--cdp-url", "cdp_url", "http://[::1"),
                             ("--cdp-url", "cdp_url", "ws://127.0.0.1:999999/x"),
                             ("--cdp-url", "cdp_url", "http://127.0.0.1:abc"),
                             ("--grid", "grid", "http://[::1:4444")):
        r = gbsk("session", "start", "malformed", flag, url)
        assert r.code == 2, (url, r.json)
        assert r.json["error"]["details"]["field"] == field and url in r.json["error"]["message"]
    assert "malformed" not in {s["session_id"] for s in gbsk.ok("session", "list")["sessions"]}


# -- a node or hub that dies for good, or freezes ---------------------------------------


@pytest.fixture
def lone_hub(tmp_path: Path) -> Iterator[Grid]:
    """A hub with one node of two chrome slots, for a test to kill or restart."""
    g = Grid.hub(tmp_path)
    try:
        g.add_node(tmp_path, max_sessions=2)
        g.wait_ready(nodes=1)
    except BaseException:
        g.stop()
        raise
    yield g
    g.stop()


def answer_once_known(s: Bsk, reason: str, within: float) -> dict:
    """Call until the session's answer says `reason`; the calls before it (the link's
    loss being noticed) may only fail, never complete."""
    seen: list[dict] = []

    def known() -> dict | None:
        r = s("eval", "1 + 1")
        seen.append(r.json)
        assert r.json["status"] != "completed", seen
        return r.json if r.json["error"]["details"].get("reason") == reason else None

    try:
        answer: dict = wait_until(known, within, f"an answer saying {reason}")
    except AssertionError as e:
        raise AssertionError(f"{e}; the answers: {seen}") from None
    return answer


def test_a_killed_node_is_named_and_the_answer_says_to_start_another(
        make_bsk: Callable[..., Bsk], lone_hub: Grid, site: str) -> None:
    runner = make_bsk()
    placement = start_on(runner, "g-node-lost", "--grid", lone_hub.url)
    node = placement["node"]
    assert node in lone_hub.nodes
    s = runner.with_session("g-node-lost")
    s.ok("open", f"{site}/click.html")
    lone_hub.signal_node(node, signal.SIGKILL)

    # The hub still lists the node UP (its health check comes minutes later), but it
    # can't reach it, and nothing listens there: the node is named as gone, at once.
    answer = answer_once_known(s, "grid_node_lost", 30)
    error = answer["error"]
    assert answer["dispatched"] == "no"
    assert error["code"] == "browser_unavailable" and error["details"]["node"] == node
    assert error["details"]["lasting"] is True  # X-Should-Retry: false
    assert f"node {node}" in error["message"] and "gone" in error["message"]
    assert "Connection refused" in error["message"], error  # the evidence, not "HTTP 500"
    assert "session stop" in error["hint"] and "start another" in error["hint"]
    assert "call again" not in error["hint"]
    # It stays so (no reconnect attempt is promised), and the session stops cleanly.
    again = s("snapshot").json["error"]
    assert again["details"]["reason"] == "grid_node_lost", again
    transport = httpx.HTTPTransport(uds=str(runner.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=60) as http:
        r = http.post("/v1/sessions/g-node-lost/tools/eval", json={"expression": "1"})
    assert r.status_code == 503 and r.headers["x-should-retry"] == "false", r.text
    started = time.monotonic()
    runner.ok("session", "stop", "g-node-lost")
    assert time.monotonic() - started < 15


def test_a_session_the_restarted_hub_forgot_is_released_on_its_node(
        make_bsk: Callable[..., Bsk], lone_hub: Grid, tmp_path: Path) -> None:
    runner = make_bsk()
    called = start_on(runner, "g-forgot-a", "--grid", lone_hub.url)
    stopped = start_on(runner, "g-forgot-b", "--grid", lone_hub.url)
    node = called["node"]
    assert runner.with_session("g-forgot-a").ok("eval", "1 + 1")["result"]["value"] == 2
    lone_hub.kill_hub()

    # `session stop` while the hub is down: deleted on its node directly.
    runner.ok("session", "stop", "g-forgot-b")
    on_node = httpx.get(f"{node}/session/{stopped['webdriver_id']}/timeouts", timeout=10)
    assert on_node.status_code == 404, on_node.text  # the node no longer has it

    # The hub back, knowing no session; the node still runs the other one. A call (or
    # the keep-alive before it) learns the hub forgot it, says so, and deletes it on
    # its node at once.
    lone_hub.start_hub_again(tmp_path)
    answer = answer_once_known(runner.with_session("g-forgot-a"), "grid_session_forgotten",
                               30)
    error = answer["error"]
    assert error["code"] == "browser_unavailable" and error["details"]["lasting"] is True
    assert "slot is free" in error["message"] and node in error["message"], error
    assert "session stop" in error["hint"] and "call again" not in error["hint"]
    wait_until(lambda: not lone_hub.sessions(), 20, "the node to free both slots")
    # Both slots are free: two new sessions get one at once.
    for sid in ("g-after-1", "g-after-2"):
        assert runner.ok("--timeout", "30", "session", "start", sid, "--grid",
                         lone_hub.url)["placement"]["kind"] == "grid"
    runner.ok("session", "stop", "g-forgot-a")


def test_a_frozen_node_is_named_with_its_cause_and_comes_back(
        make_bsk: Callable[..., Bsk], hub: Grid, site: str) -> None:
    runner = make_bsk()
    wait_until(lambda: not hub.sessions(), 20, "the shared hub's slots to be free")
    node = start_on(runner, "g-frozen", "--grid", hub.url)["node"]
    s = runner.with_session("g-frozen")
    s.ok("open", f"{site}/click.html")
    s.ok("eval", "window.marker = 7")
    hub.signal_node(node, signal.SIGSTOP)
    try:
        answer = answer_once_known(s, "grid_error", 60)
    finally:
        hub.signal_node(node, signal.SIGCONT)
    error = answer["error"]
    assert error["code"] == "browser_unavailable" and answer["retry_safe"] is True
    assert not error["details"].get("lasting") and error["details"]["node"] == node
    # Its cause is named: no answer, how long it waited, from the hub and from the node.
    assert "no answer within" in error["message"] and "ReadTimeout" in error["message"]
    assert node in error["message"] and "frozen or cut off" in error["message"], error
    assert not error["message"].rstrip().endswith(":"), error
    # Resumed, the node's page is as it was.
    assert wait_until(lambda: s("eval", "window.marker").json.get("result"), 30,
                      "the session to come back")["value"] == 7
    runner.ok("session", "stop", "g-frozen")
