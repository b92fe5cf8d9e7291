"""The journal's faults answered honestly (docs/outcomes.md, "when the disk or the journal
fails"): a full disk refuses calls at once, before anything is sent, and every operation
that ran is in the journal with its true status once space returns; an unreadable journal
is moved aside and the daemon starts; a damaged WAL is detected and reported."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.cli import Bsk, kill_daemon_hard, stop_for_good
from support.wait import wait_until

from browserskill.errors import CODES


@pytest.fixture
def small_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 16 MB tmpfs of the test's own, to fill (mounting needs root)."""
    where = tmp_path_factory.mktemp("disk")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs",
                              str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(disk: Path) -> Path:
    """Fill the filesystem to its last byte; the file that does it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # big steps, then the last pages and bytes
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


class Gate:
    """A loopback URL whose answer waits until the test opens the gate: a page's fetch
    that the test ends when it chooses."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.asked = threading.Event()
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                gate.asked.set()
                gate.open.wait(30)
                body = b"through"
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hold"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.open.set()
        self.server.shutdown()


def journal_rows(home: Path) -> dict[str, tuple[str, str | None, str]]:
    """op id -> (state, status, dispatched), read from the database file itself."""
    db = sqlite3.connect(f"file:{home / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        return {r[0]: (r[1], r[2], r[3]) for r in
                db.execute("SELECT op_id, state, status, dispatched FROM ops")}
    finally:
        db.close()


def test_a_full_disk_refuses_calls_at_once_and_loses_no_operation(
        small_disk: Path, site: str) -> None:
    runner = Bsk(small_disk, "s1")
    gate = Gate()
    try:
        runner.ok("session", "start", "s1")
        runner.ok("open", f"{site}/form.html")
        before = runner.ok("eval", "1 + 1")["op_id"]

        # A call in the browser when the disk fills: it completes, and its ending can't
        # be written then.
        held = runner.popen("eval", f"fetch('{gate.url}').then(r => r.text())")
        assert gate.asked.wait(30), "the page's fetch never came"
        filler = fill(small_disk)
        gate.open.set()
        out, err = held.communicate(timeout=60)
        assert held.returncode == 0, out + err
        answer = json.loads(out)
        assert answer["status"] == "completed" and answer["result"]["value"] == "through"
        ran = answer["op_id"]
        # The daemon still knows it (from memory), and says why it is not on disk yet.
        shown = runner.ok("op", "show", ran)
        assert shown["status"] == "completed"

        # Every call now: refused at once, nothing sent, a code that is not `internal`.
        refused = []
        for i in range(5):
            t0 = time.monotonic()
            r = runner("eval", f"window.__sent = {i}", "--timeout", "10")
            took = time.monotonic() - t0
            assert r.code == CODES["journal_unavailable"].exit, r.stdout + r.stderr
            error = r.json
            assert error["error"]["code"] == "journal_unavailable"
            assert error["dispatched"] == "no" and error["retry_safe"] is True
            assert "free space" in error["error"]["hint"]
            assert took < 5, f"a refusal took {took:.1f}s"
            refused.append(error["op_id"])
        status = runner.ok("status")  # the control plane answers all along
        assert status["journal"]["write_error"] and status["journal"]["unwritten"] >= 1
        doctor = runner("doctor")
        journal_check = next(c for c in doctor.json["checks"] if c["check"] == "journal")
        assert not journal_check["ok"] and "free space" in journal_check["fix"]

        # Space returns: what ran and what was refused are written with their true status,
        # without another call.
        assert journal_rows(small_disk)[ran][0] == "dispatched"  # what the disk had
        filler.unlink()
        wait_until(lambda: journal_rows(small_disk)[ran][0] == "ended", 15,
                   "the kept ending to be written")
        rows = journal_rows(small_disk)
        assert rows[before] == ("ended", "completed", "yes")
        assert rows[ran] == ("ended", "completed", "yes")
        for op_id in refused:
            assert rows[op_id] == ("ended", "failed", "no"), rows[op_id]
        assert runner.ok("eval", "window.__sent === undefined")["result"]["value"] is True

        # ... and the journal, not memory, answers for them after a restart.
        runner.stop_daemon()
        assert runner.ok("op", "show", ran)["status"] == "completed"
        assert runner.ok("op", "show", refused[0])["error"]["code"] == "journal_unavailable"
    finally:
        gate.close()
        stop_for_good(runner)
