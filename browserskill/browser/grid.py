"""`GridPlacement`: a session on a Selenium Grid 4 (`session start --grid URL`).

The session gets a WebDriver session of its own (bsk's Chromium switches in
`goog:chromeOptions`) and drives it through the Grid's DevTools proxy (`se:cdp`) exactly
as a `RemotePlacement`. Its life on the Grid (docs/design.md, placement):

- the slot is awaited up to the call's deadline, then `browser_unavailable` (retry-safe:
  nothing was started);
- a WebDriver call every `KEEP_ALIVE_S` keeps the node's idle `--session-timeout` from
  ending the session while it lives, and notices when the Grid ended it anyway (the
  Grid leaves the CDP socket open and silent then: the link's probe notices that too);
- `session stop`, idle exit and `daemon stop` delete the WebDriver session (the slot is
  free again); the WebDriver id and endpoints are journaled, so a restarted daemon
  re-adopts a session the Grid still has, and deletes one it can't use.

Invariant: a WebDriver session this placement created is deleted when its session ends,
or left to the node's idle timeout only when the Grid can't be reached.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx

from browserskill.browser import launcher, webdriver
from browserskill.browser.launcher import redacted
from browserskill.browser.manager import BrowserManager
from browserskill.browser.remote import RemotePlacement
from browserskill.browser.tab import Tab
from browserskill.errors import BskError

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
        self.ended_by_grid = False
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
                    await webdriver.delete_session(http, grid_url, grid.webdriver_id)
            raise

    @classmethod
    async def readopt(cls, stored: dict[str, Any], state_dir: Path) -> GridPlacement | None:
        """After a daemon restart: the placement again if the Grid still has its WebDriver
        session and its DevTools proxy answers; else None (and the session deleted)."""
        grid = webdriver.GridSession(str(stored["grid_url"]), str(stored["webdriver_id"]),
                                     str(stored["cdp_url"]), stored.get("node"))
        async with httpx.AsyncClient() as http:
            try:
                if not await webdriver.alive(http, grid, 5.0):
                    return None
            except webdriver.GridError as e:
                log.warning("grid session %s: %s", grid.webdriver_id, e)
                return None
            manager = cls.attach(grid.cdp_url, state_dir)
            try:
                await manager.ensure()
            except BskError as e:
                log.warning("grid session %s: %s; deleting it", grid.webdriver_id, e.message)
                await manager.shutdown()
                await webdriver.delete_session(http, grid.grid_url, grid.webdriver_id)
                return None
        size = stored.get("window_size")
        return cls(manager, grid, context_id=stored.get("context_id"),
                   window_size=(int(size[0]), int(size[1])) if size else None)

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(KEEP_ALIVE_S)
            try:
                if await webdriver.alive(self._http, self.grid, 5.0):
                    continue
            except webdriver.GridError as e:  # unreachable for now: the CDP probe decides
                log.info("grid keep-alive of %s: %s", self.grid.webdriver_id, e)
                continue
            self._grid_ended()
            return

    def _grid_ended(self) -> None:
        self.ended_by_grid = True
        link = self.manager.link
        if link is not None and not link.closed:
            link.abort("the Grid ended this session's WebDriver session")

    # -- Backend ------------------------------------------------------------------------

    def lost_hint(self) -> str:
        if self.ended_by_grid:
            return ("the Grid ended this session's browser (deleted, or idle past its node's "
                    "--session-timeout): `bsk session stop` it and start a new one")
        return (f"call again: the daemon reconnects through the Grid at "
                f"{redacted(self.grid.grid_url)} and brings this session's tabs back; if the "
                "Grid ended its WebDriver session (deleted, or idle past the node's "
                "--session-timeout) the answer says so: then `bsk session stop` it and "
                "start a new one")

    async def recover_tabs(self, lost: list[Tab],
                           timeout: float) -> tuple[list[tuple[Tab, str]], str | None]:
        if not self.ended_by_grid:
            try:
                if not await webdriver.alive(self._http, self.grid, min(timeout, 3.0)):
                    self._grid_ended()
            except webdriver.GridError as e:
                raise BskError("browser_unavailable", f"the Grid does not answer: {e}",
                               hint=self.lost_hint(), details={"reason": "grid_error"}) \
                    from None
        if self.ended_by_grid:
            raise BskError("browser_unavailable", "the Grid ended this session's WebDriver "
                           f"session {self.grid.webdriver_id}", hint=self.lost_hint(),
                           details={"reason": "grid_session_ended",
                                    "webdriver_id": self.grid.webdriver_id})
        return await super().recover_tabs(lost, timeout)

    async def session_ended(self) -> None:
        self._keeper.cancel()
        try:
            await super().session_ended()
        finally:
            if not self.ended_by_grid:
                await webdriver.delete_session(self._http, self.grid.grid_url,
                                               self.grid.webdriver_id)
            await self._http.aclose()

    def stored(self) -> dict[str, Any]:
        return {**super().stored(), "grid_url": self.grid.grid_url,
                "webdriver_id": self.grid.webdriver_id, "node": self.grid.node}

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(browser=redacted(self.grid.grid_url), node=self.grid.node,
                   webdriver_id=self.grid.webdriver_id)
        return out
