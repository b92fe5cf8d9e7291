"""Sessions: an agent's timeline in the browser — its tabs, refs and queue."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from browserskill.base import background, contract
from browserskill.base.contract import DEFAULT_SESSION, Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.base.policy import Policy, PolicyError
from browserskill.browser.backend import Backend
from browserskill.browser.embedded import EmbeddedPlacement
from browserskill.browser.grid import GridPlacement
from browserskill.browser.link import LinkError
from browserskill.browser.manager import BrowserManager
from browserskill.browser.remote import RemotePlacement
from browserskill.browser.routing import RouteTable
from browserskill.browser.storage_state import load_state
from browserskill.browser.tab import Tab, TabGone
from browserskill.session.features import FeatureStates
from browserskill.session.queue import SessionQueue
from browserskill.session.session_store import SessionStore, StoredSession

log = logging.getLogger(__name__)

# A session start's deadline when the caller names none: long enough for a Grid to hand
# out a slot that frees soon, bounded so that a full Grid is an answer, not a hang.
SESSION_START_TIMEOUT_S = 60.0
# How long re-adopting one session may take after a restart (its browser answering, its
# tabs re-attached); then it is ended, saying it timed out. Sessions go side by side.
READOPT_TIMEOUT_S = 10.0
LET_GO_TIMEOUT_S = 3.0  # closing what a session whose re-adoption failed had
# New tabs one page may open per action (since its last input began): the rest are closed
# as they come, and the action's result says how many (a popup storm: docs/outcomes.md).
MAX_POPUPS_PER_ACTION = 20
_ORIGIN_URLS_HELD = 256  # per session: past it the set starts over (a URL is parsed again)


@dataclass(frozen=True)
class RefBinding:
    """What a snapshot ref points at; never re-resolved by role or name.

    The element itself is held by the frame's document (in BrowserSkill's isolated world),
    so a ref dies with its document."""

    tab_id: str
    frame_id: str
    loader_id: str
    role: str
    name: str


class Recording(Protocol):
    """Something a tool started that runs until stopped: a video, a trace."""

    def summary(self) -> dict[str, Any]: ...

    def stored(self) -> dict[str, Any]:
        """What the session store keeps of it ({"kind": …}), for the next daemon."""
        ...

    async def stop_with_session(self) -> dict[str, Any]:
        """The session ends: stop, save what there is, say where (never raises)."""
        ...


class RecordingRestorer(Protocol):
    """What a recording the previous daemon left running becomes (tools/evidence.py)."""

    async def readopt(self, session: Session, stored: dict[str, Any]) -> Recording:
        """Its session is back: the recording, to stop as usual (raises if it is lost)."""
        ...

    async def left_behind(self, stored: dict[str, Any]) -> str | None:
        """Its session ended at the restart: close it; a note saying where it is."""
        ...


@dataclass
class Recordings:
    """A session's long-running recordings (video, trace) by kind (its feature state,
    `session.features.get(Recordings)`): shown in `session list`, kept in the session
    store, stopped with the session (what they had is saved; `saved` says where)."""

    running: dict[str, Recording] = field(default_factory=dict)
    saved: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Session:
    """What every session has: its tabs and refs, placement, queue and policy. A feature's
    own state between calls is in `features`, by the feature's class (tests/
    test_tool_context.py keeps these fields as they are)."""

    id: str
    label: str | None = None
    created_at: float = field(default_factory=time.time)
    tabs: dict[str, Tab] = field(default_factory=dict)
    current_tab_id: str | None = None
    refs: dict[str, RefBinding] = field(default_factory=dict)
    last_used: float = field(default_factory=time.monotonic)
    popups: dict[str, list[str]] = field(default_factory=dict)  # opener tab -> tabs it opened
    tab_seq: int = 0
    ref_seq: int = 0  # refs handed out so far (e1, e2, …; f1e3 in iframes)
    # Where it runs (docs/design.md, placement): set by SessionManager as it is made.
    backend: Backend = field(init=False)
    download_dir: str | None = None  # default: $BSK_HOME/downloads/<session id>
    # Web origins its pages have been on (or whose storage it loaded): `state save` keeps
    # their localStorage even when no tab has them open any more.
    origins: set[str] = field(default_factory=set)
    # `route add`'s mocks and blocks; here, not in `features`, as the policy's URL rules
    # ride on the same interception.
    routes: RouteTable = field(default_factory=RouteTable)
    # The person's policy as it applies to this session: the daemon's, narrowed by the
    # session's start (browserskill/base/policy.py); nothing an agent calls changes it. Its
    # domain and scheme rules are enforced by `routes` (the same Fetch interception).
    policy: Policy = field(default_factory=Policy)
    # What `session start` narrowed (--allow-domain/--block-domain), kept so a daemon
    # that re-adopts the session narrows its own policy the same way.
    narrowing: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.queue = SessionQueue(self.id)
        # Each feature's own state (hover, help, script recording, …): session/features.py
        self.features = FeatureStates()
        self.routes.policy = self.policy
        self._origin_urls: set[str] = set()  # URLs `remember_origins` parsed already

    def set_policy(self, policy: Policy) -> None:
        """The one place a session's policy is set (at its start or re-adoption)."""
        self.policy = policy
        self.routes.policy = policy

    def recordings(self) -> dict[str, Recording]:
        """Its running recordings by kind (the session store keeps them)."""
        return self.features.get(Recordings).running

    def next_tab_id(self) -> str:
        self.tab_seq += 1
        return f"t{self.tab_seq}"


    def tab(self, tab_id: str | None = None) -> Tab:
        tab_id = tab_id or self.current_tab_id
        if tab_id is None or tab_id not in self.tabs:
            if tab_id is None:
                raise BskError(
                    "action_failed", "this session has no open tab",
                    hint="open one: `bsk open URL`", details={"reason": "no_tab"},
                    dispatched=Dispatched.NO,
                )
            ids = list(self.tabs)
            there = ", ".join(ids[:20]) + (f", … ({len(ids)} in all)" if ids[20:] else "") \
                if ids else "none"
            raise BskError(
                "tab_not_found", f"no tab {tab_id!r} in session {self.id} (its tabs: {there})",
                hint="`bsk tab list` lists them", details={"tab_id": tab_id,
                                                           "tabs": list(self.tabs)},
            )
        return self.tabs[tab_id]

    def remember_origins(self) -> None:
        """Add its tabs' origins to `origins` (after every call: a URL seen already is
        skipped without parsing it; `origins` only grows)."""
        seen = self._origin_urls
        for tab in self.tabs.values():
            url = tab.url
            if url in seen:
                continue
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.netloc:
                self.origins.add(f"{parts.scheme}://{parts.netloc}")
            if len(seen) >= _ORIGIN_URLS_HELD:
                seen.clear()
            seen.add(url)

    def popups_of(self, tab_id: str) -> list[str]:
        return self.popups.get(tab_id, [])

    def add_tab(self, tab: Tab) -> None:
        self.tabs[tab.tab_id] = tab
        self.current_tab_id = tab.tab_id

    def forget_tab(self, tab_id: str) -> None:
        self.tabs.pop(tab_id, None)
        self.refs = {k: v for k, v in self.refs.items() if v.tab_id != tab_id}
        if self.current_tab_id == tab_id:
            self.current_tab_id = next(reversed(self.tabs), None) if self.tabs else None

    def summary(self) -> dict[str, Any]:
        holder = self.queue.holder
        return {
            "session_id": self.id,
            "label": self.label,
            "created_at": self.created_at,
            "tabs": len(self.tabs),
            "current_tab": self.current_tab_id,
            "busy": holder.holder_summary() if holder else None,
            "queued": len(self.queue.queued),
            "placement": self.backend.describe(),
            "routes": self.routes.describe(),
            "recordings": {kind: r.summary() for kind, r in self.recordings().items()},
            **({"policy_narrowed": self.narrowing} if self.narrowing else {}),
        }


class SessionManager:
    def __init__(self, browser: BrowserManager, store: SessionStore) -> None:
        self.browser = browser
        self.store = store
        self.sessions: dict[str, Session] = {}
        # Ids of sessions whose first tab is still opening (a Grid slot awaited, a remote
        # browser reached): kept out of `sessions`, where everything expects a placement.
        self.starting: set[str] = set()
        self.extensions: Any = None  # ExtensionHub, when the extension listener is on
        self.default_grid: str | None = browser.config.grid_url
        # Ends the calls of the given sessions when their own link dies (the dispatcher's).
        self.on_link_lost: Callable[[str, set[str]], None] = lambda reason, sids: None
        browser.popup_handler = self._popup
        # The person's policy (`daemon start --policy`), set once by the daemon's wiring
        # before any session starts; every session gets it, narrowed by its start.
        self.policy = Policy()
        # Recordings (video, trace) a previous daemon left: set by the daemon's wiring.
        self.recordings_after_restart: RecordingRestorer | None = None

    def persist(self, session: Session) -> None:
        if self.sessions.get(session.id) is session:
            self.store.save(session)

    async def readopt(self, timeout: float = READOPT_TIMEOUT_S) -> dict[str, Any]:
        """After a daemon restart: re-attach sessions whose tabs survived; end the rest,
        each with why. Sessions are re-adopted side by side, within `timeout`: one that
        fails or hangs is ended saying so (a timeout named as such) and delays no other
        (docs/design.md, what survives what)."""
        report: dict[str, Any] = {"readopted": [], "ended": []}
        rows: list[StoredSession] = []
        for sid in self.store.open_ids():
            try:
                rows.append(self.store.load(sid))
            except Exception as e:  # a row that can't be read ends only its own session
                self._ended(sid, f"its stored state could not be read: {describe_error(e)}",
                            report)
        if not rows:
            return report
        embedded_alive: set[str] = set()
        browser_lost: str | None = None
        # One deadline for all (the browser re-attached within it too): the daemon answers
        # within it plus LET_GO_TIMEOUT_S, well inside what a spawning CLI waits.
        end = asyncio.get_running_loop().time() + timeout
        if any(_embedded(row.browser) for row in rows):
            deadline = asyncio.timeout_at(end)
            try:
                async with deadline:
                    if await self.browser.adopt_running():
                        embedded_alive = await self.browser.page_targets()
            except Exception as e:
                browser_lost = (f"re-attaching the daemon's browser failed: "
                                f"{describe_error(e, timeout if deadline.expired() else None)}")
        await asyncio.gather(*(self._readopt_one(row, embedded_alive, browser_lost, end,
                                                 timeout, report) for row in rows))
        return report

    def _ended(self, session_id: str, reason: str, report: dict[str, Any]) -> None:
        log.warning("session %s not re-adopted: %s", session_id, reason)
        self.store.end(session_id, reason)
        report["ended"].append(session_id)
        report.setdefault("reasons", {})[session_id] = reason

    async def _readopt_one(self, row: StoredSession, embedded_alive: set[str],
                           browser_lost: str | None, end: float, timeout: float,
                           report: dict[str, Any]) -> None:
        session = Session(row.session_id, row.label, row.created_at, tab_seq=row.tab_seq)
        try:  # this daemon's policy, narrowed as the session's start asked
            session.set_policy(self.policy.narrowed(**row.narrowing))
            session.narrowing = row.narrowing
        except (PolicyError, TypeError) as e:
            self._ended(row.session_id, f"its narrowing of the policy does not fit this "
                        f"daemon's policy: {e}", report)
            return
        deadline = asyncio.timeout_at(end)
        try:
            if browser_lost is not None and _embedded(row.browser):
                ended: str | None = browser_lost
            else:
                async with deadline:
                    ended = await self._readopt_session(session, row, embedded_alive, report)
        except Exception as e:
            ended = f"re-adopting it after the daemon's restart failed: " \
                    f"{describe_error(e, timeout if deadline.expired() else None)}"
            if self.sessions.get(session.id) is session:  # an extension session's, listed
                del self.sessions[session.id]
            await self._let_go(session, row, embedded_alive)
        if ended is None:
            return
        notes = [ended]
        for stored in row.recordings.values():
            note = await self._recording_left(stored)
            if note:
                notes.append(note)
        self._ended(row.session_id, "; ".join(notes), report)

    async def _recording_left(self, stored: dict[str, Any]) -> str | None:
        """A recording of a session that ended at the restart: closed, and where it is."""
        if self.recordings_after_restart is None:
            return None
        try:
            return await self.recordings_after_restart.left_behind(stored)
        except Exception as e:
            return f"its {stored.get('kind', 'recording')} could not be closed: " \
                   f"{describe_error(e)}"

    async def _let_go(self, session: Session, row: StoredSession,
                      embedded_alive: set[str]) -> None:
        """A session whose re-adoption failed part-way: close what it had (its tabs, its
        placement), bounded, so nothing it held runs on for no one."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(LET_GO_TIMEOUT_S):
                # Unset when it failed before its placement was made (a bad stored row).
                backend = getattr(session, "backend", None)
                for tab in list(session.tabs.values()):
                    if backend is not None:
                        await backend.close_tab(tab)
                if _embedded(row.browser):  # its windows that were not re-attached
                    link = self.browser.link
                    for _tab_id, target_id in row.tabs:
                        if target_id in embedded_alive and link is not None and \
                                not link.closed and not any(t.target_id == target_id
                                                           for t in session.tabs.values()):
                            await link.close_tab(target_id)
                if backend is not None:
                    await backend.session_ended()

    async def _readopt_session(self, session: Session, row: StoredSession,
                               embedded_alive: set[str],
                               report: dict[str, Any]) -> str | None:
        """Re-adopt one stored session: None once it is back (or awaits its browser),
        else why it ended."""
        kind = (row.browser or {}).get("placement")
        if kind in ("cdp", "grid"):
            remote = await self._readopt_remote(session, row.browser or {})
            if remote is None:
                return f"its {kind} browser did not survive the daemon's restart"
            session.backend = remote
            try:
                alive = await remote.manager.page_targets()
            except BskError:
                alive = set()  # ended below, its WebDriver session deleted
        elif not _embedded(row.browser):  # an extension browser: wait for it to reconnect
            ended = self._await_browser(session, row, report)
            if ended is None:  # its tabs come back later: a video is kept, a trace is not
                await self._restore_recordings(session, row)
            return ended
        else:
            session.backend = EmbeddedPlacement.restore(self.browser, row.browser or {})
            alive = embedded_alive
        for tab_id, target_id in row.tabs:
            if target_id in alive:
                try:
                    session.tabs[tab_id] = await session.backend.adopt_tab(tab_id, target_id)
                except Exception as e:
                    log.warning("re-adopting %s/%s: %s", row.session_id, tab_id, e)
        if not session.tabs:
            await session.backend.session_ended()
            return "its browser tabs did not survive the daemon's restart"
        current = row.current_tab if row.current_tab in session.tabs else None
        session.current_tab_id = current or next(iter(session.tabs))
        await self._restore_recordings(session, row)
        if _embedded(row.browser):
            await self._detach_old(session, row)
        self.sessions[session.id] = session
        self.store.save(session)
        await _hold_popups(session)
        report["readopted"].append(session.id)
        return None

    async def _restore_recordings(self, session: Session, row: StoredSession) -> None:
        """Its recordings back (a trace re-adopted, a video as interrupted); one that is
        lost is reported where the session's saved recordings are."""
        for kind, stored in row.recordings.items():
            if self.recordings_after_restart is None:
                continue
            try:
                recording = await self.recordings_after_restart.readopt(session, stored)
            except Exception as e:  # the session is back; this recording is reported lost
                why = f"its {kind} was lost at the daemon's restart: {describe_error(e)}"
                log.warning("session %s: %s", session.id, why)
                session.features.get(Recordings).saved.append({"kind": kind, "error": why})
                continue
            session.recordings()[kind] = recording

    async def _detach_old(self, session: Session, row: StoredSession) -> None:
        """The dead daemon's CDP sessions in these tabs, which the browser keeper kept
        open: detached, else each restart adds a copy of every event (and of the page's
        paused requests, script injections) for no one. A re-adopted trace keeps its own
        until `trace stop`."""
        link = self.browser.link
        if link is None or link.closed:
            return
        kept = {r.stored().get("cdp_session") for r in session.recordings().values()}
        for sid in row.cdp_sessions:
            if sid in kept:
                continue
            try:
                await link.send("Target.detachFromTarget", {"sessionId": sid}, timeout=2.0)
            except LinkError as e:  # already gone with its target: nothing to release
                log.debug("detaching %s: %s", sid, e)

    async def _readopt_remote(self, session: Session,
                              stored: dict[str, Any]) -> RemotePlacement | None:
        """A remote placement again, if its browser (its Grid session) is still there."""
        remote: RemotePlacement | None
        try:
            if stored.get("placement") == "grid":
                remote = await GridPlacement.readopt(stored, self.browser.state_dir)
            else:
                manager = RemotePlacement.attach(str(stored["cdp_url"]), self.browser.state_dir)
                await manager.ensure()
                size = stored.get("window_size")
                remote = RemotePlacement(manager, context_id=stored.get("context_id"),
                                         window_size=(int(size[0]), int(size[1])) if size
                                         else None)
        except (BskError, KeyError) as e:
            log.warning("re-adopting %s: %s", session.id, e)
            return None
        if remote is not None:
            self._wire(session, remote)
        return remote

    def _await_browser(self, session: Session, row: Any, report: dict[str, Any]) -> str | None:
        """An extension session after a daemon restart: its Agent Window waits for its
        browser to reconnect (calls meanwhile are browser_unavailable); the extension's
        handshake then says which of its tabs are still open. Why it ended, if it did."""
        if self.extensions is None:
            return ("its browser's extension listener is off in this daemon (start it with "
                    "--extension-port)")
        session.backend = self.extensions.expect(session, row.browser)
        session.current_tab_id = row.current_tab
        self.sessions[session.id] = session
        report.setdefault("awaiting_browser", []).append(session.id)
        return None

    def _popup(self, opener: Tab, info: dict[str, Any]) -> bool:
        for session in self.sessions.values():
            if session.tabs.get(opener.tab_id) is opener:
                opener.popups_created += 1
                past = opener.popups_created - opener.popup_base - MAX_POPUPS_PER_ACTION
                take = self._close_popup if past > 0 else self.adopt
                background.start(take(session, opener, info["targetId"]),
                                 name=f"popup-{info['targetId']}")
                return True
        return False

    async def _close_popup(self, session: Session, opener: Tab, target_id: str) -> None:
        """A new tab past the bound: closed unseen (adopted instead where the link can't
        close a tab it has not attached, the extension's)."""
        try:
            await opener.link.close_tab(target_id)
        except LinkError as e:
            log.info("could not close popup %s of %s: %s", target_id, opener.tab_id, e)
            await self.adopt(session, opener, target_id)
            return
        opener.mark_changed()

    async def adopt(self, session: Session, opener: Tab, target_id: str) -> None:
        """A tab our page opened belongs to the same session; the opener's result lists it.
        (`target_id`: in an extension browser, the Chrome tab id.)"""
        try:
            tab = await session.backend.adopt_tab(session.next_tab_id(), target_id, opener)
        except Exception as e:
            log.warning("could not adopt tab %s opened by %s: %s", target_id, opener.tab_id, e)
            opener.popups_taken += 1
            opener.mark_changed()
            return
        session.tabs[tab.tab_id] = tab
        try:  # its first request may have gone out already, unless it is held (policy)
            await session.routes.attach(tab, timeout=5.0)
        except Exception as e:
            log.warning("routes in tab %s: %s", tab.tab_id, e)
        await tab.release()
        session.popups.setdefault(opener.tab_id, []).append(tab.tab_id)
        opener.popups_taken += 1
        opener.mark_changed()
        current = session.tabs.get(session.current_tab_id or "")
        if current is not None and not current.gone:  # the new tab hid it: show it again
            await session.backend.ensure_shown(current, timeout=5.0)

    async def recover(self, session: Session, timeout: float) -> dict[str, Any] | None:
        """Before a call: the session's tabs that died with their browser (or its
        connection) come back under the same ids, re-attached where the page survived,
        else reopened at their last URL. What happened, for the call's answer; None when
        nothing was lost."""
        lost = [t for t in session.tabs.values() if t.gone and t.link.closed]
        if not lost:
            return None
        try:
            recovered, also_lost = await session.backend.recover_tabs(lost, timeout)
        except (LinkError, TabGone, TimeoutError) as e:  # nothing of the call went out
            raise BskError("browser_unavailable", f"could not bring this session's tabs back "
                           f"after its browser was lost: {str(e) or type(e).__name__}",
                           hint=session.backend.lost_hint(),
                           details={"reason": "recovery_failed"}) from None
        if not recovered:
            return None
        report: dict[str, Any] = {"reattached": [], "reopened": []}
        for tab, how in recovered:
            session.tabs[tab.tab_id] = tab
            report[how].append({"tab_id": tab.tab_id, "url": tab.url})
            if how == "reopened":
                session.refs = {k: v for k, v in session.refs.items()
                                if v.tab_id != tab.tab_id}
        if report["reopened"]:
            report["note"] = ("the browser was gone: these tabs were opened again at their "
                              "last URL; their page state (form input, scroll, script "
                              "state) is lost: take a new snapshot")
        if also_lost:
            report["note"] = f"{report.get('note', 'the browser was gone')}; {also_lost}"
        self.store.save(session)
        return report

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None and session_id in self.starting:
            raise BskError("session_busy", f"session {session_id!r} is still starting",
                           hint="retry once `bsk session start` has answered",
                           details={"session_id": session_id, "starting": True})
        if session is None:
            ended = self.store.ended_reason(session_id)
            raise BskError(
                "session_not_found",
                f"session {session_id!r} ended: {ended}" if ended else
                f"no session {session_id!r}",
                hint="start one with `bsk session start`, or list them with `bsk session list`",
                details={"session_id": session_id},
            )
        return session

    async def get_for_call(self, session_id: str,
                           timeout: float = SESSION_START_TIMEOUT_S) -> Session:
        """The session a tool call names; the default session starts on first use (by
        `timeout`, the call's own deadline)."""
        if session_id == DEFAULT_SESSION and session_id not in {*self.sessions, *self.starting}:
            return await self.create(DEFAULT_SESSION, timeout=timeout)
        return self.get(session_id)

    async def create(self, session_id: str | None = None, label: str | None = None,
                     browser: str | None = None, *, isolated: bool = False,
                     state: dict[str, Any] | None = None,
                     download_dir: str | None = None, cdp_url: str | None = None,
                     grid: str | None = None, allow_domains: list[str] | None = None,
                     block_domains: list[str] | None = None,
                     timeout: float = SESSION_START_TIMEOUT_S) -> Session:
        """A new session with its first tab; `state` (Playwright's storageState, checked
        by the caller) is loaded into its isolated context before it is handed out.
        `cdp_url` / `grid` place it in another browser (docs/design.md, placement); the
        daemon's default Grid (`daemon start --grid`) applies when none is named."""
        placements = [n for n, v in (("browser", browser), ("cdp_url", cdp_url),
                                     ("grid", grid)) if v]
        if len(placements) > 1:
            raise invalid(placements[1], f"give one of --browser, --cdp-url and --grid, "
                          f"not {' and '.join('--' + p.replace('_', '-') for p in placements)}")
        for name, url in (("cdp_url", cdp_url), ("grid", grid)):
            if url is not None:
                _check_url(name, url, ("http", "https", "ws", "wss") if name == "cdp_url"
                           else ("http", "https"))
        if not placements and self.default_grid:
            grid = self.default_grid
        if session_id is None:
            session_id = "s_" + secrets.token_hex(4)
        elif not contract.valid_session_id(session_id):
            raise invalid("session_id", f"use {contract.SESSION_ID_RULE}")
        if session_id in self.sessions or session_id in self.starting:
            raise invalid("session_id", f"session {session_id!r} already exists",
                          hint="pick another id, or use it with --session")
        in_extension = browser not in (None, "embedded")
        if in_extension and (isolated or state is not None):
            raise invalid("isolated", "a session in the user's browser uses that browser's "
                          "profile: --isolated and --state are for the embedded browser")
        if state is not None and not isolated:
            raise invalid("state", "a saved state starts an isolated session",
                          hint="add --isolated (or load it into this session later with "
                               "`bsk state load FILE`)")
        narrowing = {k: v for k, v in (("allow_domains", allow_domains),
                                       ("block_domains", block_domains)) if v}
        try:  # only within the daemon's policy: a widening is the caller's mistake
            policy = self.policy.narrowed(**narrowing)
        except PolicyError as e:
            raise invalid("allow_domain", str(e), hint="`bsk policy show` prints the "
                          "daemon's policy; only the person who starts the daemon widens "
                          "it") from None
        session = Session(session_id, label, download_dir=download_dir)
        session.set_policy(policy)
        session.narrowing = narrowing
        self.starting.add(session_id)  # the id is taken while the first tab opens
        try:
            # An unanswering browser is an answer by the deadline (a Grid keeps its own:
            # its answer says whether a slot was free).
            async with asyncio.timeout(None if grid else timeout):
                await self._start(session, browser, in_extension, cdp_url, grid, isolated,
                                  state, timeout)
        except BaseException as e:
            self.starting.discard(session_id)
            backend: Backend | None = getattr(session, "backend", None)
            if backend is not None:  # a Grid's slot is freed whatever it takes
                await _undo_start(session, backend, None if grid else UNDO_START_S)
            if isinstance(e, TimeoutError) and not (in_extension or cdp_url):
                raise self.browser.unresponsive(timeout) from None  # says if it is stopped
            if isinstance(e, TimeoutError | LinkError):
                raise BskError("browser_unavailable", f"the browser did not start the "
                               f"session: {str(e) or f'no answer within {timeout:g}s'}",
                               hint="check that the browser is running and responsive, "
                                    "then call again",
                               details={"reason": "browser_unresponsive"}) from None
            raise
        self.starting.discard(session_id)
        self.sessions[session_id] = session
        self.store.save(session)
        await _hold_popups(session)
        return session

    async def _start(self, session: Session, browser: str | None, in_extension: bool,
                     cdp_url: str | None, grid: str | None, isolated: bool,
                     state: dict[str, Any] | None, timeout: float) -> None:
        """The session's placement and first tab (and saved state): `create`'s steps."""
        backend: Backend
        if in_extension:
            from browserskill.browser.extension import bind_session

            backend = bind_session(self.extensions, browser or "", session)
        elif grid or cdp_url:
            backend = await self._remote(session, cdp_url, grid, isolated, timeout)
        else:
            backend = await EmbeddedPlacement.start(self.browser, isolated=isolated)
        session.backend = backend
        tab = await backend.new_tab(session.next_tab_id())
        session.add_tab(tab)
        if state is not None:  # its first tab is blank: it restores the origins too
            await load_state(tab, tab, state, timeout=30.0)
            session.origins.update(o["origin"] for o in state["origins"])
            if state["origins"]:
                await tab.send("Page.navigate", {"url": "about:blank"})

    async def _remote(self, session: Session, cdp_url: str | None, grid: str | None,
                      isolated: bool, timeout: float) -> RemotePlacement:
        loop = asyncio.get_running_loop()
        remote: RemotePlacement
        if grid:
            remote = await GridPlacement.obtain(
                grid, self.browser.state_dir, isolated=isolated,
                deadline=loop.time() + timeout, headless=self.browser.config.headless)
        else:
            remote = await RemotePlacement.open(cdp_url or "", self.browser.state_dir,
                                                isolated=isolated)
        self._wire(session, remote)
        return remote

    def _wire(self, session: Session, remote: RemotePlacement) -> None:
        """A remote placement's browser is its own: its popups and its lost link reach
        only this session."""
        remote.manager.popup_handler = self._popup
        sid = session.id

        def lost(reason: str) -> None:
            if not remote.ending:
                self.on_link_lost(reason, {sid})

        remote.manager.on_lost(lost)

    async def close(self, session: Session, reason: str = "stopped") -> list[str]:
        recordings = session.features.get(Recordings)
        for recording in list(recordings.running.values()):
            recordings.saved.append(await recording.stop_with_session())
        recordings.running.clear()
        closed = []
        for tab in list(session.tabs.values()):
            await session.backend.close_tab(tab)
            closed.append(tab.tab_id)
            session.forget_tab(tab.tab_id)
        await session.backend.session_ended()
        self.sessions.pop(session.id, None)
        self.store.end(session.id, reason)
        return closed


async def _hold_popups(session: Session) -> None:
    """Under a policy that restricts URLs, the session's popups wait for its
    interception before their first request (browser/manager.py, `hold_new_pages`).
    The extension's browser has no such hold: docs/safety.md says what that leaves."""
    manager = getattr(session.backend, "manager", None)
    if session.policy.restricts_urls and isinstance(manager, BrowserManager):
        try:
            await manager.hold_new_pages()
        except (LinkError, TimeoutError) as e:
            log.warning("holding new pages for session %s: %s", session.id, e)


UNDO_START_S = 2.0  # a failed start's clean-up: bounded, as the browser may not answer


async def _undo_start(session: Session, backend: Backend, limit: float | None) -> None:
    """Close what a failed start opened (its tabs, its isolated context, its Grid
    session), within `limit` seconds: what a browser that does not answer keeps is only
    logged."""
    try:
        async with asyncio.timeout(limit):
            for tab in list(session.tabs.values()):
                await backend.close_tab(tab)
            await backend.session_ended()
    except (TimeoutError, LinkError, BskError) as e:
        log.info("undoing the start of session %s: %s", session.id, str(e) or "timed out")


def _check_url(name: str, url: str, schemes: tuple[str, ...]) -> None:
    hint = ("e.g. http://127.0.0.1:4444 (a Grid)" if name == "grid" else
            "e.g. http://127.0.0.1:9222 or ws://host:port/devtools/browser/… (a DevTools "
            "endpoint)")
    try:  # a malformed host or port is the caller's typo, not a bug deep in the link
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range or not a number
    except ValueError as e:
        raise invalid(name, f"{url!r} is not a valid URL: {e}", hint=hint) from None
    if parts.scheme not in schemes or not parts.hostname:
        raise invalid(name, f"{url!r} is not a {' or '.join(s + '://' for s in schemes)} URL",
                      hint=hint)


def describe_error(e: BaseException, timeout: float | None = None) -> str:
    """An exception as a reason a person can read: never empty (a bare TimeoutError or
    CancelledError says nothing by itself), a timeout named as such."""
    if isinstance(e, TimeoutError):
        return f"timed out after {timeout:g} s" if timeout else "timed out"
    message = e.message if isinstance(e, BskError) else str(e)
    return f"{type(e).__name__}: {message}" if message else f"{type(e).__name__} (no message)"


def _embedded(stored: dict[str, Any] | None) -> bool:
    """A stored session of the daemon's own browser (rows from before placements: None)."""
    return stored is None or stored.get("placement") == "embedded"
