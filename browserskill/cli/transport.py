"""HTTP/1.1 over the daemon's Unix socket, in a few lines of stdlib.

`http.client` would cost ~30 ms of imports on every agent action; one request per
process with `Connection: close` needs none of it.
"""

from __future__ import annotations

import _socket  # the C module: `socket` itself costs ~5 ms of enum set-up per call
import json

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any


class DaemonUnreachable(Exception):
    """Nothing was sent: the daemon is not there."""


class DaemonLost(Exception):
    """The request went out and the daemon went away before answering."""


def request(
    sock_path: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    timeout: float | None = 60.0,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    payload = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close",
             f"Content-Length: {len(payload)}"]
    if body is not None:
        lines.append("Content-Type: application/json")
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload

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
            raise DaemonLost(str(e)) from None
    finally:
        sock.close()
    return parse_response(b"".join(chunks))


def parse_response(data: bytes) -> tuple[int, dict[str, str], Any]:
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        raise DaemonLost("the daemon closed the connection without an answer")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        rest = _unchunk(rest)
    elif "content-length" in headers:
        rest = rest[: int(headers["content-length"])]
    return status, headers, json.loads(rest) if rest else None


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    pos = 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2 : end + 2 + size])
        pos = end + 2 + size + 2
