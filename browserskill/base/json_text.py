"""JSON on the daemon's hot paths: orjson where its answer is the stdlib's, else the stdlib.

Every CDP command and reply, every request body and every answer goes through JSON; the
stdlib spends several Python frames on each. orjson is one C call, but it differs from
the stdlib in places, so each function here takes orjson's answer only when it is
exactly the stdlib's (tests/test_json_text.py checks that with hypothesis):

- `loads` (texts up to 1 MiB; bigger ones are the stdlib's): orjson refuses what the
  stdlib takes (NaN, Infinity, 1e999, lone UTF-16 surrogates, a UTF-8 BOM or UTF-16
  bytes, nesting past 1024): any refusal asks the stdlib, which answers or raises as it
  always did. orjson reads integers past 64 bits as floats: text with a run of 19
  digits or more goes to the stdlib.
- `dumps_ascii` (the stdlib's `ensure_ascii=True`, compact): orjson writes non-ASCII
  as UTF-8, NaN as null and some small floats in another form (`1e-7`, `0.00001` for
  the stdlib's `1e-07`, `1e-05`); refuses lone surrogates, integers past 64 bits and
  keys that are not strings. Output that is not ASCII, or holds such a float's shape,
  goes to the stdlib (the shapes also when only text holds them: the stdlib then writes
  what orjson would have); output holding `null` goes there only when the value holds
  a float that is not finite (a walk of the value: `None`s are common, NaN is rare).
- `utf8` (`ensure_ascii=False`, compact, UTF-8 bytes): the same, except that
  non-ASCII is what both write and NaN/Infinity are written null (as `api/wire.render`
  writes them anyway); None where only the stdlib can say.

Where the stdlib raises on a value that is no JSON data (a dataclass, a datetime),
orjson is told to raise too; a UUID or a plain `Enum` (no str/int mixin) it would
write where the stdlib raises — neither is ever in what the daemon sends or answers.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_ASCII = json.JSONEncoder(separators=(",", ":"))

# Digits 1-9 -> "d", "0", ".", "e", "-" kept, the rest -> " ": a number's shape, found by
# `bytes.find` (a regex over a megabyte answer costs as much as the stdlib's encoding).
_SHAPE = bytes(
    ord("d") if 0x31 <= i <= 0x39 else i if i in b"0.e-" else ord(" ") for i in range(256))
_DIGITS = bytes(ord("d") if 0x30 <= i <= 0x39 else ord(" ") for i in range(256))
_LONG_INT = b"d" * 19  # the shortest integer orjson may read as a float (-9.3e18)
# Bigger texts go to the stdlib: orjson's parse of a 25 MB reply left the daemon ~25 MB
# larger for good (tests/test_user_files.py, memory after a big eval), and one call's
# overhead does not matter at that size.
_ORJSON_MAX = 1 << 20


def loads(raw: bytes | str) -> Any:
    """`json.loads(raw)`: the same value, or the same exception."""
    if isinstance(raw, str):
        try:
            data = raw.encode()
        except UnicodeEncodeError:  # a lone surrogate: the stdlib's to read or refuse
            return json.loads(raw)
    else:
        data = raw
    if len(data) <= _ORJSON_MAX and _LONG_INT not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def _small_float_shape(out: bytes) -> bool:
    """Does `out` (orjson's) hold a float orjson writes unlike `repr`: 1e-9 <= |x| <
    1e-4, `0.0000…` or `…e-N` with one exponent digit? (Or text shaped so: harmless.)"""
    if b"e-" not in out and b"0.0000" not in out:  # most text: no shape to look for
        return False
    shape = out.translate(_SHAPE)
    return b"0.0000" in shape or b"e-d " in shape or shape.endswith(b"e-d")


_LEAVES = (str, int, bool, type(None))


def _holds_nonfinite(obj: Any) -> bool:
    """Is there a NaN or ±Infinity in `obj` (written null by orjson, NaN by the stdlib)?
    (A loop over a stack, exact types first: every call's parameters are searched.)"""
    stack = [obj]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _LEAVES:
            continue
        if kind is dict or isinstance(item, dict):
            stack.extend(item.values())
        elif kind is list or isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return True
    return False


def dumps_ascii(obj: Any) -> str:
    """`json.dumps(obj, separators=(",", ":"))`: the same text, or the same exception."""
    try:
        out = orjson.dumps(obj, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return _ASCII.encode(obj)
    if not out.isascii() or _small_float_shape(out) or (
            b"null" in out and _holds_nonfinite(obj)):
        return _ASCII.encode(obj)
    return out.decode()


def utf8(obj: Any) -> bytes | None:
    """`json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()` with NaN
    and ±Infinity as null (what `api/wire.render` writes), when orjson can say it;
    None when only the stdlib can (the caller's own path then decides)."""
    try:
        out = orjson.dumps(obj, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return None
    return None if _small_float_shape(out) else out
