"""The WebMCP tools of one tab's frames, kept from its CDP sessions' events (no I/O).

Chromium reports tools per CDP session: the page session reports its own frames (the
same-origin iframes included), each out-of-process iframe's session its own. A frame's
tools end with its document, and Chromium sends no `toolsRemoved` for that, so the table
drops them itself: on a commit (`frameNavigated`), a detach, a crash, or the iframe
session going away.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

MAX_REF = 128
# Chromium's annotation names -> ours (docs/design.md §5 lists these four).
ANNOTATIONS = {"readOnly": "read_only", "untrustedContent": "untrusted_content",
               "consequential": "consequential", "autosubmit": "autosubmit"}


@dataclass(frozen=True)
class Tool:
    session_id: str  # the CDP session that reported it (page or out-of-process iframe)
    frame_id: str
    name: str
    description: str
    input_schema: dict[str, Any] | None
    annotations: dict[str, bool]
    declarative: bool  # a <form toolname=…> (Chromium gives its backendNodeId)

    @classmethod
    def from_cdp(cls, session_id: str, raw: dict[str, Any]) -> Tool:
        given = raw.get("annotations") or {}
        annotations = {ours: bool(given.get(theirs, False)) for theirs, ours in ANNOTATIONS.items()}
        if raw.get("autosubmit"):
            annotations["autosubmit"] = True
        schema = raw.get("inputSchema")
        return cls(session_id, raw["frameId"], raw["name"], raw.get("description", ""),
                   schema if isinstance(schema, dict) else None, annotations,
                   "backendNodeId" in raw)


@dataclass
class TabTools:
    """One tab's tool table. `on_event` takes every event of the tab's sessions."""

    page_session_id: str
    main_frame_id: str
    tools: dict[tuple[str, str, str], Tool] = field(default_factory=dict)
    frame_urls: dict[str, str] = field(default_factory=dict)
    # Why tools went away, for a precise tool_not_found: (frame id, name) -> reason.
    gone: OrderedDict[tuple[str, str], str] = field(default_factory=OrderedDict)

    def on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "WebMCP.toolsAdded":
            for raw in params.get("tools", ()):
                tool = Tool.from_cdp(session_id, raw)
                self.tools[(session_id, tool.frame_id, tool.name)] = tool
                self.gone.pop((tool.frame_id, tool.name), None)
        elif method == "WebMCP.toolsRemoved":
            for raw in params.get("tools", ()):
                key = (session_id, raw.get("frameId", ""), raw.get("name", ""))
                if self.tools.pop(key, None) is not None:
                    self._note_gone(key[1], key[2], "the page unregistered it")
        elif method == "Page.frameNavigated":
            frame = params.get("frame", {})
            self.frame_urls[frame.get("id", "")] = frame.get("url", "")
            self._drop(lambda t: t.session_id == session_id and t.frame_id == frame.get("id"),
                       "its page navigated or reloaded")
        elif method == "Page.frameDetached":
            frame_id = params.get("frameId")
            self._drop(lambda t: t.session_id == session_id and t.frame_id == frame_id,
                       "its frame went away")
        elif method == "Target.detachedFromTarget":
            child = params.get("sessionId")
            self._drop(lambda t: t.session_id == child, "its frame went away")
        elif method == "Inspector.targetCrashed":
            if session_id == self.page_session_id:
                self._drop(lambda t: True, "the tab's renderer crashed")
            else:
                self._drop(lambda t: t.session_id == session_id, "the frame's renderer crashed")
        elif method == "Inspector.detached" and session_id == self.page_session_id:
            self._drop(lambda t: True, "the tab was closed")

    def tab_gone(self, reason: str) -> None:
        self._drop(lambda t: True, reason)

    def _drop(self, which: Any, reason: str) -> None:
        for key in [k for k, t in self.tools.items() if which(t)]:
            del self.tools[key]
            self._note_gone(key[1], key[2], reason)

    def _note_gone(self, frame_id: str, name: str, reason: str) -> None:
        self.gone[(frame_id, name)] = reason
        self.gone.move_to_end((frame_id, name))
        while len(self.gone) > 256:
            self.gone.popitem(last=False)

    def keep_frames(self, session_id: str, frame_ids: set[str]) -> None:
        """Drop tools of frames a fresh frame tree of `session_id` no longer has."""
        self._drop(lambda t: t.session_id == session_id and t.frame_id not in frame_ids,
                   "its frame went away")

    def all(self) -> list[Tool]:
        return list(self.tools.values())


def make_ref(tab_id: str, frame_key: str, name: str) -> str:
    """`t1/f0/echo` (tab, frame ordinal as in snapshot refs, name): stable while the tool's
    frame keeps its id, so across reloads of that frame; at most 128 characters."""
    ref = f"{tab_id}/{frame_key}/{name}"
    if len(ref) <= MAX_REF:
        return ref
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    head = f"{tab_id}/{frame_key}/"
    return head + name[: MAX_REF - len(head) - 11] + "~" + digest
