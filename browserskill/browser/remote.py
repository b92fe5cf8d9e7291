"""`RemotePlacement`: a session in a browser someone else runs (`session start --cdp-url`).

The session gets a connection of its own to that browser (a `BrowserManager` attached to
the URL, probed for liveness: browser/cdp.py `CdpLink.watch`) and, in it, exactly what a
session gets in the embedded browser: a window per tab, focus emulation, optionally a
browser context of its own (docs/design.md, placement). A lost connection is re-made on
the session's next call, which re-attaches the tabs that survived.

Invariant: the placement's connection is its own; closing it (session end) touches no
other session, and its link dying ends only its own session's calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browserskill.browser.embedded import EmbeddedPlacement
from browserskill.browser.launcher import redacted
from browserskill.browser.manager import BrowserConfig, BrowserManager


class RemotePlacement(EmbeddedPlacement):
    placement = "cdp"

    def __init__(self, manager: BrowserManager, *, context_id: str | None = None,
                 window_size: tuple[int, int] | None = None) -> None:
        super().__init__(manager, context_id=context_id, window_size=window_size)
        self.ending = False

    @staticmethod
    def attach(url: str, state_dir: Path) -> BrowserManager:
        return BrowserManager(BrowserConfig(cdp_url=url), state_dir)

    @classmethod
    async def open(cls, url: str, state_dir: Path, *, isolated: bool) -> RemotePlacement:
        manager = cls.attach(url, state_dir)
        try:
            await manager.ensure()
            return cls(manager, context_id=await manager.create_context() if isolated
                       else None)
        except BaseException:
            await manager.shutdown()
            raise

    @property
    def cdp_url(self) -> str:
        return self.manager.config.cdp_url or ""

    def lost_hint(self) -> str:
        return (f"call again: the daemon reconnects to {redacted(self.cdp_url)} and brings "
                "this session's tabs back; if that browser is gone for good, `bsk session "
                "stop` this session and start one elsewhere")

    async def session_ended(self) -> None:
        self.ending = True  # its link closing now is no loss to report
        await super().session_ended()
        await self.manager.shutdown()  # only this session's connection

    def stored(self) -> dict[str, Any]:
        return {**super().stored(), "placement": self.placement, "cdp_url": self.cdp_url}

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["kind"] = self.placement
        out["browser"] = redacted(self.cdp_url)
        return out
