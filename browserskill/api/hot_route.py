"""Tool calls served by the Unix listener's own protocol, without ASGI (issue 23).

Nearly every request is a tool call: `POST /v1/sessions/{sid}/tools/{tool}` (the
clients') or `POST /v1/cli` (bsk's launcher, api/cli_call.py). On the Unix socket,
uvicorn's protocol (api/listeners.py) hands either to a `HotCycle` instead of its ASGI
cycle: the cycle takes the body as the protocol parses it and calls the app's handler
(api/app.py's `tool_call` or `cli_call`: the same handlers, error table and request
count as the ASGI route). A tool call's answer goes out, head and body, in one
`transport.write`; bsk's is written through the cycle as a `Reply` (api/reply.py):
whole, or its head first and its body later, framed as the ASGI route frames it.

Invariants:
- Only a plain request takes this route: `POST`, the path exactly
  `/v1/sessions/{sid}/tools/{tool}` or `/v1/cli` (ASCII, no query, no percent-escape),
  no Transfer-Encoding, Expect or Upgrade header, no root path or concurrency limit
  configured. Anything else goes the ASGI way, which answers it as before.
- Everything about the connection stays uvicorn's: the cycle is its `RequestResponseCycle`
  with `run_asgi` replaced, so keep-alive and its idle timeout, `Connection: close`,
  HTTP/1.0, pipelined requests (queued in order, reading paused), flow control, a
  graceful stop and a lost connection (`disconnected`) work as for any request. The
  listener's header deadline and size limits apply before this choice is made.
- The body is bounded as on the ASGI route (wire.py): a Content-Length over the limit
  is refused before a byte of it is waited for, and the rest must arrive within
  `wire.BODY_READ_S`.
- A caller that hangs up mid-call cancels the operation: the handler is given the
  listener's CONNECTION_LOST future, as the ASGI route is.
- The TCP listener never takes this route: its requests go through TcpGuard (token,
  Host and Origin checks) and ASGI, so no check of its is skipped here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from browserskill.api import wire
from browserskill.api.reply import NO_BODY, Reply, fields
from browserskill.api.wire import Answer, BodyAbandoned, Headers

# A request with any of these is not plain: uvicorn's ASGI cycle knows what to do.
_NOT_PLAIN = frozenset((b"transfer-encoding", b"expect", b"upgrade"))
CLI = "cli"  # `route`'s answer for `POST /v1/cli`; a tool call's is its (sid, tool)
Target = tuple[str, str] | str


class ToolCalls(Protocol):
    """What serves the tool calls (api/app.py's `_Activity`)."""

    def tool_call(self, sid: str, tool: str, headers: Headers,
                  read: Callable[[], Awaitable[bytes]], lost: asyncio.Future[None],
                  ) -> Awaitable[Answer]: ...

    def cli_call(self, headers: Headers, read: Callable[[], Awaitable[bytes]],
                 lost: asyncio.Future[None], reply: Reply) -> Awaitable[None]: ...


def route(protocol: HttpToolsProtocol) -> Target | None:
    """`CLI`, or the (sid, tool) of a plain tool call, whose headers `protocol` has just
    read; None for any other request."""
    url: bytes = protocol.url
    if protocol.parser.get_method() != b"POST" or protocol.root_path \
            or protocol.limit_concurrency is not None:
        return None
    target: Target
    if url == b"/v1/cli":
        target = CLI
    else:
        parts = url.split(b"/")
        if (len(parts) != 6 or parts[1] != b"v1" or parts[2] != b"sessions"
                or parts[4] != b"tools" or not parts[3] or not parts[5]
                or not url.isascii() or b"?" in url or b"%" in url or b"#" in url):
            return None
        target = parts[3].decode(), parts[5].decode()
    for name, _ in protocol.headers:
        if name in _NOT_PLAIN:
            return None
    return target


def start(protocol: HttpToolsProtocol, target: Target, calls: ToolCalls,
          lost: asyncio.Future[None]) -> None:
    """Serve the request as uvicorn's `on_headers_complete` would, with a `HotCycle`."""
    scope = protocol.scope
    scope["method"] = "POST"
    scope["path"] = protocol.url.decode()
    scope["raw_path"] = protocol.url
    scope["query_string"] = b""
    parser = protocol.parser
    existing = protocol.cycle
    protocol.cycle = HotCycle(
        calls, target, lost, scope=scope, transport=protocol.transport, flow=protocol.flow,
        logger=protocol.logger, access_logger=protocol.access_logger,
        access_log=protocol.access_log, default_headers=protocol.server_state.default_headers,
        message_event=asyncio.Event(), expect_100_continue=False,
        keep_alive=parser.get_http_version() != "1.0" and parser.should_keep_alive(),
        on_response=protocol.on_response_complete)
    if existing is None or existing.response_complete:
        protocol._start_asgi_task(protocol.cycle, protocol.app)
    else:  # pipelined behind a request still answering: queued, as uvicorn queues
        protocol.flow.pause_reading()
        protocol.pipeline.appendleft((protocol.cycle, protocol.app))


class HotCycle(RequestResponseCycle):
    """One tool call. uvicorn's protocol feeds it (`body`, `more_body`, `message_event`,
    `disconnected`) and starts it (`run_asgi`) as it does its own cycles; the handler of
    `POST /v1/cli` writes its answer through it (a `Reply`)."""

    _chunked = False  # a head went out alone: its body is one chunk and the end

    def __init__(self, calls: ToolCalls, target: Target, lost: asyncio.Future[None],
                 **cycle: Any) -> None:
        super().__init__(**cycle)
        self.calls, self.target, self.lost = calls, target, lost

    async def run_asgi(self, app: Any) -> None:  # uvicorn's name for "serve the request"
        try:
            if isinstance(self.target, str):
                await self.calls.cli_call(self.scope["headers"], self.read_body, self.lost,
                                          self)
            else:
                await self.whole(await self.calls.tool_call(
                    *self.target, self.scope["headers"], self.read_body, self.lost))
            if not self.response_complete and not self.disconnected:
                raise RuntimeError("the handler returned without answering in full")
        except BaseException as exc:  # as uvicorn's run_asgi: never a traceback to the caller
            self.logger.error("Exception in the tool call", exc_info=exc)
            if not self.response_started:
                await self.send_500_response()
            else:
                self.transport.close()
        finally:
            self.on_response = lambda: None

    async def read_body(self) -> bytes:
        """The body, bounded in size and in time (wire.py's limits)."""
        declared = wire.declared_length(self.scope["headers"])
        if self.more_body:
            try:
                async with asyncio.timeout(wire.BODY_READ_S):
                    while self.more_body and not self.disconnected:
                        if len(self.body) > wire.MAX_BODY_BYTES:
                            raise wire.too_large()
                        self.flow.resume_reading()  # uvicorn pauses it past 64 KiB of body
                        await self.message_event.wait()
                        self.message_event.clear()
            except TimeoutError:
                raise wire.too_slow(len(self.body), declared) from None
        if self.disconnected:
            raise BodyAbandoned
        if len(self.body) > wire.MAX_BODY_BYTES:
            raise wire.too_large()
        body, self.body = bytes(self.body), bytearray()
        return body

    # The `Reply` (api/reply.py): what is written, then the connection as uvicorn leaves it.

    async def whole(self, answer: Answer) -> None:
        """Head and body in one write."""
        if await self._gone():
            return
        self.transport.write(self._head(answer, length=True) + answer.body)
        self._complete()

    async def head(self, answer: Answer) -> None:
        """The head alone; the body follows (`rest`) as one chunk."""
        if await self._gone():
            return
        self._chunked = answer.status not in NO_BODY
        self.transport.write(self._head(answer, length=False))

    async def rest(self, data: bytes) -> None:
        if await self._gone():
            return
        if self._chunked:
            self.transport.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data) if data
                                 else b"0\r\n\r\n")
        self._complete()

    async def _gone(self) -> bool:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        return self.disconnected

    def _head(self, answer: Answer, *, length: bool) -> bytes:
        self.response_started = True
        head = [STATUS_LINE[answer.status]]
        for name, value in self.default_headers:
            head += (name, b": ", value, b"\r\n")
        for name, value in fields(answer, length=length):
            head += (name, b": ", value, b"\r\n")
        if not length and answer.status not in NO_BODY:
            head.append(b"transfer-encoding: chunked\r\n")
        if not self.keep_alive:
            head.append(b"connection: close\r\n")
        head.append(b"\r\n")
        return b"".join(head)

    def _complete(self) -> None:
        self.response_complete = True
        self.message_event.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()
