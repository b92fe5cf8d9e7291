"""docs/design.md §3 idempotency: a key names one call, across concurrent repeats and restarts."""

from __future__ import annotations

import json

from support.cli import Bsk


def test_same_key_returns_the_first_result_and_acts_once(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    first = bsk.ok("--key", "k-1", "eval", "window.effects += 1")
    again = bsk.ok("--key", "k-1", "eval", "window.effects += 1")
    assert again["op_id"] == first["op_id"]
    assert again["result"] == first["result"] == {"ok": True, "type": "number", "value": 1}
    assert bsk("eval", "window.effects").value == 1


def test_same_key_other_params_is_invalid(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    bsk.ok("--key", "k-2", "eval", "window.effects += 1")
    r = bsk("--key", "k-2", "eval", "window.effects += 10")
    assert r.code == 2
    assert r.json["error"]["code"] == "invalid_params" and r.json["dispatched"] == "no"
    assert "k-2" in r.json["error"]["message"]
    other_tool = bsk("--key", "k-2", "snapshot")
    assert other_tool.code == 2
    assert bsk("eval", "window.effects").value == 1


def test_a_repeat_while_running_attaches_to_the_first(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    procs = [bsk.popen("--key", "k-3", "eval", "await slow('once', 500)") for _ in range(3)]
    answers = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        answers.append(json.loads(out))
    assert len({a["op_id"] for a in answers}) == 1
    assert bsk("eval", "window.log").value == ["once"]


def test_keys_survive_a_daemon_restart(fresh_bsk: Bsk, site: str) -> None:
    s = fresh_bsk.with_session("keep")
    s.ok("session", "start", "keep")
    s.ok("open", f"{site}/counter.html")
    first = s.ok("--key", "k-4", "eval", "window.effects += 1")
    old_pid = s.ok("daemon", "status")["pid"]
    s.stop_daemon()

    again = s.ok("--key", "k-4", "eval", "window.effects += 1")  # auto-spawns a new daemon
    assert s.ok("daemon", "status")["pid"] != old_pid
    assert again["op_id"] == first["op_id"] and again["result"] == first["result"]
    mismatch = s("--key", "k-4", "eval", "window.effects += 2")
    assert mismatch.code == 2 and mismatch.json["error"]["code"] == "invalid_params"
    # Nothing ran again: the new daemon recorded no new operation for the session.
    ops = s.ok("op", "list")["ops"]
    assert [o["op_id"] for o in ops if o["tool"] == "eval"] == [first["op_id"]]


def test_a_key_refused_as_busy_stays_free_for_the_retry(bsk: Bsk, site: str) -> None:
    from support.cli import live_ops
    from support.wait import wait_until

    bsk.ok("open", f"{site}/counter.html")
    holder = bsk.popen("eval", "await slow('holder', 2000)")
    wait_until(lambda: live_ops(bsk, "dispatched"), what="holder dispatched")
    refused = bsk("--key", "k-5", "eval", "window.effects += 1")
    assert refused.code == 5 and refused.json["retry_safe"] is True
    holder.communicate(timeout=60)
    retried = bsk.ok("--key", "k-5", "eval", "window.effects += 1")
    assert retried["op_id"] != refused.json["op_id"] and retried["result"]["value"] == 1
    again = bsk.ok("--key", "k-5", "eval", "window.effects += 1")
    assert again["op_id"] == retried["op_id"]
    assert bsk("eval", "window.effects").value == 1
