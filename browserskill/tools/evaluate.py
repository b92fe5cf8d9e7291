"""eval: run script in the page. A thrown exception is a result (ok=false), not a failure."""

from __future__ import annotations

from typing import Any

from browserskill.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements

_GROUP = "bsk-eval"
_PRIMITIVES = ("undefined", "string", "number", "boolean", "bigint", "symbol")


@implements("eval")
async def evaluate(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    answer = await ctx.run_script("Runtime.evaluate", {
        "expression": params["expression"],
        "awaitPromise": True,
        # Console semantics: top-level await, re-declarable let/const.
        "replMode": True,
        "userGesture": True,
        "objectGroup": _GROUP,
    })
    holds_objects = "objectId" in answer.get("result", {}) or "exceptionDetails" in answer
    if holds_objects:  # release the page objects this made (a primitive made none)
        ctx.on_cancel("remote_objects_released", lambda: _release(ctx), undoes_effect=False)
        try:
            if "exceptionDetails" not in answer:
                answer = await _settle(ctx, answer["result"])
        finally:
            await _release(ctx)
    if "exceptionDetails" in answer:
        return _thrown(ctx, answer["exceptionDetails"])
    return _value(answer["result"])


async def _release(ctx: ToolContext) -> None:
    await ctx.inspect("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})


async def _settle(ctx: ToolContext, remote: dict[str, Any]) -> dict[str, Any]:
    """Await a returned promise (replMode awaits only its own wrapper), then take the value."""
    object_id = remote.get("objectId")
    if not object_id or remote.get("type") in _PRIMITIVES:
        return {"result": remote}
    if remote.get("subtype") == "promise":
        return await ctx.run_script("Runtime.awaitPromise", {"promiseObjectId": object_id,
                                                             "returnByValue": True})
    if remote.get("subtype") in ("node", "window") or remote.get("type") == "function":
        return {"result": remote}  # not data: described, not serialized
    return await ctx.inspect("Runtime.callFunctionOn", {
        "objectId": object_id, "functionDeclaration": "function() { return this; }",
        "returnByValue": True,
    })


def _thrown(ctx: ToolContext, details: dict[str, Any]) -> dict[str, Any]:
    exception = details.get("exception", {})
    text = exception.get("description") or details.get("text", "exception")
    first_line = text.splitlines()[0] if text else "exception"
    # A result, not a failure: the operation completes and carries the page_error code.
    ctx.op.error = BskError(
        "page_error", f"the script threw: {first_line}",
        hint="the throw itself changed nothing, but statements before it may have run",
    ).to_dict()
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
