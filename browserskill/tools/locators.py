"""Locators: the explicit alternative to a ref, resolved once, at call time.

Wherever a tool takes a ref (`catalog.TARGET_PARAMS`), it also takes a locator:

    css=SELECTOR              elements the selector matches
    text=TEXT                 elements showing exactly TEXT, else containing it (any case)
    role=ROLE[name="NAME"]    elements with that snapshot role (and name: exact, else
                              containing it, any case)
    LOCATOR >> LOCATOR        the second inside the iframe the first names

Only visible elements count. The call goes on only if exactly one element matches: it is
given a ref (as a snapshot would) and the tool runs on that ref. Otherwise nothing is
sent and the call fails: `ref_not_found` when nothing matches, `invalid_params` when
several do, listing them (`details.matches`) with refs of their own to pick from. A
locator is never re-resolved later: the result's `located` says which ref it became.
"""

from __future__ import annotations

import json
from typing import Any

from browserskill.base.catalog import BY_NAME, TARGET_PARAMS, ToolSpec
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.base.locator_syntax import SYNTAX, Part, invalid_locator, is_locator, parse
from browserskill.browser.link import CdpError
from browserskill.session.sessions import RefBinding
from browserskill.tools import policy_check
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import isolated_world
from browserskill.tools.registry import Handler
from browserskill.tools.roles import ACTIONABLE, REF_ROLES
from browserskill.tools.snapshot import run_script

MAX_CANDIDATES = 10


async def _match(ctx: ToolContext, field: str, frame_id: str,
                 part: Part) -> tuple[list[Any], int, str]:
    """The part's visible matches in one frame: [[ref, role, name]…], their count, the
    frame's loader; the matches get refs bound like a snapshot's."""
    tab = ctx.tab
    options = {"refRoles": sorted(REF_ROLES), "actionable": sorted(ACTIONABLE),
               "locate": {"kind": part.kind, "value": part.value, "name": part.name}}
    value, loader, _world, _sid = await run_script(ctx, tab, frame_id, options)
    if "error" in value:
        raise BskError("invalid_params", f"{field}: {part}: {value['error']}",
                       hint=f"a locator is {SYNTAX}", details={"field": field},
                       dispatched=Dispatched.NO)
    for ref, role, name in value["matches"]:
        if ref not in ctx.session.refs:
            ctx.session.refs[ref] = RefBinding(tab.tab_id, frame_id, loader, role, name)
    return value["matches"], value["count"], loader


async def _frame_of(ctx: ToolContext, frame_id: str, ref: str) -> str | None:
    """The frame an <iframe> (by its fresh ref) shows, if it has loaded."""
    tab = ctx.tab
    sid = tab.session_for_frame(frame_id)
    world = await isolated_world(ctx, tab, frame_id)
    try:
        element = await ctx.inspect("Runtime.evaluate", {
            "expression": f"globalThis.__bsk.refs.get({json.dumps(ref)})",
            "contextId": world}, tab=tab, session_id=sid)
        described = await ctx.inspect("DOM.describeNode", {
            "objectId": element["result"]["objectId"]}, tab=tab, session_id=sid)
    except (CdpError, KeyError):
        return None
    child = described["node"].get("frameId")
    return child if child in tab.frames and child != frame_id else None


async def locate(ctx: ToolContext, field: str, locator: str) -> str:
    """The ref of the one element the locator names, or why there is none (nothing sent)."""
    parts = parse(field, locator)
    frame_id = ctx.tab.main_frame_id or ""
    for index, part in enumerate(parts):
        matches, count, _ = await _match(ctx, field, frame_id, part)
        where = " >> ".join(map(str, parts[: index + 1]))
        if count == 0:
            raise BskError(
                "ref_not_found", f"{field}: nothing visible matches {where}",
                hint="check the page with `bsk snapshot` (a ref from it, or a locator that "
                     "matches what it shows)",
                details={"field": field, "locator": locator, "ref": locator},
                dispatched=Dispatched.NO)
        if count > 1:
            shown = "; ".join(f"{ref} {role} {json.dumps(name)}" if name else f"{ref} {role}"
                              for ref, role, name in matches[:MAX_CANDIDATES])
            more = f" and {count - MAX_CANDIDATES} more" if count > MAX_CANDIDATES else ""
            raise BskError(
                "invalid_params", f"{field}: {where} matches {count} elements: {shown}{more}",
                hint="use one of these refs, or a locator that matches one element",
                details={"field": field, "locator": locator, "count": count,
                         "matches": [{"ref": r, "role": role, "name": name}
                                        for r, role, name in matches[:MAX_CANDIDATES]]},
                dispatched=Dispatched.NO)
        ref = matches[0][0]
        if index == len(parts) - 1:
            return str(ref)
        child = await _frame_of(ctx, frame_id, ref)
        if child is None:
            raise invalid_locator(field, f"{where} is {matches[0][1]} {ref}, not a loaded iframe "
                           "(>> goes into an iframe)")
        frame_id = child
    raise AssertionError("unreachable")  # parse() returns at least one part


async def bind_locators(ctx: ToolContext, spec: ToolSpec,
                        params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Params with each locator replaced by the ref it names, and what each became."""
    located: dict[str, str] = {}
    for p in spec.params:
        if p.name in TARGET_PARAMS and is_locator(params.get(p.name)):
            located[p.name] = await locate(ctx, p.name, params[p.name])
    if not located:
        return params, located
    return {**params, **located}, located


def bound(name: str, fn: Handler) -> Handler:
    """The handler, run on the refs its locators name (resolved once, before it starts;
    tools/call_hooks.py); then the policy's rules about targets can see the element."""
    spec = BY_NAME[name]

    async def run(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
        params, located = await bind_locators(ctx, spec, params)
        if located:
            ruling = policy_check.verdict_for(ctx.session, name, params)
            if ruling.kind == "deny":
                raise policy_check.denied(ruling, name)
            if ruling.kind == "confirm":  # a person answers before anything is sent
                await ctx.wait_for_approval(ruling, params)
        result = await fn(ctx, params)
        if located and isinstance(result, dict):
            result = {**result, "located": located}
        return result

    return run
