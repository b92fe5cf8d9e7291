"""browserskill/base/http1.py: the framing every client shares, checked apart from I/O."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from browserskill.base import http1


def chunked(body: bytes, sizes: list[int]) -> bytes:
    out, pos = b"", 0
    for size in sizes:
        piece = body[pos:pos + size]
        if piece:
            out += b"%x;ext=1\r\n" % len(piece) + piece + b"\r\n"
        pos += size
    if pos < len(body):
        out += b"%x\r\n" % (len(body) - pos) + body[pos:] + b"\r\n"
    return out + b"0\r\n\r\n"


def answer(head: str, body: bytes) -> bytes:
    return head.replace("\n", "\r\n").encode() + b"\r\n\r\n" + body


@given(st.binary(max_size=2000), st.lists(st.integers(1, 300), max_size=10))
def test_a_chunked_body_reads_back_whole(body: bytes, sizes: list[int]) -> None:
    data = answer("HTTP/1.1 200 OK\nTransfer-Encoding: chunked", chunked(body, sizes))
    head, rest = http1.split_head(data) or (b"", b"")
    status, headers = http1.parse_head(head)
    assert (status, http1.body(headers, rest, closed=True)) == (200, body)


@given(st.binary(min_size=1, max_size=500), st.data())
def test_an_answer_cut_short_is_incomplete_never_a_short_body(body: bytes,
                                                              data: st.DataObject) -> None:
    for framing, payload in ((f"Content-Length: {len(body)}", body),
                             ("Transfer-Encoding: chunked", chunked(body, [7]))):
        # Cut anywhere before the body's last byte, or its chunked end (`0\r\n`) is whole.
        cut = data.draw(st.integers(0, len(payload) - (1 if "Length" in framing else 3)))
        head, rest = http1.split_head(answer(f"HTTP/1.1 200 OK\n{framing}",
                                             payload[:cut])) or (b"", b"")
        with pytest.raises(http1.Incomplete):
            http1.body(http1.parse_head(head)[1], rest, closed=True)


def test_a_request_is_its_head_and_exact_body() -> None:
    raw = http1.request("POST", "/v1/cli", [("X-Op-Id", "op_1"), ("Connection", "close")],
                        b'{"a":1}')
    assert raw == (b"POST /v1/cli HTTP/1.1\r\nHost: localhost\r\nX-Op-Id: op_1\r\n"
                   b"Connection: close\r\nContent-Length: 7\r\n\r\n{\"a\":1}")


def test_heads_and_lengths() -> None:
    assert http1.split_head(b"HTTP/1.1 200 OK\r\nA: b\r\n") is None  # not whole yet
    status, headers = http1.parse_head(b"HTTP/1.1 404 Not Found\r\nX-Thing:  v \r\nA: 1")
    assert (status, headers) == (404, {"x-thing": "v", "a": "1"})
    assert http1.body_length({}) == http1.TO_EOF
    assert http1.body({}, b"all of it", closed=True) == b"all of it"
    with pytest.raises(http1.Incomplete):
        http1.body({}, b"so far", closed=False)
    for bad in (b"garbage", b"HTTP/1.1 abc"):
        with pytest.raises(http1.Incomplete):
            http1.parse_head(bad)
    with pytest.raises(http1.Incomplete):
        http1.body_length({"content-length": "-1"})
