"""The daemon's parts wired together, and what it reports about itself."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.routing import Route

from browserskill import __version__
from browserskill.base import paths
from browserskill.base.catalog import tool_names
from browserskill.base.policy import Policy, PolicyError
from browserskill.base.policy import load as load_policy
from browserskill.browser import launcher
from browserskill.browser.extension_protocol import RECONNECT_GRACE_S
from browserskill.browser.manager import BrowserConfig, BrowserManager
from browserskill.dispatch.dispatcher import Dispatcher
from browserskill.dispatch.journal import Journal
from browserskill.session.session_store import SessionStore
from browserskill.session.sessions import SessionManager
from browserskill.tools.evidence import RECORDINGS_AFTER_RESTART

# A test names a Python file here (tests/support/faults.py) to reach inside the daemon.
# What a test build of the daemon runs at start with the daemon's parts wired: it returns
# routes to serve (docs/design.md, test hooks). Only `main(test_hook=...)` passes one; a
# production daemon reads none from its environment or arguments.
TestHook = Callable[["Daemon"], list[Route]]


class Daemon:
    def __init__(self, home: Path, browser_config: BrowserConfig, *,
                 idle_timeout: float, journal_max_age_s: float, journal_max_count: int,
                 cleanup_timeout_s: float = 2.0, extension_port: int | None = None,
                 extension_grace_s: float = RECONNECT_GRACE_S,
                 policy: Policy | None = None, test_hook: TestHook | None = None) -> None:
        self.home = home
        self.version = __version__
        self.pid = os.getpid()
        self.started = time.time()
        self.idle_timeout = idle_timeout
        self.journal = Journal(paths.journal_path(home), max_age_s=journal_max_age_s,
                               max_count=journal_max_count,
                               prune_batch=_prune_batch())
        # Before any answer: settle what a dead daemon left open. Retention's backlog is
        # deleted later, in batches, by a task `serve` runs (`Journal.prune_gradually`).
        self.reconciled = self.journal.reconcile()
        self.browser = BrowserManager(browser_config, home)
        self.session_store = SessionStore(self.journal.db)
        self.session_store.prune(journal_max_age_s)
        self.sessions = SessionManager(self.browser, self.session_store)
        # The person's policy, loaded once at start (`--policy`, BSK_POLICY): the one
        # place it is held; each session gets it (narrowed) as `session.policy`.
        self.policy = policy or Policy()
        self.sessions.policy = self.policy
        self.dispatcher = Dispatcher(self.journal, self.sessions, self.browser, home,
                                     cleanup_timeout_s=cleanup_timeout_s)
        self.readopted: dict[str, Any] = {}  # readopt()'s report: ids, and why some ended
        self.sessions.recordings_after_restart = RECORDINGS_AFTER_RESTART
        # Routes a test hook adds (docs/design.md, test hooks); none in production.
        self.test_routes: list[Route] = test_hook(self) if test_hook else []
        self.extensions = None  # the extension listener (ExtensionHub), when asked for
        if extension_port is not None:
            from browserskill.browser.extension import ExtensionHub
            from browserskill.browser.extension_pairing import Pairings
            from browserskill.daemon.extension_wiring import wire

            self.extensions = ExtensionHub(extension_port, Pairings(home),
                                           grace_s=extension_grace_s)
            wire(self.extensions, self.sessions, self.dispatcher)
        self.requests_in_flight = 0
        self.tcp_port: int | None = None  # the optional loopback TCP listener
        self._last_activity = time.monotonic()
        self.stop_event = asyncio.Event()
        self.stop_reason = ""

    def touch(self) -> None:
        self._last_activity = time.monotonic()

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """A request (or an open dashboard) in flight: the idle timer waits for its end."""
        self.requests_in_flight += 1
        try:
            yield
        finally:
            self.requests_in_flight -= 1
            self.touch()

    def idle_for(self) -> float:
        if self.requests_in_flight or self.sessions.sessions or self.dispatcher.busy():
            return 0.0
        return time.monotonic() - self._last_activity

    def request_stop(self, reason: str) -> None:
        self.stop_reason = reason
        self.stop_event.set()

    def info(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "version": self.version,
            "socket": str(paths.socket_path(self.home)),
            "tcp": f"http://127.0.0.1:{self.tcp_port}" if self.tcp_port else None,
            "home": str(self.home),
            "uptime_s": round(time.time() - self.started, 1),
            "idle_timeout_s": self.idle_timeout,
            "reconciled_at_start": self.reconciled,
            "journal": {"pruning": self.journal.pruning, "pruned": self.journal.pruned,
                        **self._journal_faults()},
            "sessions_at_start": self.readopted,
            "policy": {"source": self.policy.source, "active": self.policy.active},
        }

    def _policy_check(self) -> dict[str, Any]:
        """The policy the daemon runs under, and whether its file still says the same
        (the daemon reads it once, at start: docs/safety.md)."""
        source = self.policy.source
        if source is None:
            return {"check": "policy", "ok": True,
                    "detail": "none: pages may reach any domain and scheme, nothing is "
                              "held or refused (`daemon start --policy FILE` sets one)"}
        try:
            now = load_policy(source, tool_names())
        except PolicyError as e:
            return {"check": "policy", "ok": False, "detail": f"{source}: {e}",
                    "fix": "the daemon still runs the policy it read at start; fix the "
                           "file before the daemon's next start"}
        if now != self.policy:
            return {"check": "policy", "ok": False,
                    "detail": f"{source} changed since the daemon read it at start",
                    "fix": "`bsk daemon stop`, then start it again to apply the file"}
        return {"check": "policy", "ok": True, "detail": f"{source} (as read at start)"}

    def _journal_faults(self) -> dict[str, Any]:
        """What this start found wrong with the journal, and whether writes fail now."""
        j = self.journal
        out: dict[str, Any] = {}
        if j.moved_aside:
            out["moved_aside"] = j.moved_aside
        if j.wal_damage:
            out["wal_damage"] = j.wal_damage
        if j.write_error is not None:
            out["write_error"] = j.write_error
            out["unwritten"] = len(j.unwritten)
        return out

    async def doctor(self) -> dict[str, Any]:
        checks = []
        sock = paths.socket_path(self.home)
        mode = oct(sock.stat().st_mode & 0o777) if sock.exists() else None
        checks.append({
            "check": "socket", "ok": mode == "0o600", "detail": f"{sock} mode {mode}",
            "fix": "" if mode == "0o600" else f"stop the daemon and remove {sock}",
        })
        home_mode = oct(self.home.stat().st_mode & 0o777)
        checks.append({
            "check": "state_dir", "ok": home_mode == "0o700",
            "detail": f"{self.home} mode {home_mode}",
            "fix": "" if home_mode == "0o700" else f"chmod 700 {self.home}",
        })
        ok, detail = self.journal.healthy()
        checks.append({
            "check": "journal", "ok": ok, "detail": detail,
            "fix": "" if ok else f"free space on the filesystem of {self.home}"
                   if self.journal.write_error else
                   f"stop the daemon and move {self.journal.path} aside",
        })
        for aside in self.journal.found_aside():  # docs/cli.md, doctor
            wal_copy = "-wal." in aside.name
            checks.append({
                "check": "journal_wal_damaged" if wal_copy else "journal_moved_aside",
                "ok": False,
                "detail": f"{aside}: " + (
                    "a copy of a damaged write-ahead log: the operations journaled after "
                    "the damage (since the checkpoint before it) were lost at a start"
                    if wal_copy else "a journal that could not be read, moved aside at a "
                    "start: its operations can't be shown by `bsk op show`"),
                "fix": f"inspect it with `sqlite3 {aside} .recover` if its operations "
                       f"matter, then delete it (rm {aside}*)",
            })
        checks.append(self._policy_check())
        cfg = self.browser.config
        if cfg.cdp_url:
            info = self.browser.info()
            checks.append({"check": "browser", "ok": True,
                           "detail": f"attached mode: {cfg.cdp_url}"
                                     + (f" ({info['version']})" if info.get("version") else "")})
        else:
            exe = launcher.find_browser()
            version = await asyncio.to_thread(launcher.browser_version, exe) if exe else None
            checks.append({
                "check": "browser", "ok": bool(exe and version),
                "detail": f"{exe}: {version}" if exe else "no browser found",
                "fix": "" if exe and version else launcher.INSTALL_HINT,
            })
        if cfg.grid_url:
            checks.append(await _grid_check(cfg.grid_url))
        return {"ok": all(c["ok"] for c in checks), "checks": checks, "daemon": self.info()}


def _prune_batch() -> int:
    """Rows per pruning batch (BSK_JOURNAL_PRUNE_BATCH, a tuning knob: tests slow it down)."""
    try:
        return max(1, int(os.environ.get("BSK_JOURNAL_PRUNE_BATCH", 1000)))
    except ValueError:
        return 1000


async def _grid_check(grid_url: str) -> dict[str, Any]:
    """The default Grid answers /status, ready, and how many chrome slots are free."""
    import httpx

    from browserskill.browser import webdriver

    shown = launcher.redacted(grid_url)
    try:
        async with httpx.AsyncClient() as http:
            value = await webdriver.status(http, grid_url, 5.0)
    except webdriver.GridError as e:
        return {"check": "grid", "ok": False, "detail": str(e),
                "fix": f"start a Selenium Grid 4 at {shown} (docs/scaling-out.md), or "
                       "restart the daemon without --grid"}
    ready = bool(value.get("ready"))
    return {"check": "grid", "ok": ready,
            "detail": f"{shown}: {'ready' if ready else 'not ready'}, "
                      f"{webdriver.free_slots(value)} free chrome slot(s)",
            "fix": "" if ready else f"the Grid at {shown} has no node up: start one"}

