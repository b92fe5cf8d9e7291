"""`CdpLink`: Chromium's DevTools protocol over one WebSocket, flattened target sessions.

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

from browserskill.browser.link import (
    CdpError,
    EventHandler,
    LinkClosed,
    TargetHandle,
    await_reply,
)

log = logging.getLogger(__name__)

# Screenshots and full accessibility trees are large; Chromium sends them in one frame.
MAX_MESSAGE = 256 * 1024 * 1024


class CdpLink:
    def __init__(self, ws: Any, endpoint: str) -> None:
        self._ws = ws
        self.endpoint = endpoint
        self._next_id = 0
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._subscribers: dict[str | None, list[EventHandler]] = {}
        self._close_handlers: list[Callable[[str], None]] = []
        self._closed_reason: str | None = None
        self._reader = asyncio.create_task(self._read_loop(), name="cdp-reader")

    @classmethod
    async def connect(cls, ws_url: str, *, timeout: float = 10.0) -> CdpLink:
        ws = await asyncio.wait_for(
            websockets.connect(
                ws_url, max_size=MAX_MESSAGE, ping_interval=None, compression=None
            ),
            timeout,
        )
        return cls(ws, ws_url)

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def close_reason(self) -> str | None:
        return self._closed_reason

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        """Send a command; return the future of its reply (no task, no deadline yet).

        Whoever holds the future may fail it early (a tab whose page opened a dialog);
        the reply, if it still comes, is then dropped."""
        if self._closed_reason is not None:
            raise LinkClosed(self._closed_reason)
        self._next_id += 1
        msg_id = self._next_id
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, fut)
        fut.add_done_callback(lambda _: self._pending.pop(msg_id, None))
        try:
            await self._ws.send(json.dumps(message))
        except websockets.ConnectionClosed as e:
            self._mark_closed(f"connection closed: {e}")
            raise LinkClosed(self._closed_reason or "closed") from None
        except BaseException:
            fut.cancel()
            raise
        return fut

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        fut = await self.request(method, params, session_id=session_id)
        return await await_reply(method, fut, timeout)

    def subscribe(self, session_id: str | None, handler: EventHandler) -> Callable[[], None]:
        handlers = self._subscribers.setdefault(session_id, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return unsubscribe

    def on_close(self, handler: Callable[[str], None]) -> None:
        self._close_handlers.append(handler)

    async def create_tab(self, url: str = "about:blank") -> TargetHandle:
        created = await self.send("Target.createTarget", {"url": url})
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

    async def close(self) -> None:
        self._mark_closed("closed by the daemon")
        await self._ws.close()
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
            self._mark_closed(reason)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        msg_id = msg.get("id")
        if msg_id is not None:
            entry = self._pending.get(msg_id)
            if entry is None:
                return  # its caller gave up (deadline or cancel)
            method, fut = entry
            if fut.done():
                return
            if "error" in msg:
                err = msg["error"]
                fut.set_exception(
                    CdpError(method, err.get("code", 0), err.get("message", ""),
                             err.get("data", ""))
                )
            else:
                fut.set_result(msg.get("result", {}))
            return
        method = msg.get("method")
        if not method:
            return
        params = msg.get("params", {})
        for handler in list(self._subscribers.get(msg.get("sessionId"), ())):
            try:
                handler(method, params)
            except Exception:
                log.exception("event handler failed for %s", method)

    def _mark_closed(self, reason: str) -> None:
        if self._closed_reason is not None:
            return
        self._closed_reason = reason
        for method, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(LinkClosed(f"{method}: {reason}"))
        for handler in self._close_handlers:
            try:
                handler(reason)
            except Exception:
                log.exception("close handler failed")
