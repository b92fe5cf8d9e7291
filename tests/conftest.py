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


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/act_nocontent":  # a navigation that makes no page
            self.send_response(204)
            self.end_headers()
            return
        if path == "/act_slow":  # a navigation still loading at a short deadline
            time.sleep(3)
            with contextlib.suppress(OSError):  # the browser may have given up by now
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            return
        super().do_GET()


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
    """One daemon for the many tests that don't care about the daemon's own life. Its
    browser opens a DevTools port (--expose-cdp) for the tests that drive a page with a
    second DevTools client; by default it has none (tests/test_security.py)."""
    runner = Bsk(short_home(tmp_path_factory, "shared"), BSK_EXPOSE_CDP="0")
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


# True while the process exists and is not a zombie waiting for a reaper.
alive = launcher.process_alive


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
    """A Chromium the test started itself (not the daemon's)."""

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
def launched_chromium(log_file: Path, *extra_args: str, headless: bool = True,
                      display: str | None = None) -> Iterator[Chromium]:
    """A Chromium with the daemon's own flags (plus `extra_args`) on a free DevTools port,
    in a throw-away profile; killed with its process group afterwards. Headless, or headed
    on the X `display` given (set for this process only)."""
    executable = launcher.find_browser()
    assert executable, "no Chromium on this machine"
    assert headless or display, "a headed Chromium needs a display (the xvfb fixture)"
    profile = Path(tempfile.mkdtemp(prefix="bsk-test-chromium-"))
    args = launcher.launch_args(executable, profile, headless=headless)
    args[-1:-1] = extra_args  # before the start URL
    env = None
    if display:
        env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
        env["DISPLAY"] = display
    log = open(log_file, "ab")  # closed at teardown
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            env=env, start_new_session=True)
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


def in_ci() -> bool:
    """On CI (`CI=true`), .ci/run has installed all the suite needs: a missing tool there
    is a failure, never a skip (as a missing Chromium is a failure everywhere)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def xvfb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One virtual X server (Debian's xvfb) for the whole test session, on a display
    number it picks itself; yields that DISPLAY (":N"), stopped at the end. Without Xvfb
    the tests that need it skip, except on CI, where scripts/install.sh installs it."""
    import select

    executable = shutil.which("Xvfb")
    if not executable:
        why = "Xvfb is not installed (Debian/Ubuntu: apt-get install xvfb)"
        if in_ci():
            pytest.fail(f"{why}, yet this is CI (CI=true): scripts/install.sh installs it",
                        pytrace=False)
        pytest.skip(f"{why}: no headed-browser tests")
    log_path = tmp_path_factory.mktemp("xvfb") / "xvfb.log"
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


def _evaluate_in(chromium: Chromium, target: str, script: str) -> dict[str, Any] | None:
    """Evaluate `script` in a page target; None while that page is still loading."""
    try:
        result = browser_cdp(chromium, "Runtime.evaluate", {
            "expression": script, "awaitPromise": True, "returnByValue": True},
            session_of=target)
    except AssertionError as e:  # ran in the blank page the target starts with
        if "Execution context was destroyed" in str(e):
            return None
        raise
    if "exceptionDetails" in result:
        text = json.dumps(result["exceptionDetails"])
        assert "Cannot read properties of null" in text or "not defined" in text, text
        return None
    return result


@dataclass
class ExtensionBrowser:
    """A Chromium with extension/ loaded, connected to a daemon of its own."""

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

    def pair_in_options_page(self, code: str, *, port: int | None = None,
                             label: str = "test-browser") -> str:
        """Open the extension's options page, enter the port, label and pairing code, press
        Pair, and return what the page then says (as a user would read it); the page is
        closed again."""
        from browserskill.browser.extension_protocol import EXTENSION_ORIGIN

        target = browser_cdp(self.chromium, "Target.createTarget",
                             {"url": f"{EXTENSION_ORIGIN}/options.html"})["targetId"]
        try:
            script = f"""(async () => {{
              const $ = (id) => document.getElementById(id);
              const until = (ok) => new Promise((resolve) => {{
                const check = () => ok() ? resolve() : requestAnimationFrame(check);
                check();
              }});
              await until(() => $("paired") && $("paired").textContent);  // options.js ran
              $("port").value = {json.dumps(str(port or self.port))};
              $("label").value = {json.dumps(label)};
              $("code").value = {json.dumps(code)};
              $("pair").click();
              await until(() => !["", "pairing…"].includes($("pair-result").textContent));
              return $("pair-result").textContent;
            }})()"""
            result = wait_until(lambda: _evaluate_in(self.chromium, target, script), 30,
                                "the options page to load")
            return result["result"]["value"]
        finally:
            browser_cdp(self.chromium, "Target.closeTarget", {"targetId": target})

    def popup(self) -> dict[str, str]:
        """What the extension's popup shows (its text fields by id), opened as a tab."""
        from browserskill.browser.extension_protocol import EXTENSION_ORIGIN

        target = browser_cdp(self.chromium, "Target.createTarget",
                             {"url": f"{EXTENSION_ORIGIN}/popup.html"})["targetId"]
        script = """(async () => {
          const $ = (id) => document.getElementById(id);
          await new Promise((resolve) => {
            const check = () => $("instance") && $("instance").textContent
              ? resolve() : requestAnimationFrame(check);
            check();
          });
          return Object.fromEntries(["state", "port", "error", "pairing", "instance"]
            .map((id) => [id, $(id).textContent]));
        })()"""
        try:
            result = wait_until(lambda: _evaluate_in(self.chromium, target, script), 30,
                                "the popup to load")
            return result["result"]["value"]
        finally:
            browser_cdp(self.chromium, "Target.closeTarget", {"targetId": target})

    def page_targets(self) -> list[dict[str, Any]]:
        return [t for t in browser_cdp(self.chromium, "Target.getTargets")["targetInfos"]
                if t["type"] == "page"]

    def connected(self) -> list[dict[str, Any]]:
        r = self.bsk("browsers")
        return [b for b in r.json.get("browsers", []) if b["connected"]] if r.code == 0 else []


@contextlib.contextmanager
def extension_browser(runner: Bsk, port: int, log_file: Path, *extra_args: str,
                      headless: bool = True, display: str | None = None,
                      pair: bool = True) -> Iterator[ExtensionBrowser]:
    """The daemon of `runner` (whose env sets BSK_EXTENSION_PORT=`port`), and a Chromium
    that loads extension/ and is pointed at that port; paired and connected when yielded
    (with `pair=False`: neither, only pointed there). The browser is killed and the daemon
    stopped afterwards."""
    runner.ok("daemon", "start")
    try:
        with launched_chromium(log_file, f"--load-extension={EXTENSION_DIR}", *extra_args,
                               headless=headless, display=display) as chromium:
            ext = ExtensionBrowser(chromium, runner, port)
            if not pair:  # the port and label saved in the options page, nothing more
                assert ext.worker_eval(f"bsk.configure({{port: {port}, "
                                       "label: 'test-browser'})")
                yield ext
                return
            # As the user does: the code from `bsk extension pair`, entered once (with
            # the port and a label) in the extension's options page.
            outcome = ext.pair_in_options_page(runner.ok("extension", "pair")["code"],
                                               label="test-browser")
            assert outcome.startswith("paired with the daemon"), outcome
            wait_until(ext.connected, 20, "the extension to connect to the daemon")
            yield ext
    finally:
        stop_for_good(runner)


@pytest.fixture
def ext_browser(make_bsk: Callable[..., Bsk], tmp_path: Path) -> Iterator[ExtensionBrowser]:
    """A daemon with its extension listener on a free port, and a headless Chromium
    that loads extension/ and is pointed at that port; connected when yielded."""
    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port))
    with extension_browser(runner, port, tmp_path / "chromium.log") as ext:
        yield ext


# A headed browser stands in for the user's own: it always uses the X display given
# (launch_args already keeps it off a desktop keyring).
HEADED_ARGS = ("--ozone-platform=x11",)


@pytest.fixture(scope="module")
def headed_ext_browser(xvfb: str,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExtensionBrowser]:
    """ext_browser's headed twin: the same Chromium and extension with real windows on
    the session's Xvfb (DISPLAY set for that process only). One per test module: tests
    using it share the browser and its daemon, so each uses session ids of its own."""
    port = free_port()
    runner = Bsk(short_home(tmp_path_factory, "headed"), BSK_EXTENSION_PORT=str(port))
    with extension_browser(runner, port, runner.home / "chromium.log",
                           *HEADED_ARGS, headless=False, display=xvfb) as ext:
        yield ext


def agent_session(ext: ExtensionBrowser, sid: str = "agent") -> Bsk:
    """A session of the extension's browser (a new Agent Window), bound to a runner."""
    started = ext.bsk.ok("session", "start", sid, "--browser", "extension", "--label", "tester")
    assert started["placement"]["browser"] == ext.connected()[0]["browser_id"]
    return ext.bsk.with_session(sid)


def answer_of(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    """The exit code and JSON answer of a `bsk --json` started with Bsk.popen."""
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out)


def ref_of(snapshot: str, role: str, name: str) -> str:
    """The ref of the node with this role and name in a snapshot's text."""
    import re

    match = re.search(rf'- {role} "{re.escape(name)}"[^\n]*\[ref=(\w+)\]', snapshot)
    assert match, f"no {role} {name!r} in:\n{snapshot}"
    return match.group(1)


def clicks_report_the_state_they_left(s: Bsk, site: str) -> None:
    """A click answers with what it left the element as (read right after its release):
    expanded, checked, or gone (the page re-rendered it)."""
    s.ok("open", f"{site}/click.html")
    snap = s.ok("snapshot")["result"]["snapshot"]
    details = ref_of(snap, "button", "Details")
    assert s.ok("click", details)["result"]["element"] == {"expanded": True}
    assert s.ok("click", details)["result"]["element"] == {"expanded": False}
    assert s.ok("click", ref_of(snap, "checkbox", "Agree"))["result"]["element"] == {
        "checked": True}
    rerender = s.ok("click", ref_of(snap, "button", "Re-render me"))["result"]
    assert rerender["element"] == {"removed": True}
    assert s("eval", "document.querySelectorAll('#rerender').length").value == 1


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


def answer_prompt(hand: PageDevTools, button: str) -> None:
    """Press a button of the extension's in-page UI (`stop`, `approve`, `deny`) as the
    user does: a trusted click, once the button shows."""
    node = wait_until(lambda: hand.find("data-bsk", button), what=f"the {button} button")
    hand.click(node)


# Scenarios run on both the headless and the headed extension browser.

def the_connected_browser(ext: ExtensionBrowser) -> dict[str, Any]:
    """The one browser `bsk browsers` lists as connected, its handshake checked."""
    (b,) = ext.connected()
    assert b["label"] == "test-browser"
    assert b["protocol"] == 2  # the handshake that proves pairing
    assert b["name"] and b["version"]
    assert len(b["browser_id"]) >= 8
    paired = ext.bsk.ok("browsers")["paired"]
    assert [p["browser_id"] for p in paired] == [b["browser_id"]]
    assert "secret" not in paired[0]
    return b


def log_in_through_the_relay(s: Bsk, site: str) -> None:
    """open, snapshot, fill, click and eval on the login page, all through the relay."""
    s.ok("open", f"{site}/login.html")
    snap = s.ok("snapshot")["result"]["snapshot"]
    s.ok("fill", ref_of(snap, "textbox", "Username"), "jane")
    s.ok("fill", ref_of(snap, "textbox", "Password"), "secret")
    s.ok("click", ref_of(snap, "button", "Log in"))
    assert s("eval", "document.getElementById('result').textContent").value == "Welcome, jane"
    # The overlay lives in a closed shadow root: the snapshot does not see into it.
    assert "Stop" not in s.ok("snapshot")["result"]["snapshot"]


def stop_button_interrupts(ext: ExtensionBrowser, s: Bsk, site: str) -> None:
    """The user presses Stop in the agent tab's overlay during a slow eval: the call ends
    (user_interrupt), reads still work, the next change is refused once."""
    s.ok("open", f"{site}/counter.html")
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    hand = PageDevTools(ext.chromium, tab["target_id"])
    running = s.popen("eval", "await slow('x', 20000)")
    wait_until(lambda: live_ops(s, "dispatched"), what="the eval to be dispatched")
    answer_prompt(hand, "stop")
    code, answer = answer_of(running)
    assert code == 9 and answer["error"]["details"]["reason"] == "user_interrupt"
    assert s.ok("snapshot")["result"]["snapshot"]  # reads still work
    r = s("eval", "window.count = 1")
    assert r.code == 6 and r.json["error"]["code"] == "user_interrupted"
    assert r.json["dispatched"] == "no"
    assert s("eval", "1 + 1").value == 2  # only once
    hand.close()
