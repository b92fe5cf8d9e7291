"""What an action did to the page (`result.effects`, docs/outcomes.md "Effects"), against
real Chromium: each report is checked against what the page itself recorded — its own
MutationObserver and fetch log, read back with eval."""

from __future__ import annotations

from typing import Any

import pytest
from support.cli import Bsk
from support.pages import ref_of


@pytest.fixture
def page(bsk: Bsk, site: str, cross_site: str) -> tuple[Bsk, str]:
    port = cross_site.rsplit(":", 1)[1]
    bsk.ok("open", f"{site}/effects.html?cross={port}")
    bsk.ok("wait", "--text", "Send me news")
    return bsk, bsk.ok("snapshot")["result"]["snapshot"]


def log(bsk: Bsk) -> dict[str, Any]:
    return bsk("eval", "pageLog").value


def test_explore(page: tuple[Bsk, str]) -> None:
    bsk, snap = page
    print(snap)
    for name in ["Dead button", "Broken button", "Rename", "Place order", "Actions"]:
        r = bsk.ok("click", ref_of(snap, "button", name))
        print(name, r["result"]["effects"])
        print(bsk("click", ref_of(snap, "button", name), as_json=False).stdout)
    r = bsk.ok("fill", ref_of(snap, "textbox", "Phone"), "5551234567")
    print(r["result"])
    r = bsk.ok("click", ref_of(snap, "textbox", "Plain"))
    print(r["result"])
    r = bsk.ok("type", "hello")
    print(r["result"])
    r = bsk.ok("check", ref_of(snap, "checkbox", "Send me news"))
    print(r["result"])
    r = bsk.ok("click", ref_of(snap, "button", "Animate forever"))
    print(r["result"])
    print(log(bsk))
    assert False
