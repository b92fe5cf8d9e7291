"""Pairing the extension (docs/extension.md, "Pairing"): the listener takes a connection
for a browser only once it proves the secret the user set up with `bsk extension pair`
and the code entered in the extension's options page; the pinned Origin alone, which
any local process can send, gets nothing. The real extension in a headless Chromium,
and plain WebSocket clients forging the extension's Origin."""

from __future__ import annotations

import json
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.chromium import free_port
from support.cli import Bsk
from support.extension import BrowserWithExtension, extension_browser
from support.wait import wait_until
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from browserskill.browser.extension_pairing import HELLO, PAIR_HELLO, WRONG_CODE_DELAY_S, mac
from browserskill.browser.extension_protocol import EXTENSION_ORIGIN


@pytest.fixture
def unpaired(make_bsk: Callable[..., Bsk], tmp_path: Path) -> Iterator[BrowserWithExtension]:
    """A daemon with its extension listener, and a Chromium whose extension is pointed at
    it (port saved in its options page) but not paired."""
    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port))
    with extension_browser(runner, port, tmp_path / "chromium.log", pair=False) as ext:
        yield ext


def refused_in_popup(ext: BrowserWithExtension, *words: str) -> dict[str, str]:
    """Wait until the popup shows the daemon's refusal (with these words); return it.
    The refusal comes on the extension's next connection: after a handshake or two that
    a loaded machine's 5 s limits cut, its backoff (up to 5 s) can run past 20 s."""
    seen: list[dict[str, str]] = []

    def shown() -> dict[str, str] | None:
        popup = ext.popup()
        seen[:] = [popup]
        ok = popup["state"] == "unpaired" and all(w in popup["error"] for w in words)
        return popup if ok else None

    try:
        return wait_until(shown, 60, f"the popup to show the refusal {words}")
    except AssertionError as e:
        raise AssertionError(f"{e}; it last showed {seen}") from None


def test_an_unpaired_browser_is_refused_and_told_how_to_pair(
        unpaired: BrowserWithExtension) -> None:
    popup = refused_in_popup(unpaired, "not paired", "bsk extension pair")
    assert popup["port"] == f"127.0.0.1:{unpaired.port}"
    assert "bsk extension pair" in popup["pairing"]  # the popup says what to do
    listing = unpaired.bsk.ok("browsers")
    assert listing["browsers"] == [] and listing["paired"] == []
    r = unpaired.bsk("session", "start", "x", "--browser", "extension")
    assert r.code == 10 and r.json["error"]["code"] == "browser_unavailable"
    # Refused for a reason retrying can't mend: it waits for the user instead of knocking
    # with its backoff (250 ms, 500 ms, 1 s …: several by now). A worker Chrome stopped
    # and its alarm woke (every 30 s) may try once more.
    log = (unpaired.bsk.home / "daemon.log").read_text()
    assert log.count("refused an extension handshake (not_paired)") in (1, 2), log


def test_pairing_with_the_code_then_reconnects_on_the_secret_alone(
        unpaired: BrowserWithExtension) -> None:
    ext = unpaired
    refused_in_popup(ext, "not paired")
    wrong = ext.pair_in_options_page("ABCDE-FGHJK")  # no code pending yet
    assert wrong.startswith("not paired:") and "bsk extension pair" in wrong, wrong
    code = ext.bsk.ok("extension", "pair")["code"]
    assert ext.pair_in_options_page(code.lower().replace("-", " ")).startswith(
        "paired with the daemon")  # as typed: lower case, a space
    (b,) = wait_until(ext.connected, 20, "the paired browser to connect")
    assert b["protocol"] == 2
    popup = ext.popup()
    assert popup["state"] == "connected" and popup["error"] == "" and popup["pairing"] == ""
    # The daemon keeps the secret 0600 in the state dir; the listing never shows it.
    stored = ext.bsk.home / "extension-pairings.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    secret = json.loads(stored.read_text())["browsers"][b["browser_id"]]["secret"]
    assert len(secret) == 64 and secret not in json.dumps(ext.bsk.ok("browsers"))
    # A code is good once.
    again = ext.pair_in_options_page(code)
    assert "no pairing code is pending" in again, again
    wait_until(ext.connected, 20, "the browser to connect again on its secret")
    # A new daemon on the same state dir knows the browser: no pairing again.
    ext.bsk.stop_daemon()
    wait_until(lambda: not ext.connected(), 20, "the daemon to stop")
    ext.bsk.ok("daemon", "start")
    wait_until(ext.connected, 20, "the extension to reconnect to the new daemon")
    s = ext.bsk.with_session("after")
    ext.bsk.ok("session", "start", "after", "--browser", "extension")
    assert s("eval", "1 + 1").value == 2


def test_a_wrong_secret_is_refused_and_unpair_disconnects(unpaired: BrowserWithExtension) -> None:
    ext = unpaired
    assert ext.pair_in_options_page(ext.bsk.ok("extension", "pair")["code"]).startswith(
        "paired")
    (b,) = wait_until(ext.connected, 20, "the paired browser to connect")
    # The extension's stored secret no longer matches the daemon's.
    assert ext.worker_eval(f"chrome.storage.local.set({{pairings: {{{ext.port}: "
                           f"'{'00' * 32}'}}}}).then(() => (bsk.reconnectNow(), true))")
    refused_in_popup(ext, "secret does not match")
    assert ext.connected() == []
    # Paired again, then unpaired by the user: disconnected, and refused from then on.
    assert ext.pair_in_options_page(ext.bsk.ok("extension", "pair")["code"]).startswith(
        "paired")
    wait_until(ext.connected, 20, "the browser paired again")
    r = ext.bsk("extension", "unpair", b["browser_id"], as_json=False)
    assert r.code == 0 and f"unpaired {b['browser_id']} (disconnected)" in r.stdout
    refused_in_popup(ext, "not paired")
    assert ext.connected() == [] and ext.bsk.ok("browsers")["paired"] == []
    r = ext.bsk("extension", "unpair", b["browser_id"])
    assert r.code == 2 and r.json["error"]["details"]["field"] == "browser_id"


def handshake(ws: ClientConnection, instance: str, **proof: Any) -> dict[str, Any]:
    """Read the challenge, send a hello (with `auth`/`pair` as given), return the answer."""
    challenge = json.loads(ws.recv(timeout=5))
    assert challenge["type"] == "challenge" and len(challenge["nonce"]) >= 32
    fields = {k: v(challenge["nonce"]) if callable(v) else v for k, v in proof.items()}
    ws.send(json.dumps({"type": "hello", "protocol": 2, "min_protocol": 2,
                        "instance_id": instance, **fields}))
    return json.loads(ws.recv(timeout=5))


def test_a_forged_origin_from_a_plain_websocket_client_is_refused(
        ext_browser: BrowserWithExtension) -> None:
    ext = ext_browser
    (real,) = ext.connected()
    url = f"ws://127.0.0.1:{ext.port}/"
    nonce = "ab" * 16

    def forged(instance: str, **proof: Any) -> dict[str, Any]:
        with connect(url, origin=EXTENSION_ORIGIN) as ws:  # type: ignore[arg-type]
            answer = handshake(ws, instance, **proof)
            with pytest.raises(ConnectionClosed):  # then closed: 1008, policy violation
                ws.recv(timeout=5)
            assert ws.close_code == 1008 and answer.get("code") in ws.close_reason
            return answer

    # No proof at all, under a new id or the paired browser's own.
    assert forged("forger")["code"] == "not_paired"
    assert forged(real["browser_id"])["code"] == "bad_handshake"
    # Claiming to be the paired browser, with a made-up secret.
    bad = forged(real["browser_id"], auth=lambda sn: {
        "nonce": nonce, "proof": mac(b"guess", HELLO, sn, nonce, real["browser_id"])})
    assert bad["type"] == "refused" and bad["code"] == "bad_secret"
    # None of it became a browser, paired one, or disturbed the real one.
    assert [b["browser_id"] for b in ext.connected()] == [real["browser_id"]]
    assert [p["browser_id"] for p in ext.bsk.ok("browsers")["paired"]] == [real["browser_id"]]
    s = ext.bsk.with_session("still")
    ext.bsk.ok("session", "start", "still", "--browser", "extension")
    assert s("eval", "6 * 7").value == 42


def test_wrong_codes_cost_their_connections_not_the_owners_code(
        make_bsk: Callable[..., Bsk]) -> None:
    """Guessing the code: each wrong try holds its own connection, then closes it; the
    code stays good, so a local user can't deny the owner the pairing. A handshake whose
    protocol is not a whole number (`Infinity`) is refused like any bad handshake."""
    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port))
    runner.ok("daemon", "start")
    url = f"ws://127.0.0.1:{port}/"
    code = runner.ok("extension", "pair")["code"].replace("-", "")
    nonce = "cd" * 16

    def attempt(key: bytes, instance: str) -> tuple[dict[str, Any], float]:
        began = time.monotonic()
        with connect(url, origin=EXTENSION_ORIGIN) as ws:  # type: ignore[arg-type]
            answer = handshake(ws, instance, pair=lambda sn: {
                "nonce": nonce, "proof": mac(key, PAIR_HELLO, sn, nonce, instance)})
            if answer["type"] == "refused":
                with pytest.raises(ConnectionClosed):  # one try per connection
                    ws.recv(timeout=5)
        return answer, time.monotonic() - began

    wrong: list[tuple[dict[str, Any], float]] = []
    guessers = [threading.Thread(target=lambda: wrong.append(attempt(b"AAAAAAAAAA", "guess")))
                for _ in range(12)]
    for t in guessers:
        t.start()
    for t in guessers:
        t.join(30)
    assert len(wrong) == 12
    for answer, took in wrong:
        assert answer["code"] == "bad_code" and "wrong pairing code" in answer["reason"]
        assert took >= WRONG_CODE_DELAY_S  # the guess cost its connection this long
    welcome, _ = attempt(code.encode(), "owner-browser")
    assert welcome["type"] == "welcome" and welcome["paired"] is True, welcome
    assert [p["browser_id"] for p in runner.ok("browsers")["paired"]] == ["owner-browser"]

    with connect(url, origin=EXTENSION_ORIGIN) as ws:  # type: ignore[arg-type]
        json.loads(ws.recv(timeout=5))
        ws.send('{"type": "hello", "protocol": Infinity, "instance_id": "x"}')
        answer = json.loads(ws.recv(timeout=5))
    assert answer["code"] == "bad_handshake" and "protocol" in answer["reason"], answer
    log = (runner.home / "daemon.log").read_text()
    assert "Traceback" not in log and "OverflowError" not in log, log[-3000:]


def test_the_extension_obeys_no_daemon_that_cannot_prove_the_secret(
        ext_browser: BrowserWithExtension) -> None:
    """A process that took the port (the daemon's or another) and answers like a daemon:
    the extension sends no secret, checks the welcome's proof, and runs nothing it asks."""
    from websockets.sync.server import ServerConnection, serve

    ext = ext_browser
    seen: list[dict[str, Any]] = []
    answered = threading.Event()

    def impostor(ws: ServerConnection) -> None:
        ws.send(json.dumps({"type": "challenge", "nonce": "cd" * 16}))
        seen.append(json.loads(ws.recv(timeout=10)))
        ws.send(json.dumps({"type": "welcome", "protocol": 2, "heartbeat_ms": 10_000,
                            "proof": "00" * 32}))
        ws.send(json.dumps({"id": 1, "op": "tabs_query"}))  # the user's tabs, please
        try:
            while True:
                if "id" in json.loads(ws.recv(timeout=10)):
                    answered.set()
        except Exception:
            pass

    port = free_port()
    with serve(impostor, "127.0.0.1", port) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        assert ext.worker_eval(f"bsk.configure({{port: {port}}})")
        popup = wait_until(lambda: (lambda p: p if p["state"] == "refused" else None)(
            ext.popup()), 20, "the extension to refuse the impostor")
        assert "could not prove the pairing" in popup["error"]
        server.shutdown()
    (hello,) = seen
    assert "auth" not in hello and "pair" not in hello  # not paired with that port
    assert not answered.is_set()


def test_bsk_extension_pair_says_what_to_do_or_why_not(
        make_bsk: Callable[..., Bsk]) -> None:
    off = make_bsk()  # a daemon without the extension listener
    r = off("extension", "pair")
    assert r.code == 2 and r.json["error"]["code"] == "not_configured"
    assert r.json["error"]["details"]["option"] == "extension_port"
    assert "--extension-port" in r.json["error"]["hint"]
    port = free_port()
    on = make_bsk(BSK_EXTENSION_PORT=str(port))
    r = on("extension", "pair", as_json=False)
    assert r.code == 0, r.stderr
    code = r.stdout.split("pairing code: ", 1)[1].split()[0]
    assert len(code) == 11 and code[5] == "-" and not set(code) & set("01OILU")
    assert f"port {port}" in r.stdout and "Pair" in r.stdout
    # Each call makes a new code; the one before is void.
    assert on.ok("extension", "pair")["code"] != code
