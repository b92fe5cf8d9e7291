"""Evidence of what happened in a tab: pdf, video start|stop, trace start|stop.

A video or a trace is a `Recording` of the session (session/sessions.py): one of each
kind at a time, on the tab that was current when it started, listed in `session list`,
and stopped with the session (what it had is saved under $BSK_HOME/recordings/).

- Video: the tab's screencast frames (`Page.startScreencast`, JPEG), each acknowledged
  once written, paced to 25 fps (tools/pacing.py) and piped into ffmpeg, which encodes
  VP8/WebM as they come (a still page's repeats too, as time passes, so `video stop`
  has at most STILL_S of film left to encode); `video stop FILE.mp4` re-encodes to H.264.
- Trace: `Tracing.start` in the tab's own CDP session, returned as a stream of Chrome
  trace JSON at `Tracing.end`. Chromium traces the whole browser from there (other
  sessions' pages show up too) and runs one trace at a time: a second session's
  `trace start` is refused, naming the session that traces.
- PDF: `Page.printToPDF`, streamed.

Across a crash of the daemon (docs/design.md, what survives what): a recording is written
to the session store before the browser or the encoder is asked, so the next daemon
finds it. A trace is re-adopted: it runs in the browser, in the CDP session that started
it, which the browser keeper keeps open; `trace stop` ends it there and writes all of
it. A video's encoder runs in a session of its own, its input a pipe: the daemon's death
closes the pipe and the encoder finishes the file; WebM written in clusters of at most
CLUSTER_MS, so even an encoder killed too leaves a playable file. The next daemon holds
it as an interrupted video: `video stop FILE` (or the session's end) closes it
(re-muxed: its duration and index written) and says the film ends at the crash.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import re
import shutil
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from browserskill.base import user_files
from browserskill.base.catalog.evidence import (
    PathParams,
    PdfParams,
    TraceStartParams,
    VideoStartParams,
)
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import CdpError, LinkError
from browserskill.browser.tab import DialogOpened, Tab, TabGone
from browserskill.session.sessions import Recording, Recordings, Session
from browserskill.tools.context import ToolContext
from browserskill.tools.emulation import page_view
from browserskill.tools.output_files import check_writable
from browserskill.tools.pacing import FramePacer
from browserskill.tools.registry import implements

log = logging.getLogger(__name__)

FPS = 25
ACK_AHEAD = 3  # frames acknowledged before the encoder has them (see VideoRecording._write)
# A still page sends no frames: its repeats are encoded as time passes, this far behind
# (frames in flight may still land before it), not all at `video stop`.
STILL_S = 1.0
_PAPER_INCHES = {"A4": (8.27, 11.69), "Letter": (8.5, 11.0)}
# DevTools' Performance panel's categories (as Puppeteer's page.tracing uses them).
DEFAULT_CATEGORIES = (
    "-*", "devtools.timeline", "v8.execute", "disabled-by-default-devtools.timeline",
    "disabled-by-default-devtools.timeline.frame", "toplevel", "blink.console",
    "blink.user_timing", "latencyInfo", "disabled-by-default-devtools.timeline.stack",
    "disabled-by-default-v8.cpu_profiler", "loading",
)
SCREENSHOT_CATEGORY = "disabled-by-default-devtools.screenshot"
# A WebM cluster is written out at most this often: what a killed encoder can lose.
CLUSTER_MS = 500
# How long a restarted daemon waits for the encoder the dead one left to finish its file.
LEFTOVER_ENCODER_S = 10.0
_VIDEO_SUFFIXES = (".webm", ".mp4")
_SIZE = re.compile(r"^(\d{1,5})x(\d{1,5})$")


def _target(params: Mapping[str, Any], suffixes: tuple[str, ...] = ()) -> Path:
    path = Path(params["path"])
    if suffixes and path.suffix.lower() not in suffixes:
        raise invalid("path", f"{path.name}: the file name must end in "
                      f"{' or '.join(suffixes)} (that picks the format)")
    check_writable(path)
    return path


def _recordings_dir(ctx: ToolContext) -> Path:
    folder = Path(ctx.state_dir) / "recordings"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


async def save_stream(tab: Tab, handle: str, path: Path, timeout: float, *,
                      session_id: str | None = None) -> int:
    """Copy a CDP stream (`IO.read`) of the tab's session (or the CDP session named)
    into `path`; its size."""
    size = 0
    try:
        async with asyncio.timeout(timeout):
            # Opened, written and closed in workers (browserskill/base/user_files.py): a slow
            # disk holds this call until its deadline, never the event loop.
            out = await user_files.in_worker(user_files.open_for_write, path)
            try:
                while True:
                    chunk = await tab.send("IO.read", {"handle": handle, "size": 1 << 20},
                                           session_id=session_id)
                    data = chunk.get("data", "")
                    raw = (base64.b64decode(data) if chunk.get("base64Encoded")
                           else data.encode())
                    await user_files.in_worker(out.write, raw)
                    size += len(raw)
                    if chunk.get("eof"):
                        break
                await user_files.in_worker(out.close)
            finally:
                user_files.close_soon(out)  # failed or cut short: closed, never waited on
    finally:
        with contextlib.suppress(LinkError, TabGone):
            await tab.send("IO.close", {"handle": handle}, session_id=session_id, timeout=2.0)
    return size


@implements("pdf")
async def pdf(ctx: ToolContext, params: PdfParams) -> dict[str, Any]:
    path = _target(params, (".pdf",))
    width, height = _PAPER_INCHES[params["format"]]
    tab = ctx.tab
    try:
        answer = await ctx.inspect("Page.printToPDF", {
            "landscape": params["landscape"], "printBackground": True,
            "paperWidth": width, "paperHeight": height, "transferMode": "ReturnAsStream"})
    except CdpError as e:
        raise BskError("action_failed", f"the browser did not print the page: {e}",
                       hint="printing to PDF needs a Chromium that supports it (headless "
                            "Chromium does; some headed builds don't)",
                       details={"reason": "browser_error"}, dispatched=Dispatched.NO) from None
    try:
        size = await save_stream(tab, answer["stream"], path, ctx.remaining())
    except OSError as e:
        raise invalid("path", f"can't write {path}: {e.strerror}") from None
    return {"path": str(path), "bytes": size, "format": params["format"],
            "landscape": params["landscape"], "tab_id": tab.tab_id, "url": tab.url}


# -- video ------------------------------------------------------------------------------


def _ffmpeg() -> str:
    found = shutil.which("ffmpeg")
    if found is None:
        raise BskError("action_failed", "recording video needs ffmpeg, which is not installed",
                       hint="run scripts/install.sh, or install it (Debian: apt-get install "
                            "ffmpeg)", details={"reason": "no_ffmpeg"}, dispatched=Dispatched.NO)
    return found


def _wxh(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


def _even(n: int) -> int:
    return max(2, n - n % 2)  # the encoders need even sizes


class VideoRecording:
    """One tab's screencast, encoded to WebM as it comes (see the module docstring)."""

    def __init__(self, tab: Tab, size: tuple[int, int], file: Path) -> None:
        self.tab = tab
        self.size = size
        self.file = file  # the WebM being written
        self.started_at = time.time()
        self.frames_in = 0
        self.pacer = FramePacer(FPS)
        self.queue: asyncio.Queue[tuple[bytes, float, int | None] | None] = asyncio.Queue()
        self._acks: set[asyncio.Task[None]] = set()
        self.failed: str | None = None
        self.stopped_at: float | None = None  # when stop was asked: the film ends there
        self.proc: asyncio.subprocess.Process | None = None
        self.writer: asyncio.Task[None] | None = None

    def summary(self) -> dict[str, Any]:
        state = "failed" if self.failed else "tab_closed" if self.tab.gone else "recording"
        return {"state": state, "tab_id": self.tab.tab_id,
                "started_at": self.started_at, "size": _wxh(self.size),
                "frames_received": self.frames_in, "frames_written": self.pacer.written}

    def stored(self) -> dict[str, Any]:
        return {"kind": "video", "file": str(self.file), "tab_id": self.tab.tab_id,
                "started_at": self.started_at, "size": list(self.size),
                "encoder_pid": self.proc.pid if self.proc is not None else None}

    @property
    def log_file(self) -> Path:
        return self.file.with_suffix(".log")

    async def spawn(self, ffmpeg: str) -> None:
        """The encoder, in a process session of its own with its errors in a file: when
        the daemon dies, its input closes and it finishes the WebM (nothing it writes
        can kill it with SIGPIPE, nor a signal to the daemon's group)."""
        w, h = self.size
        with self.log_file.open("wb") as errors:
            self.proc = await asyncio.create_subprocess_exec(
                ffmpeg, "-loglevel", "error", "-f", "image2pipe", "-framerate", str(FPS),
                # No probing: by default ffmpeg reads 5 MB of frames (seconds of film)
                # before it writes anything, all lost if it is killed meanwhile.
                "-c:v", "mjpeg", "-probesize", "32", "-analyzeduration", "0", "-i", "pipe:0",
                "-vf", f"scale={w}:{h}:force_original_aspect_ratio=decrease,"
                       f"pad={w}:{h}:(ow-iw)/2:(oh-ih)/2:color=white",
                # Playwright's VP8 settings: real-time speed, one thread.
                "-c:v", "libvpx", "-qmin", "0", "-qmax", "50", "-crf", "8", "-deadline",
                "realtime", "-cpu-used", "8", "-b:v", "1M", "-threads", "1",
                # Clusters written as they fill, at least every CLUSTER_MS: the file on disk
                # plays up to there whatever happens to this process.
                "-cluster_time_limit", str(CLUSTER_MS), "-flush_packets", "1",
                "-y", str(self.file),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                stderr=errors, start_new_session=True)

    async def start(self, timeout: float) -> None:
        assert self.proc is not None, "spawn() first"
        w, h = self.size
        self.writer = asyncio.create_task(self._write(), name="video-writer")
        self.tab.listeners.append(self._on_event)
        try:
            await self.tab.send("Page.startScreencast", {
                "format": "jpeg", "quality": 80, "maxWidth": w, "maxHeight": h,
                "everyNthFrame": 1}, timeout=timeout)
        except BaseException:
            await self.abandon()
            raise

    def _on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method != "Page.screencastFrame" or session_id != self.tab.session_id:
            return
        self.frames_in += 1
        stamp = params.get("metadata", {}).get("timestamp") or time.time()
        ack: int | None = params["sessionId"]
        if self.queue.qsize() < ACK_AHEAD:
            self._ack(params["sessionId"])
            ack = None
        self.queue.put_nowait((base64.b64decode(params["data"]), stamp, ack))

    def _ack(self, frame: int) -> None:
        """Acknowledge a frame: Chromium sends the next one only then."""
        async def send() -> None:
            with contextlib.suppress(LinkError, TabGone):
                reply = await self.tab.request("Page.screencastFrameAck", {"sessionId": frame})
                reply.add_done_callback(lambda f: f.cancelled() or f.exception())
        task = asyncio.get_running_loop().create_task(send())
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def _write(self) -> None:
        """Write frames as the pacer says. A frame is acknowledged as it arrives while
        fewer than ACK_AHEAD wait for the encoder, else once written: a slow encoder slows
        the screencast, and the daemon holds a few frames at most."""
        assert self.proc is not None and self.proc.stdin is not None
        stdin = self.proc.stdin
        last: bytes | None = None
        try:
            while True:
                try:
                    item = await asyncio.wait_for(self.queue.get(), STILL_S)
                except TimeoutError:
                    if last is not None and (repeat := self.pacer.catch_up(
                            time.time() - STILL_S)):
                        stdin.write(last * repeat)
                        await stdin.drain()
                    continue
                if item is None:
                    break
                frame, stamp, ack = item
                repeat = self.pacer.push(stamp)
                if last is not None and repeat:
                    stdin.write(last * repeat)
                    await stdin.drain()
                last = frame
                if ack is not None:
                    self._ack(ack)
            if last is not None:  # the encoder may lag: the film ends when stop was asked
                stdin.write(last * self.pacer.finish(self.stopped_at or time.time()))
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as e:
            self.failed = f"the encoder stopped: {e}"
        finally:
            stdin.close()

    async def finish(self, timeout: float) -> None:
        """Stop the screencast and the encoder; the WebM is complete when this returns."""
        self.stopped_at = time.time()
        with contextlib.suppress(ValueError):
            self.tab.listeners.remove(self._on_event)
        with contextlib.suppress(LinkError, TabGone):
            await self.tab.send("Page.stopScreencast", timeout=min(timeout, 2.0))
        if self.frames_in == 0:
            await self._still_frame(min(timeout, 2.0))
        self.queue.put_nowait(None)
        assert self.proc is not None and self.writer is not None
        try:
            async with asyncio.timeout(timeout):
                await self.writer
                await self.proc.wait()
        except TimeoutError:
            await self.abandon()
            raise BskError("action_failed", "the video encoder did not finish in time",
                           details={"reason": "encoder_timeout"},
                           dispatched=Dispatched.YES) from None
        err = _tail(self.log_file)
        self.log_file.unlink(missing_ok=True)
        if self.proc.returncode != 0:
            self.failed = f"ffmpeg exited {self.proc.returncode}: {err}"
        if self.failed:
            raise BskError("action_failed", f"the video could not be encoded: {self.failed}",
                           details={"reason": "encoder_failed"}, dispatched=Dispatched.YES)

    async def _still_frame(self, timeout: float) -> None:
        """Stopped before the screencast's first frame (a start and stop in one batch, a
        loaded machine): the film is the page as it is now, for the time recorded, rather
        than no film at all. No frame can come after stopScreencast's answer."""
        try:
            shot = await self.tab.send("Page.captureScreenshot",
                                       {"format": "jpeg", "quality": 80}, timeout=timeout)
        except (LinkError, TabGone, DialogOpened) as e:
            self.failed = f"no frame came from the tab before the stop, nor a screenshot ({e})"
            return
        self.queue.put_nowait((base64.b64decode(shot["data"]), self.started_at, None))

    async def abandon(self) -> None:
        """Stop everything at once, keeping no file (a failed start, a cancelled stop)."""
        with contextlib.suppress(ValueError):
            self.tab.listeners.remove(self._on_event)
        if self.writer is not None:
            self.writer.cancel()
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        self.file.unlink(missing_ok=True)
        self.log_file.unlink(missing_ok=True)

    async def stop_with_session(self) -> dict[str, Any]:
        try:
            await self.finish(10.0)
        except BskError as e:
            return {"kind": "video", "error": e.message}
        return {"kind": "video", "path": str(self.file)}


def _tail(log: Path) -> str:
    """The end of an encoder's error output (its file), for a message."""
    try:
        return log.read_bytes()[-500:].decode(errors="replace").strip()
    except OSError:
        return ""


class LeftoverVideo:
    """A video the previous daemon was recording when it died: its encoder, left running
    with its input closed, finishes the file; `video stop` (or the session's end) waits
    for that, re-muxes it (duration and index, also when the encoder was killed too) and
    hands it over. The film ends where the daemon died."""

    NOTE = ("the daemon stopped during this recording: the video ends there (what was "
            "recorded until then is kept)")

    def __init__(self, stored: dict[str, Any]) -> None:
        self.record = stored
        self.file = Path(str(stored["file"]))
        self.tab_id = str(stored.get("tab_id"))
        self.started_at = float(stored.get("started_at") or 0.0)
        size = stored.get("size") or (0, 0)
        self.size = (int(size[0]), int(size[1]))
        pid = stored.get("encoder_pid")
        self.encoder_pid = int(pid) if pid else None

    def summary(self) -> dict[str, Any]:
        return {"state": "interrupted", "tab_id": self.tab_id, "started_at": self.started_at,
                "size": _wxh(self.size), "file": str(self.file), "note": self.NOTE,
                "hint": "`bsk video stop FILE` saves it"}

    def stored(self) -> dict[str, Any]:
        return self.record  # a second crash finds it again

    async def settle(self, timeout: float) -> None:
        """Its encoder done (killed if it has not finished within `timeout`), the file
        re-muxed in place. BskError when nothing playable was recorded."""
        if self.encoder_pid is not None:
            await _encoder_done(self.encoder_pid, self.file, timeout)
        self.file.with_suffix(".log").unlink(missing_ok=True)
        if not self.file.exists() or self.file.stat().st_size == 0:
            raise BskError("action_failed", "the daemon stopped before any of this video "
                           "was written", details={"reason": "nothing_recorded"},
                           dispatched=Dispatched.YES)
        fixed = self.file.with_name(self.file.stem + ".remux.webm")
        proc = await asyncio.create_subprocess_exec(
            _ffmpeg(), "-loglevel", "error", "-i", str(self.file), "-c", "copy", "-y",
            str(fixed), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(max(timeout, 5.0)):
                _, err = await proc.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            fixed.unlink(missing_ok=True)
            raise
        if proc.returncode != 0 or not fixed.exists() or fixed.stat().st_size == 0:
            fixed.unlink(missing_ok=True)
            raise BskError("action_failed", "what was recorded before the daemon stopped "
                           f"could not be read back: {err.decode(errors='replace')[-300:]}",
                           details={"reason": "nothing_recorded"}, dispatched=Dispatched.YES)
        fixed.replace(self.file)

    async def stop_with_session(self) -> dict[str, Any]:
        try:
            await self.settle(LEFTOVER_ENCODER_S)
        except BskError as e:
            return {"kind": "video", "error": e.message}
        return {"kind": "video", "path": str(self.file), "interrupted": self.NOTE}


async def _encoder_done(pid: int, file: Path, timeout: float) -> None:
    """Wait (bounded) for the encoder a dead daemon left, then kill it if it still runs.
    It is known by its pid and the file on its command line (the pid may be reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return  # gone already
    if b"ffmpeg" not in cmdline or str(file).encode() not in cmdline:
        return
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()

    def readable() -> None:  # a pidfd reads as ready once its process has exited
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(fd, readable)
    try:
        async with asyncio.timeout(timeout):
            await exited
    except TimeoutError:
        log.warning("the encoder %d left by the previous daemon did not finish in %g s: "
                    "stopped", pid, timeout)
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


class _AfterRestart:
    """What a recording the previous daemon left becomes (SessionManager.readopt)."""

    def __init__(self) -> None:
        self._settling: set[asyncio.Task[None]] = set()  # videos being closed

    async def readopt(self, session: Session, stored: dict[str, Any]) -> Recording:
        kind = stored.get("kind")
        if kind == "video":
            return LeftoverVideo(stored)
        if kind == "trace":
            tab = session.tabs.get(str(stored.get("tab_id")))
            if tab is None:
                raise LookupError(f"its tab {stored.get('tab_id')} did not survive")
            try:  # the CDP session it runs in is still open (not so in a remote browser)
                await tab.send("Target.getTargetInfo", session_id=str(stored["cdp_session"]),
                               timeout=5.0)
            except CdpError as e:
                raise LookupError("the browser ended it with the dead daemon's connection "
                                  f"({e})") from None
            return TraceRecording.readopt(tab, stored)
        raise ValueError(f"unknown recording kind {kind!r}")

    async def left_behind(self, stored: dict[str, Any]) -> str | None:
        if stored.get("kind") == "video":
            video = LeftoverVideo(stored)
            # Closed in the background: the daemon's start waits for no encoder.
            task = asyncio.get_running_loop().create_task(self._settle(video))
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)
            return f"its video (until the daemon stopped) is at {video.file}"
        if stored.get("kind") == "trace":
            return "its trace ended with its tabs"
        return None


    @staticmethod
    async def _settle(video: LeftoverVideo) -> None:
        try:
            await video.settle(LEFTOVER_ENCODER_S)
        except (BskError, OSError) as e:
            log.warning("closing the video %s left by the previous daemon: %s", video.file,
                        e.message if isinstance(e, BskError) else e)


RECORDINGS_AFTER_RESTART = _AfterRestart()


def _size(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    m = _SIZE.match(text)
    if m is None or not all(16 <= int(v) <= 4096 for v in m.groups()):
        raise invalid("size", f"expected WxH with each side 16-4096, e.g. 800x600, got {text!r}")
    return _even(int(m[1])), _even(int(m[2]))


def _already(ctx: ToolContext, kind: str, stop: str) -> None:
    running = ctx.feature(Recordings).running.get(kind)
    if running is not None:
        summary = running.summary()
        if summary.get("state") == "interrupted":  # a LeftoverVideo
            raise BskError("action_failed", f"this session has a {kind} that a daemon crash "
                           f"interrupted (tab {summary.get('tab_id')}), not yet saved",
                           hint=f"save it first: bsk {stop} FILE",
                           details={"reason": "already_recording"}, dispatched=Dispatched.NO)
        raise BskError("action_failed", f"this session is already recording a {kind} "
                       f"(tab {summary.get('tab_id')})",
                       hint=f"stop it first: bsk {stop} FILE",
                       details={"reason": "already_recording"}, dispatched=Dispatched.NO)


def _running(ctx: ToolContext, kind: str, start: str) -> Any:
    running = ctx.feature(Recordings).running.get(kind)
    if running is None:
        raise BskError("action_failed", f"this session is not recording a {kind}",
                       hint=f"start one with: bsk {start}",
                       details={"reason": "not_recording"}, dispatched=Dispatched.NO)
    return running


@implements("video_start")
async def video_start(ctx: ToolContext, params: VideoStartParams) -> dict[str, Any]:
    size = _size(params["size"])
    _already(ctx, "video", "video stop")
    ffmpeg = _ffmpeg()
    tab = ctx.tab
    if size is None:
        view = await page_view(ctx, tab)
        size = _even(int(view.get("width") or 800)), _even(int(view.get("height") or 600))
    file = _recordings_dir(ctx) / f"{ctx.session.id}-{ctx.op_id}.webm"
    recording = VideoRecording(tab, size, file)
    ctx.mark_dispatched()
    await recording.spawn(ffmpeg)
    # In the store before the first frame: a daemon that dies from here on leaves a
    # video the next one finds (LeftoverVideo).
    ctx.feature(Recordings).running["video"] = recording
    ctx.persist()
    try:
        await recording.start(ctx.remaining())
    except BaseException:
        ctx.feature(Recordings).running.pop("video", None)
        ctx.persist()
        raise
    return {"recording": "video", "tab_id": tab.tab_id, "size": _wxh(size), "fps": FPS}


@implements("video_stop")
async def video_stop(ctx: ToolContext, params: PathParams) -> dict[str, Any]:
    path = _target(params, _VIDEO_SUFFIXES)
    recording: VideoRecording | LeftoverVideo = _running(ctx, "video", "video start")
    ctx.mark_dispatched()
    if isinstance(recording, LeftoverVideo):
        return await _leftover_stop(ctx, recording, path)
    del ctx.feature(Recordings).running["video"]
    try:
        await recording.finish(ctx.remaining())
    except BaseException:  # failed, timed out or cancelled: nothing half-written stays
        await asyncio.shield(recording.abandon())
        raise
    if path.suffix.lower() == ".mp4":
        await _to_mp4(recording.file, path, ctx.remaining())
        recording.file.unlink()
    else:
        await user_files.in_worker(user_files.move_into, recording.file, path)
    frames = recording.pacer.written
    return {"path": str(path), "bytes": path.stat().st_size, "tab_id": recording.tab.tab_id,
            "size": _wxh(recording.size), "fps": FPS, "frames": frames,
            "duration_s": round(frames / FPS, 2), "frames_received": recording.frames_in}


async def _leftover_stop(ctx: ToolContext, video: LeftoverVideo,
                         path: Path) -> dict[str, Any]:
    """`video stop` of a video a crash interrupted: closed, then handed over as usual."""
    try:
        await video.settle(min(LEFTOVER_ENCODER_S, ctx.remaining()))
    except BskError:  # nothing playable: said once, then the session is free of it
        del ctx.feature(Recordings).running["video"]
        video.file.unlink(missing_ok=True)
        raise
    del ctx.feature(Recordings).running["video"]  # settled: nothing of it runs any more
    if path.suffix.lower() == ".mp4":
        await _to_mp4(video.file, path, ctx.remaining())
        video.file.unlink()
    else:
        shutil.move(video.file, path)
    return {"path": str(path), "bytes": path.stat().st_size, "tab_id": video.tab_id,
            "size": _wxh(video.size), "fps": FPS,
            "duration_s": await _duration(path, ctx.remaining()),
            "interrupted": LeftoverVideo.NOTE}


async def _duration(path: Path, timeout: float) -> float | None:
    """A video's length in seconds as ffprobe reads it (None if it can't)."""
    probe = shutil.which("ffprobe")
    if probe is None:
        return None
    proc = await asyncio.create_subprocess_exec(
        probe, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        async with asyncio.timeout(max(1.0, timeout)):
            out, _ = await proc.communicate()
        return round(float(out.decode().strip()), 2)
    except (TimeoutError, ValueError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None


async def _to_mp4(source: Path, path: Path, timeout: float) -> None:
    proc = await asyncio.create_subprocess_exec(
        _ffmpeg(), "-loglevel", "error", "-i", str(source), "-c:v", "libx264", "-preset",
        "veryfast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-y", str(path),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(timeout):
            _, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise BskError("action_failed", "re-encoding to MP4 did not finish in time; the "
                       f"WebM is kept at {source}", hint="give a longer --timeout, or a "
                       ".webm file", details={"reason": "encoder_timeout"},
                       dispatched=Dispatched.YES) from None
    if proc.returncode != 0:
        raise BskError("action_failed", f"re-encoding to MP4 failed: {err.decode()[-500:]}",
                       details={"reason": "encoder_failed"}, dispatched=Dispatched.YES)


# -- trace ------------------------------------------------------------------------------


class TraceRecording:
    """A performance trace of one tab (see the module docstring)."""

    def __init__(self, tab: Tab, categories: list[str], folder: Path, name: str, *,
                 cdp_session: str | None = None, started_at: float | None = None) -> None:
        self.tab = tab
        self.categories = categories
        self.folder = folder
        self.name = name
        self.started_at = started_at or time.time()
        # The CDP session the trace runs in: the tab's, or, re-adopted after a restart, the
        # one the dead daemon started it in (the keeper kept it open in the browser).
        self.cdp_session = cdp_session or tab.session_id
        self.readopted = cdp_session is not None and cdp_session != tab.session_id
        self.complete: asyncio.Future[dict[str, Any]] = \
            asyncio.get_running_loop().create_future()
        self._unsubscribe = tab.link.subscribe(self.cdp_session, self._on_event)

    @classmethod
    def readopt(cls, tab: Tab, stored: dict[str, Any]) -> TraceRecording:
        """The trace a dead daemon started, still running in the browser."""
        return cls(tab, [str(c) for c in stored["categories"]], Path(str(stored["folder"])),
                   str(stored["name"]), cdp_session=str(stored["cdp_session"]),
                   started_at=float(stored["started_at"]))

    def summary(self) -> dict[str, Any]:
        out = {"state": "recording", "tab_id": self.tab.tab_id, "started_at": self.started_at,
               "categories": self.categories}
        if self.readopted:
            out["readopted"] = "re-adopted after a daemon restart: nothing of it was lost"
        return out

    def stored(self) -> dict[str, Any]:
        return {"kind": "trace", "tab_id": self.tab.tab_id, "cdp_session": self.cdp_session,
                "categories": self.categories, "started_at": self.started_at,
                "folder": str(self.folder), "name": self.name}

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Tracing.tracingComplete" and not self.complete.done():
            self.complete.set_result(params)

    async def start(self, timeout: float) -> None:
        included = [c for c in self.categories if not c.startswith("-")]
        excluded = [c[1:] for c in self.categories if c.startswith("-")]
        try:
            await self.tab.send("Tracing.start", {
                "transferMode": "ReturnAsStream", "streamFormat": "json",
                "traceConfig": {"includedCategories": included,
                                "excludedCategories": excluded}}, timeout=timeout)
        except BaseException:
            self._unsubscribe()
            raise

    async def finish(self, path: Path, timeout: float) -> int:
        try:
            async with asyncio.timeout(timeout):
                await self.tab.send("Tracing.end", session_id=self.cdp_session)
                done = await self.complete
            if "stream" not in done:
                raise BskError("action_failed", "Chromium returned no trace data",
                               details={"reason": "browser_error"}, dispatched=Dispatched.YES)
            size = await save_stream(self.tab, done["stream"], path, timeout,
                                     session_id=self.cdp_session)
        except TimeoutError:
            raise BskError("action_failed", "the trace did not finish in time",
                           details={"reason": "trace_timeout"}, dispatched=Dispatched.YES) from None
        except (LinkError, TabGone) as e:
            raise BskError("action_failed", f"the trace is lost: {e}",
                           hint="the traced tab closed or its browser went away",
                           details={"reason": "tab_gone"}, dispatched=Dispatched.YES) from None
        finally:
            self._unsubscribe()
            if self.readopted:  # the dead daemon's CDP session, kept open for this trace
                with contextlib.suppress(LinkError):
                    await self.tab.link.send("Target.detachFromTarget",
                                             {"sessionId": self.cdp_session}, timeout=2.0)
        return size

    async def stop_with_session(self) -> dict[str, Any]:
        path = self.folder / f"{self.name}.json"
        try:
            await self.finish(path, 10.0)
        except BskError as e:
            return {"kind": "trace", "error": e.message}
        return {"kind": "trace", "path": str(path)}


@implements("trace_start")
async def trace_start(ctx: ToolContext, params: TraceStartParams) -> dict[str, Any]:
    if params["categories"] is not None:
        categories = [c.strip() for c in params["categories"].split(",") if c.strip()]
        if not categories:
            raise invalid("categories", "give at least one category")
    else:
        categories = list(DEFAULT_CATEGORIES)
    if params["screenshots"] and SCREENSHOT_CATEGORY not in categories:
        categories.append(SCREENSHOT_CATEGORY)
    _already(ctx, "trace", "trace stop")
    for other in ctx.live_sessions():
        if "trace" in other.recordings() and other.backend.owner is ctx.backend.owner:
            raise BskError("action_failed", f"session {other.id} is tracing this browser; "
                           "Chromium runs one trace at a time",
                           hint=f"wait for it, or: bsk -s {other.id} trace stop FILE",
                           details={"reason": "trace_busy", "session": other.id},
                           dispatched=Dispatched.NO)
    tab = ctx.tab
    recording = TraceRecording(tab, categories, _recordings_dir(ctx),
                               f"{ctx.session.id}-{ctx.op_id}")
    ctx.mark_dispatched()
    # In the store before the browser starts it: a daemon that dies from here on leaves a
    # trace the next one re-adopts (in the same CDP session).
    ctx.feature(Recordings).running["trace"] = recording
    ctx.persist()
    try:
        await recording.start(ctx.remaining())
    except BaseException as e:
        ctx.feature(Recordings).running.pop("trace", None)
        ctx.persist()
        if not isinstance(e, CdpError):
            raise
        raise BskError("action_failed", f"the browser did not start tracing: {e}",
                       hint="a trace started by another DevTools client may be running; "
                            "through the extension, tracing is not available",
                       details={"reason": "browser_error"}, dispatched=Dispatched.YES) from None
    return {"recording": "trace", "tab_id": tab.tab_id, "categories": categories}


@implements("trace_stop")
async def trace_stop(ctx: ToolContext, params: PathParams) -> dict[str, Any]:
    path = _target(params)
    recording: TraceRecording = _running(ctx, "trace", "trace start")
    ctx.mark_dispatched()
    del ctx.feature(Recordings).running["trace"]
    size = await recording.finish(path, ctx.remaining())
    return {"path": str(path), "bytes": size, "tab_id": recording.tab.tab_id,
            "duration_s": round(time.time() - recording.started_at, 2)}
