"""Client weight: `eval 1+1` through the Python AsyncClient vs raw CDP, same tabs, same run.

One daemon, 20 sessions, each with one tab on a local page. Per round:
  * client  20 tasks at once, each 50 `await client.eval("1+1", session=...)` in a row,
            through one `AsyncClient` (the Unix socket);
  * raw     20 tasks at once, each 50 `Runtime.evaluate` (the eval tool's parameters) on
            the same 20 tabs, over one CDP WebSocket of our own (flattened sessions).
Rounds alternate (raw, client, raw, client) after a warm-up of each. Printed: ops/s, p50
and p99 latency, and CPU per op of this process (the client side) and of the daemon
(`/proc/PID/stat`, utime + stime).
Targets: client ops/s >= 0.15 x raw ops/s; client CPU per op <= 0.5 ms.

    .venv/bin/python bench/async_client.py [SESSIONS] [CALLS]   # defaults 20 50
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import common
from raw_cdp import RawCdp

from browserskill import AsyncClient

SESSIONS, CALLS, ROUNDS = 20, 50, 2
EVALUATE = {"expression": "1+1", "awaitPromise": True, "replMode": True, "userGesture": True,
            "objectGroup": "bsk-eval"}  # what browserskill/tools/evaluate.py sends
TICK = os.sysconf("SC_CLK_TCK")


def daemon_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


class Run:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.wall = 0.0
        self.cpu = 0.0
        self.daemon_cpu = 0.0
        self.ops = 0
        self.by_process: dict[str, float] = {}  # CPU s of each kind of process (`by_kind`)

    def add(self, other: Run) -> None:
        self.latencies += other.latencies
        self.wall += other.wall
        self.cpu += other.cpu
        self.daemon_cpu += other.daemon_cpu
        self.ops += other.ops
        for kind, cpu in other.by_process.items():
            self.by_process[kind] = self.by_process.get(kind, 0.0) + cpu

    def per_process(self) -> str:
        """Each kind of process's CPU per op, biggest first, and the machine's total."""
        kinds = sorted(self.by_process.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k} {1000 * v / self.ops:.3f}" for k, v in kinds if v > 0)
        return (f"CPU ms per op by process: {shown}; all "
                f"{1000 * sum(self.by_process.values()) / self.ops:.3f}")


def by_kind() -> dict[int, tuple[str, float]]:
    """Every process's CPU s so far, with its kind: the daemon, the keeper, Chromium's by
    `--type` (the browser process has none), or other (this process and anything else)."""
    out = {}
    for pid, (_, cpu, cmd) in common.processes().items():
        if "browserskill.browser.keeper" in cmd:
            kind = "keeper"
        elif "browserskill.api" in cmd or "browserskill.daemon" in cmd:
            kind = "daemon"
        elif "chrom" in cmd:
            kind = "chromium " + (cmd.split("--type=")[1].split()[0] if "--type=" in cmd
                                  else "browser")
        else:
            kind = "other"
        out[pid] = (kind, cpu)
    return out


async def timed(pid: int, one: Any, keys: list[Any], calls: int,
                by_process: bool = False) -> Run:
    run = Run()
    before = by_kind() if by_process else {}

    async def worker(key: Any) -> None:
        for _ in range(calls):
            t0 = time.perf_counter()
            await one(key)
            run.latencies.append(1000 * (time.perf_counter() - t0))

    cpu0, d0, t0 = time.process_time(), daemon_cpu_s(pid), time.perf_counter()
    await asyncio.gather(*(worker(k) for k in keys))
    run.wall = time.perf_counter() - t0
    run.cpu, run.daemon_cpu = time.process_time() - cpu0, daemon_cpu_s(pid) - d0
    run.ops = len(keys) * calls
    if by_process:
        for pid_, (kind, cpu) in by_kind().items():
            run.by_process[kind] = (run.by_process.get(kind, 0.0) + cpu
                                    - before.get(pid_, (kind, 0.0))[1])
    return run


async def open_sessions(client: AsyncClient, url: str, sessions: int,
                        prefix: str = "bench") -> tuple[list[str], list[str], str]:
    """SESSIONS sessions, each with one tab on `url`: their ids, their tabs' target ids,
    and the browser's DevTools endpoint (for raw CDP on the same tabs)."""
    sids = [f"{prefix}{i}" for i in range(sessions)]
    targets = []
    for sid in sids:
        await client.session_start(sid, use=False)
        await client.call("open", {"url": url}, session=sid)
        tabs = (await client.call("tab_list", session=sid)).result["tabs"]
        targets.append(tabs[0]["target_id"])
    return sids, targets, (await client.status())["browser"]["cdp_endpoint"]


async def measure(pid: int, sock: str, url: str, sessions: int,
                  calls: int, by_process: bool = False) -> tuple[Run, Run]:
    async with AsyncClient(sock) as client:
        sids, targets, endpoint = await open_sessions(client, url, sessions)
        async with RawCdp(endpoint) as cdp:
            cdp_sessions = [await cdp.attach(t) for t in targets]

            async def via_client(sid: str) -> None:
                answer = await client.call("eval", {"expression": "1+1"}, session=sid)
                assert answer.result["value"] == 2, answer

            async def raw(session_id: str) -> None:
                answer = await cdp.send("Runtime.evaluate", EVALUATE, session_id)
                assert answer["result"]["value"] == 2, answer

            await timed(pid, via_client, sids, 5)  # warm-up
            await timed(pid, raw, cdp_sessions, 5)
            totals = (Run(), Run())
            for _ in range(ROUNDS):
                totals[1].add(await timed(pid, raw, cdp_sessions, calls, by_process))
                totals[0].add(await timed(pid, via_client, sids, calls, by_process))
        for sid in sids:
            await client.session_stop(sid)
    return totals


def line(name: str, run: Run) -> str:
    lat = run.latencies
    return (f"  {name:<8} {run.ops / run.wall:8.0f} ops/s   p50 {common.median(lat):6.2f} ms"
            f"   p99 {common.quantile(lat, 0.99):6.2f} ms   CPU/op: this process "
            f"{1000 * run.cpu / run.ops:.3f} ms, daemon {1000 * run.daemon_cpu / run.ops:.3f} ms"
            f"  (n={run.ops})")


def main(sessions: int = SESSIONS, calls: int = CALLS) -> int:
    common.exit_on_sigterm()
    common.header(f"Client weight: {sessions} sessions x {calls} eval 1+1, AsyncClient vs "
                  "raw CDP Runtime.evaluate (same tabs)")
    # Raw CDP needs the browser's DevTools endpoint: where the embedded browser is
    # reached over a private pipe, BSK_EXPOSE_CDP=0 opens it on a free port (opt-in).
    os.environ.setdefault("BSK_EXPOSE_CDP", "0")
    with common.page_server() as url, common.BskDaemon() as bsk:
        assert bsk.pid is not None
        client, raw = asyncio.run(measure(bsk.pid, bsk.socket, url, sessions, calls))
    print(line("client", client))
    print(line("raw CDP", raw))
    ratio = (client.ops / client.wall) / (raw.ops / raw.wall)
    print(f"  client / raw throughput: {ratio:.3f}x")
    ok = common.verdict("client CPU per op", 1000 * client.cpu / client.ops, 0.5)
    ok_ratio = ratio >= 0.15
    print(f"  target client/raw ops/s: {ratio:.3f} >= 0.150  {'PASS' if ok_ratio else 'FAIL'}")
    return 0 if ok and ok_ratio else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:3]))
