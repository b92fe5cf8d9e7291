"""api/hot_route.py: the Unix listener serves the tool calls itself (`POST …/tools/{tool}`
and bsk's `POST /v1/cli`), over raw sockets as a client sends them (keep-alive,
pipelining, a slow body, a hang-up, a chunked body, an oversized one), and answers each
as the ASGI route did."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from support.cli import Bsk
from support.wait import wait_until

from browserskill import __version__
from browserskill.api.wire import MAX_BODY_BYTES
from browserskill.base import http1
from browserskill.cli import fast


def connect(bsk: Bsk) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(60)
    sock.connect(str(bsk.home / "bsk.sock"))
    return sock


def post(bsk: Bsk, body: dict[str, Any] | bytes, *headers: str, tool: str = "eval") -> bytes:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = "".join(f"{h}\r\n" for h in headers)
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        head += f"Content-Length: {len(raw)}\r\n"
    return (f"POST /v1/sessions/{bsk.session}/tools/{tool} HTTP/1.1\r\nHost: bsk\r\n"
            f"{head}\r\n").encode() + raw


def cli(argv: list[str], *headers: str) -> bytes:
    """bsk's launcher's request (cli/fast.py), its command line `argv`."""
    raw = fast._command_line(argv, {})
    head = "".join(f"{h}\r\n" for h in headers)
    return (f"POST /v1/cli HTTP/1.1\r\nHost: bsk\r\nX-Bsk-Version: {__version__}\r\n"
            f"{head}Content-Length: {len(raw)}\r\n\r\n").encode() + raw


def _chunked_end(data: bytes) -> int | None:
    """Where a chunked body at the start of `data` ends; None while it has not arrived."""
    at = 0
    while (end := data.find(b"\r\n", at)) >= 0:
        size = int(data[at:end], 16)
        at = end + 2 + size + 2
        if size == 0:
            return at if len(data) >= at else None
    return None


class Answers:
    """The answers on one connection, read one at a time (a pipelined one stays buffered)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.data, self.closed = sock, b"", False

    def next(self, *, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        """The next answer, its body whole (`head_only`: as soon as its head is here)."""
        while True:
            split = http1.split_head(self.data)
            if split is not None:
                status, headers = http1.parse_head(split[0])
                if head_only:
                    return status, headers, b""
                if headers.get("transfer-encoding") == "chunked":
                    end = _chunked_end(split[1])
                    if end is not None:
                        self.data = split[1][end:]
                        return status, headers, http1.unchunk(split[1][:end])
                else:
                    length = int(headers.get("content-length", "0" if status == 204 else "-1"))
                    if 0 <= length <= len(split[1]):
                        self.data = split[1][length:]
                        return status, headers, split[1][:length]
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError(f"connection closed mid-answer: {self.data!r}")
            self.data += chunk

    def ended(self) -> bool:
        """True when the daemon closes the connection with nothing more to say."""
        return self.sock.recv(1) == b""


def test_keep_alive_serves_calls_in_turn_on_one_connection(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    with connect(bsk) as sock:
        answers = Answers(sock)
        for n in (1, 2, 3):
            sock.sendall(post(bsk, {"expression": f"{n} + 1"}))
            status, headers, body = answers.next()
            assert status == 200, body
            assert headers["content-type"] == "application/json"
            assert "connection" not in headers and "transfer-encoding" not in headers
            assert json.loads(body)["result"]["value"] == n + 1
        # Connection: close is honoured: the answer says so, and the connection ends.
        sock.sendall(post(bsk, {"expression": "'last'"}, "Connection: close"))
        status, headers, body = answers.next()
        assert (status, headers["connection"]) == (200, "close")
        assert json.loads(body)["result"]["value"] == "last"
        assert answers.ended()


def test_pipelined_calls_are_answered_in_order(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    with connect(bsk) as sock:
        # The first one is the slow one: its answer must still come first.
        sock.sendall(post(bsk, {"expression": "await slow('first', 300)"})
                     + post(bsk, {"expression": "'second'"})
                     + post(bsk, {"expression": "'third'"}, "Connection: close"))
        answers = Answers(sock)
        got = [answers.next() for _ in range(3)]
        assert [s for s, _, _ in got] == [200, 200, 200], got
        values = [json.loads(b)["result"]["value"] for _, _, b in got]
        assert values[0]["tag"] == "first" and values[1:] == ["second", "third"], values
        assert answers.ended()


def test_a_body_arriving_slowly_in_pieces_is_read_whole(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    text = "x" * 300_000  # past uvicorn's 64 KiB read pause: reading resumes for it
    raw = json.dumps({"expression": f"'{text}'.length"}).encode()
    request = post(bsk, raw)
    head_end = request.index(b"\r\n\r\n") + 4
    with connect(bsk) as sock:
        sock.sendall(request[:head_end])
        for at in range(head_end, len(request), 50_000):
            time.sleep(0.05)  # the load itself: a body that trickles in
            sock.sendall(request[at:at + 50_000])
        status, _, body = Answers(sock).next()
    assert status == 200, body
    assert json.loads(body)["result"]["value"] == len(text)


@pytest.mark.parametrize("caller", ["client", "launcher"])
def test_a_caller_hanging_up_mid_call_cancels_its_operation(bsk: Bsk, site: str,
                                                            api: httpx.Client,
                                                            caller: str) -> None:
    """A client's tool call, or bsk's launcher's `POST /v1/cli`, both hot."""
    bsk.ok("open", f"{site}/counter.html")
    op_id = f"op_{caller}gone" + str(time.monotonic_ns())[-8:]
    sock = connect(bsk)
    code = "await slow('gone', 10000)"
    sock.sendall(post(bsk, {"expression": code}, f"X-Op-Id: {op_id}") if caller == "client"
                 else cli(["-s", bsk.session, "eval", code], f"X-Op-Id: {op_id}",
                          "Connection: close"))
    wait_until(lambda: api.get(f"/v1/ops/{op_id}").json().get("state") == "dispatched",
               what="the eval to reach the page")
    sock.close()
    ended = api.get(f"/v1/ops/{op_id}/wait?timeout_ms=20000").json()
    assert ended["state"] == "ended", ended
    assert ended["error"]["details"]["reason"] == "client_disconnected", ended
    shown = bsk.ok("op", "show", op_id)
    assert shown["error"]["details"]["reason"] == "client_disconnected", shown


def test_a_chunked_body_is_still_answered(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    raw = json.dumps({"expression": "6 * 7"}).encode()
    chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (5, raw[:5], len(raw) - 5, raw[5:])
    with connect(bsk) as sock:
        sock.sendall(post(bsk, chunked, "Transfer-Encoding: chunked"))
        answers = Answers(sock)
        status, _, body = answers.next()
        assert status == 200, body
        assert json.loads(body)["result"]["value"] == 42
        # And the connection serves the next call.
        sock.sendall(post(bsk, {"expression": "'after'"}))
        assert json.loads(answers.next()[2])["result"]["value"] == "after"


def test_an_oversized_body_is_refused_before_it_is_sent(bsk: Bsk) -> None:
    with connect(bsk) as sock:
        # Only the head: the answer comes without waiting for a byte of the body.
        sock.sendall(post(bsk, b"", f"Content-Length: {MAX_BODY_BYTES + 1}"))
        status, headers, body = Answers(sock).next()
    assert status == 400, body
    error = json.loads(body)["error"]
    assert error["code"] == "invalid_params" and error["details"]["field"] == "body", error
    assert "allowed" in error["message"] and headers["x-should-retry"] == "false"


def test_errors_answer_by_the_table_with_its_headers(bsk: Bsk) -> None:
    with connect(bsk) as sock:
        answers = Answers(sock)
        sock.sendall(post(bsk, b"[1]"))
        status, headers, body = answers.next()
        assert status == 400 and headers["x-should-retry"] == "false", body
        assert json.loads(body)["error"]["details"]["field"] == "body"
        sock.sendall(post(bsk, {"expression": "1"}, "X-Op-Id: a", "X-Op-Id: b"))
        status, _, body = answers.next()
        assert status == 400 and json.loads(body)["error"]["details"]["field"] == "X-Op-Id"
        sock.sendall(post(bsk, {}, tool="session_stop"))
        status, _, body = answers.next()
        assert status == 400 and json.loads(body)["error"]["details"]["field"] == "tool"


# bsk's launcher's call, `POST /v1/cli` (api/cli_call.py), on the same route.

def test_a_launchers_call_is_answered_whole_in_one_piece(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    with connect(bsk) as sock:
        sock.sendall(cli(["-s", bsk.session, "eval", "6*7"], "Connection: close"))
        answers = Answers(sock)
        status, headers, body = answers.next()
        assert (status, headers["content-type"]) == (200, "application/octet-stream")
        assert headers["x-bsk-wire-timeout"] == "60" and headers["connection"] == "close"
        assert "transfer-encoding" not in headers and body == b"0 3 0\n42\n", body
        assert answers.ended()


def test_a_long_launchers_call_names_its_deadline_before_it_ends(
        bsk: Bsk, site: str, api: httpx.Client) -> None:
    bsk.ok("open", f"{site}/counter.html")
    op_id = "op_clilong" + str(time.monotonic_ns())[-8:]
    with connect(bsk) as sock:
        sock.sendall(cli(["-s", bsk.session, "eval", "(await slow('late', 4000)).tag"],
                         f"X-Op-Id: {op_id}", "Connection: close"))
        answers = Answers(sock)
        status, headers, _ = answers.next(head_only=True)
        # The head is here while the operation still runs: the launcher knows its deadline.
        assert api.get(f"/v1/ops/{op_id}").json()["state"] != "ended"
        assert status == 200 and headers["x-bsk-wire-timeout"] == "60", headers
        assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
        status, headers, body = answers.next()
        assert body == b"0 5 0\nlate\n", body
        assert answers.ended()


def test_what_is_not_a_plain_tool_call_is_left_to_the_cli(bsk: Bsk, api: httpx.Client) -> None:
    """204, nothing run: a control command, help, another version's launcher, stdin."""
    before = len(api.get("/v1/ops", params={"session": bsk.session}).json()["ops"])
    with connect(bsk) as sock:
        answers = Answers(sock)
        for argv in (["session", "list"], ["-s", bsk.session, "eval", "--help", "1"],
                     ["-s", bsk.session, "batch", "-"], ["nonsense", "words"]):
            sock.sendall(cli(argv))
            status, headers, body = answers.next()
            assert (status, body) == (204, b""), (argv, headers, body)
            assert "content-length" not in headers and "transfer-encoding" not in headers
        sock.sendall(cli(["-s", bsk.session, "eval", "1"]).replace(
            __version__.encode(), b"0.0.0-older"))
        assert answers.next()[0] == 204
    assert len(api.get("/v1/ops", params={"session": bsk.session}).json()["ops"]) == before


def test_launcher_calls_and_tool_calls_pipelined_are_answered_in_order(
        bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    with connect(bsk) as sock:
        sock.sendall(cli(["-s", bsk.session, "eval", "(await slow('first', 300)).tag"])
                     + post(bsk, {"expression": "'second'"})
                     + cli(["-s", bsk.session, "session", "list"])
                     + cli(["-s", bsk.session, "eval", "'fourth'"], "Connection: close"))
        answers = Answers(sock)
        got = [answers.next() for _ in range(4)]
        assert [s for s, _, _ in got] == [200, 200, 204, 200], got
        assert got[0][2] == b"0 6 0\nfirst\n", got[0]
        assert json.loads(got[1][2])["result"]["value"] == "second"
        assert got[3][2] == b"0 7 0\nfourth\n" and got[3][1]["connection"] == "close"
        assert answers.ended()


def test_a_launchers_call_the_asgi_way_is_answered_the_same(bsk: Bsk, site: str) -> None:
    """A request that is not plain (a chunked body) goes through ASGI on the Unix socket
    too: the same answers, whole or head first (api/reply.py's `AsgiReply`)."""
    bsk.ok("open", f"{site}/counter.html")
    for expression, whole in (("6*7", True), ("(await slow('late', 2500)).tag", False)):
        request = cli(["-s", bsk.session, "eval", expression], "Connection: close")
        head, _, raw = request.partition(b"\r\n\r\n")
        head = b"\r\n".join(line for line in head.split(b"\r\n")
                             if not line.startswith(b"Content-Length"))
        with connect(bsk) as sock:
            sock.sendall(head + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + b"%x\r\n%s\r\n0\r\n\r\n" % (len(raw), raw))
            status, headers, body = Answers(sock).next()
        assert status == 200 and headers["x-bsk-wire-timeout"] == "60", headers
        if whole:
            assert body == b"0 3 0\n42\n" and "transfer-encoding" not in headers, body
        else:
            assert body == b"0 5 0\nlate\n" and headers["transfer-encoding"] == "chunked"


def test_over_tcp_a_launchers_call_goes_the_asgi_way(make_bsk: Callable[..., Bsk]) -> None:
    """The TCP listener never takes the hot route: its checks run (the token), and a
    launcher's call is not run there (204: the paths would mean nothing)."""
    runner = make_bsk(BSK_TCP_PORT="0")
    runner.ok("daemon", "start")
    url = runner.ok("daemon", "status")["tcp"]
    token = (runner.home / "token").read_text().strip()
    line = fast._command_line(["eval", "1"], {})
    with httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/v1/cli", content=line,
                         headers={"X-Bsk-Version": __version__}).status_code == 401
        answer = http.post("/v1/cli", content=line, headers={
            "X-Bsk-Version": __version__, "Authorization": f"Bearer {token}"})
        assert (answer.status_code, answer.content) == (204, b""), answer


def test_which_requests_take_the_route() -> None:
    """The choice itself (api/hot_route.py `route`): the two plain tool calls, nothing else."""
    from types import SimpleNamespace

    from browserskill.api import hot_route

    def target(url: bytes, method: bytes = b"POST", *headers: bytes) -> object:
        protocol = SimpleNamespace(
            url=url, parser=SimpleNamespace(get_method=lambda: method), root_path="",
            limit_concurrency=None, headers=[(h, b"x") for h in (b"host", *headers)])
        return hot_route.route(protocol)  # type: ignore[arg-type]

    assert target(b"/v1/cli") == hot_route.CLI
    assert target(b"/v1/sessions/s1/tools/eval") == ("s1", "eval")
    for url in (b"/v1/cli?x=1", b"/v1/cli/", b"/v1/clix", b"/v1/sessions/s1/tools/eval?x",
                b"/v1/sessions/s%31/tools/eval", b"/v1/health"):
        assert target(url) is None, url
    assert target(b"/v1/cli", b"GET") is None
    for header in (b"transfer-encoding", b"expect", b"upgrade"):
        assert target(b"/v1/cli", b"POST", header) is None
