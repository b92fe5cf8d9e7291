"""Downloads: where a session's files land, and what the action that started one reports.

A browser the daemon drives over CDP saves every download under the state dir, never in
~/Downloads: `Browser.setDownloadBehavior` (allowAndName, once per link and browser
context) puts it at `downloads/.incoming/<guid>`, and once complete it moves to
`downloads/<session>/<suggested name>` (a name already taken gets " (2)"). The session
is the one whose tab started it: `Page.downloadWillBegin`/`downloadProgress` arrive on
that tab's own CDP session. Nothing here waits past the call's deadline: a download
still running then is reported `in_progress`, at the path it will have, and
`bsk download wait` picks it up later.

Through the extension (the user's own browser) the browser keeps its own download
settings; the downloads are still listed, with the path unknown.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browserskill.base.catalog.params import NoParams
from browserskill.browser.link import CdpError, LinkError
from browserskill.browser.tab import Tab

if TYPE_CHECKING:
    from browserskill.session.sessions import Session
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements

log = logging.getLogger(__name__)

INCOMING = ".incoming"
# Answer this long before the call's deadline, so an unfinished download is reported as
# such instead of the call running out of time.
ANSWER_MARGIN_S = 0.3
# A download link's download begins within this long, or the click started none (a link
# to a missing file, a page that cancelled it): don't wait out the deadline for it.
EXPECT_BEGIN_S = 5.0


@dataclass
class Download:
    guid: str
    tab_id: str
    url: str
    suggested_filename: str
    path: Path | None  # where it is (completed) or will be (in progress); None: unknown
    incoming: Path | None  # where the browser writes it meanwhile
    state: str = "in_progress"  # in_progress | completed | canceled
    bytes: int = 0
    total_bytes: int = 0
    reported: bool = False  # returned finished by an action or `download wait`

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None,
                "suggested_filename": self.suggested_filename, "bytes": self.bytes,
                "total_bytes": self.total_bytes or None, "state": self.state,
                "url": self.url if len(self.url) <= 500 else self.url[:500] + "…",
                "tab_id": self.tab_id}


@dataclass
class SessionDownloads:
    """One session's downloads, oldest first (its state: `ctx.feature`)."""

    directory: Path | None = None  # set as it is made (`of_session`)
    items: list[Download] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def by_guid(self, guid: str) -> Download | None:
        return next((d for d in self.items if d.guid == guid), None)

    def touch(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


_WATCHED: weakref.WeakSet[Tab] = weakref.WeakSet()
_BEHAVIOUR_SET: weakref.WeakKeyDictionary[Any, set[str | None]] = weakref.WeakKeyDictionary()


def context_of(session: Session) -> str | None:
    """The browser context a session's tabs live in (None: the browser's default one)."""
    return session.backend.context_id


def download_dir(ctx: ToolContext) -> Path:
    """Where this session's finished downloads go (`session start --download-dir`)."""
    chosen = ctx.session.download_dir
    return Path(chosen) if chosen else Path(ctx.state_dir) / "downloads" / ctx.session.id


def of_session(ctx: ToolContext) -> SessionDownloads:
    downloads = ctx.feature(SessionDownloads)
    if downloads.directory is None:  # made just now
        downloads.directory = download_dir(ctx)
    return downloads


def count(ctx: ToolContext) -> int:
    return len(of_session(ctx).items)


async def before_call(ctx: ToolContext) -> None:
    """Every call (tools/call_hooks.py): the session's downloads land in the state dir
    and are reported; a tab that can't say so only costs its downloads' report."""
    try:
        await watch(ctx)
    except (LinkError, OSError, BskError) as e:
        log.warning("watching downloads of %s: %s", ctx.session.id, e)


async def watch(ctx: ToolContext) -> None:
    """Make sure every tab of the session reports its downloads here and that its
    browser saves them under the state dir. Cheap after the first call per tab."""
    downloads = of_session(ctx)
    for tab in list(ctx.session.tabs.values()):
        if tab in _WATCHED or tab.gone:
            continue
        managed = await _set_behaviour(ctx, tab)
        incoming = Path(ctx.state_dir) / "downloads" / INCOMING if managed else None
        tab.listeners.append(_listener(downloads, tab.tab_id, incoming))
        _WATCHED.add(tab)


async def _set_behaviour(ctx: ToolContext, tab: Tab) -> bool:
    """Downloads of this tab's browser context go to `.incoming`; False if the link
    can't say so (the extension relays page sessions only)."""
    from browserskill.browser.cdp import CdpLink

    link = tab.link
    if not isinstance(link, CdpLink):
        return False
    contexts = _BEHAVIOUR_SET.setdefault(link, set())
    context = context_of(ctx.session)
    if context in contexts:
        return True
    incoming = Path(ctx.state_dir) / "downloads" / INCOMING
    _private_dir(incoming.parent)
    _private_dir(incoming)
    params: dict[str, Any] = {"behavior": "allowAndName", "downloadPath": str(incoming),
                              "eventsEnabled": True}
    if context:
        params["browserContextId"] = context
    try:
        await link.send("Browser.setDownloadBehavior", params, timeout=min(5.0, ctx.remaining()))
    except CdpError as e:  # a browser that refuses: its own settings apply, paths unknown
        log.warning("Browser.setDownloadBehavior: %s", e)
        return False
    contexts.add(context)
    return True


def _listener(downloads: SessionDownloads, tab_id: str, incoming: Path | None) -> Any:
    def on_event(session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "Page.downloadWillBegin":
            name = _safe_name(params.get("suggestedFilename") or "download")
            path = _reserve(downloads, name) if incoming is not None else None
            downloads.items.append(Download(
                params["guid"], tab_id, params.get("url", ""), name, path,
                incoming / params["guid"] if incoming is not None else None))
            downloads.touch()
        elif method == "Page.downloadProgress":
            item = downloads.by_guid(params.get("guid", ""))
            if item is None or item.state != "in_progress":
                return
            item.bytes = int(params.get("receivedBytes") or 0)
            item.total_bytes = int(params.get("totalBytes") or 0)
            state = params.get("state")
            if state == "completed":
                _finish(item)
            elif state == "canceled":
                item.state = "canceled"
            downloads.touch()

    return on_event


def _safe_name(name: str) -> str:
    """The page suggests the name: keep it a plain file name in our directory."""
    name = name.replace("/", "_").replace("\\", "_").replace("\0", "").strip() or "download"
    return "_" + name if name.startswith(".") else name[:200]


def _reserve(downloads: SessionDownloads, name: str) -> Path | None:
    if downloads.directory is None:
        return None
    taken = {d.path for d in downloads.items if d.path is not None}
    stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
    n = 1
    while True:
        candidate = downloads.directory / (name if n == 1 else f"{stem} ({n}){dot}{ext}")
        if candidate not in taken and not candidate.exists():
            return candidate
        n += 1


def _private_dir(path: Path) -> None:
    """Our own directories under the state dir are the user's alone (docs/design.md §6); a
    directory the caller chose keeps its mode."""
    fresh = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    if fresh or path.parent.name == "downloads" or path.name == "downloads":
        os.chmod(path, 0o700)


def _finish(item: Download) -> None:
    """Move the finished file from `.incoming` to its session's directory."""
    item.state = "completed"
    if item.incoming is None or item.path is None:
        return
    try:
        _private_dir(item.path.parent)
        os.replace(item.incoming, item.path)
        os.chmod(item.path, 0o600)  # the state dir's files are the user's alone
        item.bytes = item.path.stat().st_size
    except OSError as e:  # left where the browser put it: report that path
        log.warning("moving download %s: %s", item.guid, e)
        item.path = item.incoming


async def settle(ctx: ToolContext, since: int, *, expect: bool = False) -> list[dict[str, Any]]:
    """The downloads started since `since` (a `count` taken before an action), once each
    finished or the call's deadline is near. `expect`: the action was a download link,
    so wait (within the deadline) for its download to begin too."""
    downloads = of_session(ctx)
    loop = asyncio.get_running_loop()
    end = loop.time() + max(0.0, ctx.remaining() - ANSWER_MARGIN_S)
    begin_by = min(end, loop.time() + EXPECT_BEGIN_S)
    while True:
        started = downloads.items[since:]
        if (started or not expect) and all(d.state != "in_progress" for d in started):
            break
        changed = downloads.changed
        until = end if started else begin_by
        try:
            await asyncio.wait_for(changed.wait(), timeout=max(0.0, until - loop.time()))
        except TimeoutError:
            break
    for d in started:
        d.reported = d.reported or d.state != "in_progress"
    return [d.to_dict() for d in started]


@implements("download_list")
async def download_list(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    await watch(ctx)
    downloads = of_session(ctx)
    return {"downloads": [d.to_dict() for d in downloads.items],
            "directory": str(downloads.directory) if downloads.directory else None}


@implements("download_wait")
async def download_wait(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    """Until a download not yet reported has finished and none is still running."""
    await watch(ctx)
    downloads = of_session(ctx)
    loop = asyncio.get_running_loop()
    started_at = loop.time()
    end = started_at + max(0.05, ctx.remaining() - ANSWER_MARGIN_S)
    while True:
        running = [d for d in downloads.items if d.state == "in_progress"]
        fresh = [d for d in downloads.items if d.state != "in_progress" and not d.reported]
        if fresh and not running:
            for d in fresh:
                d.reported = True
            return {"downloads": [d.to_dict() for d in fresh],
                    "waited_ms": round((loop.time() - started_at) * 1000)}
        changed = downloads.changed
        try:
            await asyncio.wait_for(changed.wait(), timeout=max(0.0, end - loop.time()))
        except TimeoutError:
            waited = loop.time() - started_at
            what = (f"{len(running)} download(s) still running" if running
                    else "no new download started" + (
                        f" ({len(downloads.items)} earlier one(s) already reported: "
                        "`bsk download list`)" if downloads.items else ""))
            raise BskError("action_failed", f"waited {waited:.1f}s: {what}",
                           hint="raise --timeout; `bsk download list` shows every download "
                                "of this session", dispatched=Dispatched.NO,
                           details={"reason": "timeout", "waited_ms": round(waited * 1000),
                                    "in_progress": [d.to_dict() for d in running]}) from None
