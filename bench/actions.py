"""Coordinates and downloads (issue 13): `mouse click X Y` and a click that downloads a
file, through the HTTP API vs the same input over a raw CDP WebSocket to the same browser.

One run, alternating, on tests/pages:
  * mouse   POST /tools/mouse_click {x, y} on act_canvas.html (one keep-alive connection)
            vs raw: Input.dispatchMouseEvent mouseMoved, mousePressed, mouseReleased, each
            awaited, on a tab of our own (Target.attachToTarget {flatten: true});
  * download POST /tools/click {ref} on act_download.html's `download=` link, answered
            with the finished file in result.downloads, vs raw: the same three mouse
            events at the link's centre, then waiting for Browser.downloadProgress
            `completed` (our tab in a browser context of its own, with its own
            Browser.setDownloadBehavior, so the daemon's settings are left alone).
  * plain   the same ref click on a text field (no download), both ways, to tell a
            ref click's own checks (hit test, state read) from what downloads add.
Targets at the median: mouse click adds <= 2 ms; a download adds <= 5 ms beyond a
ref click's own cost ((api_download - api_plain) - (raw_download - raw_plain)).

    .venv/bin/python bench/actions.py [N]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from typing import Any

import common
from daemon_overhead import Cdp, Http
from websockets.asyncio.client import connect

N, WARMUP = 100, 10
DOWNLOAD_N = 30
PAUSE_S = 0.3
BOX = ("(() => { const r = document.getElementById(%r).getBoundingClientRect(); "
       "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
LINK_BOX = BOX % "attr"


async def raw_click(cdp: Cdp, sid: str, x: float, y: float) -> None:
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        params: dict[str, Any] = {"type": kind, "x": x, "y": y}
        if kind != "mouseMoved":
            params.update(button="left", clickCount=1, buttons=1 if kind == "mousePressed"
                          else 0)
        await cdp.send("Input.dispatchMouseEvent", params, sid)


class EventCdp(Cdp):
    """The bare client, counting completed downloads among the events it skips."""

    def __init__(self, ws: Any) -> None:
        super().__init__(ws)
        self.completed = 0

    def seen(self, msg: dict[str, Any]) -> None:
        if (msg.get("method") == "Browser.downloadProgress"
                and msg["params"].get("state") == "completed"):
            self.completed += 1

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
            self.seen(reply)


async def until_downloaded(cdp: EventCdp, before: int) -> None:
    """Read events until a download completes after `before` had."""
    while cdp.completed <= before:
        cdp.seen(json.loads(await cdp.ws.recv()))


async def measure(n: int, sock: str, site: str) -> dict[str, list[float]]:
    reader, writer = await asyncio.open_unix_connection(sock)
    api = Http(reader, writer)
    base = "/v1/sessions/default/tools"
    await api.call("POST", f"{base}/open", {"url": f"{site}/act_canvas.html"})
    endpoint = (await api.call("GET", "/v1/status"))["browser"]["cdp_endpoint"]
    samples: dict[str, list[float]] = {"api_mouse": [], "raw_mouse": [],
                                       "api_download": [], "raw_download": [],
                                       "api_plain": [], "raw_plain": []}
    async with connect(endpoint, max_size=None, ping_interval=None, compression=None) as ws:
        cdp = EventCdp(ws)
        context = (await cdp.send("Target.createBrowserContext"))["browserContextId"]
        target = (await cdp.send("Target.createTarget", {
            "url": f"{site}/act_canvas.html", "browserContextId": context,
            "newWindow": True}))["targetId"]
        try:
            sid = (await cdp.send("Target.attachToTarget",
                                  {"targetId": target, "flatten": True}))["sessionId"]
            for i in range(WARMUP + n):
                pair = [("api_mouse", lambda: api.call("POST", f"{base}/mouse_click",
                                                       {"x": 20, "y": 30})),
                        ("raw_mouse", lambda: raw_click(cdp, sid, 20, 30))]
                for name, call in pair if i % 2 else pair[::-1]:
                    t0 = time.perf_counter()
                    await call()
                    if i >= WARMUP:
                        samples[name].append(1000 * (time.perf_counter() - t0))

            # Downloads: the daemon's tab and ours on the downloads page.
            await api.call("POST", f"{base}/open", {"url": f"{site}/act_download.html"})
            snap = (await api.call("POST", f"{base}/snapshot", {"interactive": True}))
            lines = snap["result"]["snapshot"].splitlines()
            ref = next(x for x in lines if '"Download report"' in x).split("[ref=")[1][:-1]
            field = next(x for x in lines if "textbox [ref=" in x).split("[ref=")[1].split(
                "]")[0]
            folder = tempfile.mkdtemp(prefix="bsk-bench-raw-downloads-")
            await cdp.send("Browser.setDownloadBehavior", {
                "behavior": "allowAndName", "downloadPath": folder, "eventsEnabled": True,
                "browserContextId": context})
            await cdp.send("Page.navigate", {"url": f"{site}/act_download.html"}, sid)
            await asyncio.sleep(0.5)  # (set-up only) its load; not part of any figure
            box = (await cdp.send("Runtime.evaluate", {"expression": LINK_BOX,
                                                       "returnByValue": True}, sid))
            x, y = box["result"]["value"]
            field_box = (await cdp.send("Runtime.evaluate", {"expression": BOX % "name",
                                                             "returnByValue": True}, sid))
            fx, fy = field_box["result"]["value"]

            async def api_plain() -> None:  # the same click on a text field: no download
                await api.call("POST", f"{base}/click", {"ref": field})

            async def raw_plain() -> None:
                await raw_click(cdp, sid, fx, fy)

            async def api_download() -> None:
                before = cdp.completed
                answer = await api.call("POST", f"{base}/click", {"ref": ref})
                cdp.completed = before  # (its events, if any reached us, are not ours)
                done = answer["result"]["downloads"]
                assert done and done[0]["state"] == "completed", answer

            async def raw_download() -> None:
                before = cdp.completed
                await raw_click(cdp, sid, x, y)
                await asyncio.wait_for(until_downloaded(cdp, before), 10)

            for i in range(2 + DOWNLOAD_N):
                pair2 = [("api_download", api_download), ("raw_download", raw_download),
                         ("api_plain", api_plain), ("raw_plain", raw_plain)]
                shift = i % len(pair2)  # rotate the order so no kind always goes first
                for name, call in pair2[shift:] + pair2[:shift]:
                    # Back-to-back downloads of one link: Chromium now and then starts
                    # none (seen ~1 in 15 clicks with no pause, for bsk and raw CDP
                    # alike); a pause between rounds, outside the figures, avoids it.
                    await asyncio.sleep(PAUSE_S)
                    t0 = time.perf_counter()
                    await call()
                    if i >= 2:
                        samples[name].append(1000 * (time.perf_counter() - t0))
        finally:
            await cdp.send("Target.closeTarget", {"targetId": target})
            await cdp.send("Target.disposeBrowserContext", {"browserContextId": context})
            writer.close()
    return samples


def main(n: int = N) -> int:
    common.exit_on_sigterm()
    common.header("Coordinates and downloads: bsk HTTP API vs raw CDP (same browser)")
    with common.fixture_sites() as (site, _), common.BskDaemon() as bsk:
        s = asyncio.run(measure(n, bsk.socket, site))
    print(common.describe("api  POST /tools/mouse_click", s["api_mouse"], digits=2))
    print(common.describe("raw  move+press+release", s["raw_mouse"], digits=2))
    print(common.describe("api  POST /tools/click (download= link)", s["api_download"],
                          digits=2))
    print(common.describe("raw  click + downloadProgress", s["raw_download"], digits=2))
    print(common.describe("api  POST /tools/click (text field)", s["api_plain"], digits=2))
    print(common.describe("raw  move+press+release there", s["raw_plain"], digits=2))
    med = {k: common.median(v) for k, v in s.items()}
    mouse = med["api_mouse"] - med["raw_mouse"]
    click = med["api_plain"] - med["raw_plain"]
    download = (med["api_download"] - med["api_plain"]) - (
        med["raw_download"] - med["raw_plain"])
    print(f"  a ref click's own checks (hit test, state read) at the median: {click:.2f} ms")
    ok = common.verdict("mouse click added ms (api - raw median)", mouse, 2)
    ok = common.verdict("download added ms beyond a ref click's own "
                        "((api_dl - api_click) - (raw_dl - raw_click))", download, 5) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:2]))
