"""Constants of the daemon ↔ extension protocol, shared by the hub, the link and the
Agent Window (the extension's own copy is in extension/lib.js)."""

from __future__ import annotations

# The id Chromium derives from the "key" in extension/manifest.json.
EXTENSION_ID = "pebaeafhdkemkkghlhipicmckejioeln"
EXTENSION_ORIGIN = f"chrome-extension://{EXTENSION_ID}"
DEFAULT_PORT = 47800  # the extension's default; the daemon listens only when asked
# Versions this daemon speaks: [MIN_PROTOCOL, PROTOCOL]. 2: the handshake proves pairing
# (a challenge first, an HMAC in the hello); 1 trusted the Origin alone and is refused.
PROTOCOL, MIN_PROTOCOL = 2, 2
HANDSHAKE_S = 5.0
HEARTBEAT_MS = 10_000
SILENCE_S = 35.0  # no message (heartbeats included) for this long: the link is dead
MAX_MESSAGE = 256 * 1024 * 1024
BORROW_PROMPT_S = 30.0
# A lost browser's sessions wait this long for it to reconnect, then end (daemon option
# --extension-grace / BSK_EXTENSION_GRACE; 0 = they wait until stopped).
RECONNECT_GRACE_S = 600.0


def negotiate(theirs_min: int, theirs_max: int) -> int | None:
    """Compatibility rule: the highest protocol version in both ranges, or none."""
    lo, hi = max(MIN_PROTOCOL, theirs_min), min(PROTOCOL, theirs_max)
    return hi if lo <= hi else None
