"""What a SQLite write-ahead log holds that SQLite would drop: read before SQLite opens it.

SQLite replays a WAL frame by frame and stops, silently, at the first frame whose
checksum does not follow from the one before (https://www.sqlite.org/fileformat.html,
§4 "The Write-Ahead Log"). Frames past it are dropped: after a crash or a bad disk, the
journal rows written since the last checkpoint vanish without a word. `damage` tells
that apart from the WAL's ordinary leftovers.

Invariant: damage is reported only when a *committed* transaction would be dropped: a
commit frame of this WAL's generation (its salts) at or after the first invalid frame.
Frames of an earlier generation (other salts) and an aborted transaction's frames (no
commit frame of their own) are ordinary leftovers that SQLite is right to ignore.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

_MAGIC_LE, _MAGIC_BE = 0x377F0682, 0x377F0683
_HEADER, _FRAME_HEADER = 32, 24
MAX_CHECKED = 64 << 20  # a WAL larger than this is not read at start (seconds of Python)


def _checksum(data: bytes, s0: int, s1: int, big_endian: bool) -> tuple[int, int]:
    """SQLite's WAL checksum over `data` (a multiple of 8 bytes), from (s0, s1)."""
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    it = iter(words)
    for a, b in zip(it, it, strict=True):
        s0 = (s0 + a + s1) & 0xFFFFFFFF
        s1 = (s1 + b + s0) & 0xFFFFFFFF
    return s0, s1


def damage(wal: Path) -> dict[str, Any] | None:
    """What SQLite would drop from this WAL, if that includes a committed transaction:
    {"frames_replayed", "frames_dropped", "transactions_dropped", "why"}; None when the
    WAL is absent, clean, or too large to check (`MAX_CHECKED`)."""
    try:
        size = os.stat(wal).st_size
        if size <= _HEADER or size > MAX_CHECKED:
            return None
        data = wal.read_bytes()
    except OSError:
        return None
    magic, _version, page_size, _seq, salt1, salt2, c0, c1 = struct.unpack(
        ">8I", data[:_HEADER])
    if magic not in (_MAGIC_LE, _MAGIC_BE) or page_size < 512 or page_size & (page_size - 1):
        return _report(0, _frames(data, page_size if page_size >= 512 else 4096),
                       "its header is not a WAL header")
    big = magic == _MAGIC_BE
    frame_size = _FRAME_HEADER + page_size
    frames = _frames(data, page_size)
    if _checksum(data[:24], 0, 0, big) != (c0, c1):
        return _report(0, frames, "its header's checksum does not match")
    s0, s1 = c0, c1
    replayed = 0
    for index, (offset, _commit, f_salt1, f_salt2) in enumerate(frames):
        if (f_salt1, f_salt2) != (salt1, salt2):
            break  # an earlier generation's leftovers: where SQLite stops too
        want = struct.unpack(">2I", data[offset + 16:offset + 24])
        got = _checksum(data[offset:offset + 8] + data[offset + _FRAME_HEADER:
                                                       offset + frame_size], s0, s1, big)
        if got != want:
            tail = [f for f in frames[index:] if (f[2], f[3]) == (salt1, salt2)]
            return _report(replayed, tail, f"frame {index + 1} fails its checksum")
        s0, s1 = got
        replayed += 1
    return None


def _frames(data: bytes, page_size: int) -> list[tuple[int, int, int, int]]:
    """(offset, commit size, salt-1, salt-2) of every whole frame."""
    frame_size = _FRAME_HEADER + page_size
    out = []
    for offset in range(_HEADER, len(data) - frame_size + 1, frame_size):
        _page, commit, salt1, salt2 = struct.unpack(">4I", data[offset:offset + 16])
        out.append((offset, commit, salt1, salt2))
    return out


def _report(replayed: int, dropped: list[tuple[int, int, int, int]],
            why: str) -> dict[str, Any] | None:
    transactions = sum(1 for f in dropped if f[1])
    if not transactions:
        return None  # only an aborted transaction's leftovers
    return {"frames_replayed": replayed, "frames_dropped": len(dropped),
            "transactions_dropped": transactions, "why": why}
