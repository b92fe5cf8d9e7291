"""A lean HTTP/1.1 client for the daemon: keep-alive connections over its Unix socket (or
its loopback TCP listener), JSON in and out, nothing else.

The daemon's answers are small JSON documents with a Content-Length; a general HTTP
client (httpx) spent ~2 ms of CPU per call on them, several times what the daemon spends
on the operation itself. This costs ~0.1 ms.

Each request takes an idle connection (or opens one) and gives it back only after reading
the whole answer, so a call cancelled mid-answer never leaves a half-read connection in
the pool. A connection the daemon closed while it sat idle is noticed before reuse; one
that closes the moment it is reused, before any byte of the answer, is retried once on a
new connection (a tool call names its operation, so a duplicate would be refused).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from browserskill import http1

MAX_IDLE = 32  # idle connections kept; more concurrent calls open (and close) their own


class Unreachable(Exception):
    """Nothing was sent: no daemon listens there."""


class Lost(Exception):
    """The request went out (or may have) and no complete answer came back."""


class Http11:
    def __init__(self, *, socket: str | None = None, base_url: str | None = None,
                 headers: Mapping[str, str] | None = None, connect_timeout: float = 5.0) -> None:
        if (socket is None) == (base_url is None):
            raise ValueError("give a socket path or a base URL")
        self.socket = socket
        self.host = self.port = None
        host_header = "localhost"
        if base_url is not None:
            url = urlsplit(base_url)
            if url.scheme != "http" or not url.hostname:
                raise ValueError(f"only http:// base URLs are supported, got {base_url!r}")
            self.host, self.port = url.hostname, url.port or 80
            host_header = url.netloc
        self._host = host_header
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
        fields = [*self._fixed, *(headers or {}).items()]
        if body is not None:
            fields.append(("Content-Type", "application/json"))
        raw = http1.request(method, path, fields,
                            b"" if body is None else json.dumps(body).encode(),
                            host=self._host)
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
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")
