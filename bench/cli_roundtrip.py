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
machine inflates far less than wall time. Where bsk's time goes, in the same rounds: the
daemon's side of the call (`POST /v1/cli` with the launcher's own request, and the same
tool over `POST …/tools/eval`, each from this warm process on a new connection, connect
to the last byte) and the daemon's CPU per call of each kind (/proc/PID/stat).
Targets: bsk <= 1.3x the floor in wall and CPU medians; bsk <= 80 ms and <= 1/8 of
playwright-cli's.

    .venv/bin/python bench/cli_roundtrip.py [N] [N_PEER]
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common
import playwright_peer as peer

from browserskill import __version__
from browserskill.base import http1
from browserskill.cli import fast

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


def _round_trip_ms(sock_path: str, request: bytes) -> tuple[float, bytes]:
    """One request on a new connection, as the launcher sends it: wall ms, the answer."""
    t0 = time.perf_counter()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(sock_path)
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    finally:
        sock.close()
    return 1000 * (time.perf_counter() - t0), data


def _daemon_cpu_ms(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


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

            line = fast._command_line(["eval", "1+1"], {})

            def daemon_side(path: str, headers: tuple[tuple[str, str], ...], body: bytes,
                            ok: Callable[[bytes], bool]) -> Sample:
                wall, answer = _round_trip_ms(bsk.socket, http1.request(
                    "POST", path, (("Connection", "close"), *headers), body))
                if not ok(answer):
                    raise RuntimeError(f"POST {path}: {answer[-400:]!r}")
                return wall, 0.0

            kinds: dict[str, Callable[[], Sample]] = {
                "floor": lambda: checked([str(common.PYTHON), "-I", "-S", "-c", "pass"],
                                         lambda out: True, env=bsk.env),
                "bsk": lambda: checked(bsk.argv("eval", "1+1"), is_two, env=bsk.env),
                "bsk (pip wrapper)": lambda: checked([str(wrapper), "eval", "1+1"], is_two,
                                                     env=bsk.env),
            }
            kinds["daemon /v1/cli"] = lambda: daemon_side(
                "/v1/cli", (("X-Op-Id", "op_" + os.urandom(6).hex()),
                            ("X-Bsk-Version", __version__)), line,
                lambda answer: answer.endswith(b"\r\n\r\n0 2 0\n2\n"))
            kinds["daemon tools/eval"] = lambda: daemon_side(
                "/v1/sessions/default/tools/eval", (("Content-Type", "application/json"),),
                b'{"expression":"1+1"}', lambda answer: b'"value":2}' in answer)
            if has_ab:
                kinds["agent-browser"] = lambda: checked([*ab, "eval", "1+1"], is_two,
                                                         env=ab_env)
            kinds["playwright-cli"] = lambda: checked(
                [*peer_argv, "eval", "1+1"], lambda out: "### Result\n2\n" in out,
                cwd=workdir, env=peer._env())
            runs = {k: [] for k in kinds}
            daemon_cpu: dict[str, list[float]] = {k: [] for k in kinds}
            assert bsk.pid is not None
            for once in kinds.values():
                for _ in range(WARMUP):
                    once()
            every = max(1, n // n_peer)  # playwright-cli is slow: once every `every` rounds
            for i in range(n):
                for kind, once in kinds.items():
                    if kind != "playwright-cli" or ((i + 1) % every == 0
                                                    and len(runs[kind]) < n_peer):
                        before = _daemon_cpu_ms(bsk.pid)
                        runs[kind].append(once())
                        daemon_cpu[kind].append(_daemon_cpu_ms(bsk.pid) - before)
    finally:
        if peer.AGENT_BROWSER.exists():
            common.timed_ms([*ab, "close"], env=ab_env)  # this run's session only
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)

    in_process = ("daemon /v1/cli", "daemon tools/eval")
    wall = {k: [w for w, _ in v] for k, v in runs.items() if v and k not in in_process}
    cpu = {k: [c for _, c in v] for k, v in runs.items() if v and k not in in_process}
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
    print("the daemon's side, from this warm process (new connection, connect to last byte):")
    for k in in_process:
        print("  " + common.describe(f"POST {k.split()[1]} (eval 1+1)",
                                     [w for w, _ in runs[k]]))
    print("daemon CPU per call (mean; /proc clock ticks):")
    for k in ("floor", "bsk", "bsk (pip wrapper)", *in_process):  # floor: the idle daemon's
        print(f"  {k}: {sum(daemon_cpu[k]) / max(1, len(daemon_cpu[k])):.2f} ms")
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
