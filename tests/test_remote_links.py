"""Links to remote browsers, apart from any Grid (tests/test_grid.py has the real ones):
what `--cdp-url` resolves to, and the liveness probe on a peer that goes silent.

The peers here are small fakes of what the real ones do (a WebSocket that accepts and
never answers, as a Selenium Grid's proxy does after the Grid ended the session; an HTTP
server with or without `/json/version`), in addition to the real-Grid tests.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import Bsk, Chromium, wait_until
from support.cli import kill_daemon_hard
from websockets.asyncio.server import ServerConnection, serve

from browserskill.browser import launcher
from browserskill.browser.cdp import CdpLink
from browserskill.browser.link import LinkClosed


@pytest.fixture
async def silent_peer() -> AsyncIterator[dict[str, Any]]:
    """A WebSocket that answers `Browser.getVersion` while `state["answering"]`, then
    nothing at all, its socket still open; and an HTTP `/json/version` when asked."""
    state: dict[str, Any] = {"answering": True, "json_version": False, "seen": [],
                             "delay": 0.0}

    async def answer(ws: ServerConnection, msg_id: int, delay: float) -> None:
        if delay:  # slow, but talking all along (events every 0.1 s)
            end = asyncio.get_running_loop().time() + delay
            while asyncio.get_running_loop().time() < end:
                await ws.send(json.dumps({"method": "Network.dataReceived", "params": {}}))
                await asyncio.sleep(0.1)
        await ws.send(json.dumps({"id": msg_id, "result": {"product": "Fake/1"}}))

    async def handler(ws: ServerConnection) -> None:
        state["seen"].append(ws.request.path if ws.request else None)
        async for raw in ws:
            msg = json.loads(raw)
            if state["answering"]:
                asyncio.get_running_loop().create_task(answer(ws, msg["id"], state["delay"]))

    def http(connection: ServerConnection, request: Any) -> Any:
        if "/json/version" in request.path:
            if not state["json_version"]:
                return connection.respond(404, "no such page\n")
            body = {"webSocketDebuggerUrl": "ws://browser.internal:9222/devtools/browser/x"}
            state["asked"] = request.path
            return connection.respond(200, json.dumps(body))
        return None

    async with serve(handler, "127.0.0.1", 0, process_request=http) as server:
        port = server.sockets[0].getsockname()[1]
        state["http"] = f"http://127.0.0.1:{port}"
        yield state


async def test_http_url_without_json_version_is_its_own_websocket(
        silent_peer: dict[str, Any]) -> None:
    url = silent_peer["http"] + "/session/abc/se/cdp?token=s3cret"
    ws = await launcher.resolve_cdp_url(url)
    assert ws == "ws" + url[4:]
    link = await CdpLink.connect(ws)
    assert (await link.version())["product"] == "Fake/1"
    assert silent_peer["seen"] == ["/session/abc/se/cdp?token=s3cret"]
    await link.close()


async def test_json_version_keeps_the_query_and_the_users_host(
        silent_peer: dict[str, Any]) -> None:
    silent_peer["json_version"] = True
    ws = await launcher.resolve_cdp_url(silent_peer["http"] + "/?token=s3cret")
    assert silent_peer["asked"] == "/json/version?token=s3cret"  # not …?token=…/json/version
    host = silent_peer["http"].split("//")[1]
    assert ws == f"ws://{host}/devtools/browser/x?token=s3cret"
    assert launcher.http_endpoint(ws) == silent_peer["http"]
    assert launcher.http_endpoint("ws://h:1/session/x/se/cdp") is None
    assert await launcher.resolve_cdp_url("wss://h/x?token=1") == "wss://h/x?token=1"
    with pytest.raises(launcher.LaunchError, match="must be an http"):
        await launcher.resolve_cdp_url("ftp://h:1")


async def test_probe_ends_a_silent_link_and_everything_waiting_on_it(
        silent_peer: dict[str, Any]) -> None:
    link = await CdpLink.connect("ws" + silent_peer["http"][4:] + "/devtools/browser/x")
    link.watch(every=0.2, deadline=0.5)
    await link.version()
    silent_peer["answering"] = False  # the socket stays open: only a command shows it
    started = time.monotonic()
    with pytest.raises(LinkClosed, match="stopped answering"):
        await link.send("Runtime.evaluate", {"expression": "1"}, timeout=30)
    assert time.monotonic() - started < 2.0
    assert link.closed
    started = time.monotonic()
    await link.close()  # no closing handshake to wait for
    assert time.monotonic() - started < 2.5


async def test_probe_spares_a_peer_that_is_slow_but_still_talking(
        silent_peer: dict[str, Any]) -> None:
    """Events (or a large reply) still arriving mean the peer lives: a probe answered late
    behind them does not end the link."""
    link = await CdpLink.connect("ws" + silent_peer["http"][4:] + "/devtools/browser/z")
    link.watch(every=0.2, deadline=0.5)
    silent_peer["delay"] = 1.5  # three probe deadlines, with events all along
    assert (await link.send("Browser.getVersion", timeout=10))["product"] == "Fake/1"
    assert not link.closed
    await link.close()



def test_a_restarted_daemon_readopts_a_session_on_a_remote_browser(
        fresh_bsk: Bsk, chromium: Chromium, site: str) -> None:
    """A --cdp-url session's endpoint is journaled: after `kill -9` the next daemon
    reconnects and re-adopts it (same session, same tab, the very page)."""
    fresh_bsk.ok("session", "start", "far", "--cdp-url", chromium.http_url + "?token=t")
    s = fresh_bsk.with_session("far")
    s.ok("open", f"{site}/click.html")
    s.ok("eval", "window.marker = 7")
    kill_daemon_hard(fresh_bsk.home)
    assert s.ok("eval", "window.marker")["result"]["value"] == 7
    listed = {x["session_id"]: x for x in fresh_bsk.ok("session", "list")["sessions"]}
    assert listed["far"]["placement"]["kind"] == "cdp"
    assert listed["far"]["current_tab"] == "t1"
    s.ok("session", "stop")
    # Its tab is closed in that browser; the browser itself is someone else's and lives on.
    wait_until(lambda: not any("click.html" in t["url"] for t in chromium.devtools(
        "/json/list") if t["type"] == "page"), 10, "the session's tab to close")
    assert chromium.process.poll() is None
