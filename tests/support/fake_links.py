"""In-process fake browser links, for tests that drive the real dispatcher, sessions and
browser manager without a browser (tests/test_interleavings.py).

A `FakeLink` is a `BrowserLink` whose far side the test plays (`FarSide`): it sees each
command as it arrives and answers it at once, later, or never. It is entered through the
public hooks only: `BrowserManager(connect=...)` makes one per launch, `on_send` observers
see what goes out, `abort()` drops it as a failed socket would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from browserskill.browser.link import (
    Command,
    LinkClosed,
    PendingSequence,
    Requester,
    SendObserver,
    TargetHandle,
)


class FarSide(Protocol):
    """The browser's side of a fake link, as the test plays it."""

    def sent(self, method: str) -> None:
        """A command arrives (checked at that moment, in the sender's context)."""

    def answer(self, link: FakeLink, method: str, params: dict[str, Any],
               reply: asyncio.Future[dict[str, Any]]) -> None:
        """Resolve `reply` now or later, or hold it (it may then time out)."""


class FakeLink(Requester):
    """A `BrowserLink` whose answers the test gives (or withholds)."""

    relays_sequences = False

    def __init__(self, far: FarSide, endpoint: str) -> None:
        self.far = far
        self.endpoint = endpoint
        self.close_reason: str | None = None
        self._pending: set[asyncio.Future[dict[str, Any]]] = set()
        self._subscribers: dict[str | None, list[Any]] = {}
        self._close_handlers: list[Callable[[str], None]] = []
        self._send_observers: list[SendObserver] = []

    @property
    def closed(self) -> bool:
        return self.close_reason is not None

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      session_id: str | None = None) -> asyncio.Future[dict[str, Any]]:
        if self.close_reason is not None:
            raise LinkClosed(self.close_reason)
        for observer in self._send_observers:
            observer(method, session_id)
        return self.deliver(method, params or {})

    def deliver(self, method: str, params: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """The command reaches the far side (no observer sees it: the daemon didn't send
        it as such, a relayed sequence's worker did)."""
        self.far.sent(method)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)
        self.far.answer(self, method, params, fut)
        return fut

    def subscribe(self, session_id: str | None, handler: Any) -> Any:
        handlers = self._subscribers.setdefault(session_id, [])
        handlers.append(handler)
        return lambda: handler in handlers and handlers.remove(handler)

    def on_close(self, handler: Callable[[str], None]) -> None:
        self._close_handlers.append(handler)

    def on_send(self, observer: SendObserver) -> None:
        self._send_observers.append(observer)

    def emit(self, session_id: str | None, method: str, params: dict[str, Any]) -> None:
        for handler in list(self._subscribers.get(session_id, ())):
            handler(method, params)

    async def create_tab(self, url: str = "about:blank", *, new_window: bool = False,
                         context_id: str | None = None,
                         window_size: tuple[int, int] | None = None) -> TargetHandle:
        created = await self.send("Target.createTarget", {"url": url,
                                                          "newWindow": new_window})
        attached = await self.send("Target.attachToTarget",
                                   {"targetId": created["targetId"], "flatten": True})
        return TargetHandle(created["targetId"], attached["sessionId"])

    async def attach(self, target_id: str) -> TargetHandle:
        attached = await self.send("Target.attachToTarget", {"targetId": target_id})
        return TargetHandle(target_id, attached["sessionId"])

    async def close_tab(self, target_id: str) -> None:
        await self.send("Target.closeTarget", {"targetId": target_id})

    async def version(self) -> dict[str, Any]:
        return await self.send("Browser.getVersion")

    async def close(self) -> None:
        self.drop("closed by the daemon")

    def abort(self) -> None:
        """The socket fails under the daemon (as `CdpLink.abort`)."""
        self.drop("socket closed (scripted)")

    def drop(self, reason: str) -> None:
        """The socket is gone: every pending command fails at once, then the handlers."""
        if self.close_reason is not None:
            return
        self.close_reason = reason
        for fut in list(self._pending):
            if not fut.done():
                fut.set_exception(LinkClosed(reason))
        for handler in self._close_handlers:
            handler(reason)


class RelayingFakeLink(FakeLink):
    """A link that runs a command sequence itself, as the extension's worker does: each
    command once the one before was answered (unless it says otherwise); an abort stops
    it before its next command. Every command it runs reaches the far side (`FarSide.sent`)
    for the operation that asked, even after that one ended."""

    relays_sequences = True

    async def request_sequence(self, commands: list[Command], *,
                               session_id: str) -> PendingSequence:
        for command in commands:  # as ExtensionLink: observers see each command
            for observer in self._send_observers:
                observer(command.method, session_id)
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[list[dict[str, Any]]] = loop.create_future()
        stop = asyncio.Event()
        in_flight: list[asyncio.Future[dict[str, Any]]] = []

        async def worker() -> list[dict[str, Any]]:
            answers: list[asyncio.Future[dict[str, Any]]] = []
            for command in commands:
                if stop.is_set():
                    break
                if self.close_reason is not None:
                    raise LinkClosed(self.close_reason)
                fut = self.deliver(command.method, command.params)
                # Its failure is read from `answers` at the end, or by no one once the
                # sequence was aborted: never an unretrieved exception at exit.
                fut.add_done_callback(lambda f: f.cancelled() or f.exception())
                answers.append(fut)
                if command.answered_first:
                    in_flight[:] = [fut]
                    try:
                        await fut
                    except asyncio.CancelledError:
                        break  # aborted: Chrome's answer no longer matters here
            return [a.result() if a.done() and not a.cancelled() and a.exception() is None
                    else {} for a in answers]

        def settle(task: asyncio.Task[list[dict[str, Any]]]) -> None:
            if reply.done():
                return
            if task.exception() is not None:
                reply.set_exception(task.exception())  # type: ignore[arg-type]
            else:
                reply.set_result(task.result())

        running = loop.create_task(worker())
        running.add_done_callback(settle)

        async def abort() -> None:
            if not running.done():
                stop.set()
                for fut in in_flight:
                    fut.cancel()  # the fake browser's stand-in for its late answer

        return PendingSequence(reply, abort)
