"""Page text marked as data (docs/safety.md, "Content boundaries").

With boundaries on (`bsk --boundaries`, `BSK_BOUNDARIES=1`, `bsk mcp` by default, an HTTP
call's `"boundaries": true`), every string of an answer that the page wrote — a
snapshot, HTML, an eval value, console text, a network body, a WebMCP tool's output — is
wrapped in markers that carry a nonce made fresh for that answer:

    <<<page-content nonce=8f3a…>>>
    …what the page wrote…
    <<<end page-content nonce=8f3a…>>>

Invariants: the nonce is 96 random bits, made after the page text was read, so text on
the page can't name it and a fake end marker inside can't close the block; only the
answer that is shown is marked — the journal, `op show` without boundaries, and
the values a tool works with are unchanged. Stdlib only (the CLI renders with it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

# Per tool: the result fields the page wrote. "a[].b": field b of every item of list a.
# A field holding an object or list has each of its strings marked.
PAGE_FIELDS: dict[str, tuple[str, ...]] = {
    "snapshot": ("snapshot", "tree", "title"),
    "html": ("html",),
    "eval": ("value", "description", "exception", "stack"),
    "console": ("entries[].text",),
    "network_show": ("body", "request_body"),
    "webmcp_invoke": ("output", "exception"),
    "webmcp_list": ("tools[].description", "tools[].title"),
}
# In any tool's result: what an action's effects quote of the page (browserskill/
# effects.py), a dialog's message, a page's title. "a.b": field b of object a.
ANY_TOOL_FIELDS = (
    "effects.dom.text_appeared", "effects.dom.text_gone", "effects.dom.appeared[].name",
    "effects.dom.gone[].name", "effects.dom.moved_to[].name",
    "effects.dom.states[].name", "effects.dom.states[].changed",
    "effects.focus.name", "effects.page_errors", "effects.dialog.message",
    "effects.requests[].url", "effects.navigation.url", "dialog.message", "title",
)

ENV = "BSK_BOUNDARIES"


def enabled_by(env_value: str | None) -> bool:
    """`BSK_BOUNDARIES`: 1/true/yes/on turn boundaries on."""
    return (env_value or "").strip().lower() in ("1", "true", "yes", "on")


def new_nonce() -> str:
    return os.urandom(12).hex()


def wrap(text: str, nonce: str) -> str:
    return (f"<<<page-content nonce={nonce}>>>\n{text}\n"
            f"<<<end page-content nonce={nonce}>>>")


_START, _END = "<<<page-content nonce=", "<<<end page-content nonce="


def reshaped(text: str, shape: Callable[[str], str]) -> str:
    """`shape` (a clip, a quote) applied to what the page wrote, inside its markers: a
    marked string cut as a whole would lose its end marker and show only the nonce."""
    if not text.startswith(_START):
        return shape(text)
    head, sep, rest = text.partition(">>>\n")
    nonce = head[len(_START):]
    end = f"\n{_END}{nonce}>>>"
    if not sep or not rest.endswith(end):
        return shape(text)
    return wrap(shape(rest[:-len(end)]), nonce)


def first_line(text: str) -> tuple[str, str, str]:
    """`text.partition("\\n")`, where a marked block belongs to the line it starts on: bsk
    adding to a text's first line must not put its own words inside the page's markers
    (a marked title spans three lines but is part of one line of the answer)."""
    at = 0
    while True:
        newline, start = text.find("\n", at), text.find(_START, at)
        if newline < 0 or start < 0 or start > newline:
            break
        nonce, sep, _ = text[start + len(_START):].partition(">>>\n")
        end_marker = f"\n{_END}{nonce}>>>"
        end = text.find(end_marker, start) if sep else -1
        if end < 0:
            break
        at = end + len(end_marker)
    newline = text.find("\n", at)
    return (text, "", "") if newline < 0 else (text[:newline], "\n", text[newline + 1:])


def outside(text: str, change: Callable[[str], str]) -> str:
    """`text` with `change` applied to bsk's own words only: every marked block (what the
    page wrote) is left exactly as it is. Over MCP the rendered answer's advice is put in
    MCP's words so (a page's text is never rewritten)."""
    out, at = [], 0
    while (start := text.find(_START, at)) >= 0:
        nonce, sep, _ = text[start + len(_START):].partition(">>>\n")
        end_marker = f"\n{_END}{nonce}>>>"
        end = text.find(end_marker, start) if sep else -1
        if end < 0:
            break
        out += [change(text[at:start]), text[start:end + len(end_marker)]]
        at = end + len(end_marker)
    return "".join([*out, change(text[at:])])


def _wrap_all(value: Any, nonce: str) -> Any:
    if isinstance(value, str):
        return wrap(value, nonce)
    if isinstance(value, dict):
        return {k: _wrap_all(v, nonce) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrap_all(v, nonce) for v in value]
    return value


def _mark_path(holder: Any, path: list[str], nonce: str) -> Any:
    if not isinstance(holder, dict):
        return holder
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        key = head[:-2]
        items = holder.get(key)
        if not isinstance(items, list):
            return holder
        return {**holder, key: [_mark_path(item, rest, nonce) for item in items]}
    if head not in holder:
        return holder
    value = holder[head]
    return {**holder, head: _mark_path(value, rest, nonce) if rest else _wrap_all(value, nonce)}


def mark(answer: dict[str, Any], nonce: str | None = None) -> dict[str, Any]:
    """A copy of an answer (the result shape) with what the page wrote wrapped; a page
    error's message too (the page's own exception text)."""
    result = answer.get("result")
    if answer.get("tool") == "batch" and isinstance(result, dict) \
            and isinstance(result.get("steps"), list):  # each step as its own answer
        nonce = nonce or new_nonce()
        return {**answer, "result": {**result, "steps": [
            mark(step, nonce) if isinstance(step, dict) else step
            for step in result["steps"]]}}
    fields = dict.fromkeys(PAGE_FIELDS.get(str(answer.get("tool")), ()) + ANY_TOOL_FIELDS)
    error = answer.get("error")
    page_error = isinstance(error, dict) and error.get("code") == "page_error"
    if not isinstance(result, dict) and not page_error:
        return answer
    nonce = nonce or new_nonce()
    out = dict(answer)
    if isinstance(result, dict):
        for field in fields:
            result = _mark_path(result, field.split("."), nonce)
        out["result"] = result
    if page_error and isinstance(error, dict) and isinstance(error.get("message"), str):
        out["error"] = {**error, "message": wrap(error["message"], nonce)}
    return out
