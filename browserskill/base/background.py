"""Background tasks that nobody awaits, each with an owner.

Some work is started from a callback and nobody waits for its end: acking a screencast
frame, answering a ping, adopting a popup. asyncio keeps only a weak reference to a
task, so such a task can be collected mid-flight, and an exception it ends with is
reported only when the task is collected ("Task exception was never retrieved"), if at
all. `start` is the owner instead.

Invariants: a task started here stays referenced until it ends; an exception it ends
with, other than cancellation, is logged at once with the task's name; `pending()`
lists those still running. tests/test_ownership.py fails on any `create_task` or
`ensure_future` in the package whose task is thrown away.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("bsk.background")
_RUNNING: set[asyncio.Task[Any]] = set()


def start(work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    """Run `work` on the running loop as an owned task named `name`."""
    task = asyncio.get_running_loop().create_task(work, name=name)
    _RUNNING.add(task)
    task.add_done_callback(_ended)
    return task


def _ended(task: asyncio.Task[Any]) -> None:
    _RUNNING.discard(task)
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("background task %s failed: %s: %s", task.get_name(),
                  type(error).__name__, error, exc_info=error)


def pending() -> list[asyncio.Task[Any]]:
    """The owned tasks still running (on any loop)."""
    return [task for task in _RUNNING if not task.done()]
