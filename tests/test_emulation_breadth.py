"""The rest of emulation against real Chromium, each setting observed from page script:
media features, network, CPU, geolocation, timezone, locale, named devices, permissions,
and `--reset` undoing each."""

from __future__ import annotations

import os
from typing import Any

import pytest
from support.cli import Bsk
from support.wait import in_ci

from browserskill.tools.devices import devices_file

# What the page sees, read by page script (not by the tool's own read-back).
SEEN = """({
  dark: matchMedia('(prefers-color-scheme: dark)').matches,
  light: matchMedia('(prefers-color-scheme: light)').matches,
  reduce: matchMedia('(prefers-reduced-motion: reduce)').matches,
  print: matchMedia('print').matches,
  online: navigator.onLine,
  language: navigator.language,
  languages: navigator.languages,
  timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  number: (1234.5).toLocaleString(),
  width: innerWidth, dpr: devicePixelRatio, touch: navigator.maxTouchPoints,
  ua: navigator.userAgent,
})"""

POSITION = """new Promise(resolve => navigator.geolocation.getCurrentPosition(
  p => resolve([p.coords.latitude, p.coords.longitude, p.coords.accuracy]),
  e => resolve('error: ' + e.message), {timeout: 5000}))"""

PERMISSION = "navigator.permissions.query({name: %r}).then(s => s.state)"


def seen(bsk: Bsk) -> dict[str, Any]:
    value: dict[str, Any] = bsk("eval", SEEN).value
    return value


@pytest.fixture
def page(bsk: Bsk, site: str) -> str:
    bsk.ok("open", f"{site}/evidence.html")
    return site


def test_media_features_and_reset(bsk: Bsk, page: str) -> None:
    before = seen(bsk)
    r = bsk.ok("emulate", "--color-scheme", "dark", "--reduced-motion", "--media", "print")
    assert r["result"]["page"]["color_scheme"] == "dark"
    now = seen(bsk)
    assert (now["dark"], now["reduce"], now["print"]) == (True, True, True)
    bsk.ok("emulate", "--color-scheme", "light", "--no-reduced-motion")  # adds up
    now = seen(bsk)
    assert (now["light"], now["dark"], now["reduce"], now["print"]) == (True, False, False,
                                                                        True)
    assert bsk.ok("emulate", "--reset")["result"]["emulation"] is None
    assert seen(bsk) == before


def test_timezone_and_locale(bsk: Bsk, page: str) -> None:
    before = seen(bsk)
    r = bsk.ok("emulate", "--timezone", "Asia/Tokyo", "--locale", "de-DE")["result"]
    assert r["emulation"] == {"timezone": "Asia/Tokyo", "locale": "de-DE"}
    now = seen(bsk)
    assert now["timezone"] == "Asia/Tokyo"
    assert now["language"] == "de-DE" and now["number"] == "1.234,5"
    bsk.ok("reload")  # the tab keeps it across documents
    assert seen(bsk)["timezone"] == "Asia/Tokyo"
    bsk.ok("emulate", "--reset")
    now = seen(bsk)
    assert (now["timezone"], now["language"], now["number"]) == (
        before["timezone"], before["language"], before["number"])


def test_a_refused_locale_changes_nothing(bsk: Bsk, page: str) -> None:
    """Chromium is the judge of a locale; what it refuses leaves every setting as it was
    (navigator.language, the Accept-Language header), so "nothing sent" is true."""
    before = seen(bsk)
    answer = bsk("emulate", "--locale", "!!", "--timezone", "Asia/Tokyo")
    assert answer.code == 2, answer  # invalid_params
    assert answer.json["error"]["code"] == "invalid_params", answer.json
    assert answer.json["dispatched"] == "no", answer.json
    assert answer.json["error"]["details"]["field"] == "locale"
    now = seen(bsk)  # navigator.languages is what Accept-Language would say
    assert (now["language"], now["languages"], now["timezone"]) == (
        before["language"], before["languages"], before["timezone"])


def test_offline_and_slow_network(bsk: Bsk, page: str) -> None:
    fetch = ("(async () => { const t = performance.now(); try { await (await fetch("
             "'/evidence.json?' + Math.random())).json(); return performance.now() - t; } "
             "catch (e) { return 'failed'; } })()")
    bsk.ok("emulate", "--offline")
    assert seen(bsk)["online"] is False
    assert bsk("eval", fetch).value == "failed"
    bsk.ok("emulate", "--no-offline", "--network", "slow-3g")
    assert seen(bsk)["online"] is True
    slow = bsk("eval", fetch).value
    assert isinstance(slow, float | int) and slow >= 1900  # DevTools' Slow 3G: 2 s latency
    bsk.ok("emulate", "--network", "off")
    fast = bsk("eval", fetch).value
    assert fast < 1000
    bsk.ok("emulate", "--offline")
    bsk.ok("emulate", "--reset")
    assert seen(bsk)["online"] is True and bsk("eval", fetch).value < 1000
    both = bsk("emulate", "--offline", "--network", "slow-3g")
    assert both.code == 2 and both.json["dispatched"] == "no"


def test_offline_pages_fail_saying_why(bsk: Bsk, page: str, site: str) -> None:
    # A navigation that ends on Chromium's error page is a failure (reload too), and the
    # tab's own --offline is named as the cause, not the server.
    bsk.ok("emulate", "--offline")
    try:
        opened = bsk("open", f"{site}/other.html?offline")
        assert opened.code == 11, opened.stdout
        assert "--no-offline" in opened.json["error"]["hint"]
        reloaded = bsk("reload")
        assert reloaded.code == 11, reloaded.stdout
        assert reloaded.json["error"]["details"]["error_text"] == "net::ERR_INTERNET_DISCONNECTED"
        assert "--no-offline" in reloaded.json["error"]["hint"]
    finally:
        bsk.ok("emulate", "--reset")
    assert bsk.ok("reload")["result"]["url"] == f"{site}/other.html?offline"  # online again


def test_cpu_throttling(bsk: Bsk, page: str) -> None:
    # The same work, timed by the page: 6x throttled takes clearly longer (a wide margin:
    # this machine is shared with other tests).
    work = ("(() => { let best = Infinity; for (let r = 0; r < 3; r++) { const t = "
            "performance.now(); let x = 0; for (let i = 0; i < 3e6; i++) x += Math.sqrt(i); "
            "best = Math.min(best, performance.now() - t); } return best; })()")
    base = bsk("eval", work).value
    bsk.ok("emulate", "--cpu", "6")
    slowed = bsk("eval", work).value
    bsk.ok("emulate", "--reset")
    after = bsk("eval", work).value
    assert slowed > 2.5 * min(base, after), (base, slowed, after)


def test_geolocation_grants_the_permission(bsk: Bsk, page: str) -> None:
    r = bsk.ok("emulate", "--geolocation", "48.8584,2.2945,25")["result"]
    assert "note" not in r
    assert bsk("eval", PERMISSION % "geolocation").value == "granted"
    assert bsk("eval", POSITION).value == [48.8584, 2.2945, 25]
    bsk.ok("emulate", "--geolocation", "-33.8568,151.2153")  # accuracy defaults
    assert bsk("eval", POSITION).value[:2] == [-33.8568, 151.2153]
    bsk.ok("emulate", "--reset")
    assert bsk("eval", PERMISSION % "geolocation").value == "prompt"
    for bad in ("north", "91,0", "1,2,3,4"):
        r2 = bsk("emulate", "--geolocation", bad)
        assert r2.code == 2 and r2.json["error"]["details"]["field"] == "geolocation"


def test_named_device(bsk: Bsk, page: str) -> None:
    if not os.path.exists(devices_file()):
        if in_ci():
            pytest.fail(f"no device list at {devices_file()}: scripts/install.sh writes it")
        pytest.skip(f"no device list at {devices_file()} (scripts/install.sh writes it)")
    r = bsk.ok("emulate", "--device", "iPhone 13")["result"]
    assert r["emulation"] == {"device": "iPhone 13"}
    now = seen(bsk)
    assert (now["width"], now["dpr"]) == (390, 3) and now["touch"] > 0
    assert "iPhone" in now["ua"]
    bsk.ok("emulate", "--width", "500")  # a flag given later wins over the device's
    now = seen(bsk)
    assert now["width"] == 500 and now["dpr"] == 3
    bsk.ok("emulate", "--reset")
    assert "iPhone" not in seen(bsk)["ua"]
    unknown = bsk("emulate", "--device", "iPhone 1300")
    assert unknown.code == 2 and unknown.json["dispatched"] == "no"
    assert "did you mean" in unknown.json["error"]["message"]
    assert bsk.ok("emulate", "--device", "pixel 7")["result"]["page"]["touch"] is True


def test_permissions_grant_and_clear(bsk: Bsk, page: str) -> None:
    r = bsk.ok("permissions", "grant", "notifications", "geolocation")["result"]
    assert r["origin"] == page and r["setting"] == "granted"
    assert bsk("eval", "Notification.permission").value == "granted"
    assert bsk("eval", PERMISSION % "geolocation").value == "granted"
    bsk.ok("permissions", "clear", "notifications", "geolocation")
    assert bsk("eval", "Notification.permission").value == "default"
    assert bsk("eval", PERMISSION % "geolocation").value == "prompt"
    bad = bsk("permissions", "grant", "teleport")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "names"
    other = bsk.ok("permissions", "grant", "notifications", "--origin",
                   "https://example.com/some/page")["result"]
    assert other["origin"] == "https://example.com"
    assert bsk("eval", "Notification.permission").value == "default"  # not this origin
    bsk.ok("permissions", "clear", "notifications", "--origin", "https://example.com")


def test_permissions_for_an_insecure_origin_say_so_honestly(bsk: Bsk, page: str) -> None:
    # Chromium grants powerful permissions to secure contexts only: the error names the
    # origin (not the permission's name), and a partial grant is not reported as nothing.
    r = bsk("permissions", "grant", "notifications", "--origin", "http://example.com")
    assert r.code == 2 and r.json["error"]["details"]["field"] == "origin", r.stdout
    assert "secure" in r.json["error"]["message"] and r.json["dispatched"] == "no"
    partial = bsk("permissions", "grant", "geolocation", "teleport")
    assert partial.code == 2 and partial.json["error"]["details"]["field"] == "names"
    assert bsk("eval", PERMISSION % "geolocation").value == "granted"
    assert partial.json["dispatched"] == "yes"  # geolocation was granted before teleport
    assert "geolocation" in partial.json["error"]["message"]
    bsk.ok("permissions", "clear", "geolocation")


def test_reset_leaves_a_geolocation_permission_someone_granted(bsk: Bsk, page: str) -> None:
    # The shared profile's permission may be another session's (or the caller's) choice:
    # --reset takes back only what --geolocation itself granted.
    bsk.ok("permissions", "grant", "geolocation")
    bsk.ok("emulate", "--geolocation", "1,2")
    bsk.ok("emulate", "--reset")
    assert bsk("eval", PERMISSION % "geolocation").value == "granted"
    bsk.ok("permissions", "clear", "geolocation")
    bsk.ok("emulate", "--geolocation", "1,2")  # granted by emulate, then made the caller's
    bsk.ok("permissions", "grant", "geolocation")
    bsk.ok("emulate", "--reset")
    assert bsk("eval", PERMISSION % "geolocation").value == "granted"
    bsk.ok("permissions", "clear", "geolocation")


def test_geolocation_on_an_insecure_page_notes_it(bsk: Bsk, page: str) -> None:
    # A plain-http page that is not on loopback is no secure context; a route serves one.
    bsk.ok("route", "add", "http://insecure.test/**", "--body", "<title>plain</title>",
           "--content-type", "text/html")
    try:
        bsk.ok("open", "http://insecure.test/")
        assert bsk("eval", "isSecureContext").value is False
        r = bsk.ok("emulate", "--geolocation", "1,2", "--timezone", "Europe/Berlin")["result"]
        assert "secure" in r["note"] and r["emulation"]["timezone"] == "Europe/Berlin"
        assert seen(bsk)["timezone"] == "Europe/Berlin"
    finally:
        bsk.ok("emulate", "--reset")
        bsk.ok("route", "clear")


def test_bad_input_sends_nothing(bsk: Bsk, page: str) -> None:
    for args in [("--timezone", "Mars/Olympus_Mons"), ("--reset", "--cpu", "2"),
                 ("--cpu", "0.5"), ("--network", "5g"), ("--color-scheme", "blue")]:
        r = bsk("emulate", *args)
        assert r.code == 2, (args, r.stdout)
        assert r.json["error"]["code"] == "invalid_params" and r.json["dispatched"] == "no"


def test_permissions_stay_in_an_isolated_sessions_context(bsk: Bsk, page: str) -> None:
    isolated = bsk.with_session((bsk.session or "") + "-iso")
    isolated.ok("session", "start", isolated.session or "", "--isolated")
    try:
        isolated.ok("open", f"{page}/evidence.html")
        r = isolated.ok("permissions", "grant", "notifications")["result"]
        assert r["context"] == "isolated"
        assert isolated("eval", "Notification.permission").value == "granted"
        # the same origin in the shared profile is untouched
        assert bsk("eval", "Notification.permission").value == "default"
    finally:
        isolated("session", "stop", "--wait")
