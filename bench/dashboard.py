"""The dashboard's live view: page change -> frame shown, and the daemon's CPU meanwhile.

One daemon (its browser with a DevTools port, BSK_EXPOSE_CDP=0), one session on a local
page, and one dashboard (`bsk show --url`) open in a second headless Chromium of our own
watching that session. Per round (N, 0.3 s apart) the page's background turns a new
colour (`eval` through the AsyncClient; the page stamps `Date.now()` as it changes it):
  * dashboard  `Date.now()` in the dashboard page when its <img> has loaded a frame whose
               centre pixel is that colour (decoded, drawn on a canvas): what a person sees;
  * raw        arrival of the next `Page.screencastFrame` on a raw CDP screencast of the
               same tab, our own WebSocket to the same browser: the protocol's floor.
Both clocks are the machine's wall clock. Then the daemon's CPU (`/proc/PID/stat`) over
10 s each: no dashboard; the dashboard watching the static page; the dashboard watching
the page animating (its background changes every frame), with frames/s shown.
Targets: dashboard median <= raw median + 100 ms; daemon CPU <= 25% of a core while the
page animates.

    .venv/bin/python bench/dashboard.py [N]   # default 30, ~1 min
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import common
from raw_cdp import RawCdp
from websockets.asyncio.client import connect

from browserskill import AsyncClient
from browserskill.browser import launcher

TICK = os.sysconf("SC_CLK_TCK")
WINDOW_S = 10.0


def daemon_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class RawScreencast(RawCdp):
    """Raw CDP that also keeps screencast frames' arrival times (and acks them)."""

    frames: list[float]
    arrived: asyncio.Event

    async def _read(self) -> None:
        self.frames, self.arrived = [], asyncio.Event()
        async for raw in self.ws:
            msg = json.loads(raw)
            if msg.get("method") == "Page.screencastFrame":
                self.frames.append(time.time() * 1000)
                self.arrived.set()
                await self.ws.send(json.dumps({
                    "id": next(self.ids), "method": "Page.screencastFrameAck",
                    "params": {"sessionId": msg["params"]["sessionId"]},
                    "sessionId": msg["sessionId"]}))
                continue
            fut = self.pending.pop(msg.get("id", -1), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)


HOOK = """(() => {
  window.__shown = [];
  const img = document.querySelector('#live');
  const c = document.createElement('canvas'), g = c.getContext('2d', {willReadFrequently: true});
  img.addEventListener('load', () => {
    const t = Date.now();
    c.width = img.naturalWidth; c.height = img.naturalHeight; g.drawImage(img, 0, 0);
    const p = g.getImageData(c.width >> 1, c.height >> 1, 1, 1).data;
    window.__shown.push([t, p[0], p[1], p[2]]);
  });
  return true;
})()"""


class Viewer:
    """The dashboard page in our own headless Chromium, over its DevTools WebSocket."""

    def __init__(self, ws: Any) -> None:
        self.ws, self.n = ws, 0

    async def cdp(self, method: str, params: dict[str, Any]) -> Any:
        self.n += 1
        await self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(await self.ws.recv())
            if msg.get("id") == self.n:
                return msg.get("result") or {}

    async def eval(self, expression: str) -> Any:
        result = await self.cdp("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True})
        return (result.get("result") or {}).get("value")

    async def until(self, expression: str, timeout: float = 20) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = await self.eval(expression)
            if value:
                return value
            await asyncio.sleep(0.01)
        raise TimeoutError(expression)


def viewer_page(profile: Path) -> str:
    """The DevTools WebSocket of the viewer Chromium's page (launched on `profile`)."""
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
        if time.monotonic() > deadline:
            raise TimeoutError("the viewer Chromium's DevTools port")
        time.sleep(0.05)
    port = int(port_file.read_text().splitlines()[0])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
        pages = json.load(r)
    return str(next(p for p in pages if p["type"] == "page")["webSocketDebuggerUrl"])


async def measure(pid: int, sock: str, page: str, dash_url: str, page_ws: str, n: int) -> int:
    async with AsyncClient(sock) as client:
        await client.session_start("watched", use=False)
        await client.call("open", {"url": page}, session="watched")
        target = (await client.call("tab_list", session="watched")).result["tabs"][0][
            "target_id"]
        cpu_idle = await cpu_over(pid)
        async with connect(page_ws, max_size=None) as ws:
            viewer = Viewer(ws)
            await viewer.cdp("Page.navigate", {"url": dash_url})
            await viewer.until("document.querySelector('#conn')?.textContent === 'live'")
            await viewer.eval("document.querySelector('[data-session=watched]').click()")
            await viewer.until("+document.querySelector('#live').dataset.seq")
            await viewer.eval(HOOK)
            endpoint = (await client.status())["browser"]["cdp_endpoint"]
            async with RawScreencast(endpoint) as raw:
                sid = await raw.attach(target)
                await raw.send("Page.startScreencast", {"format": "jpeg", "quality": 60,
                                                        "maxWidth": 1024,
                                                        "maxHeight": 768}, sid)
                dash, floor = [], []
                for i in range(n + 3):
                    rgb = [(40 + 67 * i) % 256, (90 + 131 * i) % 256, (200 + 29 * i) % 256]
                    raw_seen = len(raw.frames)
                    shown_seen = await viewer.eval("window.__shown.length")
                    answer = await client.call("eval", {"expression": (
                        f"document.body.style.background = 'rgb({rgb[0]}, {rgb[1]}, "
                        f"{rgb[2]})'; Date.now()")}, session="watched")
                    t0 = answer.result["value"]
                    shown = await viewer.until(
                        f"window.__shown.slice({shown_seen}).find(([t, r, g, b]) => "
                        f"Math.abs(r - {rgb[0]}) < 12 && Math.abs(g - {rgb[1]}) < 12 && "
                        f"Math.abs(b - {rgb[2]}) < 12)")
                    while len(raw.frames) <= raw_seen:
                        raw.arrived.clear()
                        await raw.arrived.wait()
                    if i >= 3:  # warm-up rounds
                        dash.append(shown[0] - t0)
                        floor.append(raw.frames[raw_seen] - t0)
                    await asyncio.sleep(0.3)
                await raw.send("Page.stopScreencast", {}, sid)
            print(common.describe("raw CDP screencast frame", floor))
            print(common.describe("dashboard frame shown", dash))
            cpu_static = await cpu_over(pid)
            frames0 = await viewer.eval("window.__shown.length")
            await client.call("eval", {"expression": (
                "(function step(t) { document.body.style.background = "
                "`hsl(${(t / 5) % 360}, 80%, 50%)`; requestAnimationFrame(step); })(0)")},
                session="watched")
            cpu_anim = await cpu_over(pid)
            fps = (await viewer.eval("window.__shown.length") - frames0) / WINDOW_S
    print(f"  daemon CPU, % of one core over {WINDOW_S:.0f} s: no dashboard "
          f"{cpu_idle:.1f}%  watching a static page {cpu_static:.1f}%  watching an "
          f"animating page {cpu_anim:.1f}% ({fps:.1f} frames/s shown)")
    ok = common.verdict("dashboard - raw (medians)",
                        common.median(dash) - common.median(floor), 100)
    ok &= common.verdict("daemon CPU while animating", cpu_anim, 25, "%")
    return 0 if ok else 1


async def cpu_over(pid: int) -> float:
    c0, t0 = daemon_cpu_s(pid), time.monotonic()
    await asyncio.sleep(WINDOW_S)
    return 100 * (daemon_cpu_s(pid) - c0) / (time.monotonic() - t0)


def main(n: int = 30) -> int:
    common.exit_on_sigterm()
    common.header(f"Dashboard live view: page change -> frame shown (N={n}), daemon CPU")
    with common.page_server() as url, common.BskDaemon(expose_cdp=True) as bsk:
        assert bsk.pid is not None
        dash_url = bsk.json("show", "--url")["url"]
        profile = Path(tempfile.mkdtemp(prefix="bsk-bench-viewer-"))
        args = launcher.launch_args(launcher.find_browser() or "chromium", profile)
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            return asyncio.run(measure(bsk.pid, bsk.socket, url, dash_url,
                                       viewer_page(profile), n))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
            shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:2]))
