"""Where the daemon keeps its state. Stdlib only (the CLI imports it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def state_dir() -> Path:
    """`BSK_HOME`, else the platform's per-user state directory."""
    env = os.environ.get("BSK_HOME")
    if env:
        return Path(env).expanduser().resolve()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "browserskill"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "browserskill"


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
