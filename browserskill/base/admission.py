"""How many connections a listener holds before it knows who is calling (docs/design.md §6,
"Listener limits").

A connection is *unadmitted* from its accept until its request's headers have arrived (the
HTTP listeners) or its handshake proved a pairing (the extension listener). Nobody has
shown a token or a secret yet, so anyone able to connect can open one; each listener
therefore holds at most `MAX_UNADMITTED` of them (plus the `ACCEPT_BACKLOG` just taken
off the kernel's queue) and gives each `HEADER_READ_S` to become admitted (and at most
`MAX_HEADER_BYTES` of headers). Past the cap a new
connection is closed at once: a flood costs the flooder its connections, never the
daemon its file descriptors, and the Unix socket, served apart, keeps answering the
owner. `Admission` is the bookkeeping, free of I/O; the listeners call it.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)

HEADER_READ_S = 5.0  # accept (or a request's first byte) → its headers, complete
MAX_HEADER_BYTES = 64 * 1024  # a request's line and headers, together
MAX_UNADMITTED = 64  # per listener
# The Unix socket (0600) is the owner's alone: a burst of the owner's own calls is never
# cut at 64; the cap there only keeps a runaway client of the owner's below the file limit.
UNIX_MAX_UNADMITTED = 1024
# Connections taken off the kernel's queue in one go (the listen backlog, asyncio's accept
# batch), before any is counted: with the cap, what one listener can hold at once.
ACCEPT_BACKLOG = 64
# The daemon raises its soft file limit to this (or the hard limit, if lower): four
# listeners at (MAX_UNADMITTED + ACCEPT_BACKLOG) each stay far below it.
FILE_LIMIT = 4096
REFUSALS_LOGGED_EVERY_S = 10.0  # a flood is one log line per this, not one per connection


class Admission:
    """One listener's count of unadmitted connections, and what it refused."""

    def __init__(self, listener: str, cap: int = MAX_UNADMITTED) -> None:
        self.listener = listener
        self.cap = cap
        self.waiting = 0
        self.refused = 0  # since the last log line
        self.refused_total = 0
        self.timed_out_total = 0
        self._logged_at = 0.0

    def enter(self) -> bool:
        """A connection starts waiting to be admitted; False: over the cap, close it."""
        if self.waiting >= self.cap:
            self.refused += 1
            self.refused_total += 1
            now = time.monotonic()
            if now - self._logged_at >= REFUSALS_LOGGED_EVERY_S:
                log.warning("%s: %d connection(s) closed at accept: %d are already waiting "
                            "for their headers (the cap)", self.listener, self.refused,
                            self.cap)
                self._logged_at, self.refused = now, 0
            return False
        self.waiting += 1
        return True

    def leave(self) -> None:
        """A waiting connection was admitted, or went away."""
        self.waiting -= 1

    def timed_out(self) -> None:
        self.timed_out_total += 1

    def info(self) -> dict[str, int]:
        return {"waiting": self.waiting, "cap": self.cap, "refused": self.refused_total,
                "timed_out": self.timed_out_total}
