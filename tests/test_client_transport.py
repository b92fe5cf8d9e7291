"""The AsyncClient's own HTTP/1.1 (browserskill/client/http11.py): keep-alive reuse, a
connection the server closed while idle, an answer cut short, a call cancelled mid-answer,
and the real daemon over its socket and its TCP listener."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from support.cli import Bsk

import browserskill.client as bc
from browserskill import AsyncClient
from browserskill.client.http11 import Http11, Lost, Unreachable

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
    """A Unix-socket server whose every connection is handled by `reply` (which returns
    False to close the connection); it counts connections and requests."""

    def __init__(self, path: Path, reply: Reply) -> None:
        self.path, self.reply = path, reply
        self.connections = 0
        self.requests = 0

    async def __aenter__(self) -> FakeDaemon:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                while True:
                    await read_request(reader)
                    self.requests += 1
                    if not await self.reply(reader, writer, self.requests):
                        break
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            writer.close()

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


async def test_async_client_on_the_real_daemon_socket_and_tcp(make_bsk: Callable[..., Bsk],
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
