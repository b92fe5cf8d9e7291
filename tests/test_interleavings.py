"""Property-based: random interleavings of calls, waits, cancels, deadlines, replies,
renderer crashes and lost links over several sessions, against the real Dispatcher,
SessionManager, SessionQueue, Journal and BrowserManager, with an in-process fake
browser link. Invariants (docs/design.md §2-§4):

* at most one operation per session is dispatched (or cleaning up) at any moment, and
  only the session's holder sends commands; nothing is sent by an operation that ended;
* waiters are served first come, first served;
* every operation ends, in exactly one terminal state, and its result is self-consistent;
* an operation reported `dispatched: "no"` sent no page-changing command; one that sent
  an input step is never `cancelled` with `dispatched: "no"`; a lost link is never
  reported as a cancel;
* nothing is lost from the journal: an operation is journaled as dispatched before its
  first command goes out, and every operation's final row matches what it answered.

Time is virtual (the event loop's clock jumps to the next timer when every task waits),
so deadlines and the cleanup deadline are exact and an example takes milliseconds.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import faults
from support.fake_links import FakeLink, RelayingFakeLink

from browserskill.base import catalog
from browserskill.base.errors import CODES, retry_safe_for
from browserskill.browser import launcher
from browserskill.browser.link import CdpError
from browserskill.browser.manager import BrowserConfig, BrowserManager
from browserskill.dispatch.dispatcher import Dispatcher
from browserskill.dispatch.journal import Journal
from browserskill.session.operations import CLEANING_UP, DISPATCHED, ENDED, Operation
from browserskill.session.session_store import SessionStore
from browserskill.session.sessions import SessionManager
from browserskill.tools.context import ToolContext
from browserskill.tools.input import click_at

SESSIONS = 3
CLEANUP_S = 1.0
TERMINAL = {"completed", "failed", "cancelled", "outcome_unknown"}
# Commands an operation sends that wait for the test to answer them (or for their
# deadline); everything else the fake browser answers at once.
HELD = frozenset({"Runtime.evaluate", "Input.dispatchMouseEvent", "DOM.getBoxModel",
                  "Accessibility.getFullAXTree", "Target.createTarget"})


# -- a virtual clock ---------------------------------------------------------------------

VIRTUAL_SECOND = 1.0  # a second on the virtual clock: sleeping it costs no real time


class Deadlock(Exception):
    """Every task waits and no timer is set: something would hang forever."""


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock moves only when nothing is ready to run, straight to the
    next timer. No sleep ever takes real time, and timings are exact."""

    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0
        select = self._selector.select

        def jump(timeout: float | None = None) -> Any:
            events = select(0)
            if timeout is None and not events and not self._ready:  # type: ignore[attr-defined]
                raise Deadlock("every task waits on something nothing will set")
            if timeout and not events:
                self._now += timeout
            return events

        self._selector.select = jump  # type: ignore[method-assign]

    def time(self) -> float:
        return self._now

    def idle(self) -> bool:
        scheduled = self._scheduled  # type: ignore[attr-defined]
        return not self._ready and not (  # type: ignore[attr-defined]
            scheduled and scheduled[0].when() <= self._now)


async def settle() -> None:
    """Let every task run until all wait, without moving the clock."""
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualClockLoop)
    for _ in range(10_000):
        await asyncio.sleep(0)
        if loop.idle():
            return
    raise AssertionError("the loop never went idle")


# -- a fake browser ------------------------------------------------------------------------


@dataclass
class Held:
    link: FakeLink
    method: str
    op_id: str
    future: asyncio.Future[dict[str, Any]]


@dataclass
class World:
    """The fake browser's side: links launched, commands held, scripted failures."""

    dispatcher: Dispatcher | None = None
    held: list[Held] = field(default_factory=list)
    links: list[FakeLink] = field(default_factory=list)
    launch_fails: bool = False
    relays: bool = False  # links that run input sequences themselves, as the extension's
    log: list[tuple[str | None, str]] = field(default_factory=list)  # (op, method) as sent
    violations: list[str] = field(default_factory=list)
    targets: itertools.count[int] = field(default_factory=itertools.count)
    live: dict[str, None] = field(default_factory=dict)  # the browser's tabs, in order

    def reply_for(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "Target.createTarget":
            return {"targetId": f"T{next(self.targets)}"}
        if method == "Target.attachToTarget":
            return {"sessionId": "S-" + params["targetId"]}
        if method == "Target.getTargets":  # each launch is a new browser: nothing survived
            return {"targetInfos": []}
        if method == "Target.getBrowserContexts":
            return {"browserContextIds": []}
        if method == "Page.getFrameTree":
            return {"frameTree": {"frame": {"id": "F", "loaderId": "L", "url": "about:blank"}}}
        if method == "Browser.getVersion":
            return {"product": "FakeChromium/1.0", "protocolVersion": "1.3"}
        if method == "Runtime.evaluate":
            return {"result": {"type": "number", "value": 2, "description": "2"}}
        if method == "DOM.getBoxModel":
            return {"model": {"content": [0, 0, 10, 0, 10, 10, 0, 10]}}
        return {}

    def sent(self, method: str) -> None:
        """Checked for every command, at the moment it is sent."""
        op_id = faults.CURRENT_OP.get()
        self.log.append((op_id, method))
        if op_id is None or self.dispatcher is None:
            return
        d = self.dispatcher
        op = d.ops[op_id]
        if op.ended:
            self.violations.append(f"{op_id} sent {method} after it ended")
        session = d.sessions.sessions.get(op.session_id)
        if session is not None and session.queue.holder is not op:
            self.violations.append(f"{op_id} sent {method} without holding its session")
        row = d.journal.get(op_id)
        if row is None or row["state"] not in (DISPATCHED, CLEANING_UP):
            self.violations.append(f"{op_id} sent {method} before the journal said dispatched "
                                   f"({row and row['state']})")

    def answer(self, link: FakeLink, method: str, params: dict[str, Any],
               reply: asyncio.Future[dict[str, Any]]) -> None:
        """Held for the test to answer (an operation's slow command), else at once."""
        if method == "Target.closeTarget":
            self.live.pop(params.get("targetId", ""), None)
        op_id = faults.CURRENT_OP.get()
        if op_id is not None and method in HELD:
            self.held.append(Held(link, method, op_id, reply))
        else:
            answer = self.reply_for(method, params)
            if method == "Target.createTarget":
                self.live[answer["targetId"]] = None
            asyncio.get_running_loop().call_soon(
                lambda: reply.done() or reply.set_result(answer))

    async def connect(self) -> FakeLink:
        """The browser manager's `connect`: each launch is a new link (a new browser,
        nothing of the last one lives on), or a launch error when scripted so."""
        if self.launch_fails:
            raise launcher.LaunchError("no browser (scripted)")
        self.live.clear()
        kind = RelayingFakeLink if self.relays else FakeLink
        link = kind(self, f"fake://{len(self.links)}")
        self.links.append(link)
        return link


# -- handlers that need no real page ---------------------------------------------------------


async def scripted_click(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    """A click as the real one sends it: a read, then the real move/press/release with
    its mouse_released compensation."""
    tab = ctx.tab
    await ctx.inspect("DOM.getBoxModel", {"backendNodeId": 1}, tab=tab)
    await click_at(ctx, tab, 5, 5, button="left", count=1, modifiers=0)
    return {"ref": params["ref"]}


async def scripted_snapshot(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    await ctx.inspect("Accessibility.getFullAXTree")
    return {"snapshot": "- document"}


PARAMS = {"eval": {"expression": "1+1"}, "click": {"ref": "e1"}, "snapshot": {},
          "tab_new": {}, "wait": {"ms": 500}}  # eval, tab_new, wait: the real handlers


# -- the checking journal --------------------------------------------------------------------


class CheckingJournal(Journal):
    """Checks the one-at-a-time rule at every state change it records."""

    world: World
    dispatch_order: list[str]

    def record(self, op: Operation) -> bool:
        return self._check(op, super().record(op))

    async def record_soon(self, op: Operation) -> bool:
        return self._check(op, await super().record_soon(op))

    def _check(self, op: Operation, written: bool) -> bool:
        d = self.world.dispatcher
        if d is None:
            return written
        if op.state == DISPATCHED:
            self.dispatch_order.append(op.op_id)
        check_one_at_a_time(d, self.world.violations)
        return written


def check_one_at_a_time(d: Dispatcher, violations: list[str]) -> None:
    for sid, session in d.sessions.sessions.items():
        active = [o for o in d.ops.values()
                  if o.session_id == sid and o.state in (DISPATCHED, CLEANING_UP)]
        if len(active) > 1:
            violations.append(f"{sid}: {len(active)} operations dispatched at once")
        if active and session.queue.holder is not active[0]:
            violations.append(f"{sid}: {active[0].op_id} dispatched without holding it")


# -- the scenario ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Submit:
    """A tool call submitted to the dispatcher."""

    session: int
    tool: str
    wait: bool
    timeout_ms: int | None


@dataclass(frozen=True)
class Cancel:
    index: int
    reason: str


@dataclass(frozen=True)
class Reply:
    index: int
    error: bool


@dataclass(frozen=True)
class Advance:
    seconds: float


@dataclass(frozen=True)
class DropLink:
    pass


@dataclass(frozen=True)
class Crash:
    index: int


@dataclass(frozen=True)
class LaunchFails:
    fails: bool


@dataclass(frozen=True)
class DaemonDeath:
    """Not a real death: the journal as it is now is copied and reconciled, as the next
    daemon would, and what that says is checked against what really happened."""


calls = st.builds(Submit, st.integers(0, SESSIONS - 1), st.sampled_from(sorted(PARAMS)),
                  st.booleans(), st.sampled_from([None, 1, 40, 400, 1500, 5000]))
actions = st.lists(st.one_of(
    calls, calls, calls,
    st.builds(Reply, st.integers(0, 7), st.just(False)),
    st.builds(Reply, st.integers(0, 7), st.booleans()),
    st.builds(Cancel, st.integers(0, 63), st.sampled_from(["cancel", "client_disconnected"])),
    st.builds(Advance, st.sampled_from([0.001, 0.05, 0.5, 1.2, 3.0])),
    st.just(DropLink()),
    st.builds(Crash, st.integers(0, 7)),
    st.builds(LaunchFails, st.booleans()),
    st.just(DaemonDeath()),
), max_size=45)


async def scenario(steps: list[Any], home: Path, relays: bool,
                   sent: list[tuple[str | None, str]]) -> list[dict[str, Any]]:
    world = World(relays=relays, log=sent)
    journal = CheckingJournal(home / "journal.db")
    journal.world, journal.dispatch_order = world, []
    browser = BrowserManager(BrowserConfig(), home, connect=world.connect)
    sessions = SessionManager(browser, SessionStore(journal.db))
    dispatcher = Dispatcher(journal, sessions, browser, home, cleanup_timeout_s=CLEANUP_S)
    seam = faults.install(dispatcher)
    dispatcher.handlers = {**dispatcher.handlers, "click": scripted_click,
                           "snapshot": scripted_snapshot}
    world.dispatcher = dispatcher
    for i in range(SESSIONS):
        await sessions.create(f"s{i}")

    ops: list[Operation] = []
    waited: dict[str, list[str]] = {f"s{i}": [] for i in range(SESSIONS)}
    for step in steps:
        if isinstance(step, Submit):
            sid = f"s{step.session}"
            op = await dispatcher.submit(sid, step.tool, dict(PARAMS[step.tool]),
                                         wait=step.wait, timeout_ms=step.timeout_ms)
            ops.append(op)
            if step.wait:
                waited[sid].append(op.op_id)
        elif isinstance(step, Cancel) and ops:
            dispatcher.cancel(ops[step.index % len(ops)].op_id, step.reason)
        elif isinstance(step, Reply):
            world.held = [h for h in world.held if not h.future.done()]
            if world.held:
                held = world.held.pop(step.index % len(world.held))
                if step.error:
                    held.future.set_exception(CdpError(held.method, -32000, "scripted"))
                else:
                    held.future.set_result(world.reply_for(held.method, {}))
        elif isinstance(step, Advance):
            await asyncio.sleep(step.seconds)
        elif isinstance(step, DropLink):
            seam.drop_link()
        elif isinstance(step, Crash):
            link = browser.link
            tabs = list(world.live)
            if link is not None and not link.closed and tabs:
                link.emit(None, "Target.targetCrashed",
                          {"targetId": tabs[step.index % len(tabs)]})
        elif isinstance(step, LaunchFails):
            world.launch_fails = step.fails
        elif isinstance(step, DaemonDeath):
            check_reconciled(journal, ops, seam, home)
        await settle()
        check_one_at_a_time(dispatcher, world.violations)

    # Drain: cancel what is left, let deadlines pass; everything must end.
    for op in ops:
        dispatcher.cancel(op.op_id)
    for _ in range(100):
        if all(op.ended for op in ops):
            break
        await asyncio.sleep(VIRTUAL_SECOND)  # the virtual clock jumps; nothing really waits
    await settle()
    await asyncio.gather(*(op.task for op in ops if op.task is not None))

    check_outcomes(ops, seam, world)
    check_fifo(waited, journal.dispatch_order, ops)
    check_journal(journal, ops)
    assert world.violations == [], world.violations[:5]
    # Nothing keeps running (in the browser or here) after its caller was told it ended.
    running = asyncio.all_tasks() - {asyncio.current_task()}
    assert not running, running
    journal.close()
    return [op.to_result() for op in ops]


def check_outcomes(ops: list[Operation], seam: faults.Faults, world: World) -> None:
    for op in ops:
        assert op.ended and op.done.is_set(), op
        assert op.status in TERMINAL, op
        assert [e[1] for e in op.timeline].count("ended") == 1, op.timeline
        code = (op.error or {}).get("code")
        if op.status == "completed":
            assert code in (None, "page_error"), op
        elif op.status in ("cancelled", "outcome_unknown"):
            assert code == op.status, op
        else:
            assert code in CODES and code not in ("cancelled", "outcome_unknown"), op
        assert op.dispatched in ("no", "yes"), op  # "unknown" only after a daemon death
        assert code != "internal", op.to_result()
        if code is not None and code != "page_error":
            # Safe to retry exactly when nothing was sent (bar a cancel of a tool that acts:
            # docs/contract-notes.md, retry_safe on failures).
            read_only = catalog.BY_NAME[op.tool].effect.retry_safe
            assert op.retry_safe == retry_safe_for(code, op.dispatched, read_only), (
                op.timeline, op.error)
        sent = seam.commands_of(op.op_id)
        changing = [c["method"] for c in sent if faults.page_changing(c)]
        if op.dispatched == "no":
            assert changing == [], (op.to_result(), changing)
        if any(c["kind"] == "step" for c in sent):
            assert op.dispatched == "yes", op.to_result()
            assert op.status != "cancelled", op.to_result()
        if op.cancel_reason == "link_lost":
            assert op.status != "cancelled", op.to_result()  # a lost link is no cancel


def check_reconciled(journal: Journal, ops: list[Operation], seam: faults.Faults,
                     home: Path) -> None:
    """If the daemon died now, would the next one tell the truth about every operation?"""
    copy_path = home / f"death-{len(list(home.glob('death-*')))}.db"
    copy = sqlite3.connect(copy_path)
    journal.db.backup(copy)
    copy.close()
    after = Journal(copy_path)
    after.reconcile()
    try:
        for op in ops:
            row = after.get(op.op_id)
            sent = seam.commands_of(op.op_id)
            if op.ended:
                assert row is not None and (row["status"], row["dispatched"]) == (
                    op.status, op.dispatched), (row, op.to_result())
            elif row is None:  # not journaled yet: then it must not have sent anything
                assert sent == [], (op.to_result(), sent)
            elif any(faults.page_changing(c) for c in sent):
                assert (row["status"], row["dispatched"]) == ("outcome_unknown", "unknown"), row
            elif row["status"] == "cancelled":
                assert row["dispatched"] == "no" and sent == [], (row, sent)
    finally:
        after.close()


def check_fifo(waited: dict[str, list[str]], order: list[str], ops: list[Operation]) -> None:
    position = {op_id: i for i, op_id in enumerate(order)}
    for sid, queue in waited.items():
        served = [op_id for op_id in queue if op_id in position]
        assert served == sorted(served, key=position.__getitem__), (sid, served)


def check_journal(journal: Journal, ops: list[Operation]) -> None:
    rows = {r[0]: r[1:] for r in journal.db.execute(
        "SELECT op_id, state, status, dispatched, retry_safe FROM ops")}
    assert set(rows) == {op.op_id for op in ops}
    for op in ops:
        assert rows[op.op_id] == (ENDED, op.status, op.dispatched, int(op.retry_safe)), (
            rows[op.op_id], op.to_result())


def run(steps: list[Any], relays: bool = False,
        sent: list[tuple[str | None, str]] | None = None) -> list[dict[str, Any]]:
    """Play the steps; `sent` gets every (op id, method) the fake browser received."""
    ends: dict[str, int] = {}
    real_end = Operation._end

    def counted_end(self: Operation, *args: Any, **kwargs: Any) -> None:
        ends[self.op_id] = ends.get(self.op_id, 0) + 1
        real_end(self, *args, **kwargs)

    loop = VirtualClockLoop()
    logging.disable(logging.WARNING)  # lost links are expected here; bugs log errors
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None  # the journal in memory: fast
    with tempfile.TemporaryDirectory(prefix="bsk-prop-", dir=shm) as tmp, \
            mock.patch.object(Operation, "_end", counted_end):
        try:
            results = loop.run_until_complete(
                scenario(steps, Path(tmp), relays, [] if sent is None else sent))
        finally:
            loop.close()
            logging.disable(logging.NOTSET)
    assert all(n == 1 for n in ends.values()), ends
    return results


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions, st.booleans())
def test_random_interleavings_keep_every_promise(steps: list[Any], relays: bool) -> None:
    run(steps, relays)


# Examples hypothesis found (both were product bugs, fixed in dispatch/dispatcher.py),
# kept as plain regression tests, and one of the designed paths spelled out.


def test_a_lost_link_while_nothing_was_sent_is_browser_unavailable_not_cancelled() -> None:
    (waiting,) = run([Submit(0, "wait", False, None), DropLink()])
    assert (waiting["status"], waiting["dispatched"], waiting["retry_safe"]) == (
        "failed", "no", True)
    assert waiting["error"]["code"] == "browser_unavailable"


def test_a_deadline_that_a_read_hits_first_is_still_the_deadline() -> None:
    # The click's read and the call share one deadline; whichever timer fires first,
    # the answer is the deadline's: nothing was sent, so cancelled / not dispatched.
    (click,) = run([Submit(0, "click", False, 40), Advance(0.001), Advance(0.05)])
    assert (click["status"], click["dispatched"]) == ("cancelled", "no"), click
    assert click["error"]["details"]["reason"] == "deadline"


def test_cancel_mid_press_with_an_unanswered_release_times_out_its_cleanup() -> None:
    click, queued_click, queued_eval = run([
        Submit(0, "click", False, None), Reply(0, False), Reply(0, False), Cancel(0, "cancel"),
        Submit(0, "click", True, 40), Submit(0, "eval", True, None), Advance(3.0)])
    assert (click["status"], click["dispatched"]) == ("outcome_unknown", "yes")
    details = click["error"]["details"]
    assert details["steps_sent"] == ["mouseMoved", "mousePressed"]
    assert details["cleanup"] == "timed_out"
    assert details["compensation"] == [{"action": "mouse_released", "undoes_effect": False,
                                        "ok": False, "error": "cleanup deadline passed"}]
    # Waiting behind it: the click's 40 ms ran out in the queue (busy, nothing sent);
    # the eval got the session after the cleanup and was cancelled by the drain.
    assert queued_click["error"]["code"] == "session_busy"
    assert (queued_eval["status"], queued_eval["dispatched"]) == ("outcome_unknown", "yes")


def test_a_relayed_click_cancelled_mid_press_never_sends_its_release() -> None:
    # Through a link that runs the click's steps itself (the extension's worker): the
    # cancel arrives while the press is unanswered; the worker must not go on to the
    # release, and the button is released off the page by the compensation instead.
    sent: list[tuple[str | None, str]] = []
    (click,) = run([Submit(0, "click", False, None), Reply(0, False),  # the hit test
                    Cancel(0, "cancel"),
                    # then the browser answers all it holds: the worker's move, and the
                    # compensation's move and release, one after the other
                    Reply(0, False), Reply(0, False), Reply(0, False), Advance(3.0)],
                   relays=True, sent=sent)
    assert (click["status"], click["dispatched"]) == ("outcome_unknown", "yes"), click
    details = click["error"]["details"]
    assert details["steps_sent"] == ["mouseMoved", "mousePressed", "mouseReleased"]
    assert details["compensation"] == [{"action": "mouse_released", "undoes_effect": False,
                                        "ok": True}]
    mouse = [m for op, m in sent if op == click["op_id"] and m == "Input.dispatchMouseEvent"]
    assert len(mouse) == 4  # move and press from the worker, then the compensation's two
