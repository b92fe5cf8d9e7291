"""An answer written whole, or its head now and its body later, by either route.

Most handlers return an `Answer` (wire.py) and their route writes it whole. `POST /v1/cli`
(api/cli_call.py) may have to send its head before its body exists (a long call names
its wire deadline first), so it writes through a `Reply`: the Unix listener's own cycle
(api/hot_route.py) is one, on its transport; `AsgiReply` is one on an ASGI `send`.

Invariants:
- One answer per request: `whole(answer)`, or `head(answer)` (its status and headers,
  its body unused) and then `rest(data)`, the body, once.
- The same bytes on the wire by either route: the header fields are `fields`'s; a whole
  answer gives its Content-Length (none for a 204 or 304); a head sent alone announces a
  chunked body, as uvicorn frames an ASGI answer without a length, and `rest` is that
  body's one chunk and its end (what the launcher, cli/fast.py, reads through http1).
- A caller that has gone is written nothing, and no error is raised (as uvicorn's `send`).
"""

from __future__ import annotations

from typing import Any, Protocol

from browserskill.api.wire import Answer

NO_BODY = (204, 304)  # statuses whose answer has no body, so no length and no framing


class Reply(Protocol):
    async def whole(self, answer: Answer) -> None: ...
    async def head(self, answer: Answer) -> None: ...
    async def rest(self, data: bytes) -> None: ...


def fields(answer: Answer, *, length: bool) -> list[tuple[bytes, bytes]]:
    """The answer's header fields, names in lower case; `length`: its Content-Length."""
    out = []
    if answer.content_type is not None:
        out.append((b"content-type", answer.content_type.encode()))
    if length and answer.status not in NO_BODY:
        out.append((b"content-length", b"%d" % len(answer.body)))
    for key, text in answer.headers.items():  # ours and the error table's: plain ASCII
        out.append((key.lower().encode(), text.encode()))
    return out


class AsgiReply:
    """A `Reply` on an ASGI `send` (uvicorn frames a head without a length as chunked)."""

    def __init__(self, send: Any) -> None:
        self.send = send

    async def whole(self, answer: Answer) -> None:
        await self.send({"type": "http.response.start", "status": answer.status,
                         "headers": fields(answer, length=True)})
        await self.send({"type": "http.response.body", "body": answer.body})

    async def head(self, answer: Answer) -> None:
        await self.send({"type": "http.response.start", "status": answer.status,
                         "headers": fields(answer, length=False)})

    async def rest(self, data: bytes) -> None:
        await self.send({"type": "http.response.body", "body": data})
