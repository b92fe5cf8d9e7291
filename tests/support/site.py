"""The test pages in tests/pages, served over loopback HTTP (a couple of paths act), and
the widget libraries that tests/package.json pins, under /node_modules/ (the conformance
pages in tests/pages/conformance/ load them from there, as a site loads its own copy)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PAGES = Path(__file__).resolve().parent.parent / "pages"
NODE_MODULES = PAGES.parent / "node_modules"

# `GET /gate/NAME` is answered once the test opens NAME (or after GATE_LIMIT_S, so a
# failed test never leaves a page blocked): a page's synchronous request to it holds the
# renderer exactly as long as the test needs, not for a guessed time.
GATE_LIMIT_S = 30.0
_gates: dict[str, threading.Event] = {}
_gates_lock = threading.Lock()


def _gate(name: str) -> threading.Event:
    with _gates_lock:
        return _gates.setdefault(name, threading.Event())


def open_gate(name: str) -> None:
    """Answer the page's `/gate/NAME` request, whether it was made yet or not."""
    _gate(name).set()


class PagesHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def translate_path(self, path: str) -> str:
        if path.startswith("/node_modules/"):
            # the one folder served from outside tests/pages (not `..`: the base class
            # drops those segments, and this prefix is matched whole)
            inside = super().translate_path("/" + path[len("/node_modules/"):])
            return str(NODE_MODULES / Path(inside).relative_to(PAGES))
        return super().translate_path(path)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.startswith("/gate/"):
            _gate(path[len("/gate/"):]).wait(GATE_LIMIT_S)
            with contextlib.suppress(OSError):
                self.send_response(204)
                self.end_headers()
            return
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

    def do_POST(self) -> None:
        if self.path.split("?")[0] == "/api/order":  # tests/pages/effects.html places one
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            body = b'{"order": 1}'
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.split("?")[0] == "/form/login":  # post, then redirect (303) to a page
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(303)
            self.send_header("Location", "/counter.html")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_error(404)


@contextlib.contextmanager
def serve_pages(host: str = "127.0.0.1") -> Iterator[str]:
    """tests/pages on a free loopback port, as `http://{host}:PORT` (`localhost` names
    the same server as another site)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(PagesHandler, directory=str(PAGES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
