"""`POST /v1/cli`: a `bsk` tool call read and printed by the daemon, for the launcher.

`bsk` runs once per agent action, so its start-up is paid on every call. The daemon
already has the catalog and the renderer loaded; the launcher (browserskill/cli/fast.py)
sends the command line — argument vector, working directory, `BSK_*` environment — and
prints what comes back, with its exit code (docs/cli.md, "Start-up").

Invariants:
- The command line is read by the CLI's own code (`browserskill/base/cli_args.py`) against
  the caller's working directory and environment, and printed by the CLI's renderer
  (`browserskill/base/cli_render.py`): the same text, exit code, and errors as `bsk` itself.
- Only tool calls are run here. Anything else — help, control commands, an unknown
  command, a launcher of another version — answers 204 before anything runs, and the
  launcher runs the whole CLI instead.
- The answer's head names the wire deadline (`X-Bsk-Wire-Timeout`: the call's deadline
  plus a margin, as `bsk` waits today). It goes out with the body when the operation
  ends within `HEAD_WITHIN_S` (most calls: one write, one wake-up of the caller), else
  at `HEAD_WITHIN_S`, well inside the launcher's wait for a head (`fast.HEAD_TIMEOUT_S`);
  the body is `b"EXIT OUT_BYTES ERR_BYTES\\n"`, stdout, stderr.
- The caller hanging up cancels the operation (as a dropped `POST …/tools/{tool}` does);
  the launcher's Ctrl-C then asks how it ended, by the op id it named (`X-Op-Id`).
- Unix socket only: over TCP (another machine's caller) the paths would mean nothing.
  There the listener serves it without ASGI (api/hot_route.py), as the tool call, and
  the operation runs in the request's own task; either route writes the answer through
  a `Reply` (api/reply.py), so the bytes are the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from browserskill import __version__
from browserskill.api import wire
from browserskill.api.batch import run_batch
from browserskill.api.listeners import CONNECTION_LOST
from browserskill.api.reply import AsgiReply, Reply
from browserskill.api.wire import Answer, BodyAbandoned, Headers
from browserskill.base import catalog, contract, json_text
from browserskill.base.catalog import ToolSpec
from browserskill.base.cli_args import Globals, split_globals, tool_params
from browserskill.base.cli_render import outcome, show
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.dispatch.dispatcher import Dispatcher
from browserskill.session.operations import Operation

log = logging.getLogger(__name__)

MAX_BODY = 4 << 20  # a command line, not a payload: `eval` scripts up to 1 MB, as JSON
HEAD_WITHIN_S = 1.0  # the head waits this long for the answer (launcher: 30 s for a head)
OCTETS = "application/octet-stream"
_ELSEWHERE = Answer(204, content_type=OCTETS)  # not run here: the launcher runs the CLI
_TOO_LARGE = Answer(413, content_type=OCTETS)  # (so does it then)


def tool_of(rest: list[str]) -> tuple[ToolSpec | None, list[str]]:
    """The plain tool a command line names (as `bsk`'s `find_command` would), or None."""
    for n in (2, 1):
        spec = catalog.BY_WORDS.get(tuple(rest[:n])) if len(rest) >= n else None
        if spec is not None:
            return (None if spec.hidden else spec), rest[n:]
    return None, rest


def _owns(rest: list[str], flag: str) -> bool:
    spec, _ = tool_of(rest)
    return spec is not None and any(p.flag == flag for p in spec.params)


class CliCall:
    """`POST /v1/cli`: `serve` answers it through a `Reply` (api/reply.py), whichever
    route brought it; called, it is the ASGI endpoint."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        server = scope.get("server")
        if server and isinstance(server[1], int):  # over TCP: not the launcher's
            return await AsgiReply(send).whole(_ELSEWHERE)
        await self.serve(scope["headers"], lambda: wire.read_body(scope, receive),
                         scope.get(CONNECTION_LOST), receive, AsgiReply(send))

    async def serve(self, headers: Headers, read: Callable[[], Awaitable[bytes]],
                    lost: asyncio.Future[None] | None, receive: Any, reply: Reply) -> None:
        """The request's header list, body reader and `lost` (our listeners'
        CONNECTION_LOST; a test's app has none, and its `receive` says when the caller
        is gone)."""
        version = op_header = b""
        for name, value in headers:  # the last of a name, as a dict of them would keep
            if name == b"x-bsk-version":
                version = value
            elif name == b"x-op-id":
                op_header = value
        if version.decode() != __version__:
            return await reply.whole(_ELSEWHERE)
        try:
            body = await read()
        except BodyAbandoned:
            return
        except BskError:  # wire.py's bounds: the CLI, run instead, reads what it can
            return await reply.whole(_TOO_LARGE)
        if len(body) > MAX_BODY:
            return await reply.whole(_TOO_LARGE)
        try:
            line = json_text.loads(body)
            argv, cwd, env = line["argv"], line["cwd"], line["env"]
        except (ValueError, KeyError, TypeError):
            argv = cwd = env = None
        if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)
                and isinstance(cwd, str) and cwd.startswith("/") and isinstance(env, dict)
                and all(isinstance(v, str) for v in env.values())):
            return await reply.whole(_ELSEWHERE)  # not a launcher's: let the CLI say it
        op_id = op_header.decode() or contract.new_op_id()
        out, err = io.StringIO(), io.StringIO()
        g = Globals(env)
        try:
            rest = split_globals(argv, g, owns=_owns)
            spec, args = tool_of(rest)
            if spec is None or g.help:
                return await reply.whole(_ELSEWHERE)
            params = tool_params(spec, args, g, cwd)
            if g.timeout and spec.timeout_range_s:
                contract.check_timeout_s(str(g.timeout), " ".join(spec.words),
                                         spec.timeout_range_s)
            wire.check_values(params)  # what the HTTP body's reading refuses (wire.py)
        except BskError as e:
            code = _print(outcome({"error": e.to_dict()}), (), g, out, err)
            return await reply.whole(_answer(code, out, err, contract.WIRE_MARGIN_S))
        if spec.name == "batch":
            if params["commands"] in (None, [], ["-"]):
                return await reply.whole(_ELSEWHERE)  # commands on stdin: the CLI reads them
            await reply.head(_head(contract.wire_timeout_s(spec, params, g.timeout)))
            return await self._batch(reply, lost, receive, g, params, op_id, cwd, out, err)
        wire_timeout = contract.wire_timeout_s(spec, params, g.timeout)
        run: Coroutine[Any, Any, None] | None = None
        try:
            # Our listeners say when the caller hangs up: the operation then runs in this
            # request's task (one task per call, as api/app.py's `call_tool`).
            timeout_ms = int(g.timeout * 1000) if g.timeout else None
            if lost is not None:
                op, run = await self.dispatcher.prepare(
                    g.session, spec.name, params, wait=g.wait, timeout_ms=timeout_ms,
                    idempotency_key=g.key, op_id=op_id, validated=True)
            else:
                op = await self.dispatcher.submit(
                    g.session, spec.name, params, wait=g.wait, timeout_ms=timeout_ms,
                    idempotency_key=g.key, op_id=op_id, validated=True)
        except asyncio.CancelledError:
            # The daemon stopping while this call's session was still starting: said, so
            # that `bsk` does not take the silence for a lost daemon and start another.
            stopped = BskError("cancelled", "the daemon stopped before this call's session "
                               "had started: nothing was sent", dispatched=Dispatched.NO,
                               hint="any bsk command starts the daemon again")
            code = _print(outcome({"error": stopped.to_dict()}), (), g, out, err)
            with contextlib.suppress(Exception):
                await reply.whole(_answer(code, out, err, contract.WIRE_MARGIN_S))
            raise
        except Exception as e:  # no traceback reaches the caller (as api/app.py `guarded`)
            if not isinstance(e, BskError):
                log.exception("bsk %s failed", spec.name)
                e = BskError("internal", f"internal error: {e}",
                             hint="this is a bug; see the daemon log")
            code = _print(outcome({"error": e.to_dict()}), (), g, out, err)
            return await reply.whole(_answer(code, out, err, wire_timeout))
        if run is not None and lost is not None:
            head_sent = await _run_here(op, run, lost, reply, wire_timeout)
            gone = lost.done()
        else:  # a live operation of its own task (a test's app, or a key's earlier call)
            head_sent = False
            hangup = lost if lost is not None else asyncio.ensure_future(
                _disconnected(receive))
            try:
                ends = {op.done.future, hangup}
                if not (await asyncio.wait(ends, timeout=HEAD_WITHIN_S,
                                           return_when=asyncio.FIRST_COMPLETED))[0]:
                    await reply.head(_head(wire_timeout))  # a long call: the deadline first
                    head_sent = True
                    await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
                gone = hangup.done()
            finally:
                if hangup is not lost:
                    hangup.cancel()
        if not op.done.is_set():
            self.dispatcher.cancel(op.op_id, contract.CancelReason.CLIENT_DISCONNECTED)
        if gone:
            return
        # The answer as `bsk` received it over the wire: lone surrogates U+FFFD, NaN null.
        answer = wire.as_received(op.to_result())
        code = _print(outcome(answer), spec.words, g, out, err)
        if head_sent:
            return await reply.rest(_printed(code, out, err))
        await reply.whole(_answer(code, out, err, wire_timeout))

    async def _batch(self, reply: Reply, lost: asyncio.Future[None] | None, receive: Any,
                     g: Globals, params: dict[str, Any], batch_id: str, cwd: str,
                     out: io.StringIO, err: io.StringIO) -> None:
        """`bsk batch …` (api/batch.py); the caller hanging up cancels the running step,
        and the launcher's Ctrl-C then reports each step by its op id (cli/batch.py)."""
        run = asyncio.ensure_future(run_batch(
            self.dispatcher, g.session, params, batch_id=batch_id, wait=g.wait,
            timeout_ms=int(g.timeout * 1000) if g.timeout else None,
            idempotency_key=g.key, cwd=cwd))
        hangup = lost if lost is not None else asyncio.ensure_future(_disconnected(receive))
        try:
            ends: set[asyncio.Future[Any]] = {run, hangup}
            await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if hangup is not lost:
                hangup.cancel()
            if not run.done():
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)
        if run.cancelled():
            return
        try:
            answer = wire.as_received(run.result())
        except Exception as e:  # refused before any step was sent, or a bug
            if not isinstance(e, BskError):
                log.exception("bsk batch failed")
                e = BskError("internal", f"internal error: {e}",
                             hint="this is a bug; see the daemon log")
            answer = {"error": e.to_dict()}
        code = _print(outcome(answer), ("batch",), g, out, err)
        await reply.rest(_printed(code, out, err))


async def _run_here(op: Operation, run: Coroutine[Any, Any, None], lost: asyncio.Future[None],
                    reply: Reply, wire_timeout: float) -> bool:
    """Run the operation to its end in this task; the head goes out at `HEAD_WITHIN_S`
    if it has not ended by then (whether it did is returned), and the caller hanging up
    cancels it (as api/app.py's `call_tool`)."""
    head: asyncio.Future[None] | None = None

    def long_call() -> None:  # the deadline first
        nonlocal head
        head = asyncio.ensure_future(reply.head(_head(wire_timeout)))

    def hung_up(_: object) -> None:
        op.request_cancel(contract.CancelReason.CLIENT_DISCONNECTED)

    timer = asyncio.get_running_loop().call_later(HEAD_WITHIN_S, long_call)
    lost.add_done_callback(hung_up)
    try:
        await run
    finally:
        timer.cancel()
        lost.remove_done_callback(hung_up)
    if head is None:
        return False
    await head
    return True


def _print(answer_code: tuple[dict[str, Any], int], words: tuple[str, ...], g: Globals,
           out: io.StringIO, err: io.StringIO) -> int:
    answer, code = answer_code
    show(words, answer, as_json=g.json, out=out, err=err, marked=g.boundaries)
    return code


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _head(wire_timeout: float) -> Answer:
    """A long call's head: its wire deadline, the body to follow."""
    return Answer(200, {"X-Bsk-Wire-Timeout": f"{wire_timeout:g}"}, content_type=OCTETS)


def _printed(code: int, out: io.StringIO, err: io.StringIO) -> bytes:
    o, e = (_utf8(x.getvalue()) for x in (out, err))
    return b"%d %d %d\n" % (code, len(o), len(e)) + o + e


def _answer(code: int, out: io.StringIO, err: io.StringIO, wire_timeout: float) -> Answer:
    """Head and body at once, the body's length given (no chunked framing)."""
    return Answer(200, {"X-Bsk-Wire-Timeout": f"{wire_timeout:g}"},
                  _printed(code, out, err), OCTETS)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate (an argv byte that is not UTF-8): U+FFFD
        return wire.LONE_SURROGATE.sub("\ufffd", text).encode()
