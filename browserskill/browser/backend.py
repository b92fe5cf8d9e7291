"""`Backend`: where one session runs — its place in a browser (docs/design.md, placement).

A session holds exactly one backend for its whole life, and the dispatcher and tools see
only this interface, whichever browser is behind it:

- `EmbeddedPlacement` (browser/embedded.py): windows of the daemon's own Chromium, in
  the shared profile or, isolated, in a browser context of the session's own;
- `AgentWindow` (browser/agent_window.py): an Agent Window in the user's own browser,
  through the extension.

Invariant: a backend only ever creates, adopts, shows or closes its own session's tabs;
nothing it does changes what another session's tabs see (visibility, size, focus).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from browserskill.browser.link import BrowserLink
    from browserskill.browser.tab import Tab


class SessionView(Protocol):
    """What a placement sees of the session it serves (session/sessions.py's `Session`):
    typed here, so the browser layer never imports the dispatch layer."""

    id: str
    label: str | None
    tabs: dict[str, Tab]
    current_tab_id: str | None

    def forget_tab(self, tab_id: str) -> None: ...


class Backend(Protocol):
    placement: str  # "embedded" | "extension": what `session list` shows
    context_id: str | None  # its browser context (None: the browser's default one)

    @property
    def link(self) -> BrowserLink | None:
        """The link its tabs talk through (None until there is one)."""
        ...

    @property
    def owner(self) -> object:
        """The browser whose link this is: when that link dies, its sessions' calls end."""
        ...

    def lost(self) -> bool:
        """Its browser is not reachable now (no link, or reconnecting)."""
        ...

    def lost_hint(self) -> str:
        """What to do when `lost()`: said in browser_unavailable answers."""
        ...

    def before_dispatch(self) -> None:
        """Checked when an operation on the session's pages gets the session, before
        anything is sent; raises the BskError that refuses it (nothing dispatched)."""
        ...

    async def new_tab(self, tab_id: str, url: str = "about:blank") -> Tab: ...

    async def adopt_tab(self, tab_id: str, target_id: str, opener: Tab | None = None) -> Tab:
        """Attach a tab the session's own page opened (`opener`), or one that survived a
        daemon restart (no opener)."""
        ...

    def check_close(self, tab: Tab) -> None:
        """Raise if the agent may not close this tab (a user's borrowed tab)."""
        ...

    async def close_tab(self, tab: Tab) -> None: ...

    async def recover_tabs(self, lost: list[Tab],
                           timeout: float) -> tuple[list[tuple[Tab, str]], str | None]:
        """Tabs whose link died with their browser (or its connection), back under the same
        tab ids: re-attached where the page survived ("reattached", its state intact), else
        opened again at its last URL ("reopened", page state lost); and what else was lost,
        if anything. ([], None) if this placement gets its tabs back by itself (the
        extension re-adopts them when it reconnects)."""
        ...

    async def show(self, tab: Tab, timeout: float) -> None:
        """Make the tab the visible one of its window (the session's current tab)."""
        ...

    async def ask_for_help(self, tab: Tab, reason: str | None) -> None:
        """Show the agent's request for help (Done / Decline) where the user sees the tab,
        or take it away (None). The dashboard shows it for every placement."""
        ...

    async def ensure_shown(self, tab: Tab, timeout: float) -> None:
        """Before a call on the current tab: visible, so it gets frames (no-op when it is,
        which is nearly always; costs nothing then)."""
        ...

    def windows_to_follow(self, tab: Tab, tabs: list[Tab]) -> list[Tab]:
        """Of the session's other tabs, those whose windows should take the size that
        `window resize` gives `tab`'s (one per other window of the session)."""
        ...

    def resized(self, width: int, height: int) -> None:
        """The session's windows now have this size: new tabs get it too."""
        ...

    async def session_ended(self) -> None:
        """The session ended (its tabs are closed or given back): release the rest."""
        ...

    def stored(self) -> dict[str, Any]:
        """What the session store keeps to re-adopt it after a daemon restart."""
        ...

    def describe(self) -> dict[str, Any]:
        """Its placement as `session list` shows it ({"kind": …, …})."""
        ...
