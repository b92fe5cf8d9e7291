"""`bsk`'s output read by a reader that went away (`bsk --help | head -1`).

Invariant: `bsk` then ends as other commands end there — killed by SIGPIPE, which a
shell reports as status 141 — and quietly: no `BrokenPipeError` traceback, no
"Exception ignored" from the interpreter flushing what is left. Imports only built-in
modules: the launcher (browserskill/cli/fast.py) reaches it without `os`.
"""

import _signal  # type: ignore[import-not-found]  # (no stub; `signal` costs enum)
import posix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


def reader_gone() -> "NoReturn":
    """The reader of our output went away (`bsk --help | head -1`): end as SIGPIPE ends
    `cat` or `git log` there — killed by it, the shell's status 141 — and quietly: the
    streams pointed at /dev/null first, so nothing left in a buffer says it on the way."""
    null = posix.open("/dev/null", posix.O_WRONLY)
    posix.dup2(null, 1)
    posix.dup2(null, 2)
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)  # Python ignores it from the start
    posix.kill(posix.getpid(), _signal.SIGPIPE)
    posix._exit(128 + _signal.SIGPIPE)  # not reached: SIGPIPE's default ends the process
