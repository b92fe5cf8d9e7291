"""A Chromium the test starts itself, and a second DevTools client to it (the user's own
hand, another tool): for what an agent can't do through `bsk`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserskill.browser import launcher
from support.wait import wait_until


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


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
