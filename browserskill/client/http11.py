"""A lean HTTP/1.1 client for the daemon: keep-alive connections over its Unix socket (or
its loopback TCP listener), JSON in and out, nothing else. `Http11` for the asyncio
client, `BlockingHttp11` (stdlib sockets) for the blocking one: the same rules, the
framing of browserskill/base/http1.py that the CLI speaks too.

The daemon's answers are small JSON documents with a Content-Length; a general HTTP
client (httpx) spent ~2 ms of CPU per call on them, several times what the daemon spends
on the operation itself. This costs ~0.1 ms.

Each request takes an idle connection (or opens one) and gives it back only after reading
the whole answer, so a call cancelled mid-answer never leaves a half-read connection in
the pool. A connection the daemon closed while it sat idle is noticed before reuse; one
that closes the moment it is reused, before any byte of the answer, is retried once on a
new connection (a tool call names its operation, so a duplicate would be refused).
`timeout` is the whole exchange's deadline (contract.wire_timeout_s for a tool call), not
a pause between two reads: a daemon that trickles an answer can't hold a caller past it.
"""

from __future__ import annotations

import asyncio
import socket as _socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from browserskill.base import http1, json_text

MAX_IDLE = 32  # idle connections kept; more concurrent calls open (and close) their own
MAX_HEAD = 64 * 1024  # an answer's head longer than this is no daemon's


class Unreachable(Exception):
    """Nothing was sent: no daemon listens there."""


class Lost(Exception):
    """The request went out (or may have) and no complete answer came back."""


class Http11:
    def __init__(self, *, socket: str | None = None, base_url: str | None = None,
                 headers: Mapping[str, str] | None = None, connect_timeout: float = 5.0) -> None:
        self.socket, self.host, self.port, self._host = _where(socket, base_url)
        self._fixed = list((headers or {}).items())
        self.connect_timeout = connect_timeout
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.socket is not None:
                    return await asyncio.open_unix_connection(self.socket)
                return await asyncio.open_connection(self.host, self.port)
        except (OSError, TimeoutError) as e:
            raise Unreachable(str(e) or type(e).__name__) from None

    def _take_idle(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        while self._idle:
            reader, writer = self._idle.pop()
            if reader.at_eof() or writer.is_closing():  # the daemon closed it meanwhile
                writer.close()
                continue
            return reader, writer
        return None

    async def request(self, method: str, path: str, body: Any = None, *,
                      headers: Mapping[str, str] | None = None,
                      timeout: float = 60.0) -> tuple[int, dict[str, str], Any]:
        """Send one request; return (status, lower-cased headers, decoded JSON body)."""
        raw = _request_bytes(method, path, body, [*self._fixed, *(headers or {}).items()],
                             self._host)
        for attempt in (0, 1):
            conn = self._take_idle() if attempt == 0 else None
            reused = conn is not None
            if conn is None:
                conn = await self._connect()
            try:
                async with asyncio.timeout(timeout):
                    return await self._exchange(conn, raw)
            except _ClosedBeforeAnswer as e:
                if reused and attempt == 0:
                    continue  # a stale keep-alive connection: the daemon never read it
                raise Lost(str(e)) from None
            except TimeoutError:
                raise Lost(f"no answer within {timeout:g} s") from None
        raise AssertionError("unreachable")

    async def _exchange(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                        raw: bytes) -> tuple[int, dict[str, str], Any]:
        reader, writer = conn
        done = False
        try:
            try:
                writer.write(raw)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError) as e:
                if isinstance(e, asyncio.IncompleteReadError) and e.partial:
                    raise Lost("the daemon closed the connection mid-answer") from None
                raise _ClosedBeforeAnswer("the daemon closed the connection") from None
            except asyncio.LimitOverrunError:
                raise Lost("an answer header too large") from None
            found: dict[str, str] = {}
            try:
                status, found = http1.parse_head(head[:-4])
                length = http1.body_length(found)
                if length == http1.CHUNKED:
                    data = await _read_chunked(reader)
                elif length == http1.TO_EOF:
                    data = await reader.read()
                    found["connection"] = "close"
                else:
                    data = await reader.readexactly(length)
            except (asyncio.IncompleteReadError, ConnectionError, ValueError):
                raise Lost("the daemon closed the connection mid-answer") from None
            done = True
        finally:
            if done and found.get("connection", "").lower() != "close" \
                    and len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
            else:  # cancelled, failed or told to: never reuse a half-read connection
                writer.close()
        return status, found, _decode(data)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()


class _ClosedBeforeAnswer(Exception):
    pass


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out: list[bytes] = []
    while True:
        size = http1.chunk_size(await reader.readuntil(b"\r\n"))
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(out)
        out.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _decode(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json_text.loads(data)  # json.loads's value or its error, faster
    except ValueError:
        return data.decode("utf-8", "replace")


def _where(socket: str | None, base_url: str | None,
           ) -> tuple[str | None, str | None, int | None, str]:
    """(socket path, TCP host, TCP port, Host header) from a socket path or a base URL."""
    if (socket is None) == (base_url is None):
        raise ValueError("give a socket path or a base URL")
    if base_url is None:
        return socket, None, None, "localhost"
    url = urlsplit(base_url)
    if url.scheme != "http" or not url.hostname:
        raise ValueError(f"only http:// base URLs are supported, got {base_url!r}")
    return None, url.hostname, url.port or 80, url.netloc


def _request_bytes(method: str, path: str, body: Any, fields: list[tuple[str, str]],
                   host: str) -> bytes:
    if body is not None:
        fields.append(("Content-Type", "application/json"))
    return http1.request(method, path, fields,
                         b"" if body is None else json_text.dumps_ascii(body).encode(),
                         host=host)


# -- the blocking client's -----------------------------------------------------------------


class BlockingHttp11:
    """`Http11`'s rules over blocking stdlib sockets, for `Client`. Safe to share between
    threads: each request has a connection of its own while it runs."""

    def __init__(self, *, socket: str | None = None, base_url: str | None = None,
                 headers: Mapping[str, str] | None = None, connect_timeout: float = 5.0) -> None:
        self.socket, self.host, self.port, self._host = _where(socket, base_url)
        self._fixed = list((headers or {}).items())
        self.connect_timeout = connect_timeout
        self._idle: list[_socket.socket] = []
        self._lock = threading.Lock()

    def _connect(self, deadline: float) -> _socket.socket:
        timeout = max(0.001, min(self.connect_timeout, deadline - time.monotonic()))
        sock = None
        try:
            if self.socket is not None:
                sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                sock.settimeout(timeout)
                sock.connect(self.socket)
                return sock
            assert self.host is not None
            sock = _socket.create_connection((self.host, self.port), timeout=timeout)
            sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            return sock
        except OSError as e:  # refused, no such socket file, timed out
            if sock is not None:
                sock.close()
            raise Unreachable(str(e) or type(e).__name__) from None

    def _take_idle(self) -> _socket.socket | None:
        with self._lock:
            while self._idle:
                sock = self._idle.pop()
                try:  # readable while idle: closed by the daemon (or stray bytes)
                    sock.settimeout(0.0)  # else recv first waits for the socket's timeout
                    sock.recv(1, _socket.MSG_PEEK)
                except BlockingIOError:
                    return sock
                except OSError:
                    pass
                sock.close()
        return None

    def request(self, method: str, path: str, body: Any = None, *,
                headers: Mapping[str, str] | None = None,
                timeout: float = 60.0) -> tuple[int, dict[str, str], Any]:
        """Send one request; return (status, lower-cased headers, decoded JSON body)."""
        raw = _request_bytes(method, path, body, [*self._fixed, *(headers or {}).items()],
                             self._host)
        deadline = time.monotonic() + timeout
        for attempt in (0, 1):
            sock = self._take_idle() if attempt == 0 else None
            reused = sock is not None
            if sock is None:
                sock = self._connect(deadline)
            try:
                return self._exchange(sock, raw, deadline)
            except _ClosedBeforeAnswer as e:
                if reused and attempt == 0:
                    continue  # a stale keep-alive connection: the daemon never read it
                raise Lost(str(e)) from None
            except TimeoutError:
                raise Lost(f"no answer within {timeout:g} s") from None
        raise AssertionError("unreachable")

    def _exchange(self, sock: _socket.socket, raw: bytes,
                  deadline: float) -> tuple[int, dict[str, str], Any]:
        keep = False
        try:
            data = bytearray()
            try:
                sock.settimeout(_left(deadline))
                sock.sendall(raw)
                while (split := http1.split_head(bytes(data))) is None:
                    if len(data) > MAX_HEAD:
                        raise Lost("an answer header too large")
                    if not _recv_into(sock, data, deadline):
                        raise ConnectionResetError
            except ConnectionError:
                if data:
                    raise Lost("the daemon closed the connection mid-answer") from None
                raise _ClosedBeforeAnswer("the daemon closed the connection") from None
            head, rest = split
            try:
                status, found = http1.parse_head(head)
                length = http1.body_length(found)
                more = bytearray(rest)
                if length >= 0:
                    while len(more) < length:
                        if not _recv_into(sock, more, deadline):
                            raise http1.Incomplete("closed")
                    payload = bytes(more[:length])
                    keep = len(more) == length \
                        and found.get("connection", "").lower() != "close"
                else:  # chunked or to the end: read whole, then never reuse the connection
                    payload = self._rest(sock, found, more, deadline)
            except (ConnectionError, ValueError):  # http1.Incomplete is a ValueError
                raise Lost("the daemon closed the connection mid-answer") from None
        finally:
            with self._lock:
                if keep and len(self._idle) < MAX_IDLE:
                    self._idle.append(sock)
                else:  # interrupted, failed or told to: never reuse a half-read connection
                    sock.close()
        return status, found, _decode(payload)

    @staticmethod
    def _rest(sock: _socket.socket, found: dict[str, str], data: bytearray,
              deadline: float) -> bytes:
        while True:
            if http1.body_length(found) == http1.CHUNKED:
                try:
                    return http1.unchunk(bytes(data))
                except http1.Incomplete:
                    pass
            if not _recv_into(sock, data, deadline):
                return http1.body(found, bytes(data), closed=True)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _recv_into(sock: _socket.socket, data: bytearray, deadline: float) -> bool:
    """Read what has come (up to the deadline) onto `data`; False: the daemon closed."""
    sock.settimeout(_left(deadline))
    chunk = sock.recv(65536)
    data += chunk
    return bool(chunk)
