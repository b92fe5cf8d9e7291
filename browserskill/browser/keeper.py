"""The browser keeper: owns the embedded Chromium's DevTools pipe and serves it, to the
daemon only, on a Unix socket in the private state directory.

Why: a DevTools TCP port (`--remote-debugging-port`) lets any local user drive the
browser — run script in the agent's pages, read any file the user can. The pipe
(`--remote-debugging-pipe`: CDP on fds 3 and 4, one JSON message per NUL-terminated
frame) reaches no one but the process holding it; and since Chromium exits when its
pipe closes, that holder must outlive the daemon for a restarted daemon to re-adopt the
browser and its sessions (docs/design.md, security). So this small process holds it.

Invariants:
- one client at a time, on a 0600 socket: a new connection (the next daemon) replaces
  the old one, whose pending replies are then dropped, never delivered to the new one;
- command ids are the keeper's own on the pipe: each client's ids are mapped to fresh
  ones and back, so two daemons' ids never meet;
- frames pass in order; the whole frames of one read go on in one write (a daemon sends
  the commands of one loop turn together: one wake-up here and in the browser, not one
  per command);
- the keeper exits when the browser does (its pipe's end), and stops the browser when it
  is told to (SIGTERM, SIGINT, SIGHUP).

Run by the daemon as `python -m browserskill.browser.keeper STATE_FILE SOCKET LOG -- ARGV…`;
it writes STATE_FILE ({"keeper_pid", "browser_pid", "socket", "cdp_url"?}) once the
browser answers on the pipe. Stdlib only, plus uvloop's loop where it imports
(base/event_loop.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from browserskill.base import event_loop, heap

_ID = re.compile(rb'^\{"id":\s*(\d+)')
MAX_FRAME = 1 << 30  # a partial frame longer than this ends the stream it came on
Frames = list[bytes] | list[bytearray]  # whole frames, without their NULs


class Keeper:
    def __init__(self, argv: list[str], socket_path: Path, state_file: Path,
                 log_file: Path) -> None:
        self.argv = argv
        self.socket_path = socket_path
        self.state_file = state_file
        self.log_file = log_file
        self.next_id = 0
        self.routes: dict[int, tuple[int, int]] = {}  # keeper id -> (client serial, its id)
        self.client: asyncio.Transport | None = None
        self.serial = 0  # the current client's number
        self.done = asyncio.Event()

    # -- the browser --------------------------------------------------------------------

    def spawn(self) -> None:
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def pipe_fds() -> None:  # in the child: its ends on fds 3 (reads) and 4 (writes)
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        with open(self.log_file, "ab") as log:
            self.browser = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, pass_fds=(3, 4), preexec_fn=pipe_fds)
        os.close(to_browser_r)
        os.close(from_browser_w)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.spawn()
        await loop.connect_read_pipe(lambda: _FromBrowser(self),
                                     os.fdopen(self.from_browser, "rb", 0))
        wt, _ = await loop.connect_write_pipe(asyncio.Protocol,
                                              os.fdopen(self.to_browser, "wb", 0))
        self.pipe_out: asyncio.WriteTransport = wt
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.done.set)
        self.socket_path.unlink(missing_ok=True)
        old = os.umask(0o177)
        try:
            server = await loop.create_unix_server(lambda: _FromDaemon(self),
                                                   path=str(self.socket_path))
        finally:
            os.umask(old)
        await self._announce()
        if self.browser.poll() is not None:
            return
        await self.done.wait()  # told to stop, or the browser's pipe ended
        server.close()
        self._stop_browser()
        self.socket_path.unlink(missing_ok=True)

    async def _announce(self) -> None:
        """Write the state file (the daemon waits for it) once the socket listens."""
        state: dict[str, object] = {"keeper_pid": os.getpid(), "browser_pid": self.browser.pid,
                                    "socket": str(self.socket_path)}
        cdp_url = await self._exposed_endpoint()
        if cdp_url:
            state["cdp_url"] = cdp_url
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.chmod(tmp, 0o600)
        tmp.replace(self.state_file)

    async def _exposed_endpoint(self) -> str | None:
        """With --remote-debugging-port (`--expose-cdp`): the WebSocket URL it opened."""
        if not any(a.startswith("--remote-debugging-port") for a in self.argv):
            return None
        profile = next((a.split("=", 1)[1] for a in self.argv
                        if a.startswith("--user-data-dir=")), None)
        if profile is None:
            return None
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while (time.monotonic() < deadline and self.browser.poll() is None
               and not self.done.is_set()):  # told to stop while it starts: stop now
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}"
            await asyncio.sleep(0.02)
        return None

    def _stop_browser(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.browser.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.browser.pid, sig)
                os.killpg(self.browser.pid, signal.SIGCONT)  # a stopped one must run to go
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.browser.wait(3)

    def browser_said(self, frames: Frames) -> None:
        """Replies go to the client whose command they answer (its own id back), if it
        is still the current one; events go to the current client."""
        out: list[bytes | bytearray] = []
        for frame in frames:
            found = _ID.match(frame)
            if found:
                route = self.routes.pop(int(found.group(1)), None)
                if route is None or route[0] != self.serial:
                    continue  # an earlier client's reply: never the new one's
                frame = b'{"id":%d' % route[1] + frame[found.end():]
            out.append(frame)
        if out and self.client is not None:
            out.append(b"")  # the last frame's NUL
            self.client.write(b"\0".join(out))

    # -- the daemon ---------------------------------------------------------------------

    def take(self, client: asyncio.Transport) -> int:
        """A new client replaces the current one (the next daemon takes over): its number."""
        if self.client is not None:
            self.client.close()
        self.serial += 1
        self.client = client
        return self.serial

    def client_said(self, serial: int, frames: Frames) -> None:
        """A client's commands, each under a fresh id of the keeper's own."""
        if serial != self.serial:
            return  # a replaced client's late bytes
        out: list[bytes | bytearray] = []
        for frame in frames:
            found = _ID.match(frame)
            if found is None:
                continue  # not a command this keeper can route: dropped
            self.next_id += 1
            self.routes[self.next_id] = (serial, int(found.group(1)))
            out.append(b'{"id":%d' % self.next_id + frame[found.end():])
        if out:
            out.append(b"")  # the last frame's NUL
            self.pipe_out.write(b"\0".join(out))

    def release(self, client: asyncio.Transport) -> None:
        if self.client is client:
            self.client = None


class _Frames(asyncio.Protocol):
    """A stream of NUL-terminated frames: each read's whole frames (without their NUL)
    handed over together (`frames`), so a read holding several costs one write onward.
    At most one partial frame is held; one past MAX_FRAME ends the stream (`too_long`)
    and nothing after it is read."""

    def __init__(self, keeper: Keeper) -> None:
        self.keeper = keeper
        self.held = bytearray()
        self.transport: asyncio.BaseTransport | None = None
        self.ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.ended:
            return
        end = data.rfind(b"\0")
        if end < 0:
            self.held += data
        else:
            whole: bytes | bytearray
            if self.held:
                self.held += data[:end]
                whole, self.held = self.held, bytearray(data[end + 1:])
            else:
                whole = data[:end]
                self.held += data[end + 1:]
            self.frames(whole.split(b"\0"))
        if len(self.held) > MAX_FRAME:
            self.ended, self.held = True, bytearray()
            self.too_long()

    def frames(self, frames: Frames) -> None:
        raise NotImplementedError

    def too_long(self) -> None:
        raise NotImplementedError


class _FromBrowser(_Frames):
    def frames(self, frames: Frames) -> None:
        self.keeper.browser_said(frames)

    def too_long(self) -> None:
        self.keeper.done.set()  # as when the browser is gone: nothing can follow it

    def eof_received(self) -> bool:
        self.keeper.done.set()  # the browser is gone
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.keeper.done.set()


class _FromDaemon(_Frames):
    serial = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.serial = self.keeper.take(transport)  # type: ignore[arg-type]

    def frames(self, frames: Frames) -> None:
        self.keeper.client_said(self.serial, frames)

    def too_long(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.keeper.release(self.transport)  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    state_file, socket_path, log_file = (Path(a) for a in argv[:3])
    if argv[3:4] != ["--"]:
        print("usage: python -m browserskill.browser.keeper STATE SOCKET LOG -- ARGV…",
              file=sys.stderr)
        return 2
    keeper = Keeper(argv[4:], socket_path, state_file, log_file)
    heap.give_back_big_blocks()  # every message passes through: see base/heap.py
    event_loop.run(keeper.run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
