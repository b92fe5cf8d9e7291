"""orjson on the hot paths says exactly what the stdlib said (browserskill/base/json_text.py):
the same value or exception reading, the same bytes writing, for any JSON data — lone
surrogates, NaN and Infinity, integers past 64 bits, small floats, deep nesting, keys
that are not strings, duplicate keys, whatever the text around them."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from browserskill.api import wire
from browserskill.base import json_text

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()))  # lone surrogates too
NUMBERS = (st.integers() | st.integers(-2**70, 2**70) | st.floats()
           | st.floats(min_value=-1e-3, max_value=1e-3) | st.sampled_from(
               [1e-5, -1e-7, 1.5e-9, 1e-10, 2**63, -2**63 - 1, 2**64, 1e16, 1e22, -0.0]))
SCALARS = st.none() | st.booleans() | NUMBERS | ANY_TEXT
KEYS = ANY_TEXT | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(-2, 2)
DATA = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.tuples(inner, inner) | st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=25)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 is not 1.0; NaN is NaN)."""
    stack = [(a, b)]
    while stack:
        a, b = stack.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, float):
            if not ((math.isnan(a) and math.isnan(b))
                    or (a == b and math.copysign(1, a) == math.copysign(1, b))):
                return False
        elif isinstance(a, dict):
            if list(a) != list(b):
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif a != b:
            return False
    return True


def outcome(f: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", f(*args)
    except (ValueError, TypeError, RecursionError, UnicodeError) as e:
        return type(e).__name__, str(e)


def stdlib_render(content: Any) -> Any:
    """`wire.render` as it was: the stdlib alone."""
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        text = encoder.encode(content)
    except ValueError:
        text = json.dumps(wire._finite(content), ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return wire.LONE_SURROGATE.sub("\ufffd", text).encode()


@settings(max_examples=600, deadline=None)  # a loaded machine
@given(DATA)
@example({"x": 1e-5, "y": [float("nan"), float("inf"), 2**64], "\ud800": "\udfff"})
@example({1: 1.5e-7, None: True, 2.5: "é"})
@example(-4e-8)  # a float alone: nothing after it
def test_writing_is_the_stdlibs(data: Any) -> None:
    assert outcome(json_text.dumps_ascii, data) == outcome(
        json.JSONEncoder(separators=(",", ":")).encode, data)
    assert outcome(wire.render, data) == outcome(stdlib_render, data)


TEXT_OF = (st.builds(lambda d: json.dumps(d), DATA)
           | st.builds(lambda d: json.dumps(d, ensure_ascii=False), DATA)
           | st.builds(lambda d, i: json.dumps(d, indent=i), DATA, st.integers(0, 2)))
SPLICED = st.builds(lambda a, b, i: a[:i] + b + a[i:], TEXT_OF, st.sampled_from(
    ["", "NaN", "-Infinity", "1e999", "\\ud800", '"\\udc00"', "12345678901234567890", ",",
     "]", "}", '"a":1', " ", "\x0c", "\ufeff", "\x00", "01", "-0", "1.", "9" * 25]),
    st.integers(0, 40))
BYTES_OF = (st.builds(lambda t: t.encode("utf-8", "surrogatepass"), TEXT_OF | SPLICED)
            | st.builds(lambda t, enc: t.encode(enc, "surrogatepass"), TEXT_OF,
                        st.sampled_from(["utf-16", "utf-16-le", "utf-32", "utf-8-sig"]))
            | st.binary(max_size=40))


@settings(max_examples=1500, deadline=None)
@given(TEXT_OF | SPLICED | BYTES_OF)
@example(b"[" * 1030 + b"]" * 1030)
@example(b"[" * 2000 + b"]" * 2000)
@example(b'{"a":1,"b":2,"a":3}')
@example(b"-9223372036854775809")
@example(b"[18446744073709551615,-9223372036854775808,1e-400,1E400]")
@example("\ufeff{}")
def test_reading_is_the_stdlibs(raw: str | bytes) -> None:
    fast, slow = outcome(json_text.loads, raw), outcome(json.loads, raw)
    assert fast[0] == slow[0] and (same(fast[1], slow[1]) if fast[0] == "value"
                                   else fast[1] == slow[1]), (raw, fast, slow)


def test_a_body_is_refused_as_before() -> None:
    """What parse_object refuses, it refuses naming the same field (orjson refuses
    these first; the stdlib then reads them and check_values names the field)."""
    for raw, field in ((b'{"expression":"\\ud800"}', "expression"),
                       (b'{"x":NaN}', "x"), (b'{"x":[1e999]}', "x")):
        try:
            wire.parse_object(raw)
        except Exception as e:
            assert e.details == {"field": field}, e  # type: ignore[attr-defined]
        else:
            raise AssertionError(raw)
    assert wire.parse_object(b'{"n":123456789012345678901234567890}') == {
        "n": 123456789012345678901234567890}


@settings(max_examples=600, deadline=None)
@given(DATA)
@example({"v": [float("nan"), float("-inf"), 1e-7], "t": "lone \ud800 \udfff", 1: (2, 3)})
def test_what_the_launcher_prints_is_what_a_client_reads(data: Any) -> None:
    """`wire.as_received` (what bsk's launcher is printed from, api/cli_call.py): the
    value the stdlib reads back from the answer's bytes — U+FFFD for a lone surrogate,
    null for NaN, lists for tuples, text keys."""
    expected = outcome(lambda d: json.loads(stdlib_render(d)), data)
    got = outcome(wire.as_received, data)
    assert got[0] == expected[0] and (same(got[1], expected[1]) if got[0] == "value"
                                      else got[1] == expected[1]), (data, got, expected)
