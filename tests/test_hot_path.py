"""What every operation pays for in the daemon, kept to once (issue 23, item 2): a result
serialized once for the cap, the journal and the memory bound; a session row serialized
only when it changed; a timestamp formatted without a datetime per entry; a command's
deadline gone with its reply. bench/daemon_cpu.py measures the whole; these pin the
parts."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from browserskill.base import json_text
from browserskill.browser.link import CommandTimeout, await_reply
from browserskill.dispatch.journal import Journal
from browserskill.session.operations import DISPATCHED, Operation, iso
from browserskill.session.session_store import SessionStore


def _datetime_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def test_iso_writes_what_datetime_writes() -> None:
    rng = random.Random(23)
    stamps = [0.0, 1e9 + 0.0005, 1e9 + 0.9995, 1e9 + 0.9999995, 1e9 + 0.99999949,
              1764658992.999, 1764658992.0, 2_000_000_000.123456]
    stamps += [rng.uniform(0, 2e9) for _ in range(20_000)]
    stamps += [round(rng.uniform(1e9, 2e9), 3) for _ in range(5_000)]
    for ts in stamps:
        assert iso(ts) == _datetime_iso(ts), ts
    assert iso(None) is None


_DUMPS = json.dumps


class _Counting:
    """json.dumps (the one module every module shares), or another serializer (`of`),
    counting what it serializes."""

    def __init__(self, of: Any = None) -> None:
        self.seen: list[Any] = []
        self.of = of

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> str:
        self.seen.append(obj)
        return (self.of or _DUMPS)(obj, *args, **kwargs)


async def test_a_result_is_serialized_once(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    op = Operation("s1", "eval", {"expression": "1+1"})
    op.state = DISPATCHED
    assert journal.record(op)
    result = {"value": 2, "type": "number"}
    counted = _Counting()
    monkeypatch.setattr(json, "dumps", counted)
    compact = _Counting(json_text.dumps_ascii)  # a small result's one serializer
    monkeypatch.setattr(json_text, "dumps_ascii", compact)
    op.complete(result, retry_safe=False)
    assert journal.record(op)
    op.keep_bounded()
    monkeypatch.undo()
    serialized = [o for o in counted.seen + compact.seen if o == result]
    assert len(serialized) == 1  # for the cap; the journal and keep_bounded reuse it
    row = journal.get(op.op_id)
    assert row is not None and row["result"] == result
    journal.close()


async def test_a_result_changed_after_its_end_is_journaled_as_changed(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    op = Operation("s1", "eval", {"expression": "1+1"})
    op.complete({"value": "é"}, retry_safe=False)  # not ASCII: journaled escaped, as
    assert op.result_text is not None and op.result_text.isascii()  # json.dumps does
    assert json.loads(op.result_text) == {"value": "é"}
    op.complete({"value": 2}, retry_safe=False)
    assert op.result is not None
    op.result["browser_restarted"] = {"reopened": []}  # as the dispatcher adds it
    op.result_text = None
    assert journal.record(op)
    row = journal.get(op.op_id)
    assert row is not None and row["result"] == {"value": 2, "browser_restarted": {"reopened": []}}
    journal.close()


def test_an_unchanged_session_is_not_serialized_again(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(sqlite3.connect(":memory:", isolation_level=None))
    tab = SimpleNamespace(tab_id="t1", target_id="T1", session_id="S1")
    session = SimpleNamespace(
        id="s1", label=None, created_at=1.0, tabs={"t1": tab}, current_tab_id="t1",
        tab_seq=1, recordings=dict, narrowing={},
        backend=SimpleNamespace(stored=lambda: {"placement": "window", "context_id": None}))
    store.save(session)
    counted = _Counting()
    monkeypatch.setattr(json, "dumps", counted)
    for _ in range(3):  # operations that changed nothing of it
        store.save(session)
    assert counted.seen == []
    session.tabs["t2"] = SimpleNamespace(tab_id="t2", target_id="T2", session_id="S2")
    store.save(session)  # a new tab: written
    monkeypatch.undo()
    assert [["t1", "T1", "S1"], ["t2", "T2", "S2"]] in [
        json.loads(json.dumps(o)) for o in counted.seen]
    assert store.load("s1").tabs[1][0] == "t2"


async def test_a_command_deadline_fails_its_reply_and_leaves_no_timer() -> None:
    loop = asyncio.get_running_loop()
    late: asyncio.Future[dict[str, Any]] = loop.create_future()
    with pytest.raises(CommandTimeout, match=r"Runtime\.evaluate: no answer within 0\.01s"):
        await await_reply("Runtime.evaluate", late, 0.01)
    assert late.done()  # a late reply finds it done: dropped
    answered: asyncio.Future[dict[str, Any]] = loop.create_future()
    loop.call_soon(answered.set_result, {"ok": True})
    before = len([h for h in loop._scheduled if not h.cancelled()])  # type: ignore[attr-defined]
    assert await await_reply("Runtime.evaluate", answered, 30) == {"ok": True}
    after = len([h for h in loop._scheduled if not h.cancelled()])  # type: ignore[attr-defined]
    assert after <= before  # its timer went with the reply
    waiting: asyncio.Future[dict[str, Any]] = loop.create_future()
    task = asyncio.ensure_future(await_reply("Runtime.evaluate", waiting, 30))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert waiting.cancelled()  # nobody waits for it any more
