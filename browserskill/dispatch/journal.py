"""The operation journal: SQLite (WAL), written at queued, dispatched and ended.

A daemon that dies mid-call leaves rows that are not ended; the next daemon reconciles
them (`reconcile`) so `bsk op show` can still answer honestly.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from browserskill.dispatch.operations import ENDED, QUEUED, Operation, iso

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
    def __init__(self, path: Path, *, max_age_s: float = 7 * 86400, max_count: int = 10_000):
        self.path = path
        self.max_age_s = max_age_s
        self.max_count = max_count
        # Used only from the event loop's thread; each write is a short transaction.
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        path.chmod(0o600)
        self._writes = 0

    def record(self, op: Operation) -> None:
        row = (
            op.op_id, op.session_id, op.tool, json.dumps(op.params), op.idempotency_key,
            op.state, op.status, op.dispatched, int(op.retry_safe),
            None if op.result is None else json.dumps(op.result),
            None if op.error is None else json.dumps(op.error),
            op.created_at, op.ended_at, json.dumps(op.timeline),
        )
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
            self.prune()

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
        """Settle operations a dead daemon left open (DESIGN §4, daemon death)."""
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

    def prune(self) -> int:
        cutoff = time.time() - self.max_age_s
        cur = self.db.execute(
            "DELETE FROM ops WHERE state = ? AND (created_at < ? OR op_id IN ("
            " SELECT op_id FROM ops ORDER BY created_at DESC LIMIT -1 OFFSET ?))",
            (ENDED, cutoff, self.max_count),
        )
        return cur.rowcount

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
        "op_id": d["op_id"],
        "session_id": d["session_id"],
        "tool": d["tool"],
        "state": d["state"],
        "status": d["status"],
        "dispatched": d["dispatched"],
        "retry_safe": bool(d["retry_safe"]),
        "result": json.loads(d["result"]) if d["result"] else None,
        "error": json.loads(d["error"]) if d["error"] else None,
        "started_at": iso(d["created_at"]),
        "ended_at": iso(d["ended_at"]),
        "timeline": json.loads(d["timeline"]),
        "params": json.loads(d["params"]),
        "idempotency_key": d["idempotency_key"],
    }
