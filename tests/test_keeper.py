"""The browser keeper (browser/keeper.py) in front of a real Chromium, over its real
socket: commands that arrive several in one read or split anywhere all reach the browser
and their replies come back under the client's own ids; a new client replaces the old
one, and a reply the browser sends the old one later never reaches the new one, whose
own ids may be the same numbers; SIGTERM stops the browser with the keeper."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserskill.browser import keeper as keeper_module
from browserskill.browser.launcher import find_browser, launch_args

needs_browser = pytest.mark.skipif(find_browser() is None, reason="no Chromium to keep")


Keeper = tuple[subprocess.Popen[bytes], Path, dict[str, Any]]  # its process, socket, record


class Client:
    """A daemon's side of the keeper's socket, kept raw: bytes out, frames in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, sock: Path) -> Client:
        return cls(*await asyncio.open_unix_connection(str(sock), limit=1 << 26))

    def write(self, data: bytes) -> None:
        self.writer.write(data)

    async def replies(self, n: int, timeout: float = 20) -> dict[int, Any]:
        """The next `n` replies (events skipped), by id."""
        got: dict[int, Any] = {}
        while len(got) < n:
            msg = json.loads((await asyncio.wait_for(self.reader.readuntil(b"\0"),
                                                     timeout))[:-1])
            if "id" in msg:
                got[msg["id"]] = msg
        return got


def frame(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode() + b"\0"


@pytest.fixture
def keeper(tmp_path: Path) -> Iterator[Keeper]:
    state, sock = tmp_path / "keeper.json", tmp_path / "browser.sock"
    argv = launch_args(find_browser() or "", tmp_path / "profile", pipe=True,
                       debugging_port=None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "browserskill.browser.keeper", str(state), str(sock),
         str(tmp_path / "browser.log"), "--", *argv], start_new_session=True)
    deadline = time.monotonic() + 60
    while not state.exists():
        assert proc.poll() is None, (tmp_path / "browser.log").read_text()
        assert time.monotonic() < deadline, "the keeper did not announce its browser"
        time.sleep(0.05)
    record = json.loads(state.read_text())
    yield proc, sock, record
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)
    if _group_alive(record["browser_pid"]):
        os.killpg(record["browser_pid"], signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@needs_browser
async def test_commands_in_one_read_or_split_anywhere_come_back_under_their_own_ids(
        keeper: Keeper) -> None:
    _, sock, _ = keeper
    client = await Client.connect(sock)
    # Five commands in one write (as a daemon's loop turn sends them), then three more
    # cut into pieces of 7 bytes, each piece its own write.
    client.write(b"".join(frame({"id": i, "method": "Browser.getVersion"})
                          for i in range(1, 6)))
    rest = b"".join(frame({"id": i, "method": "Target.getTargets"}) for i in (6, 7, 8))
    for cut in range(0, len(rest), 7):
        client.write(rest[cut:cut + 7])
        await client.writer.drain()
    got = await client.replies(8)
    assert sorted(got) == list(range(1, 9))
    assert all("product" in got[i]["result"] for i in range(1, 6))
    assert all("targetInfos" in got[i]["result"] for i in (6, 7, 8))


@needs_browser
async def test_a_new_client_replaces_the_old_and_never_gets_its_late_replies(
        keeper: Keeper) -> None:
    _, sock, _ = keeper
    old = await Client.connect(sock)
    old.write(frame({"id": 1, "method": "Target.getTargets"}))
    target = next(t["targetId"] for t in (await old.replies(1))[1]["result"]["targetInfos"]
                  if t["type"] == "page")
    session = await attach(old, 2, target)
    # The old client's command answered 1.5 s from now, under its id 3...
    old.write(later(3, session, 1, 1500))
    # A quick command after it: once its reply is back, the keeper has passed both on.
    old.write(frame({"id": 4, "method": "Browser.getVersion"}))
    assert list(await old.replies(1)) == [4]
    new = await Client.connect(sock)
    assert await asyncio.wait_for(old.reader.read(), 10) == b""  # the old one is closed
    # ...while the new client uses id 3 for a command of its own, and waits past 1.5 s.
    new.write(later(4, await attach(new, 3, target), 2, 3000))
    got = await new.replies(1, timeout=20)
    # Only its own reply came back: the old one's (value 1, at 1.5 s) was dropped.
    assert got[4]["result"]["result"]["value"] == 2
    assert list(got) == [4]


async def attach(client: Client, msg_id: int, target: str) -> str:
    """A flat session on `target`, attached by `client` under `msg_id`."""
    client.write(frame({"id": msg_id, "method": "Target.attachToTarget",
                        "params": {"targetId": target, "flatten": True}}))
    session: str = (await client.replies(1))[msg_id]["result"]["sessionId"]
    return session


def later(msg_id: int, session: str, value: int, ms: int) -> bytes:
    """A command the page answers with `value` after `ms`."""
    return frame({"id": msg_id, "method": "Runtime.evaluate", "sessionId": session,
                  "params": {"expression": f"new Promise(r => setTimeout(() => r({value}), {ms}))",
                             "awaitPromise": True}})


@needs_browser
async def test_sigterm_stops_the_browser_with_the_keeper(keeper: Keeper) -> None:
    proc, _, state = keeper
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, 30) == 0
    deadline = time.monotonic() + 15
    while _group_alive(state["browser_pid"]):
        assert time.monotonic() < deadline, "the browser outlived its keeper"
        await asyncio.sleep(0.05)


class _Collected(keeper_module._Frames):
    def __init__(self) -> None:
        super().__init__(None)  # type: ignore[arg-type]  # no keeper: frames are kept here
        self.got: list[bytes] = []
        self.too_long_calls = 0

    def frames(self, frames: keeper_module.Frames) -> None:
        self.got += [bytes(f) for f in frames]

    def too_long(self) -> None:
        self.too_long_calls += 1


def test_frames_cut_at_any_point_come_out_whole_once_and_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    want = [b'{"id":1}', b"", b'{"method":"E.x"}', b"y" * 40, b""]
    stream = b"\0".join(want) + b"\0" + b'{"half'
    for cut in range(len(stream) + 1):
        for second in range(cut, len(stream) + 1):  # three reads, cut anywhere
            frames = _Collected()
            for part in (stream[:cut], stream[cut:second], stream[second:]):
                frames.data_received(part)
            assert frames.got == want, (cut, second)
            assert frames.held == b'{"half'
    one_by_one = _Collected()
    for i in range(len(stream)):
        one_by_one.data_received(stream[i:i + 1])
    assert one_by_one.got == want
    # A partial frame past the bound ends the stream: told once, nothing read after it.
    monkeypatch.setattr(keeper_module, "MAX_FRAME", 8)
    bounded = _Collected()
    bounded.data_received(b'{"id":1}\0{"long":"x')  # 10 bytes held
    bounded.data_received(b'"}\0{"id":2}\0')
    bounded.data_received(b"more\0")
    assert bounded.got == [b'{"id":1}'] and bounded.too_long_calls == 1
