"""The person's policy asked about one operation, before anything of it is sent.

What the rules see (browserskill/base/policy.py): the tool, the target's role and accessible
name from its snapshot ref's binding, and the domain of the URL of the tab the operation
acts in. The dispatcher asks before dispatch (`before_dispatch`, tools/call_hooks.py); a
call whose target is a locator is asked again once the locator is bound to its element
(`locators.bound`), which sends nothing, so a locator can't slip past a rule about
targets. `deny` is refused, nothing sent; `confirm` is for the approvals that hold an
operation until a person answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.base.policy import ALLOW, Verdict
from browserskill.session.sessions import Session
from browserskill.tools.refs import check_ref, looks_like_ref

# Params that name an element the operation acts on (a ref, or a locator).
TARGET_PARAMS = ("ref", "source", "target")
_STRICTNESS = {"deny": 2, "confirm": 1, "allow": 0}


def verdict_for(session: Session, tool: str, params: dict[str, Any]) -> Verdict:
    """What the session's policy says of this call (for a drag, of the stricter of its
    two elements)."""
    policy = session.policy
    if not (policy.deny or policy.confirm):
        return ALLOW
    tab = session.tabs.get(str(params.get("tab_id") or session.current_tab_id or ""))
    url = tab.url if tab else None
    targets = [params[k].strip() for k in TARGET_PARAMS if isinstance(params.get(k), str)]
    if not targets:
        return policy.verdict(tool=tool, url=url)
    verdicts = []
    for target in targets:
        binding = session.refs.get(target)
        if binding is not None:
            verdicts.append(policy.verdict(tool=tool, role=binding.role, name=binding.name,
                                           url=url))
        else:  # a locator, judged once bound (or a ref that will be refused)
            verdicts.append(policy.verdict(tool=tool, url=url))
    return max(verdicts, key=lambda v: _STRICTNESS[v.kind])


async def before_dispatch(session: Session, tool: str, params: dict[str, Any],
                          ask: Callable[[Verdict], Awaitable[None]]) -> None:
    """Before a call is dispatched (tools/call_hooks.py): a `deny` rule refuses it,
    nothing sent; a `confirm` rule holds it until a person answers (`ask`, which raises
    unless they approve), its refs checked current first."""
    ruling = verdict_for(session, tool, params)
    if ruling.kind == "deny":
        raise denied(ruling, tool)
    if ruling.kind == "confirm":
        check_refs(session, params)  # never ask about a stale ref
        await ask(ruling)


def check_refs(session: Session, params: dict[str, Any]) -> None:
    """The refs a held call names must be current before a person is asked about it: a
    stale or unknown one is refused now (`stale_ref`, `ref_not_found`; nothing sent)."""
    for key in TARGET_PARAMS:
        target = params.get(key)
        if isinstance(target, str) and looks_like_ref(target.strip()):
            check_ref(session, target.strip())


def denied(verdict: Verdict, tool: str) -> BskError:
    """A deny rule's refusal: nothing was sent, and the rule is named."""
    assert verdict.rule is not None
    rule = verdict.rule.describe()
    return BskError("denied_by_policy",
                    f"{tool} is refused by the policy's deny[{verdict.index}] ({rule})",
                    hint="the person who started the daemon set this rule; ask them, or do "
                         "something else",
                    details={"rule": verdict.rule.to_json(), "index": verdict.index},
                    dispatched=Dispatched.NO)
