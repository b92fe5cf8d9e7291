"""The network: a tab's requests, one request's details, a HAR file, and routes that
mock or fail requests.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.fields import TOOL_ERRORS
from browserskill.base.catalog.params import LIMIT, SINCE, M, NoParams, R
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import cursor_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

_ROUTE_PATTERN = Param("pattern", "string", "URL glob, Playwright's: * any characters "
                       "but /, ** any characters, {a,b} either; matched against the whole "
                       "URL, e.g. '**/api/*'", required=True, positional=True,
                       max_length=8192)
# Playwright's route.abort() names, mapped to CDP's by browser/routing.py.
ABORT_REASONS = ("failed", "aborted", "timedout", "accessdenied", "connectionclosed",
                 "connectionreset", "connectionrefused", "connectionaborted",
                 "connectionfailed", "namenotresolved", "internetdisconnected",
                 "addressunreachable", "blockedbyclient", "blockedbyresponse")

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "network"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "network", ("network",), R,
        "Network requests of the current tab (method, URL, status, state). Oldest first; a "
        "request comes again when it changes state; pass next_since as --since to poll.",
        (SINCE, LIMIT),
        example="bsk network --since 40",
    ),
    ToolSpec(
        "network_show", ("network", "show"), R,
        "One request of the current tab's network buffer by id (from `bsk network`): "
        "method, URL, status, timing, request and response headers, redirects; with "
        "--body its response body (text as text, cut at --max-body chars with a note; "
        "binary saved to a file), with --request-body what it sent.",
        (Param("id", "string", "request id from `bsk network`, e.g. r12", required=True,
               positional=True, max_length=64),
         Param("body", "boolean", "include the response body", default=False),
         Param("request_body", "boolean", "include the request body (POST data)",
               default=False),
         Param("max_body", "integer", "cut a text body at this many characters (the "
               "whole body is saved to a file then)", default=100_000, minimum=100,
               maximum=5_000_000)),
        example="bsk network show r12 --body", errors=(*TOOL_ERRORS, "request_not_found"),
    ),
    ToolSpec(
        "network_har", ("network", "har"), R,
        "Write the session's network buffer (every tab's) to PATH as HAR 1.2, which "
        "Chrome DevTools and HAR viewers open; written 0600 (it holds headers and "
        "cookies). --content embeds the response bodies Chromium still holds.",
        (Param("path", "string", "file to write", required=True, positional=True,
               path=True),
         Param("content", "boolean", "embed response bodies (text as text, binary as "
               "base64)", default=False)),
        example="bsk network har session.har",
    ),
    ToolSpec(
        "route_add", ("route", "add"), M,
        "Answer this session's requests whose URL matches PATTERN with a mock (--status, "
        "--body or --file, --header, --content-type), or make them fail (--abort "
        "[REASON]); --times N ends it after N requests. Only this session's tabs (their "
        "iframes too) are affected; the same PATTERN again replaces the route; the newest "
        "matching route wins.",
        (_ROUTE_PATTERN,
         Param("status", "integer", "HTTP status of the mock", default=200, minimum=100,
               maximum=599),
         Param("body", "string", "the mock's body, as text", max_length=5_000_000,
               blank_ok=True),
         Param("file", "string", "a file whose bytes are the mock's body (its type "
               "guessed from its name unless --content-type)", path=True),
         Param("header", "array", "a response header NAME:VALUE (repeat for more)"),
         Param("content_type", "string", "the mock's Content-Type (default: from --file's "
               "name, else text/plain)", max_length=1000),
         Param("abort", "string", "fail the request instead, with this network error",
               choices=ABORT_REASONS, bare="failed"),
         Param("times", "integer", "answer only this many requests, then go away",
               minimum=1, maximum=1_000_000)),
        example="bsk route add '**/api/items' --body '[]' --content-type application/json",
    ),
    ToolSpec("route_list", ("route", "list"), R,
             "This session's routes, the one that wins first: pattern, what it answers, "
             "hits, times left.", example="bsk route list"),
    ToolSpec("route_remove", ("route", "remove"), M,
             "Remove this session's route for PATTERN (as given to `route add`).",
             (_ROUTE_PATTERN,), example="bsk route remove '**/api/items'"),
    ToolSpec("route_clear", ("route", "clear"), M, "Remove all of this session's routes.",
             example="bsk route clear"),
)


class NetworkParams(TypedDict):
    since: int | None
    limit: int


class NetworkShowParams(TypedDict):
    id: str
    body: bool
    request_body: bool
    max_body: int


class NetworkHarParams(TypedDict):
    path: str
    content: bool


class RouteAddParams(TypedDict):
    pattern: str
    status: int
    body: str | None
    file: str | None
    header: list[str] | None
    content_type: str | None
    abort: str | None
    times: int | None


class RouteRemoveParams(TypedDict):
    pattern: str


PARAMS: dict[str, type] = {"network": NetworkParams, "network_show": NetworkShowParams,
                           "network_har": NetworkHarParams, "route_add": RouteAddParams,
                           "route_list": NoParams, "route_clear": NoParams,
                           "route_remove": RouteRemoveParams}


def _network(r: dict[str, Any]) -> str:
    lines = []
    for e in r.get("entries", []):
        status = e.get("status") or ("ERR" if e["state"] == "failed" else "…")
        extra = [e.get("type", ""), e["state"]]
        if e.get("error"):
            extra.append(e["error"])
        if e.get("duration_ms") is not None:
            extra.append(f"{e['duration_ms']:.0f} ms")
        if e.get("route"):
            extra.append(f"route {e['route']}")
        lines.append(f"[{e['seq']}] {e['id']:<5} {e['method']:<6} {status:<4} {e['url']}  "
                     f"({', '.join(x for x in extra if x)})")
    lines.append(cursor_line(r, len(r.get("entries", [])))
                 + f" · in flight: {r.get('in_flight', 0)}")
    return "\n".join(lines)


def _network_show(r: dict[str, Any]) -> str:
    status = r.get("status") or ("ERR" if r.get("state") == "failed" else "…")
    facts = [r.get("mime_type") or "", f"body {r['bytes']} bytes" if "bytes" in r else "",
             f"{r['transfer_bytes']} transferred" if "transfer_bytes" in r else "",
             f"{r['duration_ms']:.0f} ms" if r.get("duration_ms") is not None else "",
             r.get("error", ""), f"route {r['route']}" if r.get("route") else ""]
    lines = [f"{r['id']} {r['method']} {r['url']} -> {status} {r.get('status_text', '')}"
             .rstrip() + f"  ({', '.join(f for f in facts if f)})"]
    for hop in r.get("redirects", []):
        lines.append(f"  redirected from {hop['url']} ({hop['status']})")
    for title, key in (("request headers", "request_headers"),
                       ("response headers", "response_headers")):
        if r.get(key):
            lines.append(f"{title}:")
            lines += [f"  {k}: {v}" for k, v in r[key].items()]
    if r.get("timing_ms"):
        lines.append("timing (ms): " + " · ".join(f"{k} {v:g}" for k, v in r["timing_ms"].items()
                                                   if v >= 0))
    for prefix, title in (("request_body", "request body"), ("body", "body")):
        if f"{prefix}_unavailable" in r:
            lines.append(f"{title}: unavailable: {r[prefix + '_unavailable']}")
        elif f"{prefix}_bytes" in r:
            lines.append(f"{title} ({r[prefix + '_bytes']} bytes):")
            if prefix in r:
                lines.append(r[prefix])
            if r.get(f"{prefix}_note"):
                lines.append(f"note: {r[prefix + '_note']}")
    return "\n".join(lines)


def _route_line(route: dict[str, Any]) -> str:
    if "abort" in route:
        does = f"fail ({route['abort']})"
    else:
        does = f"{route['status']}, {route['body_bytes']} bytes" + (
            f" from {route['file']}" if route.get("file") else "")
        kind = next((v for k, v in route.get("headers", {}).items()
                     if k.lower() == "content-type"), "")
        does += f", {kind}" if kind else ""
    left = f", {route['times_left']} left" if "times_left" in route else ""
    return f"{route['pattern']} -> {does}  ({route['hits']} hits{left})"


def _route_list(r: dict[str, Any]) -> str:
    routes = r.get("routes") or []
    if not routes:
        return "no routes"
    return "\n".join(_route_line(x) for x in routes)


RENDERERS: dict[Words, Renderer] = {
    ("network",): _network, ("network", "show"): _network_show,
    ("network", "har"): lambda r: f"wrote {r['entries']} requests to {r['path']}" + (
        f" ({r['bodies']} with bodies)" if "bodies" in r else ""),
    ("route", "add"): lambda r: ("replaced: " if r.get("replaced") else "route: ")
                                + _route_line(r["route"]),
    ("route", "list"): _route_list,
    ("route", "remove"): lambda r: (f"removed {r['pattern']}" if r["removed"] else
                                    f"no route {r['pattern']}") + f" ({r['routes']} left)",
    ("route", "clear"): lambda r: f"cleared {r['cleared']} route"
                                  f"{'' if r['cleared'] == 1 else 's'}",
}
