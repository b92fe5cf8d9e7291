"""Finding a Chromium-family browser, launching it headless, resolving `--cdp-url`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

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


def launch_args(executable: str, profile: Path, *, headless: bool = True) -> list[str]:
    args = [
        executable,
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
        # Sessions run side by side: none is throttled for not being the focused one.
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        "--enable-features=WebMCP",
        "--window-size=1280,720",
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        "about:blank",
    ]
    if headless:
        args.insert(1, "--headless")
    if os.geteuid() == 0 or os.environ.get("BSK_NO_SANDBOX"):
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return args


@dataclass
class LaunchedBrowser:
    pid: int  # leader of the browser's own process group
    ws_url: str
    executable: str
    profile: Path
    process: subprocess.Popen[bytes] | None = None  # None when re-adopted after a restart

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def terminate(self, grace: float = 3.0) -> None:
        if not self.alive():
            return
        deadline = time.monotonic() + grace
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                return
            while time.monotonic() < deadline:
                if self.process is not None:
                    try:
                        self.process.wait(0.05)
                        return
                    except subprocess.TimeoutExpired:
                        continue
                if not self.alive():
                    return
                time.sleep(0.05)
            deadline = time.monotonic() + grace

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "ws_url": self.ws_url, "executable": self.executable,
                "profile": str(self.profile)}


async def launch(
    executable: str, profile: Path, log_file: Path, *, headless: bool = True,
    timeout: float = 30.0,
) -> LaunchedBrowser:
    profile.mkdir(parents=True, exist_ok=True, mode=0o700)
    port_file = profile / "DevToolsActivePort"
    port_file.unlink(missing_ok=True)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            launch_args(executable, profile, headless=headless),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group: we stop all its helpers at once
        )
    deadline = time.monotonic() + timeout
    # Chromium writes the chosen port to this file once DevTools listens.
    while True:
        if proc.poll() is not None:
            raise LaunchError(
                f"{executable} exited with code {proc.returncode} at start; see {log_file}"
            )
        text = port_file.read_text() if port_file.exists() else ""
        lines = text.splitlines()
        if len(lines) >= 2:
            port, path = lines[0].strip(), lines[1].strip()
            return LaunchedBrowser(proc.pid, f"ws://127.0.0.1:{port}{path}", executable,
                                   profile, proc)
        if time.monotonic() > deadline:
            LaunchedBrowser(proc.pid, "", executable, profile, proc).terminate()
            raise LaunchError(f"{executable} did not open DevTools within {timeout:g}s")
        await asyncio.sleep(0.02)


async def resolve_cdp_url(url: str, timeout: float = 10.0) -> str:
    """Turn `http://host:port` (or a ws:// URL) into the browser's WebSocket URL."""
    if url.startswith(("ws://", "wss://")):
        return url
    if not url.startswith(("http://", "https://")):
        raise LaunchError(f"--cdp-url must start with http://, https://, ws:// or wss://: {url}")

    def fetch() -> str:
        with urllib.request.urlopen(url.rstrip("/") + "/json/version", timeout=timeout) as r:
            return str(json.load(r)["webSocketDebuggerUrl"])

    try:
        return await asyncio.to_thread(fetch)
    except Exception as e:
        raise LaunchError(f"no DevTools endpoint at {url}: {e}") from None
