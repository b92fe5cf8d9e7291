"""Shared benchmark plumbing: a throw-away bsk daemon, a local page, figures and verdicts.

Stdlib only, so every bench script can import it with any Python; the scripts run with
the project's venv (`.venv/bin/python bench/NAME.py`).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
BSK = ROOT / ".venv" / "bin" / "bsk"  # the console script, as users run it
TEST_PAGES = ROOT / "tests" / "pages"
PYTHON = ROOT / ".venv" / "bin" / "python"

PAGE = b"""<!doctype html><html><head><title>Bench</title><link rel="icon" href="data:,">
</head><body><h1>Bench page</h1><p id="out">ready</p></body></html>
"""


# -- what an agent reads ------------------------------------------------------------------


class ToolFailed(RuntimeError):
    """A tool's command exited non-zero (what it printed is in the message)."""


def printed(cp: subprocess.CompletedProcess[str], argv: list[str]) -> str:
    """What a command printed (stdout and stderr: an agent reads both); ToolFailed if it
    failed."""
    if cp.returncode != 0:
        raise ToolFailed(f"{' '.join(argv[-3:])}: exit {cp.returncode}: "
                         f"{(cp.stdout + cp.stderr).strip()[:300]}")
    return cp.stdout + cp.stderr


Step = tuple[str, str]  # a command as typed, what it printed


class Recorder:
    """Runs commands through `run(*args)` (what it printed), keeping each as a Step."""

    def __init__(self, run: Callable[..., str]) -> None:
        self.run = run
        self.steps: list[Step] = []

    def __call__(self, *args: str) -> str:
        out = self.run(*args)
        self.steps.append((" ".join(args), out))
        return out


def tokens(text: str) -> float:
    """Tokens an agent reads, estimated as characters / 4 (no tokenizer: the same rule
    for every tool)."""
    return len(text) / 4


def ref_of(text: str, role: str, name: str) -> str:
    """The ref of the node `role "name"` in a snapshot's text (bsk's and the peers')."""
    match = re.search(rf'{role} "{re.escape(name)}"[^\n]*\[ref=([\w-]+)\]', text)
    if not match:
        raise RuntimeError(f"no {role} {name!r} with a ref in:\n{text}")
    return match.group(1)


# -- processes ---------------------------------------------------------------------------


def run_main(main: Callable[..., int], *args: Any) -> NoReturn:
    """Exit with main's status: 0 targets met, 1 a target missed, 2 the bench failed."""
    try:
        code = main(*args)
    except Exception:
        traceback.print_exc()
        code = 2
    sys.exit(code)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so `finally:` blocks (daemon stop, close_all) run."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class BskDaemon:
    """A bsk daemon on its own temporary BSK_HOME (ephemeral profile), stopped on exit."""

    def __init__(self, *, expose_cdp: bool = False) -> None:
        """`expose_cdp`: its browser also opens a DevTools port, for a bench that talks
        raw CDP to the same browser (the daemon itself uses a private pipe)."""
        self.home = Path(tempfile.mkdtemp(prefix="bsk-bench-"))
        self.env = {**os.environ, "BSK_HOME": str(self.home), "BSK_EPHEMERAL": "1",
                    "BSK_IDLE_TIMEOUT": "900",  # a safety net if cleanup never runs
                    # Byte-code cache as an installed package has it, kept out of the tree.
                    "PYTHONPYCACHEPREFIX": str(self.home / "pycache")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env.pop("BSK_SESSION", None)
        if expose_cdp:
            self.env["BSK_EXPOSE_CDP"] = "0"
        self.pid: int | None = None

    @property
    def socket(self) -> str:
        return str(self.home / "bsk.sock")

    def argv(self, *args: str) -> list[str]:
        return [str(BSK), *args]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cp = subprocess.run(self.argv(*args), env=self.env, capture_output=True, text=True,
                            timeout=120)
        if check and cp.returncode != 0:
            raise RuntimeError(f"bsk {' '.join(args)} exited {cp.returncode}:\n"
                               f"{cp.stdout}{cp.stderr}")
        return cp

    def json(self, *args: str) -> Any:
        return json.loads(self.run("--json", *args).stdout)

    def start(self) -> BskDaemon:
        self.run("daemon", "start")
        self.pid = int(self.json("daemon", "status")["pid"])
        return self

    def stop(self) -> None:
        try:
            if os.path.exists(self.socket):
                self.run("daemon", "stop", check=False)
            if self.pid is not None:
                _wait_gone(self.pid)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> BskDaemon:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_gone(pid: int, grace: float = 10.0) -> None:
    """Wait for our daemon to exit; SIGTERM it (by pid) if `daemon stop` did not."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)


def processes() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU s so far (utime + stime), command line) of every process."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        out[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, cmd)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def peer_version() -> str:
    """The installed @playwright/cli version (bench/package.json pins it)."""
    pkg = BENCH_DIR / "node_modules" / "@playwright" / "cli" / "package.json"
    try:
        return str(json.loads(pkg.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "?"


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory figure (KB) of one process from /proc/PID/status (VmRSS, VmHWM, …)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def peak_rss_kb(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Peak RSS (KB) of one run of argv, and how it was measured."""
    if os.access("/usr/bin/time", os.X_OK):
        with tempfile.NamedTemporaryFile("r", suffix=".rss") as tf:
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf.name, *argv], env=env,
                           capture_output=True, check=True, timeout=60)
            return int(tf.read().split()[-1]), "/usr/bin/time -f %M"
    # A fresh parent, so RUSAGE_CHILDREN sees this one child only.
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
             "capture_output=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *argv], env=env, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return int(out.split()[-1]), "getrusage(RUSAGE_CHILDREN)"


def timed_ms(
    argv: list[str], *, cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall time (ms) from process start to exit, its CPU time (ms, user+sys), the process.

    CPU time comes from RUSAGE_CHILDREN before/after, so calls must not overlap.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cp = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    wall = 1000 * (time.perf_counter() - t0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, cp


# -- a local page ------------------------------------------------------------------------


@contextlib.contextmanager
def page_server() -> Iterator[str]:
    """Serve PAGE on 127.0.0.1 (any path); yield its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def fixture_sites(extra: dict[str, bytes] | None = None) -> Iterator[tuple[str, str]]:
    """tests/pages (plus `extra` pages by path, e.g. {"/x.html": b"..."}) on two loopback
    servers; yield their bases: "http://127.0.0.1:P" and "http://localhost:Q" (another
    site, so Chromium runs its frames out of process, as in tests/conftest.py).
    /favicon.ico answers 204, so no tool logs a 404 for it."""
    pages = dict(extra or {})

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/favicon.ico" or path in pages:
                body = pages.get(path, b"")
                self.send_response(200 if body else 204)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                               partial(Handler, directory=str(TEST_PAGES)))
               for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield (f"http://127.0.0.1:{servers[0].server_address[1]}",
               f"http://localhost:{servers[1].server_address[1]}")
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


# -- the HTTP API --------------------------------------------------------------------------


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("bsk", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def api(sock: str, method: str, path: str, body: Any = None,
        timeout: float = 120) -> tuple[int, dict[str, str], Any, float]:
    """One call to the daemon's HTTP API on a new connection: status, headers, JSON body,
    and the wall time (ms) from connect to the last byte of the answer."""
    conn = _UnixHTTPConnection(sock, timeout)
    payload = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if payload is not None else {}
    try:
        t0 = time.perf_counter()
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        wall = 1000 * (time.perf_counter() - t0)
        return response.status, dict(response.getheaders()), json.loads(data), wall
    finally:
        conn.close()


def stamp(iso: str) -> float:
    """An API timestamp ("2026-11-30T09:07:27.391Z") as epoch seconds."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def op_ms(answer: dict[str, Any]) -> float:
    """An operation's own time (ms), from its result's started_at to ended_at (1 ms
    resolution: the stamps carry milliseconds)."""
    return 1000 * (stamp(answer["ended_at"]) - stamp(answer["started_at"]))


# -- figures -----------------------------------------------------------------------------


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def quantile(xs: list[float], q: float) -> float:
    """Nearest-rank quantile (q in 0..1)."""
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def p90(xs: list[float]) -> float:
    return quantile(xs, 0.9)


def describe(name: str, xs: list[float], unit: str = "ms", digits: int = 1) -> str:
    f = f"{{:.{digits}f}}"
    return (f"{name:<34} median {f.format(median(xs))} {unit}  p90 {f.format(p90(xs))} {unit}  "
            f"min {f.format(min(xs))}  max {f.format(max(xs))}  (n={len(xs)})")


def verdict(label: str, value: float, target: float, unit: str = "ms") -> bool:
    """Print one target line (value ≤ target); return whether it passed."""
    ok = value <= target
    print(f"  target {label}: {value:.2f} {unit} <= {target:.2f} {unit}  "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


def header(title: str) -> None:
    chromium = "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        chromium = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True,
                                  text=True, timeout=20).stdout.strip()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"== {title}")
    print(f"   {time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} CPUs  load {load}  "
          f"Python {platform.python_version()}  {chromium}")
