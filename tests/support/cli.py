"""The real `bsk` CLI as a subprocess against one state dir, and its daemon's life."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from browserskill.browser import launcher
from support.wait import wait_until

BSK = [sys.executable, "-m", "browserskill"]


@dataclass
class CliRun:
    """What one `bsk` run gave: its exit code and output."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    @property
    def value(self) -> Any:
        """The value of a completed eval."""
        return self.json["result"]["value"]


class Bsk:
    """Runs the real `bsk` CLI as a subprocess against one state dir."""

    def __init__(self, home: Path, session: str | None = None, **env: str) -> None:
        self.home = home
        self.session = session
        self.env = {**os.environ, "BSK_HOME": str(home), "BSK_EPHEMERAL": "1",
                    "BSK_IDLE_TIMEOUT": "0", **env}
        self.env.pop("BSK_SESSION", None)

    def argv(self, args: tuple[str, ...], as_json: bool) -> list[str]:
        argv = [*BSK]
        if self.session:
            argv += ["-s", self.session]
        if as_json:
            argv.append("--json")
        return argv + list(args)

    def __call__(self, *args: str, as_json: bool = True, timeout: float = 90) -> CliRun:
        proc = subprocess.run(self.argv(args, as_json), env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        return CliRun(proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args: str) -> dict[str, Any]:
        """Run a command that must complete; return its JSON answer."""
        r = self(*args)
        assert r.code == 0, f"bsk {' '.join(args)} exited {r.code}: {r.stdout}{r.stderr}"
        return r.json

    def text(self, *args: str) -> str:
        """Run a command that must complete; return what it printed (plain, as an agent
        reads it: stdout and stderr)."""
        r = self(*args, as_json=False)
        assert r.code == 0, f"bsk {' '.join(args)} exited {r.code}: {r.stdout}{r.stderr}"
        return r.stdout + r.stderr

    def popen(self, *args: str, as_json: bool = True) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(args, as_json), env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_ctrl_c_as_in_a_terminal)

    def with_session(self, session: str) -> Bsk:
        other = Bsk.__new__(Bsk)
        other.home, other.session, other.env = self.home, session, self.env
        return other

    def stop_daemon(self) -> None:
        subprocess.run([*BSK, "daemon", "stop"], env=self.env, capture_output=True, timeout=60)


def _ctrl_c_as_in_a_terminal() -> None:
    """A command started from a terminal gets Ctrl-C (SIGINT). One started by a shell
    that ignores it (a background job, `nohup`, some CI runners) inherits the ignoring,
    and Python then installs no KeyboardInterrupt: the tests' commands start as a user's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def short_home(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    # Unix socket paths are limited to ~107 bytes; pytest's temp dirs stay well under.
    home = tmp_path_factory.mktemp(name)
    assert len(str(home / "bsk.sock")) < 100
    return home


def stop_for_good(runner: Bsk) -> None:
    """`bsk daemon stop`; if the daemon that held this home is somehow still there,
    SIGTERM it by its pid (it then stops its browser) and wait for it to go."""
    try:
        runner.stop_daemon()
    except subprocess.TimeoutExpired:
        pass
    pid = daemon_pid(runner.home)
    if pid is None or not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not alive(pid), 20, f"daemon {pid} to exit after SIGTERM")


def daemon_pid(home: Path) -> int | None:
    """The pid recorded in the state dir's lock file, if it names a live daemon process."""
    try:
        pid = int((home / "daemon.lock").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"browserskill.api" in cmdline else None


# True while the process exists and is not a zombie waiting for a reaper.
alive = launcher.process_alive


def kill_daemon_hard(home: Path) -> int:
    """SIGKILL the state dir's daemon (no shutdown of any kind), wait until it is gone;
    its pid."""
    pid = daemon_pid(home)
    assert pid is not None, f"no daemon runs for {home}"
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not alive(pid), 10, f"daemon {pid} to die")
    return pid


def live_ops(bsk: Bsk, state: str) -> list[dict[str, Any]]:
    """This session's operations in a given state (a control call: it never queues)."""
    return [o for o in bsk.ok("op", "list")["ops"] if o["state"] == state]


def answer_of(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    """The exit code and JSON answer of a `bsk --json` started with Bsk.popen."""
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out)
