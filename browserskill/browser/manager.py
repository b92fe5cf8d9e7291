"""The daemon's browser: launched on first need (embedded default) or attached (--cdp-url).

Owns the one link, notices when it dies, and relaunches the embedded browser on the
next call. Tabs register here so that a closed, crashed or detached target is marked
gone the moment the browser says so.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserskill.browser import launcher
from browserskill.browser.cdp import CdpLink
from browserskill.browser.link import LinkError
from browserskill.browser.tab import Tab
from browserskill.errors import BskError

log = logging.getLogger(__name__)


@dataclass
class BrowserConfig:
    cdp_url: str | None = None
    profile: Path | None = None  # persistent profile dir (embedded)
    ephemeral: bool = False
    headless: bool = True
    log_file: Path | None = None


class BrowserManager:
    def __init__(self, config: BrowserConfig, state_dir: Path) -> None:
        self.config = config
        self.state_dir = state_dir
        self.link: CdpLink | None = None
        self.launched: launcher.LaunchedBrowser | None = None
        self.version_info: dict[str, Any] = {}
        self._lock = asyncio.Lock()
        self._tabs: dict[str, Tab] = {}  # target id -> tab
        self._temp_profile: Path | None = None
        self._lost_handlers: list[Callable[[str], None]] = []

    def on_lost(self, handler: Callable[[str], None]) -> None:
        """Called when the link dies, after its tabs are marked gone."""
        self._lost_handlers.append(handler)

    @property
    def mode(self) -> str:
        return "attached" if self.config.cdp_url else "embedded"

    async def ensure(self) -> CdpLink:
        """The live link, launching or connecting first if needed."""
        if self.link is not None and not self.link.closed:
            return self.link
        async with self._lock:
            if self.link is not None and not self.link.closed:
                return self.link
            try:
                self.link = await self._connect()
            except (launcher.LaunchError, LinkError, OSError, TimeoutError) as e:
                raise self._unavailable(str(e)) from None
            self.version_info = await self.link.version()
            self.link.subscribe(None, self._on_browser_event)
            self.link.on_close(self._on_link_closed)
            await self.link.send("Target.setDiscoverTargets", {"discover": True})
            return self.link

    def _unavailable(self, why: str) -> BskError:
        if self.config.cdp_url:
            hint = f"check that the browser at {self.config.cdp_url} is running and reachable"
        else:
            hint = launcher.INSTALL_HINT
        return BskError("browser_unavailable", f"no browser: {why}", hint=hint)

    async def _connect(self) -> CdpLink:
        if self.config.cdp_url:
            ws_url = await launcher.resolve_cdp_url(self.config.cdp_url)
            return await CdpLink.connect(ws_url)
        executable = launcher.find_browser()
        if executable is None:
            raise launcher.LaunchError("no Chromium, Chrome or Edge found on PATH")
        profile = self._profile_dir()
        log_file = self.config.log_file or self.state_dir / "browser.log"
        log.info("launching %s with profile %s", executable, profile)
        self.launched = await launcher.launch(
            executable, profile, log_file, headless=self.config.headless
        )
        try:
            return await CdpLink.connect(self.launched.ws_url)
        except BaseException:
            self.launched.terminate()
            raise

    def _profile_dir(self) -> Path:
        if self.config.ephemeral:
            if self._temp_profile is None:
                self._temp_profile = Path(tempfile.mkdtemp(prefix="bsk-profile-"))
            return self._temp_profile
        return self.config.profile or self.state_dir / "profile"

    async def new_tab(self, tab_id: str, url: str = "about:blank") -> Tab:
        link = await self.ensure()
        handle = await link.create_tab(url)
        tab = Tab(link, tab_id, handle)
        self._tabs[handle.target_id] = tab
        try:
            await tab.start()
        except BaseException:
            await self.close_tab(tab)
            raise
        return tab

    async def close_tab(self, tab: Tab) -> None:
        self._tabs.pop(tab.target_id, None)
        tab.close()
        if self.link is not None and not self.link.closed:
            try:
                await self.link.close_tab(tab.target_id)
            except LinkError as e:
                log.info("closing tab %s: %s", tab.target_id, e)

    def _on_browser_event(self, method: str, params: dict[str, Any]) -> None:
        if method in ("Target.targetDestroyed", "Target.targetCrashed"):
            tab = self._tabs.get(params.get("targetId", ""))
            if tab is not None:
                crashed = method == "Target.targetCrashed"
                tab.mark_gone("the tab's renderer crashed" if crashed else "the tab was closed")
        elif method == "Target.targetInfoChanged":
            info = params.get("targetInfo", {})
            tab = self._tabs.get(info.get("targetId", ""))
            if tab is not None:
                tab.title = info.get("title", tab.title)

    def _on_link_closed(self, reason: str) -> None:
        log.warning("browser link closed: %s", reason)
        for tab in list(self._tabs.values()):
            tab.mark_gone(f"the browser connection was lost ({reason})")
        self._tabs.clear()
        for handler in self._lost_handlers:
            handler(reason)

    def info(self) -> dict[str, Any]:
        connected = self.link is not None and not self.link.closed
        out: dict[str, Any] = {"mode": self.mode, "connected": connected}
        if self.config.cdp_url:
            out["cdp_url"] = self.config.cdp_url
        if connected and self.link is not None:
            out["cdp_endpoint"] = self.link.endpoint
            out["http_endpoint"] = self.link.endpoint.split("/devtools/")[0].replace(
                "ws://", "http://"
            )
            out["version"] = self.version_info.get("product")
            out["protocol_version"] = self.version_info.get("protocolVersion")
            out["user_agent"] = self.version_info.get("userAgent")
        if self.launched is not None:
            out["pid"] = self.launched.process.pid
            out["executable"] = self.launched.executable
            out["profile"] = str(self.launched.profile)
        return out

    async def shutdown(self) -> None:
        if self.link is not None:
            try:
                await self.link.close()
            except Exception:
                pass
        if self.launched is not None:
            await asyncio.to_thread(self.launched.terminate)
        if self._temp_profile is not None:
            shutil.rmtree(self._temp_profile, ignore_errors=True)
