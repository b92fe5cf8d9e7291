"""docs/design.md §2: one operation at a time per session; busy by default, FIFO with --wait;
sessions in parallel with each other."""

from __future__ import annotations

import json
import subprocess
from itertools import pairwise
from typing import Any

from support.cli import Bsk, live_ops
from support.pages import release
from support.wait import wait_until


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        assert "Traceback" not in stderr
        out.append((p.returncode, json.loads(stdout)))
    return out


def test_concurrent_calls_without_wait_get_session_busy(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    tags = [f"c{i}" for i in range(4)]
    procs = [bsk.popen("eval", f"await gated('{t}')") for t in tags]
    # The first to arrive holds the session until released; the rest are refused.
    wait_until(lambda: sum(p.poll() is not None for p in procs) == 3, 30,
               "three calls refused")
    release(bsk, site, *tags)
    results = finish(procs)
    completed = [a for code, a in results if code == 0]
    busy = [(code, a) for code, a in results if code != 0]
    assert len(completed) == 1, results
    for code, answer in busy:
        assert code == 5
        assert answer["error"]["code"] == "session_busy"
        assert answer["dispatched"] == "no" and answer["retry_safe"] is True
        holder = answer["error"]["details"]["holder"]
        assert holder["op_id"] == completed[0]["op_id"] and holder["tool"] == "eval"
        assert holder["state"] == "dispatched" and holder["age_s"] >= 0
    # Only the one that completed ran in the page.
    assert bsk("eval", "window.log").value == [completed[0]["result"]["value"]["tag"]]
    assert bsk("eval", "window.maxRunning").value == 1


def test_busy_names_the_holder_while_it_runs(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    holder = bsk.popen("eval", "await gated('holder')")
    running = wait_until(lambda: live_ops(bsk, "dispatched"), what="holder dispatched")[0]
    rejected = [bsk("eval", "window.effects += 1") for _ in range(3)]
    for r in rejected:
        assert r.code == 5 and r.json["error"]["details"]["holder"]["op_id"] == running["op_id"]
    release(bsk, site, "holder")
    assert finish([holder])[0][0] == 0
    assert bsk("eval", "window.effects").value == 0  # nothing rejected ever ran


def test_wait_queues_fifo_and_never_overlaps(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    procs = [bsk.popen("--wait", "eval", "await gated('w0')")]
    wait_until(lambda: live_ops(bsk, "dispatched"), what="first call dispatched")
    for i in range(1, 4):  # each joins the queue after the previous one is in it
        procs.append(bsk.popen("--wait", "eval", f"await slow('w{i}', 300)"))
        wait_until(lambda n=i: len(live_ops(bsk, "queued")) == n, what=f"w{i} queued")
    release(bsk, site, "w0")
    results = finish(procs)
    assert all(code == 0 for code, _ in results), results
    assert bsk("eval", "window.log").value == ["w0", "w1", "w2", "w3"]
    assert bsk("eval", "window.maxRunning").value == 1
    spans = sorted((a["result"]["value"]["start"], a["result"]["value"]["end"]) for _, a in results)
    assert all(prev[1] <= nxt[0] for prev, nxt in pairwise(spans))


def test_wait_gives_up_busy_at_its_own_deadline(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    holder = bsk.popen("eval", "await gated('long')")
    wait_until(lambda: live_ops(bsk, "dispatched"), what="holder dispatched")
    r = bsk("--wait", "--timeout", "0.5", "eval", "window.effects += 1")
    assert r.code == 5 and r.json["error"]["code"] == "session_busy"
    assert r.json["dispatched"] == "no"
    release(bsk, site, "long")
    assert finish([holder])[0][0] == 0
    assert bsk("eval", "window.effects").value == 0


def test_sessions_run_in_parallel(shared_bsk: Bsk, site: str) -> None:
    a, b = shared_bsk.with_session("par-a"), shared_bsk.with_session("par-b")
    for s in (a, b):
        s.ok("session", "start", s.session)
        s.ok("open", f"{site}/counter.html")
    try:
        results = finish([a.popen("eval", "await slow('a', 800)"),
                          b.popen("eval", "await slow('b', 800)")])
        assert [code for code, _ in results] == [0, 0]
        (sa, ea), (sb, eb) = ((r["result"]["value"]["start"], r["result"]["value"]["end"])
                              for _, r in results)
        assert sa < eb and sb < ea, "the two sessions' evals did not overlap"
    finally:
        for s in (a, b):
            s("session", "stop")


def test_session_stop_queues_behind_the_running_call(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    holder = bsk.popen("eval", "await gated('before-stop')")
    wait_until(lambda: live_ops(bsk, "dispatched"), what="holder dispatched")
    busy = bsk("session", "stop")
    assert busy.code == 5
    stopping = bsk.popen("--wait", "session", "stop")
    # The stop waits its turn: queued behind the holder, which still runs.
    wait_until(lambda: [o for o in live_ops(bsk, "queued") if o["tool"] == "session_stop"],
               what="session stop queued")
    assert holder.poll() is None
    release(bsk, site, "before-stop")
    code, stopped = finish([stopping])[0]
    assert code == 0 and stopped["result"]["stopped"] is True
    code, answer = finish([holder])[0]
    assert code == 0 and answer["result"]["value"]["tag"] == "before-stop"
    assert bsk("eval", "1").json["error"]["code"] == "session_not_found"
    bsk.ok("session", "start", bsk.session)  # for the fixture's own stop
