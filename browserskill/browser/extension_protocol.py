"""The daemon ↔ extension protocol, as data: its constants, and the one table of the
requests the extension serves and the messages each side sends. The hub, the link and
the Agent Window use these names; extension/background.js (its `OPS` and the messages it
sends and handles), extension/lib.js (the shared constants) and docs/extension.md are
checked against this table by tests/test_extension_protocol.py."""

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
# A lost browser's sessions wait this long for it to reconnect, then end (daemon option
# --extension-grace / BSK_EXTENSION_GRACE; 0 = they wait until stopped).
RECONNECT_GRACE_S = 600.0


def negotiate(theirs_min: int, theirs_max: int) -> int | None:
    """Compatibility rule: the highest protocol version in both ranges, or none."""
    lo, hi = max(MIN_PROTOCOL, theirs_min), min(PROTOCOL, theirs_max)
    return hi if lo <= hi else None


# Daemon → extension requests, `{"id", "op", …}`, answered `{"id", "result"}` or
# `{"id", "error": {"code", "message"}}`.
OPS: dict[str, str] = {
    "cdp": "one CDP command in a tab ({tabId, sessionId?, method, params})",
    "cdp_sequence": "CDP commands run in order by the worker, one hop for all (input)",
    "attach": "chrome.debugger.attach to a tab (focus emulation on); its target info",
    "detach": "chrome.debugger.detach from a tab",
    "window_create": "a new Agent Window for a session",
    "window_close": "close an Agent Window",
    "window_bounds": "read or set an Agent Window's bounds (never another window)",
    "tab_create": "a new tab in an Agent Window",
    "tab_close": "close one of the agent's tabs",
    "tabs_query": "the browser's tabs, with whose each is",
    "tab_get": "one tab's window, index, URL",
    "tab_move": "move a borrowed tab into an Agent Window",
    "tab_restore": "put a borrowed tab back where it was",
    "overlay": "show or hide the agent overlay in a tab: Stop, or with `help` a request "
               "for help (Done / Decline)",
    "borrow_prompt": "ask the user in their tab whether the agent may borrow it",
    "prompt_cancel": "take a borrow prompt away",
    "session_bind": "remember a session's Agent Window (after a daemon restart)",
    "session_end": "forget a session and its borrowed tabs",
}
# Messages without an id, daemon → extension.
DAEMON_MESSAGES: dict[str, str] = {
    "challenge": "first on every connection: the nonce the hello's proof covers",
    "welcome": "the handshake is accepted (with the daemon's own proof)",
    "refused": "the handshake is refused ({code, reason}); the connection closes",
    "sessions": "the Agent Windows' sessions the daemon still has after reconciling",
    "pong": "the answer to a ping",
    "abort": "stop a running cdp_sequence before its next command ({of: id})",
    "approvals": "the calls of the browser's sessions held for a person's approval "
                 "({pending: [{op_id, session_id, tool, what, why}]}), on every change",
}
# Messages without an id, extension → daemon.
EXTENSION_MESSAGES: dict[str, str] = {
    "hello": "the handshake: versions, instance id, open Agent Windows, pairing proof",
    "ping": "heartbeat",
    "event": "a CDP event of an attached tab ({tabId, sessionId?, method, params})",
    "detached": "chrome.debugger detached from a tab ({tabId, reason})",
    "tab_opened": "a tab opened in an Agent Window or by an attached tab",
    "tab_removed": "a tab closed",
    "window_removed": "a window closed",
    "interrupt": "the user pressed Stop in an agent tab's overlay ({session_id})",
    "help_answer": "the user pressed Done or Decline on a request for help in an agent "
                   "tab's overlay ({session_id, answer})",
    "approval_answer": "the user pressed Approve or Deny on a held call in the popup "
                       "({op_id, answer})",
}
# Error codes of the extension's answers.
ERROR_CODES: dict[str, str] = {
    "cdp": "Chrome answered the CDP command with an error ({code, message, data, index})",
    "restricted": "a page BrowserSkill never touches (the browser's own, the Web Store)",
    "tab_gone": "the tab closed (or was detached) under the command",
    "no_tab": "no such tab",
    "attach_failed": "chrome.debugger could not attach",
    "not_agent_window": "a window that is not an Agent Window (never touched)",
    "unknown_op": "an op this extension does not serve",
    "browser_error": "anything else the browser refused",
}
