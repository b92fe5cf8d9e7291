"""The event loop the daemon and the browser's keeper run on: uvloop when it imports.

uvloop (libuv, in C) runs the same asyncio programs for about a third less CPU per
operation than the pure-Python selector loop (bench/README.md, issue 23 "Third pass").
It is a pinned dependency; a build where it does not import (another platform) runs on
asyncio's own loop, which behaves the same (signals, subprocesses, `add_reader`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker, or None (asyncio's default) when uvloop is not there."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on uvloop when it imports."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
