"""A browser that stops answering, and a daemon's stop (docs/outcomes.md, "when the
browser does not answer"): a stopped (SIGSTOP) browser is `browser_unavailable` by the
call's deadline, never a 500; `daemon stop` leaves no keeper or browser of its own."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from support.cli import Bsk, alive, kill_daemon_hard
from support.pages import ref_of
from support.wait import wait_until

from browserskill.base.errors import CODES
from browserskill.browser import launcher


def browser_pids(home: Path) -> tuple[int, int]:
    """(keeper, browser) of the state dir's embedded browser, from its record."""
    record = json.loads((home / "browser.json").read_text())
    return record["keeper_pid"], record["pid"]


def group_members(pgid: int) -> list[int]:
    """Live processes of a process group (the browser's: its zygotes and renderers)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def nothing_left(keeper: int, browser: int) -> bool:
    return not alive(keeper) and not group_members(browser)


def processes_writing_to(home: Path) -> list[int]:
    """Live processes whose stdout or stderr is a file in `home`: the daemon (daemon.log),
    the keeper and the browser with all its children (browser.log)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            targets = [os.readlink(entry / "fd" / str(fd)) for fd in (1, 2)]
        except OSError:
            continue
        if any(t.startswith(f"{home}/") for t in targets):
            found.append(int(entry.name))
    return found


def keeper_running(home: Path) -> bool:
    for pid in processes_writing_to(home):
        try:
            if b"browserskill.browser.keeper" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            pass
    return False


@contextmanager
def stopped(pgid: int) -> Iterator[None]:
    """The browser's whole process group stopped, as `kill -STOP -PGID` does; resumed
    after, whatever happened."""
    os.killpg(pgid, signal.SIGSTOP)
    try:
        yield
    finally:
        try:
            os.killpg(pgid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def timed(runner: Bsk, *args: str) -> tuple[float, dict]:
    t0 = time.monotonic()
    r = runner(*args)
    took = time.monotonic() - t0
    assert "Traceback" not in r.stderr, r.stderr
    return took, r.json


def test_a_stopped_browser_is_unavailable_by_the_deadline_never_a_500(
        make_bsk: Callable[..., Bsk], site: str) -> None:
    runner = make_bsk()
    s1 = runner.with_session("s1")
    runner.ok("session", "start", "s1")
    s1.ok("open", f"{site}/form.html")
    name = ref_of(s1("snapshot", as_json=False).stdout, "textbox", "Name")
    keeper, browser = browser_pids(runner.home)
    transport = httpx.HTTPTransport(uds=str(runner.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=60) as http, \
            stopped(browser):
        # A new session: the answer names the cause and the way out, by its deadline.
        t0 = time.monotonic()
        r = http.post("/v1/sessions", json={"session_id": "s2", "timeout_ms": 3000})
        took = time.monotonic() - t0
        assert r.status_code == CODES["browser_unavailable"].http, r.text
        error = r.json()["error"]
        assert error["code"] == "browser_unavailable"
        assert f"pid {browser}) is stopped" in error["message"]
        assert f"kill -CONT -{browser}" in error["hint"]
        assert took < 3 + 2, f"answered after {took:.1f}s"
        # The id is free again, not half made.
        assert "s2" not in [s["session_id"] for s in http.get("/v1/sessions").json()["sessions"]]

        # A call that starts its (default) session: the same, within the call's deadline.
        took, answer = timed(runner, "eval", "1 + 1", "--timeout", "3")
        assert answer["error"]["code"] == "browser_unavailable", answer
        assert answer["dispatched"] == "no"
        assert took < 3 + 3, f"answered after {took:.1f}s"

        # Calls on a session that has its tab end by their deadline (plus the bounded
        # clean-up): one that sent nothing names the stopped browser; an eval, which may
        # have run, is outcome_unknown; never a bug's answer.
        for args in (("snapshot",), ("click", name)):
            took, answer = timed(s1, *args, "--timeout", "3")
            assert answer["error"]["code"] == "browser_unavailable", answer
            assert answer["dispatched"] == "no" and answer["retry_safe"] is True
            assert "is stopped" in answer["error"]["message"]
            assert took < 3 + 2 + 3, f"{args[0]} answered after {took:.1f}s"
        took, answer = timed(s1, "eval", "1 + 1", "--timeout", "3")
        assert answer["status"] in ("outcome_unknown", "failed"), answer
        assert answer["error"]["code"] != "internal", answer
        assert took < 3 + 2 + 3, f"eval answered after {took:.1f}s"

        # The control plane answers all along.
        assert http.get("/v1/status").status_code == 200

        # Stopping the daemon with its browser still stopped leaves nothing behind.
        runner.stop_daemon()
        wait_until(lambda: nothing_left(keeper, browser), 15,
                   "the stopped browser and its keeper to be ended")


def test_daemon_stop_leaves_no_browser_a_previous_daemon_left(
        make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk()
    # The browser outlives a killed daemon (for re-adoption); with no session left to
    # re-adopt, the next daemon used to leave it running for ever.
    runner.ok("session", "start", "s1")
    keeper, browser = browser_pids(runner.home)
    runner.ok("session", "stop", "s1")
    kill_daemon_hard(runner.home)
    assert alive(keeper) and alive(browser)
    runner.ok("daemon", "start")
    runner.stop_daemon()
    wait_until(lambda: nothing_left(keeper, browser), 15, "the left browser to be ended")
    wait_until(lambda: not processes_writing_to(runner.home), 15,
               "every process of the daemon's to end")


def test_daemon_stop_after_a_corrupt_journal_leaves_no_browser(
        make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk()
    runner.ok("session", "start", "s1")  # open: the journal names it for re-adoption
    keeper, browser = browser_pids(runner.home)
    kill_daemon_hard(runner.home)
    (runner.home / "journal.sqlite3").write_bytes(os.urandom(8192))
    Path(f"{runner.home / 'journal.sqlite3'}-wal").unlink(missing_ok=True)
    started = runner.ok("daemon", "start")
    assert started["journal"]["moved_aside"]
    # A call now launches a browser of its own: never two on one state dir.
    assert runner.ok("eval", "2 + 2")["result"]["value"] == 4
    assert nothing_left(keeper, browser)
    new_keeper, new_browser = browser_pids(runner.home)
    runner.stop_daemon()
    wait_until(lambda: nothing_left(new_keeper, new_browser), 15,
               "the daemon's browser to be ended")
    wait_until(lambda: not processes_writing_to(runner.home), 15,
               "every process of the daemon's to end")


def test_daemon_stop_during_a_launch_leaves_nothing(make_bsk: Callable[..., Bsk],
                                                    tmp_path: Path) -> None:
    # A browser slow to start (its DevTools port not yet open): the stop comes while the
    # daemon still waits for its keeper to say it is up.
    slow = tmp_path / "slow-browser"
    slow.write_text(f"#!/bin/sh\nsleep 4\nexec {launcher.find_browser()} \"$@\"\n")
    slow.chmod(0o755)
    runner = make_bsk(BSK_BROWSER=str(slow), BSK_EXPOSE_CDP="0")
    runner.ok("daemon", "start")
    first = runner.popen("eval", "1 + 1")  # the browser launches for it
    wait_until(lambda: keeper_running(runner.home), 30, "the launch to begin")
    runner.stop_daemon()
    first.communicate(timeout=60)
    wait_until(lambda: not processes_writing_to(runner.home), 15,
               "every process of the daemon's to end")
