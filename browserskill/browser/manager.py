"""The daemon's browser: launched on first need (embedded default) or attached (--cdp-url).

Owns the one link, notices when it dies, and relaunches the embedded browser on the
next call. Tabs register here so that a closed, crashed or detached target is marked
gone the moment the browser says so.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserskill.base import background
from browserskill.base.errors import LASTING, BskError
from browserskill.browser import launcher
from browserskill.browser.cdp import CdpLink
from browserskill.browser.link import LinkError
from browserskill.browser.tab import Tab

log = logging.getLogger(__name__)

_TEMP_PROFILE = "bsk-profile-"  # an --ephemeral profile's directory name starts so


@dataclass
class BrowserConfig:
    cdp_url: str | None = None
    grid_url: str | None = None  # new sessions' default placement (`daemon start --grid`)
    profile: Path | None = None  # persistent profile dir (embedded)
    ephemeral: bool = False
    headless: bool = True
    log_file: Path | None = None
    expose_cdp: int | None = None  # also a DevTools TCP port (0: any); None: the pipe only


class BrowserManager:
    def __init__(self, config: BrowserConfig, state_dir: Path, *,
                 connect: Callable[[], Awaitable[CdpLink]] | None = None) -> None:
        """`connect` makes a link when there is none (default: launch the embedded
        browser, or attach to `config.cdp_url`); a test may give one of its own."""
        self.config = config
        self.state_dir = state_dir
        self.link: CdpLink | None = None
        self.launched: launcher.LaunchedBrowser | None = None
        self.version_info: dict[str, Any] = {}
        self._lock = asyncio.Lock()
        self._connecting: asyncio.Future[CdpLink] | None = None  # a launch under way
        # Bumped for each browser (re)connected: browser contexts die with their browser.
        self.generation = 0
        self._tabs: dict[str, Tab] = {}  # target id -> tab
        self._temp_profile: Path | None = None
        self._lost_handlers: list[Callable[[str], None]] = []
        self._link_handlers: list[Callable[[CdpLink], None]] = []
        self._connect = connect or self._launch_or_attach
        # Called with (opener tab, target info) when one of our tabs opens a new tab.
        # True when a session took it (it then adopts or closes it).
        self.popup_handler: Callable[[Tab, dict[str, Any]], bool] | None = None
        # Under a policy (browser/routing.py), a new page waits, paused by Chromium,
        # until it is intercepted: a popup's first request must not slip past the policy.
        # target id -> the paused auto-attach session, until its tab is adopted.
        self.holding_pages = False
        self._held: dict[str, str] = {}

    def on_lost(self, handler: Callable[[str], None]) -> None:
        """Called when the link dies, after its tabs are marked gone."""
        self._lost_handlers.append(handler)

    def on_link(self, handler: Callable[[CdpLink], None]) -> None:
        """Called with each link adopted (launched, attached, re-adopted), before any
        command of the manager's goes through it."""
        self._link_handlers.append(handler)

    @property
    def mode(self) -> str:
        return "attached" if self.config.cdp_url else "embedded"

    async def ensure(self) -> CdpLink:
        """The live link, launching or connecting first if needed. A caller that gives up
        (its deadline) leaves the launch running for the next call: a launch slower than
        one call's deadline still ends with a browser."""
        if self.link is not None and not self.link.closed:
            return self.link
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._connect_once())
            self._connecting.add_done_callback(
                lambda t: t.cancelled() or t.exception())  # retrieved if all callers left
        return await asyncio.shield(self._connecting)

    async def _connect_once(self) -> CdpLink:
        async with self._lock:
            if self.link is not None and not self.link.closed:
                return self.link
            try:
                link = await self._connect()
            except launcher.NoBrowser as e:  # waiting won't install one
                raise self._unavailable(str(e), lasting=True) from None
            except (launcher.LaunchError, LinkError, OSError, TimeoutError) as e:
                raise self._unavailable(str(e) or type(e).__name__) from None
            await self._adopt_link(link)
            assert self.link is not None
            return self.link

    async def _adopt_link(self, link: CdpLink) -> None:
        for handler in self._link_handlers:
            handler(link)
        self.link = link
        self.generation += 1
        link.subscribe(None, self._on_browser_event)
        link.on_close(self._on_link_closed)
        if self.config.cdp_url:  # a remote peer can go silent with its socket open
            link.watch()
        self.version_info = await link.version()
        await link.send("Target.setDiscoverTargets", {"discover": True})
        if self.holding_pages:
            await self._hold_on(link)

    async def hold_new_pages(self) -> None:
        """From now on every new page of this browser starts paused: one our tabs opened
        stays so until its session has intercepted it (`Tab.release`), any other runs at
        once. Asked for by a session under a policy that restricts URLs."""
        if self.holding_pages:
            return
        self.holding_pages = True
        if self.link is not None and not self.link.closed:
            await self._hold_on(self.link)

    async def _hold_on(self, link: CdpLink) -> None:
        await link.send("Target.setAutoAttach", {
            "autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
            "filter": [{"type": "page"}]})

    def _page_attached(self, params: dict[str, Any]) -> None:
        """A page the browser-level auto-attach gave us: a popup of one of our tabs is
        held for its session; any other that waits runs at once."""
        info, sid = params.get("targetInfo", {}), params.get("sessionId", "")
        opener = self._tabs.get(info.get("openerId") or "")
        waiting = bool(params.get("waitingForDebugger"))
        if waiting and opener is not None and self.popup_handler:
            self._held[info.get("targetId", "")] = sid
            if self.popup_handler(opener, info):
                return
            self._held.pop(info.get("targetId", ""), None)
        if self.link is not None and waiting:
            background.start(_let_go(self.link, sid), name=f"let-go-{sid}")

    async def answers(self, timeout: float) -> bool:
        """The connected browser answers a command within `timeout` (True when none is
        connected: there is nothing to wait for)."""
        if self.link is None or self.link.closed:
            return True
        try:
            await self.link.send("Browser.getVersion", timeout=timeout)
        except (LinkError, TimeoutError, OSError):
            return self.link.closed
        return True

    def stopped(self) -> bool:
        """The embedded browser's process is stopped (SIGSTOP): it can't answer."""
        return (self.launched is not None
                and launcher.process_state(self.launched.pid) == "T")

    def unresponsive(self, waited_s: float) -> BskError:
        """The browser did not answer within `waited_s`: `browser_unavailable`, saying
        why where the daemon can see it (its process stopped) and what to do."""
        message = f"the browser did not answer within {waited_s:g}s"
        pid = self.launched.pid if self.launched is not None else None
        if self.config.cdp_url:
            hint = (f"check that the browser at {self.config.cdp_url} is responsive, then "
                    "call again")
        elif pid is not None and self.stopped():
            message += f": its process (pid {pid}) is stopped"
            hint = (f"resume it (`kill -CONT -{pid}`) and call again, or `bsk daemon stop`: "
                    "the next call launches a new browser")
        else:
            hint = ("call again shortly (the browser may be overloaded); if it stays "
                    "unanswered, `bsk daemon stop`: the next call launches a new browser")
        return BskError("browser_unavailable", message, hint=hint,
                        details={"reason": "browser_unresponsive", "waited_s": waited_s})

    def _unavailable(self, why: str, *, lasting: bool = False) -> BskError:
        if self.config.cdp_url:
            hint = f"check that the browser at {self.config.cdp_url} is running and reachable"
        else:
            hint = launcher.INSTALL_HINT
        return BskError("browser_unavailable", f"no browser: {why}", hint=hint,
                        details={"reason": "no_browser", LASTING: True} if lasting else {})

    @property
    def _record(self) -> Path:
        return self.state_dir / "browser.json"

    async def adopt_running(self) -> bool:
        """Reconnect to the browser a previous daemon left running (or the attached one)."""
        if self.config.cdp_url:
            try:
                await self.ensure()
            except BskError:
                return False
            return True
        try:
            previous = launcher.LaunchedBrowser.from_json(json.loads(self._record.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if not previous.alive():
            self._record.unlink(missing_ok=True)
            return False
        try:
            link = await CdpLink.connect(previous.endpoint, timeout=3)
        except (LinkError, OSError, TimeoutError) as e:
            log.warning("the previous browser (pid %s) did not answer: %s", previous.pid, e)
            await asyncio.to_thread(previous.terminate)
            return False
        self.launched = previous
        if self.config.ephemeral and previous.profile.name.startswith(_TEMP_PROFILE) and \
                previous.profile.parent == Path(tempfile.gettempdir()):
            self._temp_profile = previous.profile  # throw-away: deleted at shutdown too
        await self._adopt_link(link)
        log.info("re-adopted the browser left by the previous daemon (pid %s)", previous.pid)
        return True

    async def page_targets(self) -> set[str]:
        link = await self.ensure()
        targets = await link.send("Target.getTargets")
        return {t["targetId"] for t in targets["targetInfos"] if t["type"] == "page"}

    async def _launch_or_attach(self) -> CdpLink:
        if self.config.cdp_url:
            ws_url = await launcher.resolve_cdp_url(self.config.cdp_url)
            return await CdpLink.connect(ws_url)
        executable = launcher.find_browser()
        if executable is None:
            override = os.environ.get("BSK_BROWSER")
            raise launcher.NoBrowser(
                f"BSK_BROWSER={override} is not an executable" if override
                else "no Chromium, Chrome or Edge found on PATH")
        profile = self._profile_dir()
        log_file = self.config.log_file or self.state_dir / "browser.log"
        log.info("launching %s with profile %s", executable, profile)
        if self.launched is not None and self.launched.alive():
            await asyncio.to_thread(self.launched.terminate)  # its link died: start afresh
        await self.stop_unclaimed()  # never two browsers on one profile and socket
        self.launched = await launcher.launch(
            executable, profile, log_file, self.state_dir, headless=self.config.headless,
            expose_port=self.config.expose_cdp)
        try:
            link = await CdpLink.connect(self.launched.endpoint)
            await link.send("Browser.getVersion", timeout=30)  # it answers on its pipe
        except BaseException:
            self.launched.terminate()
            raise
        # Remembered so that a daemon killed hard can re-adopt the browser and its sessions.
        self._record.write_text(json.dumps(self.launched.to_json()))
        return link

    def _profile_dir(self) -> Path:
        if self.config.ephemeral:
            if self._temp_profile is None:
                self._temp_profile = Path(tempfile.mkdtemp(prefix=_TEMP_PROFILE))
            return self._temp_profile
        return self.config.profile or self.state_dir / "profile"

    async def new_tab(self, tab_id: str, url: str = "about:blank", *,
                      context_id: str | None = None,
                      window_size: tuple[int, int] | None = None) -> Tab:
        """A tab in a window of its own (see browser/embedded.py for why)."""
        link = await self.ensure()
        handle = await link.create_tab(url, new_window=True, context_id=context_id,
                                       window_size=window_size)
        tab = Tab(link, tab_id, handle)
        self._tabs[handle.target_id] = tab
        try:
            await self._start(tab)
        except BaseException:
            await self.close_tab(tab)
            raise
        return tab

    async def _start(self, tab: Tab) -> None:
        await tab.start()
        # Pages behave as focused whichever window the OS focuses (headed) or none does.
        await tab.send("Emulation.setFocusEmulationEnabled", {"enabled": True})

    async def create_context(self) -> str:
        """A browser context of its own (cookies, storage, cache apart); it outlives this
        daemon's connection, so a restarted daemon can re-adopt its session."""
        link = await self.ensure()
        made = await link.send("Target.createBrowserContext", {"disposeOnDetach": False})
        return str(made["browserContextId"])

    async def contexts(self) -> set[str]:
        link = await self.ensure()
        return set((await link.send("Target.getBrowserContexts"))["browserContextIds"])

    async def open_in(self, tab: Tab, url: str, timeout: float) -> bool:
        """Navigate a tab and wait (bounded) for its load; False if it did not get there."""
        try:
            answer = await tab.send("Page.navigate", {"url": url}, timeout=timeout)
            loader = answer.get("loaderId")
            if answer.get("errorText"):
                return False
            if loader:
                await tab.until(lambda: tab.reached(loader, "load"), timeout)
        except (LinkError, TimeoutError) as e:
            log.info("reopening %s at %s: %s", tab.tab_id, url, e)
            return False
        return True

    async def dispose_context(self, context_id: str) -> None:
        if self.link is None or self.link.closed:
            return
        try:
            await self.link.send("Target.disposeBrowserContext",
                                 {"browserContextId": context_id}, timeout=5.0)
        except LinkError as e:
            log.info("disposing browser context %s: %s", context_id, e)

    async def close_tab(self, tab: Tab) -> None:
        self._tabs.pop(tab.target_id, None)
        tab.close()
        if self.link is not None and not self.link.closed:
            try:
                await self.link.close_tab(tab.target_id)
            except LinkError as e:
                log.info("closing tab %s: %s", tab.target_id, e)

    async def adopt_tab(self, tab_id: str, target_id: str) -> Tab:
        """Attach to a tab the page opened itself (window.open, target=_blank)."""
        link = await self.ensure()
        held = self._held.pop(target_id, None)
        try:
            handle = await link.attach(target_id)
        except BaseException:
            if held is not None:
                background.start(_let_go(link, held), name=f"let-go-{held}")
            raise
        tab = Tab(link, tab_id, handle)
        if held is not None:  # paused until its session's interception is on
            tab.held = functools.partial(_let_go, link, held)
        self._tabs[target_id] = tab
        try:
            await self._start(tab)
        except BaseException:
            await self.close_tab(tab)
            raise
        return tab

    def _on_browser_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Target.attachedToTarget":
            self._page_attached(params)
        elif method == "Target.targetCreated" and not self.holding_pages:
            info = params.get("targetInfo", {})
            opener = self._tabs.get(info.get("openerId") or "")
            if info.get("type") == "page" and opener is not None and self.popup_handler:
                self.popup_handler(opener, info)
        elif method in ("Target.targetDestroyed", "Target.targetCrashed"):
            tab = self._tabs.get(params.get("targetId", ""))
            if tab is not None and method == "Target.targetCrashed":
                tab.mark_crashed()
            elif tab is not None:
                tab.mark_gone("the tab was closed")
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
        # A DevTools endpoint other tools can use: the attached browser's, or the embedded
        # one's only when --expose-cdp opened one (else it has none: a private pipe).
        if self.config.cdp_url:
            shared = self.link.endpoint if self.link is not None else None
        else:
            shared = self.launched.cdp_url if self.launched is not None else None
        if connected and shared:
            out["cdp_endpoint"] = shared
            http = launcher.http_endpoint(shared)
            if http:  # a Chromium's own; a proxy (a Grid's se/cdp) has none
                out["http_endpoint"] = http
        elif connected:
            out["devtools"] = "private pipe (no TCP port; `daemon start --expose-cdp` opens one)"
        if connected and self.link is not None:
            out["version"] = self.version_info.get("product")
            out["protocol_version"] = self.version_info.get("protocolVersion")
            out["user_agent"] = self.version_info.get("userAgent")
        if self.config.grid_url:  # where new sessions go (`daemon start --grid`)
            out["default_grid"] = launcher.redacted(self.config.grid_url)
        if self.launched is not None:
            out["pid"] = self.launched.pid
            out["executable"] = self.launched.executable
            out["profile"] = str(self.launched.profile)
        return out

    async def stop_unclaimed(self) -> None:
        """Stop the browser (and keeper) a previous daemon left running that this one did
        not adopt: no session of this daemon needs it (none was re-adopted into it),
        and left alone it would outlive every `daemon stop`."""
        if self.launched is not None or self.config.cdp_url:
            return
        for record in (self._record, self.state_dir / "keeper.json"):
            try:
                found = json.loads(record.read_text())
                left = launcher.LaunchedBrowser(
                    int(found.get("pid", found.get("browser_pid"))), int(found["keeper_pid"]),
                    "", "", Path())
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if launcher.process_alive(left.keeper_pid) or launcher.process_alive(left.pid):
                log.info("stopping the browser a previous daemon left (pid %s, keeper %s)",
                         left.pid, left.keeper_pid)
                await asyncio.to_thread(left.terminate)
            record.unlink(missing_ok=True)

    async def shutdown(self) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()  # a launch under way stops its keeper and browser
            await asyncio.wait({self._connecting})
        if self.link is not None:
            try:
                await self.link.close()
            except Exception:
                pass
        if self.launched is not None:
            await asyncio.to_thread(self.launched.terminate)
            self._record.unlink(missing_ok=True)
            (self.state_dir / "keeper.json").unlink(missing_ok=True)
        else:  # one this daemon never adopted: a stop leaves no browser behind
            await self.stop_unclaimed()
        if self._temp_profile is not None:
            shutil.rmtree(self._temp_profile, ignore_errors=True)


async def _let_go(link: CdpLink, session_id: str) -> None:
    """A page the browser-level auto-attach paused runs on. Its session stays: Chromium
    answers our own `attachToTarget` of that page with it (so it may be a tab's own)."""
    try:
        await link.send("Runtime.runIfWaitingForDebugger", session_id=session_id, timeout=10)
    except (LinkError, TimeoutError) as e:
        log.info("letting auto-attached page %s run: %s", session_id, e)
