"""The extension's browsers wired to sessions and operations (docs/design.md, layers).

The hub (browser/extension.py) knows links and Agent Windows, nothing of sessions or
operations; it reports what happens in a browser through its `on_*` callbacks, and this
module, in the daemon's wiring layer, answers each with the session manager's and the
dispatcher's public calls.
"""

from __future__ import annotations

import contextlib

from browserskill.base import background
from browserskill.base.contract import CancelReason
from browserskill.base.errors import BskError
from browserskill.browser.agent_window import AgentWindow
from browserskill.browser.backend import SessionView
from browserskill.browser.extension import ExtensionHub, show_approvals
from browserskill.dispatch.dispatcher import Dispatcher
from browserskill.session.sessions import SessionManager


def wire(hub: ExtensionHub, sessions: SessionManager, dispatcher: Dispatcher) -> None:
    """Connect the hub's browser-side happenings to sessions and operations."""
    person = dispatcher.person  # the user's Stop, help answers and approvals

    async def end_session(sid: str, reason: str) -> None:
        session = sessions.sessions.get(sid)
        if session is None:
            return
        for tab in session.tabs.values():
            tab.mark_gone(reason)
        for op in dispatcher.cancel_session(sid, CancelReason.WINDOW_CLOSED):
            await op.done.wait()
        if sessions.sessions.get(sid) is session:
            await sessions.close(session, reason)

    def window_closed(sid: str, reason: str = "its Agent Window was closed") -> None:
        background.start(end_session(sid, reason), name=f"extension-window-closed-{sid}")

    def debugging_cancelled(sid: str, reason: str) -> None:
        # As the user's Stop: the calls in flight end honestly, with this reason.
        dispatcher.cancel_session(sid, CancelReason.DEBUGGING_CANCELLED)
        window_closed(sid, reason)

    def help_answer(sid: str, answer: str) -> None:
        with contextlib.suppress(BskError):  # the request ended meanwhile
            person.answer_help(sid, answer)

    def tab_opened(win: AgentWindow, opener_id: str, chrome_tab: int) -> None:
        opener = win.session.tabs.get(opener_id)
        if opener is not None and sessions.sessions.get(win.session.id) is win.session:
            background.start(sessions.adopt(win.session, opener, str(chrome_tab)),
                             name=f"extension-adopt-{chrome_tab}")

    def readopted(view: SessionView) -> None:
        session = sessions.sessions.get(view.id)
        if session is view:  # still the session the window was bound to
            sessions.persist(session)

    def approval_answer(session_ids: set[str], op_id: str, answer: str) -> None:
        with contextlib.suppress(BskError):  # answered, cancelled or timed out meanwhile
            if person.approvals.get(op_id).session_id in session_ids:
                person.answer_approval(op_id, answer, "the extension's popup")

    def approvals_changed() -> None:
        show_approvals(hub, [
            {"op_id": op.op_id, "session_id": op.session_id, "tool": op.tool,
             "what": (op.approval or {}).get("what"), "why": (op.approval or {}).get("why")}
            for op in person.approvals.pending()])

    hub.on_approval_answer = approval_answer
    hub.on_reconnected = person.approvals.on_change = approvals_changed
    hub.on_lost = dispatcher.link_lost
    hub.on_interrupt = person.interrupt  # the same path as a dashboard's take-over
    hub.on_help_answer = help_answer  # as the dashboard's Done / Decline
    hub.on_window_closed = window_closed
    hub.on_debugging_cancelled = debugging_cancelled
    hub.on_readopted = readopted
    hub.on_tab_opened = tab_opened
    sessions.extensions = hub
