"""`bsk`'s first step: hand a tool call's command line to the daemon and print the answer.

Every agent action is one `bsk` process, so what it imports is paid on every call. This
module imports only built-in modules and `_socket` (`posix`, not `os`): no `json` (not
even `_json`), `re`, `enum`, `socket`, `dataclasses`, nor the catalog
(tests/test_cli_startup.py lists what a tool call imports and fails when that grows).
The daemon, which has the catalog and the renderer loaded, reads the command line with
the CLI's own code and answers with the text and exit code `bsk` would print
(`POST /v1/cli`, browserskill/api/cli_call.py).

Invariants:
- Whatever this path does not do, the whole CLI (`browserskill.cli.main`) does, with
  nothing sent twice: no daemon yet (it starts one), help, stdin (`-`), control
  commands, and a daemon that answers anything but 200 (204: not a tool call; 404: a
  daemon of another version) — all before any operation exists.
- A tool call names its operation up front (`X-Op-Id`). Ctrl-C or SIGTERM while it
  runs, the daemon going away, or no answer by the wire deadline the daemon named go to
  the whole CLI with that op id, which cancels it or asks how it ended and prints that
  (browserskill/cli/calls.py), exactly as `bsk` always has. A daemon that went away
  before one byte of its answer is told apart ("unanswered", not "lost"): a daemon
  killed a moment before may still have taken the connection, and a call no daemon
  recorded is then sent again.
- A call the daemon answered ends the process with `posix._exit` once its output is
  flushed (`launch`): the interpreter's own teardown costs ~1.7 ms, a tenth of the call,
  and there is nothing to tear down — no thread, no `atexit`, no file but the two
  flushed streams. Every other way out (the whole CLI ran) exits normally.
- Output whose reader has gone (`bsk --help | head -1`) ends `bsk` as SIGPIPE ends
  other commands, quietly (browserskill/cli/closed_pipe.py).
"""

import _signal  # type: ignore[import-not-found]  # (no stub; `signal` costs enum)
import _socket
import posix
import sys

from browserskill import __version__
from browserskill.base import http1

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import NoReturn

LOCAL = {"-", "-h", "--help"}  # stdin and help: the whole CLI, in this process
HEAD_TIMEOUT_S = 30.0  # the daemon answers its head before running anything
READ = 65536
# JSON string escapes (RFC 8259 §7) for `_quote`; everything else is sent as UTF-8, and a
# lone surrogate (an argv or environment byte that is not UTF-8) as `\udcXX` by the
# encoder's "backslashreplace" — what `json.dumps` would send for each.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {34: '\\"', 92: "\\\\"}


class _Lost(Exception):
    """The daemon went away mid-call (a reset, or the end before the answer); its one
    argument: whether nothing of an answer had come."""


def _interrupt(signum: int, frame: object) -> "NoReturn":
    raise KeyboardInterrupt


def launch() -> "NoReturn":
    """The launcher's entry point (and `python -m browserskill`'s): `main`, then exit."""
    code, answered = _main(sys.argv[1:])
    if answered:
        posix._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    return _main(sys.argv[1:] if argv is None else argv)[0]


def _main(argv: list[str]) -> tuple[int, bool]:
    """(exit code, whether the daemon answered and its output is out and flushed)."""
    if not argv or not LOCAL.isdisjoint(argv):
        return _whole_cli(argv), False
    try:
        return _call(argv)
    except KeyboardInterrupt:  # before the call went out, or while printing its answer
        return 130, False


def _call(argv: list[str]) -> tuple[int, bool]:
    env = _environ()
    try:
        line = _command_line(argv, env)
    except OSError:  # the working directory is gone: the CLI says what it can
        return _whole_cli(argv), False
    _signal.signal(_signal.SIGTERM, _interrupt)
    op_id = "op_" + posix.urandom(6).hex()  # contract.new_op_id's form, without its imports
    request = http1.request("POST", "/v1/cli", (
        ("Connection", "close"), ("Content-Type", "application/json"), ("X-Op-Id", op_id),
        ("X-Bsk-Version", __version__)), line)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(HEAD_TIMEOUT_S)
        try:
            sock.connect(_socket_path(env))
        except OSError:  # no daemon (yet), or a state dir it can't use: the CLI's to say
            sock.close()
            return _whole_cli(argv), False
        try:
            try:
                sock.sendall(request)
            except ConnectionError:  # the daemon's side closed before it read the call
                raise _Lost(True) from None
            status, headers, rest = _head(sock)
            if status != 200:
                sock.close()
                return _whole_cli(argv), False
            sock.settimeout(float(headers.get("x-bsk-wire-timeout", "630")))
            body = http1.body(headers, _rest(sock, rest), closed=True)
        except KeyboardInterrupt:
            sock.close()  # as `bsk` always has: hang up, then cancel by op id
            return _whole_cli(argv, (op_id, "interrupted")), False
        except TimeoutError:
            return _whole_cli(argv, (op_id, "timeout")), False
        except _Lost as e:
            return _whole_cli(argv, (op_id, "unanswered" if e.args[0] else "lost")), False
        except (ConnectionError, ValueError):
            return _whole_cli(argv, (op_id, "lost")), False
    finally:
        sock.close()
    first, _, rest = body.partition(b"\n")
    try:
        code, out_len, err_len = (int(x) for x in first.split())
    except ValueError:
        return _whole_cli(argv, (op_id, "lost")), False
    gone = False
    for stream, text in ((sys.stdout, rest[:out_len]),
                         (sys.stderr, rest[out_len:out_len + err_len])):
        try:
            if text:
                stream.buffer.write(text)
                stream.flush()
        except BrokenPipeError:  # `bsk snapshot | head -1`: the other stream still says
            gone = True
    if gone:
        from browserskill.cli.closed_pipe import reader_gone

        reader_gone()
    return code, True



def _environ() -> dict[str, str]:
    return {k.decode(errors="surrogateescape"): v.decode(errors="surrogateescape")
            for k, v in posix.environ.items()}


def _socket_path(env: dict[str, str]) -> str:
    """`paths.socket_file()` without `os` (tests/test_cli_startup.py checks they agree):
    BSK_HOME, else the platform's state dir. Where `paths` would resolve more (`~user`,
    symlinks) the kernel resolves the same path; a path that fails sends the call to the
    whole CLI, which says what is wrong."""
    home = env.get("BSK_HOME")
    if home:
        if home == "~" or home.startswith("~/"):
            home = env.get("HOME", "~") + home[1:]
        return (home if home.startswith("/") else posix.getcwd() + "/" + home) + "/bsk.sock"
    user = env.get("HOME", "")
    if sys.platform == "darwin":
        base = user + "/Library/Application Support"
    else:
        base = env.get("XDG_STATE_HOME") or user + "/.local/state"
    return base + "/browserskill/bsk.sock"


def _quote(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def _command_line(argv: list[str], env: dict[str, str]) -> bytes:
    """{"argv", "cwd", "env"} as JSON, by hand (`json` costs ms of imports, `_json` a
    shared library to load)."""
    bsk_env = ",".join(f"{_quote(k)}:{_quote(v)}" for k, v in env.items()
                       if k.startswith("BSK_"))
    return (f'{{"argv":[{",".join(map(_quote, argv))}],"cwd":{_quote(posix.getcwd())},'
            f'"env":{{{bsk_env}}}}}').encode("utf-8", "backslashreplace")


def _head(sock: _socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while (split := http1.split_head(data)) is None:
        try:
            chunk = sock.recv(READ)
        except ConnectionError:  # reset: a listener closed with our call still queued
            chunk = b""
        if not chunk:
            raise _Lost(not data)
        data += chunk
    return (*http1.parse_head(split[0]), split[1])


def _rest(sock: _socket.socket, body: bytes) -> bytes:
    chunks = [body]
    while True:
        chunk = sock.recv(READ)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _whole_cli(argv: list[str], resume: tuple[str, str] | None = None) -> int:
    from browserskill.cli.main import main as cli_main

    return cli_main(argv, resume=resume)
