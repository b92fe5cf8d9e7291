"""A tab's live picture (`Page.startScreencast`) for any number of viewers, and a
person's input sent back to it as real input events (docs/dashboard.md).

Invariant: one screencast per tab, running while it has at least one viewer; every
frame is acknowledged (Chromium sends the next only then), and a viewer that is slow
gets the newest frame, never a backlog. A link knows nothing of sessions: this module
takes a `Tab` and callbacks.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from browserskill.base import background
from browserskill.browser import keys
from browserskill.browser.link import LinkError
from browserskill.browser.tab import Tab, TabGone

log = logging.getLogger(__name__)

# JPEG at this size and quality keeps a frame near 30-60 kB: a few a second cost little
# CPU on a 2-core machine, yet text stays readable.
FRAME_FORMAT = {"format": "jpeg", "quality": 60, "maxWidth": 1024, "maxHeight": 768}

# What a viewer gets: the JPEG bytes and Chromium's metadata (deviceWidth/Height in CSS
# pixels, offsetTop, pageScaleFactor, timestamp), to map a click back onto the page.
FrameSink = Callable[[bytes, dict[str, Any]], None]


class Screencast:
    """The screencast of one tab, shared by its viewers."""

    def __init__(self, tab: Tab) -> None:
        self.tab = tab
        self.viewers: list[FrameSink] = []
        self.last: tuple[bytes, dict[str, Any]] | None = None
        self.frames = 0
        self._running = False

    def _on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method != "Page.screencastFrame" or session_id != self.tab.session_id:
            return
        import base64

        self.frames += 1
        frame = base64.b64decode(params["data"])
        meta = params.get("metadata") or {}
        self.last = (frame, meta)
        # Chromium sends the next frame only after this ack: acking at once keeps the
        # picture live; a slow viewer just sees fewer frames (it keeps the newest).
        background.start(self._ack(params["sessionId"]), name="screencast-ack")
        for viewer in list(self.viewers):
            viewer(frame, meta)

    async def _ack(self, frame_session: int) -> None:
        with contextlib.suppress(LinkError, TabGone):
            await self.tab.send("Page.screencastFrameAck", {"sessionId": frame_session},
                                timeout=5)

    async def watch(self, viewer: FrameSink) -> None:
        """Add a viewer; it gets the last frame at once, if there is one."""
        self.viewers.append(viewer)
        if self.last is not None:
            viewer(*self.last)
        if not self._running:
            self._running = True
            self.tab.listeners.append(self._on_event)
            try:
                await self.tab.send("Page.startScreencast", FRAME_FORMAT, timeout=5)
            except BaseException:
                self._running = False
                self.tab.listeners.remove(self._on_event)
                raise

    async def unwatch(self, viewer: FrameSink) -> None:
        """Drop a viewer; the last one out stops the screencast."""
        if viewer in self.viewers:
            self.viewers.remove(viewer)
        if self.viewers or not self._running:
            return
        self._running = False
        if self._on_event in self.tab.listeners:
            self.tab.listeners.remove(self._on_event)
        with contextlib.suppress(LinkError, TabGone):
            await self.tab.send("Page.stopScreencast", timeout=5)


def _modifiers(event: dict[str, Any]) -> int:
    names = [n for n, flag in (("Alt", "alt"), ("Control", "ctrl"), ("Meta", "meta"),
                               ("Shift", "shift")) if event.get(flag)]
    return keys.modifier_bits(names)


def _number(event: dict[str, Any], name: str, lo: float, hi: float) -> float:
    value = event.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a number from {lo} to {hi}")
    return float(value)


def input_commands(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A viewer's input event as the CDP commands that make it real input.

    `event`: {"kind": "click"|"wheel"|"key"|"text", ...} with x, y in CSS pixels of the
    page's viewport (the viewer maps its image back with the frame's metadata).
    ValueError names what is wrong with an event."""
    what = event.get("kind")
    mods = _modifiers(event)
    if what in ("click", "wheel"):
        x, y = _number(event, "x", 0, 100_000), _number(event, "y", 0, 100_000)
        if what == "wheel":
            dx = _number(event, "dx", -100_000, 100_000)
            dy = _number(event, "dy", -100_000, 100_000)
            return [("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y,
                                                  "deltaX": dx, "deltaY": dy,
                                                  "modifiers": mods})]
        button = event.get("button", "left")
        if button not in ("left", "middle", "right"):
            raise ValueError("button must be left, middle or right")
        base = {"x": x, "y": y, "button": button, "clickCount": 1, "modifiers": mods}
        return [("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y,
                                              "modifiers": mods}),
                ("Input.dispatchMouseEvent", {**base, "type": "mousePressed"}),
                ("Input.dispatchMouseEvent", {**base, "type": "mouseReleased"})]
    if what == "text":
        text = event.get("text")
        if not isinstance(text, str) or not 0 < len(text) <= 1000:
            raise ValueError("text must be 1-1000 characters")
        return [("Input.insertText", {"text": text})]
    if what == "key":
        name = event.get("key")
        if not isinstance(name, str):
            raise ValueError("key must be a key name")
        k = keys.lookup(name)  # BadKeyError is a ValueError that says why
        down: dict[str, Any] = {"type": "rawKeyDown", "key": k.key, "code": k.code,
                                "windowsVirtualKeyCode": k.key_code, "modifiers": mods}
        # A key that inserts text does so unless a shortcut modifier is held (Ctrl+A).
        if k.text and not mods & keys.modifier_bits(("Control", "Meta")):
            down.update(type="keyDown", text=k.text)
        up = {"type": "keyUp", "key": k.key, "code": k.code,
              "windowsVirtualKeyCode": k.key_code, "modifiers": mods}
        return [("Input.dispatchKeyEvent", down), ("Input.dispatchKeyEvent", up)]
    raise ValueError("kind must be click, wheel, key or text")


async def send_input(tab: Tab, event: dict[str, Any]) -> None:
    """Send a viewer's input event to the tab as real input (ValueError: a bad event)."""
    for method, params in input_commands(event):
        await tab.send(method, params, timeout=5)
