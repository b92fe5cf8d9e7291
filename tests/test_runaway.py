"""Runaway scripts: a deadline or a cancel on a call running page script (eval, a WebMCP
tool) stops that script (`Runtime.terminateExecution`) as part of its compensation, so the
tab answers the next call; `reload` of a tab wedged by its own script works. An idle
page is never terminated (that would kill its *next* script)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from support.cli import Bsk, live_ops
from support.wait import wait_until

TERMINATED = {"action": "script_terminated", "undoes_effect": False, "ok": True}


def quick_eval(bsk: Bsk, expression: str) -> Any:
    """An eval that must answer promptly: the tab is usable."""
    started = time.monotonic()
    r = bsk("--timeout", "5", "eval", expression)
    assert r.code == 0, r.stdout + r.stderr
    assert time.monotonic() - started < 5
    return r.value


def test_deadline_on_a_runaway_eval_stops_the_script(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/index.html")
    r = bsk("--timeout", "2", "eval", "window.spun = 0; while (true) { window.spun++ }")
    assert r.code == 9, r.stdout + r.stderr
    answer = r.json
    assert (answer["status"], answer["dispatched"]) == ("outcome_unknown", "yes")
    assert answer["error"]["details"]["compensation"] == [TERMINATED]
    assert quick_eval(bsk, "window.spun > 0") is True  # the loop ran, and stopped
    assert quick_eval(bsk, "1 + 1") == 2


def test_cancel_of_a_runaway_eval_stops_the_script(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/index.html")
    running = bsk.popen("eval", "while (true) {}")
    op = wait_until(lambda: live_ops(bsk, "dispatched"), what="eval dispatched")[0]
    bsk.ok("op", "cancel", op["op_id"])
    stdout, stderr = running.communicate(timeout=30)
    assert "Traceback" not in stderr
    answer = json.loads(stdout)
    assert answer["status"] == "outcome_unknown", answer
    assert answer["error"]["details"]["compensation"] == [TERMINATED]
    assert quick_eval(bsk, "document.title") is not None


def test_an_idle_page_is_not_terminated(bsk: Bsk, site: str) -> None:
    """An eval that waits on a promise ran out of time, but no script is running: the
    page's own next script (a timer) must still run."""
    bsk.ok("open", f"{site}/index.html")
    r = bsk("--timeout", "1", "eval",
            "setTimeout(() => { window.later = 'ran' }, 1500); await new Promise(() => {})")
    assert r.json["status"] == "outcome_unknown"
    assert "compensation" not in r.json["error"]["details"]
    assert quick_eval(bsk, "new Promise(r => setTimeout(() => r(window.later), 1000))") == "ran"


@pytest.mark.parametrize("command", ["reload", "open", "back"])
def test_navigation_recovers_a_tab_its_own_script_wedged(bsk: Bsk, site: str,
                                                         command: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    bsk.ok("open", f"{site}/index.html")
    # The page's own timer starts its loop right after this eval answers, long before
    # the next `bsk` process is up: the navigation finds the page's main thread stuck.
    bsk.ok("eval", "setTimeout(() => { while (true) {} }, 0); 'armed'")
    args = {"reload": ("reload",), "open": ("open", f"{site}/observe.html"),
            "back": ("back",)}[command]
    started = time.monotonic()
    r = bsk("--timeout", "10", *args)
    assert r.code == 0, r.stdout + r.stderr
    assert time.monotonic() - started < 10
    expected = {"reload": "/index.html", "open": "/observe.html", "back": "/counter.html"}
    assert quick_eval(bsk, "location.pathname") == expected[command]
    assert quick_eval(bsk, "document.readyState") == "complete"


def test_deadline_on_a_runaway_webmcp_tool_stops_it(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/index.html")
    bsk.ok("eval", """document.modelContext.registerTool({
        name: "spin", description: "Loops for ever.",
        execute: () => { while (true) {} }})""")
    r = bsk("--timeout", "2", "webmcp", "invoke", "spin")
    assert r.json["status"] == "outcome_unknown", json.dumps(r.json)
    actions = [c["action"] for c in r.json["error"]["details"].get("compensation", [])]
    assert actions[0] == "script_terminated", r.json["error"]
    assert quick_eval(bsk, "1 + 1") == 2
