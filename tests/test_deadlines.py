"""One deadline rule everywhere (contract.op_deadline_s / wire_timeout_s): the daemon, the
CLI, both Python clients and `bsk mcp` compute a call's deadline and how long to wait for
its answer the same way, so no caller gives up before the daemon answers; and a caller
that does stop waiting reports how the daemon recorded the operation's end.

The real-daemon tests shrink the rule's constants in the caller's process (a `wait`'s
default deadline of 1 s, a 1 s margin) so that "a pause longer than the default deadline
plus the margin" takes seconds, not the minutes it takes with the real ones."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from support.cli import Bsk

from browserskill.base import catalog, contract
from browserskill.client import AsyncClient, Client, Result
from browserskill.client.results import ERRORS

WAIT = catalog.BY_NAME["wait"]
LONG_PAUSE = {"ms": 110_000}  # the reproduction: longer than wait's 30 s + 30 s


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any], Any]]:
    """Every call of contract.wire_timeout_s, which answers 4321 s (no caller's own)."""
    calls: list[tuple[str, dict[str, Any], Any]] = []

    def wire_timeout_s(spec: Any, params: Any, timeout_s: Any = None) -> float:
        calls.append((spec.name if spec else "", dict(params), timeout_s))
        return 4321.0

    monkeypatch.setattr(contract, "wire_timeout_s", wire_timeout_s)
    return calls


def _answer(op_id: str | None) -> dict[str, Any]:
    return contract.result(op_id=op_id, session_id="s", tool="wait", state="ended",
                           status="completed", dispatched="yes", retry_safe=True, result={})


# -- every front end calls the one function ----------------------------------------------


def test_the_sync_client_waits_as_the_contract_says(spied: list[Any], tmp_path: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[float] = []

    def send(self: Client, req: Any) -> tuple[int, dict[str, str], Any]:
        sent.append(req.read_timeout)
        return 200, {}, _answer(req.op_id)

    monkeypatch.setattr(Client, "_send", send)
    with Client(home=tmp_path, autostart=False) as c:
        c.call("wait", LONG_PAUSE)
        c.call("wait", LONG_PAUSE, timeout=7)
    assert sent == [4321.0, 4321.0]
    assert spied == [("wait", LONG_PAUSE, None), ("wait", LONG_PAUSE, 7)]


async def test_the_async_client_and_mcp_wait_as_the_contract_says(
        spied: list[Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from browserskill.mcp_server import Bridge

    sent: list[float] = []

    async def send(self: AsyncClient, req: Any) -> tuple[int, dict[str, str], Any]:
        sent.append(req.read_timeout)
        return 200, {}, _answer(req.op_id)

    monkeypatch.setattr(AsyncClient, "_send", send)
    async with AsyncClient(home=tmp_path, autostart=False) as c:
        await c.call("wait", LONG_PAUSE)
        await Bridge(c, "s").call("wait", {**LONG_PAUSE, "timeout_ms": 9000})
    assert sent == [4321.0, 4321.0]
    assert spied == [("wait", LONG_PAUSE, None), ("wait", LONG_PAUSE, 9.0)]


def test_the_cli_waits_as_the_contract_says(spied: list[Any], tmp_path: Any,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from browserskill.cli import daemon_client
    from browserskill.cli.main import main

    sent: list[float | None] = []

    def request(sock: str, method: str, path: str, body: Any = None, *,
                timeout: float | None = None, headers: Any = None) -> Any:
        sent.append(timeout)
        return 200, {}, _answer((headers or {}).get("X-Op-Id"))

    monkeypatch.setattr(daemon_client, "request", request)
    monkeypatch.setenv("BSK_HOME", str(tmp_path))
    assert main(["wait", "--ms", "110000"]) == 0
    assert sent == [4321.0]
    [(tool, params, timeout)] = spied
    assert (tool, params["ms"], timeout) == ("wait", 110_000, None)


def test_both_clients_wait_for_an_op_as_the_contract_says(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`op_wait(timeout)` waits the contract's margin past it, read when it is called (the
    clients had each copied WIRE_MARGIN_S at import)."""
    monkeypatch.setattr(contract, "WIRE_MARGIN_S", 7.0)
    sent: list[tuple[str, float]] = []

    def send(self: Any, req: Any) -> tuple[int, dict[str, str], Any]:
        sent.append((req.path, req.read_timeout))
        return 200, {}, _answer("op_waited1")

    async def send_async(self: Any, req: Any) -> tuple[int, dict[str, str], Any]:
        return send(self, req)

    monkeypatch.setattr(Client, "_send", send)
    monkeypatch.setattr(AsyncClient, "_send", send_async)
    with Client(home=tmp_path, autostart=False) as c:
        c.op_wait("op_waited1", timeout=110)

    async def through_async() -> None:
        async with AsyncClient(home=tmp_path, autostart=False) as c:
            await c.op_wait("op_waited1", timeout=110)

    asyncio.run(through_async())
    assert sent == [("/v1/ops/op_waited1/wait?timeout_ms=110000", 117.0)] * 2


def test_the_rule_itself() -> None:
    assert contract.op_deadline_s(WAIT, LONG_PAUSE) == 115.0  # the pause plus its margin
    assert contract.op_deadline_s(WAIT, {"ms": 10}) == WAIT.default_timeout_s
    assert contract.op_deadline_s(WAIT, LONG_PAUSE, 2.0) == 2.0  # the caller's own
    assert contract.wire_timeout_s(WAIT, LONG_PAUSE) == 115.0 + contract.WIRE_MARGIN_S
    assert contract.wire_timeout_s(None, {}) == contract.DEFAULT_TIMEOUT_S + contract.WIRE_MARGIN_S


# -- against the real daemon ---------------------------------------------------------------

SHORT_RULE = ("from browserskill.base import contract; from browserskill.base import catalog; "
              "contract.WIRE_MARGIN_S = 1.0; catalog.BY_NAME['wait'] = "
              "catalog.BY_NAME['wait']._replace(default_timeout_s=1.0)")
PAUSE_MS = 3000  # longer than the shrunk default deadline plus margin (2 s)


@pytest.fixture
def short_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(contract, "WIRE_MARGIN_S", 1.0)
    monkeypatch.setitem(catalog.BY_NAME, "wait", WAIT._replace(default_timeout_s=1.0))
    yield


def test_a_long_pause_completes_through_both_clients(bsk: Bsk, short_rule: None) -> None:
    with Client(home=bsk.home, session=bsk.session, retries=0) as c:
        done = c.call("wait", ms=PAUSE_MS)
    assert done.status == "completed", done

    async def through_async() -> Result:
        async with AsyncClient(home=bsk.home, session=bsk.session, retries=0) as c:
            return await c.call("wait", ms=PAUSE_MS)

    assert asyncio.run(through_async()).status == "completed"


@contextlib.asynccontextmanager
async def mcp_with_short_rule(bsk: Bsk) -> AsyncIterator[ClientSession]:
    env = {k: v for k, v in bsk.env.items() if k.startswith("BSK_")}
    script = f"{SHORT_RULE}; from browserskill.mcp_server import main; main({bsk.session!r})"
    params = StdioServerParameters(command=sys.executable, args=["-c", script], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_a_long_pause_completes_through_mcp(bsk: Bsk) -> None:
    async with mcp_with_short_rule(bsk) as session:
        done = await session.call_tool("wait", {"ms": PAUSE_MS})
    assert done.structured_content, done
    assert done.structured_content["status"] == "completed", done.structured_content


def test_a_client_that_stops_waiting_reports_what_the_daemon_recorded(
        bsk: Bsk, monkeypatch: pytest.MonkeyPatch) -> None:
    # A margin below zero: the client stops waiting 1 s into a 4 s deadline.
    monkeypatch.setattr(contract, "WIRE_MARGIN_S", -3.0)
    with Client(home=bsk.home, session=bsk.session, retries=0) as c:
        with pytest.raises(ERRORS["cancelled"]) as raised:
            c.call("wait", ms=3000, timeout=4)
        recorded = c.op_get(raised.value.op_id or "")
    assert recorded.status == raised.value.status == "cancelled"
    assert raised.value.result is not None and raised.value.result.ended
    assert recorded.error and recorded.error.code == "cancelled"

    async def through_async() -> None:
        async with AsyncClient(home=bsk.home, session=bsk.session, retries=0) as c:
            with pytest.raises(ERRORS["cancelled"]) as raised:
                await c.call("wait", ms=3000, timeout=4)
            assert (await c.op_get(raised.value.op_id or "")).status == "cancelled"

    asyncio.run(through_async())
