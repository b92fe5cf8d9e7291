"""Daemon overhead: `eval 1+1` through the HTTP API vs the same CDP call over a raw WebSocket.

One run, alternating, N each, on the same Chromium:
  * api     POST /v1/sessions/default/tools/eval over the Unix socket (one keep-alive
            connection); the eval tool sends Runtime.evaluate + Runtime.releaseObjectGroup;
  * raw1    Runtime.evaluate alone (same params) on a page target of our own, attached
            with Target.attachToTarget {flatten: true} over our own browser WebSocket;
  * raw2    Runtime.evaluate + Runtime.releaseObjectGroup, like for like with the tool.
Target: api median - raw2 median <= 2 ms.

    .venv/bin/python bench/daemon_overhead.py [N]
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import common
from websockets.asyncio.client import connect

N, WARMUP = 300, 30
GROUP = "bsk-eval"
EVALUATE = {"expression": "1+1", "awaitPromise": True, "replMode": True, "userGesture": True,
            "objectGroup": GROUP}  # what browserskill/tools/evaluate.py sends


class Http:
    """HTTP/1.1 over the daemon's Unix socket, one keep-alive connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        payload = json.dumps(body).encode() if body is not None else b""
        self.writer.write(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(payload)}"
                          f"\r\n\r\n".encode() + payload)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
        answer = json.loads(await self.reader.readexactly(length))
        if not head.startswith("http/1.1 2"):
            raise RuntimeError(f"{method} {path}: {answer}")
        return answer


class Cdp:
    """A bare CDP client: send, then read until our reply (events are skipped)."""

    def __init__(self, ws: Any) -> None:
        self.ws, self.next_id = ws, 0

    async def send(self, method: str, params: dict[str, Any] | None = None,
                   session_id: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session_id:
            msg["sessionId"] = session_id
        await self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]


async def measure(n: int, sock: str, url: str) -> dict[str, list[float]]:
    reader, writer = await asyncio.open_unix_connection(sock)
    api = Http(reader, writer)
    await api.call("POST", "/v1/sessions/default/tools/open", {"url": url})
    endpoint = (await api.call("GET", "/v1/status"))["browser"]["cdp_endpoint"]
    async with connect(endpoint, max_size=None, ping_interval=None, compression=None) as ws:
        cdp = Cdp(ws)
        target = (await cdp.send("Target.createTarget", {"url": url}))["targetId"]
        try:
            sid = (await cdp.send("Target.attachToTarget",
                                  {"targetId": target, "flatten": True}))["sessionId"]

            async def via_api() -> None:
                answer = await api.call("POST", "/v1/sessions/default/tools/eval",
                                        {"expression": "1+1"})
                assert answer["result"]["value"] == 2, answer

            async def raw1() -> None:
                answer = await cdp.send("Runtime.evaluate", EVALUATE, sid)
                assert answer["result"]["value"] == 2, answer

            async def raw2() -> None:
                await raw1()
                await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": GROUP}, sid)

            kinds: dict[str, Callable[[], Awaitable[None]]] = {
                "api": via_api, "raw1": raw1, "raw2": raw2}
            samples: dict[str, list[float]] = {k: [] for k in kinds}
            names = list(kinds)
            for i in range(WARMUP + n):
                shift = i % len(names)  # rotate the order so no kind always goes first
                for name in names[shift:] + names[:shift]:
                    t0 = time.perf_counter()
                    await kinds[name]()
                    if i >= WARMUP:
                        samples[name].append(1000 * (time.perf_counter() - t0))
            return samples
        finally:
            await cdp.send("Target.closeTarget", {"targetId": target})
            writer.close()


def main(n: int = N) -> int:
    common.exit_on_sigterm()
    common.header("Daemon overhead: eval 1+1 via HTTP API vs raw CDP (same browser)")
    with common.page_server() as url, common.BskDaemon(expose_cdp=True) as bsk:
        s = asyncio.run(measure(n, bsk.socket, url))
    print(common.describe("api  POST /tools/eval (keep-alive)", s["api"], digits=2))
    print(common.describe("raw1 Runtime.evaluate", s["raw1"], digits=2))
    print(common.describe("raw2 evaluate + releaseObjectGroup", s["raw2"], digits=2))
    api = common.median(s["api"])
    added1, added2 = api - common.median(s["raw1"]), api - common.median(s["raw2"])
    print(f"  added by the daemon at the median: {added2:.2f} ms vs raw2 (like for like), "
          f"{added1:.2f} ms vs raw1")
    low = common.quantile(s["api"], 0.1) - common.quantile(s["raw2"], 0.1)
    print(f"  (at p10, less sensitive to machine load: {low:.2f} ms vs raw2)")
    ok = common.verdict("added ms (api - raw2 median)", added2, 2)
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:2]))
