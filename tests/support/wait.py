"""Waiting on a condition (never a fixed sleep), and where the suite runs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any


def wait_until(predicate: Callable[[], Any], timeout: float = 20,
               what: str = "a condition") -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.02)


def in_ci() -> bool:
    """On CI (`CI=true`), .ci/run has installed all the suite needs: a missing tool there
    is a failure, never a skip (as a missing Chromium is a failure everywhere)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
