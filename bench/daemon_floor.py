"""How far the daemon's CPU per operation is from the floor of any CPython daemon.

bench/async_client.py's load (SESSIONS sessions x CALLS `eval 1+1` through one
AsyncClient, and raw CDP `Runtime.evaluate` on the same tabs) run against three things
in one run, alternated round by round: the bsk daemon; bench/floor_proxy.py, a process
that does only what no daemon can skip (read the HTTP request, send one CDP command,
answer; no queue, journal, deadline or validation) on the same stack (uvloop, orjson,
`websockets`); raw CDP from this process; and raw CDP paced to the daemon's rate in
that round (the browser's CPU per call grows as its rate falls: fewer calls share each
wake-up). Printed: each one's ops/s and CPU per call (the daemon's and the floor's
process, by /proc; the whole machine's, by /proc/stat), and the ratios issue 23's target
is stated in (daemon CPU ≤ 0.35 ms an operation; ≥ 0.5x raw CDP's throughput).

    .venv/bin/python bench/daemon_floor.py [SESSIONS] [CALLS] [ROUNDS]   # defaults 20 50 3
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
from async_client import EVALUATE, Run, line, open_sessions, timed
from raw_cdp import RawCdp

from browserskill import AsyncClient

PROXY = Path(__file__).with_name("floor_proxy.py")
TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu_s() -> float:
    """CPU time the whole machine spent, every process (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / TICK


async def measure(pid: int, sock: str, url: str, sessions: int, calls: int,
                  rounds: int) -> dict[str, tuple[Run, float]]:
    async with AsyncClient(sock) as client:
        sids, targets, endpoint = await open_sessions(client, url, sessions, "floor")
        floor_sock = os.path.join(tempfile.mkdtemp(prefix="bsk-floor-"), "floor.sock")
        proxy = subprocess.Popen(
            [sys.executable, str(PROXY), floor_sock, endpoint,
             *(f"{s}={t}" for s, t in zip(sids, targets, strict=True))],
            stdout=subprocess.PIPE, text=True)
        try:
            assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
            async with AsyncClient(floor_sock, autostart=False) as floor, \
                    RawCdp(endpoint) as cdp:
                cdp_sessions = [await cdp.attach(t) for t in targets]

                async def via(c: AsyncClient, sid: str) -> None:
                    answer = await c.call("eval", {"expression": "1+1"}, session=sid)
                    assert answer.result is not None and answer.result["value"] == 2, answer

                async def daemon(sid: str) -> None:
                    await via(client, sid)

                async def floor_call(sid: str) -> None:
                    await via(floor, sid)

                async def raw(session_id: str) -> None:
                    answer = await cdp.send("Runtime.evaluate", EVALUATE, session_id)
                    assert answer["result"]["value"] == 2, answer

                # Raw CDP held to the daemon's rate (each worker one call per `period`):
                # what the browser's own CPU per call is at that rate.
                period = [0.0]

                async def paced(session_id: str) -> None:
                    start = time.perf_counter()
                    await raw(session_id)
                    await asyncio.sleep(max(0.0, period[0] - (time.perf_counter() - start)))

                kinds = {"bsk daemon": (pid, daemon, sids),
                         "floor": (proxy.pid, floor_call, sids),
                         "raw CDP": (pid, raw, cdp_sessions),
                         "raw paced": (pid, paced, cdp_sessions)}
                totals = {name: (Run(), 0.0) for name in kinds}
                for who, one, keys in kinds.values():  # warm-up
                    await timed(who, one, keys, 5)
                for _ in range(rounds):
                    for name, (who, one, keys) in kinds.items():
                        before = machine_cpu_s()
                        run = await timed(who, one, keys, calls)
                        if name == "bsk daemon":  # the pace for this round's paced raw
                            period[0] = len(keys) * run.wall / run.ops
                        totals[name][0].add(run)
                        totals[name] = (totals[name][0],
                                        totals[name][1] + machine_cpu_s() - before)
        finally:
            proxy.terminate()
            proxy.wait(30)
        for sid in sids:
            await client.session_stop(sid)
    return totals


def main(sessions: int = 20, calls: int = 50, rounds: int = 3) -> int:
    common.exit_on_sigterm()
    common.header(f"Daemon CPU against a CPython floor: {sessions} sessions x {calls} "
                  f"eval 1+1, {rounds} rounds alternated")
    os.environ.setdefault("BSK_EXPOSE_CDP", "0")
    with common.page_server() as url, common.BskDaemon() as bsk:
        assert bsk.pid is not None
        totals = asyncio.run(measure(bsk.pid, bsk.socket, url, sessions, calls, rounds))
    raw = totals["raw CDP"][0]
    raw_rate = raw.ops / raw.wall
    for name, (run, _) in totals.items():
        print(line(name, run))
    for name, (run, machine) in totals.items():
        print(f"  {name:<10} machine CPU/op {1000 * machine / run.ops:.3f} ms (every "
              f"process: client, server, browser)   throughput / raw CDP "
              f"{run.ops / run.wall / raw_rate:.3f}x")
    bsk_cpu = totals["bsk daemon"][0].daemon_cpu / totals["bsk daemon"][0].ops
    floor_cpu = totals["floor"][0].daemon_cpu / totals["floor"][0].ops
    print(f"  the daemon over the floor: {bsk_cpu / floor_cpu:.2f}x the CPU per call; "
          f"the floor alone is {100 * 1000 * floor_cpu / 0.35:.0f}% of the 0.35 ms target")
    return 0


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:4]))
