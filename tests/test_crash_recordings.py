"""Recordings and sessions across a `kill -9` of the daemon (docs/design.md, what survives
what), against real Chromium and ffmpeg: a trace is re-adopted and `trace stop` writes
all of it; a video stays playable up to the crash and `video stop` hands it over; a
session that can't be re-adopted is ended with a reason that names what went wrong,
without holding up the others."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.chromium import Chromium
from support.cli import Bsk, kill_daemon_hard
from support.wait import in_ci, wait_until

from browserskill.base.errors import BskError
from browserskill.base.paths import journal_path, log_path
from browserskill.session.sessions import describe_error


def need_ffmpeg() -> None:
    if shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None:
        if in_ci():
            pytest.fail("ffmpeg is missing: scripts/install.sh installs it")
        pytest.skip("ffmpeg is not installed (scripts/install.sh installs it)")


@pytest.fixture
def rec(make_bsk: Callable[..., Bsk]) -> Bsk:
    """Session "rec" on a daemon of this test's own (it gets killed)."""
    return make_bsk().with_session("rec")


def recordings(s: Bsk) -> dict[str, Any]:
    listed = s.ok("session", "list")
    mine = [x for x in listed["sessions"] if x["session_id"] == s.session]
    if not mine:  # say why: the daemon's reasons and the end of its log
        log = log_path(s.home).read_text(errors="replace").splitlines()[-40:]
        pytest.fail(f"{s.session} is not listed; ended at restart: "
                    f"{listed['ended_at_restart']}; daemon log:\n" + "\n".join(log))
    return dict(mine[0]["recordings"])


def duration(path: Path) -> float | None:
    """The length ffprobe, an independent reader, finds (None: the header has none)."""
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration",
                          "-of", "csv=p=0", str(path)], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    return None if out in ("", "N/A") else float(out)


def frames(path: Path) -> int:
    """Frames ffprobe decodes from the file, header or not."""
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                          "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                          str(path)], capture_output=True, text=True, check=True,
                         timeout=60).stdout.strip()
    return int(out or 0)


def encoder_of(file: Path) -> int | None:
    """The pid of the ffmpeg writing `file`, if one runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if b"ffmpeg" in cmdline and str(file).encode() in cmdline and state != "Z":
            return int(entry.name)
    return None


def test_a_trace_is_readopted_across_kill_9_and_written_whole(
        rec: Bsk, site: str, tmp_path: Path) -> None:
    """Before: after the crash `trace stop` said "not recording" while `trace start` said
    "already started" (the browser kept tracing in the dead daemon's CDP session)."""
    rec.ok("session", "start", "rec")
    rec.ok("trace", "start")
    rec.ok("open", f"{site}/counter.html?before-crash")
    for _ in range(2):  # a few kill cycles: re-adopted again each time
        kill_daemon_hard(rec.home)
        listed = recordings(rec)["trace"]
        assert listed["state"] == "recording" and "re-adopted" in listed["readopted"]
    refused = rec("trace", "start")  # consistent: the trace is this session's, running
    assert refused.code != 0
    assert refused.json["error"]["details"]["reason"] == "already_recording"
    rec.ok("open", f"{site}/counter.html?after-crash")
    out = tmp_path / "trace.json"
    r = rec.ok("trace", "stop", str(out))["result"]
    assert r["bytes"] == out.stat().st_size > 0
    events = json.loads(out.read_text())["traceEvents"]
    urls = {e.get("args", {}).get("data", {}).get("url") for e in events
            if e.get("name") == "ResourceSendRequest"}
    assert {f"{site}/counter.html?before-crash", f"{site}/counter.html?after-crash"} <= urls
    assert "trace" not in recordings(rec)
    # The browser's one trace is free again: a new one starts and stops.
    rec.ok("trace", "start")
    rec.ok("trace", "stop", str(tmp_path / "again.json"))
    # And a trace left by a crash ends with its session (nothing keeps the browser busy).
    rec.ok("trace", "start")
    kill_daemon_hard(rec.home)
    assert recordings(rec)["trace"]["readopted"]
    rec.ok("session", "stop", "--wait")
    other = rec.with_session("other")
    other.ok("session", "start", "other")
    other.ok("trace", "start")
    other.ok("trace", "stop", str(tmp_path / "other.json"))


@pytest.fixture
def animated(rec: Bsk, site: str) -> Bsk:
    rec.ok("session", "start", "rec")
    rec.ok("open", f"{site}/evidence.html")
    rec.ok("eval", "setInterval(() => { document.getElementById('data').textContent = "
                    "performance.now() }, 40), 1")
    return rec


def record_until_killed(s: Bsk, seconds: float, *,
                        encoder_too: bool = False) -> tuple[Path, float, int]:
    """`video start`, frames written for `seconds`, then kill -9 (the encoder too, when
    asked: frozen first so that it can't finish the file). The leftover file, the most
    time recorded, and the frames the daemon had written when last asked, just
    before the kill (on a loaded machine fewer than 25 a second of wall time)."""
    before = time.monotonic()
    s.ok("video", "start", "--size", "320x240")
    wait_until(lambda: recordings(s)["video"]["frames_written"] >= seconds * 25, 30,
               f"{seconds} s of film written")
    # ffmpeg creates its file once it has its first frames; under load, after our count.
    (file,) = wait_until(lambda: list((s.home / "recordings").glob("rec-*.webm")), 15,
                         "the encoder's file")
    encoder = encoder_of(file)
    assert encoder is not None
    written = recordings(s)["video"]["frames_written"]
    if encoder_too:
        os.kill(encoder, signal.SIGSTOP)
    killed = time.monotonic()
    kill_daemon_hard(s.home)
    if encoder_too:
        os.kill(encoder, signal.SIGKILL)
    wait_until(lambda: encoder_of(file) is None, 20, "the encoder to finish")
    return file, killed - before, written


def test_a_video_cut_by_kill_9_keeps_everything_until_the_crash(
        animated: Bsk, tmp_path: Path) -> None:
    """Before: the restarted daemon knew nothing of the video and the file held 0.04 s of
    1-2.5 s recorded. Now the encoder finishes the file when the daemon dies, the next
    daemon lists it as interrupted, and `video stop` hands it over."""
    need_ffmpeg()
    s = animated
    file, most, written = record_until_killed(s, 2.0)
    assert frames(file) >= written - 25  # playable as left, before any daemon
    listed = recordings(s)["video"]  # the next daemon knows of it
    assert listed["state"] == "interrupted" and listed["file"] == str(file)
    refused = s("video", "start")
    assert refused.json["error"]["details"]["reason"] == "already_recording"
    out = tmp_path / "cut.webm"
    r = s.ok("video", "stop", str(out))["result"]
    assert "daemon stopped" in r["interrupted"]
    assert written / 25 - 1.0 <= duration(out) <= most + 0.5  # type: ignore[operator]
    assert r["duration_s"] == pytest.approx(duration(out), abs=0.05)
    assert not file.exists() and "video" not in recordings(s)
    s.ok("video", "start", "--size", "320x240")  # free again
    s.ok("video", "stop", str(tmp_path / "next.webm"))


def test_a_video_whose_encoder_died_too_is_playable_to_its_last_cluster(
        animated: Bsk, tmp_path: Path) -> None:
    """The encoder killed along with the daemon never writes its trailer: what it wrote
    as it went (clusters of CLUSTER_MS) still plays, and `video stop` re-muxes it."""
    need_ffmpeg()
    s = animated
    file, most, written = record_until_killed(s, 2.0, encoder_too=True)
    assert frames(file) >= written - 1.5 * 25
    out = tmp_path / "cut.mp4"
    r = s.ok("video", "stop", str(out))["result"]
    assert r["interrupted"]
    assert written / 25 - 1.5 <= duration(out) <= most + 0.5  # type: ignore[operator]


def test_a_video_left_by_a_session_that_did_not_survive_is_named_where_it_is(
        animated: Bsk, tmp_path: Path) -> None:
    need_ffmpeg()
    s = animated
    s.ok("eval", "1")  # the row is saved after each op
    file, _, written = record_until_killed(s, 1.0)
    _edit_row(s.home, "rec", tabs=[["t1", "no-such-target"]])
    listed = s.ok("session", "list")
    (ended,) = [e for e in listed["ended_at_restart"] if e["session_id"] == "rec"]
    assert "did not survive" in ended["reason"] and str(file) in ended["reason"]
    assert duration(file) >= written / 25 - 1.0  # type: ignore[operator]
    gone = s("eval", "1")
    assert gone.json["error"]["code"] == "session_not_found"
    assert str(file) in gone.json["error"]["message"]


def _edit_row(home: Path, session_id: str, **columns: Any) -> None:
    """Change a session's stored row while no daemon runs (as a corrupt or stale journal
    would have it)."""
    db = sqlite3.connect(journal_path(home))
    try:
        for name, value in columns.items():
            db.execute(f"UPDATE sessions SET {name} = ? WHERE session_id = ?",
                       (json.dumps(value), session_id))
        db.commit()
    finally:
        db.close()


def test_a_session_whose_state_cant_be_reattached_ends_saying_why(
        make_bsk: Callable[..., Bsk], site: str) -> None:
    """Before: a failed re-adoption logged "re-adopting sessions failed: " (empty) and
    the session was neither re-adopted nor reported ended."""
    runner = make_bsk()
    good, bad = runner.with_session("good"), runner.with_session("bad")
    for s in (good, bad):
        runner.ok("session", "start", s.session or "")
        s.ok("open", f"{site}/counter.html")
    good.ok("eval", "window.marker = 7")
    kill_daemon_hard(runner.home)
    _edit_row(runner.home, "bad", browser={"placement": "embedded", "context_id": None,
                                           "window_size": ["wide", 600]})
    assert good.ok("eval", "window.marker")["result"]["value"] == 7  # re-adopted
    listed = runner.ok("session", "list")
    assert [x["session_id"] for x in listed["sessions"]] == ["good"]
    (ended,) = listed["ended_at_restart"]
    assert ended["session_id"] == "bad"
    assert "ValueError: invalid literal for int()" in ended["reason"]
    gone = bad("eval", "1")
    assert gone.json["error"]["code"] == "session_not_found"
    assert "ValueError" in gone.json["error"]["message"]
    info = runner.ok("daemon", "status")
    assert "ValueError" in info["sessions_at_start"]["reasons"]["bad"]
    log = (runner.home / "daemon.log").read_text()
    assert "re-adopting sessions failed: \n" not in log


@pytest.fixture
def frozen_later(chromium: Chromium) -> Iterator[Chromium]:
    """A Chromium the test may SIGSTOP; woken before it is torn down."""
    yield chromium
    os.killpg(chromium.process.pid, signal.SIGCONT)


def test_a_session_whose_browser_hangs_is_ended_as_timed_out_and_blocks_no_other(
        make_bsk: Callable[..., Bsk], frozen_later: Chromium, site: str) -> None:
    runner = make_bsk(BSK_READOPT_TIMEOUT="2")
    near, far = runner.with_session("near"), runner.with_session("far")
    runner.ok("session", "start", "near")
    near.ok("open", f"{site}/counter.html")
    runner.ok("session", "start", "far", "--cdp-url", frozen_later.http_url)
    kill_daemon_hard(runner.home)
    os.killpg(frozen_later.process.pid, signal.SIGSTOP)  # its browser answers nothing
    started = time.monotonic()
    assert near.ok("eval", "1+1")["result"]["value"] == 2
    assert time.monotonic() - started < 15
    (ended,) = runner.ok("session", "list")["ended_at_restart"]
    assert ended["session_id"] == "far" and "timed out after 2 s" in ended["reason"]
    assert "far" not in [x["session_id"] for x in runner.ok("session", "list")["sessions"]]
    assert "timed out" in far("eval", "1").json["error"]["message"]


def test_the_dead_daemons_cdp_sessions_are_detached(rec: Bsk, site: str) -> None:
    """The keeper keeps the dead daemon's CDP sessions open; left attached, each restart
    added another copy of every event, and their `Fetch` interception paused requests of
    routes the new daemon knows nothing of, for ever (a page that hangs)."""
    rec.ok("session", "start", "rec")
    rec.ok("open", f"{site}/counter.html")
    rec.ok("route", "add", "**/other.html", "--body", "mocked")
    fetch = "await fetch('/other.html').then(r => r.text()).then(t => t.slice(0, 6))"
    assert rec.ok("eval", fetch)["result"]["value"] == "mocked"
    for _ in range(2):
        kill_daemon_hard(rec.home)
        # Routes live in the daemon (docs/design.md): gone with it, in the browser too.
        r = rec("eval", fetch, "--timeout", "10")
        assert r.code == 0, r.stdout
        assert r.json["result"]["value"] != "mocked"


def test_a_reason_is_never_empty() -> None:
    """Exceptions with no message (a bare TimeoutError is the usual one) still say what
    they were; a timeout is named as such."""
    assert describe_error(TimeoutError()) == "timed out"
    assert describe_error(TimeoutError(), 2.0) == "timed out after 2 s"
    assert describe_error(KeyError("tabs")) == "KeyError: 'tabs'"
    assert describe_error(RuntimeError()) == "RuntimeError (no message)"
    assert describe_error(BskError("browser_unavailable", "no browser")) == \
        "BskError: no browser"
