"""The WebMCP fail-fast rules against event orders recorded from the real Chromium.

tests/data/webmcp_orders.json is written by scripts/record_webmcp.py (Chromium 156 with
`--enable-features=WebMCP`). Two levels replay it:

- the I/O-free `Invocation` machine, on the recorded timestamps (a virtual clock), which
  pins exact fail times relative to the events that justify them;
- a fake CDP server that plays the recording back over a WebSocket, in real time, to the
  real `CdpLink`, `Tab` and `Call` glue the daemon uses.

The real-browser end-to-end tests are in test_webmcp.py; these do not replace them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import websockets

from browserskill.browser.cdp import CdpLink
from browserskill.browser.tab import Tab
from browserskill.tools.webmcp_client import Call
from browserskill.webmcp.invocation import GRACE_S, Invocation
from browserskill.webmcp.tools import TabTools

ORDERS = json.loads((Path(__file__).parent / "data" / "webmcp_orders.json").read_text())
SCENARIOS: dict[str, Any] = ORDERS["scenarios"]
MAIN = "FRAME_MAIN"


def entries(name: str) -> list[dict[str, Any]]:
    return SCENARIOS[name]["entries"]


def first(name: str, method: str, kind: str = "event", **match: Any) -> dict[str, Any]:
    for e in entries(name):
        params = e.get("params") or {}
        if e["kind"] == kind and e["method"] == method and all(
                params.get(k) == v for k, v in match.items()):
            return e
    raise AssertionError(f"{name}: no {kind} {method} {match}")


def replay(name: str) -> Invocation:
    """Feed one recorded scenario to a fresh machine on a virtual clock; run it out."""
    send = first(name, "WebMCP.invokeTool", "send")
    inv = Invocation(send["params"]["toolName"], MAIN, "page", "page")
    for e in entries(name):
        t = e["t"]
        if inv.deadline is not None and t >= inv.deadline:
            inv.tick(inv.deadline)  # the timer fires before the next event arrives
        if e is send:
            inv.sent(t)
        elif e["kind"] == "event" and inv.sent_at is not None:
            inv.on_event(e["session"], e["method"], e.get("params") or {}, t)
        elif e["method"] == "WebMCP.invokeTool" and e["kind"] == "reply":
            inv.replied(e["result"], t)
        elif e["method"] == "WebMCP.invokeTool" and e["kind"] == "reply_error":
            inv.reply_failed(e["error"]["message"], t)
    if inv.deadline is not None:
        inv.tick(inv.deadline)
    return inv


# -- the machine on recorded orders -------------------------------------------------------


@pytest.mark.parametrize("name", ["external_reload", "external_navigate", "script_reload"])
def test_document_change_not_by_the_tool_fails_grace_after_the_replacement_loads(
        name: str) -> None:
    inv = replay(name)
    stopped = next(e for e in entries(name) if e["method"] == "Page.frameStoppedLoading"
                   and e["t"] > first(name, "Page.frameNavigated")["t"])
    assert inv.outcome is not None and inv.outcome.kind == "page_unloaded"
    assert inv.outcome.reason == "navigated"
    assert inv.outcome.at == pytest.approx(stopped["t"] + GRACE_S)
    assert inv.invocation_id == first(name, "WebMCP.invokeTool", "reply")["result"][
        "invocationId"]
    assert inv.outcome.at < 1.5  # not the timeout: about a second after the invoke


def test_tool_reloading_its_own_page_delivers_its_result_and_ignores_the_second() -> None:
    inv = replay("tool_reload")
    assert inv.outcome is not None and inv.outcome.kind == "responded"
    assert inv.outcome.status == "Completed"
    assert inv.outcome.response["output"] == {"reloading": True}
    responses = [e for e in entries("tool_reload") if e["method"] == "WebMCP.toolResponded"]
    assert len(responses) == 2 and responses[1]["params"]["output"] == []  # Chromium's second
    assert inv.ignored_responses == 1
    stopped = [e for e in entries("tool_reload") if e["method"] == "Page.frameStoppedLoading"]
    assert responses[0]["t"] < stopped[-1]["t"]  # the real answer comes before the load ends


def test_tool_that_answers_after_its_own_reload_gets_chromiums_answer() -> None:
    inv = replay("tool_reload_late")
    assert inv.outcome is not None and inv.outcome.status == "Completed"
    assert inv.outcome.response["output"] == []  # what Chromium says once the page is gone
    assert inv.doc_changed_at is not None  # reported as "navigated" to the caller


def test_cross_origin_navigation_by_the_tool() -> None:
    quick = replay("tool_cross_origin")  # returned before the navigation committed
    assert quick.outcome is not None and quick.outcome.status == "Completed"
    assert quick.ignored_responses == 1  # Chromium's later error for the same invocation
    late = replay("tool_cross_origin_late")  # would have answered after the commit
    assert late.outcome is not None and late.outcome.status == "Error"
    assert "cross-origin navigation" in late.outcome.response["errorText"]


def test_crash_fails_grace_after_the_crash() -> None:
    inv = replay("crash")
    crash = first("crash", "Inspector.targetCrashed")
    assert inv.outcome is not None and inv.outcome.kind == "page_unloaded"
    assert inv.outcome.reason == "crashed"
    assert inv.outcome.at == pytest.approx(crash["t"] + GRACE_S)


def test_recovery_commit_that_never_finishes_loading_keeps_the_crash_deadline() -> None:
    name = "crash_recovery_stalls"
    crash = first(name, "Inspector.targetCrashed")
    commit = [e for e in entries(name) if e["method"] == "Page.frameNavigated"][-1]
    assert crash["t"] < commit["t"] < crash["t"] + GRACE_S  # recovered inside the grace
    assert not [e for e in entries(name) if e["method"] == "Page.frameStoppedLoading"
                and e["t"] > commit["t"]]  # and it never stops loading
    inv = replay(name)
    assert inv.outcome is not None and inv.outcome.reason == "crashed"
    assert inv.outcome.at == pytest.approx(crash["t"] + GRACE_S)


def test_reload_during_the_dispatch_window_is_tracked() -> None:
    name = "reload_in_dispatch_window"
    started = first(name, "Page.frameStartedNavigating")
    reply = first(name, "WebMCP.invokeTool", "reply")
    assert started["t"] < reply["t"]  # the reload began before invokeTool answered
    inv = replay(name)
    assert inv.outcome is not None and inv.outcome.kind == "page_unloaded"
    assert inv.invocation_id == reply["result"]["invocationId"]
    assert inv.outcome.at < 1.0


def test_crash_during_the_dispatch_window_fails_without_a_reply() -> None:
    name = "crash_in_dispatch_window"
    assert first(name, "WebMCP.invokeTool", "no_reply")  # Chromium never answers
    inv = replay(name)
    crash = first(name, "Inspector.targetCrashed")
    assert inv.outcome is not None and inv.outcome.reason == "crashed"
    assert inv.outcome.at == pytest.approx(crash["t"] + GRACE_S)
    assert inv.invocation_id is None and not inv.started


def test_no_navigation_never_fails_early() -> None:
    for name in ("timeout", "declarative"):  # a form tool without autosubmit only fills
        inv = replay(name)
        assert inv.outcome is None and inv.deadline is None and inv.started


def test_answers_errors_and_cancel() -> None:
    assert replay("completed").outcome.status == "Completed"  # type: ignore[union-attr]
    assert replay("declarative_autosubmit").outcome.response["output"] == {  # type: ignore
        "results": ["lamp (1)"]}
    error = replay("error").outcome
    assert error is not None and error.status == "Error"
    assert "out of stock" in error.response["exception"]["description"]
    cancel = replay("cancel").outcome
    assert cancel is not None and cancel.status == "Canceled"
    refused = replay("unknown_tool").outcome
    assert refused is not None and refused.kind == "rejected" and "not found" in refused.reason


def test_answer_before_the_invoke_reply_is_matched() -> None:
    def answered_first(name: str) -> bool:
        order = [(e["kind"], e["method"]) for e in entries(name)]
        return ("event", "WebMCP.toolResponded") in order and order.index(
            ("event", "WebMCP.toolResponded")) < order.index(("reply", "WebMCP.invokeTool"))

    early = [n for n in ("completed", "declarative_autosubmit", "tool_cross_origin")
             if answered_first(n)]
    for name in early:  # Chromium often answers before invokeTool's own reply
        assert replay(name).outcome.status == "Completed"  # type: ignore[union-attr]
    inv = Invocation("echo", MAIN, "page", "page")
    inv.sent(0.0)
    inv.on_event("page", "WebMCP.toolResponded", {"invocationId": "X", "status": "Completed",
                                                  "output": 1}, 0.01)
    assert inv.outcome is None
    inv.replied({"invocationId": "X"}, 0.02)
    assert inv.outcome is not None and inv.outcome.response["output"] == 1


def test_another_clients_call_of_the_same_tool_is_not_taken_for_ours() -> None:
    inv = Invocation("echo", MAIN, "page", "page")
    inv.sent(0.0)
    theirs = {"toolName": "echo", "frameId": MAIN, "invocationId": "THEIRS"}
    inv.on_event("page", "WebMCP.toolInvoked", theirs, 0.01)
    inv.on_event("page", "WebMCP.toolResponded", {"invocationId": "THEIRS",
                                                  "status": "Completed", "output": 1}, 0.02)
    inv.replied({"invocationId": "OURS"}, 0.03)  # the reply names ours
    assert inv.outcome is None and inv.invocation_id == "OURS" and not inv.started
    inv.on_event("page", "WebMCP.toolInvoked", {**theirs, "invocationId": "OURS"}, 0.04)
    inv.on_event("page", "WebMCP.toolResponded", {"invocationId": "OURS",
                                                  "status": "Completed", "output": 2}, 0.05)
    assert inv.started and inv.outcome is not None and inv.outcome.response["output"] == 2


# -- the tool table on recorded orders ----------------------------------------------------


def table(name: str, upto: float | None = None, seed: TabTools | None = None) -> TabTools:
    tools = TabTools("page", MAIN)
    if seed is not None:  # the tools the page had when the recording started
        tools.tools = dict(seed.tools)
    for e in entries(name):
        if e["kind"] == "event" and (upto is None or e["t"] <= upto):
            tools.on_event(e["session"], e["method"], e.get("params") or {})
    return tools


def names(tools: TabTools) -> set[tuple[str, str]]:
    return {(t.session_id, t.name) for t in tools.all()}


def test_frames_same_origin_through_the_page_out_of_process_through_its_session() -> None:
    tools = table("frames")
    got = names(tools)
    assert ("page", "whoami") in got and ("page", "same_echo") in got
    child = [s for s, n in got if n == "cross_echo"]
    assert child and child[0].startswith("child:")
    assert not any(n == "denied_echo" for _s, n in got)  # no allow="tools": no tools
    main = [t for t in tools.all() if t.frame_id == MAIN]
    assert [t.name for t in main] == ["whoami"]


def test_reload_drops_a_frames_tools_until_the_new_document_registers() -> None:
    name = "external_reload"
    loaded = table(name)  # the recording starts on the loaded page: its tools come back
    commit = first(name, "Page.frameNavigated")
    before = table(name, upto=commit["t"] - 1e-9, seed=loaded)
    assert {"hang", "echo", "subscribe"} <= {t.name for t in before.all()}
    at_commit = table(name, upto=commit["t"], seed=loaded)
    assert at_commit.all() == []
    assert at_commit.gone[(MAIN, "hang")] == "its page navigated or reloaded"
    after = table(name)
    assert {"hang", "echo", "subscribe"} <= {t.name for t in after.all()}


def test_crash_drops_every_tool() -> None:
    tools = table("crash")
    assert tools.all() == []
    assert tools.gone[(MAIN, "echo")] == "the tab's renderer crashed"


def test_declarative_form_tools_and_annotations() -> None:
    tools = {t.name: t for t in table("external_reload").all()}
    assert tools["subscribe"].declarative and not tools["echo"].declarative
    assert tools["subscribe"].input_schema["required"] == ["email"]
    assert tools["echo"].annotations["read_only"] and tools["echo"].annotations[
        "untrusted_content"]
    assert tools["add_item"].annotations["consequential"]
    assert tools["search"].annotations["autosubmit"]


# -- a fake CDP server playing the recordings back ----------------------------------------


class FakeChromium:
    """Speaks just enough CDP for a Tab; on `WebMCP.invokeTool` (and later commands the
    recording made) it plays back what the real Chromium sent, on the recorded clock."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.segments = self._segments(entries(name))
        self.tools = [t for t in table("external_reload").all()]
        self.ws: Any = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.received: list[str] = []

    @staticmethod
    def _segments(items: list[dict[str, Any]]) -> dict[str, list[list[dict[str, Any]]]]:
        """Entries after each of our commands, until the next one, by command method."""
        out: dict[str, list[list[dict[str, Any]]]] = {}
        current: list[dict[str, Any]] | None = None
        for e in items:
            if e["kind"] == "send":
                current = [e]
                out.setdefault(e["method"], []).append(current)
            elif current is not None:
                current.append(e)
        return out

    async def serve(self) -> Any:
        return await websockets.serve(self._connection, "127.0.0.1", 0)

    async def _connection(self, ws: Any) -> None:
        self.ws = ws
        async for raw in ws:
            msg = json.loads(raw)
            self.received.append(msg["method"])
            await self._command(msg)

    async def _send(self, payload: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(payload))

    async def _command(self, msg: dict[str, Any]) -> None:
        method, mid = msg["method"], msg["id"]
        sid = msg.get("sessionId")
        result: dict[str, Any] = {}
        if method == "Target.createTarget":
            result = {"targetId": MAIN}
        elif method == "Target.attachToTarget":
            result = {"sessionId": "page"}
        elif method == "Page.getFrameTree":
            result = {"frameTree": {"frame": {"id": MAIN, "loaderId": "L0",
                                              "url": "http://127.0.0.1/webmcp.html"}}}
        elif method == "WebMCP.enable":  # existing tools first, then the reply
            raw = [{"name": t.name, "description": t.description, "frameId": t.frame_id,
                    **({"inputSchema": t.input_schema} if t.input_schema else {})}
                   for t in self.tools]
            await self._send({"method": "WebMCP.toolsAdded", "params": {"tools": raw},
                              "sessionId": sid})
        elif self.segments.get(method):
            segment = self.segments[method].pop(0)
            task = asyncio.get_running_loop().create_task(self._play(segment, mid))
            self.tasks.add(task)
            return
        await self._send({"id": mid, "result": result, **({"sessionId": sid} if sid else {})})

    async def _play(self, segment: list[dict[str, Any]], mid: int) -> None:
        loop = asyncio.get_running_loop()
        start, t0 = loop.time(), segment[0]["t"]
        sent = segment[0]["method"]
        for e in segment[1:]:
            await asyncio.sleep(max(0.0, start + e["t"] - t0 - loop.time()))
            if e["kind"] == "event":
                await self._send({"method": e["method"], "params": e.get("params") or {},
                                  "sessionId": e["session"]})
            elif e["kind"] == "reply" and e["method"] == sent:
                await self._send({"id": mid, "result": e.get("result") or {},
                                  "sessionId": "page"})
            elif e["kind"] == "reply_error" and e["method"] == sent:
                await self._send({"id": mid, "error": e["error"], "sessionId": "page"})
            # no_reply: Chromium never answered; neither do we


@dataclass
class Played:
    fake: FakeChromium
    tab: Tab
    call: Call
    link: CdpLink
    server: Any

    async def stop(self) -> None:
        self.call.close()
        for task in self.fake.tasks:  # playback still scheduled: stop it before the socket
            task.cancel()
        await asyncio.gather(*self.fake.tasks, return_exceptions=True)
        await self.link.close()
        self.server.close()


async def play(name: str, tool: str) -> Played:
    fake = FakeChromium(name)
    server = await fake.serve()
    port = server.sockets[0].getsockname()[1]
    link = await CdpLink.connect(f"ws://127.0.0.1:{port}/devtools/browser/fake")
    handle = await link.create_tab()
    tab = Tab(link, "t1", handle)
    await tab.start()
    found = next(t for t in tab.webmcp.all() if t.name == tool)
    call = Call(tab, found, {})
    call.start(reply_timeout=10)
    return Played(fake, tab, call, link, server)


@pytest.mark.parametrize("name", ["external_reload", "script_reload",
                                  "reload_in_dispatch_window"])
async def test_fake_cdp_reload_fails_fast(name: str) -> None:
    p = await play(name, "hang")
    try:
        outcome = await asyncio.wait_for(p.call.wait(), 5)
        took = outcome.at - p.call.machine.sent_at  # type: ignore[operator]
        assert outcome.kind == "page_unloaded" and outcome.reason == "navigated"
        stopped_at, what = p.call.machine.log[-2]
        assert what == "the replacement document stopped loading"
        assert took - stopped_at == pytest.approx(GRACE_S, abs=0.15)
        assert p.call.machine.invocation_id is not None
        assert took < 1.5  # the call's timeout would be 60 s
    finally:
        await p.stop()


async def test_fake_cdp_tool_reload_completes_and_ignores_the_duplicate() -> None:
    p = await play("tool_reload", "reload_self")
    try:
        outcome = await asyncio.wait_for(p.call.wait(), 5)
        assert outcome.status == "Completed"
        assert outcome.response["output"] == {"reloading": True}
        # Chromium's second answer comes with the new document's load; it changes nothing.
        await p.tab.until(lambda: p.call.machine.ignored_responses == 1, 5)
        assert p.call.machine.outcome is outcome
    finally:
        await p.stop()


@pytest.mark.parametrize("name", ["crash", "crash_recovery_stalls", "crash_in_dispatch_window"])
async def test_fake_cdp_crash_fails_grace_after_the_crash(name: str) -> None:
    p = await play(name, "hang")
    try:
        outcome = await asyncio.wait_for(p.call.wait(), 5)
        assert outcome.kind == "page_unloaded" and outcome.reason == "crashed"
        crashed_at = p.call.machine.crashed_at
        assert crashed_at is not None and outcome.at - crashed_at == pytest.approx(
            GRACE_S, abs=0.05)
        assert p.tab.crashed or name == "crash_recovery_stalls"  # that one recovered
    finally:
        await p.stop()


async def test_fake_cdp_deadline_then_cancel_invocation() -> None:
    p = await play("cancel", "hang")
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(p.call.wait(), 0.5)  # the operation's deadline, in small
        outcome = await p.call.cancel(1.5)  # the compensation
        assert "WebMCP.cancelInvocation" in p.fake.received and p.call.cancel_sent
        assert outcome is not None and outcome.status == "Canceled"
        assert p.call.machine.started
    finally:
        await p.stop()


async def test_fake_cdp_no_navigation_waits_for_the_deadline() -> None:
    p = await play("timeout", "hang")
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(p.call.wait(), 1.0)
        assert p.call.machine.outcome is None and p.call.machine.started
    finally:
        await p.stop()
