"""Files a user names: the one place that opens them (docs/design.md, "User files and
bounded results").

Invariants, for every read (route bodies, storage state, replay scripts, the MCP
screenshot) and every write (screenshots, PDFs, traces, HAR, state, scripts, videos):
- the file is opened with O_NONBLOCK and `fstat`ed before a byte moves: anything but a
  regular file (a FIFO, a device such as /dev/full or /dev/zero, a directory, a socket)
  is refused with `invalid_params` naming the field, the file and what it is;
- a read takes at most `cap + 1` bytes, whatever `stat` says (/dev/full says 0), so a
  file over its cap is refused having cost at most the cap;
- the async forms run the blocking part in a thread of its own (`in_worker`), so a slow
  or stuck file holds only its own call, which ends at its deadline like any other step:
  never the event loop (other sessions, the control plane) nor a shared thread pool;
- a write whose call has ended while its open waited (a frozen disk) writes nothing: the
  file it made is removed, so nothing lands after the answer said it did not.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import stat
import threading
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from browserskill.base.errors import BskError

T = TypeVar("T")

# Set in a worker's thread (`in_worker`) once the call that started it has stopped waiting.
_ABANDONED: ContextVar[threading.Event | None] = ContextVar("bsk_file_abandoned",
                                                            default=None)

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(field: str, path: str | Path, why: str, hint: str | None = None) -> BskError:
    return BskError("invalid_params", f"{field}: {path}: {why}",
                    hint=hint or "give the path of a regular file",
                    details={"field": field, "file": str(path)})


def _not_regular(field: str, path: str | Path, mode: int) -> BskError:
    return _refuse(field, path, f"is {_kind(mode)}, not a regular file")


def _open_error(field: str, path: str | Path, e: OSError, verb: str) -> BskError:
    if e.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP):
        try:  # a FIFO with no reader (ENXIO), a directory, a device: say which
            return _not_regular(field, path, os.stat(path).st_mode)
        except OSError:
            pass
    return _refuse(field, path, f"can't {verb} it: {e.strerror or e}",
                   hint="check the path and its permissions")


def check_regular(path: str | Path, field: str) -> None:
    """Refuse (invalid_params) a path that is missing or not a regular file, by `stat`
    alone: for a file another program reads (an upload: the browser reads it)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise _refuse(field, path, e.strerror or str(e),
                      hint="check the path; the daemon reads files on this machine") from None
    if not stat.S_ISREG(mode):
        raise _not_regular(field, path, mode)


def check_not_special(path: Path, field: str = "path") -> None:
    """Refuse (invalid_params) a write target that exists and is not a regular file, by
    `stat` alone (no open, so nothing blocks): the early check, before any work."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing (it will be made), or unreadable: the open says why
    if not stat.S_ISREG(mode):
        raise _not_regular(field, path, mode)


def _open_regular(path: str | Path, flags: int, field: str, verb: str,
                  mode: int = 0o666) -> int:
    """`path` opened non-blocking (a FIFO's open never waits for its other end), and its
    descriptor if it is a regular file; else closed and refused, naming what it is."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        raise _open_error(field, path, e, verb) from None
    try:
        st_mode = os.fstat(fd).st_mode
    except OSError as e:
        os.close(fd)
        raise _refuse(field, path, f"can't {verb} it: {e.strerror or e}") from None
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        raise _not_regular(field, path, st_mode)
    return fd


def read_bounded(path: str | Path, field: str, cap: int) -> bytes:
    """The whole of a regular file of at most `cap` bytes, else invalid_params naming
    `field` and why. Blocking: call it from `read_file` (the daemon) or the CLI."""
    fd = _open_regular(path, os.O_RDONLY, field, "read")
    try:
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= cap:  # a file that grows meanwhile costs at most cap + 1 bytes
            chunk = os.read(fd, min(cap + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise _refuse(field, path, f"can't read it: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise _refuse(field, path, f"is larger than the {cap:,} bytes allowed",
                      hint="give a smaller file")
    return data


def open_for_write(path: str | Path, field: str = "path", *,
                   private: bool = False) -> BinaryIO:
    """`path` opened to be written from its start (made if missing; 0600 if `private`,
    also when it existed), refusing anything but a regular file. Blocking: for a worker."""
    existed = os.path.lexists(path)
    fd = _open_regular(path, os.O_WRONLY | os.O_CREAT, field, "write",
                       0o600 if private else 0o666)
    try:
        abandoned = _ABANDONED.get()
        if abandoned is not None and abandoned.is_set():  # its call has answered already
            if not existed:
                os.unlink(path)
            raise _refuse(field, path, "its call ended before the file could be opened")
        if private:
            os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)  # only now: a FIFO or device was never touched
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")
    except OSError as e:
        os.close(fd)
        raise _refuse(field, path, f"can't write it: {e.strerror or e}") from None
    except BaseException:
        os.close(fd)
        raise


def write_whole(path: str | Path, data: bytes, field: str = "path", *,
                private: bool = False) -> None:
    """Write `data` as the whole of `path` (see `open_for_write`). Blocking: for a worker."""
    with open_for_write(path, field, private=private) as f:
        try:
            f.write(data)
            f.flush()
        except OSError as e:
            raise _refuse(field, path, f"can't write it: {e.strerror or e}",
                          hint="check the disk has room") from None


def move_into(source: Path, path: Path, field: str = "path") -> None:
    """Move our own finished file `source` to the user's `path`: a rename on the same
    filesystem, else a copy into the regular file `open_for_write` checked. Blocking."""
    with open_for_write(path, field) as out:
        try:
            os.replace(source, path)
            return
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise _refuse(field, path, f"can't write it: {e.strerror or e}") from None
        try:
            with open(source, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
        except OSError as e:
            raise _refuse(field, path, f"can't write it: {e.strerror or e}",
                          hint="check the disk has room") from None
    source.unlink()


async def in_worker(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a thread of its own; cancelling the caller (its deadline) returns at
    once and leaves the thread to finish alone (a daemon thread: it never holds exit).
    Not the shared executor: a file stuck for ever must not starve anything else."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    abandoned = threading.Event()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        _ABANDONED.set(abandoned)  # a new thread has a context of its own
        try:
            result = fn(*args)
        except BaseException as e:  # handed to the caller, who re-raises it
            error: BaseException | None = e
            result = None
        else:
            error = None
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting
            pass

    threading.Thread(target=run, name=f"bsk-file-{getattr(fn, '__name__', 'io')}",
                     daemon=True).start()
    try:
        return await done
    except asyncio.CancelledError:
        abandoned.set()
        raise


def close_soon(f: BinaryIO) -> None:
    """Close `f` in a thread of its own, not waiting (a call that failed or ran out of
    time lets go of its file: a flush that hangs holds only that thread)."""
    if not f.closed:
        threading.Thread(target=f.close, name="bsk-file-close", daemon=True).start()


async def read_file(path: str | Path, field: str, cap: int) -> bytes:
    """`read_bounded` in a worker: the event loop never waits on a user's file."""
    return await in_worker(read_bounded, path, field, cap)


async def write_file(path: str | Path, data: bytes, field: str = "path", *,
                     private: bool = False) -> None:
    """`write_whole` in a worker: the event loop never waits on a user's file."""
    await in_worker(lambda: write_whole(path, data, field, private=private))
