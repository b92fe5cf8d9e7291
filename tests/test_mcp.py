"""`bsk mcp` driven over stdio by the official MCP SDK's client: tools from the catalog,
results in the result shape, errors as tool errors, images, cancellation."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
from typing import Any

from support.cli import Bsk
from support.mcp import mcp_session as mcp
from support.pages import ref_of
from support.wait import wait_until

from browserskill import client as bc
from browserskill.base import catalog


def structured(result: Any) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def test_tools_come_from_the_catalog(bsk: Bsk) -> None:
    async with mcp(bsk) as session:
        core = {t.name: t for t in (await session.list_tools()).tools}
    async with mcp(bsk, "--caps", "all") as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    # By default the core group; every tool (and op_show/op_cancel) with --caps all.
    assert set(core) == set(catalog.CAPABILITIES["core"])
    expected = {t.name for t in catalog.TOOLS} - {"session_stop"} | {"op_show", "op_cancel"}
    assert set(listed) == expected
    click = listed["click"]
    spec = catalog.BY_NAME["click"]
    assert click.input_schema["required"] == [p.name for p in spec.params if p.required]
    assert set(click.input_schema["properties"]) == {p.name for p in spec.params} | {
        "wait", "timeout_ms"}
    assert click.input_schema["properties"]["button"]["enum"] == ["left", "right", "middle"]
    assert listed["snapshot"].annotations.read_only_hint is True
    assert click.annotations is None or not click.annotations.read_only_hint
    assert click.output_schema is None  # the result shape is said once, in instructions


async def test_a_tool_outside_the_connections_groups_names_its_group(bsk: Bsk) -> None:
    async with mcp(bsk, "--session", bsk.session) as session:
        answer = await session.call_tool("route_list", {})
    assert answer.is_error and structured(answer)["error"]["code"] == "invalid_params"
    assert "--caps network" in structured(answer)["error"]["hint"]


async def test_snapshot_click_and_results(bsk: Bsk, site: str) -> None:
    async with mcp(bsk, "--session", bsk.session) as session:
        opened = await session.call_tool("open", {"url": f"{site}/counter.html"})
        assert not opened.is_error and text(opened).startswith(f"{site}/counter.html")
        answer = structured(opened)
        assert (answer["status"], answer["dispatched"]) == ("completed", "yes")
        assert answer["session_id"] == bsk.session and answer["op_id"].startswith("op_")

        snap = await session.call_tool("snapshot", {"interactive": True})
        assert structured(snap)["retry_safe"] is True and not snap.is_error
        button = ref_of(text(snap), "button", "Add one")

        clicked = await session.call_tool("click", {"ref": button})
        assert not clicked.is_error and structured(clicked)["retry_safe"] is False
        counted = await session.call_tool("eval", {"expression": "window.count"})
        assert structured(counted)["result"]["value"] == 1 and text(counted) == "1"

        thrown = await session.call_tool("eval", {"expression": "throw new Error('boom')"})
        assert not thrown.is_error  # page_error: a result, not a failure
        assert structured(thrown)["error"]["code"] == "page_error" and "boom" in text(thrown)

        shot = await session.call_tool("screenshot", {})
        images = [c for c in shot.content if c.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n"
    # --session: the session was the caller's, so it outlives the connection.
    assert bsk.ok("session", "list")["sessions"]


async def test_errors_are_tool_results_with_the_outcome(bsk: Bsk, site: str) -> None:
    async with mcp(bsk, "--session", bsk.session) as session:
        await session.call_tool("open", {"url": f"{site}/counter.html"})
        missing = await session.call_tool("click", {"ref": "e999"})
        assert missing.is_error
        answer = structured(missing)
        assert answer["error"]["code"] == "ref_not_found" and answer["status"] == "failed"
        assert answer["dispatched"] == "no" and answer["retry_safe"] is True
        assert "[ref_not_found]" in text(missing) and "snapshot" in text(missing)

        bad = await session.call_tool("eval", {"expression": "1", "nope": 1})
        assert bad.is_error and structured(bad)["error"]["code"] == "invalid_params"
        assert structured(bad)["op_id"] is None

        unknown = await session.call_tool("session_stop", {})
        assert unknown.is_error and structured(unknown)["error"]["code"] == "invalid_params"

        # An id that names nothing: not found, listing what there is, advice in MCP terms.
        no_tab = await session.call_tool("tab_select", {"tab_id": "NOSUCH"})
        assert no_tab.is_error and structured(no_tab)["error"]["code"] == "tab_not_found"
        assert "[tab_not_found]" in text(no_tab) and "t1" in text(no_tab)
        hint = structured(no_tab)["error"]["hint"]
        assert "`tab_list`" in hint and "bsk" not in hint, hint


def test_a_session_that_does_not_exist_is_refused_before_serving(bsk: Bsk) -> None:
    """`--session` names a session to serve: one that isn't there is said at once (exit 3,
    with how to start it), not on every call with advice for tools MCP doesn't have."""
    run = bsk.with_session("nosuch-mcp")("mcp", as_json=False, timeout=60)
    assert run.code == 3 and run.stdout == "", run
    assert "no session 'nosuch-mcp'" in run.stderr
    assert "bsk session start nosuch-mcp" in run.stderr


async def test_one_session_per_connection(bsk: Bsk, site: str) -> None:
    async with mcp(bsk) as session:
        first = structured(await session.call_tool("open", {"url": f"{site}/counter.html"}))
        second = structured(await session.call_tool("eval", {"expression": "document.title"}))
        sid = first["session_id"]
        assert sid == second["session_id"] and sid not in (bsk.session, "default")
        # The same tab (its title is page text: marked, by default over MCP).
        assert re.fullmatch(r"<<<page-content nonce=(\w+)>>>\nCounter\n"
                            r"<<<end page-content nonce=\1>>>", second["result"]["value"])
        listed = {s["session_id"]: s for s in bsk.ok("session", "list")["sessions"]}
        assert listed[sid]["label"] == "mcp"
    # The connection ended: its session is stopped.
    wait_until(lambda: sid not in {s["session_id"] for s in
                                   bsk.ok("session", "list")["sessions"]},
               what=f"session {sid} to stop")


async def test_client_cancellation_cancels_the_operation(bsk: Bsk, site: str) -> None:
    async with mcp(bsk, "--session", bsk.session) as session:
        await session.call_tool("open", {"url": f"{site}/counter.html"})
        call = asyncio.create_task(session.call_tool(
            "eval", {"expression": "await new Promise(r => setTimeout(r, 20000))"}))

        def running() -> dict[str, Any] | None:
            ops = bsk.ok("op", "list")["ops"]
            return next((o for o in ops if o["tool"] == "eval" and o["state"] == "dispatched"),
                        None)

        op = await asyncio.to_thread(wait_until, running, 20, "the eval to be dispatched")
        call.cancel()  # the SDK sends notifications/cancelled for the request
        with contextlib.suppress(asyncio.CancelledError):
            await call

        def ended() -> dict[str, Any] | None:
            shown = bsk("op", "show", op["op_id"]).json
            return shown if shown["state"] == "ended" else None

        shown = await asyncio.to_thread(wait_until, ended, 20, "the eval to end")
        assert shown["status"] == "outcome_unknown" and shown["dispatched"] == "yes"
        with bc.Client(home=bsk.home) as c:
            timeline = c.op_get(op["op_id"]).timeline or []
        # Cancelled by request (POST /v1/ops/{id}/cancel), not by a dropped connection.
        assert ["cancel_requested", "cancel"] in [e[1:3] for e in timeline]
        # The connection goes on.
        after = await session.call_tool("eval", {"expression": "1 + 1"})
        assert structured(after)["result"]["value"] == 2


async def test_descriptions_name_mcp_parameters_not_cli_flags(bsk: Bsk) -> None:
    async with mcp(bsk, "--caps", "all") as session:
        tools = (await session.list_tools()).tools
    for tool in tools:
        texts = [tool.description or ""] + [p.get("description", "") for p in
                         tool.input_schema["properties"].values()]
        for t in texts:  # a quoted batch command is sent as written: CLI syntax
            bare = re.sub(r"(?<!\w)'[^']*'(?!\w)", "", t.replace("the CLI's --json", ""))
            assert "--" not in bare, (tool.name, t)
            assert "`bsk " not in t, (tool.name, t)
    by_name = {t.name: t for t in tools}
    assert "since" in (by_name["console"].description or "")
    assert "timeout_ms" in (by_name["wait"].description or "")
    assert 'scope="user"' in (by_name["tab_list"].description or "")


async def test_advice_in_answers_names_mcp_tools_and_parameters(bsk: Bsk, site: str) -> None:
    """bsk's own hints and notes speak MCP here (`dialog_accept`, `timeout_ms`), as the
    descriptions do; the structured answer carries the same words."""
    async with mcp(bsk, "--session", bsk.session) as session:
        await session.call_tool("open", {"url": f"{site}/counter.html"})
        waited = await session.call_tool("wait", {"text": "never on this page",
                                                  "timeout_ms": 1500})
        hint = structured(waited)["error"]["hint"]
        assert "timeout_ms" in hint and "--timeout" not in hint, hint
        assert "timeout_ms" in text(waited)
        opened = await session.call_tool("eval", {"expression": "setTimeout(() => "
                                                  "alert('hi'), 0); 1"})
        assert not opened.is_error
        snap = await session.call_tool("snapshot", {})
        answer = structured(snap)  # the page waits on its dialog: what to do says how
        note = (answer.get("result") or {}).get("note") or answer["error"]["hint"]
        assert "`dialog_accept`" in note and "`bsk dialog" not in note, note
        assert "`bsk dialog" not in str(answer["error"]["details"] if answer.get("error")
                                        else answer["result"])
        await session.call_tool("dialog_accept", {})
        # The daemon's advice reaches MCP in MCP's words, not the Python client's the
        # bridge is built on (`click()`) nor the CLI's.
        missing = structured(await session.call_tool("click", {}))
        assert missing["error"]["hint"] == "`click` needs ref", missing
        bare_wait = structured(await session.call_tool("wait", {}))
        assert bare_wait["error"]["hint"] == 'e.g. `wait` with text="Welcome"', bare_wait
        long = structured(await session.call_tool("webmcp_invoke", {
            "name": "any", "timeout_ms": 500_000}))  # its range: 1-120 s
        assert long["error"]["code"] == "invalid_params" and long["dispatched"] == "no"
        assert long["error"]["message"] == ("timeout_ms: must be 1000-120000 for "
                                            "`webmcp_invoke`, got 500000"), long


async def test_a_second_call_is_busy_unless_it_waits(bsk: Bsk, site: str) -> None:
    async with mcp(bsk, "--session", bsk.session, "--no-boundaries") as session:
        await session.call_tool("open", {"url": f"{site}/counter.html"})
        slow_js = "await new Promise(r => setTimeout(r, 3000)); 'slow'"
        slow = asyncio.ensure_future(session.call_tool("eval", {"expression": slow_js}))
        await asyncio.to_thread(
            wait_until, lambda: any(o["tool"] == "eval" and o["state"] == "dispatched"
                                    for o in bsk.ok("op", "list")["ops"]), 10,
            "the slow eval to be running")
        busy = structured(await session.call_tool("eval", {"expression": "1"}))
        assert busy["error"]["code"] == "session_busy" and busy["dispatched"] == "no"
        assert not slow.done()  # answered at once, while the first still runs
        queued = asyncio.ensure_future(session.call_tool("eval", {"expression": "2",
                                                                  "wait": True}))
        assert structured(await slow)["result"]["value"] == "slow"
        assert structured(await queued)["result"]["value"] == 2


async def test_op_show_and_op_cancel_reach_the_call_holding_the_session(
        bsk: Bsk, site: str) -> None:
    async with mcp(bsk, "--session", bsk.session) as session:
        await session.call_tool("open", {"url": f"{site}/counter.html"})
        slow = asyncio.ensure_future(session.call_tool(
            "eval", {"expression": "await new Promise(r => setTimeout(r, 20000))"}))
        await asyncio.to_thread(
            wait_until, lambda: any(o["tool"] == "eval" and o["state"] == "dispatched"
                                    for o in bsk.ok("op", "list")["ops"]), 10,
            "the slow eval to be running")
        busy = structured(await session.call_tool("eval", {"expression": "1"}))
        holder = busy["error"]["details"]["holder"]["op_id"]
        shown = await session.call_tool("op_show", {"op_id": holder})
        assert not shown.is_error and structured(shown)["state"] == "dispatched"
        assert holder in text(shown)
        cancelled = await session.call_tool("op_cancel", {"op_id": holder})
        assert not cancelled.is_error and structured(cancelled)["op_id"] == holder
        ended = structured(await slow)
        assert ended["op_id"] == holder and ended["status"] in ("cancelled", "outcome_unknown")
        missing = await session.call_tool("op_show", {"op_id": "op_nosuchop"})
        assert missing.is_error and structured(missing)["error"]["code"] == "op_not_found"


def test_a_line_that_is_no_json_rpc_message_gets_its_error_and_serving_goes_on(
        bsk: Bsk) -> None:
    """JSON-RPC 2.0: a line that is not JSON is answered -32700 (Parse error), JSON of
    another shape -32600 (Invalid Request), each with id null; the requests after them
    are answered as usual."""
    import json
    import subprocess
    import sys
    import threading

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}
    lines = ["not json {", json.dumps(init), '["a", "list"]',
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})]
    # stdin stays open until the four answers are read, as a client's does: at end of
    # input the SDK cancels the requests still in flight (its documented contract).
    server = subprocess.Popen([sys.executable, "-m", "browserskill", "mcp", "--session",
                               str(bsk.session)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=bsk.env,
                              text=True)
    watchdog = threading.Timer(60, server.kill)
    watchdog.start()
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        answers = [json.loads(server.stdout.readline() or "null") for _ in range(4)]
        server.stdin.close()
        assert server.stderr is not None
        stderr = server.stderr.read()
        server.wait(timeout=60)
    finally:
        watchdog.cancel()
        server.kill()
    assert [(a.get("id"), a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700), (1, None), (None, -32600), (2, None)], stderr[-2000:]
    assert answers[1]["result"]["serverInfo"]["name"] == "browserskill"
    assert any(t["name"] == "click" for t in answers[3]["result"]["tools"])
