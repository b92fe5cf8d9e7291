"""Running the daemon: one per state directory (a lock file), the API on a private Unix
socket (and optionally on loopback TCP; each listener bounded on its own, api/listeners.py),
an idle timer, and a clean stop that ends every operation honestly."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import resource
import signal
import socket
from pathlib import Path

from browserskill.api import listeners
from browserskill.api.app import build_app
from browserskill.api.dashboard import Dashboard
from browserskill.api.tcp_guard import TcpGuard, load_token
from browserskill.base import heap, paths
from browserskill.base.admission import FILE_LIMIT, UNIX_MAX_UNADMITTED, Admission
from browserskill.base.policy import Policy
from browserskill.browser.extension_protocol import RECONNECT_GRACE_S
from browserskill.browser.manager import BrowserConfig
from browserskill.daemon.core import Daemon, TestHook
from browserskill.session.sessions import READOPT_TIMEOUT_S, describe_error

log = logging.getLogger("browserskill.daemon")


CLOSE_SESSIONS_S = 5.0  # at stop, for closing the sessions of a browser that doesn't answer


class AlreadyRunning(Exception):
    def __init__(self, pid: str) -> None:
        super().__init__(f"a daemon is already running for this state dir (pid {pid})")
        self.pid = pid


def take_lock(home: Path) -> int:
    """Hold the state dir's lock for the daemon's lifetime (released by the OS on death)."""
    fd = os.open(paths.lock_path(home), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.read(fd, 32).decode().strip() or "?"
        os.close(fd)
        raise AlreadyRunning(pid) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def bind_socket(path: Path) -> socket.socket:
    path.unlink(missing_ok=True)  # we hold the lock: any socket file here is stale
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600: never a moment when others could connect
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


async def serve(
    browser_config: BrowserConfig, *, idle_timeout: float, journal_max_age_s: float,
    journal_max_count: int, cleanup_timeout_s: float = 2.0, extension_port: int | None = None,
    extension_grace_s: float = RECONNECT_GRACE_S, tcp_port: int | None = None,
    readopt_timeout_s: float = READOPT_TIMEOUT_S, policy: Policy | None = None,
    test_hook: TestHook | None = None,
) -> None:
    heap.freeze_startup_objects()  # the modules: full collections then walk only what serving makes
    heap.collect_less_often()  # ~15 µs of the collector's CPU a call saved (heap.py)
    home = paths.ensure_state_dir()
    _raise_file_limit()
    lock_fd = take_lock(home)
    paths.tighten_state_files(home)
    sock_path = paths.socket_path(home)
    daemon = Daemon(home, browser_config, idle_timeout=idle_timeout,
                    journal_max_age_s=journal_max_age_s, journal_max_count=journal_max_count,
                    cleanup_timeout_s=cleanup_timeout_s, extension_port=extension_port,
                    policy=policy, extension_grace_s=extension_grace_s, test_hook=test_hook)
    if any(daemon.reconciled.values()):
        log.warning("reconciled operations left by a previous daemon: %s", daemon.reconciled)
    try:  # each session within its own deadline, ended with why when it fails
        daemon.readopted = await daemon.sessions.readopt(readopt_timeout_s)
    except Exception as e:  # never fail to start over it
        log.warning("re-adopting sessions failed: %s", describe_error(e))
    if any(daemon.readopted.values()):
        log.warning("sessions after restart: %s", daemon.readopted)
    if daemon.extensions is not None:
        await daemon.extensions.start()  # a port already taken stops the start: say so
    dashboard = Dashboard(daemon)  # listens from the first `bsk show`
    app = build_app(daemon, dashboard)
    # Each listener is a server of its own with its own connection limits (admission.py):
    # a flood on the TCP listener never delays the owner's Unix socket.
    # The Unix listener serves the tool calls itself (api/hot_route.py); the TCP listener
    # sends everything through TcpGuard's checks and the ASGI app.
    servers = {"unix": listeners.server(app, Admission("the Unix socket", UNIX_MAX_UNADMITTED),
                                        tool_calls=app, ws="none",
                                        timeout_graceful_shutdown=5)}
    server_sockets = {"unix": bind_socket(sock_path)}
    if tcp_port is not None:
        tcp = socket.create_server(("127.0.0.1", tcp_port))  # loopback only, by design
        daemon.tcp_port = tcp.getsockname()[1]
        servers["tcp"] = listeners.server(TcpGuard(app, load_token(home), daemon.tcp_port),
                                          Admission("the TCP listener"), ws="none",
                                          timeout_graceful_shutdown=5)
        server_sockets["tcp"] = tcp
        log.info("also listening on http://127.0.0.1:%d (bearer token in %s/token)",
                 daemon.tcp_port, home)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, daemon.request_stop, f"signal {sig.name}")
    log.info("daemon %s listening on %s (pid %d)", daemon.version, sock_path, daemon.pid)
    server_tasks = {asyncio.create_task(servers[name].serve(sockets=[server_sockets[name]]),
                                        name=f"listener-{name}") for name in servers}
    idle_task = asyncio.create_task(_idle_watch(daemon))
    # Retention's backlog (e.g. 90,000 rows over BSK_JOURNAL_MAX_COUNT) goes batch by batch
    # while requests are served, not before the first answer.
    prune_task = asyncio.create_task(daemon.journal.prune_gradually(), name="journal-prune")
    prune_task.add_done_callback(_log_pruned)
    # After a full disk: what ran is written soon after space returns, calls or not.
    write_task = asyncio.create_task(daemon.journal.keep_writing(), name="journal-retry")
    try:
        stop_wait = asyncio.create_task(daemon.stop_event.wait())
        await asyncio.wait({*server_tasks, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        log.info("stopping: %s", daemon.stop_reason or "server ended")
    finally:
        idle_task.cancel()
        write_task.cancel()
        prune_task.cancel()
        await asyncio.wait({prune_task})  # stopped between batches, before the journal closes
        if not prune_task.cancelled() and prune_task.exception() is not None:
            log.warning("pruning the journal failed: %s", prune_task.exception())
        await daemon.dispatcher.shutdown()
        with contextlib.suppress(Exception):
            await dashboard.stop()
        # A browser that does not answer (stopped, hung) must not hold the stop: its
        # sessions get CLOSE_SESSIONS_S in all, and it is ended below whatever its tabs did.
        deaf = not await daemon.browser.answers(2.0)
        closing_until = loop.time() + CLOSE_SESSIONS_S
        for session in list(daemon.sessions.sessions.values()):
            bounded = deaf and session.backend.owner is daemon.browser
            try:
                async with asyncio.timeout(max(0.1, closing_until - loop.time())
                                           if bounded else None):
                    await daemon.sessions.close(session, "the daemon was stopped")
            except Exception as e:
                log.info("closing session %s at stop: %s", session.id,
                         str(e) or "its browser did not answer in time")
        if daemon.extensions is not None:
            with contextlib.suppress(Exception):
                await daemon.extensions.stop()
        await daemon.browser.shutdown()
        for server in servers.values():
            server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*server_tasks), 6)
        sock_path.unlink(missing_ok=True)
        daemon.journal.close()
        os.close(lock_fd)


def _raise_file_limit() -> None:
    """Room for the listeners' bounds (admission.py) above what the browser links need."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FILE_LIMIT if hard == resource.RLIM_INFINITY else min(FILE_LIMIT, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _log_pruned(task: asyncio.Task[int]) -> None:
    if not task.cancelled() and task.exception() is None and task.result():
        log.info("journal: deleted %d ended operations past retention", task.result())


async def _idle_watch(daemon: Daemon) -> None:
    if daemon.idle_timeout <= 0:
        return
    while True:
        idle = daemon.idle_for()
        if idle >= daemon.idle_timeout:
            daemon.request_stop(f"idle for {idle:.0f}s")
            return
        await asyncio.sleep(min(5.0, max(0.1, daemon.idle_timeout - idle)))
