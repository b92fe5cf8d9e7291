"""A virtual X server for headed browsers (Debian's xvfb)."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.wait import in_ci, wait_until

# A headed browser stands in for the user's own: it always uses the X display given
# (launch_args already keeps it off a desktop keyring).
HEADED_ARGS = ("--ozone-platform=x11",)


@contextlib.contextmanager
def running_xvfb(log_path: Path) -> Iterator[str]:
    """An Xvfb on a display number it picks itself; yields that DISPLAY (":N"), stopped
    at the end. Without Xvfb the caller skips, except on CI, where scripts/install.sh
    installs it."""
    executable = shutil.which("Xvfb")
    if not executable:
        why = "Xvfb is not installed (Debian/Ubuntu: apt-get install xvfb)"
        if in_ci():
            pytest.fail(f"{why}, yet this is CI (CI=true): scripts/install.sh installs it",
                        pytrace=False)
        pytest.skip(f"{why}: no headed-browser tests")
    log = open(log_path, "ab")  # closed at teardown
    read_end, write_end = os.pipe()
    # -displayfd: Xvfb takes the first free display number itself (no race with another
    # X server) and writes it to this pipe once it listens.
    proc = subprocess.Popen([executable, "-displayfd", str(write_end), "-nolisten", "tcp",
                             "-screen", "0", "1920x1080x24"], pass_fds=(write_end,),
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    os.close(write_end)
    got = b""

    def display_number() -> str | None:
        nonlocal got
        assert proc.poll() is None, f"Xvfb exited with {proc.returncode}; see {log_path}"
        if select.select([read_end], [], [], 0)[0]:
            got += os.read(read_end, 16)
        return got.decode().strip() if got.endswith(b"\n") else None

    try:
        number = wait_until(display_number, 20, "Xvfb to pick a display")
        socket = Path(f"/tmp/.X11-unix/X{number}")
        wait_until(socket.exists, 20, f"Xvfb's socket {socket}")
        yield f":{number}"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        os.close(read_end)
        log.close()
