"""Named devices for `emulate --device`: Playwright's device descriptors, not a table of ours.

`scripts/install.sh` installs the pinned npm package `playwright-core` into the user's
cache and writes its public `devices` list there as JSON (`devices.json`); `BSK_DEVICES`
may name another file of that shape ({name: {viewport, deviceScaleFactor, isMobile,
hasTouch, userAgent}}). The list is read once, on first use.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from typing import Any

from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid

PLAYWRIGHT_CORE = "1.65.1"  # the version scripts/install.sh installs


def devices_file() -> str:
    env = os.environ.get("BSK_DEVICES")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "browserskill", "devices.json")


@functools.cache
def _load(path: str) -> dict[str, dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object of devices")
    return data


def device(name: str) -> dict[str, Any]:
    """The descriptor of a device by name (exact, else the one case-insensitive match)."""
    path = devices_file()
    try:
        known = _load(path)
    except (OSError, ValueError) as e:
        raise BskError("action_failed", f"the device list is not available ({path}: {e})",
                       hint="run scripts/install.sh (it installs Playwright's device list), "
                            "or set BSK_DEVICES to a devices JSON file",
                       details={"reason": "no_device_list"}, dispatched=Dispatched.NO) from None
    if name in known:
        return known[name]
    folded = [k for k in known if k.casefold() == name.casefold()]
    if len(folded) == 1:
        return known[folded[0]]
    close = difflib.get_close_matches(name, list(known), n=5, cutoff=0.5)
    raise invalid("device", f"unknown device {name!r}"
                  + (f"; did you mean: {', '.join(close)}" if close else ""),
                  hint=f"names are Playwright's ({len(known)} devices in {path})")
