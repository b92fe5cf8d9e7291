"""CLI round trip: `eval 1+1` on a warm daemon and page, whole processes, in one run.

Alternated round-robin so machine noise hits every kind alike:
  * the floor: `.venv/bin/python -I -S -c pass`, the bare interpreter bsk's launcher starts;
  * `bsk eval 1+1` through bsk's own launcher (.venv/bin/bsk: -I -S, the daemon reads and
    prints the command line; browserskill/cli/fast.py);
  * the same call through pip's console-script wrapper and the whole CLI in the client,
    as `bsk` ran before its launcher (written to a temp file for the run);
  * playwright-cli (npm @playwright/cli) and agent-browser (npm agent-browser, a Rust
    binary), both pinned in bench/package.json, on Debian's Chromium.
Wall time from process start to exit, and CPU time (user+sys) per call, which a busy
machine inflates far less than wall time.
Targets: bsk <= 1.3x the floor in wall and CPU medians; bsk <= 80 ms and <= 1/8 of
playwright-cli's.

    .venv/bin/python bench/cli_roundtrip.py [N] [N_PEER]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common
import playwright_peer as peer

N, N_PEER, WARMUP = 30, 10, 3
Sample = tuple[float, float]  # wall ms, cpu ms
PIP_WRAPPER = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from browserskill.cli.main import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def main(n: int = N, n_peer: int = N_PEER) -> int:
    common.exit_on_sigterm()
    common.header("CLI round trip: `eval 1+1` on a warm daemon and page")
    peer_argv = peer.ensure_installed()
    workdir = peer.write_config()
    scratch = Path(tempfile.mkdtemp(prefix="bsk-cli-bench-"))
    wrapper = scratch / "bsk-pip-wrapper"
    wrapper.write_text(PIP_WRAPPER.format(python=common.PYTHON))
    wrapper.chmod(0o755)
    ab_session = f"bsk-bench-{os.getpid()}"
    ab_env = peer.agent_browser_env()
    ab = [str(peer.AGENT_BROWSER), "--session", ab_session]
    runs: dict[str, list[Sample]] = {}
    try:
        with common.page_server() as url, common.BskDaemon() as bsk:
            bsk.run("open", url)
            opened = peer.run(["open", url], workdir)
            if opened.returncode != 0:
                raise RuntimeError(f"playwright-cli open failed:\n{opened.stdout}{opened.stderr}")
            has_ab = peer.AGENT_BROWSER.exists()
            if has_ab:
                _, _, cp = common.timed_ms([*ab, "open", url], env=ab_env)
                if cp.returncode != 0:
                    raise RuntimeError(f"agent-browser open failed:\n{cp.stdout}{cp.stderr}")

            def checked(argv: list[str], ok: Callable[[str], bool], **kw: Any) -> Sample:
                wall, cpu, cp = common.timed_ms(argv, **kw)
                if cp.returncode != 0 or not ok(cp.stdout):
                    raise RuntimeError(f"{argv}: rc={cp.returncode} {cp.stdout}{cp.stderr}")
                return wall, cpu

            def is_two(out: str) -> bool:
                return out.strip() == "2"

            kinds: dict[str, Callable[[], Sample]] = {
                "floor": lambda: checked([str(common.PYTHON), "-I", "-S", "-c", "pass"],
                                         lambda out: True, env=bsk.env),
                "bsk": lambda: checked(bsk.argv("eval", "1+1"), is_two, env=bsk.env),
                "bsk (pip wrapper)": lambda: checked([str(wrapper), "eval", "1+1"], is_two,
                                                     env=bsk.env),
            }
            if has_ab:
                kinds["agent-browser"] = lambda: checked([*ab, "eval", "1+1"], is_two,
                                                         env=ab_env)
            kinds["playwright-cli"] = lambda: checked(
                [*peer_argv, "eval", "1+1"], lambda out: "### Result\n2\n" in out,
                cwd=workdir, env=peer._env())
            runs = {k: [] for k in kinds}
            for once in kinds.values():
                for _ in range(WARMUP):
                    once()
            every = max(1, n // n_peer)  # playwright-cli is slow: once every `every` rounds
            for i in range(n):
                for kind, once in kinds.items():
                    if kind != "playwright-cli" or ((i + 1) % every == 0
                                                    and len(runs[kind]) < n_peer):
                        runs[kind].append(once())
    finally:
        if peer.AGENT_BROWSER.exists():
            common.timed_ms([*ab, "close"], env=ab_env)  # this run's session only
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)

    wall = {k: [w for w, _ in v] for k, v in runs.items() if v}
    cpu = {k: [c for _, c in v] for k, v in runs.items() if v}
    names = {"floor": "(floor) python -I -S -c pass", "bsk": "bsk eval 1+1 (launcher)",
             "bsk (pip wrapper)": "bsk eval 1+1 (pip wrapper, whole CLI)",
             "agent-browser": "agent-browser eval 1+1",
             "playwright-cli": f"playwright-cli {common.peer_version()} eval 1+1"}
    print("wall time, process start to exit:")
    for k in wall:
        print("  " + common.describe(names[k], wall[k]))
    print("CPU time (user+sys) of the process:")
    for k in cpu:
        print("  " + common.describe(names[k], cpu[k]))
    ours = common.median(wall["bsk"])
    for k in wall:
        if k != "bsk":
            print(f"  {k} / bsk: wall {common.median(wall[k]) / ours:.2f}x, "
                  f"CPU {common.median(cpu[k]) / max(common.median(cpu['bsk']), 0.01):.2f}x")
    ok = common.verdict("bsk wall median vs 1.3x the floor", ours,
                        1.3 * common.median(wall["floor"]))
    ok &= common.verdict("bsk CPU median vs 1.3x the floor", common.median(cpu["bsk"]),
                         1.3 * common.median(cpu["floor"]))
    ok &= common.verdict("bsk median", ours, 80)
    ok &= common.verdict("bsk median vs playwright-cli/8", ours,
                         common.median(wall["playwright-cli"]) / 8)
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:3]))
