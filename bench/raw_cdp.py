"""Raw CDP for the benches that compare bsk with the protocol itself: one WebSocket of
our own to the browser (`bsk daemon start --expose-cdp`), many commands in flight,
replies matched by id, events ignored."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from websockets.asyncio.client import connect


class RawCdp:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}

    async def __aenter__(self) -> RawCdp:
        self.ws = await connect(self.endpoint, max_size=None, ping_interval=None,
                                compression=None)
        self.reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.reader.cancel()
        await self.ws.close()

    async def _read(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            fut = self.pending.pop(msg.get("id", -1), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)

    async def send(self, method: str, params: dict[str, Any] | None = None,
                   session_id: str | None = None, timeout: float = 60) -> dict[str, Any]:
        msg_id = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = fut
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            msg["sessionId"] = session_id
        await self.ws.send(json.dumps(msg))
        reply = await asyncio.wait_for(fut, timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    async def attach(self, target_id: str) -> str:
        """A flat session on a target; its session id."""
        return str((await self.send("Target.attachToTarget",
                                    {"targetId": target_id, "flatten": True}))["sessionId"])
