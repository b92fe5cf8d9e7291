"""What keeps other local users and forged clients out (docs/design.md §6, docs/http-api.md):
the state directory's files are private from their creation, another local user reaches
neither the socket nor the state dir, and requests whose security headers are ambiguous
(two Host headers, two Origin headers) are refused."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli import Bsk, stop_for_good


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
    from support.chromium import free_port

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


OTHER_USER = "bsk-other"  # a system user with no home and no shell, made once, kept

# Run as the other user: what of the daemon can it reach? (stdlib only: the system Python)
PROBE = r"""
import json, os, socket, sys
home, tcp_port = sys.argv[1], int(sys.argv[2])
out = {}
def attempt(name, fn):
    try:
        out[name] = fn()
    except OSError as e:
        out[name] = type(e).__name__
attempt("parent", lambda: "ok" if os.listdir(os.path.dirname(home)) else "empty")
attempt("state_dir", lambda: os.listdir(home))
for name in ("journal.sqlite3", "token", "daemon.log", "browser.json"):
    attempt(name, lambda: open(os.path.join(home, name), "rb").read(1) and "read")
def unix_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(home, "bsk.sock"))
    return "connected"
attempt("socket", unix_socket)
def browser_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(home, "browser.sock"))
    return "connected"
attempt("browser_socket", browser_socket)
def tcp():
    with socket.create_connection(("127.0.0.1", tcp_port), timeout=5) as s:
        s.sendall(f"GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:{tcp_port}\r\n"
                  "Connection: close\r\n\r\n".encode())
        return s.recv(100).split(b" ")[1].decode()
attempt("tcp", tcp)
print(json.dumps(out))
"""


def other_user_python() -> list[str]:
    """How to run the system Python as OTHER_USER (made when missing), or skip saying why."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root: it creates another local user and runs a probe as it")
    python = shutil.which("python3", path="/usr/bin:/bin")
    runuser, useradd = shutil.which("runuser"), shutil.which("useradd")
    if not (python and runuser and useradd):
        pytest.skip("needs /usr/bin/python3, runuser and useradd (util-linux, passwd)")
    if subprocess.run(["getent", "passwd", OTHER_USER], capture_output=True).returncode:
        subprocess.run([useradd, "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", OTHER_USER], check=True, capture_output=True)
    return [runuser, "-u", OTHER_USER, "--", python]


def test_another_local_user_cannot_reach_the_daemon(site: str) -> None:
    import json
    import subprocess
    import tempfile

    probe = other_user_python()
    # A parent every user may enter (pytest's own temp dirs are 0700, which would hide
    # the state dir anyway): only the state dir's own modes keep the other user out.
    parent = Path(tempfile.mkdtemp(prefix="bsk-other-"))
    parent.chmod(0o755)
    runner = Bsk(parent / "home", BSK_TCP_PORT="0")
    try:
        runner.ok("session", "start", "mine")
        runner.with_session("mine").ok("open", f"{site}/form.html")
        port = int(runner.ok("daemon", "status")["tcp"].rsplit(":", 1)[1])
        run = subprocess.run([*probe, "-c", PROBE, str(runner.home), str(port)],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout)
        assert seen["parent"] == "ok"  # the path up to the state dir is open to it
        assert seen["state_dir"] == "PermissionError"
        for name in ("journal.sqlite3", "token", "daemon.log", "browser.json", "socket",
                     "browser_socket"):
            assert seen[name] == "PermissionError", (name, seen)
        # The browser's only DevTools channel is that socket: it listens on no TCP port.
        pid = runner.ok("status")["browser"]["pid"]
        assert listening_tcp_ports(pid) == set()
        assert seen["tcp"] == "401"  # the TCP listener wants the token it can't read
        # And the daemon is none the worse for it.
        assert runner.with_session("mine").ok("eval", "1 + 1")["result"]["value"] == 2
    finally:
        stop_for_good(runner)
        shutil.rmtree(parent, ignore_errors=True)


def listening_tcp_ports(pgid: int) -> set[int]:
    """TCP ports some process of this process group (a browser and its helpers) listens on."""
    inodes: set[str] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            fds = list((entry / "fd").iterdir())
        except (OSError, IndexError, ValueError):
            continue  # the process ended meanwhile
        for fd in fds:
            try:  # one fd closed meanwhile (a starting browser opens and closes many)
                target = os.readlink(fd)  # must not lose the process's other fds
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_the_browser_opens_no_devtools_port_unless_exposed(make_bsk: Callable[..., Bsk]
                                                           ) -> None:
    private = make_bsk()
    browser = private.ok("status", "--connect")["browser"]
    assert "cdp_endpoint" not in browser and "private pipe" in browser["devtools"]
    assert listening_tcp_ports(browser["pid"]) == set()
    assert stat.S_IMODE((private.home / "browser.sock").stat().st_mode) == 0o600
    private.stop_daemon()
    assert not (private.home / "browser.sock").exists()  # the keeper went with it

    shared = make_bsk(BSK_EXPOSE_CDP="0")  # the explicit opt-in
    browser = shared.ok("status", "--connect")["browser"]
    port = int(browser["cdp_endpoint"].split(":")[2].split("/")[0])
    assert listening_tcp_ports(browser["pid"]) == {port}
    import urllib.request

    with urllib.request.urlopen(browser["http_endpoint"] + "/json/version", timeout=10) as r:
        assert json.load(r)["webSocketDebuggerUrl"] == browser["cdp_endpoint"]
