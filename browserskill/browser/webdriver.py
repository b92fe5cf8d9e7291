"""The few WebDriver HTTP calls a Selenium Grid 4 session needs: wait for a free slot,
new session (its DevTools proxy, `se:cdp`), is it alive, delete it.

Every call has a deadline of its own: a Grid that does not answer is an error, never a
hang. Nothing here knows sessions or CDP.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

# Selenium Grid answers 500 to a new-session request sent as plain `application/json`.
_JSON = {"Content-Type": "application/json; charset=utf-8"}
_SLOT_POLL_S = 0.25  # how often a wait for a free slot asks /status again


class GridError(Exception):
    """The Grid refused, failed or did not answer in time."""


class NoFreeSlot(GridError):
    """Every slot that could run the session stayed busy until the deadline."""


class SessionGone(GridError):
    """The Grid no longer knows this WebDriver session (deleted, or idle past the node's
    --session-timeout)."""


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
                        f"{e or type(e).__name__}") from None
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
        raise GridError(f"new session at {grid_url}: {e or type(e).__name__}") from None
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


async def alive(client: httpx.AsyncClient, session: GridSession, timeout: float) -> bool:
    """True if the Grid still has the session (a WebDriver call also resets the node's
    idle timer); False if it ended it; GridError if the Grid does not say."""
    try:
        answer = await client.get(
            _url(session.grid_url, f"/session/{session.webdriver_id}/timeouts"),
            timeout=timeout)
    except httpx.HTTPError as e:
        raise GridError(f"the Grid at {session.grid_url}: {e or type(e).__name__}") from None
    if answer.status_code == 200:
        return True
    if answer.status_code == 404:
        return False
    raise GridError(f"the Grid at {session.grid_url} answered HTTP {answer.status_code}")


async def delete_session(client: httpx.AsyncClient, grid_url: str, webdriver_id: str,
                         timeout: float = 3.0) -> None:
    """Release the slot. Best effort: a Grid that can't be reached ends it on its own
    (the node's idle --session-timeout)."""
    try:
        await client.delete(_url(grid_url, f"/session/{webdriver_id}"), timeout=timeout)
    except httpx.HTTPError:
        pass
