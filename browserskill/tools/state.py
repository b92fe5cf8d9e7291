"""cookies, storage, state save|load: a session's logged-in state, on every placement.

Cookies go through the tab's own `Network` domain (HttpOnly ones included, unlike
`document.cookie`), so they are those of the session's browser context: its own when
the session is isolated, else the shared profile's — which every non-isolated session
(and, in the extension, the user) sees too. Storage is read and written in BrowserSkill's
isolated world of the current tab's main frame (its origin's storage; page scripts can't
intercept it there).

`state save|load` use Playwright's `storageState` JSON (browser/storage_state.py), so
state moves between the two. A saved file holds credentials: it is written 0600.
Origins no tab has open are read or written in a helper tab of the session's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browserskill.base import user_files
from browserskill.base.catalog.params import NoParams
from browserskill.base.catalog.state import (
    CookiesDeleteParams,
    CookiesListParams,
    CookiesSetParams,
    StateFileParams,
    StorageAreaParams,
    StorageKeyParams,
    StorageSetParams,
)
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import CdpError
from browserskill.browser.storage_state import (
    STORAGE_JS,
    load_state,
    read_origins,
    read_state_file,
)
from browserskill.tools.context import ToolContext
from browserskill.tools.output_files import check_writable
from browserskill.tools.refs import isolated_world
from browserskill.tools.registry import implements

if TYPE_CHECKING:
    from browserskill.browser.tab import Tab


# -- cookies ----------------------------------------------------------------------------


def _cookie_out(c: dict[str, Any]) -> dict[str, Any]:
    """A CDP cookie in Playwright's shape (what `cookies list` and `state save` give)."""
    return {"name": c["name"], "value": c["value"], "domain": c["domain"],
            "path": c["path"], "expires": -1 if c.get("session") else c.get("expires", -1),
            "httpOnly": bool(c.get("httpOnly")), "secure": bool(c.get("secure")),
            "sameSite": c.get("sameSite", "Lax")}


async def _all_cookies(ctx: ToolContext, tab: Tab) -> list[dict[str, Any]]:
    return (await ctx.inspect("Network.getAllCookies", tab=tab))["cookies"]


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else None


def _web_url(tab: Tab) -> str | None:
    return tab.url if tab.url.startswith(("http://", "https://")) else None


@implements("cookies_list")
async def cookies_list(ctx: ToolContext, params: CookiesListParams) -> dict[str, Any]:
    tab = ctx.tab
    if params.get("url"):
        found = (await ctx.inspect("Network.getCookies", {"urls": [params["url"]]},
                                   tab=tab))["cookies"]
    else:
        found = await _all_cookies(ctx, tab)
    return {"cookies": [_cookie_out(c) for c in found], "scope": _scope(ctx)}


def _scope(ctx: ToolContext) -> str:
    return "isolated" if ctx.session.backend.context_id is not None else "shared"


@implements("cookies_set")
async def cookies_set(ctx: ToolContext, params: CookiesSetParams) -> dict[str, Any]:
    tab = ctx.tab
    cookie: dict[str, Any] = {"name": params["name"], "value": params["value"]}
    if params.get("url") and params.get("domain"):
        raise invalid("domain", "give --url or --domain, not both")
    if params.get("url"):
        cookie["url"] = params["url"]
    elif params.get("domain"):
        cookie["domain"] = params["domain"]
        cookie["path"] = params.get("path") or "/"
    else:
        url = _web_url(tab)
        if url is None:
            raise invalid("url", "the current tab is not on a web page: say where the cookie "
                          "belongs", hint="add --url https://site/ or --domain site")
        cookie["url"] = url
    if params.get("path") and "url" in cookie:
        cookie["path"] = params["path"]
    for name, key in (("http_only", "httpOnly"), ("secure", "secure")):
        if params.get(name):
            cookie[key] = True
    if params.get("same_site"):
        cookie["sameSite"] = params["same_site"]
    expires = params["expires"]
    if expires is not None:
        if expires <= time.time():
            raise invalid("expires", "is in the past: the browser would drop the cookie at "
                          "once", hint="to remove a cookie: bsk cookies delete NAME")
        cookie["expires"] = expires
    try:
        answer = await ctx.act("Network.setCookie", cookie, tab=tab)
    except CdpError as e:
        raise _refused_cookie(str(e)) from None
    if answer.get("success") is False:
        raise _refused_cookie("the browser refused it")
    where = cookie.get("url") or cookie["domain"]
    return {"set": params["name"], "where": where, "scope": _scope(ctx)}


def _refused_cookie(why: str) -> BskError:
    return BskError("invalid_params", f"cookie refused: {why}",
                    hint="check the domain/url (a secure cookie needs https; SameSite=None "
                         "needs --secure)", details={"field": "name"}, dispatched=Dispatched.NO)


@implements("cookies_delete")
async def cookies_delete(ctx: ToolContext, params: CookiesDeleteParams) -> dict[str, Any]:
    tab = ctx.tab
    name = params["name"]
    before = [c for c in await _all_cookies(ctx, tab) if c["name"] == name]
    domain = params["domain"]
    if params.get("url"):
        targets = [{"name": name, "url": params["url"]}]
    else:
        targets = [{"name": name, "domain": c["domain"], "path": c["path"]} for c in before
                   if (not domain or c["domain"].lstrip(".") == domain.lstrip("."))
                   and (not params.get("path") or c["path"] == params["path"])]
    for target in targets:
        await ctx.act("Network.deleteCookies", target, tab=tab)
    after = [c for c in await _all_cookies(ctx, tab) if c["name"] == name]
    return {"deleted": len(before) - len(after), "name": name, "scope": _scope(ctx)}


@implements("cookies_clear")
async def cookies_clear(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    tab = ctx.tab
    count = len(await _all_cookies(ctx, tab))
    await ctx.act("Network.clearBrowserCookies", tab=tab)
    return {"cleared": count, "scope": _scope(ctx)}


# -- storage ----------------------------------------------------------------------------

async def _storage(ctx: ToolContext, op: str, params: Mapping[str, Any],
                   key: str | None = None, value: str | None = None) -> dict[str, Any]:
    tab = ctx.tab
    area = "sessionStorage" if params.get("session_storage") else "localStorage"
    frame = tab.main_frame_id
    if frame is None:
        raise BskError("action_failed", "the tab has no document yet", dispatched=Dispatched.NO,
                       details={"reason": "no_document"})
    world = await isolated_world(ctx, tab, frame)
    args = ", ".join(json.dumps(a) for a in (area, op, key, value))
    if op not in ("list", "get"):
        ctx.mark_dispatched()
    answer = await ctx.inspect("Runtime.evaluate", {
        "expression": STORAGE_JS % args, "contextId": world, "returnByValue": True},
        tab=tab)
    out = answer.get("result", {}).get("value") or {}
    if "error" in out:
        raise BskError("action_failed", f"{area} of {tab.url} can't be used: {out['error']}",
                       hint="open a page of the site first (`bsk open URL`); about:blank and "
                            "data: pages have no storage", details={"reason": "no_storage"},
                       dispatched=Dispatched.NO)
    return {**out, "area": area, "tab_id": tab.tab_id}


@implements("storage_list")
async def storage_list(ctx: ToolContext, params: StorageAreaParams) -> dict[str, Any]:
    out = await _storage(ctx, "list", params)
    out["items"] = [{"name": k, "value": v} for k, v in out.pop("items", [])]
    return out


@implements("storage_get")
async def storage_get(ctx: ToolContext, params: StorageKeyParams) -> dict[str, Any]:
    out = await _storage(ctx, "get", params, key=params["name"])
    if not out.get("found"):
        raise BskError("action_failed", f"no key {params['name']!r} in {out['area']} of "
                       f"{out['origin']}", hint="`bsk storage list` shows the keys",
                       details={"reason": "no_such_key", "key": params["name"]},
                       dispatched=Dispatched.NO)
    return {"key": params["name"], **out}


@implements("storage_set")
async def storage_set(ctx: ToolContext, params: StorageSetParams) -> dict[str, Any]:
    out = await _storage(ctx, "set", params, key=params["name"], value=params["value"])
    return {"key": params["name"], **out}


@implements("storage_delete")
async def storage_delete(ctx: ToolContext, params: StorageKeyParams) -> dict[str, Any]:
    return {"key": params["name"], **await _storage(ctx, "delete", params, key=params["name"])}


@implements("storage_clear")
async def storage_clear(ctx: ToolContext, params: StorageAreaParams) -> dict[str, Any]:
    return await _storage(ctx, "clear", params)


# -- state save | load ------------------------------------------------------------------

_ORIGIN_STORAGE_JS = """(() => {
  try {
    const items = [];
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i); items.push({name: k, value: localStorage.getItem(k)});
    }
    return {origin: location.origin, localStorage: items};
  } catch (e) { return null; }
})()"""


@implements("state_save")
async def state_save(ctx: ToolContext, params: StateFileParams) -> dict[str, Any]:
    if os.path.isabs(params["path"]):
        check_writable(Path(params["path"]))  # refused before any work, like a screenshot
    tab = ctx.tab
    cookies = [_cookie_out(c) for c in await _all_cookies(ctx, tab)]
    origins: dict[str, dict[str, Any]] = {}
    for each in list(ctx.session.tabs.values()):
        if each.gone or each.main_frame_id is None or not _web_url(each):
            continue
        world = await isolated_world(ctx, each, each.main_frame_id)
        answer = await ctx.inspect("Runtime.evaluate", {
            "expression": _ORIGIN_STORAGE_JS, "contextId": world, "returnByValue": True},
            tab=each)
        found = answer.get("result", {}).get("value")
        if found and found["origin"] != "null" and found["localStorage"]:
            origins[found["origin"]] = found
    ctx.session.remember_origins()
    elsewhere = sorted(ctx.session.origins - {_origin(t.url)
                                               for t in ctx.session.tabs.values()})
    if elsewhere:  # visited earlier or loaded from a state
        async with _helper_tab(ctx) as helper:
            for found in await read_origins(helper, elsewhere, ctx.remaining):
                origins[found["origin"]] = found
    state = {"cookies": cookies, "origins": [origins[o] for o in sorted(origins)]}
    path = await write_private(params["path"], json.dumps(state, indent=2) + "\n")
    return {"path": path, "cookies": len(cookies), "origins": sorted(origins),
            "scope": _scope(ctx)}


@contextlib.asynccontextmanager
async def _helper_tab(ctx: ToolContext) -> AsyncIterator[Tab]:
    """A blank tab of the session's own browser context, not one of its tabs; closed
    afterwards whatever happens."""
    helper = await ctx.backend.new_tab(f"{ctx.session.id}-state-helper")
    try:
        yield helper
    finally:
        await asyncio.shield(ctx.backend.close_tab(helper))


async def write_private(path: str, text: str) -> str:
    """Write a file only its owner can read (0600, also when it existed before), off the
    event loop and only if it is a regular file (browserskill/base/user_files.py)."""
    if not os.path.isabs(path):
        raise invalid("path", "must be an absolute path (the CLI makes it absolute)")
    await user_files.write_file(path, text.encode(), private=True)
    return path


@implements("state_load")
async def state_load(ctx: ToolContext, params: StateFileParams) -> dict[str, Any]:
    state = await read_state_file(params["path"], "path")
    tab = ctx.tab
    ctx.mark_dispatched()
    if state["origins"]:
        async with _helper_tab(ctx) as helper:
            out = await load_state(tab, helper, state, timeout=ctx.remaining())
    else:
        out = await load_state(tab, tab, state, timeout=ctx.remaining())
    return {**out, "path": params["path"], "scope": _scope(ctx),
            "note": "pages already open keep what they read; reload them to see the state"}
