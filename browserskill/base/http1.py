"""HTTP/1.1 as bsk's clients speak it to the daemon, apart from any I/O.

One definition of the bytes a client writes and how it reads the answer, shared by
`bsk`'s launcher (cli/fast.py), the whole CLI (cli/transport.py) and both Python clients
(client/http11.py); each does its own I/O (a blocking `_socket`, asyncio streams) around
it, as `websockets` keeps its protocol core apart from its transports.

Invariants:
- A request is its head and a body of exactly `Content-Length` bytes; the head names
  `Host` once and whatever headers the caller gives, in order.
- An answer's head ends at the first blank line; its status and headers (names in lower
  case, the last of a repeated name wins) are read once. Its body is `Content-Length`
  bytes, or chunked, or (neither given) everything until the daemon closes.
- Bytes that end before the framing says they should raise `Incomplete` (the daemon
  went away mid-answer), never a short body taken for the whole one.

No imports at all, `__future__` included: the launcher loads this on every call.
"""

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable

HEAD_END = b"\r\n\r\n"
CHUNKED = -1  # `body_length`: chunked framing
TO_EOF = -2  # `body_length`: no length given, the body runs until the connection closes


class Incomplete(ValueError):
    """The bytes end before the answer does: the daemon went away mid-answer."""


def request(method: str, path: str, headers: "Iterable[tuple[str, str]]" = (),
            body: bytes = b"", *, host: str = "localhost") -> bytes:
    """The bytes of one request: head and body."""
    head = [f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"]
    head += [f"{name}: {value}\r\n" for name, value in headers]
    head.append(f"Content-Length: {len(body)}\r\n\r\n")
    return "".join(head).encode("latin-1") + body


def split_head(data: bytes) -> tuple[bytes, bytes] | None:
    """(head, what follows it) once `data` holds a whole head; None until then."""
    head, found, rest = data.partition(HEAD_END)
    return (head, rest) if found else None


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """(status, headers) of an answer's head (without its blank line)."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(status_line.split(" ", 2)[1])
    except (IndexError, ValueError):
        raise Incomplete(f"not an HTTP status line: {status_line[:80]!r}") from None
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


def body_length(headers: dict[str, str]) -> int:
    """How the body is framed: its length in bytes, `CHUNKED` or `TO_EOF`."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return CHUNKED
    length = headers.get("content-length")
    if length is None:
        return TO_EOF
    if not length.isdigit():
        raise Incomplete(f"a Content-Length that is no length: {length[:40]!r}")
    return int(length)


def chunk_size(line: bytes) -> int:
    """The size a chunk's size line gives (extensions after `;` ignored)."""
    try:
        return int(line.split(b";")[0].strip(), 16)
    except ValueError:
        raise Incomplete(f"not a chunk size: {line[:40]!r}") from None


def unchunk(data: bytes) -> bytes:
    """The body carried by `data`, chunked framing and all (trailers ignored)."""
    out: list[bytes] = []
    pos = 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            raise Incomplete("the answer ends inside its chunked body")
        size = chunk_size(data[pos:end])
        if size == 0:
            return b"".join(out)
        if end + 2 + size > len(data):
            raise Incomplete("the answer ends inside a chunk")
        out.append(data[end + 2:end + 2 + size])
        pos = end + 2 + size + 2


def body(headers: dict[str, str], rest: bytes, *, closed: bool) -> bytes:
    """The whole body from what followed the head; `closed`: no more bytes will come."""
    length = body_length(headers)
    if length == CHUNKED:
        return unchunk(rest)
    if length == TO_EOF:
        if not closed:
            raise Incomplete("the answer gives no length: read it to its end first")
        return rest
    if len(rest) < length:
        raise Incomplete(f"the answer ends after {len(rest)} of {length} bytes")
    return rest[:length]
