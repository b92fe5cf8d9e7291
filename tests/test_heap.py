"""base/heap.py: in a process that ran `give_back_big_blocks()`, a big block freed is
returned to the system even after a bigger one was freed before it and long-lived
objects were made after it — what a daemon that has served many sessions does with each
big page message (a 25 MB eval's string, a big snapshot)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Run in a fresh interpreter: the malloc settings are the process's, for good.
_PROGRAM = """
import sys
from browserskill.base import heap
if sys.argv[1] == "fixed":
    assert heap.give_back_big_blocks()

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

freed = bytes(30_000_000)  # a big message before: glibc's dynamic threshold rises to it
del freed
before = rss_mb()
kept = []
for _ in range(3):  # three 25 MB messages, each read, decoded and dropped
    message = b"y" * 25_000_000
    kept.append(bytearray(600_000))  # what the daemon made meanwhile and keeps
    value = message.decode()
    del message
    kept.append(bytearray(600_000))
    del value
print(rss_mb() - before)
"""


def grown_mb(mode: str) -> float:
    done = subprocess.run([sys.executable, "-c", _PROGRAM, mode], capture_output=True,
                          text=True, timeout=60, check=True)
    return float(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_big_blocks_freed_go_back_to_the_system() -> None:
    assert grown_mb("fixed") < 10  # the three kept 0.6 MB buffers, and no message


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_without_it_the_same_program_keeps_them() -> None:
    """The program above does show what the setting prevents (glibc 2.36 here): without
    it, the freed messages stay resident."""
    assert grown_mb("default") > 40


_CYCLES = """
import json
from browserskill.base import heap
heap.collect_less_often()
alive = [0, 0]  # now, most at once

class Node:
    __slots__ = ("me", "__weakref__")
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it
        alive[0] += 1
        alive[1] = max(alive[1], alive[0])
    def __del__(self):
        alive[0] -= 1

for _ in range(100_000):
    Node()
print(json.dumps({"most": alive[1], "every": heap.YOUNG_COLLECTION_EVERY}))
"""


def test_cyclic_garbage_is_collected_every_so_many_allocations() -> None:
    """What a daemon's young collections would find is still freed, only in bigger
    batches: about `YOUNG_COLLECTION_EVERY` cycles wait, not all of them, and far more
    than CPython's 700 would let (717 without the setting)."""
    import json

    out = subprocess.run([sys.executable, "-c", _CYCLES], capture_output=True, text=True,
                         check=True).stdout
    seen = json.loads(out)
    assert seen["every"] // 2 < seen["most"] <= seen["every"] + 20, seen
