"""Independent sessions (issue 12): N sessions (1, 5, 20) run the same page-side workload
at once — a chain of ten 100 ms timers and a count of animation frames over one second —
through the daemon, each in its own session (a window each); and, in the same run and
browser, the same workload over raw CDP in N tabs of one shared window (how sessions were
placed before: `Target.createTarget` without `newWindow`).

Per session: timer lateness (actual / asked) and frames per second. Target: with 5 and
20 sessions, no bsk session worse than 1.2x a lone session's figures (timer ratio at most
1.2x, fps at least 1/1.2 of it).

    .venv/bin/python bench/sessions.py [N ...]      # default 1 5 20
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from common import BskDaemon, api, exit_on_sigterm, header, median, page_server, run_main
from raw_cdp import RawCdp

WORKLOAD = """(async () => {
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) await new Promise(r => setTimeout(r, 100));
  const timer_ratio = (performance.now() - t0) / 1000;
  const frames = await new Promise(r => {
    let n = 0; const end = performance.now() + 1000;
    const tick = () => { n++; if (performance.now() < end) requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    setTimeout(() => r(n), 1500);  // a hidden tab gets no frames: don't wait for ever
  });
  return {timer_ratio, fps: frames, visible: document.visibilityState};
})()"""


async def bsk_round(daemon: BskDaemon, sessions: list[str]) -> list[dict[str, Any]]:
    async def one(sid: str) -> dict[str, Any]:
        status, _, body, _ = await asyncio.to_thread(
            api, daemon.socket, "POST", f"/v1/sessions/{sid}/tools/eval",
            {"expression": WORKLOAD, "timeout_ms": 60_000})
        if status != 200 or body.get("status") != "completed":
            raise RuntimeError(f"eval in {sid}: {status} {body}")
        return body["result"]["value"]

    return list(await asyncio.gather(*(one(s) for s in sessions)))


class SharedWindow(RawCdp):
    """Tabs opened the way sessions were placed before: all in one shared window."""

    async def shared_window_tabs(self, url: str, n: int) -> list[tuple[str, str]]:
        tabs = []
        for _ in range(n):
            target = (await self.send("Target.createTarget", {"url": url}))["targetId"]
            tabs.append((target, await self.attach(target)))
        return tabs

    async def round(self, tabs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        async def one(session: str) -> dict[str, Any]:
            answer = await self.send("Runtime.evaluate", {
                "expression": WORKLOAD, "awaitPromise": True, "returnByValue": True}, session)
            return answer["result"]["value"]

        return list(await asyncio.gather(*(one(s) for _, s in tabs)))


def line(name: str, results: list[dict[str, Any]]) -> tuple[float, float]:
    ratios = [r["timer_ratio"] for r in results]
    fps = [r["fps"] for r in results]
    hidden = sum(r["visible"] != "visible" for r in results)
    print(f"  {name:<30} timer x{median(ratios):.2f} (worst x{max(ratios):.2f})  "
          f"fps {median(fps):.0f} (worst {min(fps):.0f})  hidden {hidden}/{len(results)}")
    return max(ratios), min(fps)


async def run(ns: list[int]) -> int:
    header("independent sessions: N sessions running timers and animation frames at once")
    ok = True
    with page_server() as url, BskDaemon(expose_cdp=True) as daemon:
        _, _, body, _ = api(daemon.socket, "GET", "/v1/status?connect=true")
        endpoint = body["browser"]["cdp_endpoint"]
        lone: tuple[float, float] | None = None
        async with SharedWindow(endpoint) as raw:
            for n in ns:
                sessions = [f"bench-{n}-{i}" for i in range(n)]
                for sid in sessions:
                    daemon.run("session", "start", sid)
                    daemon.run("-s", sid, "open", url)
                await bsk_round(daemon, sessions)  # warm-up
                print(f"N={n}")
                worst = line("bsk sessions (a window each)", await bsk_round(daemon, sessions))
                tabs = await raw.shared_window_tabs(url, n)
                line("raw CDP, one shared window", await raw.round(tabs))
                for target, _ in tabs:
                    await raw.send("Target.closeTarget", {"targetId": target})
                for sid in sessions:
                    daemon.run("session", "stop", sid)
                if lone is None:
                    lone = worst
                    continue
                timer_ok = worst[0] <= 1.2 * lone[0]
                fps_ok = worst[1] >= lone[1] / 1.2
                print(f"  target: worst timer x{worst[0]:.2f} <= 1.2 * lone x{lone[0]:.2f} "
                      f"{'PASS' if timer_ok else 'FAIL'}; worst fps {worst[1]:.0f} >= lone "
                      f"{lone[1]:.0f} / 1.2  {'PASS' if fps_ok else 'FAIL'}")
                ok = ok and timer_ok and fps_ok
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    exit_on_sigterm()
    ns = [int(a) for a in argv] or [1, 5, 20]
    return asyncio.run(run(ns))


if __name__ == "__main__":
    run_main(main, sys.argv[1:])
