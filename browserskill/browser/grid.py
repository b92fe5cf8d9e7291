"""`GridPlacement`: a session on a Selenium Grid 4 (`session start --grid URL`).

The session gets a WebDriver session of its own (bsk's Chromium switches in
`goog:chromeOptions`) and drives it through the Grid's DevTools proxy (`se:cdp`) exactly
as a `RemotePlacement`. Its life on the Grid (docs/design.md, placement):

- the slot is awaited up to the call's deadline, then `browser_unavailable` (retry-safe:
  nothing was started);
- a WebDriver call every `KEEP_ALIVE_S` keeps the node's idle `--session-timeout` from
  ending the session while it lives, and notices when the Grid ended it anyway (the
  Grid leaves the CDP socket open and silent then: the link's probe notices that too);
- a lost link is re-made on the next call if the Grid still has the session; where the
  hub says no, `webdriver.check` asks the node and /status why, and the answer names it:
  ended by the Grid, its node gone, or forgotten by a hub that restarted (then the
  session is deleted on its node at once, so the slot frees). Those are lasting: the
  answer says to stop the session and start another, and is not retry-safe;
- `session stop`, idle exit and `daemon stop` delete the WebDriver session (through the
  hub, else on its node: the slot is free again); the WebDriver id, endpoints and node
  are journaled, so a restarted daemon re-adopts a session the Grid still has, and
  deletes one it can't use.

Invariant: a WebDriver session this placement created is deleted when its session ends
(on its node where the hub forgot it), or left to the node's idle timeout only when
neither hub nor node can be reached.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx

from browserskill.base.errors import LASTING, BskError
from browserskill.browser import launcher, webdriver
from browserskill.browser.launcher import redacted
from browserskill.browser.manager import BrowserManager
from browserskill.browser.remote import RemotePlacement
from browserskill.browser.tab import Tab

log = logging.getLogger(__name__)

# Well below Selenium's default idle --session-timeout (300 s); any WebDriver call resets it.
KEEP_ALIVE_S = 30.0


def unavailable(message: str, grid_url: str) -> BskError:
    return BskError("browser_unavailable", message,
                    hint=f"call again when the Grid at {redacted(grid_url)} has a free chrome "
                         "slot (its /status lists them), or raise --timeout to wait longer",
                    details={"reason": "grid_full", "grid": redacted(grid_url)})


class GridPlacement(RemotePlacement):
    placement = "grid"

    def __init__(self, manager: BrowserManager, grid: webdriver.GridSession, *,
                 context_id: str | None = None,
                 window_size: tuple[int, int] | None = None) -> None:
        super().__init__(manager, context_id=context_id, window_size=window_size)
        self.grid = grid
        self._http = httpx.AsyncClient()
        # What ended the WebDriver session for good (webdriver.check), once known.
        self.gone: webdriver.Verdict | None = None
        self._released = False
        self._checking = asyncio.Lock()  # one check (and release) at a time
        self._keeper = asyncio.get_running_loop().create_task(
            self._keep_alive(), name=f"grid-keep-alive-{grid.webdriver_id[:8]}")

    @classmethod
    async def obtain(cls, grid_url: str, state_dir: Path, *, isolated: bool,
                     deadline: float, headless: bool = True) -> GridPlacement:
        """`deadline`: loop time by which the Grid must have given a slot."""
        async with httpx.AsyncClient() as http:
            try:
                grid = await webdriver.new_session(
                    http, grid_url, launcher.switches(headless=headless), deadline)
            except webdriver.NoFreeSlot as e:
                raise unavailable(str(e), grid_url) from None
            except webdriver.GridError as e:
                raise BskError("browser_unavailable", str(e),
                               hint=f"check that a Selenium Grid 4 runs at "
                                    f"{redacted(grid_url)} with chrome nodes",
                               details={"reason": "grid_error"}) from None
        manager = cls.attach(grid.cdp_url, state_dir)
        placement = None
        try:
            await manager.ensure()
            placement = cls(manager, grid)
            if isolated:
                placement.context_id = await manager.create_context()
            return placement
        except BaseException:
            if placement is not None:
                await placement.session_ended()
            else:
                await manager.shutdown()
                async with httpx.AsyncClient() as http:
                    await webdriver.release(http, grid)
            raise

    @classmethod
    async def readopt(cls, stored: dict[str, Any], state_dir: Path) -> GridPlacement | None:
        """After a daemon restart: the placement again if the Grid still has its WebDriver
        session and its DevTools proxy answers; else None (and the session deleted)."""
        grid = webdriver.GridSession(str(stored["grid_url"]), str(stored["webdriver_id"]),
                                     str(stored["cdp_url"]), stored.get("node"))
        async with httpx.AsyncClient() as http:
            try:
                verdict = await webdriver.check(http, grid, 5.0)
            except webdriver.GridError as e:
                log.warning("grid session %s: %s", grid.webdriver_id, e)
                return None
            if verdict.state != webdriver.ALIVE:
                log.warning("grid session %s (%s): %s", grid.webdriver_id, verdict.state,
                            verdict.why)
                if verdict.state != webdriver.ENDED:  # a hub that forgot it: on its node
                    await webdriver.release(http, grid)
                return None
            manager = cls.attach(grid.cdp_url, state_dir)
            try:
                await manager.ensure()
            except BskError as e:
                log.warning("grid session %s: %s; deleting it", grid.webdriver_id, e.message)
                await manager.shutdown()
                await webdriver.release(http, grid)
                return None
        size = stored.get("window_size")
        return cls(manager, grid, context_id=stored.get("context_id"),
                   window_size=(int(size[0]), int(size[1])) if size else None)

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(KEEP_ALIVE_S)
            try:
                if not await self._still_there(5.0):
                    return
            except webdriver.GridError as e:  # unreachable for now: the CDP probe decides
                log.info("grid keep-alive of %s: %s", self.grid.webdriver_id, e)

    async def _still_there(self, timeout: float) -> bool:
        """Ask the Grid (`webdriver.check`); False once the session is gone for good, its
        slot released where the hub forgot it. GridError while no one can say."""
        async with self._checking:
            if self.gone is None:
                verdict = await webdriver.check(self._http, self.grid, timeout)
                if verdict.state != webdriver.ALIVE:
                    await self._grid_ended(verdict)
            return self.gone is None

    async def _grid_ended(self, verdict: webdriver.Verdict) -> None:
        self.gone = verdict
        if verdict.state == webdriver.FORGOTTEN:  # free its slot now, not at session stop
            self._released = await webdriver.release(self._http, self.grid)
        link = self.manager.link
        if link is not None and not link.closed:
            link.abort(f"the Grid session is gone ({verdict.state})")

    def _gone_error(self, gone: webdriver.Verdict) -> BskError:
        wd = self.grid.webdriver_id
        details: dict[str, Any] = {"webdriver_id": wd, LASTING: True}
        if gone.state == webdriver.NODE_LOST:
            message = (f"the Grid node {self.grid.node} that ran this session's browser is "
                       f"gone, and the browser with it: {gone.why}")
            details.update(reason="grid_node_lost", node=self.grid.node)
        elif gone.state == webdriver.FORGOTTEN:
            released = ("bsk deleted it on the node, so its slot is free" if self._released
                        else "deleting it on the node failed: the node's --session-timeout "
                             "will free its slot")
            message = (f"the Grid's hub no longer knows this session's WebDriver session "
                       f"{wd} (the hub restarted?): {gone.why}; {released}")
            details.update(reason="grid_session_forgotten", node=self.grid.node)
        else:
            message = f"the Grid ended this session's WebDriver session {wd}: {gone.why}"
            details.update(reason="grid_session_ended")
        return BskError("browser_unavailable", message, hint=self.lost_hint(),
                        details=details)

    # -- Backend ------------------------------------------------------------------------

    def lost_hint(self) -> str:
        stop = (f"`bsk session stop` this session and start another (`bsk session start ID "
                f"--grid {redacted(self.grid.grid_url)}` gets a browser on a node that is "
                "up); its tabs and page state are gone, so calling again can't help")
        if self.gone is not None:
            return stop if self.gone.state != webdriver.ENDED else (
                "the Grid ended this session's browser (deleted, or idle past its node's "
                f"--session-timeout): {stop}")
        return (f"call again: the daemon reconnects through the Grid at "
                f"{redacted(self.grid.grid_url)} and brings this session's tabs back; if "
                "the Grid ended its WebDriver session or its node is gone, the answer says "
                "so: then `bsk session stop` it and start another")

    async def recover_tabs(self, lost: list[Tab],
                           timeout: float) -> tuple[list[tuple[Tab, str]], str | None]:
        try:
            await self._still_there(min(timeout, 6.0))
        except webdriver.GridError as e:
            raise BskError(
                "browser_unavailable", f"the Grid can't say yet whether this session's "
                f"browser lives: {e}",
                hint=f"call again in a while: the daemon reconnects once the Grid at "
                     f"{redacted(self.grid.grid_url)} and the session's node answer, and "
                     "brings this session's tabs back; if this goes on, `bsk session "
                     "stop` it and start another",
                details={"reason": "grid_error", "node": self.grid.node}) from None
        if self.gone is not None:
            raise self._gone_error(self.gone)
        return await super().recover_tabs(lost, timeout)

    async def session_ended(self) -> None:
        self._keeper.cancel()
        try:
            await super().session_ended()
        finally:
            if not self._released and (self.gone is None
                                       or self.gone.state != webdriver.ENDED):
                await webdriver.release(self._http, self.grid)
            await self._http.aclose()

    def stored(self) -> dict[str, Any]:
        return {**super().stored(), "grid_url": self.grid.grid_url,
                "webdriver_id": self.grid.webdriver_id, "node": self.grid.node}

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(browser=redacted(self.grid.grid_url), node=self.grid.node,
                   webdriver_id=self.grid.webdriver_id)
        return out
