"""Shared fixtures: a local site, a real daemon driven through the real `bsk` CLI.

Every test talks to a real headless Chromium. Most share one daemon (each test in its
own session); tests about the daemon's life get their own state dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from browserskill.browser import launcher

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


@pytest.fixture(scope="session")
def cross_site() -> Iterator[str]:
    """The same pages on a second port, addressed as `localhost`: another site, so
    Chromium puts its frames in another process (an out-of-process iframe)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(PAGES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_address[1]}"
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
def make_bsk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Bsk]]:
    """Runners on state dirs of their own (`make_bsk(BSK_X="1")` sets env for bsk and the
    daemon it spawns). Every daemon started on them is stopped at teardown."""
    made: list[Bsk] = []

    def make(**env: str) -> Bsk:
        runner = Bsk(short_home(tmp_path_factory, "home"), **env)
        made.append(runner)
        return runner

    yield make
    for runner in made:
        stop_for_good(runner)


@pytest.fixture
def fresh_bsk(make_bsk: Callable[..., Bsk]) -> Bsk:
    """A state dir of this test's own: for tests of the daemon's start, stop and death."""
    return make_bsk()


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
    return pid if b"browserskill.daemon" in cmdline else None


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting for a reaper."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate: Callable[[], Any], timeout: float = 20,
               what: str = "a condition") -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.02)


@pytest.fixture(scope="session")
def api(shared_bsk: Bsk) -> Iterator[httpx.Client]:
    """An HTTP client over the shared daemon's Unix socket (the daemon is started first)."""
    shared_bsk.ok("daemon", "start")
    transport = httpx.HTTPTransport(uds=str(shared_bsk.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=60) as client:
        yield client


@dataclass
class Chromium:
    """A headless Chromium the test started itself (not the daemon's)."""

    process: subprocess.Popen[bytes]
    port: int
    profile: Path

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def devtools(self, path: str) -> Any:
        with urllib.request.urlopen(self.http_url + path, timeout=10) as r:
            return json.load(r)


@contextlib.contextmanager
def launched_chromium(log_file: Path, *extra_args: str) -> Iterator[Chromium]:
    """A headless Chromium with the daemon's own flags (plus `extra_args`) on a free
    DevTools port, in a throw-away profile; killed with its process group afterwards."""
    executable = launcher.find_browser()
    assert executable, "no Chromium on this machine"
    profile = Path(tempfile.mkdtemp(prefix="bsk-test-chromium-"))
    args = launcher.launch_args(executable, profile)
    args[-1:-1] = extra_args  # before the start URL
    log = open(log_file, "ab")  # closed at teardown
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"

        def port() -> int | None:
            assert proc.poll() is None, f"Chromium exited with {proc.returncode}"
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            return int(lines[0]) if len(lines) >= 2 else None

        yield Chromium(proc, wait_until(port, 30, "Chromium's DevTools port"), profile)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Chromium]:
    """A Chromium the test started itself (for --cdp-url)."""
    with launched_chromium(tmp_path / "chromium.log") as browser:
        yield browser


def live_ops(bsk: Bsk, state: str) -> list[dict[str, Any]]:
    """This session's operations in a given state (a control call: it never queues)."""
    return [o for o in bsk.ok("op", "list")["ops"] if o["state"] == state]


def one_cdp_command(endpoint: str, method: str, params: dict[str, Any] | None = None, *,
                    target_id: str | None = None,
                    wait_reply: bool = True) -> dict[str, Any] | None:
    """One CDP command over a browser's own DevTools endpoint, as a second client would
    send it (to a page target, attached flat, when `target_id` is given); the raw reply."""
    from websockets.sync.client import connect

    with connect(endpoint, max_size=None) as ws:
        session = None
        if target_id:
            ws.send(json.dumps({"id": 1, "method": "Target.attachToTarget",
                                "params": {"targetId": target_id, "flatten": True}}))
            while session is None:
                msg = json.loads(ws.recv(timeout=10))
                if msg.get("id") == 1:
                    if "error" in msg:
                        raise AssertionError(msg["error"])
                    session = msg["result"]["sessionId"]
        out: dict[str, Any] = {"id": 2, "method": method, "params": params or {}}
        if session:
            out["sessionId"] = session
        ws.send(json.dumps(out))
        if not wait_reply:
            return None
        while True:
            msg = json.loads(ws.recv(timeout=30))
            if msg.get("id") == 2:
                return msg


def cdp(endpoint: str, target_id: str, method: str, params: dict[str, Any] | None = None,
        *, wait_reply: bool = True) -> dict[str, Any] | None:
    """One command to a page target: for what an agent can't do through bsk itself
    (crash a renderer, for instance)."""
    return one_cdp_command(endpoint, method, params, target_id=target_id,
                           wait_reply=wait_reply)


# -- the user's own browser, through the BrowserSkill extension ------------------------

EXTENSION_DIR = Path(__file__).resolve().parent.parent / "extension"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser_cdp(chromium: Chromium, method: str, params: dict[str, Any] | None = None,
                *, session_of: str | None = None) -> dict[str, Any]:
    """One CDP command over the browser's own DevTools endpoint (a second client, as a
    user's DevTools would be); with `session_of`, to that target (attached flat)."""
    endpoint = chromium.devtools("/json/version")["webSocketDebuggerUrl"]
    msg = one_cdp_command(endpoint, method, params, target_id=session_of)
    assert msg is not None
    if "error" in msg:
        raise AssertionError(f"{method}: {msg['error']}")
    return msg["result"]


@dataclass
class ExtensionBrowser:
    """A headless Chromium with extension/ loaded, connected to a daemon of its own."""

    chromium: Chromium
    bsk: Bsk
    port: int

    def worker_eval(self, expression: str) -> Any:
        """Evaluate in the extension's service worker (as its options page would act)."""
        def worker() -> str | None:
            targets = browser_cdp(self.chromium, "Target.getTargets")["targetInfos"]
            return next((t["targetId"] for t in targets if t["type"] == "service_worker"
                         and t["url"].startswith("chrome-extension://")), None)

        def ready() -> str | None:  # the target shows up before the worker's script ran
            target = worker()
            try:
                typed = browser_cdp(self.chromium, "Runtime.evaluate", {
                    "expression": "typeof bsk", "returnByValue": True,
                }, session_of=target)["result"].get("value") if target else None
            except AssertionError:  # the worker restarted meanwhile
                return None
            return target if typed == "object" else None

        target = wait_until(ready, 20, "the extension's service worker to start")
        result = browser_cdp(self.chromium, "Runtime.evaluate",
                             {"expression": expression, "awaitPromise": True,
                              "returnByValue": True}, session_of=target)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def page_targets(self) -> list[dict[str, Any]]:
        return [t for t in browser_cdp(self.chromium, "Target.getTargets")["targetInfos"]
                if t["type"] == "page"]

    def connected(self) -> list[dict[str, Any]]:
        r = self.bsk("browsers")
        return [b for b in r.json.get("browsers", []) if b["connected"]] if r.code == 0 else []


@pytest.fixture
def ext_browser(make_bsk: Callable[..., Bsk], tmp_path: Path) -> Iterator[ExtensionBrowser]:
    """A daemon with its extension listener on a free port, and a headless Chromium
    that loads extension/ and is pointed at that port; connected when yielded."""
    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port))
    runner.ok("daemon", "start")
    try:
        with launched_chromium(tmp_path / "chromium.log",
                               f"--load-extension={EXTENSION_DIR}") as chromium:
            ext = ExtensionBrowser(chromium, runner, port)
            # What the options page does (remote DevTools don't see `chrome` in extensions).
            assert ext.worker_eval(f"bsk.configure({{port: {port}, label: 'test-browser'}})")
            wait_until(ext.connected, 20, "the extension to connect to the daemon")
            yield ext
    finally:
        stop_for_good(runner)


def ref_of(snapshot: str, role: str, name: str) -> str:
    """The ref of the node with this role and name in a snapshot's text."""
    import re

    match = re.search(rf'- {role} "{re.escape(name)}"[^\n]*\[ref=(\w+)\]', snapshot)
    assert match, f"no {role} {name!r} in:\n{snapshot}"
    return match.group(1)


class PageDevTools:
    """A second, direct DevTools client on one page target (as the user's own hand):
    several commands in one CDP session, so node ids stay valid between them."""

    def __init__(self, chromium: Chromium, target_id: str) -> None:
        from websockets.sync.client import connect

        endpoint = chromium.devtools("/json/version")["webSocketDebuggerUrl"]
        self._connection = connect(endpoint, max_size=None)
        self.ws = self._connection.__enter__()  # closed by close()
        self._id = 0
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target_id, "flatten": True},
                                 browser=True)["sessionId"]

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             browser: bool = False) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if not browser:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            got = json.loads(self.ws.recv(timeout=30))
            if got.get("id") == self._id:
                if "error" in got:
                    raise AssertionError(f"{method}: {got['error']}")
                return got["result"]

    def find(self, attr: str, value: str) -> int | None:
        """The node with attribute attr=value, shadow roots (closed ones too) pierced."""
        root = self.send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
        stack = [root]
        while stack:
            node = stack.pop()
            attrs = node.get("attributes", [])
            if any(attrs[i] == attr and attrs[i + 1] == value for i in range(0, len(attrs), 2)):
                return node["nodeId"]
            stack.extend(node.get("children", []))
            stack.extend(node.get("shadowRoots", []))
            if node.get("contentDocument"):
                stack.append(node["contentDocument"])
        return None

    def click(self, node_id: int) -> None:
        """A real (trusted) mouse click in the middle of the node."""
        quad = self.send("DOM.getBoxModel", {"nodeId": node_id})["model"]["content"]
        x, y = (quad[0] + quad[4]) / 2, (quad[1] + quad[5]) / 2
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                   "button": "left", "clickCount": 1})

    def close(self) -> None:
        self._connection.__exit__(None, None, None)
