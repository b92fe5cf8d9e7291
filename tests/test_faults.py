"""docs/design.md §4 through the test-only fault seam (tests/support/faults.py): a handler
paused between two named steps, a compensation that fails or outlives the cleanup
deadline, a cancel racing the last step, a CDP socket dropped under the daemon, and the
recording link's log of every command each operation sent.

Each case asserts the whole answer: status, dispatched, retry_safe, the CLI's exit code,
the HTTP status and X-Should-Retry, and the compensation report.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.chromium import Chromium
from support.cli import Bsk, alive, live_ops, short_home, stop_for_good
from support.faults import page_changing
from support.hooked_daemon import start_hooked
from support.wait import wait_until

CLEANUP_S = 1.0  # the faulty daemon's cleanup deadline (BSK_CLEANUP_TIMEOUT)


# -- fixtures and helpers --------------------------------------------------------------


def http_client(home: Any) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(home / "bsk.sock"))
    return httpx.Client(transport=transport, base_url="http://bsk", timeout=60)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bsk]:
    """A daemon of this module's own with the fault seam on."""
    runner = Bsk(short_home(tmp_path_factory, "faults"), BSK_CLEANUP_TIMEOUT=str(CLEANUP_S))
    start_hooked(runner)
    yield runner
    stop_for_good(runner)


@pytest.fixture(scope="module")
def http(faulty: Bsk) -> Iterator[httpx.Client]:
    with http_client(faulty.home) as client:
        yield client


@pytest.fixture
def s(faulty: Bsk, http: httpx.Client, site: str) -> Iterator[Bsk]:
    """A session of this test's own on the faulty daemon, on the counter page."""
    sid = "f-" + uuid.uuid4().hex[:8]
    faulty.ok("session", "start", sid)
    runner = faulty.with_session(sid)
    runner.ok("open", f"{site}/counter.html")
    yield runner
    http.put("/v1/test/faults", json={"rules": []})
    runner("session", "stop", "--wait")


def rules(http: httpx.Client, *given: dict[str, Any]) -> None:
    r = http.put("/v1/test/faults", json={"rules": list(given)})
    assert r.status_code == 200, r.text


def paused(http: httpx.Client, session: str, at: str) -> dict[str, Any]:
    """The operation of `session` held at `at` (waits until it gets there)."""
    def find() -> dict[str, Any] | None:
        return next((p for p in http.get("/v1/test/faults").json()["paused"]
                     if p["session_id"] == session and p["at"] == at), None)

    return wait_until(find, 30, f"an operation of {session} paused at {at}")


def outcome(http: httpx.Client, op_id: str) -> httpx.Response:
    """The ended operation as the HTTP API answers it (status code and retry headers)."""
    r = http.get(f"/v1/ops/{op_id}/wait?timeout_ms=30000")
    assert r.json()["state"] == "ended", r.text
    return r


def commands(http: httpx.Client, op_id: str) -> list[dict[str, Any]]:
    return http.get("/v1/test/commands", params={"op_id": op_id}).json()["commands"]


def answer_of(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out)


def ref_of(s: Bsk, name: str) -> str:
    snap = s.ok("snapshot")["result"]["snapshot"]
    line = next(ln for ln in snap.splitlines() if f'"{name}"' in ln and "[ref=" in ln)
    return line.split("[ref=")[1].split("]")[0]


def assert_answer(code: int, answer: dict[str, Any], r: httpx.Response, *, status: str,
                  dispatched: str, retry_safe: bool, exit_code: int, http_status: int,
                  should_retry: str | None) -> None:
    assert answer["op_id"] == r.json()["op_id"]
    assert (answer["status"], answer["dispatched"], answer["retry_safe"]) == (
        status, dispatched, retry_safe), answer
    assert code == exit_code, answer
    assert r.status_code == http_status, r.text
    assert r.headers.get("x-should-retry") == should_retry
    assert {k: r.json()[k] for k in ("status", "dispatched", "retry_safe")} == {
        k: answer[k] for k in ("status", "dispatched", "retry_safe")}


def compensation(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return answer["error"]["details"].get("compensation", [])


# -- a handler paused between two steps ------------------------------------------------


def test_cancel_before_the_first_step_is_cancelled_and_sent_nothing(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "before_step:mouseMoved", "do": "pause", "session": s.session})
    clicking = s.popen("click", button)
    op_id = paused(http, s.session, "before_step:mouseMoved")["op_id"]
    cancel = s.ok("op", "cancel", op_id)
    assert cancel["cancel"] == "requested" and cancel["state"] != "ended"
    code, answer = answer_of(clicking)
    assert_answer(code, answer, outcome(http, op_id), status="cancelled", dispatched="no",
                  retry_safe=False, exit_code=7, http_status=409, should_retry="false")
    assert answer["error"]["code"] == "cancelled"
    assert answer["error"]["details"] == {"reason": "cancel"}  # nothing to compensate
    sent = commands(http, op_id)
    assert sent, "the click resolved its ref before pausing"
    assert [c for c in sent if page_changing(c)] == []
    assert {c["kind"] for c in sent} <= {"inspect", "other"}
    assert s("eval", "window.count ?? 0").value == 0


def test_cancel_after_a_press_releases_the_button_and_is_outcome_unknown(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    s.ok("eval", "window.seen = []; for (const t of ['mousedown', 'mouseup', 'click']) "
                 "document.addEventListener(t, e => seen.push(t + ':' + e.target.localName),"
                 " true)")
    rules(http, {"at": "after_step:mousePressed", "do": "pause", "session": s.session})
    clicking = s.popen("click", button)
    op_id = paused(http, s.session, "after_step:mousePressed")["op_id"]
    assert s.ok("op", "cancel", op_id)["cancel"] == "requested"
    code, answer = answer_of(clicking)
    assert_answer(code, answer, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    details = answer["error"]["details"]
    assert details["reason"] == "cancel" and "cleanup" not in details
    assert details["steps_sent"] == ["mouseMoved", "mousePressed"]
    assert details["compensation"] == [
        {"action": "mouse_released", "undoes_effect": False, "ok": True}]
    sent = [(c["kind"], c["method"]) for c in commands(http, op_id) if page_changing(c)]
    # The compensation moves the pointer off the page and releases it there.
    assert sent == [("step", "Input.dispatchMouseEvent")] * 2 + [
        ("compensation", "Input.dispatchMouseEvent")] * 2
    # Released off the page: no button held, and no click on the pressed element.
    assert s("eval", "window.seen").value == ["mousedown:button", "mouseup:html",
                                              "click:html"]
    events = [e[1] for e in s.ok("op", "show", op_id)["timeline"]]
    assert events[-4:] == ["cancel_requested", "cleaning_up", "compensation", "ended"]


def test_a_failed_compensation_is_reported_as_failed(s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "after_step:mousePressed", "do": "pause", "session": s.session},
          {"at": "compensation:mouse_released", "do": "fail", "session": s.session,
           "message": "injected: release refused"})
    clicking = s.popen("click", button)
    op_id = paused(http, s.session, "after_step:mousePressed")["op_id"]
    s.ok("op", "cancel", op_id)
    code, answer = answer_of(clicking)
    assert_answer(code, answer, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    assert compensation(answer) == [{"action": "mouse_released", "undoes_effect": False,
                                     "ok": False, "error": "injected: release refused"}]
    assert "cleanup" not in answer["error"]["details"]  # it ended in time, just not well
    assert [c["kind"] for c in commands(http, op_id)].count("compensation") == 0
    # The release never went out: the button is still down in the page.
    s.ok("eval", "1")  # the session is free again (the page state stays as it is)


def test_a_half_made_tab_is_closed_and_the_cancel_undoes_it(
        s: Bsk, http: httpx.Client, site: str) -> None:
    rules(http, {"at": "before_act:Page.navigate", "do": "pause", "session": s.session,
                 "tool": "tab_new"})
    opening = s.popen("tab", "new", f"{site}/other.html")
    op_id = paused(http, s.session, "before_act:Page.navigate")["op_id"]
    s.ok("op", "cancel", op_id)
    code, answer = answer_of(opening)
    assert_answer(code, answer, outcome(http, op_id), status="cancelled", dispatched="yes",
                  retry_safe=False, exit_code=7, http_status=409, should_retry="false")
    assert compensation(answer) == [
        {"action": "tab_closed", "undoes_effect": True, "ok": True}]
    tabs = s.ok("tab", "list")["result"]["tabs"]
    assert [t["tab_id"] for t in tabs] == ["t1"] and tabs[0]["current"]
    made = [c for c in commands(http, op_id) if c["method"] == "Target.createTarget"]
    closed = [c for c in commands(http, op_id) if c["method"] == "Target.closeTarget"]
    assert len(made) == 1 and len(closed) == 1 and closed[0]["kind"] == "compensation"
    assert s("eval", "document.title").value == "Counter"


def test_a_half_made_tab_that_could_not_be_closed_is_outcome_unknown(
        s: Bsk, http: httpx.Client, site: str) -> None:
    rules(http, {"at": "before_act:Page.navigate", "do": "pause", "session": s.session},
          {"at": "compensation:tab_closed", "do": "fail", "session": s.session})
    opening = s.popen("tab", "new", f"{site}/other.html")
    op_id = paused(http, s.session, "before_act:Page.navigate")["op_id"]
    s.ok("op", "cancel", op_id)
    code, answer = answer_of(opening)
    assert_answer(code, answer, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    assert compensation(answer) == [{"action": "tab_closed", "undoes_effect": True,
                                     "ok": False, "error": "injected compensation failure"}]
    assert "steps_sent" not in answer["error"]["details"]


# -- cleanup past its deadline -----------------------------------------------------------


def test_session_busy_while_cleaning_up_then_cleanup_timed_out(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "after_step:mousePressed", "do": "pause", "session": s.session},
          {"at": "compensation:mouse_released", "do": "delay", "seconds": 30,
           "session": s.session})
    clicking = s.popen("click", button)
    op_id = paused(http, s.session, "after_step:mousePressed")["op_id"]
    t0 = time.monotonic()
    cancel = http.post(f"/v1/ops/{op_id}/cancel")
    assert cancel.status_code == 200 and cancel.json()["cancel"] == "requested"
    assert time.monotonic() - t0 < 0.5  # answered at once, not after the cleanup

    # The cancel is a request: the operation's own task moves it to cleaning_up on its
    # next turn, which a fast caller can beat (its answer then says `dispatched`).
    wait_until(lambda: http.get(f"/v1/ops/{op_id}").json()["state"] == "cleaning_up", 10,
               f"{op_id} cleaning up")
    # While compensation runs, the session is busy, naming the op in state cleaning_up.
    busy = http.post(f"/v1/sessions/{s.session}/tools/eval", json={"expression": "1"})
    assert busy.status_code == 409, busy.text
    assert busy.headers["x-should-retry"] == "true" and busy.headers["retry-after"] == "1"
    body = busy.json()
    assert body["error"]["code"] == "session_busy"
    assert (body["status"], body["dispatched"], body["retry_safe"]) == ("failed", "no", True)
    holder = body["error"]["details"]["holder"]
    assert (holder["op_id"], holder["tool"], holder["state"]) == (op_id, "click",
                                                                 "cleaning_up")
    cli_busy = s("eval", "1")
    assert cli_busy.code == 5 and cli_busy.json["retry_safe"] is True
    assert cli_busy.json["error"]["details"]["holder"]["state"] == "cleaning_up"

    code, answer = answer_of(clicking)
    took = time.monotonic() - t0
    assert CLEANUP_S * 0.9 <= took < CLEANUP_S + 5, took
    assert_answer(code, answer, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    details = answer["error"]["details"]
    assert details["cleanup"] == "timed_out" and details["reason"] == "cancel"
    assert details["steps_sent"] == ["mouseMoved", "mousePressed"]
    assert details["compensation"] == [{"action": "mouse_released", "undoes_effect": False,
                                        "ok": False, "error": "cleanup deadline passed"}]
    assert s("eval", "1").value == 1  # free again the moment it ended


def test_a_handler_deaf_to_its_cancel_times_out_its_cleanup(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "after_step:mousePressed", "do": "pause", "session": s.session,
                 "on_cancel": "linger", "seconds": CLEANUP_S * 3})
    clicking = s.popen("click", button)
    op_id = paused(http, s.session, "after_step:mousePressed")["op_id"]
    s.ok("op", "cancel", op_id)
    code, answer = answer_of(clicking)
    assert_answer(code, answer, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    details = answer["error"]["details"]
    assert details["cleanup"] == "timed_out"
    assert [c["action"] for c in details["compensation"]] == ["mouse_released"]


def test_deadline_between_two_steps_is_a_cancel_with_compensation(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "after_step:mousePressed", "do": "pause", "session": s.session})
    r = s("--timeout", "1.5", "click", button)
    op_id = r.json["op_id"]
    assert_answer(r.code, r.json, outcome(http, op_id), status="outcome_unknown",
                  dispatched="yes", retry_safe=False, exit_code=9, http_status=504,
                  should_retry="false")
    details = r.json["error"]["details"]
    assert details["reason"] == "deadline"
    assert details["compensation"] == [
        {"action": "mouse_released", "undoes_effect": False, "ok": True}]


# -- a cancel that loses the race ----------------------------------------------------------


def test_a_cancel_that_arrives_with_the_last_step_is_reported_completed(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "after_step:mouseReleased", "do": "pause", "session": s.session,
                 "on_cancel": "finish"})
    clicking = s.popen("click", button)
    op_id = paused(http, s.session, "after_step:mouseReleased")["op_id"]
    assert s.ok("op", "cancel", op_id)["cancel"] == "requested"
    code, answer = answer_of(clicking)
    r = outcome(http, op_id)
    assert_answer(code, answer, r, status="completed", dispatched="yes", retry_safe=False,
                  exit_code=0, http_status=200, should_retry=None)
    assert answer["error"] is None and answer["result"]["ref"] == button
    events = [e[1] for e in s.ok("op", "show", op_id)["timeline"]]
    assert "cancel_requested" in events and "completed_despite_cancel" in events
    assert s("eval", "window.count").value == 1  # it happened, so it says so

    # A cancel after the end changes nothing and says so.
    late = s("op", "cancel", op_id)
    assert late.code == 0 and late.json["cancel"] == "already_ended"
    assert late.json["status"] == "completed"
    late_http = http.post(f"/v1/ops/{op_id}/cancel")
    assert late_http.status_code == 200 and late_http.json()["status"] == "completed"
    assert s.ok("op", "show", op_id)["status"] == "completed"


# -- the recording link --------------------------------------------------------------------


def test_a_cancelled_queued_operation_sent_no_command_at_all(
        s: Bsk, http: httpx.Client) -> None:
    button = ref_of(s, "Add one")
    rules(http, {"at": "before_step:mouseMoved", "do": "pause", "session": s.session})
    holder = s.popen("click", button)
    holder_id = paused(http, s.session, "before_step:mouseMoved")["op_id"]
    queued = s.popen("--wait", "eval", "window.effects += 1")
    op_id = wait_until(lambda: live_ops(s, "queued"), what="eval queued")[0]["op_id"]
    s.ok("op", "cancel", op_id)
    code, answer = answer_of(queued)
    assert_answer(code, answer, outcome(http, op_id), status="cancelled", dispatched="no",
                  retry_safe=False, exit_code=7, http_status=409, should_retry="false")
    assert commands(http, op_id) == []
    # The holder goes on when released, and only it acted.
    assert http.post("/v1/test/faults/release", json={"op_id": holder_id}).json()["released"]
    assert answer_of(holder)[0] == 0
    assert s("eval", "[window.count, window.effects]").value == [1, 0]


# -- the CDP socket closes under the daemon (the browser keeps running) --------------------


def test_dropped_cdp_socket_ends_calls_at_once_and_the_next_call_relaunches(
        tmp_path_factory: pytest.TempPathFactory, site: str) -> None:
    runner = Bsk(short_home(tmp_path_factory, "drop"))
    start_hooked(runner)
    try:
        s = runner.with_session("dropped")
        s.ok("session", "start", "dropped")
        s.ok("open", f"{site}/counter.html")
        pid = s.ok("status")["browser"]["pid"]
        running = s.popen("eval", "await slow('x', 20000)")
        dispatched = wait_until(lambda: live_ops(s, "dispatched"), what="dispatched")[0]
        queued = s.popen("--wait", "eval", "window.effects += 1")
        waiting = wait_until(lambda: live_ops(s, "queued"), what="queued")[0]
        with http_client(runner.home) as http:
            t0 = time.time()
            assert http.post("/v1/test/faults/drop-link").json()["dropped"] is True
            code, answer = answer_of(running)
            r = outcome(http, dispatched["op_id"])
            assert_answer(code, answer, r, status="outcome_unknown", dispatched="yes",
                          retry_safe=False, exit_code=9, http_status=504,
                          should_retry="false")
            assert "lost" in answer["error"]["message"], answer
            ended = datetime.fromisoformat(answer["ended_at"].replace("Z", "+00:00"))
            assert ended.timestamp() - t0 < 0.2, f"ended {ended.timestamp() - t0:.3f}s late"
            code, answer = answer_of(queued)
            r = outcome(http, waiting["op_id"])
            assert_answer(code, answer, r, status="failed", dispatched="no",
                          retry_safe=True, exit_code=10, http_status=503,
                          should_retry="true")
            assert answer["error"]["code"] == "browser_unavailable"
            assert r.headers["retry-after"] == "1"
            assert commands(http, waiting["op_id"]) == []
            assert alive(pid), "the browser itself must not have been killed"
        back = s.ok("eval", "document.title")  # relaunched, its tab reopened (same id)
        assert back["result"]["value"] == "Counter"
        assert [t["tab_id"] for t in back["result"]["browser_restarted"]["reopened"]] == ["t1"]
        assert s.ok("tab", "new", f"{site}/other.html")["status"] == "completed"
        assert s("eval", "document.title").value == "Other"
        assert s.ok("status")["browser"]["pid"] != pid
    finally:
        stop_for_good(runner)


class TcpProxy:
    """A loopback TCP relay to a browser's DevTools port; `cut()` closes every connection
    through it (the socket closes, the browser lives on), new ones are still accepted."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.loop = asyncio.new_event_loop()
        self.writers: set[asyncio.StreamWriter] = set()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.sock = sock
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    async def _start(self) -> None:
        self.server = await asyncio.start_server(self._relay, sock=self.sock)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        def close_all() -> None:
            for w in list(self.writers):
                w.transport.abort()
            self.writers.clear()

        self.loop.call_soon_threadsafe(close_all)

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_attached_browser_socket_closed_then_the_next_call_reconnects(
        tmp_path_factory: pytest.TempPathFactory, chromium: Chromium, site: str) -> None:
    """No seam: a real socket closes between the daemon and a browser it attached to."""
    proxy = TcpProxy(chromium.port)
    runner = Bsk(short_home(tmp_path_factory, "cut"),
                 BSK_CDP_URL=f"http://127.0.0.1:{proxy.port}")
    runner.env.pop("BSK_EPHEMERAL", None)
    try:
        s = runner.with_session("cut")
        s.ok("session", "start", "cut")
        s.ok("open", f"{site}/counter.html")
        s.ok("eval", "window.kept = 7")
        running = s.popen("eval", "await slow('x', 20000)")
        wait_until(lambda: live_ops(s, "dispatched"), what="dispatched")
        queued = s.popen("--wait", "eval", "window.effects += 1")
        wait_until(lambda: live_ops(s, "queued"), what="queued")
        t0 = time.monotonic()
        proxy.cut()
        code, answer = answer_of(running)
        assert time.monotonic() - t0 < 2  # at once, not at the call's 30 s deadline
        assert (code, answer["status"], answer["dispatched"]) == (9, "outcome_unknown", "yes")
        code, answer = answer_of(queued)
        assert (code, answer["error"]["code"], answer["dispatched"]) == (
            10, "browser_unavailable", "no")
        assert chromium.process.poll() is None  # the browser lives on
        # The same browser, reached again: the next call reconnects to it and re-attaches
        # the session's tab, whose page lived on.
        back = s.ok("eval", "window.kept")
        assert back["result"]["value"] == 7
        assert back["result"]["browser_restarted"]["reattached"] == [
            {"tab_id": "t1", "url": f"{site}/counter.html"}]
        assert "note" not in back["result"]["browser_restarted"]
        assert s.ok("tab", "new", f"{site}/other.html")["status"] == "completed"
        assert s("eval", "document.title").value == "Other"
        assert s.ok("status")["browser"]["connected"] is True
    finally:
        stop_for_good(runner)
        proxy.close()


def test_a_production_daemon_runs_no_file_its_environment_names(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The old `BSK_TEST_HOOK=FILE` let any environment make the daemon run Python."""
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.py"
    hook.write_text(f"open({str(marker)!r}, 'w').close()\n"
                    "def install_in_daemon(daemon):\n    return []\n")
    runner = Bsk(short_home(tmp_path_factory, "nohook"), BSK_TEST_HOOK=str(hook))
    try:
        runner.ok("daemon", "start")
        with http_client(runner.home) as http:
            answer = http.post("/v1/test/faults/drop-link")
            assert "no endpoint" in answer.json()["error"]["message"], answer.text
        assert not marker.exists()
    finally:
        stop_for_good(runner)
