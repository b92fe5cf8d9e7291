"""`request_help`: the agent hands its session to a person (docs/dashboard.md).

Invariant: the operation holds the session while it runs (agent calls are
`session_busy`, holder `person`), it sends nothing to the page itself, and it ends one
of four ways: the person's Done (completed), the `--until` condition holding
(completed), the person's Decline (`user_interrupted`), its deadline (`failed`, reason
timeout) — never `outcome_unknown`: nothing the agent did is in doubt. A cancel ends it
`cancelled` like any call that sent nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from browserskill.base.catalog.human import RequestHelpParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.tab import Tab
from browserskill.tools import observe
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements

CONDITIONS = ("text", "url", "selector")


@dataclass
class HelpRequest:
    """A session's open request for help: the person's answer (done | decline) to come,
    while `request_help` runs (the dashboard answers it: dispatch/person.py)."""

    answer: asyncio.Future[str] | None = None

    def is_open(self) -> bool:
        return self.answer is not None and not self.answer.done()


def parse_until(raw: str) -> tuple[str, str]:
    kind, sep, needle = raw.partition("=")
    if not sep or kind not in CONDITIONS or not needle.strip():
        raise invalid("until", f"{raw!r} is not a condition: give text=TEXT, url=TEXT or "
                      "selector=CSS", hint='e.g. --until "text=Welcome back"')
    return kind, needle


async def _holds(ctx: ToolContext, tab: Tab, kind: str, needle: str, end: float) -> bool:
    """Wait until the condition holds in `tab` (False when time runs out)."""
    loop = asyncio.get_running_loop()
    if kind == "url":
        try:
            await tab.until(lambda: needle in tab.url, max(0.0, end - loop.time()))
        except TimeoutError:
            return False
        return True
    # text/selector: in every frame, arming again in each document the person loads
    return await observe.watch_for(ctx, tab, kind, needle, end) is not None


@implements("request_help")
async def request_help(ctx: ToolContext, params: RequestHelpParams) -> dict[str, Any]:
    until = parse_until(params["until"]) if params["until"] else None
    request = ctx.feature(HelpRequest)
    if request.is_open():
        raise invalid("session", "this session already asks for help")  # one holder: rare
    tab = ctx.tab
    url_before, title_before, tabs_before = tab.url, tab.title, set(ctx.session.tabs)
    loop = asyncio.get_running_loop()
    started = loop.time()
    end = started + max(0.05, ctx.remaining() - observe.ANSWER_MARGIN_S)
    answer: asyncio.Future[str] = loop.create_future()
    request.answer = answer
    condition: asyncio.Task[bool] | None = None
    await ctx.backend.ask_for_help(tab, params["reason"])
    try:
        watched: set[asyncio.Future[Any]] = {answer}
        if until is not None:
            condition = asyncio.ensure_future(_holds(ctx, tab, *until, end))
            watched.add(condition)
        while watched:
            done, _ = await asyncio.wait(watched, timeout=max(0.0, end - loop.time()),
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done:
                break
            if answer in done or (condition in done and condition.result()):
                break
            watched -= done  # the condition's watch ran out: only the person is left
    finally:
        request.answer = None
        if condition is not None and not condition.done():
            condition.cancel()
            with contextlib.suppress(BaseException):
                await condition
        with contextlib.suppress(Exception):  # the tab may be gone: nothing to take back
            await ctx.backend.ask_for_help(tab, None)
    waited_ms = round((loop.time() - started) * 1000)
    if answer.done() and answer.result() == "decline":
        raise BskError("user_interrupted", f"the person declined to help: {params['reason']}",
                       hint="ask the user what to do instead; the next call goes ahead",
                       details={"reason": "declined", "waited_ms": waited_ms})
    if not answer.done() and not (condition is not None and condition.done()
                                  and not condition.cancelled() and condition.result()):
        raise BskError("action_failed", f"no one helped within {waited_ms / 1000:.0f}s: "
                       f"{params['reason']}", hint="ask again with a longer --timeout, or "
                       "tell the user what you need", details={"reason": "timeout",
                                                               "waited_ms": waited_ms},
                       dispatched=Dispatched.NO)
    tab = ctx.session.tab()
    return {
        "ended_by": "done" if answer.done() else "condition",
        "until": params["until"], "waited_ms": waited_ms,
        "tab_id": tab.tab_id, "url": tab.url, "title": tab.title,
        "url_before": url_before, "title_before": title_before,
        "new_tabs": [t for t in ctx.session.tabs if t not in tabs_before],
        "closed_tabs": sorted(tabs_before - set(ctx.session.tabs)),
    }
