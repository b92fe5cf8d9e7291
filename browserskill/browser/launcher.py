"""Finding a Chromium-family browser, launching it headless, resolving `--cdp-url`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

CANDIDATES = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "microsoft-edge",
)

INSTALL_HINT = (
    "install one (Debian/Ubuntu: `sudo apt-get install chromium`), or point BSK_BROWSER "
    "at a Chromium/Chrome/Edge executable, or attach to a running one with --cdp-url"
)


class LaunchError(Exception):
    pass


class NoBrowser(LaunchError):
    """No browser to launch: a retry can't help until one is installed."""


def find_browser() -> str | None:
    """`BSK_BROWSER` if set, else the first known browser on PATH."""
    override = os.environ.get("BSK_BROWSER")
    if override:
        found = shutil.which(override)
        return found or (override if os.access(override, os.X_OK) else None)
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def browser_version(executable: str) -> str | None:
    try:
        out = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


HEADLESS_UNUSED_FEATURES = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")


def switches(*, headless: bool = True) -> list[str]:
    """The switches bsk's Chromium runs with wherever it runs: launched here, or on a
    Selenium Grid node (`goog:chromeOptions.args`)."""
    args = [
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        # Its own profile's passwords stay in the profile: a headed launch never stops on
        # a desktop keyring's unlock prompt.
        "--password-store=basic",
        # A restored page fires no load event; history navigation must look like a load.
        "--disable-back-forward-cache",
        "--enable-features=WebMCP",
        "--window-size=1280,720",
    ]
    if headless:
        args.insert(0, "--headless")
        # Each new window preloads two WebUI pages for its address bar's suggestions
        # popup, ~0.9 s of CPU a window in Chromium 156 (docs/design.md, "The browser's
        # cost of a window") that no one sees headless; the popup is then Chromium's views one.
        args.append("--disable-features=" + ",".join(HEADLESS_UNUSED_FEATURES))
    if os.geteuid() == 0 or os.environ.get("BSK_NO_SANDBOX"):
        args.insert(0, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return args


def launch_args(executable: str, profile: Path, *, headless: bool = True, pipe: bool = False,
                debugging_port: int | None = 0) -> list[str]:
    """Chromium's command line with the daemon's switches. `pipe`: DevTools on fds 3/4
    (the keeper's); `debugging_port`: also (or instead) a DevTools TCP port (0: any free
    one; None: none) — which any local user could connect to."""
    return [
        executable,
        *switches(headless=headless),
        f"--user-data-dir={profile}",
        *(["--remote-debugging-pipe"] if pipe else []),
        *([f"--remote-debugging-port={debugging_port}"] if debugging_port is not None else []),
        "about:blank",
    ]


@dataclass
class LaunchedBrowser:
    """The embedded browser, run by its keeper (browser/keeper.py), which holds its
    DevTools pipe and serves it on `socket` (0600, in the state dir)."""

    pid: int  # the browser: leader of its own process group
    keeper_pid: int
    socket: str
    executable: str
    profile: Path
    cdp_url: str | None = None  # its DevTools TCP endpoint, only with --expose-cdp

    @property
    def endpoint(self) -> str:
        return "unix:" + self.socket

    def alive(self) -> bool:
        return process_alive(self.keeper_pid) and process_alive(self.pid)

    def terminate(self, grace: float = 3.0) -> None:
        """The keeper stops the browser on SIGTERM; its process group goes too."""
        deadline = time.monotonic() + grace
        for pid, group in ((self.keeper_pid, False), (self.pid, True)):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if not process_alive(pid):
                    break
                try:
                    (os.killpg if group else os.kill)(pid, sig)
                    if group:  # a stopped (SIGSTOP) browser must run to handle SIGTERM
                        os.killpg(pid, signal.SIGCONT)
                except ProcessLookupError:
                    break
                while process_alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.05)
                deadline = time.monotonic() + grace
        _reap(self.keeper_pid)

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "keeper_pid": self.keeper_pid, "socket": self.socket,
                "executable": self.executable, "profile": str(self.profile),
                "cdp_url": self.cdp_url}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LaunchedBrowser:
        return cls(int(d["pid"]), int(d["keeper_pid"]), str(d["socket"]),
                   str(d["executable"]), Path(d["profile"]), d.get("cdp_url"))


def process_state(pid: int) -> str | None:
    """The process's state letter from /proc (R, S, T: stopped, Z, …); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def process_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting for a reaper (the keeper,
    our child, until it is reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # gone since the signal
        return False


def _wait_or_kill(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


async def launch(
    executable: str, profile: Path, log_file: Path, state_dir: Path, *,
    headless: bool = True, expose_port: int | None = None, timeout: float = 30.0,
) -> LaunchedBrowser:
    """Start the keeper, which starts the browser on a DevTools pipe; return once the
    keeper's socket listens. No TCP port unless `expose_port` (--expose-cdp) asks."""
    profile.mkdir(parents=True, exist_ok=True, mode=0o700)
    (profile / "DevToolsActivePort").unlink(missing_ok=True)
    state_file = state_dir / "keeper.json"
    state_file.unlink(missing_ok=True)
    socket_path = state_dir / "browser.sock"
    argv = launch_args(executable, profile, headless=headless, pipe=True,
                       debugging_port=expose_port)
    with open(log_file, "ab") as log:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "browserskill.browser.keeper", str(state_file),
             str(socket_path), str(log_file), "--", *argv],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True,  # it outlives the daemon, as the browser must
        )
    deadline = time.monotonic() + timeout
    try:
        while not state_file.exists():
            if keeper.poll() is not None:
                raise LaunchError(f"{executable} exited at start (keeper code "
                                  f"{keeper.returncode}); see {log_file}")
            if time.monotonic() > deadline:
                raise LaunchError(f"{executable} did not start within {timeout:g}s")
            await asyncio.sleep(0.02)
    except BaseException:  # given up or cancelled: no keeper (nor browser) left behind
        keeper.terminate()  # the keeper stops its browser on SIGTERM
        await asyncio.to_thread(_wait_or_kill, keeper)
        raise
    state = json.loads(state_file.read_text())
    return LaunchedBrowser(int(state["browser_pid"]), keeper.pid, str(state["socket"]),
                           executable, profile, state.get("cdp_url"))


async def resolve_cdp_url(url: str, timeout: float = 10.0) -> str:
    """The WebSocket URL of a `--cdp-url`: `ws(s)://…` is used as is; `http(s)://…` asks
    `/json/version` (a Chromium's DevTools HTTP endpoint) and, where nothing serves it (a
    Selenium Grid's `se/cdp`, a WebSocket-only service), is the same URL over ws(s).
    A query string (a Browserless `?token=`) is kept in both."""
    parts = urlsplit(url)
    if parts.scheme in ("ws", "wss"):
        return url
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LaunchError(f"--cdp-url must be an http://, https://, ws:// or wss:// URL: {url}")
    ws_scheme = "wss" if parts.scheme == "https" else "ws"
    import httpx  # here: the CLI imports this module for `bsk doctor`, and starts light

    probe = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/json/version",
                        parts.query, ""))
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            answer = await client.get(probe)
    except (httpx.HTTPError, httpx.InvalidURL) as e:
        raise LaunchError(f"no DevTools endpoint at {url}: {e or type(e).__name__}") from None
    found = None
    if answer.status_code == 200:
        try:
            found = str(answer.json()["webSocketDebuggerUrl"])
        except (ValueError, KeyError, TypeError):
            found = None
    if found is None:  # no discovery here: the URL is the WebSocket endpoint itself
        return urlunsplit((ws_scheme, parts.netloc, parts.path, parts.query, ""))
    ws = urlsplit(found)
    # The browser names its own host (often 127.0.0.1 or a container's name); reach it
    # where the user did, and keep the user's query (a token) if it has none of its own.
    return urlunsplit((ws_scheme if ws.scheme in ("ws", "wss") else ws.scheme, parts.netloc,
                       ws.path, ws.query or parts.query, ""))


def redacted(url: str) -> str:
    """The URL as shown to people: a query string (a Browserless `?token=`) hidden."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "…" if parts.query else "", ""))


def http_endpoint(ws_url: str) -> str | None:
    """The DevTools HTTP endpoint of a Chromium's own browser WebSocket
    (`ws://h:p/devtools/browser/…` → `http://h:p`); None for anything else (a proxy's)."""
    parts = urlsplit(ws_url)
    if parts.scheme not in ("ws", "wss") or not parts.path.startswith("/devtools/"):
        return None
    return urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, "", "", ""))
