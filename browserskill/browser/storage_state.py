"""Playwright's `storageState` JSON — read, checked, and loaded into a tab's browser
context: cookies through the tab's `Network` domain, each origin's localStorage written in
a helper tab of the same context that opens the origin with every request answered
locally by an empty page (the `Fetch` domain), so no site is contacted.

{"cookies": [{name, value, domain, path, expires, httpOnly, secure, sameSite}],
 "origins": [{"origin", "localStorage": [{"name", "value"}]}]}
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from browserskill.base import background, user_files
from browserskill.base.errors import BskError, invalid
from browserskill.browser.tab import Tab

SAME_SITE = ("Strict", "Lax", "None")
STATE_FILE_MAX_BYTES = 50 * 1024 * 1024

# Run in BrowserSkill's isolated world: `this` is unused; AREA is localStorage or
# sessionStorage; an opaque origin (about:blank, data:) throws SecurityError.
STORAGE_JS = """(function(area, op, key, value) {
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


def parse_state_file(raw: bytes, path: str, field: str = "state") -> dict[str, Any]:
    """A storageState file's bytes (read by `user_files.read_file`, bounded at
    STATE_FILE_MAX_BYTES), checked; invalid_params naming `field` and what is wrong."""
    try:
        state = json.loads(raw)
    except ValueError as e:
        raise invalid(field, f"{path} is not JSON ({e})") from None
    return check_state(state, field)


async def read_state_file(path: str, field: str = "state") -> dict[str, Any]:
    """A storageState file, read off the event loop and bounded, then checked."""
    if not os.path.isabs(path):
        raise invalid(field, "must be an absolute path (the CLI makes it absolute)")
    raw = await user_files.read_file(path, field, STATE_FILE_MAX_BYTES)
    return parse_state_file(raw, path, field)


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
        if c.get("sameSite") is not None and c["sameSite"] not in SAME_SITE:
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


def cookie_param(c: dict[str, Any]) -> dict[str, Any]:
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
                       {"cookies": [cookie_param(c) for c in state["cookies"]]},
                       timeout=left())
    loaded = []
    if state["origins"]:
        await write_origins(helper, state["origins"], left)
        loaded = [o["origin"] for o in state["origins"]]
    return {"cookies": len(state["cookies"]), "origins": loaded}


async def write_origins(helper: Tab, origins: list[dict[str, Any]],
                        left: Callable[[], float]) -> None:
    """Each origin's localStorage items written in `helper` (see `_on_each_origin`)."""
    scripts = {o["origin"]: STORAGE_JS % ", ".join(json.dumps(a) for a in (
        "localStorage", "set_many", None,
        [[it["name"], it["value"]] for it in o.get("localStorage", [])])) for o in origins}
    for origin, value in (await _on_each_origin(helper, list(scripts), scripts.get,
                                                left)).items():
        if "error" in value:
            raise BskError("action_failed", f"could not restore the storage of {origin}: "
                           f"{value['error']}", details={"reason": "state_origin_failed"})


async def read_origins(helper: Tab, origins: list[str],
                       left: Callable[[], float]) -> list[dict[str, Any]]:
    """The localStorage of origins no tab has open, read in `helper` (storageState shape;
    origins with nothing stored are left out)."""
    script = STORAGE_JS % ", ".join(json.dumps(a) for a in ("localStorage", "list", None,
                                                              None))
    found = []
    for origin, value in (await _on_each_origin(helper, origins, lambda _: script,
                                                left)).items():
        items = value.get("items") or []
        if items:
            found.append({"origin": origin,
                          "localStorage": [{"name": k, "value": v} for k, v in items]})
    return found


async def _on_each_origin(helper: Tab, origins: list[str],
                          script_for: Callable[[str], str | None],
                          left: Callable[[], float]) -> dict[str, dict[str, Any]]:
    """Open each origin in `helper` with every request answered locally by an empty page
    (no site is contacted) and run its script there; each script's value by origin."""
    def answer_locally(method: str, params: dict[str, Any]) -> None:
        if method == "Fetch.requestPaused":
            background.start(helper.send("Fetch.fulfillRequest", {
                "requestId": params["requestId"], "responseCode": 200,
                "responseHeaders": [{"name": "Content-Type", "value": "text/html"}],
                "body": ""}, timeout=left()), name="state-origin-page")

    out: dict[str, dict[str, Any]] = {}
    unsubscribe = helper.link.subscribe(helper.session_id, answer_locally)
    try:
        await helper.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, timeout=left())
        for origin in origins:
            nav = await helper.send("Page.navigate", {"url": origin + "/"}, timeout=left())
            if nav.get("errorText"):
                raise BskError("action_failed", f"could not open {origin} for its storage: "
                               f"{nav['errorText']}", details={"reason": "state_origin_failed"})
            loader = nav.get("loaderId")
            if loader:
                await helper.until(partial(helper.reached, loader, "load"), left())
            done = await helper.send("Runtime.evaluate", {
                "expression": script_for(origin), "returnByValue": True}, timeout=left())
            value = done.get("result", {}).get("value") or {}
            if value.get("origin") != origin:
                value = {"error": value.get("error", f"opened {value.get('origin')} instead")}
            out[origin] = value
        await helper.send("Fetch.disable", timeout=left())
    finally:
        unsubscribe()
    return out
