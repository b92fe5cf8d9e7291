"""One WebMCP invocation as an event-order state machine (no I/O, time passed in).

Chromium answers a pending `WebMCP.invokeTool` across a navigation only when the tool
itself started it; otherwise no `toolResponded` ever comes. So the machine watches the
tool's frame from the moment the command is sent (a reload can land before the reply):

- the frame commits a new document (or is swapped into another process): wait for the
  replacement's `frameStoppedLoading`, then GRACE_S, then fail `page_unloaded`. A
  tool-initiated navigation's answer always arrives before that load stops, so it wins.
  A replacement that never stops loading fails UNLOAD_CAP_S after its commit;
- the renderer crashes (`Inspector.targetCrashed` on the frame's session or the page's):
  fail GRACE_S after the crash; a recovery navigation does not move that deadline;
- the frame is detached or its target goes away: fail GRACE_S later;
- the first `toolResponded` wins; later ones (Chromium sends a second after a
  tool-initiated reload) are counted and ignored. `toolInvoked` and `toolResponded`
  often arrive before the `invokeTool` reply: they are kept until the reply names the
  invocation (another client may be calling the same tool).

Feed it with `sent`, `replied`, `reply_failed`, `on_event` and `tick`; read `outcome`
and `deadline` (when `tick` must next be called).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

GRACE_S = 0.5
UNLOAD_CAP_S = 5.0

# Why a page_unloaded outcome happened.
NAVIGATED, CRASHED, DETACHED, CLOSED = "navigated", "crashed", "frame_detached", "tab_closed"


@dataclass
class Outcome:
    kind: str  # "responded" | "page_unloaded" | "rejected"
    at: float
    response: dict[str, Any] | None = None  # the toolResponded params (responded)
    reason: str = ""  # page_unloaded: NAVIGATED | CRASHED | …; rejected: Chromium's text

    @property
    def status(self) -> str | None:
        return (self.response or {}).get("status")


@dataclass
class Invocation:
    tool_name: str
    frame_id: str
    session_id: str  # CDP session that owns the frame (page or out-of-process iframe)
    page_session_id: str  # the tab's own session: its crash takes every frame with it
    invocation_id: str | None = None
    started: bool = False  # the page got the call (toolInvoked seen)
    sent_at: float | None = None
    replied_at: float | None = None
    outcome: Outcome | None = None
    deadline: float | None = None  # fail page_unloaded at this time unless answered first
    doc_changed_at: float | None = None
    replacement_stopped_at: float | None = None
    crashed_at: float | None = None
    ignored_responses: int = 0
    log: list[tuple[float, str]] = field(default_factory=list)
    _early: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)
    _seen_invoked: list[str] = field(default_factory=list)  # before the reply: candidates
    _pending_reason: str = ""

    # -- inputs ----------------------------------------------------------------------

    def sent(self, now: float) -> None:
        self.sent_at = now
        self._note(now, "invokeTool sent")

    def replied(self, result: dict[str, Any], now: float) -> bool:
        self.replied_at = now
        invocation_id = result.get("invocationId")
        self._note(now, f"invokeTool answered {invocation_id}")
        if not invocation_id:
            return self._reject("Chromium answered invokeTool without an invocation id", now)
        self.invocation_id = invocation_id  # the reply names it: authoritative
        if invocation_id in self._seen_invoked:
            self.started = True
            self._note(now, "toolInvoked (before the reply)")
        early = self._early.pop(invocation_id, None)
        self._early.clear()
        if early is not None:
            return self._respond(early, now)
        return False

    def reply_failed(self, message: str, now: float) -> bool:
        """`invokeTool` was refused (e.g. "Tool not found"): nothing ran."""
        self._note(now, f"invokeTool refused: {message}")
        return self._reject(message, now)

    def on_event(self, session_id: str, method: str, params: dict[str, Any],
                 now: float) -> bool:
        """One CDP event of the tab (any of its sessions). True if the state changed."""
        if self.outcome is not None:
            if method == "WebMCP.toolResponded" and params.get("invocationId") == \
                    self.invocation_id:
                self.ignored_responses += 1
            return False
        if method == "WebMCP.toolInvoked":
            return self._invoked(session_id, params, now)
        if method == "WebMCP.toolResponded":
            return self._responded(params, now)
        if method == "Inspector.targetCrashed":
            if session_id in (self.session_id, self.page_session_id):
                return self._crashed(now)
            return False
        if self.crashed_at is not None:
            return False  # recovery navigations keep the crash deadline
        frame_id = params.get("frameId") or params.get("frame", {}).get("id")
        if method == "Page.frameNavigated" and frame_id == self.frame_id \
                and session_id == self.session_id:
            return self._doc_changed(now, "the frame committed a new document")
        if method == "Page.frameDetached" and frame_id == self.frame_id \
                and session_id == self.session_id:
            if params.get("reason") == "swap":  # moved to another process: a new document
                return self._doc_changed(now, "the frame moved to another process")
            return self._fail_after(now + GRACE_S, DETACHED, "the frame was detached", now)
        if method == "Page.frameStoppedLoading" and frame_id == self.frame_id \
                and self.doc_changed_at is not None and self.replacement_stopped_at is None:
            self.replacement_stopped_at = now
            return self._fail_after(now + GRACE_S, NAVIGATED,
                                    "the replacement document stopped loading", now)
        if method == "Target.detachedFromTarget" and params.get("sessionId") == self.session_id:
            return self._fail_after(now + GRACE_S, DETACHED, "the frame's target went away", now)
        if method == "Inspector.detached" and session_id in (self.session_id,
                                                              self.page_session_id):
            return self._fail_after(now, CLOSED, "the tab was closed", now)
        return False

    def tab_closed(self, now: float) -> bool:
        """The tab says it is gone though we saw no event for it (belt and braces)."""
        if self.outcome is not None:
            return False
        return self._fail_after(now, CLOSED, "the tab was closed", now)

    def tick(self, now: float) -> bool:
        if self.outcome is None and self.deadline is not None and now >= self.deadline:
            self.outcome = Outcome("page_unloaded", now, reason=self._pending_reason)
            self._note(now, f"failed: page unloaded ({self._pending_reason})")
            return True
        return False

    # -- transitions -----------------------------------------------------------------

    def _invoked(self, session_id: str, params: dict[str, Any], now: float) -> bool:
        invocation_id = params.get("invocationId")
        if self.invocation_id is None:
            # It often comes before the invokeTool reply; only the reply says which call is
            # ours (another client may invoke the same tool), so keep it as a candidate.
            if invocation_id and session_id == self.session_id \
                    and params.get("toolName") == self.tool_name \
                    and params.get("frameId") == self.frame_id:
                self._seen_invoked.append(invocation_id)
            return False
        if invocation_id != self.invocation_id or self.started:
            return False
        self.started = True
        self._note(now, "toolInvoked")
        return True

    def _responded(self, params: dict[str, Any], now: float) -> bool:
        invocation_id = params.get("invocationId")
        if self.invocation_id is None:
            if invocation_id:  # whose it is shows when the invokeTool reply comes
                self._early[invocation_id] = params
                while len(self._early) > 32:
                    self._early.popitem(last=False)
            return False
        if invocation_id != self.invocation_id:
            return False
        return self._respond(params, now)

    def _respond(self, params: dict[str, Any], now: float) -> bool:
        self.outcome = Outcome("responded", now, response=params)
        self._note(now, f"toolResponded {params.get('status')}")
        return True

    def _reject(self, message: str, now: float) -> bool:
        if self.outcome is not None:
            return False
        self.outcome = Outcome("rejected", now, reason=message)
        return True

    def _crashed(self, now: float) -> bool:
        self.crashed_at = now
        self._note(now, "renderer crashed")
        # The crash deadline replaces any other: nothing can answer after a crash.
        self.deadline = now + GRACE_S
        self._pending_reason = CRASHED
        return True

    def _doc_changed(self, now: float, what: str) -> bool:
        self._note(now, what)
        if self.doc_changed_at is None:
            self.doc_changed_at = now
        return self._fail_after(now + UNLOAD_CAP_S, NAVIGATED, "", now)

    def _fail_after(self, when: float, reason: str, what: str, now: float) -> bool:
        """Fail `page_unloaded` at `when`, unless an earlier failure time is already set."""
        if what:
            self._note(now, what)
        if self.deadline is not None and self.deadline <= when:
            return bool(what)
        self.deadline = when
        self._pending_reason = reason
        return True

    def _note(self, now: float, what: str) -> None:
        base = self.sent_at if self.sent_at is not None else now
        self.log.append((round(now - base, 3), what))

    # -- reporting -------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        invocation_id, started = self.invocation_id, self.started
        if invocation_id is None and len(self._seen_invoked) == 1:
            # No reply (the page crashed in the dispatch window), but the page did start
            # exactly one call of this tool in this frame meanwhile: that was ours.
            invocation_id, started = self._seen_invoked[0], True
        out: dict[str, Any] = {"invocation_id": invocation_id, "tool_started": started}
        if self.doc_changed_at is not None and self.sent_at is not None:
            out["document_changed_after_s"] = round(self.doc_changed_at - self.sent_at, 3)
        if self.crashed_at is not None and self.sent_at is not None:
            out["crashed_after_s"] = round(self.crashed_at - self.sent_at, 3)
        if self.ignored_responses:
            out["ignored_responses"] = self.ignored_responses
        return out
