"""What the Unix listener's HTTP protocol costs a tool call, alone: the CPU per request
from bytes received to the answer written, with a handler that answers at once.

The daemon's own listener (api/listeners.py: uvicorn's httptools protocol, bounded, with
the hot route's cycle, api/hot_route.py) is fed the same keep-alive `POST
/v1/sessions/{sid}/tools/eval` N times on a transport that only counts writes, on
uvloop; then, alternated in the same run, the least any protocol does (`Least`: find the
head's end, read Content-Length, start a task for the handler, write the answer: no
limits, no keep-alive rules, no pipelining). The event loop's two turns a request takes
with no protocol at all are subtracted from both. The difference is the most a protocol
of the daemon's own could save a call (issue 23: a whole call costs ~0.35-0.45 ms).

    .venv/bin/python bench/listener_protocol.py [N] [ROUNDS]   # defaults 20000 5
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

import common
import uvicorn
import uvloop
from uvicorn.server import ServerState

from browserskill.api import listeners
from browserskill.api.wire import Answer, Headers
from browserskill.base.admission import Admission

BODY = b'{"expression":"1+1","timeout_ms":30000}'
REQUEST = (b"POST /v1/sessions/bench0/tools/eval HTTP/1.1\r\nhost: localhost\r\n"
           b"content-type: application/json\r\nuser-agent: bsk-client\r\n"
           b"content-length: %d\r\n\r\n%s" % (len(BODY), BODY))
ANSWER = Answer(200, {}, b'{"op_id":"op_000000000000","status":"completed",'
                         b'"result":{"value":2}}')


class AnswerAtOnce:
    """The tool calls' side (api/app.py's), reading the body and answering at once."""

    async def tool_call(self, sid: str, tool: str, headers: Headers, read: Any,
                        lost: asyncio.Future[None]) -> Answer:
        await read()
        return ANSWER

    async def cli_call(self, *args: Any) -> None:
        raise NotImplementedError


class CountingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.closing = False
        self.first = b""

    def write(self, data: Any) -> None:
        self.writes += 1
        self.first = self.first or bytes(data)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": "bsk.sock", "peername": ""}.get(name, default)

    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def set_write_buffer_limits(self, high: int | None = None,
                                low: int | None = None) -> None: ...


LOST: Any = None  # no connection is lost here


class Least(asyncio.Protocol):
    """The least a protocol can do for this request: a lower bound, not a server."""

    calls = AnswerAtOnce()

    def connection_made(self, transport: Any) -> None:
        self.transport, self.buffer = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head, end, rest = self.buffer.partition(b"\r\n\r\n")
        if not end:
            return
        lines = head.split(b"\r\n")
        length = next(int(line[15:]) for line in lines if line[:15].lower() == b"content-length:")
        if len(rest) < length:
            return
        body, self.buffer = rest[:length], rest[length:]
        path = lines[0].split(b" ")[1].split(b"/")
        asyncio.get_running_loop().create_task(self.serve(path[3].decode(), path[5].decode(),
                                                          body))

    async def serve(self, sid: str, tool: str, body: bytes) -> None:
        async def read() -> bytes:
            return body
        answer = await self.calls.tool_call(sid, tool, (), read, LOST)
        self.transport.write(b"HTTP/1.1 %d OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s"
                             % (answer.status, len(answer.body), answer.body))


def listener() -> asyncio.Protocol:
    protocol_class = listeners.bounded_protocol(Admission("bench", 100), AnswerAtOnce())
    config = uvicorn.Config(AnswerAtOnce(), log_level="warning", access_log=False,
                            lifespan="off", proxy_headers=False, http=protocol_class)
    config.load()
    return protocol_class(config=config, server_state=ServerState(), app_state={})


async def per_request_us(make: Any, n: int) -> float:
    protocol = make()
    transport = CountingTransport()
    protocol.connection_made(transport)
    for _ in range(500):  # warm
        protocol.data_received(REQUEST)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    served = transport.writes
    t0 = time.process_time()
    for _ in range(n):
        protocol.data_received(REQUEST)
        await asyncio.sleep(0)  # the request's task runs its handler
        await asyncio.sleep(0)  # and its answer is written
    t1 = time.process_time()
    for _ in range(n):
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    t2 = time.process_time()
    if transport.writes - served != n or not transport.first.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"{transport.writes - served} answers for {n} requests, the "
                           f"first {transport.first[:40]!r}")  # not the route measured
    return ((t1 - t0) - (t2 - t1)) / n * 1e6


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 20000
    rounds = int(argv[1]) if len(argv) > 1 else 5
    kinds = {"the daemon's listener (hot route)": listener, "the least a protocol does": Least}
    figures: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(rounds):
        for kind, make in kinds.items():
            figures[kind].append(uvloop.run(per_request_us(make, n)))
    for kind, got in figures.items():
        print(f"{kind:36s} {statistics.median(got):5.1f} µs of CPU a request "
              f"({', '.join(f'{f:.1f}' for f in got)})")
    ours, least = (statistics.median(got) for got in figures.values())
    print(f"the most a protocol of the daemon's own could save: {ours - least:.1f} µs a call "
          f"(medians of {rounds} x {n})")
    return 0


if __name__ == "__main__":
    common.run_main(main, sys.argv[1:])
