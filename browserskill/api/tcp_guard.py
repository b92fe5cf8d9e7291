"""The TCP listener's gate (docs/design.md §6): loopback only, a bearer token, and a Host header
naming this listener (so a web page can't reach it through DNS rebinding).

The Unix socket needs none of this: its 0600 mode already limits it to the user.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from browserskill.base.errors import CODES


def load_token(home: Path) -> str:
    """The daemon's bearer token, made on first use and kept in the state dir (0600)."""
    path = home / "token"
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


class TcpGuard:
    def __init__(self, app: Any, token: str, port: int) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode(),
                      f"[::1]:{port}".encode()}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        server = scope.get("server")
        over_tcp = bool(server) and isinstance(server[1], int)
        if scope["type"] != "http" or not over_tcp:
            return await self.app(scope, receive, send)
        headers = scope.get("headers") or []
        hosts = [v for k, v in headers if k == b"host"]
        auths = [v for k, v in headers if k == b"authorization"]
        # Two of either is ambiguous: a proxy or a check may read the other one.
        if len(hosts) > 1 or len(auths) > 1:
            return await _refuse(send, 400, "duplicate Host or Authorization header: send "
                                 "exactly one of each")
        if not hosts or hosts[0] not in self.hosts:
            return await _refuse(send, 403, "Host header does not name this listener "
                                 "(127.0.0.1:PORT or localhost:PORT)")
        auth = auths[0] if auths else b""
        if not (auth.startswith(b"Bearer ") and hmac.compare_digest(auth[7:], self.token)):
            return await _refuse(send, 401, "missing or wrong bearer token "
                                 "(it is in $BSK_HOME/token)")
        return await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": {"code": "invalid_params", "message": message,
                                 "hint": "see docs/http-api.md", "details": {}}}).encode()
    assert CODES["invalid_params"].http == 400  # the code names the problem; status says auth
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"x-should-retry", b"false"),
        (b"connection", b"close")]})  # a caller not let in keeps no connection open
    await send({"type": "http.response.body", "body": body})
