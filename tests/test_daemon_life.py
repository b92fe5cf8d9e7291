"""The daemon's life: spawned on first use and fully detached, one per state dir, private,
reporting itself, exiting when idle or told to, attaching to a browser it did not start."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import httpx
from support.chromium import Chromium, one_cdp_command
from support.cli import Bsk, alive
from support.wait import wait_until

import browserskill
from browserskill.browser import launcher


def daemon_info(runner: Bsk) -> dict:
    info = runner.ok("daemon", "status")
    assert info["running"] is True, info
    return info


def assert_not_running(runner: Bsk) -> None:
    """`daemon status` with no daemon says so and exits non-zero (10, browser_unavailable's
    code), in text and in --json, as `systemctl status` does for a stopped unit."""
    answer = runner("daemon", "status")
    assert answer.code == 10 and answer.json["running"] is False, answer
    text = runner("daemon", "status", as_json=False)
    assert text.code == 10 and text.stdout.startswith("daemon: not running"), text


def test_first_use_spawns_a_detached_daemon(fresh_bsk: Bsk) -> None:
    home = fresh_bsk.home
    assert_not_running(fresh_bsk)
    assert not (home / "bsk.sock").exists()

    # The first agent action starts everything: daemon, browser, the default session.
    assert fresh_bsk("eval", "6 * 7").value == 42

    pid = daemon_info(fresh_bsk)["pid"]
    assert alive(pid)
    # Its own session and process group: a shell that kills its group spares it.
    assert os.getsid(pid) == pid != os.getsid(0)
    assert os.getpgid(pid) == pid != os.getpgid(0)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    assert fields[1] != str(os.getpid())  # not a child of the test (nor of any waiting bsk)
    assert fields[4] == "0", "the daemon has a controlling terminal"
    # No terminal on stdin; stdout and stderr go to the state dir's log.
    assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
    log = (home / "daemon.log").resolve()
    assert Path(os.readlink(f"/proc/{pid}/fd/1")) == log
    assert Path(os.readlink(f"/proc/{pid}/fd/2")) == log
    assert f"(pid {pid})" in log.read_text()


def test_one_daemon_per_state_dir(fresh_bsk: Bsk) -> None:
    first = fresh_bsk.ok("daemon", "start")
    assert not first.get("already_running")
    pid = first["pid"]

    again = fresh_bsk.ok("daemon", "start")
    assert again["already_running"] is True and again["pid"] == pid

    # A second daemon started by hand refuses, naming the one that runs.
    proc = subprocess.run([sys.executable, "-m", "browserskill.api"], env=fresh_bsk.env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert str(pid) in proc.stderr
    assert "Traceback" not in proc.stderr
    # ... and leaves the first one (and its socket) alone.
    assert daemon_info(fresh_bsk)["pid"] == pid


def test_state_dir_and_socket_are_private(fresh_bsk: Bsk) -> None:
    home = fresh_bsk.home
    os.chmod(home, 0o755)  # a too-open dir is tightened, not trusted
    fresh_bsk.ok("daemon", "start")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    sock = (home / "bsk.sock").stat()
    assert stat.S_ISSOCK(sock.st_mode)
    assert stat.S_IMODE(sock.st_mode) == 0o600


def test_daemon_status_reports_pid_socket_version_uptime(fresh_bsk: Bsk) -> None:
    before = time.monotonic()
    pid = fresh_bsk.ok("daemon", "start")["pid"]
    first = daemon_info(fresh_bsk)
    assert first["pid"] == pid and alive(pid)
    assert first["socket"] == str(fresh_bsk.home.resolve() / "bsk.sock")
    assert first["version"] == browserskill.__version__
    assert isinstance(first["uptime_s"], int | float)
    assert 0 <= first["uptime_s"] <= time.monotonic() - before + 0.5
    second = daemon_info(fresh_bsk)
    assert second["uptime_s"] >= first["uptime_s"]


def test_status_reports_the_browser(bsk: Bsk) -> None:
    status = bsk.ok("status")
    browser = status["browser"]
    assert browser["mode"] == "embedded" and browser["connected"] is True
    assert status["sessions"] >= 1
    # The version is the real browser's, and the endpoint is where that browser answers.
    number = re.fullmatch(r"(?:Headless)?Chrome/([\d.]+)", browser["version"])
    assert number, browser["version"]
    executable = browser.get("executable") or launcher.find_browser()
    assert number.group(1) in launcher.browser_version(executable)
    assert re.fullmatch(r"ws://127\.0\.0\.1:\d+/devtools/browser/[\w-]+", browser["cdp_endpoint"])
    http = browser["cdp_endpoint"].split("/devtools/")[0].replace("ws://", "http://")
    with urllib.request.urlopen(http + "/json/version", timeout=10) as r:
        version = json.load(r)
    assert version["webSocketDebuggerUrl"] == browser["cdp_endpoint"]
    assert version["Browser"] == browser["version"]


def test_a_headless_sessions_window_preloads_no_address_bar_popup(bsk: Bsk, site: str) -> None:
    """Chromium 156 preloads two WebUI pages for each new window's address-bar popup
    (~0.9 s of CPU a window, docs/design.md); bsk's headless browser runs without them."""
    bsk.ok("open", f"{site}/form.html")
    endpoint = bsk.ok("status")["browser"]["cdp_endpoint"]
    reply = one_cdp_command(endpoint, "Target.getTargets", {"filter": [{}]})
    assert reply is not None
    targets = reply["result"]["targetInfos"]
    assert any(t["url"] == f"{site}/form.html" for t in targets)  # every kind is listed
    assert [t["url"] for t in targets if t["type"] == "browser_ui"] == []


def test_idle_daemon_exits_by_itself(make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk(BSK_IDLE_TIMEOUT="1")
    info = runner.ok("daemon", "start")
    pid = info["pid"]
    assert info["idle_timeout_s"] == 1
    wait_until(lambda: not alive(pid), 30, "the idle daemon to exit")
    assert not (runner.home / "bsk.sock").exists()
    assert_not_running(runner)
    assert "idle" in (runner.home / "daemon.log").read_text()


def test_doctor_all_ok_on_this_machine(shared_bsk: Bsk) -> None:
    report = shared_bsk.ok("doctor")
    assert report["ok"] is True
    names = {c["check"] for c in report["checks"]}
    assert {"daemon", "socket", "state_dir", "journal", "browser"} <= names
    assert [c for c in report["checks"] if not c["ok"]] == []


def test_doctor_without_a_browser(make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk(BSK_BROWSER="/nonexistent")
    r = runner("doctor")
    # Doctor is a report: it exits 0 when it could produce one; problems are in `ok`.
    assert r.code == 0, r.stderr
    report = r.json
    assert report["ok"] is False
    browser = [c for c in report["checks"] if c["check"] == "browser"]
    assert len(browser) == 1 and browser[0]["ok"] is False
    assert "install" in browser[0]["fix"]
    assert all(c["ok"] for c in report["checks"] if c["check"] != "browser"), report
    human = runner("doctor", as_json=False)
    assert "browser" in human.stdout and "install" in human.stdout
    assert "Traceback" not in human.stdout + human.stderr


def test_missing_browser_is_browser_unavailable(make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk(BSK_BROWSER="/nonexistent")
    for args in (("session", "start", "s1"), ("eval", "1")):
        r = runner(*args)
        assert r.code == 10, r.stdout + r.stderr
        answer = r.json
        assert answer["error"]["code"] == "browser_unavailable"
        assert answer["dispatched"] == "no" and answer["retry_safe"] is True
        assert "install" in answer["error"]["hint"]
    assert runner.ok("session", "list")["sessions"] == []  # nothing half-made
    # Safe to retry, but waiting won't install a browser: clients are told not to.
    transport = httpx.HTTPTransport(uds=str(runner.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=60) as http:
        r = http.post("/v1/sessions/default/tools/eval", json={"expression": "1"})
    assert r.status_code == 503 and r.headers["x-should-retry"] == "false"
    assert r.json()["error"]["details"] == {"reason": "no_browser", "lasting": True}


def test_stop_then_a_call_spawns_again(fresh_bsk: Bsk) -> None:
    pid = fresh_bsk.ok("daemon", "start")["pid"]
    stopped = fresh_bsk.ok("daemon", "stop")
    assert stopped["stopped"] is True and stopped["pid"] == pid
    wait_until(lambda: not alive(pid), 20, "the stopped daemon to exit")
    assert not (fresh_bsk.home / "bsk.sock").exists()
    assert_not_running(fresh_bsk)
    assert fresh_bsk.ok("daemon", "stop")["stopped"] is False  # nothing to stop: not an error

    assert fresh_bsk.ok("session", "list")["sessions"] == []
    new_pid = daemon_info(fresh_bsk)["pid"]
    assert new_pid != pid and alive(new_pid)


def attached(runner: Bsk) -> Bsk:
    # BSK_EPHEMERAL (set for every test daemon) is a launched-browser option; the daemon
    # refuses it together with --cdp-url, so an attaching daemon goes without it.
    runner.env.pop("BSK_EPHEMERAL")
    return runner


def test_cdp_url_attaches_to_a_browser_it_did_not_start(
    fresh_bsk: Bsk, chromium: Chromium, site: str
) -> None:
    attached(fresh_bsk)
    pid = fresh_bsk.ok("daemon", "start", "--cdp-url", chromium.http_url)["pid"]
    agent = fresh_bsk.with_session("a")
    agent.ok("session", "start", "a")
    agent.ok("open", f"{site}/counter.html")
    assert agent("eval", "document.title").value == "Counter"
    # The page is in the test's own Chromium.
    page = f"{site}/counter.html"
    assert page in [t["url"] for t in chromium.devtools("/json/list")]

    browser = fresh_bsk.ok("status")["browser"]
    assert browser["mode"] == "attached" and browser["connected"] is True
    assert browser["cdp_url"] == chromium.http_url
    assert browser["cdp_endpoint"] == chromium.devtools("/json/version")["webSocketDebuggerUrl"]

    assert fresh_bsk.ok("daemon", "stop")["stopped"] is True
    wait_until(lambda: not alive(pid), 20, "the daemon to exit")
    # The daemon closed its own tabs but left the browser it did not start running.
    assert chromium.process.poll() is None
    wait_until(lambda: page not in [t["url"] for t in chromium.devtools("/json/list")], 10,
               "the session's tab to close")


def test_cdp_url_with_no_browser_there(fresh_bsk: Bsk) -> None:
    url = "http://127.0.0.1:9"  # the discard port: nothing listens
    attached(fresh_bsk).ok("daemon", "start", "--cdp-url", url)
    r = fresh_bsk("session", "start", "s1")
    assert r.code == 10, r.stdout + r.stderr
    assert r.json["error"]["code"] == "browser_unavailable"
    assert r.json["dispatched"] == "no" and url in r.json["error"]["hint"]
