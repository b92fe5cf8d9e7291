"""route add|list|remove|clear: this session's mocks and blocks (browser/routing.py).

Routes are session state: they apply to every tab of the session (those it opens later
too, and their out-of-process iframes), never to another session's, and end with it.
A route's body is read when it is added, so a later change to its file does not count.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from browserskill.base import user_files
from browserskill.base.catalog.network import RouteAddParams, RouteRemoveParams
from browserskill.base.catalog.params import NoParams
from browserskill.base.errors import invalid
from browserskill.browser.routing import Route
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements

MAX_BODY_BYTES = 5_000_000  # a CDP message carries it base64'd: keep it well inside limits


async def before_call(ctx: ToolContext) -> None:
    """Every call (tools/call_hooks.py): the session's routes, and its policy's URL rules
    that ride on them, reach every tab it has before anything is sent."""
    for tab in list(ctx.session.tabs.values()):
        await ctx.session.routes.attach(tab, ctx.remaining())


def _headers(raw: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for item in raw or []:
        name, sep, value = item.partition(":")
        name = name.strip()
        if not sep or not name or any(c in name for c in " \t\r\n") or \
                any(c in value for c in "\r\n\0"):
            raise invalid("header", f"{item!r} is not NAME:VALUE",
                          hint="e.g. --header 'Cache-Control: no-store'")
        out.append((name, value.strip()))
    return out


def _route(params: Mapping[str, Any], file_body: bytes | None) -> Route:
    """The route the call describes; `file_body` is --file's content (None: not read yet)."""
    pattern = params["pattern"]
    if params["abort"] is not None:
        given = [p for p in ("body", "file", "header", "content_type") if params[p]]
        if given or params["status"] != 200:
            what = (given or ["status"])[0]
            raise invalid(what, "--abort makes the request fail: it has no response",
                          hint="give either --abort or a mock response")
    if params["body"] is not None and params["file"]:
        raise invalid("file", "give --body or --file, not both")
    headers = _headers(params["header"])
    source = None
    if params["file"]:  # read by the caller once the rest is checked
        body, source = file_body or b"", str(Path(params["file"]))
    else:
        body = (params["body"] or "").encode()
        if len(body) > MAX_BODY_BYTES:
            raise invalid("body", f"is larger than {MAX_BODY_BYTES} bytes as UTF-8")
    if params["abort"] is None and not any(k.lower() == "content-type" for k, _ in headers):
        kind = params["content_type"]
        if kind is None and source:
            kind = mimetypes.guess_type(source)[0]
        headers.append(("Content-Type", kind or "text/plain; charset=utf-8"))
    try:
        return Route(pattern, abort=params["abort"], status=params["status"], body=body,
                     headers=headers, times=params["times"], source=source)
    except ValueError as e:
        raise invalid("pattern", f"{pattern!r}: {e}") from None


@implements("route_add")
async def route_add(ctx: ToolContext, params: RouteAddParams) -> dict[str, Any]:
    route = _route(params, None)  # every other rule is checked before the file is read
    if params["file"]:  # bounded, and off the event loop (browserskill/base/user_files.py)
        route = _route(params, await user_files.read_file(params["file"], "file",
                                                          MAX_BODY_BYTES))
    table = ctx.session.routes
    replaced = table.add(route)
    ctx.mark_dispatched()
    await table.sync(ctx.remaining())
    return {"route": route.describe(), "replaced": replaced, "routes": len(table.routes)}


@implements("route_list")
async def route_list(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    return {"routes": ctx.session.routes.describe()}


@implements("route_remove")
async def route_remove(ctx: ToolContext, params: RouteRemoveParams) -> dict[str, Any]:
    table = ctx.session.routes
    removed = table.remove(params["pattern"])
    out: dict[str, Any] = {"pattern": params["pattern"], "removed": removed,
                           "routes": len(table.routes)}
    if not removed:
        out["note"] = "no route had this pattern (see `bsk route list`)"
        return out
    ctx.mark_dispatched()
    await table.sync(ctx.remaining())
    return out


@implements("route_clear")
async def route_clear(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    table = ctx.session.routes
    cleared = table.clear()
    if cleared:
        ctx.mark_dispatched()
        await table.sync(ctx.remaining())
    return {"cleared": cleared}
