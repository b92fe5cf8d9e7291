"""Browser and disk faults (issue 25, item 5): how fast, and with what, the daemon answers
when its browser is stopped (SIGSTOP of its process group) and when the disk under
$BSK_HOME is full (a 16 MB tmpfs, filled; needs root to mount).

  stopped browser   POST /v1/sessions {"timeout_ms": 3000}; a tool call that starts the
                    default session (timeout_ms 3000); `bsk daemon stop` with the browser
                    still stopped, and whether its keeper or browser is alive 3 s later
  full disk         5 evals on an existing session (timeout_ms 5000): their answers and
                    times

    .venv/bin/python bench/faults.py
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/faults.py   (another version)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

BSK = [sys.executable, "-m", "browserskill"]


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BSK, "--json", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def client(home: Path) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(home / "bsk.sock")),
                        base_url="http://bsk", timeout=70)


def environment(home: Path) -> dict[str, str]:
    return {**os.environ, "BSK_HOME": str(home), "BSK_EPHEMERAL": "1", "BSK_IDLE_TIMEOUT": "0"}


def answered(r: httpx.Response) -> str:
    return f"{r.status_code} {r.json().get('error', {}).get('code')}"


def stopped_browser() -> None:
    home = Path(tempfile.mkdtemp(prefix="fb", dir="/tmp"))
    env = environment(home)
    run(env, "session", "start", "s1")
    record = json.loads((home / "browser.json").read_text())
    pid, keeper = record["pid"], record["keeper_pid"]
    os.killpg(pid, signal.SIGSTOP)
    try:
        with client(home) as c:
            t0 = time.monotonic()
            r = c.post("/v1/sessions", json={"session_id": "s2", "timeout_ms": 3000})
            print(f"stopped browser: POST /v1/sessions timeout_ms=3000 -> {answered(r)} "
                  f"in {time.monotonic() - t0:.1f}s")
            t0 = time.monotonic()
            r = c.post("/v1/sessions/default/tools/eval",
                       json={"expression": "1", "timeout_ms": 3000})
            print(f"stopped browser: eval starting the default session, timeout_ms=3000 -> "
                  f"{answered(r)} in {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        run(env, "daemon", "stop")
        took = time.monotonic() - t0
        time.sleep(3)
        print(f"stopped browser: daemon stop took {took:.1f}s; 3 s later keeper alive: "
              f"{Path(f'/proc/{keeper}').exists()}, browser alive: "
              f"{Path(f'/proc/{pid}').exists()}")
    finally:
        try:
            os.killpg(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        run(env, "daemon", "stop")


def fill(home: Path) -> None:
    fd = os.open(home / "filler", os.O_WRONLY | os.O_CREAT)
    for size in (1 << 20, 4096, 1):
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
    os.close(fd)


def full_disk() -> None:
    home = Path(tempfile.mkdtemp(prefix="fd", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(home)],
                   check=True)
    env = environment(home)
    try:
        run(env, "session", "start", "s1")
        fill(home)
        times, codes = [], []
        with client(home) as c:
            for i in range(5):
                t0 = time.monotonic()
                try:
                    r = c.post("/v1/sessions/s1/tools/eval",
                               json={"expression": str(i), "timeout_ms": 5000}, timeout=15)
                    codes.append(answered(r))
                except httpx.TimeoutException:
                    codes.append("no answer in 15s")
                times.append(time.monotonic() - t0)
        print(f"full disk: 5 evals (timeout_ms=5000): {codes[0]} ..., "
              f"max {max(times):.2f}s, median {sorted(times)[2]:.2f}s")
    finally:
        run(env, "daemon", "stop")
        subprocess.run(["umount", "-l", str(home)])


if __name__ == "__main__":
    stopped_browser()
    full_disk()
