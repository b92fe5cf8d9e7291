"""Extension relay overhead: the same tools through the extension vs the direct CDP link.

One headless Chromium with extension/ loaded; two daemons on it, one run, alternating:
  * ext     a daemon with its extension listener; the extension connects to it and the
            session lives in an Agent Window (CDP relayed through chrome.debugger);
  * cdp     a daemon attached to the same browser with --cdp-url (its own tab, direct
            CDP over the browser's DevTools WebSocket).
Both sessions show the same page (tests/pages/counter.html); per round, in rotated
order: `eval 1+1`, `snapshot`, `click` (the page's button, by the ref that snapshot
gave), each through the HTTP API over the daemon's Unix socket (one keep-alive
connection per daemon). Target: ext median - cdp median <= 3 ms, for each operation.

    .venv/bin/python bench/extension_relay.py [N]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import common
from daemon_overhead import Http
from websockets.sync.client import connect

from browserskill.browser import launcher

N, WARMUP = 200, 20
TARGET_MS = 3.0
OPS = ("eval", "snapshot", "click")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def browser_cdp(port: int, method: str, params: dict[str, Any] | None = None,
                target: str | None = None) -> dict[str, Any]:
    """One CDP command over the browser's endpoint (to `target`, attached flat)."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=10) as r:
        endpoint = json.load(r)["webSocketDebuggerUrl"]
    with connect(endpoint, max_size=None) as ws:
        session = None
        if target:
            ws.send(json.dumps({"id": 1, "method": "Target.attachToTarget",
                                "params": {"targetId": target, "flatten": True}}))
            while session is None:
                msg = json.loads(ws.recv(timeout=10))
                if msg.get("id") == 1:
                    session = msg["result"]["sessionId"]
        ws.send(json.dumps({"id": 2, "method": method, "params": params or {},
                            **({"sessionId": session} if session else {})}))
        while True:
            msg = json.loads(ws.recv(timeout=30))
            if msg.get("id") == 2:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]


@contextmanager
def chromium_with_extension() -> Iterator[int]:
    """A headless Chromium with extension/ loaded; yields its DevTools port."""
    executable = launcher.find_browser()
    if not executable:
        raise RuntimeError("no Chromium found")
    profile = Path(tempfile.mkdtemp(prefix="bsk-bench-ext-"))
    args = launcher.launch_args(executable, profile)
    args.insert(-1, f"--load-extension={common.ROOT / 'extension'}")
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"

        def port() -> int | None:
            if proc.poll() is not None:
                raise RuntimeError(f"Chromium exited with {proc.returncode}")
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            return int(lines[0]) if len(lines) >= 2 else None

        yield wait_for(port, 30, "Chromium's DevTools port")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(profile, ignore_errors=True)


def point_extension_at(devtools: int, port: int, code: str) -> None:
    """What the options page does: set the daemon's port in the extension's storage, and
    pair with the code from `bsk extension pair` (docs/extension.md, "Pairing")."""
    def worker() -> str | None:
        for t in browser_cdp(devtools, "Target.getTargets")["targetInfos"]:
            if t["type"] == "service_worker" and t["url"].startswith("chrome-extension://"):
                ready = browser_cdp(devtools, "Runtime.evaluate", {
                    "expression": "typeof bsk", "returnByValue": True}, t["targetId"])
                if ready["result"].get("value") == "object":
                    return str(t["targetId"])
        return None

    target = wait_for(worker, 20, "the extension's service worker")
    browser_cdp(devtools, "Runtime.evaluate", {
        "expression": f"bsk.configure({{port: {port}, label: 'bench'}})",
        "awaitPromise": True}, target)
    paired = browser_cdp(devtools, "Runtime.evaluate", {
        "expression": f"bsk.pair({json.dumps(code)})", "awaitPromise": True,
        "returnByValue": True}, target)["result"]["value"]
    if not paired.get("ok"):
        raise RuntimeError(f"pairing the extension failed: {paired.get('reason')}")


BUTTON = re.compile(r'- button "Add one"[^\n]*\[ref=(\w+)\]')


async def measure(n: int, ext_sock: str, cdp_sock: str, url: str) -> dict[str, list[float]]:
    clients = {}
    for name, sock in (("ext", ext_sock), ("cdp", cdp_sock)):
        reader, writer = await asyncio.open_unix_connection(sock)
        clients[name] = Http(reader, writer)
    sid = {"ext": "relay", "cdp": "default"}
    for name, api in clients.items():
        await api.call("POST", f"/v1/sessions/{sid[name]}/tools/open", {"url": url})
    refs: dict[str, str] = {}

    async def run(name: str, op: str) -> None:
        api, path = clients[name], f"/v1/sessions/{sid[name]}/tools/"
        if op == "eval":
            answer = await api.call("POST", path + "eval", {"expression": "1+1"})
            assert answer["result"]["value"] == 2, answer
        elif op == "snapshot":
            answer = await api.call("POST", path + "snapshot", {})
            found = BUTTON.search(answer["result"]["snapshot"])
            assert found, answer
            refs[name] = found.group(1)
        else:
            answer = await api.call("POST", path + "click", {"ref": refs[name]})
            assert answer["status"] == "completed", answer

    samples: dict[str, list[float]] = {f"{k} {op}": [] for k in clients for op in OPS}
    order = [(k, op) for op in OPS for k in clients]  # snapshot before click, per daemon
    for i in range(WARMUP + n):
        # Alternate which daemon goes first; keep eval, snapshot, click in that order.
        pairs = order if i % 2 else [(k, op) for op in OPS for k in reversed(list(clients))]
        for name, op in pairs:
            t0 = time.perf_counter()
            await run(name, op)
            if i >= WARMUP:
                samples[f"{name} {op}"].append(1000 * (time.perf_counter() - t0))
    for api in clients.values():
        api.writer.close()
    return samples


def main(n: int = N) -> int:
    common.exit_on_sigterm()
    common.header("Extension relay overhead: the same tools via the extension vs direct CDP")
    ext_port = free_port()
    with common.fixture_sites() as (site, _), chromium_with_extension() as devtools:
        ext, cdp = common.BskDaemon(), common.BskDaemon()
        ext.env["BSK_EXTENSION_PORT"] = str(ext_port)
        cdp.env["BSK_CDP_URL"] = f"http://127.0.0.1:{devtools}"
        try:
            ext.start()
            cdp.start()
            point_extension_at(devtools, ext_port, ext.json("extension", "pair")["code"])
            wait_for(lambda: [b for b in ext.json("browsers")["browsers"] if b["connected"]],
                     20, "the extension to connect")
            ext.json("session", "start", "relay", "--browser", "extension")
            s = asyncio.run(measure(n, ext.socket, cdp.socket, f"{site}/counter.html"))
        finally:
            ext.stop()
            cdp.stop()
    ok = True
    for op in OPS:
        print(common.describe(f"ext {op} (through the extension)", s[f"ext {op}"], digits=2))
        print(common.describe(f"cdp {op} (direct CDP link)", s[f"cdp {op}"], digits=2))
        added = common.median(s[f"ext {op}"]) - common.median(s[f"cdp {op}"])
        low = common.quantile(s[f"ext {op}"], 0.1) - common.quantile(s[f"cdp {op}"], 0.1)
        print(f"  {op}: added by the relay {added:.2f} ms at the median, {low:.2f} ms at p10")
        ok = common.verdict(f"{op} added ms (ext - cdp median)", added, TARGET_MS) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    common.run_main(main, *(int(a) for a in sys.argv[1:2]))
