"""CLI round trip: wall time from process start to exit of `eval 1+1` on a warm daemon.

`bsk eval 1+1` (the venv's console script) next to `playwright-cli eval 1+1` (the official
launcher, same Chromium), both on an open local page, alternated in one run so machine
noise hits both. For context, the same run also times the bare interpreter the console
script starts (`.venv/bin/python -c pass`) and reports CPU time (user+sys) per call,
which a busy machine inflates far less than wall time.
Targets: bsk median <= 80 ms and <= 1/8 of playwright-cli's.

    .venv/bin/python bench/cli_roundtrip.py [N_BSK] [N_PEER]
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

import common
import playwright_peer as peer

N_BSK, N_PEER, WARMUP = 30, 15, 3
Sample = tuple[float, float]  # wall ms, cpu ms


def main(n_bsk: int = N_BSK, n_peer: int = N_PEER) -> int:
    common.exit_on_sigterm()
    common.header("CLI round trip: `eval 1+1` on a warm daemon and page")
    peer_argv = peer.ensure_installed()
    workdir = peer.write_config()
    runs: dict[str, list[Sample]] = {"bsk": [], "peer": [], "python": []}
    try:
        with common.page_server() as url, common.BskDaemon() as bsk:
            bsk.run("open", url)
            opened = peer.run(["open", url], workdir)
            if opened.returncode != 0:
                raise RuntimeError(f"playwright-cli open failed:\n{opened.stdout}{opened.stderr}")

            def bsk_once() -> Sample:
                wall, cpu, cp = common.timed_ms(bsk.argv("eval", "1+1"), env=bsk.env)
                if cp.returncode != 0 or cp.stdout.strip() != "2":
                    raise RuntimeError(f"bsk eval: rc={cp.returncode} {cp.stdout}{cp.stderr}")
                return wall, cpu

            def peer_once() -> Sample:
                wall, cpu, cp = common.timed_ms([*peer_argv, "eval", "1+1"], cwd=workdir,
                                                env=peer._env())
                if cp.returncode != 0 or "### Result\n2\n" not in cp.stdout:
                    raise RuntimeError(f"playwright-cli eval: rc={cp.returncode} {cp.stdout}")
                return wall, cpu

            def python_once() -> Sample:
                wall, cpu, _ = common.timed_ms([str(common.PYTHON), "-c", "pass"], env=bsk.env)
                return wall, cpu

            kinds: dict[str, Callable[[], Sample]] = {
                "bsk": bsk_once, "peer": peer_once, "python": python_once}
            for once in kinds.values():
                for _ in range(WARMUP):
                    once()
            every = max(1, n_bsk // n_peer)  # one peer call after every `every` bsk calls
            for i in range(n_bsk):
                runs["bsk"].append(bsk_once())
                runs["python"].append(python_once())
                if (i + 1) % every == 0 and len(runs["peer"]) < n_peer:
                    runs["peer"].append(peer_once())
            while len(runs["peer"]) < n_peer:
                runs["peer"].append(peer_once())
    finally:
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)

    wall = {k: [w for w, _ in v] for k, v in runs.items()}
    cpu = {k: [c for _, c in v] for k, v in runs.items()}
    names = {"bsk": "bsk eval 1+1", "peer": f"playwright-cli {common.peer_version()} eval 1+1",
             "python": "(floor) .venv/bin/python -c pass"}
    print("wall time, process start to exit:")
    for k, name in names.items():
        print("  " + common.describe(name, wall[k]))
    print("CPU time (user+sys) of the process:")
    for k, name in names.items():
        print("  " + common.describe(name, cpu[k]))
    ours, theirs = common.median(wall["bsk"]), common.median(wall["peer"])
    print(f"  playwright-cli / bsk, wall medians: {theirs / ours:.1f}x")
    ok = common.verdict("bsk median", ours, 80)
    ok &= common.verdict("bsk median vs playwright-cli/8", ours, theirs / 8)
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:3]))
