"""Sessions: an agent's timeline in the browser — its tabs, refs and queue."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from browserskill.browser.manager import BrowserManager
from browserskill.browser.tab import Tab
from browserskill.dispatch.queue import SessionQueue
from browserskill.errors import BskError, invalid

DEFAULT_SESSION = "default"
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class RefBinding:
    """What a snapshot ref points at; never re-resolved by role or name."""

    tab_id: str
    frame_id: str
    loader_id: str
    backend_node_id: int
    role: str
    name: str


@dataclass
class Session:
    id: str
    label: str | None = None
    created_at: float = field(default_factory=time.time)
    tabs: dict[str, Tab] = field(default_factory=dict)
    current_tab_id: str | None = None
    refs: dict[str, RefBinding] = field(default_factory=dict)
    last_used: float = field(default_factory=time.monotonic)
    _tab_seq: int = 0
    _ref_seq: int = 0

    def __post_init__(self) -> None:
        self.queue = SessionQueue(self.id)

    def next_tab_id(self) -> str:
        self._tab_seq += 1
        return f"t{self._tab_seq}"

    def next_ref(self) -> str:
        self._ref_seq += 1
        return f"e{self._ref_seq}"

    def tab(self, tab_id: str | None = None) -> Tab:
        tab_id = tab_id or self.current_tab_id
        if tab_id is None or tab_id not in self.tabs:
            if tab_id is None:
                raise BskError(
                    "action_failed", "this session has no open tab",
                    hint="open one with `bsk tab new URL`", details={"reason": "no_tab"},
                    dispatched="no",
                )
            raise BskError(
                "invalid_params", f"tab_id: no tab {tab_id!r} in session {self.id}",
                hint="see `bsk tab list`", details={"field": "tab_id", "tabs": list(self.tabs)},
            )
        return self.tabs[tab_id]

    def add_tab(self, tab: Tab) -> None:
        self.tabs[tab.tab_id] = tab
        self.current_tab_id = tab.tab_id

    def forget_tab(self, tab_id: str) -> None:
        self.tabs.pop(tab_id, None)
        self.refs = {k: v for k, v in self.refs.items() if v.tab_id != tab_id}
        if self.current_tab_id == tab_id:
            self.current_tab_id = next(reversed(self.tabs), None) if self.tabs else None

    def summary(self) -> dict[str, Any]:
        holder = self.queue.holder
        return {
            "session_id": self.id,
            "label": self.label,
            "created_at": self.created_at,
            "tabs": len(self.tabs),
            "current_tab": self.current_tab_id,
            "busy": holder.holder_summary() if holder else None,
            "queued": len(self.queue.queued),
        }


class SessionManager:
    def __init__(self, browser: BrowserManager) -> None:
        self.browser = browser
        self.sessions: dict[str, Session] = {}

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise BskError(
                "session_not_found", f"no session {session_id!r}",
                hint="start one with `bsk session start`, or list them with `bsk session list`",
                details={"session_id": session_id},
            )
        return session

    async def get_for_call(self, session_id: str) -> Session:
        """The session a tool call names; the default session starts on first use."""
        if session_id == DEFAULT_SESSION and session_id not in self.sessions:
            return await self.create(DEFAULT_SESSION)
        return self.get(session_id)

    async def create(self, session_id: str | None = None, label: str | None = None) -> Session:
        if session_id is None:
            session_id = "s_" + secrets.token_hex(4)
        elif not _SESSION_ID.match(session_id):
            raise invalid("session_id", "use 1-64 letters, digits, '_', '.', '-'")
        if session_id in self.sessions:
            raise invalid("session_id", f"session {session_id!r} already exists",
                          hint="pick another id, or use it with --session")
        session = Session(session_id, label)
        self.sessions[session_id] = session  # reserve the id while the first tab opens
        try:
            tab = await self.browser.new_tab(session.next_tab_id())
        except BaseException:
            del self.sessions[session_id]
            raise
        session.add_tab(tab)
        return session

    async def close(self, session: Session) -> list[str]:
        closed = []
        for tab in list(session.tabs.values()):
            await self.browser.close_tab(tab)
            closed.append(tab.tab_id)
            session.forget_tab(tab.tab_id)
        self.sessions.pop(session.id, None)
        return closed
