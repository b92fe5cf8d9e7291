"""What keeps other local users and forged clients out (DESIGN §6, docs/http-api.md):
the state directory's files are private from their creation, and requests whose
security headers are ambiguous (two Host headers, two Origin headers) are refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from conftest import Bsk


def loose_entries(home: Path) -> list[str]:
    """Everything under `home` that group or others may read, write or enter."""
    loose = []
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                loose.append(f"{path.relative_to(home)} {stat.filemode(mode)}")
    return loose


def test_a_fresh_state_dir_has_nothing_others_can_read(make_bsk: Callable[..., Bsk],
                                                       site: str) -> None:
    runner = make_bsk(BSK_TCP_PORT="0")  # the TCP listener makes the token file too
    runner.env.pop("BSK_EPHEMERAL")  # the persistent profile lives in the state dir
    s = runner.with_session("files")
    runner.ok("session", "start", "files")
    s.ok("open", f"{site}/form.html")
    s.ok("eval", "document.title")
    s.ok("screenshot")  # into the state dir's screenshots/
    home = runner.home
    made = {p.name for p in home.iterdir()}
    # The daemon is still running: the journal's -wal and -shm are there.
    for name in ("journal.sqlite3", "journal.sqlite3-wal", "journal.sqlite3-shm",
                 "daemon.log", "browser.log", "browser.json", "token", "bsk.sock",
                 "daemon.lock", "profile", "screenshots"):
        assert name in made, f"{name} not in {sorted(made)}"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert loose_entries(home) == []


def raw_request(port: int, request: bytes) -> bytes:
    """Send bytes as they are (no client library would send two Host headers) and read
    the answer until the server closes or 5 s pass."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and _complete(answer):
                    break
        except TimeoutError:
            pass
    return answer


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    if head.startswith(b"HTTP/1.1 101 "):
        return True  # switched protocols: no body follows
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1])


def test_two_host_headers_on_the_tcp_listener_are_refused(
        make_bsk: Callable[..., Bsk]) -> None:
    runner = make_bsk(BSK_TCP_PORT="0")
    runner.ok("daemon", "start")
    port = int(runner.ok("daemon", "status")["tcp"].rsplit(":", 1)[1])
    token = (runner.home / "token").read_text().strip()
    good = f"127.0.0.1:{port}"

    def get(*hosts: str, auths: int = 1) -> bytes:
        lines = ["GET /v1/health HTTP/1.1", *(f"Host: {h}" for h in hosts),
                 *[f"Authorization: Bearer {token}"] * auths, "Connection: close", "", ""]
        return raw_request(port, "\r\n".join(lines).encode())

    assert status_of(get(good)) == 200  # the control: one Host, one token
    for hosts in (("evil.example", good), (good, "evil.example"), (good, good)):
        answer = get(*hosts)
        assert status_of(answer) == 400, (hosts, answer)
        assert b"duplicate Host" in answer and b"Traceback" not in answer
    assert status_of(get(good, auths=2)) == 400
    assert status_of(get()) in (400, 403)  # no Host at all (HTTP/1.1 requires one)
    assert "Traceback" not in (runner.home / "daemon.log").read_text()


def test_two_origin_headers_on_the_extension_port_are_refused(
        make_bsk: Callable[..., Bsk]) -> None:
    from conftest import free_port

    from browserskill.browser.extension_protocol import EXTENSION_ORIGIN

    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port))
    runner.ok("daemon", "start")

    def upgrade(*origins: str) -> bytes:
        lines = ["GET / HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket",
                 "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                 "Sec-WebSocket-Version: 13", *(f"Origin: {o}" for o in origins), "", ""]
        return raw_request(port, "\r\n".join(lines).encode())

    # The control: the pinned origin alone is let through to the handshake.
    assert status_of(upgrade(EXTENSION_ORIGIN)) == 101
    for origins in ((EXTENSION_ORIGIN, "http://evil.example"),
                    ("http://evil.example", EXTENSION_ORIGIN),
                    (EXTENSION_ORIGIN, EXTENSION_ORIGIN)):
        answer = upgrade(*origins)
        assert status_of(answer) == 400, (origins, answer)
        assert b"exactly one Origin" in answer
    assert status_of(upgrade("http://evil.example")) == 403
    log = (runner.home / "daemon.log").read_text()
    assert "Traceback" not in log and "opening handshake failed" not in log
