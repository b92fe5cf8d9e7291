"""`CdpLink`: Chromium's DevTools protocol over one WebSocket — or, for the embedded
browser, over its keeper's Unix socket (NUL-framed, browser/keeper.py) — with flattened
target sessions.

One reader owns the socket: a task over the WebSocket; over the keeper's socket, its
protocol (`_FramedProtocol`), which splits frames as bytes arrive and handles each
there — no task woken per message. Replies resolve the pending command by id; events go
to subscribers keyed by CDP session id, in the order they arrived. When the socket
closes (browser died, remote end went away), every pending command fails at once with
`LinkClosed`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import websockets

from browserskill.base import json_text
from browserskill.browser.conversation import Conversation
from browserskill.browser.link import (
    CdpError,
    CommandTimeout,
    EventHandler,
    LinkError,
    Requester,
    SendObserver,
    TargetHandle,
    await_reply,
)

log = logging.getLogger(__name__)

# Screenshots and full accessibility trees are large; Chromium sends them in one frame.
MAX_MESSAGE = 256 * 1024 * 1024
# Liveness of a remote browser (`CdpLink.watch`): a round trip is ~1 ms even through a
# Grid's hub, so a probe a second costs nothing and finds a dead peer within 3 s.
PROBE_EVERY_S = 1.0
PROBE_DEADLINE_S = 2.0
PROBE_PATIENCE_S = 10.0  # the most a probe waits on a peer that is still sending


class CdpLink(Requester):
    relays_sequences = False

    def __init__(self, ws: Any, endpoint: str) -> None:
        self._ws = ws
        self.endpoint = endpoint
        self._conv = Conversation(ws.send, lost=(websockets.ConnectionClosed, ConnectionError),
                                  name="connection")
        self._reader: asyncio.Task[None] | None = None
        if isinstance(ws, _FramedProtocol):
            ws.start(self._dispatch_raw, self._conv.close)
        else:
            self._reader = asyncio.create_task(self._read_loop(), name="cdp-reader")
        self._prober: asyncio.Task[None] | None = None
        self._last_heard = 0.0  # loop time of the last message from the peer

    @classmethod
    async def connect(cls, ws_url: str, *, timeout: float = 10.0) -> CdpLink:
        """`ws://…`/`wss://…`: a DevTools WebSocket; `unix:PATH`: a keeper's socket."""
        if ws_url.startswith("unix:"):
            _, framed = await asyncio.wait_for(asyncio.get_running_loop(
                ).create_unix_connection(_FramedProtocol, ws_url[5:]), timeout)
            return cls(framed, ws_url)
        try:
            ws = await asyncio.wait_for(
                websockets.connect(
                    # close_timeout: a peer gone silent must not hold a closing daemon
                    ws_url, max_size=MAX_MESSAGE, ping_interval=None, compression=None,
                    close_timeout=1.0,
                ),
                timeout,
            )
        except websockets.WebSocketException as e:  # refused handshake, bad URI, …
            raise LinkError(f"{ws_url}: {e}") from None
        return cls(ws, ws_url)

    def watch(self, *, every: float = PROBE_EVERY_S, deadline: float = PROBE_DEADLINE_S) -> None:
        """Probe a remote browser for as long as the link lives: a cheap command (`every`
        seconds) that must be answered within `deadline`, else the link is closed, so
        everything waiting on it ends now instead of at its own deadline. A socket can stay
        open and silent (a Selenium Grid whose WebDriver session ended, a network
        partition): only an unanswered command shows it."""
        if self._prober is None:
            self._prober = asyncio.create_task(self._probe(every, deadline), name="cdp-probe")

    async def _probe(self, every: float, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        while not self.closed:
            await asyncio.sleep(every)
            try:
                reply = await self.request("Browser.getVersion")
            except LinkError:
                return  # closed: its reader said why
            sent = loop.time()
            # Silence is death; a peer still sending (events, a large reply ahead of the
            # probe's) is alive and only slow: it gets up to PROBE_PATIENCE_S.
            while True:
                try:
                    await await_reply("Browser.getVersion", asyncio.shield(reply), deadline)
                    break
                except CommandTimeout:
                    heard_lately = self._last_heard > loop.time() - deadline
                    if not heard_lately or loop.time() - sent > PROBE_PATIENCE_S:
                        reply.cancel()
                        self.abort(f"the browser stopped answering (no answer to a probe "
                                   f"within {loop.time() - sent:.1f}s)")
                        return
                except LinkError:
                    return

    def abort(self, reason: str | None = None) -> None:
        """Drop the connection without a close handshake, as a failed network or a dead
        peer does. With a `reason` (the daemon gave up on the peer): pending commands fail
        with it now; without (a test's dropped socket): the reader sees the socket end,
        and every reply still owed fails at once."""
        if reason is not None:
            self._conv.close(reason)
            self._stop_reading()
        if isinstance(self._ws, _FramedProtocol):
            self._ws.flush()  # what was sent before the drop left before it
        transport = getattr(self._ws, "transport", None)
        if transport is not None:
            transport.abort()

    @property
    def closed(self) -> bool:
        return self._conv.closed

    @property
    def close_reason(self) -> str | None:
        return self._conv.closed_reason

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        """Send a command; return the future of its reply (no task, no deadline yet).

        Whoever holds the future may fail it early (a tab whose page opened a dialog);
        the reply, if it still comes, is then dropped."""
        message: dict[str, Any] = {"method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        self._conv.sending(method, session_id)
        return (await self._conv.post(method, message))[1]

    def subscribe(self, session_id: str | None, handler: EventHandler) -> Callable[[], None]:
        return self._conv.subscribe(session_id, handler)

    def on_close(self, handler: Callable[[str], None]) -> None:
        self._conv.on_close(handler)

    def on_send(self, observer: SendObserver) -> None:
        self._conv.on_send(observer)

    async def create_tab(self, url: str = "about:blank", *, new_window: bool = False,
                         context_id: str | None = None,
                         window_size: tuple[int, int] | None = None) -> TargetHandle:
        params: dict[str, Any] = {"url": url}
        if new_window:
            params["newWindow"] = True
        if context_id is not None:
            params["browserContextId"] = context_id
        if window_size is not None:
            params["width"], params["height"] = window_size
        created = await self.send("Target.createTarget", params)
        target_id = created["targetId"]
        try:
            attached = await self.send(
                "Target.attachToTarget", {"targetId": target_id, "flatten": True}
            )
        except BaseException:
            # Compensation: never leave a tab nobody owns.
            await self._close_quietly(target_id)
            raise
        return TargetHandle(target_id, attached["sessionId"])

    async def attach(self, target_id: str) -> TargetHandle:
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target_id, "flatten": True}
        )
        return TargetHandle(target_id, attached["sessionId"])

    async def close_tab(self, target_id: str) -> None:
        await self.send("Target.closeTarget", {"targetId": target_id})

    async def _close_quietly(self, target_id: str) -> None:
        try:
            await asyncio.shield(self.send("Target.closeTarget", {"targetId": target_id},
                                           timeout=2.0))
        except Exception:
            log.warning("could not close half-created tab %s", target_id)

    async def version(self) -> dict[str, Any]:
        return await self.send("Browser.getVersion")

    async def window_of(self, target: TargetHandle, *,
                        timeout: float = 30.0) -> dict[str, Any]:
        return await self.send("Browser.getWindowForTarget", {"targetId": target.target_id},
                               timeout=timeout)

    async def set_window_bounds(self, window_id: int, bounds: dict[str, Any], *,
                                timeout: float = 30.0) -> None:
        await self.send("Browser.setWindowBounds", {"windowId": window_id, "bounds": bounds},
                        timeout=timeout)

    async def window_bounds(self, window_id: int, *, timeout: float = 30.0) -> dict[str, Any]:
        answer = await self.send("Browser.getWindowBounds", {"windowId": window_id},
                                 timeout=timeout)
        bounds: dict[str, Any] = answer["bounds"]
        return bounds

    async def close(self) -> None:
        self._conv.close("closed by the daemon")
        if self._prober is not None:
            self._prober.cancel()
        try:
            async with asyncio.timeout(2.0):  # a silent peer never answers the close
                await self._ws.close()
        except TimeoutError:
            self.abort("closed by the daemon")
        self._stop_reading()

    def _stop_reading(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        elif isinstance(self._ws, _FramedProtocol):
            self._ws.stop()

    async def _read_loop(self) -> None:
        reason = "browser connection closed"
        try:
            async for raw in self._ws:
                self._dispatch(json_text.loads(raw))
        except websockets.ConnectionClosed as e:
            reason = f"browser connection closed ({e})"
        except asyncio.CancelledError:
            reason = "closed by the daemon"
            raise
        except Exception as e:  # a bug here must not leave callers hanging
            log.exception("CDP reader failed")
            reason = f"CDP reader failed: {e}"
        finally:
            self._conv.close(reason)

    def _dispatch_raw(self, raw: bytes) -> None:
        self._dispatch(json_text.loads(raw))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        self._last_heard = asyncio.get_running_loop().time()
        if msg.get("id") is not None:
            self._conv.reply(msg, _cdp_error)
        elif "method" in msg:
            self._conv.emit(msg.get("sessionId"), msg["method"], msg.get("params", {}))


class _FramedProtocol(asyncio.Protocol):
    """The keeper's stream (one JSON message per NUL-terminated frame) as the two things
    CdpLink uses of a WebSocket besides reading, `send` and `close`; reading is
    `start(on_message, on_closed)`: each whole frame goes to `on_message` as it arrives,
    in order, and the stream's end (or a frame past MAX_MESSAGE, or `on_message`
    failing: a bug) to `on_closed(reason)`, once. At most one partial frame is held."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._partial = bytearray()
        self._on_message: Callable[[bytes], None] | None = None
        self._on_closed: Callable[[str], None] | None = None
        self._held: list[bytes] = []  # what arrived before `start` (none, in practice)
        self._ended: str | None = None  # why it ended before `start`
        self._told_closed = False
        self._outgoing: list[bytes] = []  # frames sent this loop turn, written at its end

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's: no subclass

    def start(self, on_message: Callable[[bytes], None],
              on_closed: Callable[[str], None]) -> None:
        self._on_message, self._on_closed = on_message, on_closed
        held, self._held = self._held, []
        for data in held:
            self.data_received(data)
        if self._ended is not None:
            self._close(self._ended)

    def stop(self) -> None:
        """Read no more (the daemon closed the link): later bytes are dropped."""
        self._on_message = None

    def data_received(self, data: bytes) -> None:
        if self._on_closed is None:  # not started yet
            self._held.append(data)
            return
        start, end = 0, data.find(b"\0")
        while end >= 0 and self._on_message is not None:
            if self._partial:
                self._partial += data[start:end]
                frame = bytes(self._partial)
                self._partial.clear()
            else:
                frame = data[start:end]
            try:
                self._on_message(frame)
            except Exception as e:  # a bug here must not leave callers hanging
                log.exception("CDP reader failed")
                self._close(f"CDP reader failed: {e}")
            start, end = end + 1, data.find(b"\0", end + 1)
        if self._on_message is None:
            return
        self._partial += data[start:]
        if len(self._partial) > MAX_MESSAGE:
            self._partial.clear()
            log.error("CDP reader failed: a message longer than %d bytes", MAX_MESSAGE)
            self._close(f"CDP reader failed: a message longer than {MAX_MESSAGE} bytes")

    def eof_received(self) -> bool:
        self._close("browser connection closed")
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._close("browser connection closed")

    def _close(self, reason: str) -> None:
        self._on_message = None
        if self._on_closed is None:  # not started yet: told at `start`
            self._ended = self._ended or reason
        elif not self._told_closed:
            self._told_closed = True
            self._on_closed(reason)

    async def send(self, text: str) -> None:
        """Queue one frame. The frames of one loop turn go out in one write at its end:
        the calls a journal commit released together cost the keeper and the browser
        one read, not one each."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionError("the browser keeper's socket is closed")
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self.flush)
        self._outgoing.append(text.encode())
        self._outgoing.append(b"\0")

    def flush(self) -> None:
        """Write what was sent this turn now."""
        if not self._outgoing:
            return
        frames, self._outgoing = self._outgoing, []
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(frames))

    async def close(self) -> None:
        if self.transport is not None:
            self.flush()
            self.transport.close()


def _cdp_error(method: str, err: dict[str, Any]) -> CdpError:
    return CdpError(method, err.get("code", 0), err.get("message", ""), err.get("data", ""))
