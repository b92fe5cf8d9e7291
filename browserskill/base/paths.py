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


# sun_path holds 108 bytes on Linux, 104 on macOS, the terminating NUL included.
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107


def state_dir_problem(home: str) -> str | None:
    """Why the daemon of `home` can't be reached or started, in one line; None if it can.

    Checked before connecting, so a bad `BSK_HOME` is a sentence, not a traceback."""
    sock = os.path.join(home, "bsk.sock")
    size = len(os.fsencode(sock))
    if size > MAX_SOCKET_PATH:
        return (f"the socket path {sock} is {size} bytes, more than the {MAX_SOCKET_PATH} a "
                "Unix socket allows: choose a shorter BSK_HOME")
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"can't use the state dir {home}: {e.strerror}"
    if st.st_uid != os.geteuid():
        return (f"the state dir {home} belongs to another user (uid {st.st_uid}, you are "
                f"uid {os.geteuid()}): set BSK_HOME to a directory of your own")
    if not os.path.isdir(home):
        return f"the state dir {home} is not a directory"
    return None


def state_dir() -> Path:
    """`BSK_HOME`, else the platform's per-user state directory."""
    from pathlib import Path

    return Path(state_dir_name())


def ensure_state_dir(home: Path | None = None) -> Path:
    d = home or state_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(d, 0o700)
    return d


# The daemon runs with this umask: every file and directory it (or the browser it
# launches) creates is the user's alone from its creation (docs/design.md §6): the journal and
# its -wal/-shm, logs, browser.json, token, screenshots, the profile.
PRIVATE_UMASK = 0o077


def open_private(path: Path | str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_APPEND) -> int:
    """A file descriptor on `path`, created 0600; one made looser by an older version is
    tightened, so its contents are never readable by others after this."""
    fd = os.open(path, flags, 0o600)
    if os.fstat(fd).st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def tighten_state_files(home: Path) -> None:
    """Make the regular files directly in the state dir 0600 (left looser by an older
    version); what is below is behind 0700 directories."""
    for entry in os.scandir(home):
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mode & 0o077:
                os.chmod(entry.path, 0o600)
        except OSError:
            pass


def socket_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "bsk.sock"


def lock_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "daemon.lock"


def log_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "daemon.log"


def journal_path(home: Path | None = None) -> Path:
    return (home or state_dir()) / "journal.sqlite3"
