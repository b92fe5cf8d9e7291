"""Video recording: frame rate and CPU of `bsk video` on this machine, next to the raw
screencast it is built on, in one run.

One daemon (its browser with a DevTools port for the raw side), a page animating every
frame (a box moving and changing colour on requestAnimationFrame: the worst case, a new
screencast frame whenever Chromium can make one), and a still page. Each round, for
SECONDS each, in rotating order:
  * idle   the animated page in the session's tab, nothing recording (the page's own cost);
  * raw    the animated page in a tab of our own, `Page.startScreencast` (JPEG q80, the
           same size) over our own CDP WebSocket, each frame acknowledged at once, nothing
           encoded: how many frames Chromium delivers;
  * bsk    `bsk video start` on the animated page, then `bsk video stop FILE.webm`;
  * still  `bsk video start` on the still page (frames come only when it changes).
Printed per mode (medians over rounds): screencast frames received per second, video
frames per second (ffprobe counts the file's frames, over the daemon's time from the
start operation's end to the stop operation's start),
CPU as a percentage of one core for the daemon, ffmpeg and the browser (all its
processes), from /proc/PID/stat (utime + stime) before and after.
Targets: the video has 25 fps (±1) on both pages; daemon + ffmpeg ≤ 60 % of one core
while recording the animated page.

    .venv/bin/python bench/video.py [ROUNDS] [SECONDS]   # defaults 3 8, ~2 min
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import common
from websockets.asyncio.client import connect

ROUNDS, SECONDS = 3, 8
TICK = os.sysconf("SC_CLK_TCK")
SIZE = (1280, 632)  # the session tab's viewport with the launcher's window size

ANIMATED = b"""<!doctype html><html><head><title>Animated</title><style>
html, body { margin: 0; height: 100%; }
#box { position: absolute; width: 200px; height: 200px; top: 200px; }
</style></head><body><div id="box"></div><script>
const box = document.getElementById("box");
function frame(t) {
  box.style.left = (Math.sin(t / 500) * 500 + 540) + "px";
  box.style.background = `hsl(${(t / 10) % 360}, 80%, 50%)`;
  document.body.style.background = `hsl(${(t / 37) % 360}, 30%, 85%)`;
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
</script></body></html>"""
STILL = b"""<!doctype html><html><head><title>Still</title></head>
<body><h1>A still page</h1></body></html>"""


def cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def browser_pids(home: Path) -> list[int]:
    """The daemon's Chromium and all its descendants (renderers, GPU, utility)."""
    procs = common.processes()
    roots = {pid for pid, (_, _, cmd) in procs.items()
             if "--user-data-dir" in cmd and str(home) in cmd and "--type=" not in cmd}
    found = set(roots)
    grew = True
    while grew:
        more = {pid for pid, (ppid, _, _) in procs.items() if ppid in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)


def ffmpeg_pid(daemon: int) -> int | None:
    for pid, (ppid, _, cmd) in common.processes().items():
        if ppid == daemon and "ffmpeg" in cmd:
            return pid
    return None


class Sample:
    def __init__(self) -> None:
        self.received = 0.0  # screencast frames per second
        self.video_fps = 0.0
        self.daemon = 0.0  # % of one core
        self.ffmpeg = 0.0
        self.browser = 0.0


def probe_frames(path: Path) -> int:
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                          "-show_entries", "stream=nb_read_frames", "-of", "json", str(path)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return int(json.loads(out)["streams"][0]["nb_read_frames"])


def session_video(bsk: common.BskDaemon) -> dict[str, Any]:
    for s in bsk.json("session", "list")["sessions"]:
        if s["session_id"] == "default":
            video: dict[str, Any] = s["recordings"]["video"]
            return video
    raise RuntimeError("no default session")


def run_bsk(bsk: common.BskDaemon, url: str, out: Path, seconds: float) -> Sample:
    assert bsk.pid is not None
    bsk.run("open", url)
    browser = browser_pids(bsk.home)
    started = common.stamp(bsk.json("video", "start")["ended_at"])
    ff = ffmpeg_pid(bsk.pid)
    assert ff is not None, "no ffmpeg under the daemon"
    d0, f0, b0, t0 = cpu_s([bsk.pid]), cpu_s([ff]), cpu_s(browser), time.monotonic()
    time.sleep(seconds)  # the recording's length: what is measured, not a synchronization
    received = session_video(bsk)["frames_received"]
    elapsed = time.monotonic() - t0
    d1, f1, b1 = cpu_s([bsk.pid]), cpu_s([ff]), cpu_s(browser)
    answer = bsk.json("video", "stop", str(out))
    stopped, stop_called = answer["result"], common.stamp(answer["started_at"])
    frames = probe_frames(out)
    assert frames == stopped["frames"], (frames, stopped)
    s = Sample()
    s.received = received / elapsed
    # the film's frames per second of daemon time between the start's end and the stop's
    # start (a machine under load delays the CLI, not these stamps)
    s.video_fps = frames / (stop_called - started)
    s.daemon, s.ffmpeg = 100 * (d1 - d0) / elapsed, 100 * (f1 - f0) / elapsed
    s.browser = 100 * (b1 - b0) / elapsed
    return s


def run_idle(bsk: common.BskDaemon, url: str, seconds: float) -> Sample:
    assert bsk.pid is not None
    bsk.run("open", url)
    browser = browser_pids(bsk.home)
    d0, b0, t0 = cpu_s([bsk.pid]), cpu_s(browser), time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    s = Sample()
    s.daemon = 100 * (cpu_s([bsk.pid]) - d0) / elapsed
    s.browser = 100 * (cpu_s(browser) - b0) / elapsed
    return s


async def raw_screencast(endpoint: str, url: str, seconds: float, home: Path) -> Sample:
    async with connect(endpoint, max_size=None, ping_interval=None, compression=None) as ws:
        ids = iter(range(1, 1 << 30))
        replies: dict[int, asyncio.Future[Any]] = {}
        frames = 0
        session = ""

        async def send(method: str, params: dict[str, Any] | None = None,
                       sid: str | None = None) -> Any:
            i = next(ids)
            replies[i] = asyncio.get_running_loop().create_future()
            msg: dict[str, Any] = {"id": i, "method": method, "params": params or {}}
            if sid:
                msg["sessionId"] = sid
            await ws.send(json.dumps(msg))
            return await replies[i]

        async def read() -> None:
            nonlocal frames
            async for raw in ws:
                msg = json.loads(raw)
                if "id" in msg:
                    fut = replies.pop(msg["id"], None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg.get("result"))
                elif msg.get("method") == "Page.screencastFrame":
                    frames += 1
                    base64.b64decode(msg["params"]["data"])  # what any consumer does
                    ack = {"id": next(ids), "method": "Page.screencastFrameAck",
                           "params": {"sessionId": msg["params"]["sessionId"]},
                           "sessionId": session}
                    await ws.send(json.dumps(ack))

        reader = asyncio.create_task(read())
        target = (await send("Target.createTarget", {"url": url, "newWindow": True}))["targetId"]
        session = (await send("Target.attachToTarget", {"targetId": target, "flatten": True})
                   )["sessionId"]
        try:
            browser = browser_pids(home)
            await send("Page.enable", None, session)
            await send("Page.startScreencast", {"format": "jpeg", "quality": 80,
                                                "maxWidth": SIZE[0], "maxHeight": SIZE[1]},
                       session)
            b0, t0 = cpu_s(browser), time.monotonic()
            start_frames = frames
            await asyncio.sleep(seconds)
            elapsed = time.monotonic() - t0
            s = Sample()
            s.received = (frames - start_frames) / elapsed
            s.browser = 100 * (cpu_s(browser) - b0) / elapsed
            s.daemon = float("nan")
            await send("Page.stopScreencast", None, session)
            return s
        finally:
            await send("Target.closeTarget", {"targetId": target})
            reader.cancel()


def main(rounds: int = ROUNDS, seconds: float = SECONDS) -> int:
    common.exit_on_sigterm()
    common.header("Video recording: bsk video vs the raw screencast (same browser)")
    ffmpeg = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True,
                            check=True).stdout.split("\n")[0]
    print(f"   {ffmpeg}; {rounds} rounds of {seconds:g} s per mode")
    pages = {"/animated.html": ANIMATED, "/still.html": STILL}
    results: dict[str, list[Sample]] = {m: [] for m in ("idle", "raw", "bsk", "still")}
    with common.fixture_sites(pages) as (base, _), \
            common.BskDaemon(expose_cdp=True) as bsk:
        bsk.run("session", "start", "default")
        endpoint = bsk.json("status")["browser"]["cdp_endpoint"]
        out = bsk.home / "bench.webm"
        modes = list(results)
        for r in range(rounds):
            for mode in modes[r % 4:] + modes[:r % 4]:
                if mode == "idle":
                    sample = run_idle(bsk, f"{base}/animated.html", seconds)
                elif mode == "raw":
                    sample = asyncio.run(raw_screencast(endpoint, f"{base}/animated.html",
                                                        seconds, bsk.home))
                elif mode == "bsk":
                    sample = run_bsk(bsk, f"{base}/animated.html", out, seconds)
                else:
                    sample = run_bsk(bsk, f"{base}/still.html", out, seconds)
                results[mode].append(sample)
    med = {m: {k: common.median([getattr(s, k) for s in xs])
               for k in ("received", "video_fps", "daemon", "ffmpeg", "browser")}
           for m, xs in results.items()}
    print(f"{'mode':<8} {'screencast fps':>14} {'video fps':>10} {'daemon %':>9} "
          f"{'ffmpeg %':>9} {'browser %':>10}")
    for mode, m in med.items():
        print(f"{mode:<8} {m['received']:>14.1f} {m['video_fps']:>10.1f} {m['daemon']:>9.1f} "
              f"{m['ffmpeg']:>9.1f} {m['browser']:>10.1f}")
    print("  (percent of one core; raw: our own WebSocket, nothing encoded; idle: the "
          "animated page with nothing recording)")
    ok = all(abs(med[m]["video_fps"] - 25) <= 1 for m in ("bsk", "still"))
    print(f"  target video 25 fps ±1: animated {med['bsk']['video_fps']:.1f}, still "
          f"{med['still']['video_fps']:.1f}  {'PASS' if ok else 'FAIL'}")
    ok &= common.verdict("daemon + ffmpeg CPU while recording",
                         med["bsk"]["daemon"] + med["bsk"]["ffmpeg"], 60, unit="%")
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) if i == 0 else float(a)
                            for i, a in enumerate(sys.argv[1:3])))
