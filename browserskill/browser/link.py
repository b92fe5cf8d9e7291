"""The browser link interface that tools are written against, and its errors.

A link carries CDP commands and events for page targets. `CdpLink` speaks Chromium's
DevTools WebSocket directly; an extension link relays the same messages through
`chrome.debugger`. Tools never see which one they have.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

T = TypeVar("T")

EventHandler = Callable[[str, dict[str, Any]], None]


class LinkError(Exception):
    """Base of everything a link raises."""


class LinkClosed(LinkError):
    """The connection to the browser is gone; pending commands can't be answered."""


class TargetClosed(LinkClosed):
    """The command's tab closed under it; the link itself goes on."""


class CommandTimeout(LinkError):
    """A command got no answer within its deadline; it may still have run."""


class CdpError(LinkError):
    """The browser answered a command with an error."""

    def __init__(self, method: str, code: int, message: str, data: str = "") -> None:
        super().__init__(f"{method}: {message}" + (f" ({data})" if data else ""))
        self.method = method
        self.code = code
        self.message = message


async def await_reply(method: str, fut: asyncio.Future[T], timeout: float) -> T:
    """Await a reply future with a deadline; a late reply is then dropped.

    The deadline is one timer that cancels `fut` (what `asyncio.timeout` would do through
    the task, without its context object: every command awaits here). A cancel of the
    awaiting task itself, even one that arrives as the timer fires, stays a cancel."""
    if fut.done():
        return fut.result()
    expired = False

    def expire() -> None:
        nonlocal expired
        if not fut.done():
            expired = True
            fut.cancel()

    timer = fut.get_loop().call_later(timeout, expire)
    try:
        return await fut
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if expired and (task is None or not task.cancelling()):
            raise CommandTimeout(f"{method}: no answer within {timeout:g}s") from None
        raise
    finally:
        timer.cancel()
        if not fut.done():
            fut.cancel()


SendObserver = Callable[[str, str | None], None]  # (method, link session id)


class Requester:
    """`send` for whatever has `request` (the links, a tab): the one definition of "send
    a command, then await its reply within a deadline"; `request` says how it goes out."""

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        raise NotImplementedError

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None, timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Send; the reply, or `CommandTimeout` after `timeout` seconds (the late reply is
        then dropped), or whatever failed the reply's future early."""
        fut = await self.request(method, params, session_id=session_id)
        return await await_reply(method, fut, timeout)


@dataclass(frozen=True)
class TargetHandle:
    target_id: str
    session_id: str  # the link's session for this target (flattened CDP session id)


class Command(NamedTuple):
    """One command of a sequence."""

    method: str
    params: dict[str, Any]
    # False: the next command goes out without waiting for this one's answer. Only where
    # Chromium keeps the order itself and the answer merely says it was handled (a mouse
    # move, whose answer waits for the next frame: ~8 ms on average).
    answered_first: bool = True
    # True: a failure answers None for this command instead of failing the sequence (a
    # read that rides along after the steps).
    optional: bool = False


@dataclass
class PendingSequence:
    """Commands a link runs in order (see `Command.answered_first`), with no round trip
    to the daemon in between. `reply` gets every answer; `abort` stops the rest (what is
    already sent goes on) unless the link already answered."""

    reply: asyncio.Future[list[dict[str, Any]]]
    abort: Callable[[], Awaitable[None]]


class SequenceRelay(Protocol):
    """A link whose far end runs a whole input sequence itself (`relays_sequences`)."""

    async def request_sequence(self, commands: list[Command], *,
                               session_id: str) -> PendingSequence: ...


class BrowserLink(Protocol):
    # True if the link runs a command sequence itself, saving a round trip per command
    # (the extension relay); it then has `request_sequence(commands: list[Command], *,
    # session_id) -> PendingSequence`. A direct CDP link has no round trip to save.
    relays_sequences: bool

    @property
    def closed(self) -> bool: ...

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        """Send; return the reply's future (which the caller may fail early)."""
        ...

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]: ...

    def subscribe(self, session_id: str | None, handler: EventHandler) -> Callable[[], None]: ...

    def on_close(self, handler: Callable[[str], None]) -> None: ...

    def on_send(self, observer: SendObserver) -> None:
        """Call `observer(method, session_id)` as each CDP command goes out (each command
        of a relayed sequence too), in the sender's context."""
        ...

    async def create_tab(self, url: str = "about:blank") -> TargetHandle: ...

    async def close_tab(self, target_id: str) -> None: ...

    async def version(self) -> dict[str, Any]: ...

    # The browser window of a page (CDP's Browser.* window commands; through the
    # extension, chrome.windows, and only ever an Agent Window).
    async def window_of(self, target: TargetHandle, *,
                        timeout: float = 30.0) -> dict[str, Any]:
        """The window holding this page: {"windowId", "bounds"}."""
        ...

    async def set_window_bounds(self, window_id: int, bounds: dict[str, Any], *,
                                timeout: float = 30.0) -> None:
        """Set some of left, top, width, height, windowState (not state and size at once)."""
        ...

    async def window_bounds(self, window_id: int, *, timeout: float = 30.0) -> dict[str, Any]:
        """{left, top, width, height, windowState}."""
        ...

    async def close(self) -> None: ...
