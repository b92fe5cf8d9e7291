"""HTTP/1.1 over the daemon's Unix socket, in a few lines of stdlib.

`http.client` would cost ~30 ms of imports on every agent action; one request per
process with `Connection: close` needs none of it.
"""

from __future__ import annotations

import _socket  # the C module: `socket` itself costs ~5 ms of enum set-up per call
import json

from browserskill.base import http1

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any


class DaemonUnreachable(Exception):
    """Nothing was sent: the daemon is not there."""


class DaemonLost(Exception):
    """The request went out and the daemon went away before answering. `unanswered`: not
    one byte of an answer came (the daemon may never have read the request: a call it
    has no record of can then be sent again, browserskill/cli/calls.py)."""

    def __init__(self, message: str, *, unanswered: bool = False) -> None:
        super().__init__(message)
        self.unanswered = unanswered


def request(
    sock_path: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    timeout: float | None = 60.0,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    fields = [("Connection", "close")]
    if body is not None:
        fields.append(("Content-Type", "application/json"))
    fields += (headers or {}).items()
    raw = http1.request(method, path, fields,
                        b"" if body is None else json.dumps(body).encode())

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            raise DaemonUnreachable(str(e)) from None
        chunks = []
        try:
            sock.sendall(raw)
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise DaemonLost(str(e), unanswered=not chunks) from None
    finally:
        sock.close()
    return parse_response(b"".join(chunks))


def parse_response(data: bytes) -> tuple[int, dict[str, str], Any]:
    """An answer read to the connection's end (`Connection: close`)."""
    split = http1.split_head(data)
    if split is None:
        raise DaemonLost("the daemon closed the connection without an answer",
                         unanswered=not data)
    try:
        status, headers = http1.parse_head(split[0])
        payload = http1.body(headers, split[1], closed=True)
    except http1.Incomplete as e:
        raise DaemonLost(str(e)) from None
    return status, headers, json.loads(payload) if payload else None
