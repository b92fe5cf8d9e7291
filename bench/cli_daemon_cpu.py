"""Daemon CPU per call: bsk's `POST /v1/cli` against `POST …/tools/eval`, in one run.

`eval 1+1` on a warm daemon and page, each request as the launcher sends it (a new
connection, `Connection: close`), sent from this process one after another; the daemon's
CPU (/proc/PID/stat, user+sys) over a block of CALLS calls of one kind, blocks of the two
kinds alternated ROUNDS times (cli_roundtrip.py's per-call clock ticks are too coarse
for ~1 ms). The daemon is this tree's (.venv/bin/bsk starts it).

    .venv/bin/python bench/cli_daemon_cpu.py [ROUNDS] [CALLS]
"""

from __future__ import annotations

import os
import statistics
import sys

import common
from cli_roundtrip import _daemon_cpu_ms, _round_trip_ms

from browserskill import __version__
from browserskill.base import http1
from browserskill.cli import fast

ROUNDS, CALLS = 5, 200


def main(rounds: int = ROUNDS, calls: int = CALLS) -> int:
    common.exit_on_sigterm()
    common.header("Daemon CPU per call: POST /v1/cli vs POST …/tools/eval")
    line = fast._command_line(["eval", "1+1"], {})

    def cli() -> bytes:
        return http1.request("POST", "/v1/cli", (
            ("Connection", "close"), ("X-Op-Id", "op_" + os.urandom(6).hex()),
            ("X-Bsk-Version", __version__)), line)

    def tool() -> bytes:
        return http1.request("POST", "/v1/sessions/default/tools/eval", (
            ("Connection", "close"), ("Content-Type", "application/json")),
            b'{"expression":"1+1"}')

    kinds = {"POST /v1/cli": (cli, b"\r\n\r\n0 2 0\n2\n"),
             "POST tools/eval": (tool, b'"value":2}')}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    with common.page_server() as url, common.BskDaemon() as bsk:
        bsk.run("open", url)
        assert bsk.pid is not None
        for _ in range(rounds):
            for kind, (request, ends) in kinds.items():
                before = _daemon_cpu_ms(bsk.pid)
                for _ in range(calls):
                    _, answer = _round_trip_ms(bsk.socket, request())
                    if ends not in answer:
                        raise RuntimeError(f"{kind}: {answer[-300:]!r}")
                cpu[kind].append((_daemon_cpu_ms(bsk.pid) - before) / calls)
    for kind, runs in cpu.items():
        print(f"  {kind}: daemon CPU/call median {statistics.median(runs):.3f} ms "
              f"({', '.join(f'{c:.3f}' for c in runs)})")
    return 0


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:3]))
