"""Approvals only a person gives (docs/safety.md, Approvals): a policy's `confirm` rule
holds a Pay click before anything is sent; a person answers in the dashboard, shown in a
second real Chromium (as tests/test_dashboard.py does); the agent can't answer through
anything it can call, nor by opening the dashboard in a tab bsk drives."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.chromium import browser_cdp, free_port
from support.cli import Bsk, answer_of, kill_daemon_hard, live_ops, short_home
from support.dashboard import Viewer, dashboard_viewer
from support.extension import _evaluate_in, agent_session, extension_browser
from support.wait import wait_until

from browserskill import mcp_server
from browserskill.base import catalog
from browserskill.browser.extension_protocol import EXTENSION_ORIGIN

PAY_POLICY = {"confirm": [{"role": "button", "name": "(?i)pay|buy"},
                          {"tool": "storage_set"},  # by tool
                          {"tool": "reload", "domain": "localhost"}]}  # by the tab's domain


def _policy_file(directory: Path) -> Path:
    path = directory / "policy.json"
    path.write_text(json.dumps(PAY_POLICY))
    return path


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bsk]:
    """A daemon of this module's own, started with the Pay policy."""
    policy = _policy_file(tmp_path_factory.mktemp("policy"))
    runner = Bsk(short_home(tmp_path_factory, "appr"), BSK_POLICY=str(policy))
    yield runner
    runner.stop_daemon()


@pytest.fixture(scope="module")
def viewer(guarded: Bsk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    """The person: the dashboard in a browser bsk does not drive."""
    link = guarded.ok("show", "--url")["url"]
    with dashboard_viewer(link, tmp_path_factory.mktemp("viewer") / "chromium.log") as v:
        yield v


@pytest.fixture
def agent(guarded: Bsk, request: pytest.FixtureRequest) -> Iterator[Bsk]:
    sid = "a-" + re.sub(r"[^a-z0-9]", "", request.node.name.lower())[-20:]
    guarded.ok("session", "start", sid)
    runner = guarded.with_session(sid)
    yield runner
    runner("session", "stop", "--wait")


def _pay_ref(agent: Bsk, site: str) -> str:
    agent.ok("open", f"{site}/approve_pay.html")
    snap = agent.ok("snapshot")["result"]["snapshot"]
    found = re.search(r'button "Pay now" \[ref=(e\d+)\]', snap)
    assert found, snap
    return found.group(1)


def _held(agent: Bsk, ref: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`click REF` started, and its op id once it waits for a person."""
    proc = agent.popen("click", ref, *extra)
    ops = wait_until(lambda: live_ops(agent, "awaiting_approval"), 15, "the click to be held")
    return proc, ops[0]["op_id"]


def _page_saw(agent: Bsk) -> list[str]:
    return list(agent("eval", "window.clicked").value)


def _waiting_item(op_id: str) -> str:
    return f'#waiting [data-waiting-op="{op_id}"]'


def test_a_held_pay_click_approved_in_the_dashboard_happens(
        agent: Bsk, site: str, viewer: Viewer) -> None:
    ref = _pay_ref(agent, site)
    proc, op_id = _held(agent, ref, "--timeout", "60")
    shown = agent.ok("op", "show", op_id)
    assert shown["state"] == "awaiting_approval" and shown["dispatched"] == "no"
    assert shown["approval"]["rule"] == PAY_POLICY["confirm"][0]
    assert "confirm[0]" in shown["approval"]["why"]
    assert f"button 'Pay now' ({ref})" in shown["approval"]["what"]
    said = agent("op", "show", op_id, as_json=False).stdout  # as a person reads it
    assert "state: awaiting_approval" in said and "waiting for a person to approve: click" in said
    # The session is the approval's meanwhile: reads and changes alike are busy.
    busy = agent("snapshot")
    assert busy.code == 5 and busy.json["error"]["details"]["holder"]["holder"] == "approval"
    assert "waiting for a person to approve click" in busy.json["error"]["message"]
    # At the top of the dashboard without choosing the session, saying what and why.
    text = viewer.wait(f"(e => e && e.innerText)(document.querySelector('{_waiting_item(op_id)}'))",
                       10, "the approval at the top of the dashboard")
    assert "Pay now" in text and "confirm[0]" in text
    viewer.press(f'#waiting [data-approve="{op_id}"]')
    code, answer = answer_of(proc)
    assert code == 0 and answer["status"] == "completed" and answer["dispatched"] == "yes"
    assert _page_saw(agent) == ["pay"]  # the page's own log: the click reached it
    events = [e[1] for e in agent.ok("op", "show", op_id)["timeline"]]
    assert events[:4] == ["queued", "awaiting_approval", "approved", "dispatched"], events
    viewer.wait(f"!document.querySelector('{_waiting_item(op_id)}')", 10, "the item to go")


def test_a_held_pay_click_denied_beside_its_row_fails_denied_and_the_page_sees_nothing(
        agent: Bsk, site: str, viewer: Viewer) -> None:
    ref = _pay_ref(agent, site)
    proc, op_id = _held(agent, ref, "--timeout", "60")
    viewer.choose(agent.session)
    # The "Waiting for you" strip appears at the top as the dashboard learns of the hold,
    # moving the rows below it down: press once it is there, not where the row was.
    viewer.wait(f"!!document.querySelector('{_waiting_item(op_id)}')", 10, "the strip")
    viewer.press_until(f'#ops [data-op="{op_id}"] [data-deny]',  # beside the held operation
                       f"document.querySelector('#ops [data-op=\"{op_id}\"]').dataset.state"
                       " !== 'awaiting_approval'", "the denial")
    code, answer = answer_of(proc)
    assert code == 14 and answer["status"] == "failed" and answer["dispatched"] == "no"
    assert answer["error"]["code"] == "denied" and answer["retry_safe"] is False
    assert answer["error"]["details"]["rule"] == PAY_POLICY["confirm"][0]
    assert _page_saw(agent) == []
    viewer.wait(f"document.querySelector('#ops [data-op=\"{op_id}\"]').dataset.status === "
                "'failed'", 10, "the denial on the dashboard")
    assert agent.ok("click", _search_ref(agent))["status"] == "completed"  # not held
    assert _page_saw(agent) == ["search"]


def _search_ref(agent: Bsk) -> str:
    snap = agent.ok("snapshot")["result"]["snapshot"]
    found = re.search(r'button "Search" \[ref=(e\d+)\]', snap)
    assert found, snap
    return found.group(1)


def test_no_answer_by_the_deadline_is_approval_timeout_and_retry_safe(
        agent: Bsk, site: str) -> None:
    ref = _pay_ref(agent, site)
    late = agent("click", ref, "--timeout", "1.5")
    assert late.code == 15, late.stdout
    answer = late.json
    assert answer["status"] == "failed" and answer["error"]["code"] == "approval_timeout"
    assert answer["dispatched"] == "no" and answer["retry_safe"] is True
    assert _page_saw(agent) == []
    assert agent.ok("snapshot")["status"] == "completed"  # the session is free again


def test_a_stale_ref_is_refused_at_once_never_sent_for_approval(agent: Bsk, site: str) -> None:
    """A person is never asked about a click that can't happen: the page was replaced."""
    ref = _pay_ref(agent, site)
    agent.ok("reload")
    stale = agent("click", ref, "--timeout", "10")
    assert stale.code == 4 and stale.json["error"]["code"] == "stale_ref", stale.stdout
    assert "awaiting_approval" not in json.dumps(agent.ok("op", "show",
                                                          stale.json["op_id"]))
    assert _page_saw(agent) == []


def test_the_agent_cancels_its_held_call_and_nothing_is_sent(agent: Bsk, site: str) -> None:
    ref = _pay_ref(agent, site)
    proc, op_id = _held(agent, ref, "--timeout", "60")
    agent.ok("op", "cancel", op_id)
    _, answer = answer_of(proc)
    assert answer["status"] == "cancelled" and answer["dispatched"] == "no", answer
    assert "awaiting a person's approval" in answer["error"]["message"]
    assert _page_saw(agent) == []


def test_no_route_the_agent_can_call_approves(guarded: Bsk, agent: Bsk, site: str) -> None:
    """Every control route of the API (what the CLI, the clients and MCP's op tools call),
    called with an approval's words, leaves the held call held; no tool of the catalog or
    of MCP is an approval."""
    offered = mcp_server.offered(tuple(catalog.CAPABILITIES))
    assert not [s.name for s in offered if "approv" in s.name or "confirm" in s.name]
    ref = _pay_ref(agent, site)
    proc, op_id = _held(agent, ref, "--timeout", "60")
    transport = httpx.HTTPTransport(uds=str(guarded.home / "bsk.sock"))
    with httpx.Client(transport=transport, base_url="http://bsk", timeout=30) as api:
        spec = api.get("/v1/openapi.json").json()
        tried = []
        for path, methods in spec["paths"].items():
            if "/tools/" in path or path.endswith("/stop") or "daemon" in path:
                continue  # tools: the session is held (busy); stopping is no approval
            for method in methods:
                if method not in ("get", "post", "put", "patch"):
                    continue
                url = (path.replace("{op_id}", op_id).replace("{sid}", agent.session)
                       .replace("{session_id}", agent.session))
                body = {"op_id": op_id, "answer": "approve", "approve": True,
                        "decision": "approve"}
                if method == "get":
                    api.get(url, params={"op_id": op_id, "answer": "approve",
                                         "timeout_ms": 1})
                elif not url.endswith("/cancel"):
                    api.request(method.upper(), url, json=body)
                tried.append(f"{method} {path}")
        assert len(tried) > 5, tried
    assert agent.ok("op", "show", op_id)["state"] == "awaiting_approval"
    assert proc.poll() is None
    agent.ok("op", "cancel", op_id)
    assert answer_of(proc)[1]["status"] == "cancelled"
    assert _page_saw(agent) == []


def test_the_agents_own_dashboard_cannot_approve(guarded: Bsk, agent: Bsk, site: str,
                                                 viewer: Viewer) -> None:
    ref = _pay_ref(agent, site)
    proc, op_id = _held(agent, ref, "--timeout", "90")
    # An agent told by the page to approve: a second session of its own opens `bsk show`.
    rogue = guarded.with_session(agent.session + "-r")
    guarded.ok("session", "start", rogue.session)
    try:
        rogue.ok("open", rogue.ok("show", "--url")["url"])
        wait_until(lambda: 'button "Approve"' in rogue.ok("snapshot")["result"]["snapshot"],
                   15, "the held call on the agent's own dashboard")
        snap = rogue.ok("snapshot")["result"]["snapshot"]
        approve = re.search(r'button "Approve" \[ref=(e\d+)\]', snap)
        assert approve, snap
        assert rogue.ok("click", approve.group(1))["status"] == "completed"  # it pressed it
        said = wait_until(lambda: rogue("eval", "document.querySelector('#waiting-msg')"
                                        ".textContent").value, 10, "the dashboard's answer")
        assert said.startswith("approval_refused") and "bsk drives" in said, said
        # Its page may send the second step itself: without a check it is refused too.
        forged = {"type": "approve_confirm", "op_id": op_id, "token": "forged"}
        rogue.ok("eval", f"send({json.dumps(forged)})")
        shown = agent.ok("op", "show", op_id)
        assert shown["state"] == "awaiting_approval" and proc.poll() is None
        assert "approval_refused" in [e[1] for e in shown["timeline"]]
        # While a page bsk drives shows the dashboard, no approval counts, the person's too.
        viewer.press(f'#waiting [data-approve="{op_id}"]')
        viewer.wait("document.querySelector('#waiting-msg').textContent"
                    ".startsWith('approval_refused')", 10, "the person told why")
        assert agent.ok("op", "show", op_id)["state"] == "awaiting_approval"
        rogue.ok("open", "about:blank")  # the agent's dashboard is gone: the person approves
    finally:
        rogue("session", "stop", "--wait")
    viewer.press(f'#waiting [data-approve="{op_id}"]')
    code, answer = answer_of(proc)
    assert code == 0 and answer["status"] == "completed", answer
    assert _page_saw(agent) == ["pay"]


def test_a_held_call_ends_honestly_when_the_daemon_dies(
        tmp_path_factory: pytest.TempPathFactory, site: str) -> None:
    policy = _policy_file(tmp_path_factory.mktemp("policy-kill"))
    runner = Bsk(short_home(tmp_path_factory, "apk"), BSK_POLICY=str(policy))
    try:
        ref = _pay_ref(runner, site)
        proc, op_id = _held(runner, ref, "--timeout", "60")
        kill_daemon_hard(runner.home)
        proc.communicate(timeout=60)
        shown = runner.ok("op", "show", op_id)  # a new daemon reads the journal
        assert shown["status"] == "cancelled" and shown["dispatched"] == "no", shown
        assert "awaited a person's approval" in shown["error"]["message"]
        assert shown["error"]["details"]["state_at_death"] == "awaiting_approval"
    finally:
        runner.stop_daemon()


def test_a_locator_cannot_slip_past_the_rule(agent: Bsk, site: str) -> None:
    """`click css=#pay` names no role or name before it is resolved: it is held once its
    locator is bound (a read), before anything is sent."""
    agent.ok("open", f"{site}/approve_pay.html")
    proc, op_id = _held(agent, "css=#pay", "--timeout", "60")
    shown = agent.ok("op", "show", op_id)
    assert "button 'Pay now'" in shown["approval"]["what"], shown["approval"]
    busy = agent("eval", "1")
    assert busy.code == 5 and busy.json["error"]["details"]["holder"]["holder"] == "approval"
    agent.ok("op", "cancel", op_id)
    _, answer = answer_of(proc)
    assert answer["status"] == "cancelled" and answer["dispatched"] == "no", answer
    late = agent("click", "css=#pay", "--timeout", "2")
    assert late.code == 15 and late.json["error"]["code"] == "approval_timeout", late.stdout
    assert late.json["dispatched"] == "no" and late.json["retry_safe"] is True
    assert _page_saw(agent) == []
    assert agent.ok("click", "css=#search")["status"] == "completed"
    assert _page_saw(agent) == ["search"]


def test_the_extensions_popup_approves_a_held_call_of_its_browser(
        make_bsk: Callable[..., Bsk], site: str, tmp_path: Path) -> None:
    """An extension session's held call is listed in the extension's popup (opened by the
    person, in no tab bsk drives) with Approve, which lets it go."""
    port = free_port()
    runner = make_bsk(BSK_EXTENSION_PORT=str(port), BSK_POLICY=str(_policy_file(tmp_path)))
    with extension_browser(runner, port, tmp_path / "chromium.log") as ext:
        s = agent_session(ext)
        ref = _pay_ref(s, site)
        proc, op_id = _held(s, ref, "--timeout", "60")
        popup = browser_cdp(ext.chromium, "Target.createTarget",
                            {"url": f"{EXTENSION_ORIGIN}/popup.html"})["targetId"]
        button = f"document.querySelector('[data-approve=\"{op_id}\"]')"

        def shown() -> Any:
            answer = _evaluate_in(ext.chromium, popup, f"!!{button}")
            return answer and answer["result"]["value"]
        wait_until(shown, 15, "the held call in the popup")
        text = _evaluate_in(ext.chromium, popup, "document.querySelector('#approvals')"
                            ".innerText")
        assert text is not None and "Pay now" in text["result"]["value"]
        _evaluate_in(ext.chromium, popup, f"{button}.click()")
        code, answer = answer_of(proc)
        assert code == 0 and answer["status"] == "completed", answer
        assert _page_saw(s) == ["pay"]
        events = [e for e in s.ok("op", "show", op_id)["timeline"] if e[1] == "approved"]
        assert events and "popup" in events[0][2]


def test_rules_by_tool_and_by_the_tabs_domain(agent: Bsk, site: str, cross_site: str) -> None:
    agent.ok("open", f"{site}/approve_pay.html")
    held = agent("storage", "set", "k", "v", "--timeout", "1")
    assert held.code == 15 and held.json["dispatched"] == "no", held.stdout
    event = agent.ok("op", "show", held.json["op_id"])["timeline"][1]
    assert event[1] == "awaiting_approval" and event[2]["rule"] == {"tool": "storage_set"}
    assert agent.ok("reload")["status"] == "completed"  # 127.0.0.1: not the rule's domain
    agent.ok("open", f"{cross_site}/approve_pay.html")  # localhost
    late = agent("reload", "--timeout", "1")
    assert late.code == 15 and late.json["error"]["code"] == "approval_timeout", late.stdout
    shown = agent.ok("op", "show", late.json["op_id"])
    assert shown["timeline"][1][1] == "awaiting_approval"
    assert shown["timeline"][1][2]["rule"] == {"tool": "reload", "domain": "localhost"}
