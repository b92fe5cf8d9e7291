"""What more than one family's text renderers share: a value shown short, what an action
set off, a download, a ring buffer's cursor.

A renderer turns a completed result into the human text the CLI prints and the MCP
server sends (browserskill/base/render.py puts them together). Stdlib only.
"""

from __future__ import annotations

import json

from browserskill.base.boundaries import reshaped

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Renderer = Callable[[dict[str, Any]], str]

Words = tuple[str, ...]  # a command's words, e.g. ("tab", "new"): what a renderer is for

# A session's cookies and storage: the words `session start --help` uses too.
SCOPE = {"isolated": "its own browser context", "shared": "the shared profile"}


def short(value: Any, limit: int = 80) -> str:
    """`value` as JSON, cut at `limit`; page text in markers is quoted and cut inside them."""
    def shape(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= limit else text[:limit] + "…"
    return reshaped(value, shape) if isinstance(value, str) else shape(value)


def effect_lines(r: dict[str, Any]) -> str:
    """What an action set off, one fact a line: a dialog, a navigation, new tabs,
    downloads, and the state the element was left in."""
    lines = []
    dialog = r.get("dialog")
    if dialog:
        kind = dialog.get("type") or "dialog"
        lines.append(f"the page opened {'an' if kind[0] in 'aeiou' else 'a'} {kind} dialog: "
                     f"{short(dialog.get('message', ''))}")
        lines.append("  answer it: `bsk dialog accept [TEXT]` or `bsk dialog dismiss` "
                     "(until then the page is blocked)")
    if r.get("navigated"):
        lines.append(f"navigated to {r.get('url')}")
    if r.get("note") and not dialog:
        lines.append(f"note: {r['note']}")
    if r.get("new_tabs"):
        lines.append(f"opened new tab(s): {', '.join(r['new_tabs'])} "
                     "(the current tab is unchanged: bsk tab select ID)")
    if r.get("popups_note"):
        lines.append(f"note: {r['popups_note']}")
    for d in r.get("downloads") or ():
        lines.append(download_line(d))
    element = r.get("element") or {}
    if element.get("removed"):
        lines.append("the element is gone from the page now")
    state = [f"{k}={'true' if v else 'false'}" for k, v in element.items() if k != "removed"]
    if state:
        lines.append("element now: " + ", ".join(state))
    return "".join("\n" + line for line in lines)


def download_line(d: dict[str, Any]) -> str:
    size = f"{d.get('bytes', 0)} bytes"
    if d.get("state") == "in_progress":
        total = f" of {d['total_bytes']}" if d.get("total_bytes") else ""
        return (f"download in progress: {d.get('suggested_filename')} ({d.get('bytes', 0)}"
                f"{total} bytes so far) → {d.get('path') or 'path unknown'}; "
                "finish with: bsk download wait")
    if d.get("state") == "canceled":
        return (f"download failed or canceled: {d.get('suggested_filename')} "
                f"({size}; no file)")
    return f"downloaded: {d.get('path') or d.get('suggested_filename')} ({size})"


def acted(verb: str) -> Renderer:
    def render(r: dict[str, Any]) -> str:
        if "dialog" in r and "ref" not in r:  # the action ran and the page opened a dialog
            return f"{verb}; the page now shows a dialog" + effect_lines(r)
        return f"{verb} {r.get('ref')}" + effect_lines(r)

    return render


def went(r: dict[str, Any]) -> str:
    return effect_lines({k: v for k, v in r.items() if k != "element"})


def cursor_line(r: dict[str, Any], count: int) -> str:
    notes = [f"{count} entries", f"next: --since {r['next_since']}"]
    if r.get("more"):
        notes.append("more after these")
    if r.get("missed"):
        notes.append("some older entries fell out of the buffer")
    return "# " + " · ".join(notes)
