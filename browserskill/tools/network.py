"""network show|har: one request in detail, and the session's buffer as HAR 1.2.

Detail (headers, timing) comes from the tab's network buffer (browser/buffers.py); bodies
are asked of Chromium only here, lazily, and only while it still holds them (its
per-tab body buffer is bounded: the oldest go first, a very large one is never kept).
A text body is returned as text up to `max_body` characters, the whole of it saved to a
file when cut; a binary body is always saved to a file, under
$BSK_HOME/network/SESSION/, and its path returned.
"""

from __future__ import annotations

import asyncio
import base64
import json
import mimetypes
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from browserskill import __version__
from browserskill.base import user_files, vault
from browserskill.base.catalog.network import NetworkHarParams, NetworkShowParams
from browserskill.base.errors import BskError
from browserskill.browser.buffers import public
from browserskill.browser.link import CdpError
from browserskill.browser.tab import Tab
from browserskill.tools.context import ToolContext
from browserskill.tools.output_files import check_writable
from browserskill.tools.registry import implements

HAR_READS_AT_ONCE = 16  # bodies asked of Chromium at once while writing a HAR
_TEXT_TYPES = ("json", "xml", "javascript", "ecmascript", "svg", "x-www-form-urlencoded",
               "graphql", "csv", "yaml")


def is_text(mime: str) -> bool:
    mime = mime.lower()
    return mime.startswith("text/") or any(t in mime for t in _TEXT_TYPES)


def _headers_dict(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        out[name] = f"{out[name]}\n{value}" if name in out else value
    return out


def phases(entry: dict[str, Any]) -> dict[str, float] | None:
    """HAR's timing phases (ms; -1 where it does not apply) from Chromium's
    ResourceTiming and the request's start and end; None before there is a response."""
    t, start, end = entry.get("_timing"), entry.get("_start"), entry.get("_end")
    if not t or start is None:
        return None

    def at(name: str) -> float | None:
        value = t.get(name, -1)
        return value if value is not None and value >= 0 else None

    def span(a: str, b: str) -> float:
        x, y = at(a), at(b)
        return round(y - x, 3) if x is not None and y is not None else -1

    queued = max(0.0, (t["requestTime"] - start) * 1000)
    first = next((v for v in (at("dnsStart"), at("connectStart"), at("sendStart"))
                  if v is not None), 0.0)
    headers_end = at("receiveHeadersEnd") or 0.0
    send_end = at("sendEnd") or 0.0
    total = (end - t["requestTime"]) * 1000 if end is not None else headers_end
    return {"blocked": round(queued + first, 3), "dns": span("dnsStart", "dnsEnd"),
            "connect": span("connectStart", "connectEnd"), "ssl": span("sslStart", "sslEnd"),
            "send": max(0.0, span("sendStart", "sendEnd")),
            "wait": round(max(0.0, headers_end - send_end), 3),
            "receive": round(max(0.0, total - headers_end), 3)}


def _main_hop(hops: list[dict[str, Any]]) -> dict[str, Any]:
    return next((e for e in reversed(hops) if e["state"] != "redirected"), hops[-1])


def _folder(ctx: ToolContext) -> Path:
    folder = Path(ctx.state_dir) / "network" / ctx.session.id
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def _save(ctx: ToolContext, tab: Tab, name: str, mime: str, data: bytes) -> str:
    ext = mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"
    path = _folder(ctx) / f"{tab.tab_id}-{name}{ext}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(vault.scrub_bytes(data))  # a form POST may carry a stored secret
    return str(path)


async def _response_body(ctx: ToolContext, tab: Tab,
                         entry: dict[str, Any]) -> tuple[bytes, bool] | str:
    """(bytes, was base64) of the response body, or why there is none."""
    if entry["state"] == "pending":
        return "the response has not finished loading (`bsk wait --network-idle`, then ask again)"
    if entry["state"] == "redirected":
        return "a redirect has no body (the request's last hop has it)"
    if entry["state"] == "failed" and not entry.get("status"):
        return f"the request failed ({entry.get('error', 'failed')}): there is no response"
    try:
        got = await ctx.inspect("Network.getResponseBody", {"requestId": entry["_request_id"]},
                                tab=tab, session_id=entry["_session"])
    except CdpError as e:
        return (f"Chromium no longer holds it ({e}): it keeps the latest bodies up to about "
                "20 MB per tab, none over 5 MB, and none of a document that was replaced "
                "in a way that discards them")
    if got.get("base64Encoded"):
        return base64.b64decode(got.get("body", "")), True
    return got.get("body", "").encode(), False


async def _request_body(ctx: ToolContext, tab: Tab,
                        entry: dict[str, Any]) -> tuple[bytes, bool] | str:
    if not entry.get("_has_post_data"):
        return "the request sent no body"
    try:
        got = await ctx.inspect("Network.getRequestPostData",
                                {"requestId": entry["_request_id"]},
                                tab=tab, session_id=entry["_session"])
    except CdpError as e:
        return f"Chromium no longer holds it ({e})"
    if got.get("base64Encoded"):
        return base64.b64decode(got.get("postData", "")), True
    return got.get("postData", "").encode(), False


def _body_fields(ctx: ToolContext, tab: Tab, name: str, mime: str,
                 got: tuple[bytes, bool] | str, limit: int, prefix: str) -> dict[str, Any]:
    if isinstance(got, str):
        return {f"{prefix}unavailable": got}
    data, _ = got
    out: dict[str, Any] = {f"{prefix}bytes": len(data)}
    text = None
    if is_text(mime) or not mime:
        try:
            text = data.decode()
        except UnicodeDecodeError:
            text = None
    if text is None:
        out[f"{prefix}path"] = _save(ctx, tab, name, mime or "application/octet-stream", data)
        out[f"{prefix}note"] = "binary: saved to the file at " + out[f"{prefix}path"]
        return out
    out[prefix.rstrip("_")] = text[:limit]
    if len(text) > limit:
        out[f"{prefix}truncated"] = True
        out[f"{prefix}path"] = _save(ctx, tab, name, mime, data)
        out[f"{prefix}note"] = (f"cut at {limit} of {len(text)} characters (--max-body); the "
                                f"whole body is in {out[f'{prefix}path']}")
    return out


def _no_request(tab: Tab, request_id: str) -> BskError:
    """request_not_found, naming what the buffer does hold (its latest ids)."""
    ids = list(dict.fromkeys(str(e["id"]) for e in tab.buffers.network.entries()
                             if e.get("id")))
    held = (f"its latest: {', '.join(ids[-5:])}" + (f" ({len(ids)} held)" if ids[5:] else "")
            if ids else "it is empty")
    return BskError("request_not_found",
                    f"no request {request_id!r} in tab {tab.tab_id}'s network buffer ({held})",
                    hint="`bsk network` lists the ids (the buffer keeps the latest 1000 "
                         "requests of the current tab)",
                    details={"id": request_id, "tab_id": tab.tab_id, "latest": ids[-5:]})


@implements("network_show")
async def network_show(ctx: ToolContext, params: NetworkShowParams) -> dict[str, Any]:
    tab = ctx.session.tab()
    hops = tab.buffers.find_request(params["id"])
    if not hops:
        raise _no_request(tab, params["id"])
    entry = _main_hop(hops)
    out: dict[str, Any] = {"tab_id": tab.tab_id, **public(entry), "url": entry["_full_url"]}
    out.pop("seq", None)
    out["request_headers"] = _headers_dict(entry.get("_request_headers", []))
    if "_response_headers" in entry:
        out["response_headers"] = _headers_dict(entry["_response_headers"])
    if entry.get("_protocol"):
        out["protocol"] = entry["_protocol"]
    if entry.get("_remote"):
        out["remote_address"] = entry["_remote"]
    timing = phases(entry)
    if timing is not None:
        out["timing_ms"] = timing
    redirects = [{"url": h["_full_url"], "status": h.get("status")}
                 for h in hops if h["state"] == "redirected"]
    if redirects:
        out["redirects"] = redirects
    limit = params["max_body"]
    got = await _response_body(ctx, tab, entry)
    if not isinstance(got, str):  # the body's own size, decoded (transfer_bytes: the wire's)
        out["bytes"] = len(got[0])
    if params["body"]:
        out.update(_body_fields(ctx, tab, entry["id"], entry.get("mime_type", ""), got,
                                limit, "body_"))
    if params["request_body"]:
        mime = _headers_dict([(k.lower(), v) for k, v in entry.get("_request_headers", [])])
        got = await _request_body(ctx, tab, entry)
        out.update(_body_fields(ctx, tab, entry["id"] + "-request",
                                mime.get("content-type", ""), got, limit, "request_body_"))
    return out


# -- HAR -----------------------------------------------------------------------------------


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _http_version(protocol: str | None) -> str:
    p = (protocol or "").lower()
    return {"h2": "HTTP/2.0", "h3": "HTTP/3.0", "http/1.0": "HTTP/1.0"}.get(p, "HTTP/1.1")


def har_entry(entry: dict[str, Any], content: dict[str, Any] | None = None,
              post_data: str | None = None) -> dict[str, Any]:
    """One buffer entry as a HAR 1.2 entry (a request with no response: status 0)."""
    url = entry["_full_url"]
    timing = phases(entry) or {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
                               "send": 0, "wait": 0, "receive": 0}
    total = entry.get("duration_ms")
    if total is None:
        total = sum(v for k, v in timing.items() if v > 0 and k != "ssl")
    version = _http_version(entry.get("_protocol"))
    req_headers = entry.get("_request_headers", [])
    request: dict[str, Any] = {
        "method": entry["method"], "url": url, "httpVersion": version, "cookies": [],
        "headers": [{"name": k, "value": v} for k, v in req_headers],
        "queryString": [{"name": k, "value": v}
                        for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)],
        "headersSize": -1, "bodySize": -1}
    if post_data is not None:
        mime = next((v for k, v in req_headers if k.lower() == "content-type"), "")
        request["postData"] = {"mimeType": mime, "text": post_data}
        request["bodySize"] = len(post_data.encode())
    resp_headers = entry.get("_response_headers", [])
    location = next((v for k, v in resp_headers if k.lower() == "location"), "")
    response = {
        "status": int(entry.get("status") or 0), "statusText": entry.get("status_text", ""),
        "httpVersion": version, "cookies": [],
        "headers": [{"name": k, "value": v} for k, v in resp_headers],
        "content": content or {"size": 0, "mimeType": entry.get("mime_type") or
                               "x-unknown"},
        "redirectURL": location, "headersSize": -1,
        "bodySize": content["size"] if content else -1,
        "_transferSize": int(entry.get("transfer_bytes", -1))}
    out: dict[str, Any] = {
        "startedDateTime": _iso(entry["time"]), "time": round(float(total), 3),
        "request": request, "response": response, "cache": {}, "timings": timing,
        "_resourceType": entry.get("type", "Other").lower()}
    if entry.get("_remote"):
        out["serverIPAddress"] = entry["_remote"].strip("[]").rsplit(":", 1)[0] \
            if entry["_remote"].count(":") == 1 else entry["_remote"]
    if entry.get("error"):
        out["_error"] = entry["error"]
    return out


@implements("network_har")
async def network_har(ctx: ToolContext, params: NetworkHarParams) -> dict[str, Any]:
    path = Path(params["path"])
    check_writable(path)
    gate = asyncio.Semaphore(HAR_READS_AT_ONCE)

    async def one(tab: Tab, entry: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        content = post = None
        async with gate:
            if params["content"] and not tab.gone:
                got = await _response_body(ctx, tab, entry)
                if not isinstance(got, str):
                    content = _har_content(entry, got)
            if entry.get("_has_post_data") and not tab.gone:
                sent = await _request_body(ctx, tab, entry)
                if not isinstance(sent, str):
                    post = sent[0].decode(errors="replace")
        return har_entry(entry, content, post), content is not None

    made = await asyncio.gather(*(one(tab, entry) for tab in list(ctx.session.tabs.values())
                                  for entry in tab.buffers.network.entries()))
    entries = sorted((e for e, _ in made), key=lambda e: e["startedDateTime"])
    bodies = sum(1 for _, with_body in made if with_body)
    har = {"log": {"version": "1.2",
                   "creator": {"name": "BrowserSkill", "version": __version__},
                   "pages": [], "entries": entries}}
    data = vault.scrub_bytes(json.dumps(har, ensure_ascii=False, indent=1).encode())
    await user_files.write_file(path, data, private=True)
    out: dict[str, Any] = {"path": str(path), "entries": len(entries), "bytes": len(data)}
    if params["content"]:
        out["bodies"] = bodies
    return out


def _har_content(entry: dict[str, Any], got: tuple[bytes, bool]) -> dict[str, Any]:
    data, _ = got
    mime = entry.get("mime_type") or "x-unknown"
    content: dict[str, Any] = {"size": len(data), "mimeType": mime}
    try:
        if not is_text(mime):
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "binary type")
        content["text"] = data.decode()
    except UnicodeDecodeError:
        content["text"] = base64.b64encode(data).decode()
        content["encoding"] = "base64"
    return content
