"""`bsk mouse` under interruption, through the test-only fault seam: a press that a
cancel interrupts is released off the page (`mouse_released`) and reported
`outcome_unknown` with its steps; a cancel before any step sends nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from support.cli import Bsk
from test_faults import (  # the faulty daemon and its helpers
    answer_of,
    assert_answer,
    commands,
    faulty,
    http,
    outcome,
    paused,
    rules,
)

__all__ = ["faulty", "http"]  # fixtures, used by name


@pytest.fixture
def canvas(faulty: Bsk, http: httpx.Client, site: str) -> Iterator[Bsk]:
    sid = "m-" + uuid.uuid4().hex[:8]
    faulty.ok("session", "start", sid)
    runner = faulty.with_session(sid)
    runner.ok("open", f"{site}/act_canvas.html")
    yield runner
    http.put("/v1/test/faults", json={"rules": []})
    runner("session", "stop", "--wait")


def seen(s: Bsk) -> list[tuple[str, int]]:
    return [(e["type"], e["buttons"]) for e in s("eval", "events").value
            if e["type"] != "mousemove"]


def test_a_cancelled_mouse_down_releases_the_button(canvas: Bsk,
                                                    http: httpx.Client) -> None:
    rules(http, {"at": "after_step:mousePressed", "do": "pause", "session": canvas.session})
    pressing = canvas.popen("mouse", "down", "50", "60")
    op_id = paused(http, str(canvas.session), "after_step:mousePressed")["op_id"]
    assert canvas.ok("op", "cancel", op_id)["cancel"] == "requested"
    code, answer = answer_of(pressing)
    assert_answer(code, answer, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    details = answer["error"]["details"]
    assert details["steps_sent"] == ["mouseMoved", "mousePressed"]
    assert details["compensation"] == [
        {"action": "mouse_released", "undoes_effect": False, "ok": True}]
    # Released: the canvas saw the press, then the button came up (off the page).
    assert seen(canvas)[0] == ("mousedown", 1)
    assert canvas.ok("mouse", "move", "60", "60")["result"].get("buttons_held") is None


def test_a_cancel_before_the_first_step_sends_nothing(canvas: Bsk,
                                                      http: httpx.Client) -> None:
    rules(http, {"at": "before_step:mouseMoved", "do": "pause", "session": canvas.session})
    clicking = canvas.popen("mouse", "click", "50", "60")
    op_id = paused(http, str(canvas.session), "before_step:mouseMoved")["op_id"]
    canvas.ok("op", "cancel", op_id)
    code, answer = answer_of(clicking)
    assert_answer(code, answer, outcome(http, op_id), status="cancelled", dispatched="no",
                  retry_safe=False, exit_code=7, http_status=409, should_retry="false")
    assert not [c for c in commands(http, op_id) if c["kind"] == "step"]
    assert seen(canvas) == []
