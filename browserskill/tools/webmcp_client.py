"""Listing and invoking a session's WebMCP tools: the asyncio glue around `tools` (each
tab's table) and `invocation` (one call's state machine).

A `Call` registers a tab listener before it sends `WebMCP.invokeTool`, feeds every event
and the command's reply to its `Invocation`, and wakes its waiter when the machine says
something changed or its fail-fast deadline comes. `cancel` is the compensation: it asks
Chromium to cancel and waits, bounded, for the answer that says how the call ended.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import CdpError, LinkError
from browserskill.webmcp.invocation import Invocation, Outcome
from browserskill.webmcp.tools import Tool, make_ref

if TYPE_CHECKING:
    from browserskill.browser.tab import Tab
    from browserskill.session.sessions import Session

REF = re.compile(r"^(t\d+)/f(\d+)/(.+)$")
SETTLE_S = 2.0  # how long a list waits for iframe sessions that are still being set up


@dataclass(frozen=True)
class Found:
    tab: Tab
    tool: Tool
    ref: str

    def source(self) -> dict[str, Any]:
        main = self.tool.frame_id == self.tab.main_frame_id
        urls = self.tab.webmcp.frame_urls
        return {"tab_id": self.tab.tab_id, "frame_id": self.tool.frame_id, "main_frame": main,
                "frame_url": urls.get(self.tool.frame_id) or (self.tab.url if main else ""),
                "page_url": self.tab.url, "page_title": self.tab.title,
                "out_of_process": self.tool.session_id != self.tab.session_id}

    def describe(self) -> dict[str, Any]:
        t = self.tool
        return {"tool_ref": self.ref, "name": t.name, "description": t.description,
                "input_schema": t.input_schema, "annotations": t.annotations,
                "declarative": t.declarative, "source": self.source()}


def live_tabs(session: Session) -> list[Tab]:
    return [t for t in session.tabs.values() if not t.gone]


async def settle(tabs: list[Tab], timeout: float = SETTLE_S) -> None:
    """Let iframe sessions that are attaching finish `WebMCP.enable` (its tools come first)."""
    pending = {task for tab in tabs for task in tab.starting}
    if pending:
        await asyncio.wait(pending, timeout=timeout)


def tools_of(session: Session) -> list[Found]:
    found = []
    for tab in live_tabs(session):
        if tab.crashed:
            continue  # a crashed renderer answers nothing: its tools are gone
        for tool in tab.webmcp.all():
            ordinal = tab.frame_ordinal(tool.frame_id)
            found.append(Found(tab, tool, make_ref(tab.tab_id, f"f{ordinal}", tool.name)))
    found.sort(key=lambda f: (int(f.tab.tab_id[1:]) if f.tab.tab_id[1:].isdigit() else 0,
                              f.tab.tab_id, f.tab.frame_ordinal(f.tool.frame_id)))
    return found


async def refresh_frames(tab: Tab, timeout: float) -> None:
    """Frame URLs for the listing, and tools of frames that no longer exist dropped."""
    for sid in [tab.session_id, *tab.children]:
        try:
            tree = await tab.link.send("Page.getFrameTree", session_id=sid,
                                       timeout=min(timeout, 5.0))
        except (LinkError, TimeoutError):
            continue
        seen: dict[str, str] = {}
        _walk(tree.get("frameTree", {}), seen)
        tab.webmcp.frame_urls.update(seen)
        tab.webmcp.keep_frames(sid, set(seen))


def _walk(node: dict[str, Any], out: dict[str, str]) -> None:
    frame = node.get("frame", {})
    if frame.get("id"):
        out[frame["id"]] = frame.get("url", "") + frame.get("urlFragment", "")
    for child in node.get("childFrames", ()):
        _walk(child, out)


def resolve(session: Session, query: str) -> Found:
    """A tool by its tool_ref, else by name: unknown → tool_not_found, ambiguous →
    invalid_params naming the candidates."""
    found = tools_of(session)
    if REF.match(query):
        for f in found:
            if f.ref == query:
                return f
        if not any(f.tool.name == query for f in found):
            raise not_found(session, query, by_ref=True)
    matches = [f for f in found if f.tool.name == query]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise not_found(session, query, by_ref=False)
    candidates = [{"tool_ref": f.ref, "tab_id": f.tab.tab_id,
                   "frame_url": f.source()["frame_url"]} for f in matches]
    raise BskError(
        "invalid_params",
        f"tool: {len(matches)} tools are named {query!r}; give one tool_ref: "
        + ", ".join(c["tool_ref"] for c in candidates),
        hint="`bsk webmcp list` shows where each one lives",
        details={"field": "tool", "candidates": candidates})


def not_found(session: Session, query: str, *, by_ref: bool) -> BskError:
    reason = _why_gone(session, query, by_ref)
    what = f"tool_ref {query!r}" if by_ref else f"tool named {query!r}"
    message = f"no WebMCP {what} in session {session.id}" + (f": {reason}" if reason else "")
    hint = "list the tools again with `bsk webmcp list`"
    if reason and "crashed" in reason:
        hint = "`bsk reload` (or `bsk open URL`) brings the tab back; then `bsk webmcp list`"
    details: dict[str, Any] = {"field": "tool", "tool": query}
    if reason:
        details["reason"] = reason
    return BskError("tool_not_found", message, hint=hint, details=details, dispatched=Dispatched.NO)


def _why_gone(session: Session, query: str, by_ref: bool) -> str:
    tabs = list(session.tabs.values())
    name = query
    if by_ref:
        m = REF.match(query)
        assert m is not None
        tab = session.tabs.get(m.group(1))
        if tab is None:
            return f"tab {m.group(1)} is not open in this session"
        tabs, name = [tab], m.group(3)
    for tab in tabs:
        had = by_ref or any(n == name for (_f, n) in tab.webmcp.gone) or (
            tab.crashed and any(t.name == name for t in tab.webmcp.all()))
        if not had:
            continue
        why = tab.gone or tab.crashed or next(
            (r for (_f, n), r in reversed(tab.webmcp.gone.items()) if n == name), "")
        if why:
            return f"tab {tab.tab_id}: {why}"
    return ""


class Call:
    """One `WebMCP.invokeTool` in flight."""

    def __init__(self, tab: Tab, tool: Tool, tool_input: dict[str, Any]) -> None:
        self.tab = tab
        self.tool = tool
        self.input = tool_input
        self.loop = asyncio.get_running_loop()
        self.machine = Invocation(tool.name, tool.frame_id, tool.session_id, tab.session_id)
        self.cancel_sent = False
        self.timeout_s: float | None = None  # the operation's deadline, for reporting
        self.cancel_error: str | None = None
        self._changed = asyncio.Event()
        self._sending: asyncio.Task[None] | None = None
        self._listening = False

    def start(self, reply_timeout: float) -> None:
        self.tab.listeners.append(self._on_event)
        self._listening = True
        self.machine.sent(self.loop.time())
        self._sending = self.loop.create_task(self._send(reply_timeout))

    async def _send(self, timeout: float) -> None:
        params = {"frameId": self.tool.frame_id, "toolName": self.tool.name,
                  "input": self.input}
        try:
            reply = await self.tab.link.send("WebMCP.invokeTool", params,
                                             session_id=self.tool.session_id, timeout=timeout)
        except CdpError as e:
            self._feed(self.machine.reply_failed(e.message, self.loop.time()))
        except (LinkError, TimeoutError):
            pass  # no reply (a crash, a lost link): the machine's own deadlines decide
        else:
            self._feed(self.machine.replied(reply, self.loop.time()))

    def _on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        self._feed(self.machine.on_event(session_id, method, params, self.loop.time()))

    def _feed(self, changed: bool) -> None:
        if changed:
            self._changed.set()

    async def _until(self, done: Callable[[], bool], deadline: float | None) -> None:
        m = self.machine
        while not done():
            now = self.loop.time()
            if m.tick(now):
                continue
            if self.tab.gone and m.deadline is None:
                m.tab_closed(now)
                continue
            wake = [t for t in (m.deadline, deadline) if t is not None]
            if deadline is not None and now >= deadline:
                return
            self._changed.clear()
            try:
                async with asyncio.timeout_at(min(wake) if wake else None):
                    await self._changed.wait()
            except TimeoutError:
                pass

    async def wait(self) -> Outcome:
        """Until the tool answers or its page is gone (the operation's deadline is the
        dispatcher's: it cancels this and runs `cancel`)."""
        await self._until(lambda: self.machine.outcome is not None, None)
        assert self.machine.outcome is not None
        return self.machine.outcome

    async def cancel(self, budget: float) -> Outcome | None:
        """Send `WebMCP.cancelInvocation` and wait up to `budget` s for the answer."""
        deadline = self.loop.time() + budget
        m = self.machine
        sending = self._sending
        # Cancelled in the dispatch window: the invocation id comes with the reply.
        await self._until(lambda: m.outcome is not None or m.invocation_id is not None
                          or sending is None or sending.done(), deadline)
        if m.outcome is None and m.invocation_id is not None:
            self.cancel_sent = True
            try:
                await self.tab.link.send(
                    "WebMCP.cancelInvocation", {"invocationId": m.invocation_id},
                    session_id=self.tool.session_id,
                    timeout=max(0.05, deadline - self.loop.time()))
            except (LinkError, TimeoutError) as e:
                self.cancel_error = str(e)
            await self._until(lambda: m.outcome is not None, deadline)
        return m.outcome

    def close(self) -> None:
        if self._listening:
            self._listening = False
            if self._on_event in self.tab.listeners:
                self.tab.listeners.remove(self._on_event)
        if self._sending is not None and not self._sending.done():
            self._sending.cancel()


def check_input(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid("input", f"must be a JSON object, got {type(value).__name__}")
    return value
