"""The keeper's link read where bytes arrive (browser/cdp.py `_FramedProtocol`): frames
split anywhere across reads, a 400,000-character reply, events in order between
replies, and the socket's end failing every reply still owed at once. A real Unix
socket to a scripted keeper; and the frames of one loop turn leaving in one write."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import pytest

from browserskill.browser import cdp
from browserskill.browser.link import LinkClosed


async def test_replies_and_events_across_any_split_then_the_end_fails_what_is_owed() -> None:
    seen: list[str] = []
    got_commands: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    writer_of: list[asyncio.StreamWriter] = []

    async def keeper(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        writer_of.append(w)
        while True:
            try:
                data = await r.readuntil(b"\0")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            await got_commands.put(json.loads(data[:-1]))

    with tempfile.TemporaryDirectory(prefix="bsk-framed-") as tmp:
        sock = str(Path(tmp) / "k.sock")
        server = await asyncio.start_unix_server(keeper, sock, limit=2**24)
        link = await cdp.CdpLink.connect(f"unix:{sock}")
        link.subscribe("S", lambda method, params: seen.append(f"{method} {params['n']}"))
        first = await link.request("A.first")
        second = await link.request("A.second")
        third = await link.request("A.third")
        ids = [(await got_commands.get())["id"] for _ in range(3)]
        long = "é" * 400_000
        frames = b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\0" for m in (
            {"method": "E.x", "params": {"n": 1}, "sessionId": "S"},
            {"id": ids[1], "result": {"value": long}},
            {"method": "E.x", "params": {"n": 2}, "sessionId": "S"},
            {"id": ids[0], "result": {"value": 1}},
        ))
        w = writer_of[0]
        for cut in range(0, len(frames), 4093):  # splits inside frames and at their ends
            w.write(frames[cut:cut + 4093])
            await w.drain()
        assert (await first) == {"value": 1}
        assert (await second)["value"] == long
        assert seen == ["E.x 1", "E.x 2"]
        w.write(b'{"id": ' + str(ids[2]).encode())  # half a frame, then the keeper goes
        await w.drain()
        w.close()
        with pytest.raises(LinkClosed, match="browser connection closed"):
            await asyncio.wait_for(third, 10)
        assert link.closed and link.close_reason == "browser connection closed"
        with pytest.raises(LinkClosed):
            await link.request("A.after")
        server.close()
        await link.close()


class _Transport:
    """What the protocol writes, write by write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


async def test_frames_of_one_loop_turn_leave_in_one_write_and_a_close_sends_what_is_queued(
        ) -> None:
    framed = cdp._FramedProtocol()
    out = _Transport()
    framed.connection_made(out)  # type: ignore[arg-type]
    for text in ('{"id":1}', '{"id":2}', '{"id":3}'):  # three callers in one turn
        await framed.send(text)
    assert out.writes == []
    await asyncio.sleep(0)  # the turn ends
    assert out.writes == [b'{"id":1}\0{"id":2}\0{"id":3}\0']
    await framed.send('{"id":4}')
    await framed.close()  # in the same turn: the frame still leaves, before the close
    assert out.writes[1:] == [b'{"id":4}\0'] and out.closed
    with pytest.raises(ConnectionError):
        await framed.send('{"id":5}')
