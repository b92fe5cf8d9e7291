"""The browser link interface that tools are written against, and its errors.

A link carries CDP commands and events for page targets. `CdpLink` speaks Chromium's
DevTools WebSocket directly; an extension link relays the same messages through
`chrome.debugger`. Tools never see which one they have.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

EventHandler = Callable[[str, dict[str, Any]], None]


class LinkError(Exception):
    """Base of everything a link raises."""


class LinkClosed(LinkError):
    """The connection to the browser is gone; pending commands can't be answered."""


class CommandTimeout(LinkError):
    """A command got no answer within its deadline; it may still have run."""


class CdpError(LinkError):
    """The browser answered a command with an error."""

    def __init__(self, method: str, code: int, message: str, data: str = "") -> None:
        super().__init__(f"{method}: {message}" + (f" ({data})" if data else ""))
        self.method = method
        self.code = code
        self.message = message


async def await_reply(method: str, fut: asyncio.Future[dict[str, Any]],
                      timeout: float) -> dict[str, Any]:
    """Await a reply future with a deadline; a late reply is then dropped."""
    try:
        async with asyncio.timeout(timeout):
            return await fut
    except TimeoutError:
        raise CommandTimeout(f"{method}: no answer within {timeout:g}s") from None
    finally:
        if not fut.done():
            fut.cancel()


@dataclass(frozen=True)
class TargetHandle:
    target_id: str
    session_id: str  # the link's session for this target (flattened CDP session id)


class BrowserLink(Protocol):
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

    async def create_tab(self, url: str = "about:blank") -> TargetHandle: ...

    async def close_tab(self, target_id: str) -> None: ...

    async def version(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...
