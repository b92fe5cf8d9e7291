"""The least a Python daemon can do for an `eval` and still be one: bench/daemon_floor.py
runs this as a process of its own and measures its CPU per call under the same load as
the real daemon's.

It serves `POST /v1/sessions/{sid}/tools/eval` on a Unix socket (HTTP/1.1 keep-alive,
read by an asyncio protocol on uvloop), sends the expression to the session's tab as
one `Runtime.evaluate` over one CDP WebSocket (flattened sessions, replies matched by
id, JSON by orjson), and answers with the result shape the clients read. Nothing else:
no queue, no journal, no deadline, no validation, no operation ids that mean anything —
every promise of the contract left out, so what it costs is what any CPython daemon on
this stack pays before it keeps one.

    python bench/floor_proxy.py SOCKET CDP_ENDPOINT SID=TARGET_ID [SID=TARGET_ID …]
"""

from __future__ import annotations

import asyncio
import itertools
import sys

import orjson
import uvloop
from websockets.asyncio.client import connect

_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
         b"content-length: %d\r\n\r\n")


class Floor:
    def __init__(self, ws: object, sessions: dict[str, str]) -> None:
        self.ws = ws
        self.sessions = sessions
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, object]]] = {}

    async def read_replies(self) -> None:
        async for raw in self.ws:  # type: ignore[attr-defined]
            msg = orjson.loads(raw)
            fut = self.pending.pop(msg.get("id", -1), None)
            if fut is not None:
                fut.set_result(msg)

    async def send(self, message: dict[str, object]) -> dict[str, object]:
        msg_id = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = fut
        await self.ws.send(orjson.dumps({"id": msg_id, **message}).decode())  # type: ignore[attr-defined]
        return await fut

    async def attach(self, targets: dict[str, str]) -> None:
        for sid, target in targets.items():
            reply = await self.send({"method": "Target.attachToTarget",
                                     "params": {"targetId": target, "flatten": True}})
            self.sessions[sid] = reply["result"]["sessionId"]  # type: ignore[index]

    async def evaluate(self, sid: str, body: bytes) -> bytes:
        expression = orjson.loads(body)["expression"]
        reply = await self.send({
            "method": "Runtime.evaluate", "sessionId": self.sessions[sid],
            "params": {"expression": expression, "awaitPromise": True, "replMode": True,
                       "userGesture": True, "objectGroup": "bsk-eval"}})
        value = reply["result"]["result"].get("value")  # type: ignore[index]
        msg_id = reply["id"]
        return orjson.dumps({"op_id": f"op-{msg_id}", "session_id": sid, "tool": "eval",
                             "status": "completed", "dispatched": "yes", "retry_safe": False,
                             "result": {"value": value}, "error": None})


class Connection(asyncio.Protocol):
    def __init__(self, floor: Floor) -> None:
        self.floor = floor
        self.buffer = b""
        self.last: asyncio.Future[None] | None = None  # answers go out in request order

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            path = head.split(b" ", 2)[1].decode()
            sid = path.split("/")[3]  # /v1/sessions/{sid}/tools/eval
            self.last = asyncio.ensure_future(self.answer(sid, body, self.last))

    async def answer(self, sid: str, body: bytes, before: asyncio.Future[None] | None) -> None:
        payload = await self.floor.evaluate(sid, body)
        if before is not None:
            await before
        self.transport.write(_HEAD % len(payload) + payload)  # type: ignore[attr-defined]


async def serve(sock: str, endpoint: str, targets: dict[str, str]) -> None:
    async with connect(endpoint, max_size=None, ping_interval=None, compression=None) as ws:
        floor = Floor(ws, {})
        reader = asyncio.ensure_future(floor.read_replies())
        await floor.attach(targets)
        server = await asyncio.get_running_loop().create_unix_server(
            lambda: Connection(floor), sock)
        print("ready", flush=True)
        async with server:
            await reader


if __name__ == "__main__":
    pairs = dict(arg.split("=", 1) for arg in sys.argv[3:])
    uvloop.run(serve(sys.argv[1], sys.argv[2], pairs))
