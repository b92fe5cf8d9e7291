"""Starting the daemon from the CLI: fully detached, logging to a file, found by its socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from browserskill.base import paths

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


class DaemonStartError(Exception):
    pass


def reachable(sock_path: str | Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(sock_path))
        return True
    except OSError:
        return False
    finally:
        s.close()


DAEMON_COMMAND = (sys.executable, "-m", "browserskill.api")


def spawn(extra_args: list[str] | None = None, *, wait_s: float = 20.0,
          home: Path | None = None, command: Sequence[str] = DAEMON_COMMAND,
          env: Mapping[str, str] | None = None) -> int:
    """Start a daemon in its own session (no terminal, no process group of the caller).

    `home` picks another state dir than `BSK_HOME` (the Python client's `home=`);
    `command` and `env` are for a test build of the daemon (tests/support/hooked_daemon.py)."""
    if home is not None:
        env = {**(os.environ if env is None else env), "BSK_HOME": str(home)}
    base = os.environ if env is None else env
    if base.get("BSK_POLICY"):  # the daemon runs in its state dir: an absolute path
        env = {**base, "BSK_POLICY": os.path.abspath(os.path.expanduser(base["BSK_POLICY"]))}
    home = paths.ensure_state_dir(home)
    log_file = paths.log_path(home)
    sock_path = paths.socket_path(home)
    try:
        log = os.fdopen(paths.open_private(log_file), "ab")  # 0600 from its creation
        log.write(f"\n--- spawned by `bsk` (pid {os.getpid()}) ---\n".encode())
        log.flush()
    except OSError as e:  # a full disk: say so, not a traceback
        raise DaemonStartError(f"cannot write the daemon's log {log_file}: {e.strerror} "
                               f"(free space on the filesystem of {home})") from None
    with log:
        proc = subprocess.Popen(
            [*command, *(extra_args or [])],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            cwd=str(home),
            env=env,
        )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if reachable(sock_path):
            return proc.pid
        code = proc.poll()
        # Exit 3: another spawner won the lock; its daemon will answer shortly.
        if code is not None and code != 3:
            raise DaemonStartError(
                f"the daemon exited at start (code {code}):\n{tail(log_file)}\n"
                f"(full log: {log_file})"
            )
        time.sleep(0.01)
    raise DaemonStartError(f"the daemon did not answer within {wait_s:g}s; see {log_file}")


def tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("  " + line for line in text[-lines:])
