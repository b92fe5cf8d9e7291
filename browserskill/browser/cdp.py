"""`CdpLink`: Chromium's DevTools protocol over one WebSocket — or, for the embedded
browser, over its keeper's Unix socket (NUL-framed, browser/keeper.py) — with flattened
target sessions.

One reader task owns the socket. Replies resolve the pending command by id; events go
to subscribers keyed by CDP session id. When the socket closes (browser died, remote
end went away), every pending command fails at once with `LinkClosed`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import websockets

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
        self._reader = asyncio.create_task(self._read_loop(), name="cdp-reader")
        self._prober: asyncio.Task[None] | None = None
        self._last_heard = 0.0  # loop time of the last message from the peer

    @classmethod
    async def connect(cls, ws_url: str, *, timeout: float = 10.0) -> CdpLink:
        """`ws://…`/`wss://…`: a DevTools WebSocket; `unix:PATH`: a keeper's socket."""
        if ws_url.startswith("unix:"):
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(
                ws_url[5:], limit=MAX_MESSAGE), timeout)
            return cls(_FramedSocket(reader, writer), ws_url)
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
            self._reader.cancel()
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
        self._reader.cancel()

    async def _read_loop(self) -> None:
        reason = "browser connection closed"
        try:
            async for raw in self._ws:
                self._dispatch(json.loads(raw))
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

    def _dispatch(self, msg: dict[str, Any]) -> None:
        self._last_heard = asyncio.get_running_loop().time()
        if msg.get("id") is not None:
            self._conv.reply(msg, _cdp_error)
        elif "method" in msg:
            self._conv.emit(msg.get("sessionId"), msg["method"], msg.get("params", {}))


class _FramedSocket:
    """The keeper's stream as the three things CdpLink uses of a WebSocket: `send`,
    `async for` messages, `close`. One JSON message per NUL-terminated frame."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def send(self, text: str) -> None:
        if self._writer.is_closing():
            raise ConnectionError("the browser keeper's socket is closed")
        self._writer.write(text.encode() + b"\0")

    def __aiter__(self) -> _FramedSocket:
        return self

    async def __anext__(self) -> bytes:
        try:
            return (await self._reader.readuntil(b"\0"))[:-1]
        except (asyncio.IncompleteReadError, ConnectionError):
            raise StopAsyncIteration from None

    async def close(self) -> None:
        self._writer.close()

    @property
    def transport(self) -> asyncio.BaseTransport:
        return self._writer.transport


def _cdp_error(method: str, err: dict[str, Any]) -> CdpError:
    return CdpError(method, err.get("code", 0), err.get("message", ""), err.get("data", ""))
