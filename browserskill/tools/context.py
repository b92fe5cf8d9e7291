"""What a tool handler gets: its operation, session and browser, and the rules for sending.

`act` sends a command that may change the page and marks the operation dispatched;
`inspect` only reads. `step` records one step of browser-native input. `on_cancel`
registers, in the operation's scope (`OperationScope`), the compensation that undoes a
half-done step if the scope trips (a cancel or its deadline); the dispatcher runs it,
bounded, and reports it. Every command's deadline is the scope's (`remaining`), so a
command that times out on it is the deadline, never a separate timer.

The context is all a tool reaches: its session's tabs and refs, its placement, a
feature's own state (`feature`), and its operation only through these methods, never
`op` itself — an operation ends in the dispatcher, once (tests/test_tool_context.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from browserskill.base import catalog
from browserskill.base.contract import CancelReason, Dispatched
from browserskill.base.errors import BskError
from browserskill.browser.link import CdpError, Command, CommandTimeout, await_reply
from browserskill.browser.tab import DialogOpened, Tab, TabCrashed, TabGone
from browserskill.session.scope import Compensation

__all__ = ["Compensation", "Step", "ToolContext", "page_busy", "stop_script"]

if TYPE_CHECKING:
    from browserskill.base.policy import Verdict
    from browserskill.browser.backend import Backend
    from browserskill.session.operations import Operation
    from browserskill.session.sessions import Session, SessionManager


State = TypeVar("State")


class Step(NamedTuple):
    """One step of browser-native input (see `ToolContext.steps`)."""

    name: str  # as recorded in `steps_sent`: mouseMoved, mousePressed, …
    command: Command


PROBE_S = 0.3  # a page that can't evaluate `0` in this long is busy running script
# A busy page whose script does not stop in this long is hung outside script (a native
# hang, chrome://hang): no command reaches it any more; its renderer is crashed instead.
TERMINATE_S = 1.0
CRASH_S = 3.0  # `Page.crash` to its crash event: tens of ms when the browser is well


async def page_busy(tab: Tab, session_id: str | None = None) -> bool:
    """True if the page's main thread does not answer a trivial evaluation in time."""
    return await tab.busy(PROBE_S, session_id)


async def stop_script(tab: Tab, comp: Compensation | None = None,
                      session_id: str | None = None) -> bool:
    """Terminate the script the page is running (`Runtime.terminateExecution`), if it is
    still running one: terminating an idle page would kill its *next* script instead.
    Nothing to stop: `comp` is left out of the report (its action becomes None). A page
    that does not even answer that is hung: its renderer is crashed (`Tab.crash_hung`;
    `comp` then reports `hung_renderer_crashed`), and the tab's navigation tools bring it
    back. Returns whether it stopped a script (or the renderer)."""
    dialogs, documents = tab.dialog_seq + tab.dialogs_left, tab.navigations
    if not await page_busy(tab, session_id):
        if comp is not None:
            comp.action = None
        return False
    try:
        await tab.send("Runtime.terminateExecution", session_id=session_id,
                       timeout=TERMINATE_S)
    except CdpError:  # "Inspected target navigated or closed": its script went with it
        if comp is not None:
            comp.action = None
        return False
    except CommandTimeout:
        if tab.dialog is not None or tab.dialog_seq + tab.dialogs_left != dialogs:
            return False  # blocked on a dialog, not hung
        if tab.navigations != documents:
            return False  # it moved on to another document meanwhile: alive
        if session_id not in (None, tab.session_id):
            raise  # an iframe's own renderer: crashing the page's would not free it
        if comp is not None:
            comp.action = "hung_renderer_crashed"
        await tab.crash_hung(CRASH_S)
    return True


class ToolContext:
    def __init__(
        self, op: Operation, session: Session, sessions: SessionManager,
        backend: Backend, state_dir: Any,
    ) -> None:
        self.op = op
        self.session = session
        self.sessions = sessions
        self.backend = backend
        self.state_dir = state_dir
        # Set by the dispatcher: hold the operation until a person answers a `confirm`
        # rule's verdict (dispatch/approvals.py); raises if they don't approve.
        self.wait_for_approval: Callable[[Verdict, dict[str, Any]], Awaitable[None]] = \
            _no_approvals

    @property
    def tool(self) -> str:
        """The name of the tool this call runs."""
        return self.op.tool

    @property
    def op_id(self) -> str:
        return self.op.op_id

    @property
    def effect_sent(self) -> bool:
        """Has a command that may change the page gone out for this call?"""
        return self.op.effect_sent

    @property
    def dispatched(self) -> Dispatched:
        """What a failure now says reached the browser: yes once an effect went out."""
        return Dispatched.YES if self.op.effect_sent else Dispatched.NO

    @property
    def cancel_reason(self) -> CancelReason | None:
        """Why the call's scope tripped (cancel, deadline, link_lost, …); None if not."""
        return self.op.cancel_reason

    def params_secret(self, secret: bool) -> None:
        """The target is known: the call's maybe-secret params are masked for good
        (`secret`), or shown as given (docs/safety.md, "Secrets")."""
        if secret:
            self.op.conceal()
        else:
            self.op.reveal()

    def persist(self) -> None:
        """Write the session's row now (a recording the next daemon must find), not only
        when the call ends."""
        self.sessions.persist(self.session)

    def live_sessions(self) -> list[Session]:
        """Every session of the daemon (a browser-wide resource: one trace at a time)."""
        return list(self.sessions.sessions.values())

    async def end_session(self) -> list[str]:
        """Stop this call's session (`session stop`): its recordings saved, its tabs
        closed; the ids of those tabs."""
        return await self.sessions.close(self.session)

    def feature(self, kind: type[State]) -> State:
        """This session's state of a feature, by its class (made on first use):
        `ctx.feature(Pointer)`. A feature keeps its state there, not on `Session`
        (browserskill/session/features.py)."""
        return self.session.features.get(kind)

    @property
    def compensations(self) -> list[Compensation]:
        return self.op.scope.compensations

    @property
    def tab(self) -> Tab:
        tab = self.session.tab()
        if tab.gone:
            raise TabGone(tab.gone)  # before anything is sent: nothing reached a page
        spec = catalog.BY_NAME[self.op.tool]
        if tab.dialog is not None and not spec.during_dialog:
            raise DialogOpened(tab.dialog)  # the page is blocked until it is answered
        if tab.crashed and not spec.after_crash:
            raise TabCrashed(tab.crashed)  # nothing would answer; a reload recovers
        return tab

    def remaining(self) -> float:
        """Seconds left of the operation's one deadline (its scope's)."""
        return self.op.scope.remaining()

    def mark_dispatched(self) -> None:
        self.op.effect_sent = True
        self.op.dispatched = Dispatched.YES

    def page_error(self, message: str, hint: str) -> None:
        """The tool ran and its operation completes, but the page's own code failed (a
        script threw, a WebMCP tool said error): the result carries `page_error`. The
        dispatcher still ends the operation; a tool never writes its error itself."""
        self.op.error = BskError("page_error", message, hint=hint).to_dict()

    async def act(
        self, method: str, params: dict[str, Any] | None = None, *, tab: Tab | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        tab = tab or self.tab
        self.mark_dispatched()
        return await tab.send(method, params, timeout=self.remaining(), session_id=session_id)

    async def inspect(
        self, method: str, params: dict[str, Any] | None = None, *, tab: Tab | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        return await (tab or self.tab).send(method, params, timeout=self.remaining(),
                                            session_id=session_id)

    async def step(self, name: str, method: str, params: dict[str, Any], *,
                   tab: Tab | None = None) -> dict[str, Any]:
        """Send one step of browser-native input, recorded before it can reach Chrome."""
        tab = tab or self.tab
        self._record_step(name)
        return await tab.send(method, params, timeout=self.remaining())

    async def start_step(self, name: str, method: str, params: dict[str, Any], *,
                         tab: Tab) -> asyncio.Future[dict[str, Any]]:
        """Send one step, recorded first, without waiting for its answer (the future)."""
        self._record_step(name)
        return await tab.request(method, params)

    async def steps(self, steps: list[Step], *, tab: Tab | None = None,
                    then: Command | None = None) -> dict[str, Any] | None:
        """Send steps in order, each once the one before was answered (unless that one
        says otherwise). Through a link that relays sequences (the extension) they travel
        together, all recorded before any can reach Chrome; a cancel stops the rest.

        `then`: a read in the tab's own session once the last step was answered (through
        the extension, in the same hop); its answer is returned, None if it failed."""
        tab = tab or self.tab
        if tab.link.relays_sequences:
            for step in steps:
                self._record_step(step.name)
            commands = [step.command for step in steps]
            if then is not None:
                commands.append(then._replace(optional=True))
            answers = await tab.send_sequence(commands, timeout=self.remaining())
            return answers[-1] if then is not None and len(answers) > len(steps) else None
        unanswered: list[tuple[str, asyncio.Future[dict[str, Any]]]] = []
        try:
            for step in steps:
                method, params, answered_first, _ = step.command
                if answered_first:
                    await self.step(step.name, method, params, tab=tab)
                else:
                    unanswered.append((step.name, await self.start_step(
                        step.name, method, params, tab=tab)))
            for name, reply in unanswered:
                await await_reply(name, reply, self.remaining())
        finally:
            for _, reply in unanswered:
                reply.cancel()  # no-op once answered; else nobody waits for it any more
        if then is None:
            return None
        try:
            return await self.inspect(then.method, then.params, tab=tab)
        except CdpError:
            return None

    async def run_script(self, method: str, params: dict[str, Any], *, tab: Tab | None = None,
                         session_id: str | None = None, changes_page: bool = True,
                         ) -> dict[str, Any]:
        """Send a command that runs page script (Runtime.evaluate, awaitPromise, …). If
        the call's deadline or a cancel comes while it runs, its compensation stops the
        script (`stop_script`), so a runaway loop doesn't leave the tab wedged."""
        tab = tab or self.tab
        comp = self.on_cancel("script_terminated", lambda: stop_script(tab, comp, session_id),
                              undoes_effect=False)
        send = self.act if changes_page else self.inspect
        try:
            answer = await send(method, params, tab=tab, session_id=session_id)
        except CdpError:
            self.settled(comp)  # the browser refused it: no script is running
            raise
        self.settled(comp)
        return answer

    def _record_step(self, name: str) -> None:
        self.mark_dispatched()
        self.op.steps_sent.append(name)
        if len(self.op.steps_sent) <= 200:  # the timeline stays readable; the count is kept
            self.op.note("step", name)

    def on_cancel(self, action: str, undo: Callable[[], Awaitable[Any]], *,
                  undoes_effect: bool = True, after_step: str | None = None) -> Compensation:
        """Declare how to undo what follows if the scope trips. With `after_step`, only
        once a step of that name has been recorded: before it there is nothing to undo."""
        comp = Compensation(action, undo, undoes_effect)
        if after_step is not None:
            steps, start = self.op.steps_sent, len(self.op.steps_sent)
            comp.armed = lambda: after_step in steps[start:]
        return self.op.scope.add(comp)

    def settled(self, comp: Compensation) -> None:
        """The step this compensation guarded finished; nothing to undo any more."""
        self.op.scope.settled(comp)


async def _no_approvals(ruling: Verdict, params: dict[str, Any]) -> None:
    raise BskError("internal", "this operation can't wait for an approval here")
