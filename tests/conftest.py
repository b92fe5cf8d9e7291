"""Shared fixtures: a local site, a real daemon driven through the real `bsk` CLI.

Every test talks to a real headless Chromium. Most share one daemon (each test in its
own session); tests about the daemon's life get their own state dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

PAGES = Path(__file__).parent / "pages"
BSK = [sys.executable, "-m", "browserskill"]


@dataclass
class Result:
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

    def __call__(self, *args: str, as_json: bool = True, timeout: float = 90) -> Result:
        proc = subprocess.run(self.argv(args, as_json), env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args: str) -> dict[str, Any]:
        """Run a command that must complete; return its JSON answer."""
        r = self(*args)
        assert r.code == 0, f"bsk {' '.join(args)} exited {r.code}: {r.stdout}{r.stderr}"
        return r.json

    def popen(self, *args: str, as_json: bool = True) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(args, as_json), env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def with_session(self, session: str) -> Bsk:
        other = Bsk.__new__(Bsk)
        other.home, other.session, other.env = self.home, session, self.env
        return other

    def stop_daemon(self) -> None:
        subprocess.run([*BSK, "daemon", "stop"], env=self.env, capture_output=True, timeout=60)


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """The fixture pages in tests/pages, served on a free loopback port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(PAGES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def short_home(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    # Unix socket paths are limited to ~107 bytes; pytest's temp dirs stay well under.
    home = tmp_path_factory.mktemp(name)
    assert len(str(home / "bsk.sock")) < 100
    return home


@pytest.fixture(scope="session")
def shared_bsk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bsk]:
    """One daemon for the many tests that don't care about the daemon's own life."""
    runner = Bsk(short_home(tmp_path_factory, "shared"))
    yield runner
    runner.stop_daemon()


@pytest.fixture
def bsk(shared_bsk: Bsk) -> Iterator[Bsk]:
    """The shared daemon, bound to a session of this test's own."""
    sid = "t-" + uuid.uuid4().hex[:8]
    shared_bsk.ok("session", "start", sid)
    runner = shared_bsk.with_session(sid)
    yield runner
    runner("session", "stop", "--wait")


@pytest.fixture
def fresh_bsk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bsk]:
    """A state dir of this test's own: for tests of the daemon's start, stop and death."""
    runner = Bsk(short_home(tmp_path_factory, "home"))
    yield runner
    runner.stop_daemon()
