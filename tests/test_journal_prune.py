"""Journal retention off the start path: a backlog over the max count is deleted in
bounded batches while requests are served; operations that are not ended, and reconciled
ones within retention, are never deleted."""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from support.cli import Bsk
from support.wait import wait_until

from browserskill.base import paths
from browserskill.dispatch.journal import _COLUMNS, Journal
from browserskill.session.operations import Operation


def fill(path: Path, count: int, open_ids: dict[int, str] | None = None,
         age_s: float = 3 * 86400) -> list[str]:
    """`count` ended operations, oldest first, spread over `age_s`; the indices in
    `open_ids` left in that state (queued/dispatched), as a killed daemon leaves them.
    Every 100th has an idempotency key k<i>."""
    open_ids = open_ids or {}
    journal = Journal(path, max_count=10 * count)
    now = time.time()
    rows, ids = [], []
    for i in range(count):
        created = now - age_s * (count - i) / count
        state = open_ids.get(i, "ended")
        ended = state == "ended"
        rows.append((f"op_t{i:06d}", f"s{i % 7}", "eval", json.dumps({"expression": str(i)}),
                     f"k{i}" if i % 100 == 0 else None, state,
                     "completed" if ended else None, "yes" if state != "queued" else "no",
                     0, json.dumps({"ok": True, "value": i}) if ended else None, None,
                     created, created + 0.01 if ended else None, "[]"))
        ids.append(rows[-1][0])
    journal.db.executemany(f"INSERT INTO ops ({', '.join(_COLUMNS)}) "
                           f"VALUES ({', '.join('?' * len(_COLUMNS))})", rows)
    journal.close()
    return ids


def count(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT count(*) FROM ops").fetchone()[0]
    finally:
        db.close()


async def test_backlog_pruned_in_batches_while_the_loop_serves(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_at = {0: "queued", 1: "dispatched", 5000: "dispatched"}  # old and not ended
    ids = fill(path, 12_000, open_at)
    journal = Journal(path, max_count=1000, prune_batch=500)
    assert journal.has(ids[2]) and journal.has(ids[-1])  # the op ids' check reads them
    seen: list[tuple[int, int]] = []  # (rows, pruned) as another caller saw them meanwhile

    async def caller() -> None:
        await asyncio.sleep(0)  # the prune task takes its first step
        while journal.pruning:
            rows = journal.db.execute("SELECT count(*) FROM ops").fetchone()[0]
            seen.append((rows, journal.pruned))
            # An idempotency key within retention answers throughout.
            assert journal.find_key(f"s{11_900 % 7}", "k11900")["op_id"] == ids[11_900]
            await asyncio.sleep(0)

    task = asyncio.create_task(journal.prune_gradually(min_pause_s=0))
    await asyncio.gather(task, caller())

    # Past retention: the 11,000 older than the newest 1,000, less the 3 not ended.
    assert task.result() == journal.pruned == 11_000 - 3
    # The other caller ran between batches (22 of them), each of at most 500 rows, and
    # first saw the journal still over its max count.
    steps = sorted({p for _, p in seen})
    assert len(steps) >= 20
    assert seen[0][0] > 1000 + 3
    assert all(b - a <= 500 for a, b in itertools.pairwise(steps))
    # Kept: the newest 1,000 and every operation not ended, however old.
    kept = {r[0] for r in journal.db.execute("SELECT op_id FROM ops")}
    assert kept == set(ids[-1000:]) | {ids[0], ids[1], ids[5000]}
    assert [i for i in ids if journal.has(i)] == [i for i in ids if i in kept]
    assert journal.get(ids[5000])["state"] == "dispatched"
    assert journal.find_key("s0", "k0") is not None  # queued, old: kept
    assert journal.find_key("s2", "k100") is None  # ended, past retention: gone
    assert journal.prune_batch() == 0 and not journal.pruning
    journal.close()


def test_age_retention_and_reconciled_ops(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    # 2,000 over 10 days: the oldest 600 are past a 7-day (and a minute) age; the newest
    # two were left open by a dead daemon.
    ids = fill(path, 2000, {1998: "queued", 1999: "dispatched"}, age_s=10 * 86400)
    journal = Journal(path, max_age_s=7 * 86400 + 60, max_count=100_000, prune_batch=100)
    assert journal.reconcile() == {"cancelled": 1, "outcome_unknown": 1}
    assert journal.prune() == 600
    assert count(path) == 1400
    assert journal.get(ids[599]) is None and journal.get(ids[600]) is not None
    newest = journal.get(ids[1999])
    assert newest["status"] == "outcome_unknown" and newest["error"]["details"]["reconciled"]
    assert journal.get(ids[1998])["status"] == "cancelled"
    # eval acts: unknown whether it ran, so not safe to repeat; nothing of a queued one
    # went out, and nobody cancelled it: safe.
    assert newest["retry_safe"] is False and journal.get(ids[1998])["retry_safe"] is True
    journal.close()


def test_a_read_the_daemon_died_in_is_safe_to_repeat(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    ids = fill(path, 2, {0: "dispatched", 1: "dispatched"})
    journal = Journal(path)
    journal.db.execute("UPDATE ops SET tool='wait' WHERE op_id=?", (ids[0],))
    journal.db.commit()
    assert journal.reconcile() == {"cancelled": 0, "outcome_unknown": 2}
    read, acted = journal.get(ids[0]), journal.get(ids[1])
    assert (read["status"], read["retry_safe"]) == ("outcome_unknown", True), read
    assert "call again" in read["error"]["hint"]
    assert (acted["status"], acted["retry_safe"]) == ("outcome_unknown", False), acted
    journal.close()


async def test_record_prunes_one_batch_at_most(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    fill(path, 5000)
    journal = Journal(path, max_count=1000, prune_batch=300)
    for i in range(500):  # the 500th write is an ended operation: one bounded batch
        op = Operation("s", "eval", {"expression": str(i)})
        op.note("dispatched")
        op.complete({"ok": True}, retry_safe=False)
        journal.record(op)
    assert journal.pruned == 300
    assert count(path) == 5500 - 300
    journal.close()


def test_daemon_answers_before_the_backlog_is_pruned(make_bsk: Callable[..., Bsk]) -> None:
    # Default BSK_JOURNAL_MAX_COUNT (10,000): 20,000 rows to delete, in batches of 200.
    runner = make_bsk(BSK_JOURNAL_PRUNE_BATCH="200")
    ids = fill(paths.journal_path(runner.home), 30_000,
               {29_990: "queued", 29_995: "dispatched"})

    first = runner.ok("daemon", "start")  # its first answers: while deleting
    assert first["reconciled_at_start"] == {"cancelled": 1, "outcome_unknown": 1}
    assert first["journal"]["pruning"] is True, first["journal"]
    assert first["journal"]["pruned"] < 20_000
    shown = runner.ok("op", "show", ids[29_995])
    assert shown["status"] == "outcome_unknown" and shown["error"]["details"]["reconciled"]
    assert runner.ok("op", "show", ids[-1])["status"] == "completed"

    done = wait_until(lambda: (j := runner.ok("daemon", "status")["journal"])["pruning"]
                      is False and j, 60, "the backlog to be deleted")
    assert done["pruned"] == 20_000
    assert runner.ok("op", "show", ids[29_990])["status"] == "cancelled"
    runner.stop_daemon()
    assert count(paths.journal_path(runner.home)) == 10_000


def test_one_sessions_list_without_a_session_index(tmp_path: Path) -> None:
    """A journal an older daemon wrote has an index on the session; opening it drops
    that (every write paid for it), and one session's list is still newest first."""
    path = tmp_path / "journal.sqlite3"
    ids = fill(path, 3000)
    db = sqlite3.connect(path)
    db.execute("CREATE INDEX ops_session ON ops(session_id, created_at)")  # the old schema
    db.close()
    journal = Journal(path)
    try:
        indexes = {r[0] for r in journal.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "ops_session" not in indexes and "ops_created" in indexes
        listed = [r["op_id"] for r in journal.list("s3", limit=5)]
        assert listed == [ids[i] for i in range(2999, -1, -1) if i % 7 == 3][:5]
        assert [r["op_id"] for r in journal.list("nobody")] == []
    finally:
        journal.close()
