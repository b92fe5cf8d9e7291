"""Files a user names (browserskill/base/user_files.py) and results a page makes, bounded:
a FIFO, a device or a directory is refused fast, naming the file and what it is; a file
is read up to its cap and no further; a stuck file holds only its own call, which ends at
its deadline while other sessions and the control plane answer; an eval's value and what
the journal keeps of a result are cut, saying so."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.cli import Bsk, daemon_pid
from support.wait import wait_until

from browserskill.base import user_files
from browserskill.base.catalog import EVAL_MAX_CHARS
from browserskill.base.errors import BskError
from browserskill.dispatch.dispatcher import WHOLE_RESULTS
from browserskill.session.operations import (
    KEPT_RESULT_MAX_CHARS,
    RESULT_MAX_CHARS,
    capped_result,
    kept_form,
)
from browserskill.tools.routes import MAX_BODY_BYTES


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def refused(r, field: str, *words: str) -> dict:  # type: ignore[no-untyped-def]
    assert r.code == 2, (r.stdout, r.stderr)
    error = r.json["error"]
    assert error["code"] == "invalid_params" and error["details"]["field"] == field, error
    for word in words:
        assert word in error["message"], error
    return error


# -- the helper itself -------------------------------------------------------------------


def test_reads_refuse_what_is_not_a_regular_file_and_stop_at_the_cap(
        tmp_path: Path, fifo: Path) -> None:
    for path, kind in ((Path("/dev/zero"), "character device"),
                       (Path("/dev/full"), "character device"),
                       (fifo, "FIFO"), (tmp_path, "directory")):
        with pytest.raises(BskError) as e:
            user_files.read_bounded(path, "file", 1000)
        assert e.value.code == "invalid_params" and kind in e.value.message
        assert str(path) in e.value.message and e.value.details["file"] == str(path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(BskError, match="larger than the 1,000 bytes"):
        user_files.read_bounded(big, "file", 1000)
    assert user_files.read_bounded(big, "file", 1001) == b"x" * 1001


def test_a_write_never_touches_a_fifo_or_a_device(fifo: Path) -> None:
    # A FIFO with a reader waiting: opening it would succeed, and is refused by fstat.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(BskError, match="FIFO"):
            user_files.write_whole(fifo, b"secret")
        assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)
    with pytest.raises(BskError, match="FIFO"):  # no reader: ENXIO, named for what it is
        user_files.write_whole(fifo, b"x")
    with pytest.raises(BskError, match="character device"):
        user_files.write_whole("/dev/full", b"x")


def test_a_stuck_file_ends_at_the_deadline_and_the_loop_runs_meanwhile(fifo: Path) -> None:
    """A blocking open (what a FIFO or a hung mount does to a plain `open`) runs in a
    worker: the caller's deadline ends it on time and the event loop keeps serving."""
    async def main() -> tuple[float, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(ticker())
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await user_files.in_worker(lambda: open(fifo, "rb").close())  # blocks
        took = time.monotonic() - start
        beat.cancel()
        return took, ticks

    took, ticks = asyncio.run(main())
    assert 0.5 <= took < 1.5, took
    # The loop ran meanwhile: on the loop, the open would have blocked it (one tick at
    # most) and the deadline could not have fired. A loaded machine ticks late, not never.
    assert ticks >= 3, ticks
    # Let the abandoned worker finish: a writer opens the other end.
    done = threading.Event()
    threading.Thread(target=lambda: (open(fifo, "wb").close(), done.set()), daemon=True).start()
    assert done.wait(10)


# -- reads through the daemon ------------------------------------------------------------


def test_route_file_refuses_devices_fifos_and_big_files_fast(bsk: Bsk, tmp_path: Path,
                                                              fifo: Path) -> None:
    pid = daemon_pid(bsk.home)
    assert pid is not None
    before = rss_mb(pid)
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_BODY_BYTES + 1)
    cases = {"/dev/full": "character device", "/dev/zero": "character device",
             str(fifo): "FIFO", str(tmp_path): "directory", str(big): "larger than"}
    for path, why in cases.items():
        start = time.monotonic()
        r = bsk("route", "add", "**/x", "--file", path, "--timeout", "10", timeout=30)
        assert time.monotonic() - start < 8, path
        refused(r, "file", path, why)
    assert bsk.ok("route", "list")["result"]["routes"] == []
    assert rss_mb(pid) < before + 50  # /dev/full grew main's daemon to 20 GB


def test_state_upload_and_replay_refuse_a_fifo(bsk: Bsk, site: str, fifo: Path) -> None:
    refused(bsk("state", "load", str(fifo), timeout=30), "path", "FIFO")
    refused(bsk("replay", str(fifo), timeout=30), "file", "FIFO")
    refused(bsk("replay", "/dev/zero", timeout=30), "file", "character device")
    refused(bsk("session", "start", "fifo-state", "--isolated", "--state", str(fifo),
                timeout=30), "state", "FIFO")
    bsk.ok("open", f"{site}/form.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    avatar = next(line.split("[ref=")[1].split("]")[0] for line in snap.splitlines()
                  if 'button "Avatar"' in line)
    refused(bsk("upload", avatar, str(fifo), timeout=30), "files", "FIFO")
    refused(bsk("upload", avatar, "/dev/zero", timeout=30), "files", "character device")


# -- writes through the daemon -----------------------------------------------------------


def test_a_fifo_target_is_refused_while_other_sessions_and_status_answer(
        bsk: Bsk, shared_bsk: Bsk, site: str, fifo: Path) -> None:
    bsk.ok("open", f"{site}/form.html")
    other = shared_bsk.with_session(bsk.session + "-other")
    other.ok("session", "start", other.session)
    try:
        png = fifo.with_suffix(".png")  # screenshot's name picks its format
        os.mkfifo(png)
        shot = bsk.popen("screenshot", str(png), "--timeout", "5")
        start = time.monotonic()
        assert other.ok("eval", "1+1")["result"]["value"] == 2
        assert shared_bsk("status").code == 0
        assert time.monotonic() - start < 10  # main: both hung behind the FIFO for ever
        out, _ = shot.communicate(timeout=30)
        assert time.monotonic() - start < 10  # at or before its 5 s deadline (+ start-up)
        error = json.loads(out)["error"]
        assert error["code"] == "invalid_params" and "FIFO" in error["message"], error
    finally:
        other("session", "stop", "--wait")
    for args in (("screenshot", str(fifo) + ".jpg"), ("pdf", str(fifo) + ".pdf"),
                 ("state", "save", str(fifo)), ("network", "har", str(fifo))):
        target = args[-1]
        if not os.path.exists(target):
            os.mkfifo(target)
        refused(bsk(*args, "--timeout", "10", timeout=30), "path", target, "FIFO")
    device = fifo.parent / "full.png"
    device.symlink_to("/dev/full")
    refused(bsk("screenshot", str(device), timeout=30), "path", "character device")


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[tuple[Path, Callable[[], None]]]:
    """A real filesystem (ext4 on a loop device) frozen with `fsfreeze`: opening a file
    for writing there blocks in the kernel until it is thawed — a disk that hangs. Needs
    root and loop devices: skipped, saying why, where they are missing."""
    if os.geteuid() != 0 or not all(map(shutil.which, ("mkfs.ext4", "fsfreeze", "mount"))):
        pytest.skip("needs root, mkfs.ext4, fsfreeze and mount to freeze a filesystem")
    image, mnt = tmp_path / "disk.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"can't mount a loop device here: {mounted.stderr.strip()}")

    def thaw() -> None:
        subprocess.run(["fsfreeze", "-u", str(mnt)], capture_output=True)

    try:
        subprocess.run(["fsfreeze", "-f", str(mnt)], check=True, capture_output=True)
        yield mnt, thaw
    finally:
        thaw()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_stuck_write_ends_at_its_deadline_and_writes_nothing_after(
        bsk: Bsk, shared_bsk: Bsk, site: str,
        frozen: tuple[Path, Callable[[], None]]) -> None:
    mnt, thaw = frozen
    target = mnt / "shot.png"
    bsk.ok("open", f"{site}/form.html")
    other = shared_bsk.with_session(bsk.session + "-other")
    other.ok("session", "start", other.session)
    pid = daemon_pid(bsk.home)
    assert pid is not None
    try:
        start = time.monotonic()
        shot = bsk.popen("screenshot", str(target), "--timeout", "8")
        assert other.ok("eval", "1+1")["result"]["value"] == 2
        assert shared_bsk("status").code == 0
        assert shot.poll() is None  # both answered while the screenshot's file was stuck
        out, _ = shot.communicate(timeout=60)
        took = time.monotonic() - start
        answer = json.loads(out)
        assert answer["status"] == "cancelled", answer  # main: never answered at all
        assert answer["error"]["details"]["reason"] == "deadline", answer
        assert 8 <= took < 15, took
    finally:
        other("session", "stop", "--wait")
    threads = len(os.listdir(f"/proc/{pid}/task"))  # the stuck worker among them
    thaw()
    wait_until(lambda: len(os.listdir(f"/proc/{pid}/task")) < threads, 20,
               "the stuck worker to finish once the disk thawed")
    assert not target.exists()  # its open finished after the answer: nothing was kept
    assert bsk.ok("screenshot", str(target))["result"]["bytes"] > 0  # the disk works again


# -- page-sourced results ----------------------------------------------------------------


def test_an_oversize_eval_is_cut_with_a_note_and_kept_bounded(bsk: Bsk,
                                                              shared_bsk: Bsk) -> None:
    big = bsk.ok("eval", "'x'.repeat(3e6)")
    got = big["result"]
    assert len(got["value"]) == EVAL_MAX_CHARS and got["truncated"] is True
    assert got["total_chars"] == 3_000_000 and "--max-chars" in got["note"]
    more = bsk.ok("eval", "'x'.repeat(3e6)", "--max-chars", "2000000")["result"]
    assert len(more["value"]) == 2_000_000
    obj = bsk.ok("eval", "Array(400000).fill('abcdefghij')")["result"]  # cut in the page
    assert obj["truncated"] and obj["total_chars"] == 400_000 * 13 + 1
    assert obj["value"].startswith('["abcdefghij","abcdefghij"')
    assert len(obj["value"]) == EVAL_MAX_CHARS
    small = bsk.ok("eval", "({a: [1, 2]})")["result"]
    assert small["value"] == {"a": [1, 2]} and "truncated" not in small

    shown = bsk.ok("op", "show", big["op_id"])  # the daemon still holds it: whole
    assert shown["result"]["value"] == got["value"]
    assert "bounded in the journal" in shown["journal_note"]
    db = sqlite3.connect(f"file:{shared_bsk.home / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        (row,) = db.execute("SELECT result FROM ops WHERE op_id = ?",
                            (big["op_id"],)).fetchone()
    finally:
        db.close()
    assert len(row) < KEPT_RESULT_MAX_CHARS + 1000  # main: the whole value and more
    kept = json.loads(row)
    assert kept["truncated"] is True and kept["value"].endswith(
        f"…[cut: {EVAL_MAX_CHARS:,} characters]")
    assert "the call that ran it got it whole" in kept["kept_note"]


def test_any_result_past_the_cap_is_cut_saying_so() -> None:
    """The net under every tool's own cap: a result (a huge snapshot, a storage value, a
    WebMCP tool's answer) past RESULT_MAX_CHARS of JSON is cut, with a note."""
    whole = {"value": "x" * (RESULT_MAX_CHARS + 1), "ok": True, "note": "the tool's own"}
    cut = capped_result(whole)
    assert cut["ok"] is True and cut["truncated"] is True
    assert len(json.dumps(cut)) < RESULT_MAX_CHARS // 10
    assert cut["note"].startswith("the tool's own; cut: the result was")
    items = capped_result({"items": ["x" * 100] * (RESULT_MAX_CHARS // 100)})
    assert items["items"][-1].startswith("…[cut: ") and "lists over" in items["note"]
    small = {"value": "x" * 1000}
    assert capped_result(small) is small and kept_form(small) is small


def test_memory_returns_after_a_big_eval(bsk: Bsk, tmp_path: Path) -> None:
    """main kept a 100 MB eval's value in memory (and the journal) for good; here the
    answer is cut, and once WHOLE_RESULTS more operations end, only the journal's
    bounded form of it stays."""
    pid = daemon_pid(bsk.home)
    assert pid is not None
    bsk.ok("eval", "1")
    before = rss_mb(pid)
    got = bsk.ok("eval", "'x'.repeat(25e6)", "--timeout", "120")["result"]
    assert got["truncated"] and got["total_chars"] == 25_000_000
    script = tmp_path / "small.bsk"
    script.write_text("eval 1\n" * (WHOLE_RESULTS + 1))
    assert bsk.ok("replay", str(script))["result"]["completed"] == WHOLE_RESULTS + 1
    assert rss_mb(pid) < before + 12, (before, rss_mb(pid))  # main: 25 MB more, kept
