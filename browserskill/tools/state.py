"""cookies, storage, state save|load: a session's logged-in state, on every placement.

Cookies go through the tab's own `Network` domain (HttpOnly ones included, unlike
`document.cookie`), so they are those of the session's browser context: its own when
the session is isolated, else the shared profile's — which every non-isolated session
(and, in the extension, the user) sees too. Storage is read and written in BrowserSkill's
isolated world of the current tab's main frame (its origin's storage; page scripts can't
intercept it there).

`state save|load` use Playwright's `storageState` JSON ({"cookies": [...], "origins":
[{"origin", "localStorage": [{"name", "value"}]}]}), so state moves between the two.
A saved file holds credentials: it is written 0600. Loading a origin's localStorage
needs a document of that origin: a helper tab of the session's own opens each origin
with every request answered by an empty page (the `Fetch` domain), so no site is
contacted, writes the items, and closes.
"""

from __future__ import annotations

import asyncio
import json
import os
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browserskill.browser.link import CdpError
from browserskill.errors import BskError, invalid
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import isolated_world
from browserskill.tools.registry import implements

if TYPE_CHECKING:
    from browserskill.browser.tab import Tab

_SAME_SITE = {"Strict": "Strict", "Lax": "Lax", "None": "None"}
STATE_FILE_MAX_BYTES = 50 * 1024 * 1024


# -- cookies ----------------------------------------------------------------------------


def _cookie_out(c: dict[str, Any]) -> dict[str, Any]:
    """A CDP cookie in Playwright's shape (what `cookies list` and `state save` give)."""
    return {"name": c["name"], "value": c["value"], "domain": c["domain"],
            "path": c["path"], "expires": -1 if c.get("session") else c.get("expires", -1),
            "httpOnly": bool(c.get("httpOnly")), "secure": bool(c.get("secure")),
            "sameSite": c.get("sameSite", "Lax")}


async def _all_cookies(ctx: ToolContext, tab: Tab) -> list[dict[str, Any]]:
    return (await ctx.inspect("Network.getAllCookies", tab=tab))["cookies"]


def _web_url(tab: Tab) -> str | None:
    return tab.url if tab.url.startswith(("http://", "https://")) else None


@implements("cookies_list")
async def cookies_list(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.tab
    if params.get("url"):
        found = (await ctx.inspect("Network.getCookies", {"urls": [params["url"]]},
                                   tab=tab))["cookies"]
    else:
        found = await _all_cookies(ctx, tab)
    return {"cookies": [_cookie_out(c) for c in found], "scope": _scope(ctx)}


def _scope(ctx: ToolContext) -> str:
    return "isolated" if ctx.session.backend.describe().get("isolated") else "shared"


@implements("cookies_set")
async def cookies_set(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
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
        cookie["sameSite"] = _SAME_SITE[params["same_site"]]
    if params.get("expires") is not None:
        cookie["expires"] = params["expires"]
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
                         "needs --secure)", details={"field": "name"}, dispatched="no")


@implements("cookies_delete")
async def cookies_delete(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.tab
    name = params["name"]
    before = [c for c in await _all_cookies(ctx, tab) if c["name"] == name]
    if params.get("url"):
        targets = [{"name": name, "url": params["url"]}]
    else:
        targets = [{"name": name, "domain": c["domain"], "path": c["path"]} for c in before
                   if (not params.get("domain") or c["domain"].lstrip(".") ==
                       params["domain"].lstrip("."))
                   and (not params.get("path") or c["path"] == params["path"])]
    for target in targets:
        await ctx.act("Network.deleteCookies", target, tab=tab)
    after = [c for c in await _all_cookies(ctx, tab) if c["name"] == name]
    return {"deleted": len(before) - len(after), "name": name, "scope": _scope(ctx)}


@implements("cookies_clear")
async def cookies_clear(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    tab = ctx.tab
    count = len(await _all_cookies(ctx, tab))
    await ctx.act("Network.clearBrowserCookies", tab=tab)
    return {"cleared": count, "scope": _scope(ctx)}


# -- storage ----------------------------------------------------------------------------

# Run in BrowserSkill's isolated world: `this` is unused; AREA is localStorage or
# sessionStorage; an opaque origin (about:blank, data:) throws SecurityError.
_STORAGE_JS = """(function(area, op, key, value) {
  let s;
  try { s = window[area]; } catch (e) { return {error: String(e.message || e)}; }
  if (!s) return {error: area + " is not available here"};
  const origin = location.origin;
  if (op === "list") {
    const items = [];
    for (let i = 0; i < s.length; i++) { const k = s.key(i); items.push([k, s.getItem(k)]); }
    return {origin, items};
  }
  if (op === "get") return {origin, found: s.getItem(key) !== null, value: s.getItem(key)};
  if (op === "set") { s.setItem(key, value); return {origin}; }
  if (op === "delete") {
    const had = s.getItem(key) !== null; s.removeItem(key); return {origin, deleted: had};
  }
  if (op === "clear") { const n = s.length; s.clear(); return {origin, cleared: n}; }
  if (op === "set_many") { for (const [k, v] of value) s.setItem(k, v); return {origin}; }
})(%s)"""


async def _storage(ctx: ToolContext, op: str, params: dict[str, Any],
                   key: str | None = None, value: str | None = None) -> dict[str, Any]:
    tab = ctx.tab
    area = "sessionStorage" if params.get("session_storage") else "localStorage"
    frame = tab.main_frame_id
    if frame is None:
        raise BskError("action_failed", "the tab has no document yet", dispatched="no",
                       details={"reason": "no_document"})
    world = await isolated_world(ctx, tab, frame)
    args = ", ".join(json.dumps(a) for a in (area, op, key, value))
    if op not in ("list", "get"):
        ctx.mark_dispatched()
    answer = await ctx.inspect("Runtime.evaluate", {
        "expression": _STORAGE_JS % args, "contextId": world, "returnByValue": True},
        tab=tab)
    out = answer.get("result", {}).get("value") or {}
    if "error" in out:
        raise BskError("action_failed", f"{area} of {tab.url} can't be used: {out['error']}",
                       hint="open a page of the site first (`bsk open URL`); about:blank and "
                            "data: pages have no storage", details={"reason": "no_storage"},
                       dispatched="no")
    return {**out, "area": area, "tab_id": tab.tab_id}


@implements("storage_list")
async def storage_list(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    out = await _storage(ctx, "list", params)
    out["items"] = [{"name": k, "value": v} for k, v in out.pop("items", [])]
    return out


@implements("storage_get")
async def storage_get(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    out = await _storage(ctx, "get", params, key=params["name"])
    if not out.get("found"):
        raise BskError("action_failed", f"no key {params['name']!r} in {out['area']} of "
                       f"{out['origin']}", hint="`bsk storage list` shows the keys",
                       details={"reason": "no_such_key", "key": params["name"]},
                       dispatched="no")
    return {"key": params["name"], **out}


@implements("storage_set")
async def storage_set(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    out = await _storage(ctx, "set", params, key=params["name"], value=params["value"])
    return {"key": params["name"], **out}


@implements("storage_delete")
async def storage_delete(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    return {"key": params["name"], **await _storage(ctx, "delete", params, key=params["name"])}


@implements("storage_clear")
async def storage_clear(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
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
async def state_save(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
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
    state = {"cookies": cookies, "origins": list(origins.values())}
    path = write_private(params["path"], json.dumps(state, indent=2) + "\n")
    return {"path": path, "cookies": len(cookies), "origins": sorted(origins),
            "scope": _scope(ctx)}


def write_private(path: str, text: str) -> str:
    """Write a file only its owner can read (0600, also when it existed before)."""
    if not os.path.isabs(path):
        raise invalid("path", "must be an absolute path (the CLI makes it absolute)")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(text)
    except OSError as e:
        raise BskError("invalid_params", f"path: can't write {path}: {e.strerror}",
                       hint="give a path in a directory you can write",
                       details={"field": "path"}, dispatched="no") from None
    return path


def read_state_file(path: str, field: str = "state") -> dict[str, Any]:
    """A storageState file, checked; invalid_params naming `field` and what is wrong."""
    if not os.path.isabs(path):
        raise invalid(field, "must be an absolute path (the CLI makes it absolute)")
    try:
        with open(path, "rb") as f:
            raw = f.read(STATE_FILE_MAX_BYTES + 1)
    except OSError as e:
        raise invalid(field, f"can't read {path}: {e.strerror}") from None
    if len(raw) > STATE_FILE_MAX_BYTES:
        raise invalid(field, f"{path} is larger than {STATE_FILE_MAX_BYTES} bytes")
    try:
        state = json.loads(raw)
    except ValueError as e:
        raise invalid(field, f"{path} is not JSON ({e})") from None
    return check_state(state, field)


def check_state(state: Any, field: str = "state") -> dict[str, Any]:
    if not isinstance(state, dict):
        raise invalid(field, "must be a JSON object with cookies and origins (Playwright's "
                      "storageState format)")
    cookies, origins = state.get("cookies", []), state.get("origins", [])
    if not isinstance(cookies, list) or not isinstance(origins, list):
        raise invalid(field, "cookies and origins must be lists")
    for i, c in enumerate(cookies):
        where = f"state.cookies[{i}]"
        if not isinstance(c, dict):
            raise invalid(field, f"{where} must be an object")
        for key in ("name", "value"):
            if not isinstance(c.get(key), str):
                raise invalid(field, f"{where}.{key} must be a string")
        if not isinstance(c.get("domain"), str) and not isinstance(c.get("url"), str):
            raise invalid(field, f"{where} needs a domain (or a url)")
        if c.get("sameSite") is not None and c["sameSite"] not in _SAME_SITE:
            raise invalid(field, f"{where}.sameSite must be Strict, Lax or None")
    for i, o in enumerate(origins):
        where = f"state.origins[{i}]"
        if not isinstance(o, dict) or not isinstance(o.get("origin"), str):
            raise invalid(field, f"{where} must be an object with an origin")
        parts = urlsplit(o["origin"])
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise invalid(field, f"{where}.origin must be an http(s) origin, got "
                          f"{o['origin']!r}")
        items = o.get("localStorage", [])
        if not isinstance(items, list) or not all(
                isinstance(it, dict) and isinstance(it.get("name"), str)
                and isinstance(it.get("value"), str) for it in items):
            raise invalid(field, f"{where}.localStorage must be a list of {{name, value}} "
                          "strings")
    return {"cookies": cookies, "origins": origins}


def _cookie_param(c: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c["name"], "value": c["value"]}
    for key in ("url", "domain", "path"):
        if c.get(key):
            out[key] = c[key]
    for key in ("httpOnly", "secure"):
        if c.get(key):
            out[key] = True
    if c.get("sameSite"):
        out["sameSite"] = c["sameSite"]
    expires = c.get("expires")
    if isinstance(expires, int | float) and expires > 0:
        out["expires"] = expires
    return out


async def load_state(tab: Tab, helper: Tab, state: dict[str, Any], *,
                     timeout: float) -> dict[str, Any]:
    """Cookies through `tab`; each origin's localStorage written in `helper`, a blank tab
    of the same browser context that is navigated to each origin with every request
    answered locally (no site contacted)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout

    def left() -> float:
        return max(0.001, end - loop.time())

    if state["cookies"]:
        await tab.send("Network.setCookies",
                       {"cookies": [_cookie_param(c) for c in state["cookies"]]},
                       timeout=left())
    loaded = []
    if state["origins"]:
        await _write_origins(helper, state["origins"], left)
        loaded = [o["origin"] for o in state["origins"]]
    return {"cookies": len(state["cookies"]), "origins": loaded}


async def _write_origins(helper: Tab, origins: list[dict[str, Any]], left: Any) -> None:
    def answer_locally(method: str, params: dict[str, Any]) -> None:
        if method == "Fetch.requestPaused":
            asyncio.get_running_loop().create_task(helper.send("Fetch.fulfillRequest", {
                "requestId": params["requestId"], "responseCode": 200,
                "responseHeaders": [{"name": "Content-Type", "value": "text/html"}],
                "body": ""}, timeout=left()))

    unsubscribe = helper.link.subscribe(helper.session_id, answer_locally)
    try:
        await helper.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, timeout=left())
        for o in origins:
            nav = await helper.send("Page.navigate", {"url": o["origin"] + "/"},
                                    timeout=left())
            if nav.get("errorText"):
                raise BskError("action_failed", f"could not open {o['origin']} to restore "
                               f"its storage: {nav['errorText']}",
                               details={"reason": "state_origin_failed"})
            loader = nav.get("loaderId")
            if loader:
                await helper.until(partial(helper.reached, loader, "load"), left())
            items = [[it["name"], it["value"]] for it in o.get("localStorage", [])]
            done = await helper.send("Runtime.evaluate", {
                "expression": _STORAGE_JS % ", ".join(json.dumps(a) for a in (
                    "localStorage", "set_many", None, items)),
                "returnByValue": True}, timeout=left())
            value = done.get("result", {}).get("value") or {}
            if "error" in value or value.get("origin") != o["origin"]:
                raise BskError("action_failed", f"could not restore the storage of "
                               f"{o['origin']}: {value.get('error', 'wrong origin')}",
                               details={"reason": "state_origin_failed"})
        await helper.send("Fetch.disable", timeout=left())
    finally:
        unsubscribe()


@implements("state_load")
async def state_load(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    state = read_state_file(params["path"], "path")
    tab = ctx.tab
    ctx.mark_dispatched()
    helper = None
    try:
        if state["origins"]:
            helper = await ctx.backend.new_tab(f"{ctx.session.id}-state-loader")
        out = await load_state(tab, helper or tab, state, timeout=ctx.remaining())
    finally:
        if helper is not None:
            await asyncio.shield(ctx.backend.close_tab(helper))
    return {**out, "path": params["path"], "scope": _scope(ctx),
            "note": "pages already open keep what they read; reload them to see the state"}
