"""Daemon CPU per operation, one source tree against another, alternated in one run.

The load is bench/async_client.py's (SESSIONS sessions x CALLS `eval 1+1` through one
AsyncClient, then raw CDP `Runtime.evaluate` on the same tabs); the daemon runs in the
foreground from each tree in turn (PYTHONPATH=TREE, so an exported tree such as
`git archive integ browserskill | tar -x -C /tmp/before` is measured as it is), ROUNDS
times each, A B A B …. On a shared machine alternate, and compare medians.

    .venv/bin/python bench/daemon_cpu.py TREE [TREE …] [--rounds N] [--sessions S]
        [--calls C] [--profile DIR]   # DIR/<n>.prof: cProfile with a CPU-time timer
        [--by-process]                # also each process's CPU per op (/proc of all)

A tree named `TREE:no-journal` is TREE's daemon with the journal's writes skipped (they
answer "written" at once; nothing else changes): not a daemon anyone should run, but
the ceiling the journal's two writes a call leave, measured beside the real one.

`--by-process` splits each phase's CPU by process (the daemon, the keeper, Chromium's
browser, renderer and other processes, the rest): with the 2 CPUs full, throughput is the
inverse of that total, so a cut anywhere in it counts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import async_client
import common

PROFILED = """
import cProfile, os, sys, time
from {module}.__main__ import main
profile = cProfile.Profile(time.process_time)
profile.enable()
try:
    main([])
finally:
    profile.disable()
    profile.dump_stats(os.environ["BSK_BENCH_PROFILE"])
"""
WITHOUT_JOURNAL = """
from browserskill.dispatch.journal import Journal
async def written_soon(self, op):
    return True
Journal.record = lambda self, op: True
Journal.record_soon = written_soon
from {module}.__main__ import main
main([])
"""
NO_JOURNAL = ":no-journal"


def daemon_module(tree: str) -> str:
    """The daemon's module in `tree`: `browserskill.api` now, `browserskill.daemon` in a
    tree from before 2026-12-02 (such as issue 23's start, `4946110`)."""
    api = os.path.join(tree, "browserskill", "api", "__main__.py")
    return "browserskill.api" if os.path.exists(api) else "browserskill.daemon"


def one(tree: str, sessions: int, calls: int, profile: str | None,
        by_process: bool = False) -> tuple[float, float, async_client.Run, async_client.Run]:
    """Daemon CPU ms per op and client/raw throughput for one daemon run from `tree`."""
    label, tree = tree, tree.removesuffix(NO_JOURNAL)
    home = tempfile.mkdtemp(prefix="bsk-bench-cpu-")
    env = {**os.environ, "BSK_HOME": home, "BSK_EPHEMERAL": "1", "BSK_IDLE_TIMEOUT": "900",
           "BSK_EXPOSE_CDP": "0", "PYTHONPATH": os.path.abspath(tree)}
    env.pop("BSK_SESSION", None)
    argv = [sys.executable, "-m", daemon_module(tree)]
    if profile:
        env["BSK_BENCH_PROFILE"] = profile
        argv = [sys.executable, "-c", PROFILED.format(module=daemon_module(tree))]
    if label.endswith(NO_JOURNAL):
        argv = [sys.executable, "-c", WITHOUT_JOURNAL.format(module=daemon_module(tree))]
    with open(os.path.join(home, "daemon.log"), "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=log, cwd=home,
                                start_new_session=True)
    sock = os.path.join(home, "bsk.sock")
    try:
        deadline = time.monotonic() + 60
        while not _answers(sock):  # the socket file exists a moment before it listens
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"the daemon from {tree} did not start (see {home})")
            time.sleep(0.05)
        with common.page_server() as url:
            client, raw = asyncio.run(async_client.measure(proc.pid, sock, url, sessions,
                                                           calls, by_process))
        print(f"{label}\n{async_client.line('client', client)}\n"
              f"{async_client.line('raw CDP', raw)}")
        return (1000 * client.daemon_cpu / client.ops,
                (client.ops / client.wall) / (raw.ops / raw.wall), client, raw)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        with open(os.path.join(home, "daemon.log"), errors="replace") as f:
            shared = [x.split(": ", 1)[-1].strip() for x in f if "writes shared" in x]
        if shared:  # what batching the journal's writes saved (one line, at its stop)
            print(f"  journal: {shared[-1]}")
        shutil.rmtree(home, ignore_errors=True)


def _answers(sock: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(sock)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("trees", nargs="+")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sessions", type=int, default=async_client.SESSIONS)
    p.add_argument("--calls", type=int, default=async_client.CALLS)
    p.add_argument("--profile", metavar="DIR")
    p.add_argument("--by-process", action="store_true")
    args = p.parse_args()
    common.exit_on_sigterm()
    figures: dict[str, list[tuple[float, float]]] = {t: [] for t in args.trees}
    phases = {t: (async_client.Run(), async_client.Run()) for t in args.trees}
    n = 0
    for _ in range(args.rounds):
        for tree in args.trees:
            n += 1
            profile = os.path.join(args.profile, f"{n}.prof") if args.profile else None
            cpu, ratio, client, raw = one(tree, args.sessions, args.calls, profile,
                                          args.by_process)
            figures[tree].append((cpu, ratio))
            phases[tree][0].add(client)
            phases[tree][1].add(raw)
    for tree, runs in figures.items():
        cpu = statistics.median(c for c, _ in runs)
        ratio = statistics.median(r for _, r in runs)
        print(f"{tree}: daemon CPU/op median {cpu:.3f} ms "
              f"({', '.join(f'{c:.3f}' for c, _ in runs)}), client/raw throughput median "
              f"{ratio:.3f}x")
        if args.by_process:
            for name, run in zip(("client", "raw CDP"), phases[tree], strict=True):
                print(f"  {name:<8} {run.ops / run.wall:6.0f} ops/s  {run.per_process()}")
    return 0


if __name__ == "__main__":
    common.run_main(main)
