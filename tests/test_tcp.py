"""docs/design.md §6: the optional TCP listener — loopback, bearer token, Host header checked."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from support.cli import Bsk


def test_tcp_listener_requires_token_and_host(make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk(BSK_TCP_PORT="0")
    runner.ok("daemon", "start")
    info = runner.ok("daemon", "status")
    url = info["tcp"]
    assert url and url.startswith("http://127.0.0.1:")
    token_file = runner.home / "token"
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    token = token_file.read_text().strip()

    with httpx.Client(base_url=url, timeout=30) as http:
        no_token = http.get("/v1/health")
        assert no_token.status_code == 401
        assert no_token.headers["x-should-retry"] == "false"
        wrong = http.get("/v1/health", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        rebinding = http.get("/v1/health", headers={"Authorization": f"Bearer {token}",
                                                    "Host": "evil.example:80"})
        assert rebinding.status_code == 403
        ok = http.get("/v1/health", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and ok.json()["ok"] is True

    from browserskill import Client

    with Client(base_url=url, token=token) as client:
        assert client.health()["ok"] is True
