"""`bsk request-help`: the agent hands its session to a person at the dashboard (a second
headless Chromium of the test's own), and the call ends honestly however it ends."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from support.chromium import PageDevTools
from support.cli import Bsk
from support.dashboard import Viewer, dashboard_viewer
from support.extension import BrowserWithExtension, agent_session, answer_prompt
from support.wait import wait_until


@pytest.fixture(scope="module")
def viewer(shared_bsk: Bsk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    url = shared_bsk.ok("show", "--url")["url"]
    with dashboard_viewer(url, tmp_path_factory.mktemp("viewer") / "chromium.log") as v:
        yield v


def _asking(bsk: Bsk, viewer: Viewer, site: str, *args: str) -> subprocess.Popen[str]:
    """The agent asks for help; the person sees it highlighted on the dashboard."""
    bsk.ok("open", f"{site}/dash.html")
    viewer.choose(bsk.session)
    proc = bsk.popen("request-help", "Please click the pad", *args)
    viewer.wait("getComputedStyle(document.querySelector('#help')).display === 'block' && "
                "document.querySelector('#help-reason').textContent === 'Please click the pad'"
                f" && document.querySelector('[data-session=\"{bsk.session}\"]')"
                ".classList.contains('help')", 10, "the request for help on the dashboard")
    return proc


def _click_pad(viewer: Viewer, times: int = 1) -> None:
    viewer.wait("+document.querySelector('#live').dataset.seq", 10, "a frame of the page")
    x, y, w, h = viewer.eval("(r => [r.x, r.y, r.width, r.height])("
                             "document.querySelector('#live').getBoundingClientRect())")
    for _ in range(times):
        viewer.click_at(x + w / 2, y + h * 0.6)


def _answer(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    out, _ = proc.communicate(timeout=60)
    return proc.returncode, json.loads(out)


def test_done_ends_it_completed_with_what_the_person_changed(
        bsk: Bsk, site: str, viewer: Viewer) -> None:
    proc = _asking(bsk, viewer, site)
    busy = bsk("snapshot")  # the person holds the session meanwhile
    assert busy.code == 5 and busy.json["error"]["details"]["holder"]["holder"] == "person"
    assert busy.json["error"]["details"]["holder"]["tool"] == "request_help"
    _click_pad(viewer)
    wait_until(lambda: viewer.eval(
        "document.querySelector('#tabinfo').textContent.endsWith('#clicked-1')"), 10,
        "the person's click to reach the page")
    viewer.press("#help-done")
    code, answer = _answer(proc)
    assert code == 0 and answer["status"] == "completed", answer
    result = answer["result"]
    assert result["ended_by"] == "done" and result["url"].endswith("#clicked-1")
    assert result["url_before"].endswith("/dash.html") and result["new_tabs"] == []
    assert bsk("eval", "document.getElementById('clicks').textContent").value == "clicks: 1"


@pytest.mark.parametrize("until", ["text=clicks: 2", "url=#clicked-2"])
def test_the_condition_ends_it_completed(bsk: Bsk, site: str, viewer: Viewer,
                                         until: str) -> None:
    proc = _asking(bsk, viewer, site, "--until", until)
    _click_pad(viewer, 2)
    code, answer = _answer(proc)
    assert code == 0 and answer["result"]["ended_by"] == "condition", answer
    assert answer["result"]["until"] == until and answer["result"]["url"].endswith("#clicked-2")


def test_decline_ends_it_user_interrupted(bsk: Bsk, site: str, viewer: Viewer) -> None:
    proc = _asking(bsk, viewer, site)
    viewer.press("#help-decline")
    code, answer = _answer(proc)
    assert code == 6 and answer["error"]["code"] == "user_interrupted"
    assert answer["status"] == "failed" and answer["dispatched"] == "no"
    assert answer["error"]["details"]["reason"] == "declined"
    assert bsk("eval", "1 + 1").value == 2  # the agent goes on (after asking the user)


def test_its_deadline_ends_it_failed_not_unknown(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/dash.html")
    r = bsk("request-help", "Nobody is there", "--until", "text=never", "--timeout", "1.5")
    assert r.code == 11 and r.json["status"] == "failed" and r.json["dispatched"] == "no"
    assert r.json["error"]["details"]["reason"] == "timeout"
    assert "Nobody is there" in r.json["error"]["message"]


def test_it_is_cancellable_and_checks_its_condition(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/dash.html")
    proc = bsk.popen("request-help", "Wait for me")
    op = wait_until(lambda: next((o for o in bsk.ok("op", "list")["ops"]
                                  if o["tool"] == "request_help"
                                  and o["state"] == "dispatched"), None), 10, "the request")
    bsk.ok("op", "cancel", op["op_id"])
    code, answer = _answer(proc)
    assert code == 7 and answer["status"] == "cancelled" and answer["dispatched"] == "no"
    bad = bsk("request-help", "x", "--until", "title=Home")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "until"


def test_its_answer_reads_as_text_without_json(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/dash.html")
    out = bsk("request-help", "Check the page", "--until", "url=dash.html", "--timeout", "5",
              as_json=False).stdout
    assert out.startswith("helped (url=dash.html holds") and f"{site}/dash.html" in out, out
    assert "{" not in out, out


def test_an_extension_session_asks_in_its_agent_tabs_overlay(
        ext_browser: BrowserWithExtension, site: str) -> None:
    s = agent_session(ext_browser)
    s.ok("open", f"{site}/dash.html")
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    hand = PageDevTools(ext_browser.chromium, tab["target_id"])
    for button, code in (("done", 0), ("decline", 6)):
        proc = s.popen("request-help", "Please solve the captcha")
        answer_prompt(hand, button)  # the user's trusted click in the overlay
        got, answer = _answer(proc)
        assert got == code, answer
        assert (answer["result"]["ended_by"] == "done" if code == 0
                else answer["error"]["details"]["reason"] == "declined")
        wait_until(lambda: hand.find("data-bsk", "stop"), what="the Stop bar back")
    hand.close()
