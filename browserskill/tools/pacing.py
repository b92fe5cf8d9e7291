"""Screencast frames to a constant-rate video: which frame fills which slot.

Chromium's screencast sends a frame when the page changes (none while it is still, bursts
while it animates); a video has one frame per 1/fps slot. Invariant: slot k shows the
newest frame whose timestamp is at or before k/fps after the first frame, and the slots
written cover the time from the first frame to the end (at least one slot). A frame that
is replaced within its own slot is dropped; a still page repeats its last frame. Pure:
the recorder feeds timestamps and writes what it is told.
"""

from __future__ import annotations


class FramePacer:
    def __init__(self, fps: int) -> None:
        self.fps = fps
        self.start: float | None = None  # the first frame's timestamp (seconds)
        self.written = 0  # slots written so far

    def push(self, timestamp: float) -> int:
        """A new frame arrived: how many slots the previous frame fills before it (0: the
        previous one is dropped, or this is the first)."""
        if self.start is None:
            self.start = timestamp
            return 0
        return self._fill_to(round((timestamp - self.start) * self.fps))

    def catch_up(self, timestamp: float) -> int:
        """No new frame up to `timestamp` (the page is still): how many slots before it the
        last frame fills now, so a long still stretch is not all encoded at the end."""
        if self.start is None:
            return 0
        return self._fill_to(round((timestamp - self.start) * self.fps))

    def finish(self, timestamp: float) -> int:
        """Recording ends at `timestamp`: how many slots the last frame fills."""
        if self.start is None:
            return 0
        return self._fill_to(max(self.written + 1,
                                 round((timestamp - self.start) * self.fps)))

    def _fill_to(self, slot: int) -> int:
        count = max(0, slot - self.written)
        self.written += count
        return count
