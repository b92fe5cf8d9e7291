"""The operation journal: SQLite (WAL), written at queued, dispatched and ended.

A daemon that dies mid-call leaves rows that are not ended; the next daemon reconciles
them (`reconcile`) so `bsk op show` can still answer honestly.

Retention (ended operations older than `max_age_s`, or past the newest `max_count`) is
applied in bounded batches (`prune_batch`): the daemon's start only reconciles, and a
background task (`prune_gradually`) deletes a big backlog batch by batch while requests
are served; `record` deletes at most one batch every 500 writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from browserskill import contract, paths
from browserskill.dispatch.operations import ENDED, QUEUED, Operation, iso, kept_form

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ops (
  op_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  params TEXT NOT NULL,
  idempotency_key TEXT,
  state TEXT NOT NULL,
  status TEXT,
  dispatched TEXT NOT NULL,
  retry_safe INTEGER NOT NULL,
  result TEXT,
  error TEXT,
  created_at REAL NOT NULL,
  ended_at REAL,
  timeline TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ops_key ON ops(session_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS ops_session ON ops(session_id, created_at);
CREATE INDEX IF NOT EXISTS ops_created ON ops(created_at);
"""

_COLUMNS = ("op_id", "session_id", "tool", "params", "idempotency_key", "state", "status",
            "dispatched", "retry_safe", "result", "error", "created_at", "ended_at",
            "timeline")


class Journal:
    def __init__(self, path: Path, *, max_age_s: float = 7 * 86400, max_count: int = 10_000,
                 prune_batch: int = 1000):
        self.path = path
        self.max_age_s = max_age_s
        self.max_count = max_count
        self.prune_batch_rows = max(1, prune_batch)  # rows per DELETE: ~15-30 ms here
        self.pruning = False  # a backlog is being deleted in the background
        self.pruned = 0  # rows deleted by retention since this journal was opened
        # Created 0600 before SQLite opens it: SQLite gives the -wal and -shm it creates
        # the database file's own mode.
        os.close(paths.open_private(path, os.O_RDWR | os.O_CREAT))
        for side in ("-wal", "-shm"):
            if os.path.exists(f"{path}{side}"):
                os.chmod(f"{path}{side}", 0o600)
        # Used only from the event loop's thread; each write is a short transaction.
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        self._writes = 0

    def record(self, op: Operation) -> None:
        row = (
            op.op_id, op.session_id, op.tool, json.dumps(op.shown_params()),
            op.idempotency_key,
            op.state, op.status, op.dispatched, int(op.retry_safe),
            None if op.result is None else json.dumps(kept_form(op.result)),  # bounded
            None if op.error is None else json.dumps(op.error),
            op.created_at, op.ended_at, json.dumps(op.timeline),
        )
        if op.journaled and op.params_changed:  # a maybe-secret now known (Operation.masked)
            self.db.execute("UPDATE ops SET params=? WHERE op_id=?", (row[3], op.op_id))
        op.params_changed = False
        if op.journaled:  # later writes touch only what changes (no index rewrites)
            self.db.execute(
                "UPDATE ops SET idempotency_key=?, state=?, status=?, dispatched=?, "
                "retry_safe=?, result=?, error=?, ended_at=?, timeline=? WHERE op_id=?",
                (*row[4:11], row[12], row[13], op.op_id),
            )
        else:
            self.db.execute(
                f"INSERT OR REPLACE INTO ops ({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_COLUMNS))})",
                row,
            )
            op.journaled = True
        self._writes += 1
        if op.state == ENDED and self._writes % 500 == 0:
            self.prune_batch()  # bounded: a backlog is left to `prune_gradually`

    def get(self, op_id: str) -> dict[str, Any] | None:
        cur = self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM ops WHERE op_id = ?", (op_id,))
        row = cur.fetchone()
        return _to_result(row) if row else None

    def find_key(self, session_id: str, key: str) -> dict[str, Any] | None:
        cur = self.db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM ops WHERE session_id = ? AND idempotency_key = ?",
            (session_id, key),
        )
        row = cur.fetchone()
        return _to_result(row) if row else None

    def list(self, session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM ops"
        args: tuple[Any, ...] = ()
        if session_id:
            sql += " WHERE session_id = ?"
            args = (session_id,)
        sql += " ORDER BY created_at DESC LIMIT ?"
        return [_to_result(r) for r in self.db.execute(sql, (*args, limit))]

    def reconcile(self) -> dict[str, int]:
        """Settle operations a dead daemon left open (docs/design.md §4, daemon death)."""
        now = time.time()
        counts = {"cancelled": 0, "outcome_unknown": 0}
        rows = self.db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM ops WHERE state != ?", (ENDED,)
        ).fetchall()
        for row in rows:
            op = _to_result(row)
            timeline = op["timeline"]
            if row[5] == QUEUED:
                status, dispatched, code = "cancelled", "no", "cancelled"
                message = "the daemon stopped before this operation was dispatched"
                hint = "nothing reached the browser; it is safe to call again"
            else:
                status, dispatched, code = "outcome_unknown", "unknown", "outcome_unknown"
                message = "the daemon stopped while this operation was in the browser"
                hint = "inspect the page (snapshot) before acting again"
            timeline.append([iso(now), "reconciled", "daemon restarted"])
            timeline.append([iso(now), "ended", status])
            error = {"code": code, "message": message, "hint": hint,
                     "details": {"reconciled": True, "state_at_death": row[5]}}
            self.db.execute(
                "UPDATE ops SET state=?, status=?, dispatched=?, retry_safe=0, error=?, "
                "ended_at=?, timeline=? WHERE op_id=?",
                (ENDED, status, dispatched, json.dumps(error), now, json.dumps(timeline),
                 row[0]),
            )
            counts[status] += 1
        return counts

    def _prune_before(self) -> float:
        """Ended operations created before this are past retention (age or count)."""
        cutoff = time.time() - self.max_age_s
        if self.max_count <= 0:
            return float("inf")
        # The oldest of the newest `max_count` (every state counts): strictly older ones go,
        # so ties at the boundary are kept rather than one too many deleted. Index-only.
        row = self.db.execute("SELECT created_at FROM ops ORDER BY created_at DESC "
                              "LIMIT 1 OFFSET ?", (self.max_count - 1,)).fetchone()
        return cutoff if row is None else max(cutoff, row[0])

    def prune_batch(self, limit: int | None = None) -> int:
        """Delete at most `limit` (default one batch) ended operations past retention,
        oldest first, in one short transaction; returns how many went. Never touches an
        operation that is not ended."""
        cur = self.db.execute(
            "DELETE FROM ops WHERE rowid IN (SELECT rowid FROM ops WHERE created_at < ? "
            " AND state = ? ORDER BY created_at LIMIT ?)",
            (self._prune_before(), ENDED, limit or self.prune_batch_rows),
        )
        self.pruned += cur.rowcount
        return cur.rowcount

    def prune(self) -> int:
        """Everything past retention, batch after batch, blocking (not for the event loop:
        see `prune_gradually`)."""
        total = 0
        while (n := self.prune_batch()) > 0:
            total += n
        return total

    async def prune_gradually(self, min_pause_s: float = 0.005) -> int:
        """`prune`, yielding to the event loop after each batch for at least as long as
        the batch took, so requests are served meanwhile. Cancel it to stop early."""
        self.pruning = True
        total = 0
        try:
            while True:
                t0 = time.perf_counter()
                n = self.prune_batch()
                total += n
                if n < self.prune_batch_rows:
                    return total
                await asyncio.sleep(max(min_pause_s, time.perf_counter() - t0))
        finally:
            self.pruning = False

    def healthy(self) -> tuple[bool, str]:
        try:
            result = self.db.execute("PRAGMA quick_check").fetchone()[0]
            count = self.db.execute("SELECT count(*) FROM ops").fetchone()[0]
        except sqlite3.Error as e:
            return False, str(e)
        return result == "ok", f"{result}, {count} operations"

    def close(self) -> None:
        self.db.close()


def _to_result(row: tuple[Any, ...]) -> dict[str, Any]:
    d = dict(zip(_COLUMNS, row, strict=True))
    return {
        **contract.result(
            op_id=d["op_id"], session_id=d["session_id"], tool=d["tool"], state=d["state"],
            status=d["status"], dispatched=d["dispatched"],
            retry_safe=bool(d["retry_safe"]),
            result=json.loads(d["result"]) if d["result"] else None,
            error=json.loads(d["error"]) if d["error"] else None,
            started_at=iso(d["created_at"]), ended_at=iso(d["ended_at"])),
        "timeline": json.loads(d["timeline"]),
        "params": json.loads(d["params"]),
        "idempotency_key": d["idempotency_key"],
    }
