"""What keeps other local users and forged clients out (DESIGN §6, docs/http-api.md):
the state directory's files are private from their creation, and requests whose
security headers are ambiguous (two Host headers, two Origin headers) are refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from conftest import Bsk


def loose_entries(home: Path) -> list[str]:
    """Everything under `home` that group or others may read, write or enter."""
    loose = []
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                loose.append(f"{path.relative_to(home)} {stat.filemode(mode)}")
    return loose


def test_a_fresh_state_dir_has_nothing_others_can_read(make_bsk: Callable[..., Bsk],
                                                       site: str) -> None:
    runner = make_bsk(BSK_TCP_PORT="0")  # the TCP listener makes the token file too
    runner.env.pop("BSK_EPHEMERAL")  # the persistent profile lives in the state dir
    s = runner.with_session("files")
    runner.ok("session", "start", "files")
    s.ok("open", f"{site}/form.html")
    s.ok("eval", "document.title")
    s.ok("screenshot")  # into the state dir's screenshots/
    home = runner.home
    made = {p.name for p in home.iterdir()}
    # The daemon is still running: the journal's -wal and -shm are there.
    for name in ("journal.sqlite3", "journal.sqlite3-wal", "journal.sqlite3-shm",
                 "daemon.log", "browser.log", "browser.json", "token", "bsk.sock",
                 "daemon.lock", "profile", "screenshots"):
        assert name in made, f"{name} not in {sorted(made)}"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert loose_entries(home) == []
