"""The Python client against the real daemon: typed results, one exception class per error
code carrying the op fields, retries only where the answer says they are safe."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from support.cli import Bsk
from support.wait import wait_until

import browserskill
from browserskill import client as bc
from browserskill.base.errors import CODES
from browserskill.client import AsyncClient, BrowserSkillError, Client, Result
from browserskill.client.core import _check as check_answer

SLOW = "await slow('{tag}', {ms})"  # counter.html's instrumented slow eval


@pytest.fixture
def client(bsk: Bsk) -> Iterator[Client]:
    with Client(home=bsk.home, session=bsk.session, retries=0) as c:
        yield c


def button_ref(c: Client) -> str:
    text = c.snapshot().result["snapshot"]
    match = re.search(r'button "Add one".*\[ref=(e\d+)\]', text)
    assert match, text
    return match.group(1)


def dispatched_op(c: Client, op_id: str) -> Result:
    return wait_until(lambda: (op := c.op_get(op_id)).state == "dispatched" and op,
                      what=f"{op_id} dispatched")


# -- results ------------------------------------------------------------------------------


def test_typed_results_for_a_whole_flow(client: Client, site: str) -> None:
    opened = client.open(f"{site}/counter.html")
    assert isinstance(opened, Result) and opened.ok and opened.ended
    assert opened.status == "completed" and opened.dispatched == "yes"
    assert opened.session_id == client.session_id and opened.tool == "open"
    assert opened.op_id and opened.op_id.startswith("op_")
    assert opened.result == {**opened.result, "url": f"{site}/counter.html", "title": "Counter"}
    snap = client.snapshot()
    assert snap.retry_safe is True  # a read
    clicked = client.click(button_ref(client))
    assert clicked.retry_safe is False  # input: a retry would click again
    assert client.eval("window.count").value == 1
    assert client.call("eval", {"expression": "6 * 7"}).value == 42
    assert client.call("eval", expression="'kw'").value == "kw"


def test_the_callers_op_id_and_idempotency_key(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    named = client.eval("1", op_id="op_client_named_1")
    assert named.op_id == "op_client_named_1"
    with pytest.raises(bc.InvalidParamsError) as e:  # an id names one call
        client.eval("1", op_id="op_client_named_1")
    assert "op_client_named_1 names an earlier operation" in str(e.value), e.value
    assert "op show op_client_named_1" in (e.value.hint or "")
    first = client.eval("window.effects += 1", key="k-once")
    again = client.eval("window.effects += 1", key="k-once")
    assert again.op_id == first.op_id and again.value == first.value == 1
    assert client.eval("window.effects").value == 1


def test_sessions_and_ops(bsk: Bsk, site: str) -> None:
    with Client(home=bsk.home) as c:
        started = c.session_start(label="client test")
        assert c.session_id == started.session_id and started.tabs == 1
        assert started.session_id in {s.session_id for s in c.session_list()}
        ran = c.open(f"{site}/counter.html")
        assert [o.op_id for o in c.op_list()] == [ran.op_id]
        shown = c.op_get(ran.op_id)
        assert shown.status == "completed" and shown.timeline
        assert c.op_cancel(ran.op_id).cancel == "already_ended"
        assert c.op_wait(ran.op_id).op_id == ran.op_id
        stopped = c.session_stop()
        assert stopped.status == "completed" and stopped.tool == "session_stop"
        assert started.session_id not in {s.session_id for s in c.session_list()}


def test_page_error_is_a_result_not_an_exception(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    thrown = client.eval("throw new TypeError('nope')")
    assert thrown.status == "completed" and not thrown.ok
    assert thrown.result["ok"] is False and "TypeError: nope" in thrown.result["exception"]
    assert thrown.error and thrown.error.code == "page_error"
    with pytest.raises(bc.PageError) as e:
        thrown.raise_for_error()
    assert e.value.op_id == thrown.op_id and e.value.status == "completed"


# -- one test per error code that can be produced for real ---------------------------------


def test_invalid_params(client: Client) -> None:
    with pytest.raises(bc.InvalidParamsError) as e:
        client.call("eval", {"expression": "1", "nope": True})
    err = e.value
    assert err.code == "invalid_params" and err.details["field"] == "nope"
    assert err.op_id is None and err.result is None  # refused before it became an operation
    assert err.status == "failed" and err.dispatched == "no" and err.retry_safe is True


def test_an_unknown_tool_is_invalid_params_before_anything_is_sent(client: Client) -> None:
    """As the CLI and MCP say it (the daemon's 404 would name its HTTP routes): the
    parameter that is wrong, the tools it may have meant, how to list them."""
    with pytest.raises(bc.InvalidParamsError) as e:
        client.call("clik")
    assert e.value.details == {"field": "tool"} and e.value.op_id is None
    assert e.value.dispatched == "no"
    assert e.value.hint.startswith("did you mean click") and "client.tools()" in e.value.hint


def test_hints_and_docstrings_speak_python(client: Client, site: str) -> None:
    """The daemon's advice names the client's methods and arguments, not CLI commands;
    the answer as the daemon gave it stays in `result.raw`."""
    client.open(f"{site}/counter.html")
    with pytest.raises(bc.RefNotFoundError) as e:
        client.click("e999")
    assert "`snapshot()`" in e.value.hint and "bsk snapshot" not in e.value.hint, e.value.hint
    doc = Client.batch.__doc__ or ""
    assert "unless continue_=True" in doc and "--continue" not in doc
    assert "  continue_ (boolean)" in doc


def test_session_not_found(client: Client) -> None:
    with pytest.raises(bc.SessionNotFoundError) as e:
        client.eval("1", session="no-such-session")
    assert e.value.details["session_id"] == "no-such-session"
    assert e.value.dispatched == "no" and e.value.hint


def test_op_not_found(client: Client) -> None:
    with pytest.raises(bc.OpNotFoundError) as e:
        client.op_get("op_never_was")
    assert e.value.details["op_id"] == "op_never_was"
    with pytest.raises(bc.OpNotFoundError):
        client.op_cancel("op_never_was")


def test_tab_and_request_not_found(client: Client) -> None:
    with pytest.raises(bc.TabNotFoundError) as e:
        client.call("tab_select", {"tab_id": "t999"})
    assert e.value.details["tab_id"] == "t999" and e.value.details["tabs"]
    assert e.value.op_id and e.value.dispatched == "no" and e.value.retry_safe is True
    with pytest.raises(bc.RequestNotFoundError) as r:
        client.call("network_show", {"id": "r999999"})
    assert r.value.details["id"] == "r999999"


def test_ref_not_found(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    with pytest.raises(bc.RefNotFoundError) as e:
        client.click("e999")
    err = e.value
    assert err.op_id and err.status == "failed" and err.dispatched == "no"
    assert err.result is not None and err.result.op_id == err.op_id
    assert err.result.error and err.result.error.code == "ref_not_found"
    assert err.details["ref"] == "e999"


def test_stale_ref(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    ref = button_ref(client)
    client.reload()
    with pytest.raises(bc.StaleRefError) as e:
        client.click(ref)
    assert e.value.dispatched == "no" and e.value.retry_safe is True  # nothing was sent
    assert isinstance(e.value, BrowserSkillError) and e.value.exit_code == 4


def test_session_busy_names_the_holder(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    holder = client.eval(SLOW.format(tag="holder", ms=3000), detach=True)
    assert not holder.ended and holder.op_id
    dispatched_op(client, holder.op_id)
    with pytest.raises(bc.SessionBusyError) as e:
        client.eval("window.effects += 1")
    err = e.value
    assert err.retry_safe is True and err.dispatched == "no" and err.status == "failed"
    assert err.details["holder"]["op_id"] == holder.op_id
    assert client.op_wait(holder.op_id).status == "completed"
    assert client.eval("window.effects").value == 0  # the refused call never ran


def test_session_busy_is_retried_when_retries_are_allowed(bsk: Bsk, site: str) -> None:
    with Client(home=bsk.home, session=bsk.session, retries=6, retry_max_delay=0.5) as c:
        c.open(f"{site}/counter.html")
        holder = c.eval(SLOW.format(tag="holder", ms=800), detach=True)
        dispatched_op(c, holder.op_id)
        after = c.eval("window.log.length")
        assert after.value == 1  # ran once, after the holder
        tools = [(o.tool, o.error.code if o.error else None) for o in c.op_list()]
        assert ("eval", "session_busy") in tools  # it was refused first, then retried


def test_a_call_given_its_own_op_id_is_not_retried_under_another(bsk: Bsk, site: str) -> None:
    """Retrying a refused call mints a new op id; one the caller named must stay the id
    of what happened to it: the call raises session_busy under that id instead."""
    with Client(home=bsk.home, session=bsk.session, retries=6, retry_max_delay=0.5) as c:
        c.open(f"{site}/counter.html")
        holder = c.eval(SLOW.format(tag="holder", ms=1500), detach=True)
        dispatched_op(c, holder.op_id)
        with pytest.raises(bc.SessionBusyError) as e:
            c.eval("window.effects += 1", op_id="op_client_named_busy")
        assert e.value.op_id is None or e.value.op_id == "op_client_named_busy"
        assert c.op_wait(holder.op_id).status == "completed"
        assert c.eval("window.effects").value == 0  # not run under another id meanwhile
        assert c.op_get("op_client_named_busy").error.code == "session_busy"


def test_a_timeout_is_checked_as_the_cli_checks_it(client: Client) -> None:
    """Seconds, more than 0: refused before anything is sent, naming `timeout`."""
    for bad in (0, -5, 601):
        with pytest.raises(bc.InvalidParamsError) as e:
            client.eval("1", timeout=bad)
        assert e.value.details["field"] == "timeout", e.value.details
        assert "seconds" in str(e.value) and e.value.dispatched == "no"
    with pytest.raises(bc.InvalidParamsError) as e:
        client.call("webmcp_invoke", {"tool": "x"}, timeout=200)  # its own 1-120 s range
    assert "webmcp_invoke" in str(e.value)


def test_stopping_the_session_a_client_started_returns_it_to_its_first(bsk: Bsk,
                                                                      site: str) -> None:
    with Client(home=bsk.home, session=bsk.session) as c:
        started = c.session_start()
        assert c.session_id == started.session_id
        c.session_stop()
        assert c.session_id == bsk.session  # not the stopped one's: session_not_found
        assert c.eval("1 + 1").value == 2


def test_cancelled_queued_operation(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    holder = client.eval(SLOW.format(tag="holder", ms=3000), detach=True)
    dispatched_op(client, holder.op_id)
    queued = client.eval("window.effects += 1", wait=True, detach=True)
    wait_until(lambda: client.op_get(queued.op_id).state == "queued", what="queued")
    assert client.op_cancel(queued.op_id).cancel == "requested"
    with pytest.raises(bc.OperationCancelledError) as e:
        client.op_wait(queued.op_id)
    err = e.value
    assert err.status == "cancelled" and err.dispatched == "no" and err.retry_safe is False
    assert err.details["reason"] == "cancel" and err.op_id == queued.op_id
    assert not isinstance(err, asyncio.CancelledError)
    client.op_wait(holder.op_id)
    assert client.eval("window.effects").value == 0


def test_outcome_unknown_after_a_deadline(client: Client, site: str) -> None:
    client.open(f"{site}/counter.html")
    with pytest.raises(bc.OutcomeUnknownError) as e:
        client.eval("await new Promise(r => setTimeout(r, 20000))", timeout=0.5)
    err = e.value
    assert err.status == "outcome_unknown" and err.dispatched == "yes"
    assert err.retry_safe is False and err.details["reason"] == "deadline"
    # Never retried: exactly one such operation exists.
    evals = [o for o in client.op_list() if o.tool == "eval"]
    assert [o.op_id for o in evals] == [err.op_id]


def test_action_failed(client: Client) -> None:
    with pytest.raises(bc.ActionFailedError) as e:
        client.open("http://127.0.0.1:9/")  # nothing listens on the discard port
    assert e.value.code == "action_failed" and e.value.op_id
    assert e.value.details.get("reason")


def test_browser_unavailable_from_a_daemon_the_client_started(
        make_bsk: Callable[..., Bsk], monkeypatch: pytest.MonkeyPatch) -> None:
    runner = make_bsk()
    for name, value in runner.env.items():
        if name.startswith("BSK_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("BSK_BROWSER", "/nonexistent")
    with Client(home=runner.home, retries=0) as c:  # no daemon yet: the client starts it
        with pytest.raises(bc.BrowserUnavailableError) as e:
            c.eval("1")
        assert c.health()["ok"] is True
    err = e.value
    assert err.retry_safe is True and err.dispatched == "no"
    assert "browser" in err.message


def test_unreachable_daemon_without_autostart(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("nodaemon")
    with Client(home=home, autostart=False) as c, pytest.raises(bc.BrowserUnavailableError):
        c.health()
    assert not (home / "bsk.sock").exists()


# -- the mapping for every code, including those not produced here ---------------------------


def test_one_exception_class_per_code() -> None:
    assert set(bc.ERRORS) == set(CODES)
    names = {cls.__name__ for cls in bc.ERRORS.values()}
    assert len(names) == len(CODES)
    for code, cls in bc.ERRORS.items():
        assert issubclass(cls, BrowserSkillError) and cls.code == code
        assert cls.http_status == CODES[code].http and cls.exit_code == CODES[code].exit
        assert getattr(bc, cls.__name__) is cls and bc.error_class(code) is cls
        # where the README's `from browserskill import Client` would look for it too
        assert getattr(browserskill, cls.__name__) is cls


@pytest.mark.parametrize("code", ["user_interrupted", "tool_not_found", "tool_page_unloaded"])
def test_codes_not_produced_here_map_to_their_class(code: str) -> None:
    answer = {"op_id": "op_abcdef123456", "session_id": "s", "tool": "click", "state": "ended",
              "status": "failed", "dispatched": CODES[code].dispatched, "retry_safe": False,
              "result": None, "error": {"code": code, "message": "m", "hint": "h",
                                        "details": {"x": 1}}}
    with pytest.raises(BrowserSkillError) as e:
        check_answer(CODES[code].http, httpx.Headers({"X-Should-Retry": "false"}), answer)
    err = e.value
    assert type(err) is bc.error_class(code) and err.code == code
    assert (err.op_id, err.session_id, err.tool) == ("op_abcdef123456", "s", "click")
    assert (err.status, err.dispatched, err.retry_safe) == ("failed", CODES[code].dispatched,
                                                            False)
    assert (err.message, err.hint, err.details) == ("m", "h", {"x": 1})
    assert err.result is not None and err.result.error and err.result.error.code == code
    # Without op fields (refused before an operation existed): the table's defaults.
    with pytest.raises(BrowserSkillError) as e2:
        check_answer(CODES[code].http, httpx.Headers(), {"error": {"code": code, "message": "m"}})
    assert e2.value.op_id is None and e2.value.dispatched == CODES[code].dispatched


# -- the asyncio client ----------------------------------------------------------------------


async def state_reached(c: AsyncClient, op_id: str, state: str) -> None:
    """Poll (as wait_until does) until the operation exists and is in `state`."""
    for _ in range(1000):
        try:
            if (await c.op_get(op_id)).state == state:
                return
        except bc.OpNotFoundError:
            pass  # the call is still on its way to the daemon
        await asyncio.sleep(0.02)
    raise AssertionError(f"{op_id} never reached {state}")


async def test_async_client_flow_and_errors(bsk: Bsk, site: str) -> None:
    async with AsyncClient(home=bsk.home, session=bsk.session, retries=0) as c:
        opened = await c.open(f"{site}/counter.html")
        assert opened.ok and opened.result["title"] == "Counter"
        assert (await c.eval("1 + 1")).value == 2
        with pytest.raises(bc.RefNotFoundError):
            await c.click("e999")
        assert [s.session_id for s in await c.session_list()].count(bsk.session) == 1


async def test_cancelling_the_awaiting_task_cancels_the_operation(bsk: Bsk, site: str) -> None:
    async with AsyncClient(home=bsk.home, session=bsk.session, retries=0) as c:
        await c.open(f"{site}/counter.html")
        op_id = bc.new_op_id()
        task = asyncio.create_task(c.eval("await new Promise(r => setTimeout(r, 20000))",
                                          op_id=op_id))
        await state_reached(c, op_id, "dispatched")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        ended = await c.op_get(op_id)
        assert ended.state == "ended" and ended.status == "outcome_unknown"
        assert ["cancel_requested", "cancel"] in [e[1:3] for e in ended.timeline or []]
        assert c.last_cancelled is not None and c.last_cancelled.op_id == ended.op_id


async def test_cancelling_an_async_batch_stops_it_and_says_how_each_step_ended(
        bsk: Bsk, site: str) -> None:
    """A batch's id names its steps, not an operation: cancelling the awaiting task hangs
    up (the daemon cancels the running step and sends no more), and `last_cancelled` is
    the batch's answer from each step's recorded end."""
    async with AsyncClient(home=bsk.home, session=bsk.session, retries=0) as c:
        await c.open(f"{site}/counter.html")
        batch_id = bc.new_op_id()
        task = asyncio.create_task(c.call(
            "batch", commands=["eval 'window.__first = 1'", "wait --ms 20000",
                               "eval 'window.__third = 1'"], op_id=batch_id))
        await state_reached(c, f"{batch_id}-2", "dispatched")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        answer = c.last_cancelled
        assert answer is not None and answer.status == "cancelled", answer
        steps = answer.raw["result"]["steps"]
        assert [s["status"] for s in steps[:2]] == ["completed", "cancelled"], steps
        assert steps[2]["sent"] is False, steps
        assert (await c.eval("[window.__first, window.__third ?? null]")).value == [1, None]
        with pytest.raises(bc.OpNotFoundError):
            await c.op_get(f"{batch_id}-3")


# -- what a type checker sees ----------------------------------------------------------------

USER_SCRIPT = """
from browserskill import AsyncClient, Client, Result, SessionBusyError


def run() -> int:
    with Client(home="/tmp/nowhere", retries=0) as c:
        opened: Result = c.open("https://example.com", settle=0)
        c.click("e3", button="left", timeout=5.0)
        c.session_start(isolated=True)
        try:
            c.eval("1", op_id="op_mine_1")
        except SessionBusyError as e:
            return e.exit_code
        return 0 if opened.ok else 1


async def arun() -> str:
    async with AsyncClient() as c:
        snap = await c.snapshot(interactive=True)
        return str(snap.result)
"""
USER_MISTAKES = """
from browserskill import Client

with Client(hme="/tmp/nowhere") as c:
    c.click(3)
    c.opne("https://example.com")
    c.click("e3", button="lefty")
"""


def test_a_users_script_type_checks_against_the_clients(tmp_path: Path) -> None:
    """`py.typed`, the lazy names, the methods made from the catalog (client/generated.pyi)
    and the options in `Client(...)`: `mypy --strict` passes a right script and finds
    each mistake in a wrong one."""
    (tmp_path / "agent.py").write_text(USER_SCRIPT)
    (tmp_path / "wrong.py").write_text(USER_MISTAKES)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                          "--cache-dir", str(tmp_path / ".mypy"), "agent.py", "wrong.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    said = run.stdout + run.stderr
    assert "agent.py" not in said, said
    assert 'Unexpected keyword argument "hme"' in said, said
    assert 'Argument 1 to "click" of "ClientMethods" has incompatible type "int"' in said, said
    assert '"Client" has no attribute "opne"' in said, said
    assert 'Argument "button" to "click" of "ClientMethods" has incompatible type' in said, said
    assert "Found 4 errors in 1 file" in said, said
