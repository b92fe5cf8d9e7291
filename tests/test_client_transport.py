"""Both clients' own HTTP/1.1 (browserskill/client/http11.py): keep-alive reuse, a
connection the server closed while idle, an answer cut short, a call cancelled mid-answer,
an answer trickled past the deadline, and the real daemon over its socket and its TCP
listener. The blocking client runs in a worker thread against the same fake daemon."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from support.cli import Bsk

import browserskill.client as bc
from browserskill import AsyncClient, Client
from browserskill.base import contract
from browserskill.client.http11 import BlockingHttp11, Http11, Lost, Unreachable

Reply = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[bool]]


def ok(body: object, close: bool = False) -> bytes:
    data = json.dumps(body).encode()
    extra = b"Connection: close\r\n" if close else b""
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra
            + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


class FakeDaemon:
    """A Unix-socket server (`path` None: a loopback TCP one, at `port`) whose every
    connection is handled by `reply` (which returns False to close the connection); it
    counts connections and keeps the requests. `once`: it stops listening after its first
    connection, as a daemon that went away."""

    def __init__(self, path: Path | None, reply: Reply, once: bool = False) -> None:
        self.path, self.reply, self.once = path, reply, once
        self.connections = 0
        self.requests = 0
        self.seen: list[bytes] = []
        self.port = 0

    async def __aenter__(self) -> FakeDaemon:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            if self.once:
                self.server.close()
            try:
                while True:
                    self.seen.append(await read_request(reader))
                    self.requests += 1
                    if not await self.reply(reader, writer, self.requests):
                        break
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            writer.close()

        if self.path is None:
            self.server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = self.server.sockets[0].getsockname()[1]
        else:
            self.server = await asyncio.start_unix_server(handle, str(self.path))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
def sock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("h11") / "s.sock"


async def test_keep_alive_reuses_one_connection(sock: Path) -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(ok({"n": n}))
        return True

    async with FakeDaemon(sock, reply) as fake:
        http = Http11(socket=str(sock))
        answers = [await http.request("GET", "/v1/health") for _ in range(5)]
        await http.aclose()
    assert [a[2]["n"] for a in answers] == [1, 2, 3, 4, 5]
    assert answers[0][0] == 200 and answers[0][1]["content-type"] == "application/json"
    assert fake.connections == 1


async def test_a_connection_closed_by_the_server_is_not_reused(sock: Path) -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(ok({"n": n}, close=n == 1))  # the first answer says Connection: close
        return n != 1

    async with FakeDaemon(sock, reply) as fake:
        http = Http11(socket=str(sock))
        first = await http.request("GET", "/a")
        second = await http.request("GET", "/b")
        await http.aclose()
    assert (first[2], second[2]) == ({"n": 1}, {"n": 2})
    assert fake.connections == 2


async def test_a_stale_connection_that_closes_on_reuse_is_retried_once(sock: Path) -> None:
    """The server hangs up without a word as the pooled connection is reused (its idle
    timeout struck as the request went out): the request goes again on a new one."""
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        if n == 2:
            return False  # read the request, answer nothing, close
        w.write(ok({"n": n}))
        return True

    async with FakeDaemon(sock, reply) as fake:
        http = Http11(socket=str(sock))
        await http.request("GET", "/a")
        again = await http.request("POST", "/b", {"x": 1})
        await http.aclose()
    assert again[2] == {"n": 3} and fake.connections == 2


async def test_an_answer_cut_short_is_lost_not_retried(sock: Path) -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(ok({"n": n})[:-3])  # the body ends early, then the connection closes
        return False

    async with FakeDaemon(sock, reply) as fake:
        http = Http11(socket=str(sock))
        with pytest.raises(Lost):
            await http.request("POST", "/v1/sessions/s/tools/click", {"ref": "e1"})
        await http.aclose()
    assert fake.requests == 1  # an effect may have happened: never sent twice


async def test_a_call_cancelled_mid_answer_leaves_no_half_read_connection(sock: Path) -> None:
    sent_head = asyncio.Event()

    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        if n == 1:  # the head only; the body never comes
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
            sent_head.set()
            await asyncio.Event().wait()
        w.write(ok({"n": n}))
        return True

    async with FakeDaemon(sock, reply) as fake:
        http = Http11(socket=str(sock))
        call = asyncio.create_task(http.request("GET", "/slow"))
        await sent_head.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert (await http.request("GET", "/next"))[2] == {"n": 2}
        await http.aclose()
    assert fake.connections == 2  # the cancelled call's connection was not reused


async def test_nobody_listening_is_unreachable(sock: Path) -> None:
    with pytest.raises(Unreachable):
        await Http11(socket=str(sock)).request("GET", "/v1/health")


# -- the blocking client's (Client), in a worker thread ---------------------------------------


def blocking(sock: Path, *calls: Callable[[Client], object]) -> Awaitable[list[object]]:
    """Run `calls` in turn on one Client of the fake daemon at `sock`, off the loop."""
    def run() -> list[object]:
        with Client(socket=sock, autostart=False, retries=0) as c:
            return [call(c) for call in calls]

    return asyncio.to_thread(run)


async def test_the_blocking_client_keeps_one_connection_alive(sock: Path) -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(ok({"n": n}, close=n == 3))  # the third answer says Connection: close
        return n != 3

    async with FakeDaemon(sock, reply) as fake:
        answers = await blocking(sock, *[Client.health] * 5)
    assert [a["n"] for a in answers] == [1, 2, 3, 4, 5]  # type: ignore[index]
    assert fake.connections == 2


async def test_the_blocking_client_retries_a_stale_connection_once(sock: Path) -> None:
    """As the async client does: the server hangs up without a word as the pooled
    connection is reused, and the request goes again on a new one (httpx said
    "Server disconnected" and the call failed)."""
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        if n == 2:
            return False  # read the request, answer nothing, close
        w.write(ok({"n": n}))
        return True

    async with FakeDaemon(sock, reply) as fake:
        answers = await blocking(sock, Client.health, Client.health)
    assert answers == [{"n": 1}, {"n": 3}] and fake.connections == 2


async def test_a_blocking_answer_cut_short_is_lost_not_retried(sock: Path) -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(ok({"n": n})[:-3])  # the body ends early, then the connection closes
        return False

    async with FakeDaemon(sock, reply) as fake:
        http = BlockingHttp11(socket=str(sock))
        with pytest.raises(Lost):
            await asyncio.to_thread(http.request, "POST", "/v1/sessions/s/tools/click",
                                    {"ref": "e1"})
        http.close()
    assert fake.requests == 1  # an effect may have happened: never sent twice


async def test_a_daemon_gone_mid_call_is_outcome_unknown_at_once(sock: Path) -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        return False  # read the call, answer nothing, close; nobody listens any more

    async with FakeDaemon(sock, reply, once=True) as fake:
        with pytest.raises(bc.OutcomeUnknownError) as raised:
            await blocking(sock, lambda c: c.call("click", ref="e1"))
    assert raised.value.dispatched == "unknown" and raised.value.op_id
    assert fake.requests == 1


async def test_a_trickled_answer_is_lost_at_the_wire_deadline(
        sock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline is the whole exchange's (contract.wire_timeout_s), not a pause between
    two reads: a daemon that sends a byte now and then can't hold the caller past it
    (httpx's read timeout restarted at each byte and the call waited the whole answer
    out)."""
    monkeypatch.setattr(contract, "WIRE_MARGIN_S", 0.5)  # `timeout=1`: gives up at 1.5 s
    answer = ok(contract.result(op_id="op_trickled", session_id="s", tool="wait",
                                state="ended", status="completed", dispatched="yes",
                                retry_safe=True, result={}))
    head, _, body = answer.partition(b"\r\n")

    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(head + b"\r\n")
        for _ in range(600):  # 30 s of padding lines, 50 ms apart
            w.write(b"X-Pad: 1\r\n")
            await w.drain()
            await asyncio.sleep(0.05)
        w.write(body)
        return False

    async with FakeDaemon(sock, reply, once=True):
        started = time.monotonic()
        with pytest.raises(bc.OutcomeUnknownError):
            await blocking(sock, lambda c: c.call("wait", ms=10, timeout=1))
        took = time.monotonic() - started
    assert 1.5 <= took < 20, took


async def test_the_blocking_client_sends_the_bearer_token_over_tcp() -> None:
    async def reply(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> bool:
        w.write(ok({"ok": True, "version": "x"}))
        return True

    async with FakeDaemon(None, reply) as fake:
        def call() -> object:
            with Client(base_url=f"http://127.0.0.1:{fake.port}", token="s3cret") as c:
                return c.health()

        assert await asyncio.to_thread(call) == {"ok": True, "version": "x"}
    head = fake.seen[0].split(b"\r\n")
    assert head[0] == b"GET /v1/health HTTP/1.1"
    assert b"Authorization: Bearer s3cret" in head
    assert f"Host: 127.0.0.1:{fake.port}".encode() in head


async def test_both_clients_on_the_real_daemon_socket_and_tcp(make_bsk: Callable[..., Bsk],
                                                               site: str) -> None:
    runner = make_bsk(BSK_TCP_PORT="0")
    info = runner.ok("daemon", "start")
    token = (runner.home / "token").read_text().strip()
    async with AsyncClient(home=runner.home, retries=0) as via_socket, \
            AsyncClient(base_url=info["tcp"], token=token, retries=0) as via_tcp:
        for c, sid in ((via_socket, "a"), (via_tcp, "b")):
            await c.session_start(sid)
            await c.open(f"{site}/counter.html")
        # Many calls at once over the pool, on two sessions.
        values = await asyncio.gather(*(c.eval(f"{i} * 2", wait=True)
                                        for i in range(10) for c in (via_socket, via_tcp)))
        assert sorted(v.value for v in values) == sorted(2 * i for i in range(10)
                                                         for _ in range(2))
        with pytest.raises(bc.RefNotFoundError):
            await via_tcp.click("e999")
    async with AsyncClient(base_url=info["tcp"], token="wrong", retries=0) as bad:
        with pytest.raises(bc.BrowserSkillError):
            await bad.health()

    def blocking_calls() -> None:
        with Client(home=runner.home, retries=0) as via_socket, \
                Client(base_url=info["tcp"], token=token, retries=0) as via_tcp:
            for c, sid in ((via_socket, "a"), (via_tcp, "b")):
                c.session_id = sid
                assert [c.eval(f"{i} * 3").value for i in range(5)] == [0, 3, 6, 9, 12]
            with pytest.raises(bc.RefNotFoundError):
                via_socket.click("e999")
            assert via_tcp.op_list(limit=3)[0].tool == "eval"
        with Client(base_url=info["tcp"], token="wrong", retries=0) as bad:
            with pytest.raises(bc.BrowserSkillError):
                bad.health()

    await asyncio.to_thread(blocking_calls)
