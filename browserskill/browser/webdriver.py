"""The few WebDriver HTTP calls a Selenium Grid 4 session needs: wait for a free slot,
new session (its DevTools proxy, `se:cdp`), is it alive (and if not, why), delete it.

Every call has a deadline of its own: a Grid that does not answer is an error, never a
hang, and every error names its cause (`cause`). Nothing here knows sessions or CDP.

Where the hub no longer answers for a session, `check` asks the session's node directly
(its URI is journaled with the session) and the hub's /status, to tell apart a session
the Grid ended, a node that is gone (and the session with it), a session the hub forgot
(it restarted) while the node still runs it, and a pause a retry can outlast
(docs/scaling-out.md, "what survives what").
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import httpx

# Selenium Grid answers 500 to a new-session request sent as plain `application/json`.
_JSON = {"Content-Type": "application/json; charset=utf-8"}
_SLOT_POLL_S = 0.25  # how often a wait for a free slot asks /status again


class GridError(Exception):
    """The Grid refused, failed or did not answer in time."""


class NoFreeSlot(GridError):
    """Every slot that could run the session stayed busy until the deadline."""


class Verdict(NamedTuple):
    """What `check` learned of a session: `state` is ALIVE, ENDED, NODE_LOST or FORGOTTEN;
    `why` the evidence, for the error message."""
    state: str
    why: str = ""


ALIVE = "alive"
ENDED = "ended"  # the Grid ended it (deleted, or idle past the node's --session-timeout)
NODE_LOST = "node_lost"  # its node is gone: the hub can't reach it, or marks it down/absent
FORGOTTEN = "forgotten"  # the hub does not know it (it restarted); its node still runs it


def cause(e: BaseException, timeout: float | None = None) -> str:
    """An exception as a message's cause: its type and text, a timeout named as one
    (httpx's timeouts have no text of their own)."""
    if isinstance(e, httpx.TimeoutException | TimeoutError):
        within = f" within {timeout:g} s" if timeout else ""
        return f"no answer{within} ({type(e).__name__})"
    text = str(e).strip()
    said = f"{type(e).__name__}: {text}" if text else type(e).__name__
    errno = _errno(e)  # async httpx says only "All connection attempts failed"
    if errno is not None and os.strerror(errno) not in said:
        said += f" ({os.strerror(errno)})"
    return said


def _errno(e: BaseException) -> int | None:
    """The OS error under an exception's chain (connection refused, no route to host)."""
    seen: BaseException | None = e
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, OSError) and seen.errno is not None:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    return None


def _said(answer: httpx.Response) -> str:
    """A WebDriver error answer in a line: its status, error and message's first line."""
    try:
        value = answer.json()["value"]
        said = f"{value.get('error', '')}: {str(value.get('message', '')).splitlines()[0]}"
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        said = answer.text.strip().splitlines()[0] if answer.text.strip() else ""
    return f"HTTP {answer.status_code}" + (f" ({said[:300]})" if said.strip(": ") else "")


@dataclass
class GridSession:
    grid_url: str
    webdriver_id: str
    cdp_url: str  # the Grid's DevTools proxy for this session: ws://…/session/ID/se/cdp
    node: str | None = None  # the node's URI, where /status says


def _url(grid_url: str, path: str) -> str:
    return grid_url.rstrip("/") + path


async def status(client: httpx.AsyncClient, grid_url: str, timeout: float) -> dict[str, Any]:
    try:
        answer = await client.get(_url(grid_url, "/status"), timeout=timeout)
        answer.raise_for_status()
        value: dict[str, Any] = answer.json()["value"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
        raise GridError(f"no Selenium Grid answers at {grid_url}/status: "
                        f"{cause(e, timeout)}") from None
    return value


def free_slots(value: dict[str, Any], browser_name: str = "chrome") -> int:
    """Free slots for `browser_name` on the nodes that take sessions (Grid /status)."""
    free = 0
    for node in value.get("nodes", []):
        if node.get("availability", "UP") != "UP":
            continue
        for slot in node.get("slots", []):
            stereotype = slot.get("stereotype", {})
            if slot.get("session") is None and stereotype.get("browserName") == browser_name:
                free += 1
    return free


def node_of(value: dict[str, Any], webdriver_id: str) -> str | None:
    for node in value.get("nodes", []):
        for slot in node.get("slots", []):
            if (slot.get("session") or {}).get("sessionId") == webdriver_id:
                return str(node.get("uri"))
    return None


async def new_session(client: httpx.AsyncClient, grid_url: str, chrome_args: list[str],
                      deadline: float) -> GridSession:
    """A WebDriver session of its own, once a slot is free; `deadline` is a loop time.

    The slot is awaited by polling /status rather than in the Grid's own queue: a request
    left queued after its caller gave up would later start a browser nobody owns."""
    loop = asyncio.get_running_loop()

    def left() -> float:
        return deadline - loop.time()

    while True:
        value = await status(client, grid_url, max(0.5, min(5.0, left())))
        if free_slots(value) > 0:
            break
        if left() <= _SLOT_POLL_S:
            raise NoFreeSlot(f"no free chrome slot on the Grid at {grid_url} before the "
                             "deadline")
        await asyncio.sleep(_SLOT_POLL_S)
    body = {"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {"args": chrome_args},
    }}}
    try:
        answer = await client.post(_url(grid_url, "/session"), json=body, headers=_JSON,
                                   timeout=max(1.0, left()))
    except httpx.TimeoutException:
        raise NoFreeSlot(f"the Grid at {grid_url} did not start a session before the "
                         "deadline") from None
    except httpx.HTTPError as e:
        raise GridError(f"new session at {grid_url}: {cause(e)}") from None
    try:
        value = answer.json()["value"]
    except (ValueError, KeyError, TypeError):
        raise GridError(f"new session at {grid_url}: HTTP {answer.status_code}, not "
                        "WebDriver's answer") from None
    if answer.status_code != 200:
        raise GridError(f"the Grid at {grid_url} refused a new session: "
                        f"{value.get('error')}: {str(value.get('message', ''))[:300]}")
    webdriver_id = str(value["sessionId"])
    cdp_url = value.get("capabilities", {}).get("se:cdp")
    if not cdp_url:
        await delete_session(client, grid_url, webdriver_id)
        raise GridError(f"the Grid at {grid_url} gave no DevTools proxy (se:cdp) for its "
                        "session: bsk needs a Chromium-family node")
    node = None
    try:
        node = node_of(await status(client, grid_url, 2.0), webdriver_id)
    except GridError:
        pass  # only shown in `session list`
    return GridSession(grid_url, webdriver_id, str(cdp_url), node)


def node_state(value: dict[str, Any], node: str) -> str | None:
    """The node's availability in the hub's /status (UP, DOWN, DRAINING), or None when
    the hub no longer lists it."""
    for entry in value.get("nodes", []):
        if str(entry.get("uri")).rstrip("/") == node.rstrip("/"):
            return str(entry.get("availability", "UP"))
    return None


class Reply(NamedTuple):
    """One WebDriver answer, or why there was none (for `judge`)."""
    status: int | None  # None: no answer
    said: str  # "HTTP 500 (…)", or the cause of no answer
    timed_out: bool = False


async def _ask(client: httpx.AsyncClient, url: str, timeout: float) -> Reply:
    try:
        answer = await client.get(url, timeout=timeout)
    except httpx.HTTPError as e:
        return Reply(None, cause(e, timeout), isinstance(e, httpx.TimeoutException))
    return Reply(answer.status_code, _said(answer))


def judge(hub: Reply, node: str | None, on_node: Reply | None,
          availability: str | None) -> Verdict:
    """Where the hub did not say yes: what the node's own answer (`on_node`, None if not
    asked) and its `availability` in the hub's /status (None: not listed; "?": /status
    unknown) make of the session. GridError where a retry may still help. I/O-free."""
    if hub.status == 200:
        return Verdict(ALIVE)
    hub_said = f"the hub {'answered ' if hub.status else ''}{hub.said}"  # or "at URL: …"
    if node is None or on_node is None:
        if hub.status == 404:
            return Verdict(ENDED, hub_said)
        raise GridError(f"{hub_said}; the session's node is not known")
    node_said = f"its node {node}{' answered ' if on_node.status else ': '}{on_node.said}"
    if on_node.status == 200:
        if hub.status == 404:  # the hub restarted, and with it its map of sessions
            return Verdict(FORGOTTEN, f"{hub_said}, while {node_said}: it still runs it")
        raise GridError(f"{hub_said}, while {node_said}: it still has the session")
    if on_node.status == 404:
        return Verdict(ENDED, f"{hub_said}, and {node_said}")
    marked = {None: "; the hub's /status no longer lists the node",
              "DOWN": "; the hub's /status marks the node DOWN"}.get(availability, "")
    evidence = f"{hub_said}; {node_said}{marked}"
    if availability in (None, "DOWN"):  # the hub has given up on the node
        return Verdict(NODE_LOST, evidence)
    if on_node.status is None and not on_node.timed_out and hub.status not in (None, 404):
        # Nothing listens where the node was while the hub can't reach it either.
        return Verdict(NODE_LOST, evidence)
    if on_node.status is None and not on_node.timed_out and hub.status == 404:
        return Verdict(ENDED, evidence)  # the hub says it ended; the node is out of reach
    if on_node.timed_out:  # frozen or cut off, not gone: it may answer again
        raise GridError(f"{evidence} (the node is frozen or cut off)")
    raise GridError(evidence)


async def check(client: httpx.AsyncClient, session: GridSession,
                timeout: float) -> Verdict:
    """Whether the Grid still has the session (a WebDriver call through the hub, which
    also resets the node's idle timer), and if not, why (`judge`). GridError when no one
    can say yet: the hub, or the node behind it, does not answer.

    `timeout` bounds the whole check: half for the hub, half for asking the node and the
    hub's /status (at once) where the hub's answer was not a yes."""
    step = timeout / 2
    path = f"/session/{session.webdriver_id}/timeouts"
    hub = await _ask(client, _url(session.grid_url, path), step)
    if hub.status == 200:
        return Verdict(ALIVE)
    if hub.status is None:
        hub = hub._replace(said=f"at {session.grid_url}: {hub.said}")

    async def grid_status() -> dict[str, Any] | None:
        try:
            return await status(client, session.grid_url, step)
        except GridError:
            return None

    async def on_node(node: str | None) -> Reply | None:
        return await _ask(client, _url(node, path), step) if node else None

    value, node_reply = await asyncio.gather(grid_status(), on_node(session.node))
    if session.node is None and value is not None:
        session.node = node_of(value, session.webdriver_id)  # /status failed at its start
        node_reply = await on_node(session.node)
    availability = "?" if value is None or session.node is None \
        else node_state(value, session.node)
    return judge(hub, session.node, node_reply, availability)


async def _delete(client: httpx.AsyncClient, base: str, webdriver_id: str,
                  timeout: float) -> Reply:
    try:
        answer = await client.delete(_url(base, f"/session/{webdriver_id}"), timeout=timeout)
    except httpx.HTTPError as e:
        return Reply(None, cause(e, timeout), isinstance(e, httpx.TimeoutException))
    return Reply(answer.status_code, _said(answer))


async def delete_session(client: httpx.AsyncClient, grid_url: str, webdriver_id: str,
                         timeout: float = 3.0) -> bool:
    """Release the slot; True if the Grid said it did. Best effort: a Grid that can't be
    reached ends it on its own (the node's idle --session-timeout)."""
    return (await _delete(client, grid_url, webdriver_id, timeout)).status == 200


async def release(client: httpx.AsyncClient, session: GridSession,
                  timeout: float = 3.0) -> bool:
    """Delete the session through the hub, else on its node directly: a hub that forgot
    the session (it restarted) or is down can't route the delete, and the node keeps the
    slot taken until its idle timeout otherwise. A hub that is slow to answer is left to
    finish the delete it was sent. True if hub or node said it deleted it."""
    hub = await _delete(client, session.grid_url, session.webdriver_id, timeout)
    if hub.status == 200 or hub.timed_out or session.node is None:
        return hub.status == 200
    on_node = await _delete(client, session.node, session.webdriver_id, timeout)
    return on_node.status == 200
