"""Idempotency under races (docs/design.md §3): one key, one operation, one journal row,
whatever the timing — above all on a session's first use, when the call awaits the
`default` session's start between checking its key and making its operation.

A property test over random timings (the virtual clock and fake browser of
test_interleavings), and the same race against a real daemon.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import test_interleavings as ti
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import Bsk

from browserskill.base.errors import BskError
from browserskill.browser.manager import BrowserConfig, BrowserManager
from browserskill.dispatch.dispatcher import Dispatcher
from browserskill.dispatch.journal import Journal
from browserskill.session.session_store import SessionStore
from browserskill.session.sessions import SessionManager


@dataclass(frozen=True)
class KeyedCall:
    session: str  # "default" (started by the first call) or "s0" (started up front)
    key: str
    expression: str  # the same key with another expression is invalid_params
    delay: float  # virtual seconds after the start before the call arrives
    wait: bool = True  # queue behind a busy session (else: session_busy, key freed)


async def race(calls: list[KeyedCall], launch_s: float, home: Path) -> None:
    world = ti.World()
    journal = Journal(home / "journal.db")

    async def slow_launch() -> Any:
        """The fake browser, taking `launch_s` (virtual) to start: the window in which a
        first call waits for the default session while others arrive."""
        await asyncio.sleep(launch_s)
        return await world.connect()

    browser = BrowserManager(BrowserConfig(), home, connect=slow_launch)
    sessions = SessionManager(browser, SessionStore(journal.db))
    dispatcher = Dispatcher(journal, sessions, browser, home)
    world.dispatcher = dispatcher
    await sessions.create("s0")

    async def call(c: KeyedCall) -> Any:
        await asyncio.sleep(c.delay)
        try:
            return await dispatcher.submit(c.session, "eval", {"expression": c.expression},
                                           idempotency_key=c.key, wait=c.wait)
        except BskError as e:
            return e

    answers = await asyncio.gather(*(call(c) for c in calls))
    for op in answers:
        if not isinstance(op, BskError):
            await op.done.wait()

    by_key: dict[tuple[str, str], set[str]] = {}
    for c, answer in zip(calls, answers, strict=True):
        k = (c.session, c.key)
        if isinstance(answer, BskError):
            # Only ever for reusing a key with other parameters.
            assert answer.code == "invalid_params", answer.to_dict()
            assert answer.details.get("field") == "idempotency_key", answer.to_dict()
            assert any((o.session, o.key) == k and o.expression != c.expression
                       for o in calls)
            continue
        assert answer.params["expression"] == c.expression  # attached to its own call
        assert answer.ended and (answer.error or {}).get("code") != "internal", answer
        if answer.status != "completed":  # busy without --wait: refused, the key freed
            # (A call that asked to wait may have attached to one with its key that did
            # not: one key, one operation, with the first call's options.)
            assert answer.error["code"] == "session_busy", answer.to_result()
            assert any((o.session, o.key) == k and not o.wait for o in calls)
            assert answer.idempotency_key is None
            continue
        by_key.setdefault(k, set()).add(answer.op_id)
    for k, op_ids in by_key.items():
        assert len(op_ids) == 1, (k, op_ids)  # one key, one operation
    rows = journal.db.execute("SELECT session_id, idempotency_key, op_id FROM ops "
                              "WHERE idempotency_key IS NOT NULL").fetchall()
    assert sorted((s, k) for s, k, _ in rows) == sorted(by_key), rows  # one row each
    for s, k, op_id in rows:
        assert by_key[(s, k)] == {op_id}
    journal.close()


keyed_calls = st.lists(
    st.builds(KeyedCall, st.sampled_from(["default", "default", "s0"]),
              st.sampled_from(["k1", "k2"]), st.sampled_from(["1+1", "1+1", "1+1", "2+2"]),
              st.sampled_from([0.0, 0.0, 0.001, 0.05, 0.3]), st.booleans()),
    min_size=2, max_size=8)


def play(calls: list[KeyedCall], launch_s: float) -> None:
    loop = ti.VirtualClockLoop()
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    # Every command answered at once: the race is about the keys, not the page.
    with tempfile.TemporaryDirectory(prefix="bsk-key-", dir=shm) as tmp, \
            mock.patch.object(ti, "HELD", frozenset()):
        try:
            loop.run_until_complete(race(calls, launch_s, Path(tmp)))
        finally:
            loop.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_calls, st.sampled_from([0.0, 0.01, 0.2, 1.0]))
def test_one_key_one_operation_whatever_the_timing(calls: list[KeyedCall],
                                                   launch_s: float) -> None:
    play(calls, launch_s)


def test_three_calls_before_the_default_session_exists() -> None:
    # The case from issue 14: it made two operations, and the journal kept one row.
    play([KeyedCall("default", "k1", "1+1", 0.0)] * 3, launch_s=0.2)


def test_real_daemon_three_concurrent_keyed_calls_on_first_use(
        make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk()
    runner.ok("daemon", "start")
    transport = httpx.HTTPTransport(uds=str(runner.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=60) as api:
        assert api.get("/v1/sessions").json()["sessions"] == []  # no default yet

        def call(_: int) -> httpx.Response:
            return api.post("/v1/sessions/default/tools/eval", json={"expression": "6*7"},
                            headers={"Idempotency-Key": "first-use"})

        with ThreadPoolExecutor(max_workers=3) as pool:
            answers = list(pool.map(call, range(3)))
        for r in answers:
            assert r.status_code == 200, r.text
            assert r.json()["result"]["value"] == 42
        assert len({r.json()["op_id"] for r in answers}) == 1, [r.json() for r in answers]
        ops = api.get("/v1/ops", params={"session": "default"}).json()["ops"]
        assert [o["op_id"] for o in ops if o["idempotency_key"] == "first-use"] == [
            answers[0].json()["op_id"]]
        # The same key later: the recorded answer, not a new run.
        again = runner.with_session("default")("--key", "first-use", "eval", "6*7")
        assert again.json["op_id"] == answers[0].json()["op_id"]
