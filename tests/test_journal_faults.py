"""The journal's faults answered honestly (docs/outcomes.md, "when the disk or the journal
fails"): a full disk refuses calls at once, before anything is sent, and every operation
that ran is in the journal with its true status once space returns; an unreadable journal
is moved aside and the daemon starts; a damaged WAL is detected and reported."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.cli import Bsk, stop_for_good
from support.wait import wait_until

from browserskill.base.errors import CODES


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
            def do_GET(self) -> None:
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


# -- an unreadable journal, a damaged WAL ---------------------------------------------

# Written by a process that then dies without closing the journal, as a killed daemon
# does: the operations after the checkpoint stay in the WAL.
_WRITER = """
import asyncio, os, sys
from pathlib import Path
from browserskill.dispatch.journal import Journal
from browserskill.session.operations import Operation

async def main():
    journal = Journal(Path(sys.argv[1]))
    def ops(n, tag):
        for i in range(n):
            op = Operation("s1", "eval", {"expression": f"{tag}{i}"},
                           op_id=f"op_{tag}{i:04d}")
            op.complete({"value": i}, retry_safe=True)
            assert journal.record(op)
    ops(int(sys.argv[2]), "checkpointed")
    journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ops(int(sys.argv[3]), "inwal")
    os._exit(0)

asyncio.run(main())
"""


def write_journal(home: Path, checkpointed: int, in_wal: int = 0) -> Path:
    path = home / "journal.sqlite3"
    subprocess.run([sys.executable, "-c", _WRITER, str(path), str(checkpointed),
                    str(in_wal)], check=True, timeout=60)
    return path


def random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def zeroed_header(path: Path) -> None:
    with open(path, "r+b") as f:
        f.write(b"\0" * 100)


def not_a_database(path: Path) -> None:
    path.write_text("journal notes: nothing here is SQLite\n" * 50)


def damaged_page(path: Path) -> None:
    """A page in the middle overwritten; the header is intact."""
    with open(path, "r+b") as f:
        f.seek(4096 * 2)
        f.write(os.urandom(4096))


@pytest.mark.parametrize("damage", [random_bytes, zeroed_header, not_a_database,
                                    damaged_page], ids=lambda d: d.__name__)
def test_an_unreadable_journal_is_moved_aside_and_the_daemon_starts(
        make_bsk: Callable[..., Bsk], damage: Callable[[Path], None]) -> None:
    runner = make_bsk()
    home = runner.home
    path = write_journal(home, 200)
    damage(path)
    kept = path.read_bytes()

    started = runner("daemon", "start")
    assert started.code == 0, started.stdout + started.stderr
    assert "Traceback" not in started.stderr + (home / "daemon.log").read_text()
    moved = started.json["journal"]["moved_aside"]
    aside = Path(moved["path"])
    assert aside.parent == home and aside.name.startswith("journal.sqlite3.corrupt-")
    assert aside.read_bytes() == kept  # moved whole, not rewritten
    assert str(aside) in (home / "daemon.log").read_text()  # the log says where
    said = runner("daemon", "status", as_json=False).stdout  # and so does the daemon
    assert f"moved aside to {aside}" in said

    # A new journal serves; the old operations are said to be unreadable, not "never were".
    gone = runner("op", "show", "op_checkpointed0003")
    assert gone.json["error"]["code"] == "op_not_found"
    assert aside.name in gone.json["error"]["hint"]
    doctor = runner("doctor").json
    report = next(c for c in doctor["checks"] if c["check"] == "journal_moved_aside")
    assert not report["ok"] and str(aside) in report["detail"]
    assert "can't be shown" in report["detail"] and "rm " in report["fix"]
    assert next(c for c in doctor["checks"] if c["check"] == "journal")["ok"]

    if damage is not not_a_database:
        return
    # Once the person deletes it, doctor is content again.
    runner.stop_daemon()
    for moved_file in home.glob("journal.sqlite3.corrupt-*"):
        moved_file.unlink()
    checks = runner("doctor").json["checks"]
    assert not [c for c in checks if c["check"].startswith("journal_")]


def test_a_damaged_wal_is_detected_reported_and_kept(make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk()
    home = runner.home
    path = write_journal(home, checkpointed=5, in_wal=30)
    wal = Path(f"{path}-wal")
    data = bytearray(wal.read_bytes())
    frame = 24 + 4096
    at = 32 + frame * 3 + 24 + 200  # inside the 4th frame's page
    data[at:at + 16] = os.urandom(16)
    wal.write_bytes(bytes(data))
    damaged = bytes(data)

    started = runner("daemon", "start")
    assert started.code == 0, started.stdout + started.stderr
    report = started.json["journal"]["wal_damage"]
    assert report["frames_replayed"] == 3 and report["transactions_dropped"] >= 20
    assert "frame 4" in report["why"]
    copy = Path(report["copy"])
    assert copy.parent == home and copy.read_bytes() == damaged  # kept for inspection
    log = (home / "daemon.log").read_text()
    assert "write-ahead log is damaged" in log and str(copy) in log

    # What was checkpointed is there; what the damage cut is gone, and doctor says why.
    assert runner.ok("op", "show", "op_checkpointed0004")["status"] == "completed"
    assert runner("op", "show", "op_inwal0029").json["error"]["code"] == "op_not_found"
    checks = runner("doctor").json["checks"]
    wal_check = next(c for c in checks if c["check"] == "journal_wal_damaged")
    assert not wal_check["ok"] and str(copy) in wal_check["detail"]


def test_a_clean_wal_left_by_a_killed_daemon_is_not_reported(
        make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk()
    write_journal(runner.home, checkpointed=5, in_wal=30)
    started = runner.ok("daemon", "start")
    assert "wal_damage" not in started["journal"]
    assert runner.ok("op", "show", "op_inwal0029")["status"] == "completed"
    assert not list(runner.home.glob("journal.sqlite3*damaged*"))


# -- the journal's own bookkeeping, on a real refusal by SQLite ---------------------------


async def test_refused_writes_are_kept_in_order_and_written_when_the_journal_takes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from browserskill.base.errors import BskError
    from browserskill.dispatch import journal as journal_module
    from browserskill.dispatch.journal import Journal
    from browserskill.session.operations import DISPATCHED, Operation

    journal = Journal(tmp_path / "journal.sqlite3")
    ran = Operation("s1", "click", {"ref": "e1"})
    ran.state = DISPATCHED
    assert journal.record(ran)

    journal.db.execute("PRAGMA query_only = ON")  # SQLite refuses every write from here
    ran.complete({"clicked": True}, retry_safe=False)
    assert not journal.record(ran)
    assert journal.write_error and "readonly" in journal.write_error
    refused = []
    monkeypatch.setattr(journal_module, "MAX_UNWRITTEN", 4)
    for i in range(5):
        op = Operation("s1", "eval", {"expression": str(i)})
        op.fail(journal.unavailable())
        assert not journal.record(op)
        refused.append(op.op_id)
    # Bounded: the oldest refusals (they never ran) went first; what ran is kept.
    assert list(journal.unwritten) == [ran.op_id, *refused[2:]]
    # The daemon still answers for them from memory, the journal's row being behind.
    assert journal.get(ran.op_id)["status"] == "completed"
    listed = {r["op_id"]: r["status"] for r in journal.list("s1")}
    assert listed[ran.op_id] == "completed" and refused[-1] in listed
    assert not journal.healthy()[0]

    journal.db.execute("PRAGMA query_only = OFF")  # space returns
    assert journal.retry_unwritten()
    assert journal.write_error is None and not journal.unwritten
    rows = dict(journal.db.execute("SELECT op_id, status FROM ops").fetchall())
    assert rows[ran.op_id] == "completed"
    assert all(rows[k] == "failed" for k in refused[2:])
    assert isinstance(journal.unavailable(), BskError)
    journal.close()


async def test_writes_of_one_loop_turn_share_a_commit_and_a_refused_one_is_written_singly(
        tmp_path: Path) -> None:
    """`record_soon`: the calls recorded in one turn share one transaction, each in the
    database (as another reader sees it) when its caller resumes; a caller cancelled
    meanwhile still has its operation written; a refused batch leaves each operation as
    `record` would (kept in order, a new row still inserted once space returns)."""
    import asyncio

    from browserskill.dispatch.journal import Journal
    from browserskill.session.operations import DISPATCHED, ENDED, Operation

    path = tmp_path / "journal.sqlite3"
    journal = Journal(path)

    def read() -> dict[str, str]:  # an independent reader: what a kill -9 would leave
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return dict(db.execute("SELECT op_id, state FROM ops").fetchall())

    ops = [Operation("s1", "eval", {"expression": str(i)}) for i in range(3)]
    for op in ops:
        op.state = DISPATCHED
    cancelled = asyncio.ensure_future(journal.record_soon(ops[2]))
    written = asyncio.gather(*(journal.record_soon(op) for op in ops[:2]))
    await asyncio.sleep(0)  # the callers wait on the turn's commit ...
    cancelled.cancel()  # ... and one of them gives up
    assert await written == [True, True]
    assert (journal.commits, journal.batched) == (1, 3)
    assert read() == {op.op_id: DISPATCHED for op in ops}

    journal.db.execute("PRAGMA query_only = ON")  # SQLite refuses every write from here
    for op in ops:
        op.complete({"value": 1}, retry_safe=False)
    refused = await asyncio.gather(*(journal.record_soon(op) for op in ops))
    assert refused == [False] * 3 and journal.commits == 1
    assert list(journal.unwritten) == [op.op_id for op in ops]
    journal.db.execute("PRAGMA query_only = OFF")  # space returns
    assert journal.retry_unwritten()
    assert read() == {op.op_id: ENDED for op in ops}

    # A batch refused part-way (its second row breaks the one-key-per-session rule): the
    # first row's INSERT is rolled back with it, and written again as an INSERT.
    ops[0].idempotency_key = "k"
    assert journal.record(ops[0])
    fresh = Operation("s1", "eval", {"expression": "new"})
    fresh.state = DISPATCHED
    ops[1].idempotency_key = "k"
    assert await asyncio.gather(journal.record_soon(fresh),
                                journal.record_soon(ops[1])) == [True, False]
    assert "UNIQUE" in (journal.write_error or "")
    assert read()[fresh.op_id] == DISPATCHED

    # A row that can't even be made (a bug: a value JSON can't hold) fails its own caller,
    # loudly, and no other: the rest are written, no transaction is left open.
    journal.close()
    journal = Journal(tmp_path / "second.sqlite3")
    path = journal.path
    good = Operation("s1", "eval", {"expression": "1"})
    bad = Operation("s1", "eval", {"expression": object()})
    both = await asyncio.gather(journal.record_soon(good), journal.record_soon(bad),
                                return_exceptions=True)
    assert both[0] is True and isinstance(both[1], TypeError)
    assert not journal.db.in_transaction and set(read()) == {good.op_id}
    journal.close()
