"""Reading the page over time — wait, html, console, network.

`wait` waits on real conditions, never by polling on a timer: a MutationObserver promise
in the page for text and selectors (armed again in each new document if the page
navigates meanwhile), the tab's own navigation and lifecycle events, and the network
buffer's request counts. It gives up a little before the call's deadline so that a
condition that did not happen is reported as such (`action_failed`, reason `timeout`)
rather than as a cancelled call.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.errors import BskError, invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import call_on, resolve
from browserskill.tools.registry import implements

# Give up this long before the call's deadline, to answer "it did not happen" in time.
ANSWER_MARGIN_S = 0.25
# Network idle: no request in flight for this long (Chromium's own networkIdle uses 500 ms).
QUIET_S = 0.5

_CONDITIONS = ("text", "selector", "navigation", "network_idle", "ms")

# Resolves when the condition holds, or with {found: false} when its time is up.
_OBSERVE = """new Promise(resolve => {
  const kind = %s, needle = %s, budget = %d;
  const norm = s => s.replace(/\\s+/g, " ");
  const want = norm(needle);
  const probe = () => {
    if (kind === "text") {
      const root = document.body || document.documentElement;
      return root && norm(root.innerText || "").includes(want) ? {found: true} : null;
    }
    const el = document.querySelector(needle);
    if (!el) return null;
    const style = getComputedStyle(el);
    const visible = [...el.getClientRects()].some(r => r.width > 0 && r.height > 0)
      && style.visibility !== "hidden";
    let desc = el.tagName.toLowerCase();
    if (el.id) desc += "#" + el.id;
    return {found: true, element: desc, visible};
  };
  let first;
  try { first = probe(); } catch (e) { resolve({error: String(e && e.message || e)}); return; }
  if (first) { resolve(first); return; }
  let timer;
  const observer = new MutationObserver(() => {
    const hit = probe();
    if (hit) { observer.disconnect(); clearTimeout(timer); resolve(hit); }
  });
  observer.observe(document, {subtree: true, childList: true, characterData: true,
                              attributes: true});
  timer = setTimeout(() => { observer.disconnect(); resolve({found: false}); }, budget);
})"""


def _timeout(what: str, waited: float) -> BskError:
    return BskError("action_failed", f"waited {waited:.1f}s: {what} did not happen",
                    hint="raise the call's --timeout, or look at the page (snapshot) first",
                    details={"reason": "timeout", "waited_ms": round(waited * 1000)},
                    dispatched="no")


@implements("wait")
async def wait(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    chosen = [n for n in _CONDITIONS if params[n] not in (None, False)]
    if len(chosen) != 1:
        got = f" (got {', '.join(chosen)})" if chosen else ""
        raise invalid("condition", "give exactly one of --text, --selector, --navigation, "
                      f"--network-idle, --ms{got}", hint='e.g. bsk wait --text "Welcome"')
    kind = chosen[0]
    if kind in ("text", "selector") and not params[kind].strip():
        raise invalid(kind, "must not be empty")
    loop = asyncio.get_running_loop()
    started = loop.time()
    budget = max(0.05, ctx.remaining() - ANSWER_MARGIN_S)
    if kind == "ms":
        if params["ms"] / 1000 > budget:
            raise invalid("ms", f"{params['ms']} ms is longer than the call's timeout "
                          f"({ctx.remaining():.0f} s)", hint="pass a longer --timeout")
        await asyncio.sleep(params["ms"] / 1000)  # the caller asked for exactly this pause
        return {"waited_ms": params["ms"]}
    tab = ctx.tab
    end = started + budget
    if kind in ("text", "selector"):
        what = f"text {params['text']!r}" if kind == "text" else f"selector {params['selector']!r}"
        found = await _observe(ctx, tab, kind, params[kind], end)
        if found is None:
            raise _timeout(what, loop.time() - started)
        result: dict[str, Any] = {kind: params[kind], **{k: v for k, v in found.items()
                                                          if k != "found"}}
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


async def _observe(ctx: ToolContext, tab: Tab, kind: str, needle: str,
                   end: float) -> dict[str, Any] | None:
    """Wait for text or a selector in the main frame; None if time ran out."""
    loop = asyncio.get_running_loop()
    contexts = [0]  # default contexts created in the main frame: a new document

    def on_event(session_id: str, method: str, p: dict[str, Any]) -> None:
        if method == "Runtime.executionContextCreated" and session_id == tab.session_id:
            aux = p.get("context", {}).get("auxData", {})
            if aux.get("isDefault") and aux.get("frameId") == tab.main_frame_id:
                contexts[0] += 1

    tab.listeners.append(on_event)
    try:
        while (left := end - loop.time()) > 0:
            seen = contexts[0]
            script = _OBSERVE % (json.dumps(kind), json.dumps(needle), int(left * 1000))
            try:
                answer = await ctx.inspect("Runtime.evaluate", {
                    "expression": script, "awaitPromise": True, "returnByValue": True,
                }, tab=tab)
            except CdpError:
                # The document went away under the observer: arm it again in the next one.
                try:
                    await tab.until(lambda seen=seen: contexts[0] > seen,
                                    max(0.001, end - loop.time()))
                except TimeoutError:
                    return None
                continue
            value = answer.get("result", {}).get("value") or {}
            if value.get("error"):
                raise invalid("selector", f"not a valid CSS selector: {value['error']}")
            if value.get("found"):
                return value
        return None
    finally:
        tab.listeners.remove(on_event)


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
            await tab.until(lambda mark=mark: buffers.network_activity != mark, window)
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
async def html(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
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
async def console(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.session.tab()  # a read of our own buffer: works even while a dialog is open
    return {"tab_id": tab.tab_id,
            **tab.buffers.read_console(params["since"], params["limit"])}


@implements("network")
async def network(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.session.tab()
    return {"tab_id": tab.tab_id,
            **tab.buffers.read_network(params["since"], params["limit"])}
