"""Sessions on a Selenium Grid (issue 15), on a real Grid on loopback (the jar that
scripts/install.sh fetches, Debian's chromium-driver):

1. session start latency: `POST /v1/sessions` embedded vs `{"grid": URL}` (a standalone
   Grid), and the bare WebDriver `POST /session` on the same Grid, alternated (N each);
2. round trip of `Runtime.evaluate 1+1` over raw CDP: direct to a Chromium of our own vs
   through the hub's `se:cdp` proxy (a hub with two nodes), alternated (N=200); and bsk's
   `eval 1+1` over the HTTP API on an embedded session vs a grid session (N=200);
3. 8 sessions at once over that hub (two nodes, 4 slots each) doing the same page loop
   (open, snapshot, click, eval) next to 8 embedded sessions: per-iteration time.

Targets (bsk's own part; what the Grid itself costs is printed beside it): a bsk call
through the Grid adds at most 1 ms over what the raw proxy adds (grid eval - embedded
eval - (raw via hub - raw direct), medians); the 8 grid sessions are spread over both
nodes and every round of every session completes. The loop's grid/embedded ratio is a
figure, not a target: 8 browsers of their own (plus Java) against tabs of one browser,
on the same CPUs here.

    .venv/bin/python bench/grid.py [N]      # default 5 starts; ~3 min
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    BskDaemon,
    api,
    describe,
    exit_on_sigterm,
    fixture_sites,
    header,
    median,
    run_main,
    verdict,
)
from raw_cdp import RawCdp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.grid import VERSION, Grid, missing  # noqa: E402

PAGE = "/click.html"  # tests/pages, served by fixture_sites


def start_ms(daemon: BskDaemon, body: dict[str, Any]) -> tuple[float, str]:
    status, _, answer, wall = api(daemon.socket, "POST", "/v1/sessions", body)
    if status != 201:
        raise RuntimeError(f"session start {body}: {status} {answer}")
    return wall, str(answer["session_id"])


def stop(daemon: BskDaemon, sid: str) -> None:
    status, _, answer, _ = api(daemon.socket, "DELETE", f"/v1/sessions/{sid}?wait=true")
    if status != 200:
        raise RuntimeError(f"session stop {sid}: {status} {answer}")


def tool(daemon: BskDaemon, sid: str, name: str, params: dict[str, Any]) -> tuple[Any, float]:
    status, _, answer, wall = api(daemon.socket, "POST", f"/v1/sessions/{sid}/tools/{name}",
                                  params)
    if status != 200:
        raise RuntimeError(f"{name} in {sid}: {status} {answer}")
    return answer["result"], wall


async def raw_rtts(endpoint: str, n: int) -> list[float]:
    async with RawCdp(endpoint) as cdp:
        target = (await cdp.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        session = await cdp.attach(target)
        out = []
        for i in range(n + 20):
            t0 = time.perf_counter()
            await cdp.send("Runtime.evaluate", {"expression": "1+1"}, session)
            if i >= 20:
                out.append(1000 * (time.perf_counter() - t0))
        await cdp.send("Target.closeTarget", {"targetId": target})
        return out


def page_loop(daemon: BskDaemon, sid: str, url: str, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        tool(daemon, sid, "open", {"url": url})
        snap, _ = tool(daemon, sid, "snapshot", {"interactive": True})
        ref = next(line.split("[ref=")[1].rstrip("]")
                   for line in snap["snapshot"].splitlines() if 'button "Plain"' in line)
        tool(daemon, sid, "click", {"ref": ref})
        tool(daemon, sid, "eval", {"expression": "window.hits.length"})
        out.append(1000 * (time.perf_counter() - t0))
    return out


async def loops_at_once(daemon: BskDaemon, sids: list[str], url: str,
                        rounds: int) -> list[float]:
    runs = await asyncio.gather(*(asyncio.to_thread(page_loop, daemon, sid, url, rounds)
                                  for sid in sids))
    return [x for run in runs for x in run]


def main(n: int = 5) -> int:
    exit_on_sigterm()
    why = missing()
    if why:
        print(f"bench/grid.py: {why}", file=sys.stderr)
        return 2
    header("sessions on a Selenium Grid (issue 15)")
    logs = Path(tempfile.mkdtemp(prefix="bsk-bench-grid-"))
    grids: list[Grid] = []
    ok = True
    try:
        standalone = Grid.standalone(logs, max_sessions=2)
        grids.append(standalone)
        hub = Grid.hub(logs)
        grids.append(hub)
        hub.add_node(logs, max_sessions=4)
        hub.add_node(logs, max_sessions=4)
        hub.wait_ready(nodes=2)
        print(f"   standalone Grid {standalone.url}; hub {hub.url} with 2 nodes x 4 slots "
              f"(Selenium {VERSION})")
        with fixture_sites() as (site, _), BskDaemon(expose_cdp=True) as daemon:
            url = site + PAGE
            # 1. session start
            emb, grd, wd = [], [], []
            for _ in range(n):
                wall, sid = start_ms(daemon, {})
                emb.append(wall)
                stop(daemon, sid)
                wall, sid = start_ms(daemon, {"grid": standalone.url})
                grd.append(wall)
                stop(daemon, sid)
                t0 = time.perf_counter()
                wid = standalone.new_session()
                wd.append(1000 * (time.perf_counter() - t0))
                standalone.delete_session(wid)
            print("\n-- session start (first tab open, ready for calls)")
            print(describe("embedded  POST /v1/sessions", emb))
            print(describe("grid      POST /v1/sessions", grd))
            print(describe("WebDriver POST /session (bare)", wd))

            # 2. round trips
            wid = hub.new_session()
            try:
                proxy = hub_cdp(hub, wid)
                direct = daemon.json("status")["browser"]["cdp_endpoint"]
                raw_direct: list[float] = []
                raw_hub: list[float] = []
                for _ in range(2):
                    raw_direct += asyncio.run(raw_rtts(direct, 100))
                    raw_hub += asyncio.run(raw_rtts(proxy, 100))
            finally:
                hub.delete_session(wid)
            _, e_sid = start_ms(daemon, {})
            _, g_sid = start_ms(daemon, {"grid": hub.url})
            api_emb: list[float] = []
            api_grid: list[float] = []
            for i in range(220):
                for sid, into in ((e_sid, api_emb), (g_sid, api_grid))[::1 if i % 2 else -1]:
                    _, wall = tool(daemon, sid, "eval", {"expression": "1+1"})
                    if i >= 20:
                        into.append(wall)
            stop(daemon, e_sid)
            stop(daemon, g_sid)
            print("\n-- Runtime.evaluate 1+1 round trip")
            print(describe("raw CDP direct", raw_direct, digits=2))
            print(describe("raw CDP via hub se:cdp", raw_hub, digits=2))
            print(describe("bsk eval, embedded session", api_emb, digits=2))
            print(describe("bsk eval, grid session (hub)", api_grid, digits=2))
            proxy_adds = median(raw_hub) - median(raw_direct)
            bsk_adds = median(api_grid) - median(api_emb)
            print(f"   the hub adds {proxy_adds:.2f} ms raw, {bsk_adds:.2f} ms through bsk")
            ok &= verdict("bsk's grid overhead - the raw proxy's", bsk_adds - proxy_adds, 1.0)

            # 3. 8 sessions at once
            grid_sids = [start_ms(daemon, {"grid": hub.url})[1] for _ in range(8)]
            nodes = set(hub.sessions().values())
            emb_sids = [start_ms(daemon, {})[1] for _ in range(8)]
            on_grid = asyncio.run(loops_at_once(daemon, grid_sids, url, 5))
            embedded = asyncio.run(loops_at_once(daemon, emb_sids, url, 5))
            for sid in grid_sids + emb_sids:
                stop(daemon, sid)
            print("\n-- 8 sessions at once, 5 rounds of open + snapshot + click + eval")
            print(describe("8 embedded sessions (one loop)", embedded))
            print(describe("8 grid sessions over 2 nodes", on_grid))
            print(f"   grid loop / embedded loop (median): "
                  f"{median(on_grid) / median(embedded):.2f}x; all {len(on_grid)} grid "
                  "rounds completed")
            spread = len(nodes) >= 2
            print(f"  target 8 grid sessions on both nodes: {len(nodes)} nodes  "
                  f"{'PASS' if spread else 'FAIL'}")
            ok &= spread
    finally:
        for g in grids:
            g.stop()
    return 0 if ok else 1


def hub_cdp(hub: Grid, webdriver_id: str) -> str:
    return hub.url.replace("http://", "ws://") + f"/session/{webdriver_id}/se/cdp"


if __name__ == "__main__":
    run_main(main, *(int(a) for a in sys.argv[1:2]))
