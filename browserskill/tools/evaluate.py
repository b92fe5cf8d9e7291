"""eval: run script in the page. A thrown exception is a result (ok=false), not a failure.

Each call runs in a block scope of its own, so `const c = 1` can be run twice. With
`--ref` the code runs on that element in the page's own world (refs live in
BrowserSkill's isolated world, so the node is resolved again there by its backend id);
with `--frame` in the page world of that iframe's document.
"""

from __future__ import annotations

import json
from typing import Any

from browserskill.base import catalog
from browserskill.base.catalog.reading import EvalParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser.link import CdpError
from browserskill.tools.context import ToolContext
from browserskill.tools.refs import element_handle, resolve
from browserskill.tools.registry import implements

_GROUP = "bsk-eval"
# An object's value crosses whole only if its JSON text fits; else only that text's start
# (the caller's --max-chars). Not JSON (a cycle, a BigInt): whole, as CDP serializes it.
# Elements in it are described as a single one is (`button#go.primary`), not `{}`: a
# NodeList, an HTMLCollection, or an array or object holding elements at its top
# (`querySelectorAll(…)`, `[...]`, `{el}`; deeper ones stay as CDP gives them).
_BY_VALUE_CUT = """function(max) {
  const isNode = v => v instanceof Node;
  let holds = this instanceof NodeList || this instanceof HTMLCollection, seen = 0;
  try {
    if (!holds) for (const k in this) {
      if (isNode(this[k])) { holds = true; break; }
      if (++seen >= 1000) break;
    }
  } catch (e) {}  // a getter that throws: JSON.stringify below meets it too
  const name = n => n.nodeType !== 1 ? n.nodeName : n.localName + (n.id ? "#" + n.id : "")
    + [...n.classList].map(c => "." + c).join("");
  const nodes = (k, v) => isNode(v) ? name(v)
    : v instanceof NodeList || v instanceof HTMLCollection ? [...v] : v;
  let text;
  try { text = JSON.stringify(this, holds ? nodes : undefined); }
  catch (e) { return {whole: this}; }
  if (typeof text === "string" && text.length > max)
    return {cut: text.slice(0, max), total: text.length};
  return holds ? {whole: JSON.parse(text)} : {whole: this};
}"""
_PRIMITIVES = ("undefined", "string", "number", "boolean", "bigint", "symbol")


# Each call's own block scope: top-level const/let/class end with the call (var and
# assignments to globals still persist, as in a page script). On one line with the code,
# so line numbers in errors stay the caller's; the newline ends a trailing // comment.
_SCOPED = "{{{code}\n}}"
# --ref: the code is a function of the element, or an expression using `el`.
_ON_ELEMENT = ("async function(el) {{ const f = ({code}\n); "
               "return typeof f === 'function' ? await f.call(el, el) : f; }}")
# Where the caller's code starts in each wrapper (line 0, this column): a syntax error's
# position is given back in the caller's own text (`_syntax_error`).
_SCOPED_AT = _SCOPED.format(code="\0").index("\0")
_ON_ELEMENT_AT = _ON_ELEMENT.format(code="\0").index("\0") + 1  # CDP adds a "("


# What the browser says when the script ran but its value could not come back, and what
# that means to the caller (the raw protocol text names neither).
_CANT_RETURN = ("Object reference chain is too long", "Object couldn't be returned by value")
_PAGE_LEFT = ("Inspected target navigated or closed", "Execution context was destroyed")


@implements("eval")
async def evaluate(ctx: ToolContext, params: EvalParams) -> dict[str, Any]:
    try:
        return await _evaluate(ctx, params)
    except CdpError as e:
        if any(m in e.message for m in _CANT_RETURN):
            raise BskError(
                "action_failed", "the script ran, but its value can't be returned as JSON "
                "(it refers to itself, as `window` does, or nests too deep)",
                hint="return the data you need as plain values, e.g. `document.title`, "
                     "`({url: location.href, count: items.length})`, `el.outerHTML`, or "
                     "`JSON.stringify(value, ['key1', 'key2'])`",
                details={"reason": "value_not_serializable", "browser": str(e)},
                dispatched=Dispatched.YES) from e
        if any(m in e.message for m in _PAGE_LEFT):
            raise BskError(
                "action_failed", "the page navigated away (or its frame closed) while the "
                "script was running: the script ran, and its value went with the page",
                hint="see where the page is now with `bsk snapshot`; to navigate from a "
                     "script, don't await after it (`location.href = URL`), then `bsk wait "
                     "--url …`",
                details={"reason": "navigated_during_script", "browser": str(e)},
                dispatched=Dispatched.YES) from e
        raise


async def _evaluate(ctx: ToolContext, params: EvalParams) -> dict[str, Any]:
    if params["ref"] and params["frame"]:
        raise invalid("frame", "give --ref or --frame, not both")
    if params["ref"]:
        answer, where = await _on_element(ctx, params["ref"], params["expression"])
    else:
        where = await _frame_world(ctx, params["frame"]) if params["frame"] else {}
        answer = await ctx.run_script("Runtime.evaluate", {
            "expression": _SCOPED.format(code=params["expression"]),
            "awaitPromise": True,
            # Console semantics: top-level await.
            "replMode": True,
            "userGesture": True,
            "objectGroup": _GROUP,
            **{k: v for k, v in where.items() if k == "contextId"},
        }, session_id=where.get("session_id"))
    holds_objects = "objectId" in answer.get("result", {}) or "exceptionDetails" in answer
    if holds_objects:  # release the page objects this made (a primitive made none)
        ctx.on_cancel("remote_objects_released", lambda: _release(ctx, where),
                      undoes_effect=False)
        try:
            if "exceptionDetails" not in answer:
                answer = await _settle(ctx, answer["result"], where, params["max_chars"])
        finally:
            await _release(ctx, where)
    if "exceptionDetails" in answer:
        return _thrown(ctx, _syntax_error(
            answer["exceptionDetails"], params["expression"],
            _ON_ELEMENT_AT if params["ref"] else _SCOPED_AT))
    return _bounded(_value(answer["result"]), params["max_chars"], answer.get("cut"))


async def _on_element(ctx: ToolContext, ref: str,
                      code: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run `code` on the ref's element in the page's own world (refs live in ours)."""
    target = resolve(ctx, ref)
    sid = target.session_id
    handle = await element_handle(ctx, target)
    node = await ctx.inspect("DOM.describeNode", {"objectId": handle}, tab=target.tab,
                             session_id=sid)
    page_el = await ctx.inspect("DOM.resolveNode", {
        "backendNodeId": node["node"]["backendNodeId"], "objectGroup": _GROUP},
        tab=target.tab, session_id=sid)
    object_id = page_el["object"]["objectId"]
    answer = await ctx.act("Runtime.callFunctionOn", {
        "objectId": object_id, "functionDeclaration": _ON_ELEMENT.format(code=code),
        "arguments": [{"objectId": object_id}], "awaitPromise": True, "userGesture": True,
        "objectGroup": _GROUP}, tab=target.tab, session_id=sid)
    return answer, {"session_id": sid}


async def _frame_world(ctx: ToolContext, ref: str) -> dict[str, Any]:
    """The page's own world in the document of the <iframe> that `ref` names."""
    target = resolve(ctx, ref)
    handle = await element_handle(ctx, target)
    node = (await ctx.inspect("DOM.describeNode", {"objectId": handle}, tab=target.tab,
                              session_id=target.session_id))["node"]
    frame_id = node.get("frameId")
    if node.get("nodeName") not in ("IFRAME", "FRAME") or not frame_id:
        raise invalid("frame", f"{ref} is a <{node.get('localName', '?')}>, not an iframe",
                      hint="give the ref of an iframe from `bsk snapshot`")
    tab = target.tab
    world = tab.main_worlds.get(frame_id)
    if world is None:
        raise BskError("action_failed", f"the document of {ref}'s frame is not ready",
                       hint="wait for it to load (e.g. `bsk wait --selector …`), then "
                            "call again", details={"reason": "frame_not_ready", "ref": ref},
                       dispatched=Dispatched.NO)
    return {"contextId": world, "session_id": tab.session_for_frame(frame_id)}


async def _release(ctx: ToolContext, where: dict[str, Any]) -> None:
    await ctx.inspect("Runtime.releaseObjectGroup", {"objectGroup": _GROUP},
                      session_id=where.get("session_id"))


async def _settle(ctx: ToolContext, remote: dict[str, Any], where: dict[str, Any],
                  max_chars: int) -> dict[str, Any]:
    """Await a returned promise (replMode awaits only its own wrapper), then take the value."""
    object_id = remote.get("objectId")
    if not object_id or remote.get("type") in _PRIMITIVES:
        return {"result": remote}
    sid = where.get("session_id")
    if remote.get("subtype") == "promise":
        return await ctx.run_script("Runtime.awaitPromise", {"promiseObjectId": object_id,
                                                             "returnByValue": True},
                                    session_id=sid)
    if remote.get("subtype") in ("node", "window") or remote.get("type") == "function":
        return {"result": remote}  # not data: described, not serialized
    got = await ctx.inspect("Runtime.callFunctionOn", {
        "objectId": object_id, "functionDeclaration": _BY_VALUE_CUT, "returnByValue": True,
        "arguments": [{"value": max_chars}]}, session_id=sid)
    kept = got.get("result", {}).get("value")
    if "exceptionDetails" in got or not isinstance(kept, dict):
        return got
    if "cut" in kept:  # only its start crossed: a page's 100 MB object never does
        return {"result": {**remote, "value": kept["cut"]},
                "cut": {"total_chars": kept["total"]}}
    return {"result": {**remote, "value": kept.get("whole")}}


def _syntax_error(details: dict[str, Any], code: str, start: int) -> dict[str, Any]:
    """A syntax error in the caller's code said in the terms of that code, not of the
    wrapper around it: its position within the code, and when the parser reached the
    wrapper's closing text (`eval '('` meets the wrapper's `}`), the code ended early —
    "Unexpected end of input" at its end. A SyntaxError thrown while running (`JSON.parse`,
    a nested `eval`) has a stack and is left as it is."""
    exception = details.get("exception") or {}
    text = exception.get("description") or ""
    line, column = details.get("lineNumber"), details.get("columnNumber")
    if exception.get("className") != "SyntaxError" or "\n" in text.strip() \
            or not isinstance(line, int) or not isinstance(column, int):
        return details
    lines = code.split("\n")
    if line >= len(lines):  # in the wrapper's text after the code: the code ended early
        text, line, column = "SyntaxError: Unexpected end of input", len(lines) - 1, \
            len(lines[-1])
    elif line == 0:
        column = max(0, column - start)
    return {**details, "text": text, "exception": {**exception, "description": text},
            "lineNumber": line, "columnNumber": column}


def _thrown(ctx: ToolContext, details: dict[str, Any]) -> dict[str, Any]:
    exception = details.get("exception", {})
    text = exception.get("description") or details.get("text", "exception")
    first_line = text.splitlines()[0] if text else "exception"
    # A result, not a failure: the operation completes and carries the page_error code.
    hint = "the throw itself changed nothing, but statements before it may have run"
    if exception.get("className") == "SyntaxError" and "\n" not in text.strip():
        hint = "nothing ran: the code did not parse"  # a parse error has no stack
        if "Illegal return" in text:
            hint += ("; the value is the code's last expression: drop `return` (or run a "
                     "function: `(() => { …; return x; })()`)")
    ctx.page_error(f"the script threw: {first_line}", hint=hint)
    return {"ok": False, "exception": first_line, "stack": text,
            "line": details.get("lineNumber"), "column": details.get("columnNumber")}


def _value(remote: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": True, "type": remote.get("type")}
    if "unserializableValue" in remote:
        out["value"] = remote["unserializableValue"]  # NaN, Infinity, -0, 1n
    elif "value" in remote:
        out["value"] = remote["value"]
    else:
        out["value"] = None
        if remote.get("type") != "undefined":
            out["description"] = remote.get("description")
    if remote.get("subtype"):
        out["subtype"] = remote["subtype"]
    return out


def _bounded(out: dict[str, Any], max_chars: int,
             cut: dict[str, Any] | None) -> dict[str, Any]:
    """The value cut at `max_chars` characters (a string's, or an object's JSON text's),
    with a note saying so and how to get more (docs/outcomes.md, "Bounded results")."""
    value = out.get("value")
    total = cut["total_chars"] if cut else None
    if total is None and isinstance(value, str) and len(value) > max_chars:
        total, out["value"] = len(value), value[:max_chars]
    elif total is None and isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False)  # a promise's value, taken whole
        if len(text) > max_chars:
            total, out["value"] = len(text), text[:max_chars]
    if total is None:
        return out
    what = "its JSON text" if out.get("type") == "object" else "the string"
    more = ("give --max-chars (up to "
            f"{catalog.EVAL_MAX_CHARS_LIMIT:,}) for more" if max_chars <
            catalog.EVAL_MAX_CHARS_LIMIT else "return it in parts")
    out.update(truncated=True, chars=max_chars, total_chars=total,
               note=f"cut: value holds the first {max_chars:,} of {total:,} characters of "
                    f"{what}; {more}, or return a part (e.g. .slice(start, end))")
    return out
