"""A flood of half-sent requests on the TCP listener, kept to loopback and bounded.

One daemon with its TCP listener (BSK_TCP_PORT=0), its file limit set to 4096 (as the
daemon sets its own, docs/design.md §6). N connections (default 4500, more than the file
limit) each send a request line and half a header, then wait up to 12 s for the daemon to
end them. 8 s in: the daemon's open descriptors, and three `bsk status` over the Unix
socket, timed. At the end: how each connection ended (`408` at the header deadline,
`closed` at the cap, `held open` still open after 12 s), the daemon's CPU over the flood,
and its `Too many open files` log lines.

    .venv/bin/python bench/listener_flood.py [N]   # ~30 s
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from typing import Any

import common

HOLD_S = 12.0
FILE_LIMIT = 4096


def _cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _partial(port: int) -> str:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
    except (OSError, TimeoutError) as e:
        return f"not connected ({type(e).__name__})"
    writer.write(f"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
    try:
        data = await asyncio.wait_for(reader.read(), HOLD_S)
        return "408" if data.startswith(b"HTTP/1.1 408 ") else "closed"
    except TimeoutError:
        return "held open"
    except OSError:
        return "closed"
    finally:
        writer.close()


async def _flood(bsk: common.BskDaemon, n: int) -> dict[str, Any]:
    assert bsk.pid is not None
    port = int(bsk.json("status")["tcp"].rsplit(":", 1)[1])
    cpu0, t0 = _cpu_s(bsk.pid), time.monotonic()
    tasks = [asyncio.create_task(_partial(port)) for _ in range(n)]
    await asyncio.sleep(8)
    fds = len(os.listdir(f"/proc/{bsk.pid}/fd"))
    status: list[Any] = []
    for _ in range(3):
        began = time.monotonic()
        try:
            cp = await asyncio.to_thread(subprocess.run, bsk.argv("--json", "status"),
                                         env=bsk.env, capture_output=True, timeout=10)
            status.append(round(time.monotonic() - began, 2) if cp.returncode == 0
                          else f"exit {cp.returncode}")
        except subprocess.TimeoutExpired:
            status.append("> 10 s")
    ended = Counter(await asyncio.gather(*tasks))
    return {"connections": n, "daemon_fds_8s_in": fds, "owner_status_s": status,
            "ended": dict(ended),
            "daemon_cpu_pct": round(100 * (_cpu_s(bsk.pid) - cpu0) / (time.monotonic() - t0))}


def main(n: int = 4500) -> int:
    common.exit_on_sigterm()
    common.header(f"Listener flood: {n} half-sent requests on the TCP listener")
    bsk = common.BskDaemon()
    bsk.env["BSK_TCP_PORT"] = "0"
    with bsk:
        assert bsk.pid is not None
        resource.prlimit(bsk.pid, resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))
        result = asyncio.run(_flood(bsk, n))
        log = (bsk.home / "daemon.log").read_text()
        result["too_many_open_files_log_lines"] = log.count("Too many open files")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:]))
