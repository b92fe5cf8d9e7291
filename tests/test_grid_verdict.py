"""What a Grid session's state is once the hub does not say yes, from a table: the hub's
answer, the node's own answer and the node's availability in the hub's /status →
alive, ended, node lost, forgotten by the hub, or "can't say yet" (GridError: a retry may
help). `browserskill.browser.webdriver.judge` is a pure function; tests/test_grid.py
checks, against a real hub and nodes killed, frozen and restarted, that these are the
answers bsk gets and what it makes of them."""

from __future__ import annotations

import httpx
import pytest

from browserskill.browser.webdriver import (
    ALIVE,
    ENDED,
    FORGOTTEN,
    NODE_LOST,
    GridError,
    Reply,
    cause,
    judge,
)

NODE = "http://10.0.0.7:5555"
OK = Reply(200, "HTTP 200")
UNKNOWN = Reply(404, "HTTP 404 (invalid session id: Unable to find session)")
CANT_REACH = Reply(500, "HTTP 500 (unknown error: Unable to execute request for an "
                        "existing session: Connection error)")
REFUSED = Reply(None, "ConnectError: [Errno 111] Connection refused")
SILENT = Reply(None, "no answer within 1.5 s (ReadTimeout)", timed_out=True)
RETRY = "retry"  # GridError: no one can say yet

# (hub's answer, the node's own (None: node unknown), its /status availability, verdict)
TABLE: list[tuple[Reply, Reply | None, str | None, str]] = [
    (OK, None, "?", ALIVE),
    # The Grid ended it: the hub and the node agree, or the hub says so and the node
    # is not known or can't be reached from here while the hub lists it up.
    (UNKNOWN, None, "?", ENDED),
    (UNKNOWN, UNKNOWN, "UP", ENDED),
    (CANT_REACH, UNKNOWN, "UP", ENDED),
    (UNKNOWN, REFUSED, "UP", ENDED),
    # A node killed: the hub can't reach it and nothing listens there.
    (CANT_REACH, REFUSED, "UP", NODE_LOST),
    (CANT_REACH, REFUSED, "?", NODE_LOST),
    # The hub has given up on the node (marked down, or dropped from /status).
    (UNKNOWN, REFUSED, None, NODE_LOST),
    (UNKNOWN, REFUSED, "DOWN", NODE_LOST),
    (CANT_REACH, SILENT, "DOWN", NODE_LOST),
    (SILENT, SILENT, None, NODE_LOST),
    # A hub that restarted: it forgot the session, the node still runs it.
    (UNKNOWN, OK, "UP", FORGOTTEN),
    (UNKNOWN, OK, "?", FORGOTTEN),
    # Can't say yet: a frozen or cut-off node, a hub that is down or failing.
    (SILENT, SILENT, "UP", RETRY),
    (CANT_REACH, SILENT, "UP", RETRY),
    (SILENT, OK, "UP", RETRY),
    (REFUSED, OK, "?", RETRY),
    (REFUSED, REFUSED, "?", RETRY),  # this machine may be the one cut off
    (CANT_REACH, None, "?", RETRY),
    (CANT_REACH, Reply(503, "HTTP 503"), "UP", RETRY),
]


@pytest.mark.parametrize(("hub", "on_node", "availability", "expected"), TABLE)
def test_judge(hub: Reply, on_node: Reply | None, availability: str | None,
               expected: str) -> None:
    node = NODE if on_node is not None else None
    if expected == RETRY:
        with pytest.raises(GridError) as caught:
            judge(hub, node, on_node, availability)
        message = str(caught.value)
        assert hub.said in message
        if on_node is not None:
            assert NODE in message and on_node.said in message
        if on_node is SILENT:
            assert "frozen or cut off" in message
        return
    verdict = judge(hub, node, on_node, availability)
    assert verdict.state == expected
    if expected != ALIVE:  # the evidence is in the message, the node named
        assert hub.said in verdict.why
        if on_node is not None:
            assert NODE in verdict.why and on_node.said in verdict.why


def test_every_cause_is_named() -> None:
    """httpx's timeouts and some connection errors have no text: the type says it."""
    assert cause(httpx.ReadTimeout(""), 1.5) == "no answer within 1.5 s (ReadTimeout)"
    assert cause(httpx.ConnectTimeout("")) == "no answer (ConnectTimeout)"
    assert cause(TimeoutError()) == "no answer (TimeoutError)"
    assert cause(httpx.RemoteProtocolError("")) == "RemoteProtocolError"
    assert cause(httpx.ConnectError("[Errno 111] Connection refused")) == \
        "ConnectError: [Errno 111] Connection refused"
    try:  # as async httpx raises it: the OS error is only in the chain
        try:
            raise ConnectionRefusedError(111, "Connect call failed")
        except OSError as inner:
            raise httpx.ConnectError("All connection attempts failed") from inner
    except httpx.ConnectError as outer:
        assert cause(outer) == \
            "ConnectError: All connection attempts failed (Connection refused)"
