"""Run the peer tool `playwright-cli` (npm package @playwright/cli) for benchmarks.

Stdlib only. The package is pinned in bench/package.json and installed into
bench/node_modules; it is pointed at the system Chromium (no browser download).

How playwright-cli works (v0.1.22):
  * `playwright-cli open URL` spawns a detached daemon (node .../cliDaemon.js)
    that launches Chromium and listens on a unix socket; every later call is a
    short-lived node client that talks to that daemon.  `close` / `close-all`
    stop it; headless sessions also exit after 1 h idle (`open --idle-timeout=MS`).
  * The "workspace" is the nearest ancestor of the cwd holding a `.playwright`
    directory; the config is read from `<cwd>/.playwright/cli.config.json`
    (or `--config=FILE` on `open`).  Session files live in
    ~/.cache/ms-playwright/daemon/<sha1(workspace)[:16]>/<session>.session.
  * Never use `playwright-cli kill-all`: it SIGKILLs every process on the host
    whose command line mentions cliDaemon.js / run-mcp-server etc.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
CLI_JS = BENCH_DIR / "node_modules" / "@playwright" / "cli" / "playwright-cli.js"
# Same program without the @playwright/cli wrapper (which loads the 0.6 s coreBundle
# only for its update check): ~2x faster per call, but not what users type.
CORE_CLI_JS = BENCH_DIR / "node_modules/playwright-core/lib/tools/cli-client/cli.js"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Working directories created by write_config(); close_all() stops their daemons.
_workdirs: list[Path] = []


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["NO_UPDATE_NOTIFIER"] = "1"  # else: 1 fetch/day to registry.npmjs.org per client call
    env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    env.pop("PLAYWRIGHT_CLI_SESSION", None)  # would silently redirect to another session
    return env


# agent-browser (npm, pinned in bench/package.json): its Linux binary ships in the package.
AGENT_BROWSER = BENCH_DIR / "node_modules" / "agent-browser" / "bin" / "agent-browser-linux-x64"


def agent_browser_env() -> dict[str, str]:
    """agent-browser on Debian's Chromium (it downloads none)."""
    return {**_env(), "AGENT_BROWSER_EXECUTABLE_PATH": DEFAULT_CHROMIUM,
            "AGENT_BROWSER_ARGS": "--no-sandbox,--disable-gpu"}


def ensure_installed(fast: bool = False) -> list[str]:
    """Install bench/node_modules if missing; return the argv prefix for playwright-cli.

    fast=True returns the playwright-core entry point (skips the wrapper; see CORE_CLI_JS).
    """
    if not CLI_JS.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm not found on PATH")
        cmd = [npm, "ci"] if (BENCH_DIR / "package-lock.json").exists() else [npm, "install"]
        subprocess.run([*cmd, "--no-audit", "--no-fund"], cwd=BENCH_DIR, env=_env(), check=True)
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node not found on PATH")
    return [node, str(CORE_CLI_JS if fast else CLI_JS)]


def write_config(
    workdir: str | os.PathLike[str] | None = None,
    executable_path: str = DEFAULT_CHROMIUM,
    extra_args: list[str] | None = None,
) -> Path:
    """Create a workspace dir with .playwright/cli.config.json; return its path (use as cwd)."""
    wd = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="bsk-pwcli-"))
    wd = wd.resolve()
    (wd / ".playwright").mkdir(parents=True, exist_ok=True)
    config = {
        "browser": {
            "browserName": "chromium",  # default would be channel "chrome" (/opt/google/chrome)
            "isolated": True,  # in-memory profile
            "launchOptions": {
                "executablePath": executable_path,
                "headless": True,
                "chromiumSandbox": False,
                "args": CHROMIUM_ARGS + list(extra_args or []),
            },
        },
        "outputDir": str(wd / "out"),  # snapshots/console logs written by open/click/goto
    }
    (wd / ".playwright" / "cli.config.json").write_text(json.dumps(config, indent=2) + "\n")
    if wd not in _workdirs:
        _workdirs.append(wd)
    return wd


def run(
    args: list[str],
    cwd: str | os.PathLike[str],
    timeout: float = 120,
    prefix: list[str] | None = None,
    fast: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `playwright-cli ARGS` in workspace `cwd` (made by write_config).

    Exit status is 1 on tool errors (e.g. unknown ref), output is markdown on stdout.
    """
    argv = (prefix or []) + ensure_installed(fast) + list(args)
    return subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def _daemon_dir(workdir: Path) -> Path:
    """Where playwright-cli keeps session files for this workspace (mirrors registry.js)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha1(str(workdir).encode()).hexdigest()[:16]
    return Path(cache, "ms-playwright", "daemon", key)


def close_all(workdirs: list[str | os.PathLike[str]] | None = None) -> None:
    """Stop the daemons (and their browsers) of every workspace made by write_config()."""
    for wd in list(workdirs) if workdirs is not None else list(_workdirs):
        wd = Path(wd).resolve()
        if (wd / ".playwright").is_dir():
            try:
                run(["close-all"], cwd=wd, timeout=60)
            except subprocess.TimeoutExpired:
                pass
            shutil.rmtree(_daemon_dir(wd), ignore_errors=True)
    if workdirs is None:
        _workdirs.clear()


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_pss_kb(pid: int) -> int:
    """Sum of Pss (KB, shared pages split fairly) of pid and its live descendants."""
    total = 0
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def peak_rss_kb(args: list[str], cwd: str | os.PathLike[str]) -> tuple[int, str]:
    """Peak RSS (KB) of a single playwright-cli client call, and the method used."""
    if os.access("/usr/bin/time", os.X_OK):
        with tempfile.NamedTemporaryFile("r", suffix=".rss") as tf:
            cp = run(args, cwd, prefix=["/usr/bin/time", "-f", "%M", "-o", tf.name])
            cp.check_returncode()
            return int(tf.read().strip().splitlines()[-1]), "/usr/bin/time -f %M"
    import resource

    run(args, cwd).check_returncode()
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "getrusage(RUSAGE_CHILDREN)"


_PAGE = b"""<!doctype html><html><head><title>Login</title>
<link rel="icon" href="data:,"></head><body>
<h1>Sign in</h1>
<form onsubmit="event.preventDefault();
  document.getElementById('out').textContent = 'Hello ' + document.getElementById('user').value;">
<label for="user">Username</label><input id="user" autocomplete="username">
<label for="pw">Password</label><input id="pw" type="password" autocomplete="current-password">
<button type="submit">Log in</button>
</form><p id="out"></p></body></html>
"""


def _self_check() -> int:
    import http.server
    import re
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(_PAGE)))
            self.end_headers()
            self.wfile.write(_PAGE)

        def log_message(self, *a: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"

    print("playwright-cli argv prefix:", ensure_installed())
    wd = write_config()
    print("workspace:", wd)
    try:
        t0 = time.perf_counter()
        cp = run(["open", url], wd)
        print(f"open: rc={cp.returncode} {1000 * (time.perf_counter() - t0):.0f} ms")
        if cp.returncode != 0:
            print(cp.stdout, cp.stderr, sep="\n")
            return 1
        m = re.search(r"opened with pid (\d+)", cp.stdout)
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            cp = run(["eval", "1+1"], wd)
            times.append(1000 * (time.perf_counter() - t0))
            if cp.returncode != 0 or "### Result\n2\n" not in cp.stdout:
                print("eval failed:", cp.returncode, cp.stdout, cp.stderr)
                return 1
        print(
            f"eval 1+1 x10: median {statistics.median(times):.0f} ms "
            f"(min {min(times):.0f}, max {max(times):.0f})"
        )
        rss, how = peak_rss_kb(["eval", "1+1"], wd)
        print(f"peak RSS of one client call: {rss} KB ({rss / 1024:.1f} MiB) via {how}")
        if m:
            print(
                f"daemon+chromium tree (pid {m.group(1)}): "
                f"{tree_pss_kb(int(m.group(1))) / 1024:.0f} MiB (Pss sum)"
            )
        return 0
    finally:
        close_all()
        server.shutdown()
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(_self_check())
