"""The daemon's HTTP listeners as uvicorn servers, each bounded on its own (docs/design.md
§6, "Listener limits"; the counting is `admission.py`).

uvicorn reads headers for as long as a client takes to send them, of any size, on as
many connections as arrive. Here every connection must finish its request line and
headers within `HEADER_READ_S` of its accept (or of its next request's first byte), in
at most `MAX_HEADER_BYTES`, and at most `MAX_UNADMITTED` connections per listener may be
at that stage; the body is then read within `wire.BODY_READ_S`, and an idle keep-alive
connection closes after `KEEP_ALIVE_S`. Each listener is its own server with its own
count, so a flood on a TCP listener never delays the Unix socket.

The Unix listener serves the tool calls itself, without ASGI (api/hot_route.py); every
other request, and every request on a TCP listener (through TcpGuard's checks), goes to
the ASGI app.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from browserskill.api import hot_route
from browserskill.api.wire import BODY_COMPLETE
from browserskill.base.admission import ACCEPT_BACKLOG, HEADER_READ_S, MAX_HEADER_BYTES, Admission

KEEP_ALIVE_S = 5  # an idle connection between requests (uvicorn's timeout_keep_alive)
# A request's scope key: a future done when its connection is lost (a caller that hung
# up), so an answer in wait needs no task of its own reading `receive` (api/app.py).
CONNECTION_LOST = "bsk.connection_lost"


def bounded_protocol(admission: Admission, tool_calls: hot_route.ToolCalls | None = None,
                     ) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, counting this listener's unadmitted connections;
    serving the tool calls itself when given `tool_calls`."""

    class Bounded(HttpToolsProtocol):
        _waiting = False
        _header_bytes = 0
        _deadline: asyncio.TimerHandle | None = None
        _lost: asyncio.Future[None] | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._lost = self.loop.create_future()
            if not admission.enter():
                transport.abort()  # over the cap: the fd goes back at once
                return
            self._wait()

        def _wait(self) -> None:
            if self._waiting:
                return
            self._waiting, self._header_bytes = True, 0
            self._deadline = self.loop.call_later(HEADER_READ_S, self._too_slow)

        def _admitted(self) -> None:
            if self._waiting:
                self._waiting = False
                admission.leave()
                if self._deadline is not None:
                    self._deadline.cancel()

        def _too_slow(self) -> None:
            if self._waiting and not self.transport.is_closing():
                admission.timed_out()
                self._close_with(408, f"headers did not arrive within {HEADER_READ_S:g} s")

        def _close_with(self, status: int, why: str) -> None:
            reason = {408: "Request Timeout", 431: "Request Header Fields Too Large"}[status]
            self.transport.write(
                f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
                f"connection: close\r\ncontent-length: {len(why) + 1}\r\n\r\n{why}\n"
                .encode())
            self.transport.close()
            self._admitted()

        def data_received(self, data: bytes) -> None:
            if self._waiting:
                self._header_bytes += len(data)
            super().data_received(data)
            if self._waiting and self._header_bytes > MAX_HEADER_BYTES \
                    and not self.transport.is_closing():
                self._close_with(431, f"request line and headers longer than "
                                      f"{MAX_HEADER_BYTES} bytes")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope[CONNECTION_LOST] = self._lost  # type: ignore[literal-required]
            self._wait()  # the next request on a kept-alive connection: its headers too

        def on_headers_complete(self) -> None:
            self._admitted()
            target = hot_route.route(self) if tool_calls is not None else None
            if target is None:
                super().on_headers_complete()
            else:
                hot_route.start(self, target, tool_calls, self._lost)  # type: ignore[arg-type]

        def on_message_complete(self) -> None:
            super().on_message_complete()
            if self.cycle is not None:  # the request this is the end of (not a pipelined next)
                self.cycle.scope[BODY_COMPLETE] = True  # type: ignore[literal-required]

        def connection_lost(self, exc: Exception | None) -> None:
            self._admitted()
            if self._lost is not None and not self._lost.done():
                self._lost.set_result(None)
            super().connection_lost(exc)

    return Bounded


def server(app: Any, admission: Admission, tool_calls: hot_route.ToolCalls | None = None,
           **options: Any) -> uvicorn.Server:
    """A uvicorn server for one listener, bounded by `admission` (and serving the tool
    calls through `tool_calls` when given: the Unix listener's)."""
    # proxy_headers off: no proxy stands in front of the daemon, so no X-Forwarded-* may
    # rewrite a request's client or scheme (and no request pays for reading them).
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            proxy_headers=False, http=bounded_protocol(admission, tool_calls),
                            timeout_keep_alive=KEEP_ALIVE_S,
                            backlog=ACCEPT_BACKLOG, **options)
    return uvicorn.Server(config)
