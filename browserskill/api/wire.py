"""What crosses the HTTP boundary, made safe both ways.

In: a request body is read within a size limit and a time limit (a `Content-Length`
longer than what arrives is a 400, not a held connection), parsed as JSON within a
nesting limit, and refused naming its field when it holds text that is not Unicode
(a lone UTF-16 surrogate) or a number that is not finite (`NaN`, `Infinity`, `1e999`):
such values could not be journaled, rendered or sent to the browser later.

Out: every answer renders as valid UTF-8 JSON, whatever the page gave. A lone surrogate
from the page (an eval result, page text, an old journal row) becomes U+FFFD, so no
answer — and no later read of a stored one — can fail to encode.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import Response

from browserskill.base import json_text
from browserskill.base.errors import BskError

MAX_BODY_BYTES = 16 * 1024 * 1024  # eval's 1,000,000 characters, \u-escaped, fit
MAX_DEPTH = 32  # objects and arrays inside one another
BODY_READ_S = 5.0  # the whole body must arrive within this after the headers
# A request's scope key: True once its whole body has arrived (read_body then reads it
# without a deadline of its own: nothing is left to wait for). Our listeners set it.
BODY_COMPLETE = "bsk.body_complete"

LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# A request's headers, as the listener gives them: names in lower case.
Headers = Iterable[tuple[bytes, bytes]]


class BodyAbandoned(Exception):
    """The client went away before its body arrived: nobody is left to answer."""


@dataclass(slots=True)
class Answer:
    """An answer as bytes, for either route to send: Starlette's (`response`) or the
    Unix listener's own (api/hot_route.py)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str | None = "application/json"

    def response(self) -> Response:
        return Response(self.body, self.status, self.headers, media_type=self.content_type)


def _body_error(problem: str, hint: str = "send a JSON object") -> BskError:
    return BskError("invalid_params", f"body: {problem}", hint=hint, details={"field": "body"})


def declared_length(headers: Headers) -> str | None:
    """The first Content-Length, refused when it is no number or over the limit: such a
    body is never read."""
    for key, value in headers:  # a loop, not a generator: this runs on every call
        if key == b"content-length":
            declared = value.decode("latin-1")
            break
    else:
        return None
    if not declared.isdigit():
        raise _body_error(f"Content-Length {declared!r} is not a number of bytes")
    if int(declared) > MAX_BODY_BYTES:
        raise _body_error(f"{declared} bytes is more than the {MAX_BODY_BYTES} allowed")
    return declared


def too_large() -> BskError:
    return _body_error(f"more than the {MAX_BODY_BYTES} bytes allowed")


def too_slow(size: int, declared: str | None) -> BskError:
    return _body_error(
        f"only {size} of {declared or 'the'} bytes arrived within {BODY_READ_S:g} s",
        hint="send as many bytes as Content-Length says")


async def read_body(scope: Any, receive: Any) -> bytes:
    """An ASGI request's body, bounded in size and in time."""
    declared = declared_length(scope["headers"])
    chunks: list[bytes] = []
    size = 0
    if scope.get(BODY_COMPLETE):  # all here (our listeners say): no timer to arm
        message = await receive()  # answers at once
        if message["type"] != "http.request":  # http.disconnect
            raise BodyAbandoned
        body: bytes = message.get("body", b"")
        if len(body) > MAX_BODY_BYTES:
            raise too_large()
        if not message.get("more_body", False):
            return body
        chunks.append(body)
        size = len(body)
    try:
        async with asyncio.timeout(BODY_READ_S):
            while True:
                message = await receive()
                if message["type"] != "http.request":  # http.disconnect
                    raise BodyAbandoned
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise too_large()
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise too_slow(size, declared) from None
    return b"".join(chunks)


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object whose every value can be stored and answered later."""
    if not raw.strip():
        return {}
    try:
        body = json_text.loads(raw)  # json.loads's value or exception, sooner
    except RecursionError:
        raise _body_error(f"nested more than {MAX_DEPTH} levels deep") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise _body_error(f"not valid JSON ({e})") from None
    if not isinstance(body, dict):
        raise _body_error("must be a JSON object")
    check_values(body)
    return body


def check_values(body: dict[str, Any]) -> None:
    """Refuse what could not be journaled or sent on: too deep, a lone surrogate, a
    number that is not finite. The error names the top-level field it is under."""
    stack: list[tuple[Any, str, str, int]] = [(v, k, k, 1) for k, v in body.items()]
    for key in body:
        _check_text(key, key, key)
    while stack:
        value, field, where, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value, field, where)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise BskError("invalid_params", f"{field}: must be a finite number"
                               + ("" if where == field else f" (at {where})"),
                               details={"field": field})
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise BskError("invalid_params",
                               f"{field}: nested more than {MAX_DEPTH} levels deep",
                               details={"field": field})
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                if isinstance(k, str):
                    _check_text(k, field, where)
                stack.append((v, field, f"{where}.{k}" if isinstance(value, dict)
                              else f"{where}[{k}]", depth + 1))


def _check_text(text: str, field: str, where: str) -> None:
    if LONE_SURROGATE.search(text):
        raise BskError("invalid_params",
                       f"{field}: text is not valid Unicode (a lone UTF-16 surrogate"
                       + ("" if where == field else f" at {where}") + ")",
                       hint="send well-formed text (UTF-8; in JSON escapes, surrogates "
                            "only in pairs)", details={"field": field})


# `json.dumps` with options makes an encoder per call; every answer uses this one.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def render(content: Any) -> bytes:
    """JSON as UTF-8, always: lone surrogates become U+FFFD, non-finite numbers null."""
    fast = json_text.utf8(content)  # these same bytes, when orjson can write them
    if fast is not None:
        return fast
    try:
        text = _ENCODER.encode(content)
    except ValueError:  # NaN/Infinity somewhere: JSON has no such numbers
        text = json.dumps(_finite(content), ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return LONE_SURROGATE.sub("\ufffd", text).encode()


def as_received(content: Any) -> Any:
    """The value a client reads from `render(content)` (lone surrogates U+FFFD, NaN and
    ±Infinity null, tuples lists, keys text): what the daemon prints for bsk's launcher
    (api/cli_call.py). orjson reads it back (`json_text.loads`: the stdlib's value)."""
    return json_text.loads(render(content))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
