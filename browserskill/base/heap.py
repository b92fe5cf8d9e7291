"""Big blocks go back to the system when freed, in the long-lived processes (the daemon
and the browser's keeper).

A page can send a message of tens of MB (`bsk eval "'x'.repeat(25e6)"`, a big snapshot
or screenshot); the daemon cuts the result and drops the rest at once. glibc's malloc
serves a block that big with its own mmap and unmaps it on free — but its *dynamic*
threshold then rises to the freed block's size (up to 32 MB), so the next big message's
pieces come from the main heap, and a heap only shrinks from its top: one long-lived
object above them, as a daemon that has served many sessions always has, and those MB
stay resident for good (seen in CI: +17 MB after one 25 MB eval on a busy daemon).

Invariant: once `give_back_big_blocks()` ran, every allocation of `MMAP_FROM` bytes or
more is its own mapping, returned to the system when freed, however big the blocks freed
before it were. Smaller allocations are untouched (Python's small objects live in its own
arenas). Where the C library is not glibc (no `mallopt`, or one that ignores it), this
does nothing and nothing else changes.

Also here, the other rules of the long-lived processes' memory: objects built to start
are frozen out of the garbage collector's generations (`freeze_startup_objects`), and the
youngest generation is collected every `YOUNG_COLLECTION_EVERY` allocations, not 700
(`collect_less_often`).
"""

from __future__ import annotations

import ctypes
import gc
import logging

log = logging.getLogger(__name__)

# Over 2,000 `eval`s a busy daemon's collector ran ~100 young collections (~0.3 ms each:
# what the calls in flight hold) and 8-9 older ones, 33-47 ms of CPU, ~20 µs a call; at
# 10,000, 4 young ones and 7-11 ms (bench/README.md, issue 23 "Eighth pass"). The cost:
# a cycle that outlives a young collection waits for an older one, which the same ratios
# now make every ~100,000 allocations (thousands of calls) instead of ~7,000. The
# daemon's big messages are freed by reference count, not by the collector (a 25 MB
# eval's memory returns: tests/test_user_files.py).
YOUNG_COLLECTION_EVERY = 10_000

MMAP_FROM = 1 << 20  # 1 MiB: a big message, never a per-call buffer (those are ≤ 256 KiB)
_M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>; setting it also fixes the threshold


def give_back_big_blocks() -> bool:
    """Fix glibc's mmap threshold at MMAP_FROM; True when the C library took it."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    taken = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_FROM))
    if not taken:
        log.info("malloc kept its own mmap threshold: big blocks may stay resident")
    return taken


def freeze_startup_objects() -> None:
    """Move what the process holds before it serves (its modules and their data: tens of
    thousands of objects that live as long as it does) out of the collector's reach, so
    the full collections a busy daemon makes walk only what serving made (`gc.freeze`).
    Called before any session or connection exists: a frozen cycle is never collected,
    so nothing that may die before the process does should be frozen. Garbage made
    before this call is collected first, not frozen."""
    gc.collect()
    gc.freeze()


def collect_less_often() -> None:
    """Collect the youngest generation every `YOUNG_COLLECTION_EVERY` allocations; the
    older ones keep their thresholds, counted in young collections, so they too run
    ~14 times less often."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, older, oldest)
