"""What one tool call costs the daemon's database (issue 23: half the CPU per operation).

On a warm session, an `eval` that names its own op id (as every client does) runs:
the journal's row written before dispatch (docs/design.md: nothing goes out that the
journal can't tell of), and its end. The session's row is not written again when the call changed
nothing of it (its tabs, current tab, placement, recordings). The op id's check is no
query: the journal keeps the set of its ids — and still refuses an id it holds, however
old, from this daemon or an earlier one. The virtual clock and fake browser of
test_interleavings.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest import mock

import test_interleavings as ti

from browserskill.base import contract
from browserskill.base.errors import BskError
from browserskill.browser.manager import BrowserConfig, BrowserManager
from browserskill.dispatch.dispatcher import Dispatcher
from browserskill.dispatch.journal import Journal
from browserskill.session.session_store import SessionStore
from browserskill.session.sessions import SessionManager


async def statements_of_warm_calls(home: Path, calls: int) -> tuple[list[str], list[str]]:
    """The SQL run by `calls` evals on a warm session; the op ids' journal states."""
    world = ti.World()
    journal = Journal(home / "journal.db")
    browser = BrowserManager(BrowserConfig(), home, connect=world.connect)
    sessions = SessionManager(browser, SessionStore(journal.db))
    dispatcher = Dispatcher(journal, sessions, browser, home)
    world.dispatcher = dispatcher
    await sessions.create("s0")
    warm = await dispatcher.submit("s0", "eval", {"expression": "1+1"},
                                   op_id=contract.new_op_id())
    await warm.done.wait()
    statements: list[str] = []
    journal.db.set_trace_callback(statements.append)
    op_ids = []
    for _ in range(calls):
        op = await dispatcher.submit("s0", "eval", {"expression": "1+1"},
                                     op_id=contract.new_op_id())
        await op.done.wait()
        assert op.status == "completed", op.to_result()
        op_ids.append(op.op_id)
    journal.db.set_trace_callback(None)
    states = [journal.db.execute("SELECT state FROM ops WHERE op_id = ?",
                                 (i,)).fetchone()[0] for i in op_ids]
    journal.close()
    return statements, states


def run(calls: int) -> tuple[list[str], list[str]]:
    loop = ti.VirtualClockLoop()
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="bsk-cost-", dir=shm) as tmp, \
            mock.patch.object(ti, "HELD", frozenset()):  # every command answered at once
        try:
            return loop.run_until_complete(statements_of_warm_calls(Path(tmp), calls))
        finally:
            loop.close()


def test_a_warm_call_writes_its_journal_row_twice_and_its_session_row_not_at_all() -> None:
    statements, states = run(3)
    assert states == ["ended"] * 3  # each call's end is in the journal when it answers
    words = [s.split(None, 3)[:3] for s in statements]
    inserts = [s for s in statements if s.startswith("INSERT")]
    updates = [s for s in statements if s.startswith("UPDATE")]
    assert len(inserts) == 3 and all(" INTO ops " in s for s in inserts), statements
    assert len(updates) == 3 and all(s.startswith("UPDATE ops ") for s in updates), statements
    assert not any("sessions" in s for s in statements), statements  # nothing changed
    # The op id's check is no query (the ids were read once, by the warm-up's check).
    assert not [w for w in words if w[0] == "SELECT"], statements
    assert len(statements) == 6, statements


async def reuses(home: Path) -> list[str]:
    """How calls naming an op id end, in two daemons one after the other on one journal:
    ids the journal holds (one before the first check read the ids, one after), and a
    fresh one; this daemon's memory of its operations forgotten, as after RECENT_OPS
    later calls."""
    world = ti.World()
    ended = []
    for start in range(2):
        journal = Journal(home / "journal.db")
        browser = BrowserManager(BrowserConfig(), home, connect=world.connect)
        sessions = SessionManager(browser, SessionStore(journal.db))
        dispatcher = Dispatcher(journal, sessions, browser, home)
        world.dispatcher = dispatcher
        await sessions.create(f"s{start}")
        ids = ["op_before_check", "op_after_check", f"op_fresh{start}"]
        if start == 0:
            for op_id in ids[:2]:
                op = await dispatcher.submit("s0", "eval", {"expression": "1"}, op_id=op_id)
                await op.done.wait()
                if op_id == "op_before_check":
                    journal._ids = None  # as if written before any check read the ids
            dispatcher.ops.clear()
        for op_id in ids:
            try:
                op = await dispatcher.submit(f"s{start}", "eval", {"expression": "1"},
                                             op_id=op_id)
            except BskError as e:
                ended.append(f"{op_id}: {e.code} {e.details.get('field')}")
            else:
                await op.done.wait()
                ended.append(f"{op_id}: {op.status}")
        journal.close()
    return ended


def test_an_op_id_the_journal_holds_is_refused_by_this_daemon_and_the_next() -> None:
    loop = ti.VirtualClockLoop()
    with tempfile.TemporaryDirectory(prefix="bsk-reuse-") as tmp, \
            mock.patch.object(ti, "HELD", frozenset()):
        try:
            ended = loop.run_until_complete(reuses(Path(tmp)))
        finally:
            loop.close()
    taken = "invalid_params op_id"
    assert ended == [f"op_before_check: {taken}", f"op_after_check: {taken}",
                     "op_fresh0: completed", f"op_before_check: {taken}",
                     f"op_after_check: {taken}", "op_fresh1: completed"], ended
