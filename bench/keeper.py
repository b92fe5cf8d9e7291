"""The private pipe's cost: the same browser reached through its keeper's Unix socket
(browser/keeper.py: the DevTools pipe the daemon uses) and through a DevTools WebSocket
(`--expose-cdp`), alternated in one run: `Runtime.evaluate` of a short and of a 400 kB
string, per-call round trip.

    .venv/bin/python bench/keeper.py [N]      # default 200 short, 30 long per round

Target: the keeper adds at most 0.3 ms at the median to a short call, and at most 25% to
a long one (it copies each message through one more process: about 1 ms per 400 kB).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import exit_on_sigterm, header, median, run_main, verdict

from browserskill.browser import launcher
from browserskill.browser.cdp import CdpLink


async def timed(link: CdpLink, session: str, size: int, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await link.send("Runtime.evaluate", {"expression": f"'x'.repeat({size})",
                                             "returnByValue": True}, session_id=session)
        out.append(1000 * (time.perf_counter() - t0))
    return out


async def run(n: int) -> int:
    header("keeper: the DevTools pipe via the keeper's socket vs a DevTools WebSocket")
    home = Path(tempfile.mkdtemp(prefix="bsk-bench-keeper-"))
    home.chmod(0o700)
    executable = launcher.find_browser()
    if executable is None:
        raise RuntimeError("no Chromium found")
    browser = await launcher.launch(executable, home / "profile", home / "browser.log", home,
                                    expose_port=0)
    try:
        assert browser.cdp_url is not None
        links = {"keeper": await CdpLink.connect(browser.endpoint),
                 "websocket": await CdpLink.connect(browser.cdp_url)}
        sessions = {}
        for name, link in links.items():
            target = (await link.send("Target.createTarget", {"url": "about:blank"}))[
                "targetId"]
            sessions[name] = (await link.send("Target.attachToTarget", {
                "targetId": target, "flatten": True}))["sessionId"]
        figures: dict[tuple[str, int], list[float]] = {}
        for _ in range(3):  # alternate, so load changes hit both alike
            for name, link in links.items():
                for size, count in ((10, n), (400_000, max(5, n // 7))):
                    figures.setdefault((name, size), []).extend(
                        await timed(link, sessions[name], size, count))
        for (name, size), xs in sorted(figures.items()):
            print(f"  {name:<10} {size:>7} chars  median {median(xs):.3f} ms  (n={len(xs)})")
        short = median(figures[("keeper", 10)]) - median(figures[("websocket", 10)])
        long = median(figures[("keeper", 400_000)]) / median(figures[("websocket", 400_000)])
        ok = verdict("keeper adds to a short call", short, 0.3)
        ok = verdict("keeper / websocket, 400 kB", long, 1.25, unit="x") and ok
        return 0 if ok else 1
    finally:
        await asyncio.to_thread(browser.terminate)
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str]) -> int:
    exit_on_sigterm()
    return asyncio.run(run(int(argv[0]) if argv else 200))


if __name__ == "__main__":
    run_main(main, sys.argv[1:])
