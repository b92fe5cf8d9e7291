"""Sessions on disk (the journal's database), so a daemon that died can re-adopt them.

A row is written when a session starts, after each of its operations that changed it
(tabs, current tab, placement, recordings), and when it ends. On start, a new daemon
re-attaches the sessions whose tabs still exist in a browser that survived, and
remembers why the others ended, so a call to one says so. A session's recordings
(video, trace) are written as they start and stop, before the browser is asked, so the
next daemon finds one that a crash interrupted (docs/design.md, what survives what).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY,
  label TEXT,
  created_at REAL NOT NULL,
  tabs TEXT NOT NULL,          -- [[tab_id, target_id, cdp_session_id], ...]
  current_tab TEXT,
  tab_seq INTEGER NOT NULL,
  ended_at REAL,
  ended_reason TEXT,
  browser TEXT,                -- its placement: Backend.stored() (NULL: embedded, old rows)
  recordings TEXT,             -- {kind: Recording.stored()} of those running (NULL: none)
  narrowing TEXT               -- its start's narrowing of the policy (NULL: none)
);
"""


@dataclass
class StoredSession:
    session_id: str
    label: str | None
    created_at: float
    tabs: list[tuple[str, str]]
    current_tab: str | None
    tab_seq: int
    ended_reason: str | None
    browser: dict[str, Any] | None = None  # its placement (Backend.stored())
    recordings: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The CDP sessions its daemon had in its tabs (rows from before: none): the browser
    # keeper keeps them open after that daemon dies, so the next one detaches them.
    cdp_sessions: list[str] = field(default_factory=list)
    # `session start --allow-domain/--block-domain` (Session.narrowing): re-applied.
    narrowing: dict[str, list[str]] = field(default_factory=dict)


class SessionStore:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        # What each open session's row holds, as last written (before serialization): a
        # save that would write the same row again (most operations change no tab) is
        # skipped without serializing it.
        self._written: dict[str, tuple[Any, ...]] = {}
        self.db.executescript(_SCHEMA)
        columns = {r[1] for r in self.db.execute("PRAGMA table_info(sessions)")}
        if "browser" not in columns:  # a database from before extension sessions
            self.db.execute("ALTER TABLE sessions ADD COLUMN browser TEXT")
        if "recordings" not in columns:  # a database from before recordings were kept
            self.db.execute("ALTER TABLE sessions ADD COLUMN recordings TEXT")
        if "narrowing" not in columns:  # a database from before policies
            self.db.execute("ALTER TABLE sessions ADD COLUMN narrowing TEXT")

    def save(self, session: Any) -> None:
        tabs = tuple((t.tab_id, t.target_id, t.session_id) for t in session.tabs.values())
        browser = session.backend.stored()  # a new dict each time: safe to keep and compare
        recordings = {kind: r.stored() for kind, r in session.recordings().items()}
        # Rare, and possibly shared with their owner: compared as text.
        recorded = json.dumps(recordings) if recordings else None
        narrowing = json.dumps(session.narrowing) if session.narrowing else None
        # Compared before the rest is serialized: most operations change none of it.
        state = (session.label, session.created_at, tabs, session.current_tab_id,
                 session.tab_seq, browser, recorded, narrowing)
        if self._written.get(session.id) == state:
            return
        row = (session.id, session.label, session.created_at, json.dumps(tabs),
               session.current_tab_id, session.tab_seq,
               json.dumps(browser) if browser is not None else None, recorded, narrowing)
        if self._write(
            "INSERT OR REPLACE INTO sessions (session_id, label, created_at, tabs, current_tab,"
            " tab_seq, ended_at, ended_reason, browser, recordings, narrowing) "
            "VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)", row,
        ):
            self._written[session.id] = state

    def end(self, session_id: str, reason: str) -> None:
        self._written.pop(session_id, None)
        self._write("UPDATE sessions SET ended_at = ?, ended_reason = ? WHERE session_id = ?",
                        (time.time(), reason, session_id))

    def _write(self, sql: str, args: tuple[Any, ...]) -> bool:
        """A failed write (a full disk) is logged, never raised into the call that made
        it: the row is only for re-adoption after a crash; the next save rewrites it."""
        try:
            self.db.execute(sql, args)
        except sqlite3.Error as e:
            log.warning("saving a session for re-adoption: %s", e)
            return False
        return True

    def open_sessions(self) -> list[StoredSession]:
        rows = self.db.execute(
            "SELECT session_id, label, created_at, tabs, current_tab, tab_seq, ended_reason, "
            "browser, recordings, narrowing FROM sessions WHERE ended_at IS NULL").fetchall()
        return [_stored(r) for r in rows]

    def open_ids(self) -> list[str]:
        """The sessions left open (a row that can't be read still has its id)."""
        return [r[0] for r in self.db.execute(
            "SELECT session_id FROM sessions WHERE ended_at IS NULL")]

    def load(self, session_id: str) -> StoredSession:
        """One session's row (ValueError, TypeError, KeyError: one that can't be read)."""
        row = self.db.execute(
            "SELECT session_id, label, created_at, tabs, current_tab, tab_seq, ended_reason, "
            "browser, recordings, narrowing FROM sessions WHERE session_id = ?",
            (session_id,)).fetchone()
        if row is None:
            raise KeyError(f"no row for session {session_id!r}")
        return _stored(row)

    def ended_reason(self, session_id: str) -> str | None:
        row = self.db.execute("SELECT ended_reason FROM sessions WHERE session_id = ? AND "
                              "ended_at IS NOT NULL", (session_id,)).fetchone()
        return row[0] if row else None

    def prune(self, max_age_s: float) -> None:
        self.db.execute("DELETE FROM sessions WHERE ended_at IS NOT NULL AND ended_at < ?",
                        (time.time() - max_age_s,))


def _stored(r: tuple[Any, ...]) -> StoredSession:
    """A row as written by `save`: may raise (ValueError, TypeError) on one that is not,
    which `SessionManager.readopt` reports as that session's failure."""
    tabs = json.loads(r[3])
    return StoredSession(r[0], r[1], r[2], [(str(t[0]), str(t[1])) for t in tabs], r[4], r[5],
                         r[6], json.loads(r[7]) if r[7] else None,
                         json.loads(r[8]) if r[8] else {},
                         [str(t[2]) for t in tabs if len(t) > 2 and t[2]],
                         json.loads(r[9]) if r[9] else {})
