"""Where the daemon keeps its state. Stdlib only (the CLI imports it)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def socket_file() -> str:
    """The daemon's socket, as a string, without importing pathlib (the CLI's fast path)."""
    return os.path.join(state_dir_name(), "bsk.sock")


def state_dir_name() -> str:
    env = os.environ.get("BSK_HOME")
    if env:
        return os.path.realpath(os.path.expanduser(env))
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "browserskill")
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    return os.path.join(base, "browserskill")


def state_dir() -> Path:
    """`BSK_HOME`, else the platform's per-user state directory."""
    from pathlib import Path

    return Path(state_dir_name())


def ensure_state_dir(home: Path | None = None) -> Path:
    d = home or state_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(d, 0o700)
    return d


def socket_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "bsk.sock"


def lock_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "daemon.lock"


def log_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "daemon.log"


def journal_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "journal.sqlite3"
