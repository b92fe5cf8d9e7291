"""open, back, forward, reload: navigate the current tab and wait only as long as asked."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from browserskill.base.catalog.navigation import HistoryParams, OpenParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.tab import DialogOpened, Tab
from browserskill.session.scope import Compensation
from browserskill.tools import downloads
from browserskill.tools.context import ToolContext, stop_script
from browserskill.tools.emulation import offline
from browserskill.tools.registry import implements

_SCHEMES = ("http://", "https://", "file://", "data:", "about:", "chrome://", "view-source:")
_WEB = ("http://", "https://")


def normalize_url(url: str) -> str:
    """The URL `open` and `tab new` navigate to, or invalid_params before anything is sent.
    Schemes are case-insensitive (RFC 3986 §3.1): `HTTP://X` is `http://X`."""
    given = url = url.strip()
    if url[:11].lower() == "javascript:":  # not a place to go: script to run
        raise invalid("url", f"{given!r} runs script in the page; it is not a page to open",
                      hint="run script with `bsk eval EXPRESSION`")
    scheme = next((s for s in _SCHEMES if url[:len(s)].lower() == s), None)
    if scheme:
        url = scheme + url[len(scheme):]
    elif "://" in url:
        scheme = url.split("://", 1)[0]
        raise BskError("invalid_params", f"url: unsupported scheme {scheme!r}",
                       hint=f"use one of {', '.join(_SCHEMES)}", details={"field": "url"})
    elif url.startswith("/"):  # an absolute path on this machine, never a host name
        return Path(url).as_uri()
    else:  # bare host names are what people type: example.com, localhost:8000/x
        local = url.startswith(("localhost", "127.", "[::1]"))
        url = ("http://" if local else "https://") + url
    if url.startswith(_WEB):
        _check_host(url, given)
    return url


def _check_host(url: str, given: str) -> None:
    """A web URL names a host (and a port that is a number): else Chromium refuses it only
    after the navigation was sent."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range or not a number
        problem = "" if parts.hostname else "it names no host"
    except ValueError as e:
        problem = str(e)
    if not problem and any(c.isspace() for c in parts.netloc):
        problem = "its host contains a space"
    if problem:
        raise invalid("url", f"{given!r} is not a valid URL: {problem}",
                      hint="e.g. https://example.com/page, localhost:8000, /path/to/page.html")


# Times `open` sends its navigation when the page's own navigations cancel or overtake
# it. A page navigating itself every 10 ms cancelled ~2 sends in 5 (3 tries failed 3
# leaves in 50); each failed try costs ~50 ms, one overtaken ≤ OVERTAKEN_GRACE_S.
NAVIGATE_TRIES = 8
ERROR_PAGE_S = 2.0  # for Chromium's error page to commit after a failed navigation
STOP_S = 2.0  # for `Page.stopLoading` (the browser's, not the page's, to answer)
OVERTAKEN_GRACE_S = 1.0  # after one of the page's documents, how long ours may still come
# Documents a wait follows when the page replaces the one it waits for by its own
# navigation (a script redirect) before that one loaded; past this, it is a loop.
MAX_FOLLOWED = 5


class Overtaken(Exception):
    """A navigation the page being left had started committed after ours: ours is gone."""


async def wait_for_document(ctx: ToolContext, tab: Tab, loader_id: str,
                            wait_until: str, *, ours: bool = False) -> dict[str, Any]:
    """Wait until the document `loader_id` reaches `wait_until`. If that document, once
    committed, navigates on by itself (a script redirect), the wait follows the new
    document, up to MAX_FOLLOWED; a page that keeps navigating is `navigation_loop`.
    A newer document it did not ask for came from the page before it: with `ours` (the
    navigation is this call's own) that raises `Overtaken`, else it is followed too.
    Returns what the result should say of documents followed."""
    followed: list[str] = []
    current = loader_id
    overtaken = False

    def settled() -> bool:
        nonlocal current, overtaken
        if tab.reached(current, wait_until):
            return True
        newer = tab.main_loader()
        if newer and newer != current and tab.committed(current):
            if ours and not followed and not tab.navigated_on(current):
                overtaken = True
                return True
            followed.append(newer)  # it committed, then the page replaced it
            current = newer
            return tab.reached(current, wait_until) or len(followed) > MAX_FOLLOWED
        return False

    await tab.until(settled, ctx.remaining())
    if overtaken:
        raise Overtaken(current)
    if len(followed) > MAX_FOLLOWED:
        raise BskError(
            "action_failed", f"the page keeps navigating itself ({len(followed)} documents "
            f"after the one this call opened, each replaced before it reached "
            f"{wait_until}); now at {tab.url}",
            hint="the tab is usable: `bsk open` another address, or wait only for the "
                 "commit (--wait-until commit; HTTP \"wait_until\": \"commit\")",
            details={"reason": "navigation_loop", "url": tab.url,
                     "documents": len(followed)}, dispatched=Dispatched.YES)
    if followed:
        return {"note": f"the page navigated on by itself ({len(followed)} time"
                        f"{'s' if len(followed) > 1 else ''}) before it loaded"}
    return {}


def page_state(tab: Tab) -> dict[str, Any]:
    return {"tab_id": tab.tab_id, "url": tab.url}


async def unstick(tab: Tab) -> str | None:
    """A page stuck in a runaway script never lets a navigation commit (its document
    must unload first): stop that script, or crash a renderer hung outside script. A
    probe of ~1 ms when the page is not stuck. Returns why the renderer the navigation
    replaces was dead (its page state is lost), None if it was alive."""
    if not tab.crashed:
        await stop_script(tab)
    return tab.crashed


def replaced(out: dict[str, Any], crashed: str | None) -> dict[str, Any]:
    """A navigation's result, saying so if it brought a crashed tab back."""
    if crashed:
        out["renderer_replaced"] = (f"{crashed}; the page was loaded in a new renderer "
                                    "(take a new snapshot)")
    return out


async def navigate(ctx: ToolContext, tab: Tab, url: str, wait_until: str, *,
                   unstuck: bool = False) -> dict[str, Any]:
    crashed = tab.crashed if unstuck else await unstick(tab)
    before = downloads.count(ctx)
    ours: list[str] = []
    followed: dict[str, Any] = {}
    for attempt in range(NAVIGATE_TRIES):
        commits, requests, starts = tab.main_commits, tab.page_requests, tab.main_starts
        leaving = tab.main_loader()
        leaving_navigates = leaving is not None and tab.navigated_on(leaving)
        answer = await ctx.act("Page.navigate", {"url": url}, tab=tab)
        if answer.get("errorText") == "net::ERR_ABORTED":  # perhaps it became a download
            started = await _download_began(ctx, tab, before)
            if started:
                return {**page_state(tab), "title": tab.title,
                        "downloads": await downloads.settle(ctx, before)}
        if answer.get("errorText"):
            # The document's Network request id is its loader id.
            refused = tab.buffers.policy_block_of(answer.get("loaderId") or "")
            if refused:  # a redirect to a host the policy refuses: that hop never went
                raise blocked(url, refused, dispatched=Dispatched.YES)
            if answer["errorText"] != "net::ERR_ABORTED":
                # Chromium commits its error page next: until then the tab answers
                # nothing ("Not attached to an active page"), so the agent's next call
                # (`back`, as the hint says) would fail.
                await _error_page(ctx, tab, commits)
            raise _failed(tab, url, answer["errorText"],
                          tab.buffers.route_of(answer.get("loaderId") or ""))
        loader_id = answer.get("loaderId")
        if not loader_id or wait_until == "commit":
            break  # no loader id: a same-document navigation
        ours.append(loader_id)
        landed = await _landed(ctx, tab, ours, commits)
        if landed is None:
            continue
        try:
            followed = await wait_for_document(ctx, tab, landed, wait_until, ours=True)
            if tab.requests_at_commit(landed) > requests or tab.rivals(starts, landed, ours):
                await _not_overtaken(ctx, tab, landed)
            if followed and leaving_navigates and attempt < NAVIGATE_TRIES - 1:
                # The page left was navigating itself: its navigation, queued behind ours,
                # can commit after ours with its request told only then, and look like a
                # redirect of ours. Send ours again rather than land where it went.
                ours.remove(landed)
                continue
            break
        except Overtaken:
            ours.remove(landed)  # replaced: only a later one of ours can land now
            continue
    else:
        raise BskError(
            "action_failed", f"the page's own navigations cancelled this one "
            f"{NAVIGATE_TRIES} times (it keeps navigating itself); now at {tab.url}",
            hint="`bsk open` again, or wait only for the commit (--wait-until commit; "
                 "HTTP \"wait_until\": \"commit\"); the tab is usable",
            details={"reason": "navigation_loop", "url": tab.url,
                     "cancelled": NAVIGATE_TRIES}, dispatched=Dispatched.YES)
    if tab.dialog is not None:  # the new page opened one: a read now would wait on it
        raise DialogOpened(tab.dialog)
    title = await ctx.inspect("Runtime.evaluate", {"expression": "document.title",
                                                   "returnByValue": True}, tab=tab)
    tab.title = title.get("result", {}).get("value", "") or ""
    status = tab.buffers.document_status(tab.main_loader() or "")
    return replaced({**page_state(tab), "title": tab.title,
                     **({"http_status": status} if status else {}), **followed}, crashed)


async def _error_page(ctx: ToolContext, tab: Tab, commits: int) -> None:
    """Wait (bounded) until a document commits after `commits`: Chromium's error page."""
    with contextlib.suppress(TimeoutError):
        await tab.until(lambda: tab.main_commits > commits, min(ERROR_PAGE_S, ctx.remaining()))


async def _landed(ctx: ToolContext, tab: Tab, ours: list[str], commits: int) -> str | None:
    """The newest document of ours (the navigations sent and not yet given up) that
    committed; None if the page's own navigations cancelled them: a page navigating itself
    can replace ours with one it starts after, and then ours never commits while its
    documents do (one of the page's may still commit just before ours: two, or one and a
    quiet second, mean ours is gone)."""
    def landed() -> str | None:  # the newest: a later one of ours replaces an earlier
        return next((loader for loader in reversed(ours) if tab.committed(loader)), None)

    await tab.until(lambda: landed() or tab.main_commits > commits, ctx.remaining())
    if not landed():
        with contextlib.suppress(TimeoutError):
            await tab.until(lambda: landed() or tab.main_commits > commits + 1,
                            min(OVERTAKEN_GRACE_S, ctx.remaining()))
    return landed()


async def _not_overtaken(ctx: ToolContext, tab: Tab, landed: str) -> None:
    """The page being left asked for or started a navigation of its own while ours was
    pending: Chromium may still commit it after ours (it queues behind a committing one),
    so give it a moment; `Overtaken` if it came."""
    def replaced_unasked() -> bool:
        return tab.main_loader() != landed and not tab.navigated_on(landed)

    with contextlib.suppress(TimeoutError):
        await tab.until(replaced_unasked, min(OVERTAKEN_GRACE_S, ctx.remaining()))
    if replaced_unasked():
        raise Overtaken(tab.main_loader())


def blocked(url: str, reason: str, dispatched: Dispatched = Dispatched.NO) -> BskError:
    """The session's policy does not let its pages reach `url` (docs/safety.md)."""
    return BskError("blocked_by_policy", f"{url}: {reason}",
                    hint="the person who started the daemon set this policy (`bsk policy "
                         "show`); ask them, or stay within it",
                    details={"url": url, "rule": reason}, dispatched=dispatched)


def check_policy(ctx: ToolContext, url: str) -> None:
    """A navigation the session's policy refuses is refused before anything is sent."""
    refused = ctx.session.policy.url_refusal(url)
    if refused is not None:
        raise blocked(url, refused)


def _failed(tab: Tab, url: str, error: str, route: str | None) -> BskError:
    """A navigation that loaded no page; the session's own route or `emulate --offline`
    may be why (say so, rather than blame the server)."""
    if route:
        why, hint = f" (this session's route {route} answered it)", \
            f"`bsk route remove '{route}'` if the page should load"
    elif offline(tab) and error == "net::ERR_INTERNET_DISCONNECTED":
        why, hint = " (this tab emulates --offline)", "`bsk emulate --no-offline` to go online"
    elif error == "net::ERR_UNSAFE_PORT":
        why, hint = " (Chromium never connects to this port, whatever listens on it)", \
            "serve the page on another port (one not on Chromium's restricted list)"
    else:
        why, hint = "", "check the address and that the server is up"
    return BskError(
        "action_failed", f"navigation to {url} failed: {error}{why}", hint=hint,
        details={"reason": "navigation_error", "error_text": error, "url": url,
                 **({"route": route} if route else {})},
        dispatched=Dispatched.YES,
    )


def error_page(tab: Tab) -> BskError | None:
    """The tab shows Chromium's error page: the failed document request, as an error."""
    if not tab.url.startswith("chrome-error://"):
        return None
    for entry in reversed(tab.buffers.network.entries()):
        if entry.get("type") == "Document" and not entry.get("iframe"):
            if entry.get("blocked_by_policy"):  # back/forward/reload into a refused URL
                return blocked(entry.get("_full_url") or entry["url"],
                               entry["blocked_by_policy"], dispatched=Dispatched.YES)
            if entry.get("error"):
                return _failed(tab, entry.get("_full_url") or entry["url"],
                               entry.get("error", "failed"), entry.get("route"))
            break
    return _failed(tab, tab.url, "Chromium shows its error page", None)


async def _download_began(ctx: ToolContext, tab: Tab, before: int) -> bool:
    """Chromium answers a navigation that turned into a download with ERR_ABORTED; the
    download's own event comes with it or right after."""
    try:
        await tab.until(lambda: downloads.count(ctx) > before, min(2.0, ctx.remaining()))
    except TimeoutError:
        return False
    return True


_SILENCE_DIALOGS = ("window.alert = () => {}; window.confirm = () => false; "
                    "window.prompt = () => null; 0")


async def new_current_tab(ctx: ToolContext
                          ) -> tuple[Tab, Callable[[], Awaitable[None]], Compensation]:
    """A new tab, now the session's current one, its routes attached before its first
    request; with what closes it again and the compensation that does so on a cancel
    (`ctx.settled` it once the tab is there to stay)."""
    ctx.mark_dispatched()
    tab = await ctx.backend.new_tab(ctx.session.next_tab_id())
    previous = ctx.session.current_tab_id
    ctx.session.add_tab(tab)

    async def close_half_made_tab() -> None:
        ctx.session.forget_tab(tab.tab_id)
        ctx.session.current_tab_id = previous if previous in ctx.session.tabs else None
        await ctx.backend.close_tab(tab)

    made = ctx.on_cancel("tab_closed", close_half_made_tab)
    await ctx.session.routes.attach(tab, ctx.remaining())
    return tab, close_half_made_tab, made


@implements("open")
async def open_url(ctx: ToolContext, params: OpenParams) -> dict[str, Any]:
    """Leaving a page dismisses its alerts, confirms and prompts (the one open now, and
    those it opens until the new document commits), as a person's browser does; its
    beforeunload dialog is the agent's to answer (docs/outcomes.md, pages that trap)."""
    url = normalize_url(params["url"])
    check_policy(ctx, url)
    made: Compensation | None = None
    if ctx.session.current_tab_id is None:  # its tabs were all closed: a new one, as a
        tab, _, made = await new_current_tab(ctx)  # new session has (not "no open tab")
    else:
        tab = ctx.tab  # `open` runs while a dialog is open (catalog: during_dialog)
    if tab.dialog is not None and tab.dialog.get("type") == "beforeunload":
        raise DialogOpened(tab.dialog)
    blocked = tab.dialog is not None  # on a dialog, not in script: nothing to unstick
    if not blocked:
        await unstick(tab)
    left = tab.leave_dialogs()

    async def stop_navigating() -> None:  # else the tab lands there after the answer
        await tab.send("Page.stopLoading", timeout=STOP_S)

    # A deadline or cancel while the navigation is pending stops it, as the browser's
    # stop button does; the server may have had the request, so it still may have acted.
    stopped = ctx.on_cancel("navigation_stopped", stop_navigating, undoes_effect=False)
    try:
        if tab.document_dialogs and not tab.crashed:
            # Once the navigation starts, Chromium no longer lets a dialog of the page
            # being left be answered ("Not attached to an active page"), and one opening
            # then keeps the navigation from committing: a page that opens dialogs has
            # them answer as dismissed from here on, without showing.
            await ctx.act("Runtime.evaluate", {"expression": _SILENCE_DIALOGS}, tab=tab)
        out = await navigate(ctx, tab, url, params["wait_until"], unstuck=True)
        ctx.settled(stopped)  # not on a cancel: the cleanup runs it then
        if made is not None:
            ctx.settled(made)  # the new tab is there to stay (a cancel before this closes it)
    except BskError as e:
        if e.details.get("reason") == "navigation_error" and \
                e.details.get("error_text") != "net::ERR_ABORTED":  # aborted: page unchanged
            e.hint += "; the tab shows Chromium's error page: `bsk back` returns to the one before"
        raise
    finally:
        tab.stop_leaving()
    if tab.dialogs_left:
        out["dialogs_dismissed"] = {"count": tab.dialogs_left, "first": left}
        out["dialogs_note"] = (f"the page being left had {tab.dialogs_left} dialog"
                               f"{'s' if tab.dialogs_left > 1 else ''} open or opening "
                               f"(first: {left[0]['type']} {left[0]['message']!r}): "
                               "dismissed, as leaving a page does")
    return out


async def history_step(ctx: ToolContext, delta: int, wait_until: str) -> dict[str, Any]:
    tab = ctx.tab
    history = await ctx.inspect("Page.getNavigationHistory", tab=tab)
    index = history["currentIndex"] + delta
    entries = history["entries"]
    if not 0 <= index < len(entries):
        where = "back" if delta < 0 else "forward"
        raise BskError("action_failed", f"there is no page to go {where} to",
                       details={"reason": "no_history"}, dispatched=Dispatched.NO)
    return await commit_and_wait(
        ctx, tab, wait_until, "Page.navigateToHistoryEntry", {"entryId": entries[index]["id"]}
    )


async def commit_and_wait(
    ctx: ToolContext, tab: Tab, wait_until: str, method: str, params: dict[str, Any] | None
) -> dict[str, Any]:
    """Send a command that navigates the main frame; wait for the new document."""
    crashed = await unstick(tab)
    before = tab.navigations
    await ctx.act(method, params, tab=tab)
    await tab.until(lambda: tab.navigations > before, ctx.remaining())
    loader = tab.main_loader()
    followed: dict[str, Any] = {}
    if loader and wait_until != "commit":
        followed = await wait_for_document(ctx, tab, loader, wait_until)
    failed = error_page(tab)
    if failed is not None:
        raise failed
    return replaced({**page_state(tab), **followed}, crashed)


@implements("back")
async def back(ctx: ToolContext, params: HistoryParams) -> dict[str, Any]:
    return await history_step(ctx, -1, params["wait_until"])


@implements("forward")
async def forward(ctx: ToolContext, params: HistoryParams) -> dict[str, Any]:
    return await history_step(ctx, 1, params["wait_until"])


@implements("reload")
async def reload(ctx: ToolContext, params: HistoryParams) -> dict[str, Any]:
    return await commit_and_wait(ctx, ctx.tab, params["wait_until"], "Page.reload", None)
