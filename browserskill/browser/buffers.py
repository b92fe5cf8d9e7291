"""Per-tab ring buffers of console messages and network requests, filled from CDP events.

Every entry carries a sequence number from a counter of its own buffer; a reader asks
for entries after a cursor (`since`) and gets the next cursor back. A network entry
gets a new sequence number each time its request changes state (sent, answered,
finished or failed), so polling with the cursor sees a pending request again once it
ends. The oldest entries fall off when a buffer is full; `dropped` counts them.

The tab enables the domains these events come from (`DOMAINS`) on its own session and
on each out-of-process iframe's session, and calls `on_event` for every event.

A network entry's detail (headers, timing, where its body can be asked for) is kept in
its `_`-prefixed fields, left out of listings; bodies are never copied here: Chromium
keeps them (bounded by `DOMAINS`' buffer sizes) until `network show --body` asks.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

BODY_BUFFER_BYTES = 20_000_000
BODY_MAX_BYTES = 5_000_000
MAX_HEADERS_BYTES = 64_000  # a request's or response's headers, kept for `network show`

# Sent once per CDP session of a tab (the page and each attached iframe).
DOMAINS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Runtime.enable", {}),
    ("Log.enable", {}),
    # Chromium keeps the bodies (read lazily by `network show --body`): up to this much
    # per target, the oldest evicted first; a larger single body is not kept at all.
    ("Network.enable", {"maxTotalBufferSize": BODY_BUFFER_BYTES,
                        "maxResourceBufferSize": BODY_MAX_BYTES}),
)

CONSOLE_CAPACITY = 1000
NETWORK_CAPACITY = 1000
MAX_TEXT = 4000
MAX_URL = 2000
MAX_FULL_URL = 100_000  # `network show` and HAR; listings cut at MAX_URL


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


BLOCKED_ERROR = "net::ERR_BLOCKED_BY_CLIENT"  # a request the session's policy refused


class Ring:
    """Entries keyed by identity, ordered by their latest sequence number."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.seq = 0
        self.dropped = 0  # entries that fell off the front
        self.dropped_through = 0  # the highest sequence number that fell off
        self._items: OrderedDict[Hashable, dict[str, Any]] = OrderedDict()

    def put(self, key: Hashable, entry: dict[str, Any]) -> dict[str, Any]:
        """Add or update an entry; it moves to the end with a new sequence number."""
        self.seq += 1
        entry["seq"] = self.seq
        self._items.pop(key, None)
        self._items[key] = entry
        while len(self._items) > self.capacity:
            _, old = self._items.popitem(last=False)
            self.dropped += 1
            self.dropped_through = old["seq"]
        return entry

    def get(self, key: Hashable) -> dict[str, Any] | None:
        return self._items.get(key)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry held, oldest (by sequence number) first."""
        return list(self._items.values())

    def read(self, since: int | None, limit: int) -> dict[str, Any]:
        """Entries with seq > since, oldest first, at most `limit`, and the next cursor.

        Without a cursor: the latest `limit` entries (what a first look wants)."""
        if since is None:
            tail = list(self._items.values())[-limit:]
            first = tail[0]["seq"] if tail else self.seq + 1
            since = first - 1
            out = [dict(e) for e in tail]
            more = False
        else:
            out = []
            for entry in self._items.values():
                if entry["seq"] > since:
                    out.append(dict(entry))
                    if len(out) > limit:
                        break
            more = len(out) > limit
            out = out[:limit]
        return {
            "entries": out,
            # Nothing newer: the buffer's own counter (also recovers a cursor from elsewhere).
            "next_since": out[-1]["seq"] if out else self.seq,
            "more": more,
            # Some entries after `since` fell off because the buffer was full.
            "missed": self.dropped_through > since,
        }


class TabBuffers:
    def __init__(self, main_session_id: str) -> None:
        self.main_session_id = main_session_id
        self.console = Ring(CONSOLE_CAPACITY)
        self.network = Ring(NETWORK_CAPACITY)
        self.inflight: dict[Hashable, str] = {}  # request key -> loader id
        self.network_activity = 0  # bumps on every request start or end
        self.last_network_activity = time.monotonic()
        self._request_names: dict[Hashable, str] = {}
        self._request_seq = 0
        self._redirects: dict[Hashable, int] = {}
        self._routed: dict[Hashable, str] = {}  # routed before their request was seen
        # Refused by the session's policy (browser/routing.py) before their request was
        # seen: the entry it makes carries the mark (a marked entry in `network`).
        self._blocked: dict[Hashable, str] = {}
        self.blocked_count = 0  # requests the policy refused in this tab so far
        # Main-frame navigations the policy refused so far, and the last one's (url, why):
        # an input whose navigation was refused fails naming it (tools/input.py).
        self.navigations_blocked = 0
        self.last_navigation_blocked: tuple[str, str] = ("", "")

    @property
    def requests_seen(self) -> int:
        """Requests started so far; an entry's id is `r` and its number in this count."""
        return self._request_seq

    def on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        handler = _HANDLERS.get(method)
        if handler is not None:
            handler(self, session_id, params)

    # -- console ---------------------------------------------------------------------

    def _console_api(self, session_id: str, p: dict[str, Any]) -> None:
        text = " ".join(_remote_text(a) for a in p.get("args", ()))
        frame = (p.get("stackTrace") or {}).get("callFrames") or [{}]
        self._console(session_id, p.get("type", "log"), "console", text, frame[0])

    def _exception(self, session_id: str, p: dict[str, Any]) -> None:
        d = p.get("exceptionDetails", {})
        exc = d.get("exception") or {}
        text = exc.get("description") or d.get("text", "exception")
        self._console(session_id, "error", "exception", text,
                      {"url": d.get("url", ""), "lineNumber": d.get("lineNumber")})

    def _log_entry(self, session_id: str, p: dict[str, Any]) -> None:
        e = p.get("entry", {})
        level = {"verbose": "debug"}.get(e.get("level", "info"), e.get("level", "info"))
        self._console(session_id, level, e.get("source", "other"), e.get("text", ""),
                      {"url": e.get("url", ""), "lineNumber": e.get("lineNumber")})

    def _console(self, session_id: str, level: str, source: str, text: str,
                 where: dict[str, Any]) -> None:
        entry: dict[str, Any] = {"time": time.time(), "level": level, "source": source,
                                 "text": _cut(text, MAX_TEXT)}
        if where.get("url"):
            entry["url"] = _cut(where["url"], MAX_URL)
            if where.get("lineNumber") is not None:
                entry["line"] = where["lineNumber"] + 1
        if session_id != self.main_session_id:
            entry["iframe"] = True
        self.console.put(object(), entry)

    # -- network ---------------------------------------------------------------------

    def _touch(self) -> None:
        self.network_activity += 1
        self.last_network_activity = time.monotonic()

    def _request(self, session_id: str, p: dict[str, Any]) -> None:
        key = (session_id, p["requestId"])
        if p.get("redirectResponse"):
            prior = self.network.get(key)
            if prior is not None:  # the redirect ends the earlier hop; keep it as its own entry
                n = self._redirects[key] = self._redirects.get(key, 0) + 1
                hop = {**prior, **_response_fields(p["redirectResponse"]), "state": "redirected",
                       "_end": p.get("timestamp")}
                self.network.put((key, n), hop)
        name = self._request_names.get(key)
        if name is None:
            self._request_seq += 1
            name = self._request_names[key] = f"r{self._request_seq}"
        req = p.get("request", {})
        entry = {"id": name, "method": req.get("method", "GET"),
                 "url": _cut(req.get("url", ""), MAX_URL), "type": p.get("type", "Other"),
                 "state": "pending", "time": p.get("wallTime") or time.time(),
                 "_start": p.get("timestamp"), "_session": session_id,
                 "_request_id": p["requestId"], "_full_url": _cut(req.get("url", ""), MAX_FULL_URL),
                 "_request_headers": _headers(req.get("headers")),
                 "_has_post_data": bool(req.get("hasPostData") or req.get("postData"))}
        if key in self._routed:
            entry["route"] = self._routed.pop(key)
        if key in self._blocked:
            entry["blocked_by_policy"] = self._blocked.pop(key)
        if session_id != self.main_session_id:
            entry["iframe"] = True
        self.network.put(key, entry)
        self.inflight[key] = p.get("loaderId", "")
        self._touch()

    def routed(self, session_id: str, request_id: str | None, pattern: str) -> None:
        """A route answered this request (`request_id`: its Network id)."""
        if request_id is None:
            return
        key = (session_id, request_id)
        entry = self.network.get(key)
        if entry is not None:
            entry["route"] = pattern
        else:
            self._routed[key] = pattern
            while len(self._routed) > 100:
                del self._routed[next(iter(self._routed))]

    def blocked(self, session_id: str, request_id: str | None, url: str, kind: str,
                reason: str) -> None:
        """The session's policy refused this request (`request_id`: its Network id, None
        for a target with no Network domain of ours, such as a worker): its entry is
        marked `blocked_by_policy` with the reason, made here if Network has not told
        of it (yet)."""
        self.blocked_count += 1
        key = (session_id, request_id or f"blocked-{self.blocked_count}")
        entry = self.network.get(key)
        if entry is not None:
            entry["blocked_by_policy"] = reason
            return
        if request_id is not None:  # its requestWillBeSent, if it comes, keeps the mark
            self._blocked[key] = reason
            while len(self._blocked) > 100:
                del self._blocked[next(iter(self._blocked))]
        self._request_seq += 1
        entry = {"id": f"r{self._request_seq}", "method": "GET", "url": _cut(url, MAX_URL),
                 "type": kind, "state": "failed", "error": BLOCKED_ERROR,
                 "blocked_by_policy": reason, "time": time.time(), "_session": session_id,
                 "_request_id": request_id or "", "_full_url": _cut(url, MAX_FULL_URL),
                 "_request_headers": [], "_has_post_data": False}
        if session_id != self.main_session_id:
            entry["iframe"] = True
        self.network.put(key, entry)

    def policy_block_of(self, request_id: str) -> str | None:
        """Why the policy refused the main frame's request, if it did."""
        key = (self.main_session_id, request_id)
        entry = self.network.get(key)
        return entry.get("blocked_by_policy") if entry is not None else self._blocked.get(key)

    def route_of(self, request_id: str) -> str | None:
        """The pattern of the route that answered the main frame's request, if one did."""
        key = (self.main_session_id, request_id)
        entry = self.network.get(key)
        return entry.get("route") if entry is not None else self._routed.get(key)

    def _response(self, session_id: str, p: dict[str, Any]) -> None:
        entry = self.network.get((session_id, p["requestId"]))
        if entry is not None:
            entry.update(_response_fields(p.get("response", {})))
            self.network.put((session_id, p["requestId"]), entry)

    def _finished(self, session_id: str, p: dict[str, Any]) -> None:
        key = (session_id, p["requestId"])
        entry = self.network.get(key)
        if entry is not None and entry.get("blocked_by_policy"):
            # What "finished" is Chromium's own error page for the refused document.
            entry.update(state="failed", error=BLOCKED_ERROR)
            self._end(key, entry, p)
        elif entry is not None:
            entry["state"] = "finished"
            # What came over the network, headers included (0: from a cache) — not the
            # body's size, which `network show` gives as `bytes`.
            entry["transfer_bytes"] = int(p.get("encodedDataLength", 0))
            self._end(key, entry, p)
        self._done(key)

    def _failed(self, session_id: str, p: dict[str, Any]) -> None:
        key = (session_id, p["requestId"])
        entry = self.network.get(key)
        if entry is not None:
            entry["state"] = "failed"
            entry["error"] = BLOCKED_ERROR if entry.get("blocked_by_policy") else \
                p.get("blockedReason") or p.get("errorText", "failed")
            if p.get("canceled"):
                entry["canceled"] = True
            self._end(key, entry, p)
        self._done(key)

    def _end(self, key: Hashable, entry: dict[str, Any], p: dict[str, Any]) -> None:
        start, end = entry.get("_start"), p.get("timestamp")
        entry["_end"] = end
        if start is not None and end is not None:
            entry["duration_ms"] = round((end - start) * 1000, 1)
        self.network.put(key, entry)

    def _done(self, key: Hashable) -> None:
        self.inflight.pop(key, None)
        self._request_names.pop(key, None)
        self._redirects.pop(key, None)
        self._touch()

    def _frame_navigated(self, session_id: str, p: dict[str, Any]) -> None:
        frame = p.get("frame", {})
        if frame.get("parentId") or session_id != self.main_session_id:
            return
        # Requests of the replaced document will never be waited on again.
        loader = frame.get("loaderId")
        for key, owner in list(self.inflight.items()):
            if owner != loader:
                del self.inflight[key]
                self._request_names.pop(key, None)
                self._redirects.pop(key, None)
        self._touch()

    def _detached(self, session_id: str, p: dict[str, Any]) -> None:
        gone = p.get("sessionId")
        for key in [k for k in self.inflight if isinstance(k, tuple) and k[0] == gone]:
            del self.inflight[key]
        self._touch()

    # -- reading ---------------------------------------------------------------------

    def read_console(self, since: int | None, limit: int) -> dict[str, Any]:
        return self.console.read(since, limit)

    def read_network(self, since: int | None, limit: int) -> dict[str, Any]:
        out = self.network.read(since, limit)
        out["entries"] = [public(e) for e in out["entries"]]
        out["in_flight"] = len(self.inflight)
        return out

    def document_status(self, loader_id: str) -> int | None:
        """The HTTP status the main frame's document `loader_id` came with (its request
        id is its loader id); None if not seen (a data: or about: page, a buffer full)."""
        entry = self.network.get((self.main_session_id, loader_id))
        return entry.get("status") if entry is not None else None

    def find_request(self, request_id: str) -> list[dict[str, Any]]:
        """The buffer's entries of one request id (r12), oldest first: its redirect hops,
        then the request itself."""
        return [e for e in self.network.entries() if e.get("id") == request_id]


def public(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as listings show it (without its detail fields)."""
    return {k: v for k, v in entry.items() if not k.startswith("_")}


def _headers(raw: dict[str, Any] | None) -> list[tuple[str, str]]:
    """CDP's header object as (name, value) pairs (values joined by newlines split),
    bounded."""
    out: list[tuple[str, str]] = []
    size = 0
    for name, value in (raw or {}).items():
        for one in str(value).split("\n"):
            size += len(name) + len(one)
            if size > MAX_HEADERS_BYTES:
                return out
            out.append((name, one))
    return out


def _response_fields(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": r.get("status"), "status_text": r.get("statusText", ""),
                           "mime_type": r.get("mimeType", ""),
                           "_response_headers": _headers(r.get("headers")),
                           "_timing": r.get("timing"), "_protocol": r.get("protocol"),
                           "_remote": r.get("remoteIPAddress")}
    if r.get("requestHeaders"):  # what really went out, when Chromium says
        out["_request_headers"] = _headers(r["requestHeaders"])
    if r.get("fromDiskCache") or r.get("fromPrefetchCache") or r.get("fromServiceWorker"):
        out["from_cache"] = True
    return out


def _remote_text(arg: dict[str, Any]) -> str:
    """A console argument as text: primitives by value, objects by their description."""
    if "value" in arg:
        value = arg["value"]
        return value if isinstance(value, str) else _json(value)
    if "unserializableValue" in arg:
        return str(arg["unserializableValue"])
    preview = arg.get("preview")
    if preview and preview.get("properties") is not None:
        props = ", ".join(f"{p['name']}: {p.get('value', '…')}" for p in preview["properties"])
        more = ", …" if preview.get("overflow") else ""
        if preview.get("subtype") == "array":
            return "[" + ", ".join(p.get("value", "…") for p in preview["properties"]) + more + "]"
        return "{" + props + more + "}"
    return str(arg.get("description") or arg.get("type", ""))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_HANDLERS = {
    "Runtime.consoleAPICalled": TabBuffers._console_api,
    "Runtime.exceptionThrown": TabBuffers._exception,
    "Log.entryAdded": TabBuffers._log_entry,
    "Network.requestWillBeSent": TabBuffers._request,
    "Network.responseReceived": TabBuffers._response,
    "Network.loadingFinished": TabBuffers._finished,
    "Network.loadingFailed": TabBuffers._failed,
    "Page.frameNavigated": TabBuffers._frame_navigated,
    "Target.detachedFromTarget": TabBuffers._detached,
}
