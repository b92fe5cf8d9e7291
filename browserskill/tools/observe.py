"""Reading the page over time — wait, html, console, network.

`wait` waits on real conditions, never by polling on a timer: a MutationObserver promise
in the page for text and selectors, the tab's own navigation and lifecycle events, and
the network buffer's request counts. Text and selectors are looked for in every frame of
the tab, as the snapshot shows them (the main frame, same-origin and out-of-process
iframes, and frames that appear meanwhile), one observer per frame, armed again in each
new document of its frame. It gives up a little before the call's deadline so that a
condition that did not happen is reported as such (`action_failed`, reason `timeout`)
rather than as a cancelled call.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping
from functools import partial
from typing import Any

from browserskill.base import contract
from browserskill.base.catalog.evidence import ConsoleParams, HtmlParams
from browserskill.base.catalog.navigation import WaitParams
from browserskill.base.catalog.network import NetworkParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import CdpError, TargetClosed
from browserskill.browser.tab import Tab
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import call_on, isolated_world, resolve
from browserskill.tools.registry import implements

# Give up this long before the call's deadline, to answer "it did not happen" in time.
ANSWER_MARGIN_S = contract.WAIT_ANSWER_MARGIN_S
# Network idle: no request in flight for this long (Chromium's own networkIdle uses 500 ms).
QUIET_S = 0.5

_CONDITIONS = ("text", "selector", "navigation", "network_idle", "ms", "gone", "text_gone")

# Stopping the in-page observers of frames that did not win: how long to wait for them
# to say so before answering anyway (they end at their budget, the call's deadline, too).
STOP_WAIT_S = 0.1
STOP_TIMEOUT_S = 2.0

# Resolves when the condition holds in this frame's document, or with {found: false} when
# its time is up. Runs in BrowserSkill's isolated world: the same DOM, layout and
# innerText as the page's own world, but with the built-ins (querySelector,
# MutationObserver, setTimeout, String methods) page scripts can't have replaced, and a
# registry of running waits (`__bskWaits`, by token) page scripts can't see, through which
# the daemon stops the observer when another frame won or the call ended.
_OBSERVE = """new Promise(resolve => {
  const kind = %s, needle = %s, budget = %d, token = %s;
  const waits = globalThis.__bskWaits || (globalThis.__bskWaits = new Map());
  const norm = s => s.replace(/\\s+/g, " ");
  const want = norm(needle);
  const probe = () => {
    if (kind === "text" || kind === "text_gone") {
      const root = document.body || document.documentElement;
      const seen = !!root && norm(root.innerText || "").includes(want);
      return seen === (kind === "text") ? {found: true, url: location.href} : null;
    }
    const el = document.querySelector(needle);
    if (!el) return null;
    const style = getComputedStyle(el);
    const visible = [...el.getClientRects()].some(r => r.width > 0 && r.height > 0)
      && style.visibility !== "hidden";
    let desc = el.tagName.toLowerCase();
    if (el.id) desc += "#" + el.id;
    return {found: true, element: desc, visible, url: location.href};
  };
  let first;
  try { first = probe(); } catch (e) { resolve({error: String(e && e.message || e)}); return; }
  if (first) { resolve(first); return; }
  let timer;
  const finish = value => {
    observer.disconnect(); clearTimeout(timer); waits.delete(token); resolve(value);
  };
  const observer = new MutationObserver(() => {
    const hit = probe();
    if (hit) finish(hit);
  });
  observer.observe(document, {subtree: true, childList: true, characterData: true,
                              attributes: true});
  timer = setTimeout(() => finish({found: false}), budget);
  waits.set(token, () => finish({stopped: true}));
})"""
_STOP = "globalThis.__bskWaits?.get(%s)?.()"


class _Found(Exception):
    """A frame's observer saw the condition: ends the other frames' watches."""

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__("found")
        self.value = value


def _timeout(what: str, waited: float) -> BskError:
    return BskError("action_failed", f"waited {waited:.1f}s: {what} did not happen",
                    hint="raise the call's --timeout, or look at the page (snapshot) first",
                    details={"reason": "timeout", "waited_ms": round(waited * 1000)},
                    dispatched=Dispatched.NO)


@implements("wait")
async def wait(ctx: ToolContext, params: WaitParams) -> dict[str, Any]:
    given: Mapping[str, Any] = params  # the conditions by name; exactly one is set
    chosen = [n for n in _CONDITIONS if given[n] not in (None, False)]
    if len(chosen) != 1:
        got = f" (got {', '.join(chosen)})" if chosen else ""
        raise invalid("condition", "give exactly one of --text, --selector, --navigation, "
                      f"--network-idle, --ms, --gone, --text-gone{got}",
                      hint="e.g. `bsk wait --text 'Welcome'`")
    kind = chosen[0]
    value = given[kind]
    if kind in ("text", "selector", "gone", "text_gone") and not value.strip():
        raise invalid(kind, "must not be empty")
    loop = asyncio.get_running_loop()
    started = loop.time()
    budget = max(0.05, ctx.remaining() - ANSWER_MARGIN_S)
    if kind == "ms":
        if value / 1000 > budget:
            need = value / 1000 + 1
            raise invalid("ms", f"{value} ms does not fit in what is left of the call's "
                          f"deadline ({budget * 1000:.0f} ms, after {ANSWER_MARGIN_S * 1000:.0f} "
                          "ms kept to answer)",
                          hint=f"pass --timeout {need:.0f} or more, or leave --timeout out: "
                               "the deadline then stretches to fit the pause")
        await asyncio.sleep(value / 1000)  # the caller asked for exactly this pause
        return {"waited_ms": value}
    if kind == "gone":
        return await _gone(ctx, value, budget)
    tab = ctx.tab
    end = started + budget
    result: dict[str, Any]
    if kind == "text_gone":
        what = f"text {value!r} going away"
        if not await _main_frame_holds(ctx, tab, "text_gone", value, end):
            raise _timeout(what, loop.time() - started)
        result = {"text_gone": value}
    elif kind in ("text", "selector"):
        what = f"text {value!r}" if kind == "text" else f"selector {value!r}"
        found = await _observe(ctx, tab, kind, value, end)
        if found is None:
            raise _timeout(what, loop.time() - started)
        result = {kind: value, **{k: v for k, v in found.items() if k != "found"}}
    elif kind == "navigation":
        try:
            result = await _navigation(ctx, tab, params["wait_until"], end)
        except TimeoutError:
            raise _timeout("a navigation", loop.time() - started) from None
    else:
        try:
            result = await _network_idle(ctx, tab, end)
        except TimeoutError:
            raise _timeout(f"network idle ({len(tab.buffers.inflight)} requests still in "
                           "flight)", loop.time() - started) from None
    waited = loop.time() - started
    return {"waited_ms": round(waited * 1000), "tab_id": tab.tab_id, "url": tab.url, **result}


# Resolves when the element is removed or hidden, or with false when its time is up.
_GONE = """function(budget) {
  const el = this;
  const gone = () => !el.isConnected || el.getClientRects().length === 0
    || getComputedStyle(el).visibility === "hidden";
  if (gone()) return true;
  return new Promise(resolve => {
    const finish = value => { observer.disconnect(); clearTimeout(timer); resolve(value); };
    const observer = new MutationObserver(() => { if (gone()) finish(true); });
    observer.observe(document, {subtree: true, childList: true, attributes: true});
    const timer = setTimeout(() => finish(gone()), budget);
  });
}"""


async def _gone(ctx: ToolContext, ref: str, budget: float) -> dict[str, Any]:
    """`wait --gone REF`: the element is removed or hidden, or its document replaced."""
    started = time.monotonic()
    why = "removed or hidden"
    try:
        target = resolve(ctx, ref)
        went = await call_on(ctx, target, _GONE, int(budget * 1000))
    except BskError as e:
        if e.code != "stale_ref":
            raise
        went, why = True, e.message.split(": ", 1)[-1]  # already gone, or its page went
    waited = time.monotonic() - started
    if not went:
        raise _timeout(f"{ref} going away", waited)
    return {"waited_ms": round(waited * 1000), "gone": ref, "why": why}


async def _main_frame_holds(ctx: ToolContext, tab: Tab, kind: str, needle: str,
                            end: float) -> bool:
    """Watch the main frame (each new document of it) until the condition holds."""
    token = uuid.uuid4().hex
    armed: set[tuple[str, int]] = set()
    try:
        assert tab.main_frame_id is not None
        await _watch_frame(ctx, tab, tab.main_frame_id, kind, needle, token, end, armed)
    except _Found:
        return True
    finally:
        if armed:
            _stop_soon(tab, token, armed)
    return False


async def _observe(ctx: ToolContext, tab: Tab, kind: str, needle: str,
                   end: float) -> dict[str, Any] | None:
    """Wait for text or a selector in any frame of the tab; None if time ran out.

    One watch per frame, run together: the frames there now and those that appear
    meanwhile. The first frame that sees the condition wins, the other watches are
    cancelled, and every in-page observer still running is stopped before the answer
    (or, if the call itself is cancelled, right after)."""
    token = uuid.uuid4().hex
    armed: set[tuple[str, int]] = set()  # (cdp session, world) whose observer may still run
    try:
        found = await _first_frame(ctx, tab, kind, needle, token, end, armed)
    except BaseException:
        if armed:
            _stop_soon(tab, token, armed)
        raise
    if armed:
        await asyncio.wait({_stop_soon(tab, token, armed)},
                           timeout=min(STOP_WAIT_S, max(0.0, ctx.remaining() - 0.05)))
    return found


watch_for = _observe  # for request_help's --until (tools/help.py)


async def _first_frame(ctx: ToolContext, tab: Tab, kind: str, needle: str, token: str,
                       end: float, armed: set[tuple[str, int]]) -> dict[str, Any] | None:
    loop = asyncio.get_running_loop()
    watching: set[str] = set()

    async def watch(frame_id: str) -> None:
        await _watch_frame(ctx, tab, frame_id, kind, needle, token, end, armed)
        if frame_id not in tab.frames:
            watching.discard(frame_id)  # removed: watched again if it ever comes back

    def unwatched() -> bool:
        return any(f not in watching for f in tab.frames)

    try:
        async with asyncio.timeout_at(end), asyncio.TaskGroup() as group:
            while True:
                for frame_id in [f for f in tab.frames if f not in watching]:
                    watching.add(frame_id)
                    group.create_task(watch(frame_id))
                try:  # a new frame (an iframe added, an out-of-process one attached)
                    await tab.until(unwatched, end - loop.time())
                except TimeoutError:
                    break  # the watches end at their budgets, or the timeout cancels them
    except TimeoutError:
        return None
    except BaseExceptionGroup as group_error:
        errors = _leaves(group_error)
        for error in errors:
            if isinstance(error, _Found):
                return error.value
        raise errors[0] from None
    return None


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    out: list[BaseException] = []
    for error in group.exceptions:
        out.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return out


async def _watch_frame(ctx: ToolContext, tab: Tab, frame_id: str, kind: str, needle: str,
                       token: str, end: float, armed: set[tuple[str, int]]) -> None:
    """Observe one frame, arming again in each new document; raise `_Found` if it holds.

    Returns when the frame is gone or its time is up."""
    loop = asyncio.get_running_loop()
    retried: str | None = None
    while (left := end - loop.time()) > 0:
        loader = tab.frames.get(frame_id)
        if loader is None:
            return  # the iframe was removed
        sid = tab.session_for_frame(frame_id)
        key: tuple[str, int] | None = None
        script = _OBSERVE % (json.dumps(kind), json.dumps(needle), int(left * 1000),
                             json.dumps(token))
        try:
            world = await isolated_world(ctx, tab, frame_id)
            key = (sid, world)
            armed.add(key)
            answer = await ctx.inspect("Runtime.evaluate", {
                "expression": script, "contextId": world, "awaitPromise": True,
                "returnByValue": True}, tab=tab, session_id=sid)
        except (CdpError, TargetClosed) as e:
            if isinstance(e, TargetClosed) and frame_id == tab.main_frame_id:
                raise  # the tab itself is gone
            # The document went away under the observer (or the frame moved to another
            # process): arm it again in the next one. A world made stale some other way
            # (a page restored from the back/forward cache) is made again once.
            if key is not None:
                armed.discard(key)
            if "context" in str(e).lower():  # the world itself is gone, and its refs with it
                tab.worlds.pop((frame_id, loader), None)
            if retried != loader:
                retried = loader
                continue
            try:
                await tab.until(partial(_replaced, tab, frame_id, loader),
                                max(0.001, end - loop.time()))
            except TimeoutError:
                return
            continue
        armed.discard(key)
        if "exceptionDetails" in answer:  # never silently stop watching a frame
            details = answer["exceptionDetails"]
            raise RuntimeError("wait's observer failed: "
                               + (details.get("exception", {}).get("description")
                                  or details.get("text", "")))
        value = answer.get("result", {}).get("value") or {}
        if value.get("error"):
            raise invalid("selector", f"not a valid CSS selector: {value['error']}")
        if value.get("found"):
            url = value.pop("url", None)
            if frame_id != tab.main_frame_id:
                value["frame_url"] = url
            raise _Found(value)
        return  # its time is up


_STOPPING: set[asyncio.Task[None]] = set()  # stops still being sent, kept referenced


def _stop_soon(tab: Tab, token: str, worlds: set[tuple[str, int]]) -> asyncio.Task[None]:
    """Stop this call's observers still running in these worlds (disconnect, clear the
    timer); a world whose document is gone answers with an error, ignored."""
    expression = _STOP % json.dumps(token)

    async def stop(sid: str, world: int) -> None:
        try:
            await tab.send("Runtime.evaluate", {"expression": expression, "contextId": world},
                           session_id=sid, timeout=STOP_TIMEOUT_S)
        except Exception:  # best effort: its budget ends it anyway
            pass

    async def stop_all(targets: list[tuple[str, int]]) -> None:
        await asyncio.gather(*(stop(sid, world) for sid, world in targets))

    task = asyncio.get_running_loop().create_task(stop_all(sorted(worlds)))
    worlds.clear()
    _STOPPING.add(task)
    task.add_done_callback(_STOPPING.discard)
    return task


async def _navigation(ctx: ToolContext, tab: Tab, wait_until: str,
                      end: float) -> dict[str, Any]:
    """The navigation in progress, or else the next one, until it reaches `wait_until`."""
    loop = asyncio.get_running_loop()
    loader = tab.main_loader()
    in_progress = bool(loader) and tab.reached(loader or "", "commit") and \
        wait_until != "commit" and not tab.reached(loader or "", wait_until)
    before = tab.navigations
    if not in_progress:
        await tab.until(lambda: tab.navigations > before, end - loop.time())
    new_loader = tab.main_loader()
    if new_loader and wait_until != "commit":
        await tab.until(lambda: tab.reached(new_loader, wait_until), end - loop.time())
    out: dict[str, Any] = {"navigated": True}
    if new_loader == loader and not in_progress:
        out["same_document"] = True
    return out


async def _network_idle(ctx: ToolContext, tab: Tab, end: float) -> dict[str, Any]:
    """Chromium's networkIdle for the current document, then no request of ours in flight
    for QUIET_S (requests the page starts later count too)."""
    loop = asyncio.get_running_loop()
    buffers = tab.buffers
    loader = tab.main_loader()
    if loader and tab.reached(loader, "commit"):
        await tab.until(lambda: tab.main_loader() != loader or tab.reached(loader, "networkidle"),
                        end - loop.time())
    while True:
        await tab.until(lambda: not buffers.inflight, end - loop.time())
        quiet_left = QUIET_S - (time.monotonic() - buffers.last_network_activity)
        if quiet_left <= 0:
            return {"in_flight": 0}
        mark = buffers.network_activity
        window = min(quiet_left, end - loop.time())
        if window <= 0:
            raise TimeoutError
        try:
            await tab.until(partial(_active_since, buffers, mark), window)
        except TimeoutError:
            if window < quiet_left:
                raise
            return {"in_flight": 0}


# -- html ------------------------------------------------------------------------------

_DOCUMENT_HTML = """(() => {
  const dt = document.doctype;
  const root = document.documentElement;
  const s = (dt ? new XMLSerializer().serializeToString(dt) + "\\n" : "")
    + (root ? root.outerHTML : "");
  return {html: s.slice(0, %d), total: s.length};
})()"""
_ELEMENT_HTML = """function(max) {
  const s = this.outerHTML !== undefined ? this.outerHTML : (this.textContent || "");
  return {html: s.slice(0, max), total: s.length};
}"""


@implements("html")
async def html(ctx: ToolContext, params: HtmlParams) -> dict[str, Any]:
    limit = params["max_chars"]
    out: dict[str, Any]
    if params["ref"]:
        target = resolve(ctx, params["ref"])
        got: Any = await call_on(ctx, target, _ELEMENT_HTML, limit)
        tab = target.tab
        out = {"ref": params["ref"]}
    else:
        tab = ctx.tab
        answer = await ctx.inspect("Runtime.evaluate", {
            "expression": _DOCUMENT_HTML % limit, "returnByValue": True}, tab=tab)
        got = answer.get("result", {}).get("value") or {"html": "", "total": 0}
        out = {}
    text = got["html"]
    return {**out, "tab_id": tab.tab_id, "url": tab.url, "html": text, "chars": len(text),
            "total_chars": got["total"], "truncated": got["total"] > len(text)}


# -- console, network ------------------------------------------------------------------


@implements("console")
async def console(ctx: ToolContext, params: ConsoleParams) -> dict[str, Any]:
    tab = ctx.session.tab()  # a read of our own buffer: works even while a dialog is open
    return {"tab_id": tab.tab_id,
            **tab.buffers.read_console(params["since"], params["limit"])}


@implements("network")
async def network(ctx: ToolContext, params: NetworkParams) -> dict[str, Any]:
    tab = ctx.session.tab()
    return {"tab_id": tab.tab_id,
            **tab.buffers.read_network(params["since"], params["limit"])}


def _replaced(tab: Tab, frame_id: str, loader: str | None) -> bool:
    return tab.frames.get(frame_id) != loader


def _active_since(buffers: Any, mark: int) -> bool:
    return bool(buffers.network_activity != mark)
