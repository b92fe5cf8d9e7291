"""What a tool handler gets: its operation, session and browser, and the rules for sending.

`act` sends a command that may change the page and marks the operation dispatched;
`inspect` only reads. This split is what lets a failure say honestly whether anything
reached the page.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from browserskill.browser.tab import Tab

if TYPE_CHECKING:
    from browserskill.browser.manager import BrowserManager
    from browserskill.dispatch.operations import Operation
    from browserskill.dispatch.sessions import Session, SessionManager


class ToolContext:
    def __init__(
        self, op: Operation, session: Session, sessions: SessionManager,
        browser: BrowserManager, state_dir: Any,
    ) -> None:
        self.op = op
        self.session = session
        self.sessions = sessions
        self.browser = browser
        self.state_dir = state_dir

    @property
    def tab(self) -> Tab:
        return self.session.tab()

    def remaining(self) -> float:
        return max(0.001, self.op.deadline - asyncio.get_running_loop().time())

    async def act(
        self, method: str, params: dict[str, Any] | None = None, *, tab: Tab | None = None
    ) -> dict[str, Any]:
        self.op.effect_sent = True
        self.op.dispatched = "yes"
        return await (tab or self.tab).send(method, params, timeout=self.remaining())

    async def inspect(
        self, method: str, params: dict[str, Any] | None = None, *, tab: Tab | None = None
    ) -> dict[str, Any]:
        return await (tab or self.tab).send(method, params, timeout=self.remaining())

    def step(self, name: str) -> None:
        """Record that one step of browser-native input is about to be sent."""
        self.op.effect_sent = True
        self.op.dispatched = "yes"
        self.op.steps_sent.append(name)
