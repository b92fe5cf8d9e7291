"""Network capture's cost: a page making 500 requests, with and without capture.

One browser (the daemon's, with a DevTools port for our own raw CDP tab), one local
server; the page's `burst(500)` fetches a 4 KB JSON body 500 times (at most 6 at once,
as Chromium allows per host) and returns its own wall time (performance.now). Per round,
order rotated:

  * none     a raw CDP tab with no Network domain: no capture at all;
  * headers  a raw CDP tab with `Network.enable` keeping no bodies (buffer sizes 0):
             Chromium's capture without bodies (events arrive on our socket, dropped);
  * network  the same with bsk's buffer sizes (Chromium keeps the bodies): capture with
             bodies in the browser alone, what bsk asks of it;
  * bsk      `POST /v1/sessions/default/tools/eval burst(500)` on a bsk tab: Chromium's
             capture plus the daemon's buffers (1,500 events into the ring), bodies kept.

Then, on the bsk tab's 500 requests: `network show ID --body` (op time, N=50 ids) and
`network har --content` of the whole buffer (op time, N=3).
Target: bsk's burst median ≤ 1.15 x network's (the daemon adds at most 15 % to what
Chromium's own capture costs); the cost of capture itself is printed (ratios to none).

    .venv/bin/python bench/network.py [ROUNDS]      # default 9
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common
from raw_cdp import RawCdp

from browserskill.browser.buffers import DOMAINS

ROUNDS, REQUESTS = 9, 500
BODY = json.dumps({"items": [{"id": i, "name": f"item {i}", "note": "x" * 20}
                             for i in range(100)]}).encode()[:4096]
PAGE = b"""<!doctype html><html><head><title>burst</title></head><body><script>
async function burst(n) {
  const t0 = performance.now();
  let bytes = 0, next = 0;
  async function worker() {
    while (next < n) {
      const i = next++;
      const r = await fetch("/blob.json?i=" + i + "&t=" + t0, {cache: "no-store"});
      const got = (await r.arrayBuffer()).byteLength;  // read before adding: no lost update
      bytes += got;
    }
  }
  await Promise.all(Array.from({length: 6}, worker));
  return {ms: performance.now() - t0, bytes};
}
</script></body></html>"""
NETWORK_ENABLE = dict(DOMAINS)["Network.enable"]


def api(sock: str, tool: str, params: dict[str, Any]) -> dict[str, Any]:
    status, _, answer, _ = common.api(sock, "POST", f"/v1/sessions/default/tools/{tool}",
                                      params)
    if status != 200:
        raise RuntimeError(f"{tool}: {answer}")
    return answer


async def raw_tab(cdp: RawCdp, url: str, network: dict[str, Any] | None) -> str:
    target = (await cdp.send("Target.createTarget", {"url": "about:blank",
                                                     "newWindow": True}))["targetId"]
    sid = await cdp.attach(target)
    await cdp.send("Page.enable", session_id=sid)
    if network is not None:
        await cdp.send("Network.enable", network, session_id=sid)
    await cdp.send("Page.navigate", {"url": url}, session_id=sid)
    for _ in range(200):  # until the page's script is there
        got = await cdp.send("Runtime.evaluate", {"expression": "typeof burst"},
                             session_id=sid)
        if got["result"].get("value") == "function":
            return sid
        await asyncio.sleep(0.02)
    raise RuntimeError("the burst page did not load")


async def raw_burst(cdp: RawCdp, sid: str) -> float:
    got = await cdp.send("Runtime.evaluate", {"expression": f"burst({REQUESTS})",
                                              "awaitPromise": True, "returnByValue": True},
                         session_id=sid)
    value = got["result"]["value"]
    assert value["bytes"] == REQUESTS * len(BODY), value
    return float(value["ms"])


def bsk_burst(sock: str) -> float:
    value = api(sock, "eval", {"expression": f"burst({REQUESTS})"})["result"]["value"]
    assert value["bytes"] == REQUESTS * len(BODY), value
    return float(value["ms"])


async def measure(rounds: int, sock: str, url: str) -> dict[str, list[float]]:
    endpoint = common.api(sock, "GET", "/v1/status")[2]["browser"]["cdp_endpoint"]
    samples: dict[str, list[float]] = {"none": [], "headers": [], "network": [], "bsk": []}
    async with RawCdp(endpoint) as cdp:
        tabs = {"none": await raw_tab(cdp, url, None),
                "headers": await raw_tab(cdp, url, {"maxTotalBufferSize": 0,
                                                    "maxResourceBufferSize": 0}),
                "network": await raw_tab(cdp, url, NETWORK_ENABLE)}
        names = list(samples)
        for i in range(rounds + 1):  # the first round warms up
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                ms = bsk_burst(sock) if name == "bsk" else await raw_burst(cdp, tabs[name])
                if i:
                    samples[name].append(ms)
    return samples


def reads(sock: str) -> dict[str, list[float]]:
    """`network show --body` and `network har --content` on the bsk tab's buffer."""
    api(sock, "eval", {"expression": f"burst({REQUESTS})"})
    entries = api(sock, "network", {"limit": 1000})["result"]["entries"]
    ids = [e["id"] for e in entries if "/blob.json" in e["url"]][-50:]
    out: dict[str, list[float]] = {"show": [], "har": []}
    for request_id in ids:
        answer = api(sock, "network_show", {"id": request_id, "body": True})
        assert answer["result"]["body_bytes"] == len(BODY), answer["result"]
        out["show"].append(common.op_ms(answer))
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(3):
            answer = api(sock, "network_har", {"path": str(Path(folder) / "b.har"),
                                               "content": True})
            out["har"].append(common.op_ms(answer))
            out.setdefault("har_entries", []).append(answer["result"]["entries"])
            out.setdefault("har_bodies", []).append(answer["result"]["bodies"])
    return out


def main(rounds: int = ROUNDS) -> int:
    common.exit_on_sigterm()
    common.header(f"Network capture with bodies: a page making {REQUESTS} requests "
                  f"({len(BODY)} B each)")
    extra = {"/burst.html": PAGE, "/blob.json": BODY}
    with common.fixture_sites(extra) as (base, _), common.BskDaemon(expose_cdp=True) as bsk:
        url = f"{base}/burst.html"
        api(bsk.socket, "open", {"url": url})
        t0 = time.perf_counter()
        s = asyncio.run(measure(rounds, bsk.socket, url))
        r = reads(bsk.socket)
        took = time.perf_counter() - t0
    print(f"  {rounds} rounds after a warm-up, order rotated; {took:.0f} s in all")
    print(common.describe("none     raw CDP tab, no Network domain", s["none"]))
    print(common.describe("headers  raw CDP tab, Network.enable, no bodies kept",
                          s["headers"]))
    print(common.describe("network  raw CDP tab, Network.enable, bodies kept", s["network"]))
    print(common.describe("bsk      bsk tab (daemon buffers, bodies kept)", s["bsk"]))
    base_ms = common.median(s["none"])
    for name in ("headers", "network", "bsk"):
        print(f"  {name}/none at the median: {common.median(s[name]) / base_ms:.2f}x")
    print(common.describe("network show ID --body (op time)", r["show"], digits=2))
    print(common.describe(f"network har --content, {r['har_entries'][0]} entries, "
                          f"{r['har_bodies'][0]} bodies (op time)", r["har"]))
    ok = common.verdict("bsk/network burst ratio (median)",
                        common.median(s["bsk"]) / common.median(s["network"]), 1.15, unit="x")
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:2]))
