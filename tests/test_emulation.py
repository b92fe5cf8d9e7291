"""Device emulation and window size against real Chromium."""

from __future__ import annotations

from typing import Any

from support.cli import Bsk


def view(bsk: Bsk) -> dict[str, Any]:
    return bsk("eval", "({w: innerWidth, h: innerHeight, dpr: devicePixelRatio, "
                       "ua: navigator.userAgent, touch: navigator.maxTouchPoints})").value


def test_emulate_adds_up_and_turns_off(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    before = view(bsk)

    sized = bsk.ok("emulate", "--width", "390", "--height", "700", "--scale", "2")
    assert sized["retry_safe"] is False
    assert sized["result"]["page"]["width"] == 390 and sized["result"]["page"]["scale"] == 2
    assert view(bsk)["w"] == 390 and view(bsk)["dpr"] == 2

    # Later settings keep earlier ones
    agent = bsk.ok("emulate", "--user-agent", "TestBot/1.0")["result"]
    assert agent["emulation"] == {"width": 390, "height": 700, "scale": 2,
                                  "user_agent": "TestBot/1.0"}
    assert agent["page"]["width"] == 390 and agent["page"]["user_agent"] == "TestBot/1.0"
    mobile = bsk.ok("emulate", "--mobile")["result"]
    assert mobile["page"]["touch"] is True
    # Emulation belongs to the tab: it survives a navigation in it
    bsk.ok("reload")
    now = view(bsk)
    assert now["ua"] == "TestBot/1.0" and now["dpr"] == 2 and now["touch"] > 0

    off = bsk.ok("emulate", "--off")["result"]
    assert off["emulation"] is None
    after = view(bsk)
    assert (after["w"], after["h"], after["dpr"], after["ua"]) == (
        before["w"], before["h"], before["dpr"], before["ua"])
    assert after["touch"] == before["touch"]


def test_emulate_bad_input(bsk: Bsk) -> None:
    for args in [(), ("--off", "--width", "300"), ("--scale", "0"), ("--width", "abc")]:
        r = bsk("emulate", *args)
        assert r.code == 2, (args, r.stdout)
        assert r.json["error"]["code"] == "invalid_params" and r.json["dispatched"] == "no"


def test_window_resize(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    try:
        resized = bsk.ok("window", "resize", "900", "600")["result"]
        assert (resized["window"]["width"], resized["window"]["height"]) == (900, 600)
        assert resized["page"]["width"] == 900 and view(bsk)["w"] == 900
        text = bsk("window", "resize", "1000", "650", as_json=False)
        assert text.code == 0 and text.stdout.startswith("window 1000x650")
        assert view(bsk)["w"] == 1000
    finally:
        bsk.ok("window", "resize", "1280", "720")  # the launcher's size, for other tests
    small = bsk("window", "resize", "10", "10")
    assert small.code == 2 and small.json["error"]["code"] == "invalid_params"
