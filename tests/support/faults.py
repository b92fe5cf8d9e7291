"""Fault injection and command recording for tests (issue 4's deterministic seam).

Not part of the package: the test build of the daemon (tests/support/hooked_daemon.py,
docs/design.md, test hooks) calls `install_in_daemon` at start;
an in-process test calls `install(dispatcher)`. It uses only public hooks:

* `Dispatcher.context_class`: the dispatcher builds a `FaultContext` (a `ToolContext`
  with hook points) instead of the plain one, so the normal path pays nothing;
* `BrowserManager.on_link` and each link's `on_send`: every CDP command the daemon's
  browser link sends is recorded, with the operation that sent it and how (`act`,
  `step`, `inspect`, `compensation`, or `other` for the link's own set-up);
* the link's `abort()`: a dropped socket;
* the routes `install_in_daemon` returns, under `/v1/test/...` (not in the OpenAPI
  document).

Rules (`PUT /v1/test/faults {"rules": [...]}`) fire at named points:

    before_step:NAME / after_step:NAME        NAME as the input step is recorded
    before_act:METHOD / after_act:METHOD      a command that may change the page
    before_inspect:METHOD / after_inspect:METHOD
    compensation:ACTION                       mouse_released, tab_closed, …

and do one of:

    pause      hold the handler there until released (`POST /v1/test/faults/release`) or
               its scope trips; `on_cancel`: "stop" (default: the cancel ends it),
               "finish" (the step's reply came with the cancel: the action goes on and
               completes), "linger" (it ignores the cancel for `seconds`, then stops)
    fail       (compensation) raise instead of undoing
    delay      sleep `seconds` first (a compensation past the cleanup deadline)
    drop_link  abort the CDP socket (the browser keeps running), then go on

A rule may be limited to a `session`, a `tool`, and a number of `times`.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import BrowserLink
from browserskill.browser.manager import BrowserManager
from browserskill.tools.context import Compensation, ToolContext

if TYPE_CHECKING:
    from browserskill.daemon.core import Daemon
    from browserskill.dispatch.dispatcher import Dispatcher
    from browserskill.session.operations import Operation

# The operation whose task is running (set in its runner task, inherited by its handler),
# and how the command being sent was asked for.
CURRENT_OP: contextvars.ContextVar[str | None] = contextvars.ContextVar("bsk_op", default=None)
SENDING: contextvars.ContextVar[str] = contextvars.ContextVar("bsk_sending", default="other")

_POINTS = ("before_step", "after_step", "before_act", "after_act", "before_inspect",
           "after_inspect", "compensation")
_ACTIONS = ("pause", "fail", "delay", "drop_link")
# Methods that change what a page (or the browser) shows, whoever sends them.
CHANGING_METHODS = frozenset({
    "Page.navigate", "Page.reload", "Page.navigateToHistoryEntry", "Page.handleJavaScriptDialog",
    "Page.crash", "Runtime.awaitPromise", "Target.createTarget", "Target.closeTarget",
    "DOM.setFileInputFiles", "Browser.setWindowBounds", "WebMCP.invokeTool",
})


def page_changing(entry: dict[str, Any]) -> bool:
    """Could this recorded command have changed the page? (`act`/`step` say so themselves;
    input, navigation, tabs and the like do whatever sent them; a compensation's undo
    counts too.)"""
    method = entry["method"]
    return (entry["kind"] in ("act", "step") or method in CHANGING_METHODS
            or (method.startswith("Input.") and not method.startswith("Input.setIntercept")))


@dataclass
class Rule:
    at: str
    do: str
    session: str | None = None
    tool: str | None = None
    times: int | None = None
    seconds: float = 0.0
    on_cancel: str = "stop"
    message: str = "injected compensation failure"
    fired: int = 0

    @classmethod
    def parse(cls, raw: Any) -> Rule:
        if not isinstance(raw, dict):
            raise invalid("rules", "each rule must be an object")
        known = {f for f in cls.__dataclass_fields__ if f != "fired"}
        if set(raw) - known:
            raise invalid("rules", f"unknown field {sorted(set(raw) - known)[0]!r}")
        try:
            rule = cls(**raw)
        except TypeError as e:
            raise invalid("rules", str(e)) from None
        if rule.at.split(":", 1)[0] not in _POINTS or ":" not in rule.at:
            raise invalid("rules", f"at: {rule.at!r} is not POINT:NAME ({', '.join(_POINTS)})")
        if rule.do not in _ACTIONS:
            raise invalid("rules", f"do: {rule.do!r} is not one of {', '.join(_ACTIONS)}")
        if rule.on_cancel not in ("stop", "finish", "linger"):
            raise invalid("rules", "on_cancel: stop, finish or linger")
        return rule

    def matches(self, op: Operation, at: str) -> bool:
        return (self.at == at and (self.session is None or self.session == op.session_id)
                and (self.tool is None or self.tool == op.tool)
                and (self.times is None or self.fired < self.times))


@dataclass
class Paused:
    op_id: str
    session_id: str
    tool: str
    at: str
    since: float
    future: asyncio.Future[None] = field(repr=False)


class Faults:
    """The rules, the paused handlers and the command log of one daemon (or one test)."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.paused: dict[str, Paused] = {}
        self.commands: list[dict[str, Any]] = []
        self.links: list[Any] = []  # every link recorded, newest last (has `abort()`)
        self.context_class = type("BoundFaultContext", (FaultContext,), {"faults": self})

    # -- rules ------------------------------------------------------------------------

    def set_rules(self, raw: Any) -> list[Rule]:
        if not isinstance(raw, list):
            raise invalid("rules", "must be a list of rules")
        self.rules = [Rule.parse(r) for r in raw]
        return self.rules

    def _take(self, op: Operation, at: str, *kinds: str) -> list[Rule]:
        fired = []
        for rule in self.rules:
            if rule.do in kinds and rule.matches(op, at):
                rule.fired += 1
                fired.append(rule)
        return fired

    async def point(self, op: Operation, at: str) -> None:
        """A handler passes a named point: drop the link and/or pause there, as ruled."""
        for rule in self._take(op, at, "drop_link", "pause", "delay"):
            op.note("fault", f"{rule.do} at {at}")
            if rule.do == "drop_link":
                self.drop_link()
            elif rule.do == "delay":
                await asyncio.sleep(rule.seconds)
            else:
                await self._pause(op, at, rule)

    async def _pause(self, op: Operation, at: str, rule: Rule) -> None:
        loop = asyncio.get_running_loop()
        paused = Paused(op.op_id, op.session_id, op.tool, at, time.time(),
                        loop.create_future())
        self.paused[op.op_id] = paused
        try:
            await paused.future
        except asyncio.CancelledError:
            if rule.on_cancel == "stop":
                raise
            task = asyncio.current_task()
            if rule.on_cancel == "finish":
                if task is not None:
                    task.uncancel()  # as if the step's reply had won the race
                return
            await asyncio.sleep(rule.seconds)  # linger: deaf to the cancel for a while
            raise
        finally:
            self.paused.pop(op.op_id, None)

    def release(self, op_id: str) -> bool:
        paused = self.paused.get(op_id)
        if paused is None or paused.future.done():
            return False
        paused.future.set_result(None)
        return True

    def compensation(self, op: Operation, action: str,
                     undo: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        async def guarded() -> Any:
            token = SENDING.set("compensation")
            try:
                for rule in self._take(op, f"compensation:{action}", "delay", "fail"):
                    op.note("fault", f"{rule.do} compensation {action}")
                    if rule.do == "delay":
                        await asyncio.sleep(rule.seconds)
                    else:
                        raise RuntimeError(rule.message)
                return await undo()
            finally:
                SENDING.reset(token)

        return guarded

    # -- the link -----------------------------------------------------------------------

    def record(self, link: BrowserLink) -> None:
        """Log every command `link` sends (its own `send`, `create_tab`, … included)."""
        if any(known is link for known in self.links):
            return

        def sending(method: str, session_id: str | None) -> None:
            self.commands.append({"op_id": CURRENT_OP.get(), "method": method,
                                  "kind": SENDING.get(), "session_id": session_id,
                                  "t": time.time()})

        link.on_send(sending)
        self.links.append(link)

    def drop_link(self) -> bool:
        """Drop the newest link's socket, as a network failure would: no close handshake,
        the browser keeps running."""
        link = self.links[-1] if self.links else None
        if link is None or link.closed:
            return False
        link.abort()
        return True

    def commands_of(self, op_id: str | None) -> list[dict[str, Any]]:
        return [c for c in self.commands if c["op_id"] == op_id]

    # -- HTTP ------------------------------------------------------------------------

    def routes(self) -> list[Any]:
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def body_of(request: Request) -> dict[str, Any]:
            raw = await request.json() if (await request.body()).strip() else {}
            if not isinstance(raw, dict):
                raise invalid("body", "must be a JSON object")
            return raw

        def guarded(fn: Callable[[Request], Awaitable[Any]]) -> Any:
            async def route(request: Request) -> JSONResponse:
                try:
                    return JSONResponse(await fn(request))
                except BskError as e:
                    return JSONResponse({"error": e.to_dict()}, status_code=e.entry.http)
            return route

        async def show(request: Request) -> dict[str, Any]:
            return self.describe()

        async def put_rules(request: Request) -> dict[str, Any]:
            self.set_rules((await body_of(request)).get("rules", []))
            self.paused.clear()
            return self.describe()

        async def release(request: Request) -> dict[str, Any]:
            return {"released": self.release(str((await body_of(request)).get("op_id")))}

        async def drop(request: Request) -> dict[str, Any]:
            return {"dropped": self.drop_link(), "t": time.time()}

        async def commands(request: Request) -> dict[str, Any]:
            op_id = request.query_params.get("op_id")
            listed = self.commands_of(op_id) if op_id else self.commands
            return {"commands": listed}

        return [
            Route("/v1/test/faults", guarded(show), methods=["GET"]),
            Route("/v1/test/faults", guarded(put_rules), methods=["PUT"]),
            Route("/v1/test/faults/release", guarded(release), methods=["POST"]),
            Route("/v1/test/faults/drop-link", guarded(drop), methods=["POST"]),
            Route("/v1/test/commands", guarded(commands), methods=["GET"]),
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "rules": [asdict(r) for r in self.rules],
            "paused": [{"op_id": p.op_id, "session_id": p.session_id, "tool": p.tool,
                        "at": p.at, "since": p.since} for p in self.paused.values()],
            "links": len(self.links),
            "commands": len(self.commands),
        }


class FaultContext(ToolContext):
    """A `ToolContext` that passes named points (and tags what it sends). Used only when
    the seam is on; bound to its `Faults` by `Faults.context_class`."""

    faults: Faults

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        CURRENT_OP.set(self.op.op_id)  # in the runner's task: its handler inherits it

    async def _through(self, kind: str, name: str,
                       send: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
        try:
            await self.faults.point(self.op, f"before_{kind}:{name}")
        except BaseException:
            send.close()  # never started: nothing was sent
            raise
        token = SENDING.set(kind)
        try:
            result = await send
        finally:
            SENDING.reset(token)
        await self.faults.point(self.op, f"after_{kind}:{name}")
        return result

    async def act(self, method: str, params: dict[str, Any] | None = None,
                  **kwargs: Any) -> dict[str, Any]:
        return await self._through("act", method, super().act(method, params, **kwargs))

    async def inspect(self, method: str, params: dict[str, Any] | None = None,
                      **kwargs: Any) -> dict[str, Any]:
        return await self._through("inspect", method, super().inspect(method, params, **kwargs))

    async def step(self, name: str, method: str, params: dict[str, Any],
                   **kwargs: Any) -> dict[str, Any]:
        return await self._through("step", name, super().step(name, method, params, **kwargs))

    async def start_step(self, name: str, method: str, params: dict[str, Any],
                         **kwargs: Any) -> Any:
        # Sent without waiting for its answer: only its before_step point fires.
        await self.faults.point(self.op, f"before_step:{name}")
        token = SENDING.set("step")
        try:
            return await super().start_step(name, method, params, **kwargs)
        finally:
            SENDING.reset(token)

    async def steps(self, steps: list[Any], **kwargs: Any) -> Any:
        # Points fire per step on a direct link (through `step`); a relayed sequence
        # goes out whole, so it passes none, and its commands are logged as steps.
        token = SENDING.set("step")
        try:
            return await super().steps(steps, **kwargs)
        finally:
            SENDING.reset(token)

    def on_cancel(self, action: str, undo: Callable[[], Awaitable[Any]], *,
                  undoes_effect: bool = True, after_step: str | None = None) -> Compensation:
        return super().on_cancel(action, self.faults.compensation(self.op, action, undo),
                                 undoes_effect=undoes_effect, after_step=after_step)


def install(dispatcher: Dispatcher, browser: BrowserManager | None = None) -> Faults:
    """Turn the seam on for this dispatcher and the browser manager whose links it
    records (the dispatcher's own, unless told)."""
    faults = Faults()
    dispatcher.context_class = faults.context_class
    (browser or dispatcher.browser).on_link(faults.record)
    return faults


def install_in_daemon(daemon: Daemon) -> list[Any]:
    """The daemon's test hook (`BSK_TEST_HOOK`): the seam on, and its routes."""
    return install(daemon.dispatcher, daemon.browser).routes()
