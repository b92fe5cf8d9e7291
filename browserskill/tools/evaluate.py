"""eval: run script in the page. A thrown exception is a result (ok=false), not a failure."""

from __future__ import annotations

from typing import Any

from browserskill.errors import BskError
from browserskill.tools.context import ToolContext
from browserskill.tools.registry import implements


@implements("eval")
async def evaluate(ctx: ToolContext, params: dict[str, Any]) -> dict[str, Any]:
    answer = await ctx.act(
        "Runtime.evaluate",
        {
            "expression": params["expression"],
            "awaitPromise": True,
            "returnByValue": True,
            "userGesture": True,
            "replMode": True,  # top-level await and re-declarable let/const, as in a console
        },
    )
    remote = answer.get("result", {})
    if "exceptionDetails" in answer:
        details = answer["exceptionDetails"]
        exception = details.get("exception", {})
        text = exception.get("description") or details.get("text", "exception")
        first_line = text.splitlines()[0] if text else "exception"
        # A result, not a failure: the operation completes and carries the page_error code.
        ctx.op.error = BskError("page_error", f"the script threw: {first_line}",
                                hint="fix the script; the page itself is unchanged by the throw "
                                     "unless the script changed it first").to_dict()
        return {"ok": False, "exception": text.splitlines()[0] if text else "exception",
                "stack": text, "line": details.get("lineNumber"),
                "column": details.get("columnNumber")}
    out: dict[str, Any] = {"ok": True, "type": remote.get("type")}
    if "value" in remote:
        out["value"] = remote["value"]
    elif remote.get("type") == "undefined":
        out["value"] = None
    else:
        # Not serializable by value (a DOM node, a function, a symbol): describe it.
        out["value"] = None
        out["description"] = remote.get("description") or remote.get("unserializableValue")
    if "unserializableValue" in remote:
        out["value"] = remote["unserializableValue"]  # NaN, Infinity, -0, 1n
    return out
