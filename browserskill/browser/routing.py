"""A session's routes, and its policy's domains: requests mocked, blocked or refused,
with the `Fetch` domain.

Invariant: a route table belongs to one session and pauses requests only through the
CDP sessions of that session's own tabs (their pages and out-of-process iframes).
`Fetch.enable` is per CDP session, so another session's tabs — even in the same shared
profile, even on the same site — never see these routes; and a tab is intercepted only
while the table has routes (an empty table costs nothing).

Matching is I/O-free (`glob_regex`, `RouteTable.match`) and exact: Chromium is asked to
pause a superset (its wildcard `*` also crosses `/`), and a paused request that matches
no route goes on untouched. The newest route for a URL wins; a route with `times` ends
after that many requests.

The session's policy (browserskill/base/policy.py) is asked first, for every request: under
a policy that restricts URLs every request is paused (one `*` pattern), one the policy
refuses fails (BlockedByClient, marked `blocked_by_policy` in the tab's network buffer)
and no route sees it; new iframes and workers are held by Chromium
(`waitForDebuggerOnStart`) until their own interception is on.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from browserskill.base.policy import Policy
from browserskill.browser.link import LinkError
from browserskill.browser.tab import Tab, TabGone

log = logging.getLogger(__name__)

# Playwright's names for failures (route.abort) -> CDP's Network.ErrorReason.
ABORT_REASONS: dict[str, str] = {
    "failed": "Failed", "aborted": "Aborted", "timedout": "TimedOut",
    "accessdenied": "AccessDenied", "connectionclosed": "ConnectionClosed",
    "connectionreset": "ConnectionReset", "connectionrefused": "ConnectionRefused",
    "connectionaborted": "ConnectionAborted", "connectionfailed": "ConnectionFailed",
    "namenotresolved": "NameNotResolved", "internetdisconnected": "InternetDisconnected",
    "addressunreachable": "AddressUnreachable", "blockedbyclient": "BlockedByClient",
    "blockedbyresponse": "BlockedByResponse",
}
ANSWER_TIMEOUT_S = 10.0  # a paused request's fulfil/fail/continue


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Playwright's URL globs: `*` is any run of characters but `/`, `**` any run at all,
    `{a,b}` either, `\\` escapes the next character; everything else (`?` too) is itself.
    The whole URL must match."""
    out, i, group = ["^"], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            stars = len(pattern[i:]) - len(pattern[i:].lstrip("*"))
            out.append(".*" if stars > 1 else "[^/]*")
            i += stars
            continue
        if c == "{":
            group = True
            out.append("(?:")
        elif c == "}" and group:
            group = False
            out.append(")")
        elif c == "," and group:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if group:
        raise ValueError("a '{' group is not closed")
    out.append("$")
    return re.compile("".join(out), re.DOTALL)


def chromium_pattern(pattern: str) -> str:
    """What Chromium should pause for this glob: its wildcards (`*` any run, `?` one
    character, `\\` escapes) over a superset of the glob's URLs."""
    if "{" in pattern:
        return "*"
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append("\\" + pattern[i + 1] if pattern[i + 1] in "*?\\" else pattern[i + 1])
            i += 2
            continue
        if c == "*":
            if not out or out[-1] != "*":
                out.append("*")
        elif c == "?":
            out.append("\\?")
        else:
            out.append(c)
        i += 1
    return "".join(out)


@dataclass
class Route:
    pattern: str
    abort: str | None = None  # a Playwright failure name: the request fails so
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    times: int | None = None  # requests it still answers (None: until removed)
    source: str | None = None  # the file its body came from
    hits: int = 0
    regex: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.regex = glob_regex(self.pattern)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pattern": self.pattern, "hits": self.hits}
        if self.abort is not None:
            out["abort"] = self.abort
        else:
            out.update(status=self.status, body_bytes=len(self.body),
                       headers={k: v for k, v in self.headers})
            if self.source:
                out["file"] = self.source
        if self.times is not None:
            out["times_left"] = self.times
        return out

    def answer(self, request_id: str) -> tuple[str, dict[str, Any]]:
        """The Fetch command that answers a request this route took."""
        if self.abort is not None:
            return "Fetch.failRequest", {"requestId": request_id,
                                         "errorReason": ABORT_REASONS[self.abort]}
        return "Fetch.fulfillRequest", {
            "requestId": request_id, "responseCode": self.status,
            "responseHeaders": [{"name": k, "value": v} for k, v in self.headers],
            "body": base64.b64encode(self.body).decode()}


class RouteTable:
    """One session's routes, and the tabs they are installed in."""

    def __init__(self) -> None:
        self.routes: list[Route] = []  # newest last; matched newest first
        # The session's policy (Session.set_policy): its domain and scheme rules are
        # checked before any route, for every request the session's targets make.
        self.policy = Policy()
        # tab -> its CDP sessions -> the Chromium patterns they pause for now
        self._tabs: weakref.WeakKeyDictionary[Tab, dict[str, tuple[str, ...]]] = \
            weakref.WeakKeyDictionary()
        self._answering: set[asyncio.Task[None]] = set()

    # -- the table (no I/O) ------------------------------------------------------------

    def add(self, route: Route) -> bool:
        """Add a route; one with the same pattern is replaced. True if it replaced one."""
        replaced = self.remove(route.pattern)
        self.routes.append(route)
        return replaced

    def remove(self, pattern: str) -> bool:
        before = len(self.routes)
        self.routes = [r for r in self.routes if r.pattern != pattern]
        return len(self.routes) != before

    def clear(self) -> int:
        n = len(self.routes)
        self.routes = []
        return n

    def match(self, url: str) -> Route | None:
        """The route that takes a request for `url`, counting it (a route whose `times`
        run out goes away)."""
        for route in reversed(self.routes):
            if route.regex.match(url):
                route.hits += 1
                if route.times is not None:
                    route.times -= 1
                    if route.times <= 0:
                        self.routes.remove(route)
                return route
        return None

    def describe(self) -> list[dict[str, Any]]:
        return [r.describe() for r in reversed(self.routes)]

    def patterns(self) -> list[dict[str, str]]:
        if self.policy.restricts_urls:  # the policy judges every request: pause them all
            return [{"urlPattern": "*", "requestStage": "Request"}]
        return [{"urlPattern": p, "requestStage": "Request"}
                for p in dict.fromkeys(chromium_pattern(r.pattern) for r in self.routes)]

    # -- the session's tabs ------------------------------------------------------------

    async def attach(self, tab: Tab, timeout: float) -> None:
        """Route this tab's requests too (cheap when it already is); also brings a tab
        back in line whose last change did not reach it (a cancelled `route add`)."""
        if tab.gone:
            return
        if tab not in self._tabs:
            self._tabs[tab] = {}
            tab.listeners.append(partial(self._on_event, tab))
            tab.child_setup.append(partial(self._child_started, tab))
        if self.policy.restricts_urls and not tab.pause_children:
            # Under a policy, a new iframe or worker waits until it is intercepted too.
            tab.pause_children = True
            for sid in [tab.session_id, *tab.children]:
                await tab.send("Target.setAutoAttach", tab.auto_attach_params(),
                               session_id=sid, timeout=timeout)
        if self._tabs[tab].get(tab.session_id, ()) != self._wanted():
            for sid in _sessions(tab):
                await self._apply(tab, sid, timeout)

    async def sync(self, timeout: float) -> None:
        """After a change: every attached tab pauses what the routes now name (or, with
        none left, nothing)."""
        for tab in list(self._tabs):
            if tab.gone:
                continue
            for sid in _sessions(tab):
                try:
                    await self._apply(tab, sid, timeout)
                except (LinkError, TabGone, TimeoutError) as e:
                    if sid == tab.session_id:
                        raise
                    log.info("routes in iframe session %s: %s", sid, e)

    def _wanted(self) -> tuple[str, ...]:
        """The Chromium patterns the routes need (empty: Fetch off)."""
        if not self.routes and not self.policy.restricts_urls:  # every call asks: most have none
            return ()
        return tuple(p["urlPattern"] for p in self.patterns())

    async def _apply(self, tab: Tab, sid: str, timeout: float) -> None:
        applied = self._tabs.setdefault(tab, {})
        wanted = self._wanted()
        if wanted:
            await tab.send("Fetch.enable", {"patterns": self.patterns()}, session_id=sid,
                           timeout=timeout)
        elif sid in applied:
            await tab.send("Fetch.disable", session_id=sid, timeout=timeout)
        else:
            return
        applied[sid] = wanted

    async def _child_started(self, tab: Tab, sid: str) -> None:
        if self.routes or self.policy.restricts_urls:
            await self._apply(tab, sid, ANSWER_TIMEOUT_S)

    def _on_event(self, tab: Tab, sid: str, method: str, params: dict[str, Any]) -> None:
        if method != "Fetch.requestPaused":
            return
        url = params.get("request", {}).get("url", "")
        refused = self.policy.url_refusal(url)  # the person's policy before any route
        route = None if refused else self.match(url)
        if refused is not None:
            command, args = "Fetch.failRequest", {"requestId": params["requestId"],
                                                  "errorReason": "BlockedByClient"}
            tab.buffers.blocked(sid, params.get("networkId"), url,
                                params.get("resourceType", "Other"), refused)
            if sid == tab.session_id and params.get("frameId") == tab.main_frame_id and \
                    params.get("resourceType") == "Document":
                tab.buffers.navigations_blocked += 1
                tab.buffers.last_navigation_blocked = (url, refused)
            log.info("blocked by policy in %s: %s (%s)", tab.tab_id, url, refused)
        elif route is not None:
            command, args = route.answer(params["requestId"])
            tab.buffers.routed(sid, params.get("networkId"), route.pattern)
        else:
            command, args = "Fetch.continueRequest", {"requestId": params["requestId"]}
        task = asyncio.get_running_loop().create_task(self._answer(tab, sid, command, args))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _answer(self, tab: Tab, sid: str, command: str, args: dict[str, Any]) -> None:
        try:
            await tab.send(command, args, session_id=sid, timeout=ANSWER_TIMEOUT_S)
        except Exception as e:  # the request or its page went away, a dialog blocks it
            log.info("%s: %s", command, e)


def _sessions(tab: Tab) -> list[str]:
    """The CDP sessions of a tab whose requests are intercepted: its page, its
    out-of-process iframes, its workers."""
    return [tab.session_id, *tab.children, *tab.workers]
