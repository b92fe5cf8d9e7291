"""What a CDP-style conversation is, apart from how its messages travel.

Message ids, the one way a numbered message goes out (`post`), the replies still owed,
event subscribers keyed by session, who watches commands go out, and the one way a
conversation ends: every reply still owed fails at once with `LinkClosed`. `CdpLink`
(Chromium's DevTools WebSocket) and `ExtensionLink` (the extension's relay) are two
transports around this same core, the way `websockets` keeps its protocol apart from I/O.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from browserskill.base import json_text
from browserskill.browser.link import EventHandler, LinkClosed, SendObserver

log = logging.getLogger(__name__)


class Conversation:
    def __init__(self, write: Callable[[str], Awaitable[None]], *,
                 lost: tuple[type[BaseException], ...], name: str) -> None:
        """`write` sends one text message; it raising one of `lost` means the transport
        is gone (the conversation then ends, "{name} closed: …")."""
        self._write = write
        self._lost = lost
        self._name = name
        self._send_observers: list[SendObserver] = []
        self._next_id = 0
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._subscribers: dict[str | None, list[EventHandler]] = {}
        self._close_handlers: list[Callable[[str], None]] = []
        self.closed_reason: str | None = None

    @property
    def closed(self) -> bool:
        return self.closed_reason is not None

    def open(self, what: str) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        """A new message id and the future of its reply (forgotten once it is done)."""
        if self.closed_reason is not None:
            raise LinkClosed(self.closed_reason)
        self._next_id += 1
        msg_id = self._next_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (what, fut)
        fut.add_done_callback(lambda _: self._pending.pop(msg_id, None))
        return msg_id, fut

    async def post(self, what: str, message: dict[str, Any]
                   ) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        """Number `message`, send it, and return its id and the future of its reply.

        A transport found gone ends the conversation (`LinkClosed`); a send cancelled
        midway forgets its reply (nobody will wait for it)."""
        msg_id, fut = self.open(what)
        try:
            await self._write(json_text.dumps_ascii({"id": msg_id, **message}))
        except self._lost as e:
            self.close(f"{self._name} closed: {e}")
            raise LinkClosed(self.closed_reason or "closed") from None
        except BaseException:
            fut.cancel()
            raise
        return msg_id, fut

    def on_send(self, observer: SendObserver) -> None:
        self._send_observers.append(observer)

    def sending(self, method: str, session_id: str | None) -> None:
        """A CDP command is about to go out: tell the observers (in the sender's context)."""
        for observer in self._send_observers:
            observer(method, session_id)

    def answer(self, msg_id: int, result: dict[str, Any] | None = None, *,
               error: Callable[[str], Exception] | None = None) -> None:
        """Deliver a reply; one nobody waits for any more (deadline, cancel) is dropped."""
        entry = self._pending.get(msg_id)
        if entry is None or entry[1].done():
            return
        what, fut = entry
        if error is not None:
            fut.set_exception(error(what))
        else:
            fut.set_result(result or {})

    def reply(self, msg: dict[str, Any],
              to_error: Callable[[str, dict[str, Any]], Exception]) -> None:
        """Deliver a reply message `{id, result}` or `{id, error}`; `to_error(what, error)`
        turns the transport's error object into the exception the caller gets."""
        err = msg.get("error")
        if err is None:
            self.answer(msg["id"], msg.get("result"))
        else:
            self.answer(msg["id"], error=lambda what: to_error(what, err))

    def subscribe(self, key: str | None, handler: EventHandler) -> Callable[[], None]:
        handlers = self._subscribers.setdefault(key, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return unsubscribe

    def emit(self, key: str | None, method: str, params: dict[str, Any]) -> None:
        for handler in list(self._subscribers.get(key, ())):
            try:
                handler(method, params)
            except Exception:
                log.exception("event handler failed for %s", method)

    def on_close(self, handler: Callable[[str], None]) -> None:
        self._close_handlers.append(handler)

    def close(self, reason: str) -> None:
        """End the conversation: every reply still owed fails now, never at its timeout."""
        if self.closed_reason is not None:
            return
        self.closed_reason = reason
        for what, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(LinkClosed(f"{what}: {reason}"))
        for handler in self._close_handlers:
            try:
                handler(reason)
            except Exception:
                log.exception("close handler failed")
