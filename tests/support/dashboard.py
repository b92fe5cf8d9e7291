"""A person at the dashboard: a second, independent headless Chromium (not the daemon's)
that loads `bsk show`'s URL, driven over its own DevTools port with raw CDP.

`Viewer.eval` reads the dashboard's DOM; `Viewer.press` clicks one of its buttons with
real mouse input (Input.dispatchMouseEvent at the element's centre), as a person would.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

from support.chromium import launched_chromium
from support.wait import wait_until


class Viewer:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._id = 0

    def cdp(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params or {}}))
        while True:
            msg = json.loads(self.ws.recv(timeout=30))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg["result"]

    def eval(self, expression: str) -> Any:
        result = self.cdp("Runtime.evaluate", {"expression": expression,
                                               "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def eval_across_loads(self, expression: str) -> Any:
        """`eval`, or None while the page is being replaced (the one-time link's page
        navigates on to the dashboard: an evaluation can meet that navigation)."""
        try:
            return self.eval(expression)
        except AssertionError as e:
            if "navigated or closed" in str(e) or "context was destroyed" in str(e):
                return None
            raise

    def wait(self, expression: str, timeout: float = 10, what: str = "") -> Any:
        return wait_until(lambda: self.eval(expression), timeout, what or expression)

    def centre(self, selector: str) -> tuple[float, float]:
        box = self.wait(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                        " if (!e || !e.offsetParent) return null; e.scrollIntoView({block: "
                        "'center'}); const r = e.getBoundingClientRect();"
                        " return [r.x + r.width / 2, r.y + r.height / 2]; })()",
                        what=f"{selector} on the dashboard")
        return box[0], box[1]

    def click_at(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.cdp("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                  "button": "left", "clickCount": 1})

    def press(self, selector: str) -> None:
        """Click the dashboard element with real input, as a person does: aim (the
        pointer over it), check the element under the pointer is the one meant (the
        lists above it may have grown meanwhile), aim again if not, then press."""
        def aimed() -> tuple[float, float] | None:
            x, y = self.centre(selector)
            self.cdp("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
            under = self.eval(f"(() => {{ const e = document.elementFromPoint({x}, {y});"
                              f" return !!e && !!e.closest({json.dumps(selector)}); }})()")
            return (x, y) if under else None
        self.click_at(*wait_until(aimed, 10, f"the pointer over {selector}"))

    def press_until(self, selector: str, done: str, what: str, timeout: float = 20) -> None:
        """Press until `done` (a JS expression) holds, as a person presses a button again
        that did not respond (under load the list can still move between aiming and
        pressing); never again once it holds, and only ever on the element meant."""
        deadline = time.monotonic() + timeout
        while not self.eval(done):
            assert time.monotonic() < deadline, f"{what}: still not done after {timeout} s"
            self.press(selector)
            settle = time.monotonic() + 3
            while not self.eval(done) and time.monotonic() < settle:
                time.sleep(0.05)  # polling the page's state, not standing in for an event

    def choose(self, session: str) -> None:
        chosen = f"document.querySelector('#title').textContent.startsWith({json.dumps(session)})"

        def press_until_chosen() -> bool:
            # The list re-renders as sessions and ops change: a press can land between a
            # card's old and new place, so press again until the choice shows.
            if not self.eval(chosen):
                self.press(f'[data-session="{session}"]')
            return bool(self.eval(chosen))
        wait_until(press_until_chosen, 20, f"session {session} chosen on the dashboard")

    def row(self, op_id: str) -> dict[str, str] | None:
        return self.eval(f"(() => {{ const r = document.querySelector('[data-op=\"{op_id}\"]');"
                         " return r && {state: r.dataset.state, status: r.dataset.status}; })()")

    def frame_seq(self) -> int:
        return int(self.eval("document.querySelector('#live').dataset.seq || 0"))

    def pixel(self, fx: float, fy: float) -> list[int]:
        """The live view's colour at a fraction of its width and height (RGB)."""
        return self.eval(f"""(async () => {{
            const img = document.querySelector('#live'); await img.decode();
            const c = document.createElement('canvas');
            c.width = img.naturalWidth; c.height = img.naturalHeight;
            const g = c.getContext('2d'); g.drawImage(img, 0, 0);
            return Array.from(g.getImageData(Math.floor(c.width * {fx}),
                                             Math.floor(c.height * {fy}), 1, 1).data).slice(0, 3);
        }})()""")


@contextlib.contextmanager
def dashboard_viewer(url: str, log_file: Path) -> Iterator[Viewer]:
    """A headless Chromium of the test's own showing the dashboard at `url`."""
    with launched_chromium(log_file) as chromium:
        pages = [t for t in chromium.devtools("/json/list") if t["type"] == "page"]
        with connect(pages[0]["webSocketDebuggerUrl"], max_size=None) as ws:
            viewer = Viewer(ws)
            viewer.cdp("Emulation.setDeviceMetricsOverride", {
                "width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
            viewer.cdp("Page.enable")
            viewer.cdp("Page.navigate", {"url": url})
            wait_until(lambda: viewer.eval_across_loads(
                "document.querySelector('#conn') && "
                "document.querySelector('#conn').textContent === 'live'"),
                20, "the dashboard's feed to connect")
            yield viewer


def seconds_since(iso: str) -> float:
    """Seconds from an operation's ISO timestamp (…Z) to now."""
    from datetime import datetime

    return time.time() - datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
