"""The operation journal: SQLite (WAL), written at queued, dispatched and ended.

A daemon that dies mid-call leaves rows that are not ended; the next daemon reconciles
them (`reconcile`) so `bsk op show` can still answer honestly.

Retention (ended operations older than `max_age_s`, or past the newest `max_count`) is
applied in bounded batches (`prune_batch`): the daemon's start only reconciles, and a
background task (`prune_gradually`) deletes a big backlog batch by batch while requests
are served; writing deletes at most one batch every 500 writes.

The JSON columns (params, error, timeline, and a result `Operation.complete` wrote)
are compact text (`json_text.dumps_ascii`: the stdlib's with `separators=(",", ":")`,
orjson's where that is the same); rows an older daemon wrote have the stdlib's spaces.
Both read back as the same values.

A call's two writes (dispatched, ended) go through `record_soon`: the operations
recorded in one turn of the event loop share one transaction, written on the next turn,
and each caller waits for it — so a command is still sent, and an answer still given,
only once its row is in the database (what survives a `kill -9` is unchanged), while a
commit's fixed cost (a WAL frame per page touched, the locks, most of a call's system
calls) is paid once for all of them. A batch that fails is written again one operation
at a time, so each gets `record`'s answer and fault handling.

No index on the session: a call's row is written twice, and with a few sessions at
work an index on (session_id, …) has each commit rewrite a leaf page per session into the
WAL — a quarter of a write's cost (bench/README.md, "Tenth pass"). `list` of one session
walks `ops_created` from the newest instead (a session with a few old rows: ~2 ms in a
full journal of the default 10,000; a larger BSK_JOURNAL_MAX_COUNT pays in proportion).

`has` (is this op id taken? asked on every call that names its operation) reads a set of
the ids in the database, read once on first use and kept with it (each INSERT adds,
retention's DELETE removes what it deleted): no query per call, ~100 bytes per row. Only
this daemon writes its journal, so the set and the table cannot drift apart.

Faults (docs/outcomes.md, "when the disk or the journal fails"):
- a write that fails (a full disk, an I/O error) never raises into the caller: the
  operation is kept in memory (`unwritten`) and written, in order, before the next write
  and by `retry_unwritten`; `record` says whether the write reached the database, and the
  dispatcher dispatches nothing that is not journaled first (`journal_unavailable`);
- a database SQLite can't read (not a database, a damaged header or page) is moved aside
  to `journal.sqlite3.corrupt-<time>` (its WAL with it) and a new journal is started;
- a damaged WAL, which SQLite would silently cut at the damage, is checked before SQLite
  opens it (dispatch/wal.py) and copied aside; both stay reported by `doctor` while the
  copies exist.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from browserskill.base import catalog, contract, json_text, paths
from browserskill.base.contract import Dispatched, Status
from browserskill.base.errors import BskError
from browserskill.dispatch import wal
from browserskill.session.operations import (
    AWAITING_APPROVAL,
    ENDED,
    QUEUED,
    Operation,
    iso,
    kept_form,
)
from browserskill.session.operations import KEPT_RESULT_MAX_CHARS as KEPT_MAX

log = logging.getLogger(__name__)

MOVED_ASIDE = ".corrupt-"  # journal.sqlite3.corrupt-<UTC time>: an unreadable journal
WAL_COPY = "-wal.damaged-"  # journal.sqlite3-wal.damaged-<UTC time>: a damaged WAL's copy
MAX_UNWRITTEN = 10_000  # operations kept in memory while the journal can't be written
# SQLite's answers that mean the file's content, not the disk or a lock, is at fault.
_UNREADABLE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")

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
CREATE INDEX IF NOT EXISTS ops_created ON ops(created_at);
DROP INDEX IF EXISTS ops_session;
"""

_COLUMNS = ("op_id", "session_id", "tool", "params", "idempotency_key", "state", "status",
            "dispatched", "retry_safe", "result", "error", "created_at", "ended_at",
            "timeline")

_INSERT = (f"INSERT OR REPLACE INTO ops ({', '.join(_COLUMNS)}) "
           f"VALUES ({', '.join('?' * len(_COLUMNS))})")
_UPDATE = ("UPDATE ops SET idempotency_key=?, state=?, status=?, dispatched=?, retry_safe=?, "
           "result=?, error=?, ended_at=?, timeline=? WHERE op_id=?")


class Journal:
    def __init__(self, path: Path, *, max_age_s: float = 7 * 86400, max_count: int = 10_000,
                 prune_batch: int = 1000):
        self.path = path
        self.max_age_s = max_age_s
        self.max_count = max_count
        self.prune_batch_rows = max(1, prune_batch)  # rows per DELETE: ~15-30 ms here
        self.pruning = False  # a backlog is being deleted in the background
        self.pruned = 0  # rows deleted by retention since this journal was opened
        # What this start found (None: nothing): the journal moved aside, the WAL damage.
        self.moved_aside: dict[str, str] | None = None
        self.wal_damage: dict[str, Any] | None = None
        # Operations whose latest state is not in the database yet (a write failed), in
        # the order they were first refused; and why the last write failed (None: writes
        # work).
        self.unwritten: dict[str, Operation] = {}
        self.write_error: str | None = None
        self.db = self._open()
        self._writes = 0
        self._prune_at = 500  # `_writes` at which retention next deletes a batch
        self._ids: set[str] | None = None  # the op ids in the database (`has`), once read
        # `record_soon`'s operations for the next commit, each with its caller's future.
        self._batch: list[tuple[Operation, asyncio.Future[bool]]] = []
        self.commits = 0  # transactions `record_soon` committed, and the rows they held:
        self.batched = 0  # logged at close (bench/daemon_cpu.py prints it)

    # -- opening ---------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        # Before SQLite reads the WAL: it would replay the part before a damage and drop
        # the rest without a word (dispatch/wal.py).
        self.wal_damage = wal.damage(Path(f"{self.path}-wal"))
        if self.wal_damage is not None:
            copy = Path(f"{self.path}{WAL_COPY}{stamp}")
            shutil.copyfile(f"{self.path}-wal", copy)
            os.chmod(copy, 0o600)
            self.wal_damage["copy"] = str(copy)
            log.warning("the journal's write-ahead log is damaged (%s): %d committed "
                        "writes after it are lost (operations journaled since the last "
                        "checkpoint); its copy is %s", self.wal_damage["why"],
                        self.wal_damage["transactions_dropped"], copy)
        try:
            return self._connect()
        except _Unreadable as e:
            why = str(e)
        except sqlite3.DatabaseError as e:
            if not getattr(e, "sqlite_errorname", "").startswith(_UNREADABLE):
                raise  # the disk, a lock, permissions: not the file's fault, left alone
            why = str(e)
        moved = Path(f"{self.path}{MOVED_ASIDE}{stamp}")
        os.replace(self.path, moved)
        for side in ("-wal", "-shm"):
            if os.path.exists(f"{self.path}{side}"):
                if side == "-shm":  # derived from the WAL; SQLite rebuilds it
                    os.unlink(f"{self.path}{side}")
                else:  # beside the moved database, as SQLite names it, so both open as one
                    os.replace(f"{self.path}{side}", f"{moved}{side}")
        self.moved_aside = {"path": str(moved), "error": why}
        log.warning("the journal %s could not be read (%s): moved aside to %s; a new "
                    "journal was started (the operations in the old one can't be shown)",
                    self.path, why, moved)
        return self._connect()

    def _connect(self) -> sqlite3.Connection:
        # Created 0600 before SQLite opens it: SQLite gives the -wal and -shm it creates
        # the database file's own mode.
        os.close(paths.open_private(self.path, os.O_RDWR | os.O_CREAT))
        for side in ("-wal", "-shm"):
            if os.path.exists(f"{self.path}{side}"):
                os.chmod(f"{self.path}{side}", 0o600)
        # Used only from the event loop's thread; each write is a short transaction.
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            # Every page once (~0.2 s for 50,000 operations): a damaged page found now
            # moves the file aside, instead of failing calls later.
            check = db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise _Unreadable(f"quick_check: {check}")
        except BaseException:
            db.close()
            raise
        return db

    def found_aside(self) -> list[Path]:
        """Journals and WAL copies moved aside by this or an earlier start, still there."""
        home = self.path.parent
        return sorted([*home.glob(f"{self.path.name}{MOVED_ASIDE}*[0-9Z]"),
                       *home.glob(f"{self.path.name}{WAL_COPY}*")])

    # -- writing ---------------------------------------------------------------------

    def record(self, op: Operation) -> bool:
        """Write the operation's state; True once it is in the database. False: the write
        failed (`write_error` says why) and the operation is kept in `unwritten`, to be
        written before the next write or by `retry_unwritten`."""
        if self.unwritten:  # in order: what was refused earlier goes first
            self._keep(op)
            return self.retry_unwritten()
        try:
            self._write(op)
        except sqlite3.Error as e:
            self._failed(e)
            self._keep(op)
            return False
        self._prune_now_and_then(op)
        return True

    async def record_soon(self, op: Operation) -> bool:
        """`record`, in one transaction with the other operations recorded in this turn of
        the event loop: True once `op`'s state is in the database (awaited before what must
        follow the write). A caller cancelled meanwhile still has `op` written."""
        loop = asyncio.get_running_loop()
        if not self._batch:
            loop.call_soon(self._commit_batch)
        written: asyncio.Future[bool] = loop.create_future()
        self._batch.append((op, written))
        return await written

    def _commit_batch(self) -> None:
        batch, self._batch = self._batch, []
        if len(batch) > 1 and not self.unwritten:  # else in order behind refused ones
            try:
                if self._write_together([op for op, _ in batch]):
                    for _, written in batch:
                        if not written.done():
                            written.set_result(True)
                    return
            except Exception:  # a bug in one row: each is tried alone, below
                log.exception("journal: writing %d operations together failed", len(batch))
        for op, written in batch:  # one at a time: each its own answer, or exception
            try:
                ok = self.record(op)
            except Exception as e:  # raised in its caller, never a hang
                if not written.done():
                    written.set_exception(e)
                continue
            if not written.done():
                written.set_result(ok)

    def _write_together(self, ops: list[Operation]) -> bool:
        """One transaction for all of `ops`; False when SQLite refused it (rolled back,
        every operation as it was before)."""
        journaled = {op.op_id: op.journaled for op in ops}

        def as_before() -> None:  # the transaction rolled back: no row of it was written
            for op in ops:
                op.journaled = journaled[op.op_id]
                if not op.journaled and self._ids is not None:
                    self._ids.discard(op.op_id)

        try:
            self.db.execute("BEGIN")
            for op in ops:
                self._write(op)
            self.db.execute("COMMIT")
        except sqlite3.Error as e:
            self._failed(e)
            as_before()
            return False
        except BaseException:  # never an open transaction left behind
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            as_before()
            raise
        self.commits += 1
        self.batched += len(ops)
        for op in ops:
            self._prune_now_and_then(op)
        return True

    def _keep(self, op: Operation) -> None:
        """Hold `op` until it can be written. Bounded: past `MAX_UNWRITTEN`, the oldest
        operation that was refused before dispatch (it never ran) is let go first."""
        self.unwritten.setdefault(op.op_id, op)
        if len(self.unwritten) > MAX_UNWRITTEN:
            refused = next((k for k, o in self.unwritten.items()
                            if o.ended and o.dispatched == Dispatched.NO and k != op.op_id), None)
            if refused is not None:
                del self.unwritten[refused]

    def retry_unwritten(self) -> bool:
        """Write the operations kept in memory, oldest first; True when none is left."""
        while self.unwritten:
            op = next(iter(self.unwritten.values()))
            try:
                self._write(op)
            except sqlite3.Error as e:
                self._failed(e)
                return False
            del self.unwritten[op.op_id]
        if self.write_error is not None:
            log.warning("the journal is written again (%s)", self.path)
            self.write_error = None
        return True

    def unavailable(self) -> BskError:
        """The refusal of an operation that could not be journaled before dispatch."""
        return BskError(
            "journal_unavailable",
            f"the operation journal can't be written ({self.write_error}): nothing was "
            "sent to the browser", hint=f"free space on the filesystem holding "
            f"{self.path.parent} (`df -h {self.path.parent}`), then call again; "
            "`bsk status` answers meanwhile", details={"journal": str(self.path)})

    def _failed(self, e: sqlite3.Error) -> None:
        if self.db.in_transaction:  # SQLite rolls most failures back; make sure
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        if self.write_error is None:
            log.warning("the journal %s can't be written (%s): operations are refused "
                        "before dispatch until it can; those that ran are kept in memory "
                        "and written then", self.path, e)
        self.write_error = str(e)

    def _write(self, op: Operation) -> None:
        changing = (
            op.idempotency_key, op.state, op.status, op.dispatched, int(op.retry_safe),
            op.result_text if op.result_text is not None else _kept_text(op.result),
            None if op.error is None else json_text.dumps_ascii(op.error),
            op.ended_at, json_text.dumps_ascii(op.timeline),
        )
        if op.journaled and op.params_changed:  # a maybe-secret now known (Operation.masked)
            self.db.execute("UPDATE ops SET params=? WHERE op_id=?",
                            (json_text.dumps_ascii(op.shown_params()), op.op_id))
        op.params_changed = False
        if op.journaled:  # later writes touch only what changes (no index rewrites)
            self.db.execute(_UPDATE, (*changing, op.op_id))
        else:
            self.db.execute(_INSERT, (op.op_id, op.session_id, op.tool,
                                      json_text.dumps_ascii(op.shown_params()), *changing[:7],
                                      op.created_at, *changing[7:]))
            op.journaled = True
            if self._ids is not None:
                self._ids.add(op.op_id)
        self._writes += 1

    def _prune_now_and_then(self, op: Operation) -> None:
        if op.state == ENDED and self._writes >= self._prune_at:
            self._prune_at = self._writes + 500
            try:
                self.prune_batch()  # bounded: a backlog is left to `prune_gradually`
            except sqlite3.Error as e:  # the operation is written; retention waits
                log.warning("journal retention: %s", e)

    def has(self, op_id: str) -> bool:
        """Is there an operation `op_id`? (A set lookup: the ids are read once, an
        index-only scan, then kept as rows are written and deleted.)"""
        if self._ids is None:
            self._ids = {row[0] for row in self.db.execute("SELECT op_id FROM ops")}
        return op_id in self.unwritten or op_id in self._ids

    def get(self, op_id: str) -> dict[str, Any] | None:
        if op_id in self.unwritten:
            return self.unwritten[op_id].to_result(with_timeline=True)
        cur = self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM ops WHERE op_id = ?", (op_id,))
        row = cur.fetchone()
        return _to_result(row) if row else None

    def steps_of(self, batch_id: str) -> list[str]:
        """The op ids of a batch's steps (`contract.batch_step_op_id`), in step order."""
        low = contract.batch_steps_prefix(batch_id)
        ids = {row[0] for row in self.db.execute(  # op ids are ASCII: all sort below DEL
            "SELECT op_id FROM ops WHERE op_id >= ? AND op_id < ?", (low, low + "\x7f"))}
        return contract.batch_steps(batch_id, ids | self.unwritten.keys())

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
        rows = [_to_result(r) for r in self.db.execute(sql, (*args, limit))]
        if not self.unwritten:
            return rows
        kept = {op.op_id: op.to_result(with_timeline=True) for op in self.unwritten.values()
                if session_id in (None, op.session_id)}
        rows = [*kept.values(), *(r for r in rows if r["op_id"] not in kept)]
        return sorted(rows, key=lambda r: r["started_at"], reverse=True)[:limit]

    async def keep_writing(self, every_s: float = 1.0) -> None:
        """While operations wait in memory (a full disk), retry their writes, so they are
        in the journal soon after space returns, calls or not. Cancel it to stop."""
        while True:
            await asyncio.sleep(every_s)
            if self.unwritten:
                self.retry_unwritten()

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
            # Nobody cancelled it, so a call again overrides no one: safe where nothing
            # went out, and for a tool that only reads the page (a repeat changes nothing).
            spec = catalog.BY_NAME.get(row[2])
            retry_safe = True
            if row[5] == QUEUED:
                status, dispatched, code = Status.CANCELLED, Dispatched.NO, "cancelled"
                message = "the daemon stopped before this operation was dispatched"
                hint = "nothing reached the browser; it is safe to call again"
            elif row[5] == AWAITING_APPROVAL:  # held for a person: nothing went out
                status, dispatched, code = Status.CANCELLED, Dispatched.NO, "cancelled"
                message = ("the daemon stopped while this operation awaited a person's "
                           "approval; nothing was sent")
                hint = "call again to ask the person again"
            else:
                status, dispatched = Status.OUTCOME_UNKNOWN, Dispatched.UNKNOWN
                code = "outcome_unknown"
                message = "the daemon stopped while this operation was in the browser"
                retry_safe = spec is not None and spec.effect.retry_safe
                hint = ("it only reads the page: call again" if retry_safe
                        else "inspect the page (snapshot) before acting again")
            timeline.append([iso(now), "reconciled", "daemon restarted"])
            timeline.append([iso(now), ENDED, status])
            error = {"code": code, "message": message, "hint": hint,
                     "details": {"reconciled": True, "state_at_death": row[5]}}
            self.db.execute(
                "UPDATE ops SET state=?, status=?, dispatched=?, retry_safe=?, error=?, "
                "ended_at=?, timeline=? WHERE op_id=?",
                (ENDED, status, dispatched, int(retry_safe), json.dumps(error), now,
                 json.dumps(timeline), row[0]),
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
        gone = self.db.execute(
            "DELETE FROM ops WHERE rowid IN (SELECT rowid FROM ops WHERE created_at < ? "
            " AND state = ? ORDER BY created_at LIMIT ?) RETURNING op_id",
            (self._prune_before(), ENDED, limit or self.prune_batch_rows),
        ).fetchall()
        if self._ids is not None:
            self._ids.difference_update(row[0] for row in gone)
        self.pruned += len(gone)
        return len(gone)

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
        if self.write_error is not None:
            return False, (f"writes fail: {self.write_error} ({len(self.unwritten)} "
                           "operations kept in memory until they can be written)")
        try:
            result = self.db.execute("PRAGMA quick_check").fetchone()[0]
            count = self.db.execute("SELECT count(*) FROM ops").fetchone()[0]
        except sqlite3.Error as e:
            return False, str(e)
        return result == "ok", f"{result}, {count} operations"

    def close(self) -> None:
        self._commit_batch()  # the loop may stop before its turn
        if self.commits:
            log.info("%d journal writes shared %d commits", self.batched, self.commits)
        if self.unwritten and not self.retry_unwritten():
            log.warning("the journal could not be written before the daemon stopped: %d "
                        "operations' last state is lost (%s); the next daemon reports them "
                        "as it finds them", len(self.unwritten), self.write_error)
        self.db.close()


class _Unreadable(Exception):
    """SQLite opened the file, but its own check found damaged pages."""


def _kept_text(result: dict[str, Any] | None) -> str | None:
    """The JSON text the journal keeps of a result: `kept_form`'s, measured on the text
    written (ASCII-escaped, never shorter than `kept_form` measures), so a result within
    the bound is serialized once, not twice."""
    if result is None:
        return None
    text = json.dumps(result)
    return text if len(text) <= KEPT_MAX else json.dumps(kept_form(result))


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
