"""Approvals: an operation a policy's `confirm` rule holds waits for a person's answer
before anything is dispatched (docs/safety.md, Approvals).

Invariants:
- What is asked (`request_for`) is decided from what the daemon knows without the
  browser: the tool, its target's role and name as the ref's binding recorded them at the
  snapshot (a `role=ROLE[name="NAME"]` locator as written), and the URL of the tab it acts
  in (and, for a navigation, of where it goes). A target named by any other locator is
  known only once resolved, in the browser: a rule on role or name then holds it anyway,
  and the person sees the locator (fail closed: the agent can't slip past a rule by
  naming the Pay button `css=#pay`).
- A held operation is answered at most once, through `Approvals.answer` only. Its
  callers are the dashboard's feed and the extension's link, each after its own check
  that a person (not a page bsk drives) gave the answer; no tool, control route or MCP
  call reaches it.
- Pure but for the futures the waiting operations hold: no I/O.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from browserskill.errors import BskError
from browserskill.policy import Rule

if TYPE_CHECKING:
    from browserskill.dispatch.operations import Operation
    from browserskill.dispatch.sessions import Session

TARGET_PARAMS = ("ref", "source", "target", "frame")  # catalog.TARGET_PARAMS, in order
APPROVE, DENY = "approve", "deny"


def _role_locator(value: str) -> tuple[str, str | None] | None:
    """(role, name) of a plain `role=ROLE[name="NAME"]` locator; None for any other."""
    from browserskill.tools import locators  # the tools layer parses its own syntax

    try:
        parts = locators.parse("ref", value)
    except BskError:
        return None
    if len(parts) != 1 or parts[0].kind != "role":
        return None
    return parts[0].value, parts[0].name


def _targets(session: Session, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Each element the call names, as far as the daemon knows it before dispatch."""
    out: list[dict[str, Any]] = []
    for key in TARGET_PARAMS:
        value = params.get(key)
        if not isinstance(value, str) or not value:
            continue
        binding = session.refs.get(value)
        if binding is not None:
            out.append({"param": key, "ref": value, "role": binding.role,
                        "name": binding.name, "tab_id": binding.tab_id})
        elif value.lstrip().startswith(("css=", "text=", "role=")):
            role = _role_locator(value.strip())
            out.append({"param": key, "locator": value, "role": role[0] if role else None,
                        "name": role[1] if role else None, "known": role is not None})
        # A ref the session does not have: the call fails ref_not_found, nothing sent.
    return out


def _urls(session: Session, params: dict[str, Any],
          targets: list[dict[str, Any]]) -> list[str]:
    tab_ids = {str(t["tab_id"]) for t in targets if t.get("tab_id")}
    tab_id = params.get("tab_id")
    if isinstance(tab_id, str):
        tab_ids.add(tab_id)
    if not tab_ids and session.current_tab_id:
        tab_ids.add(session.current_tab_id)
    urls = [session.tabs[t].url for t in sorted(tab_ids) if t in session.tabs]
    url = params.get("url")
    if isinstance(url, str) and url:  # where a navigation goes counts as much
        urls.append(url)
    return urls


def _unknown_target_may_match(rule: Rule, tool: str, urls: list[str]) -> bool:
    """A rule on role or name, for a target that is not known before dispatch: it holds
    the call if every other key it gives matches."""
    if rule.role is None and rule.name is None:
        return False
    bare = Rule(tool=rule.tool, domain=rule.domain)
    return any(bare.matches(tool=tool, url=u) for u in urls or [None])  # type: ignore[list-item]


def request_for(session: Session, op: Operation) -> dict[str, Any] | None:
    """What a person is asked to approve before `op` may go out, and why; None when no
    `confirm` rule of the session's policy holds it."""
    policy = getattr(session, "policy", None)
    if policy is None or not policy.confirm:
        return None
    targets = _targets(session, op.params)
    urls = _urls(session, op.params, targets)
    for index, rule in enumerate(policy.confirm):
        for target in targets or [{}]:
            if target.get("known") is False:
                hit = _unknown_target_may_match(rule, op.tool, urls)
            else:
                hit = any(rule.matches(tool=op.tool, role=target.get("role"),
                                       name=target.get("name"), url=u)
                          for u in urls or [None])  # type: ignore[list-item]
            if hit:
                return _request(op, session, rule, index, target or None, urls)
    return None


def _request(op: Operation, session: Session, rule: Rule, index: int,
             target: dict[str, Any] | None, urls: list[str]) -> dict[str, Any]:
    if target is None:
        what = op.tool
    elif "ref" in target:
        what = f"{op.tool} on {target['role']} {target['name']!r} ({target['ref']})"
    else:
        what = f"{op.tool} on {target['locator']}" + (
            "" if target.get("known") else " (which element is known only once it is "
            "resolved)")
    where = f" at {urls[0]}" if urls else ""
    return {
        "what": what + where,
        "why": f"the policy's confirm[{index}] ({rule.describe()}) holds it for a person",
        "rule": rule.to_json(), "rule_index": index,
        "tool": op.tool, "params": op.shown_params(),
        "target": {k: v for k, v in (target or {}).items() if k != "known"} or None,
        "urls": urls, "session_id": session.id,
    }


class Approvals:
    """The operations waiting for a person, and the one way to answer them."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[Operation, asyncio.Future[tuple[str, str]]]] = {}

    def open(self, op: Operation) -> asyncio.Future[tuple[str, str]]:
        """`op` starts waiting; the future gets (answer, by whom)."""
        fut: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        self.waiting[op.op_id] = (op, fut)
        return fut

    def close(self, op: Operation) -> None:
        entry = self.waiting.pop(op.op_id, None)
        if entry is not None and not entry[1].done():
            entry[1].cancel()

    def pending(self) -> list[Operation]:
        return [op for op, fut in self.waiting.values() if not fut.done()]

    def get(self, op_id: str) -> Operation:
        entry = self.waiting.get(op_id)
        if entry is None or entry[1].done():
            raise BskError("invalid_params", f"op_id: {op_id} is not waiting for approval",
                           hint="it was answered, cancelled or timed out meanwhile",
                           details={"field": "op_id"})
        return entry[0]

    def answer(self, op_id: str, answer: str, by: str) -> Operation:
        """A person's answer (`APPROVE` or `DENY`) to the held operation `op_id`. Callers
        have checked that a person gave it (docs/safety.md, Approvals)."""
        if answer not in (APPROVE, DENY):
            raise BskError("invalid_params", "answer: approve or deny",
                           details={"field": "answer"})
        op = self.get(op_id)
        self.waiting[op_id][1].set_result((answer, by))
        return op
