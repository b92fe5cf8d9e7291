"""What an action did to the page, summed up from what was seen (docs/outcomes.md, "Effects").

Invariant: an effect report is an observation, never a verdict. It lists only what was
seen to change between the first input step and the moment the page settled (or the
bound), minus what the input itself implies (the target taking focus or hover, the caret
moving in the field typed into, the text typed appearing there, the target scrolled into
view); `none` is true exactly when nothing else is listed. It never touches the
operation's `status`. When part of the page could not be watched (a dialog blocked it, a
frame navigated away, it did not answer), `unobserved` says so, and `none` is then never
claimed: not seeing a change is not seeing no change.

Pure and stdlib only: the I/O half is browserskill/tools/effects.py; render.py uses
`effects_line` for the one-line text.
"""

from __future__ import annotations

import json

from browserskill.base.boundaries import reshaped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# The page has settled when nothing changed — no DOM mutation in any watched frame, no
# request started or ended — for this long (`--settle MS` overrides; 0: don't watch).
QUIET_MS = 100
# ... and the watch ends here at the latest, settled or not (a page animating forever).
BOUND_MS = 1000
# A page that has not reacted at all this long after the input (no mutation, no request,
# no navigation) has settled at once: handlers react in their own task, a microtask, a
# zero timer or the next animation frame, all well within it. Only a page that reacted
# is watched for the whole quiet window after its last change.
REACTION_MS = 20
MAX_LISTED = 5  # elements, texts, requests and states named per kind
MAX_REQUESTS = 8

# Tools whose input scrolls: the target scrolled into view first, or the scroll itself.
SCROLLS_TARGET = frozenset({"click", "dblclick", "hover", "drag", "fill", "select", "check",
                            "uncheck", "upload", "scroll", "mouse_wheel"})
# Tools that write text into their target: the value becoming that text is the input's.
WRITES_TEXT = frozenset({"fill", "type"})
# Navigation tools: the new document is the effect; its requests are its loading.
NAVIGATES = frozenset({"open", "back", "forward", "reload"})


def bound_ms(quiet_ms: int) -> int:
    """How long the watch may last for a quiet window of `quiet_ms`."""
    return max(BOUND_MS, 4 * quiet_ms)


def implied_value(tool: str, text: str | None, before: Any, after: Any) -> bool:
    """The field's value went from `before` to `after` just as typing `text` makes it."""
    if text is None or not isinstance(after, str):
        return False
    if tool == "fill":
        return after == text
    if tool == "type" and isinstance(before, str):
        return after == before + text or after == text or (text in after and len(after) ==
                                                           len(before) + len(text))
    return False


def _named(item: Any) -> dict[str, Any] | None:
    """[role, name, ref] from the page, as the snapshot names an element."""
    if not isinstance(item, list) or len(item) < 3 or not item[0]:
        return None
    out: dict[str, Any] = {"role": item[0]}
    if item[1]:
        out["name"] = item[1]
    if item[2]:
        out["ref"] = item[2]
    return out


def _as_seen(element: dict[str, Any],
             ref_names: dict[str, tuple[str, str]] | None) -> dict[str, Any]:
    """An element with a ref, named as the session saw it when the ref was given."""
    role, name = (ref_names or {}).get(element.get("ref") or "", ("", ""))
    if not role:
        return element
    return {"role": role, **({"name": name} if name else {}), "ref": element["ref"]}


def _only_names(text: str, names: list[str]) -> bool:
    """The text is nothing but names already listed with their elements (a menu's
    text is its items')."""
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "")
    return not any(c.isalnum() for c in text)


def _telling(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Named or ref'd elements first, each once, at most MAX_LISTED."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for el in sorted(elements, key=lambda e: (not e.get("ref"), not e.get("name"))):
        key = (el["role"], el.get("name"), el.get("ref"))
        if key in seen or (not el.get("name") and not el.get("ref")):
            continue
        seen.add(key)
        out.append(el)
    return out[:MAX_LISTED]


def summarize(tool: str, frames: list[dict[str, Any]], *, typed: str | None = None,
              target_ref: str | None = None, requests: Sequence[dict[str, Any]] = (),
              navigation: dict[str, Any] | None = None, new_tabs: Sequence[str] = (),
              dialog: dict[str, Any] | None = None,
              downloads: Sequence[dict[str, Any]] = (),
              ref_names: dict[str, tuple[str, str]] | None = None,
              unobserved: Sequence[str] = (), page_errors: Sequence[str] = (),
              settled: bool = True, watched_ms: int = 0,
              brief: bool = False) -> dict[str, Any]:
    """The effects of one action from the frames' reports (tools/effects.js `report`) and
    the daemon's own facts (navigation, new tabs, dialog, downloads, requests). `brief`:
    the watch was of the default length (no `--settle`), so a page that did not react
    was watched only for the reaction window."""
    counts = {"added": 0, "removed": 0, "moved": 0, "text": 0, "attributes": 0}
    appeared: list[dict[str, Any]] = []
    gone: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    text_appeared: list[str] = []
    text_gone: list[str] = []
    states: list[dict[str, Any]] = []
    focus = None
    scrolled = None
    scrolled_elements = 0
    for frame in frames:
        for key in counts:
            counts[key] += int((frame.get("counts") or {}).get(key, 0))
        appeared += [e for e in map(_named, frame.get("appeared") or ()) if e]
        # What went away is named as it was seen: a modal drops its role as it hides.
        gone += [_as_seen(e, ref_names) for e in map(_named, frame.get("gone") or ()) if e]
        for item in frame.get("moved") or ():
            if (element := _named(item)) is not None:
                moved.append({**element, "position": item[3]})
        text_appeared += frame.get("text_appeared") or []
        text_gone += frame.get("text_gone") or []
        for st in frame.get("states") or ():
            changed = dict(st.get("changed") or {})
            if st.get("target") or st.get("ref") == target_ref:
                changed.pop("focused", None)
                value = changed.get("value")
                if value and tool in WRITES_TEXT and implied_value(tool, typed, *value):
                    del changed["value"]
            if changed:
                entry: dict[str, Any] = {"ref": st["ref"]}
                role, name = (ref_names or {}).get(st["ref"], ("", ""))
                if role:
                    entry["role"] = role
                if name:
                    entry["name"] = name
                entry["changed"] = changed
                states.append(entry)
        for item in frame.get("flagged") or ():  # elements no ref was held for
            if (element := _named(item)) is not None and isinstance(item[3], dict):
                states.append({**element, "held": False, "changed": item[3]})
        if frame.get("focus") and focus is None:
            focus = _named(frame["focus"])
        if frame.get("scrolled") and tool not in SCROLLS_TARGET and scrolled is None:
            scrolled = frame["scrolled"]
        scrolled_elements += int(frame.get("scrolled_elements") or 0)
    # The same text gone and back (a re-render) is no change; a name already listed
    # with its element, the same way, is not listed again as text. Only the same way: the
    # option "Vanilla" gone as a menu closes does not hide "Vanilla" shown as the choice.
    both = set(text_appeared) & set(text_gone)
    names_appeared = [e["name"] for e in appeared if e.get("name")]
    names_gone = [e["name"] for e in gone if e.get("name")]
    text_appeared = [t for t in dict.fromkeys(text_appeared)
                     if t not in both and not _only_names(t, names_appeared)]
    text_gone = [t for t in dict.fromkeys(text_gone)
                 if t not in both and not _only_names(t, names_gone)]
    out: dict[str, Any] = {}
    if navigation:
        out["navigation"] = navigation
    if new_tabs:
        out["new_tabs"] = list(new_tabs)
    if dialog:
        out["dialog"] = {k: v for k, v in dialog.items() if k in ("type", "message") and v}
    if downloads:
        out["downloads"] = [d.get("suggested_filename") or d.get("path") for d in downloads]
    dom: dict[str, Any] = {k: v for k, v in counts.items() if v}
    if appeared:
        dom["appeared"] = _telling(appeared)
    if gone:
        dom["gone"] = _telling(gone)
    if moved:
        dom["moved_to"] = moved[:MAX_LISTED]
    if text_appeared:
        dom["text_appeared"] = text_appeared[:MAX_LISTED]
    if text_gone:
        dom["text_gone"] = text_gone[:MAX_LISTED]
    if states:
        dom["states"] = states[:MAX_LISTED]
    if dom:
        out["dom"] = dom
    if requests:
        out["requests"] = [_request(r) for r in requests[:MAX_REQUESTS]]
        if len(requests) > MAX_REQUESTS:
            out["requests_more"] = len(requests) - MAX_REQUESTS
    if focus:
        out["focus"] = focus
    if scrolled:
        out["scrolled"] = scrolled
    if scrolled_elements and tool not in SCROLLS_TARGET:
        out["scrolled_elements"] = scrolled_elements
    seen_anything = bool(out)
    if page_errors:  # not a change of the page, but what an agent needs to know
        out["page_errors"] = list(page_errors)[:3]
    if unobserved:
        out["unobserved"] = list(dict.fromkeys(unobserved))
    out["none"] = not seen_anything and not unobserved
    if brief and (out["none"] or _only_counted(out)):
        out["brief"] = True
    out["settled"] = settled
    out["watched_ms"] = watched_ms
    return out


def _only_counted(out: dict[str, Any]) -> bool:
    """The page changed, but nothing the report can name, and no request was sent but a
    load (a hover's icon): what shows may come later (jQuery UI opens a submenu 300 ms
    after the hover), past a watch of the default length."""
    dom = out.get("dom") or {}
    return bool(dom) and set(dom) <= set(_COUNTED) and not any(
        out.get(k) for k in ("focus", "scrolled", "page_errors", "navigation", "dialog",
                             "new_tabs", "downloads", "unobserved")) and all(
        r["method"] == "GET" for r in out.get("requests") or ())


def _request(r: dict[str, Any]) -> dict[str, Any]:
    out = {"method": r.get("method", "GET"), "url": r.get("url", "")}
    if r.get("status") is not None:
        out["status"] = r["status"]
    elif r.get("state") == "failed":
        out["failed"] = r.get("error") or True
    else:
        out["pending"] = True
    return out


def _quote(text: str, limit: int = 60) -> str:
    """The page's text in double quotes, escaped as a JSON string (a `"` in it is `\\"`,
    never rewritten), so what is read can be copied back, e.g. into `bsk wait --text`."""
    def shape(text: str) -> str:
        cut = len(text) > limit
        return json.dumps(text[:limit], ensure_ascii=False)[:-1] + ('…"' if cut else '"')
    return reshaped(text, shape)


def _element(e: dict[str, Any]) -> str:
    parts = [e["role"]]
    if e.get("name"):
        parts.append(_quote(e["name"], 40))
    if e.get("ref"):
        parts.append(e["ref"])
    return " ".join(parts)


def _path(url: str) -> str:
    """A request's URL as a person reads it in a line: path and query, no origin."""
    def shape(url: str) -> str:
        rest = url.split("://", 1)[-1]
        slash = rest.find("/")
        path = rest[slash:] if slash >= 0 else "/"
        return path if len(path) <= 60 else path[:60] + "…"
    return reshaped(url, shape)


# The DOM's changes by kind, as counted in words (one, many).
_COUNTED = {"added": ("added", "added"), "removed": ("removed", "removed"),
            "moved": ("moved", "moved"), "text": ("text", "texts"),
            "attributes": ("attribute", "attributes")}


# A widget that debounces (a search box's ~300 ms) or delays (jQuery UI's submenu opens
# 300 ms after the hover) reacts after the watch gave up.
_AT_ONCE = " at once (--settle MS waits for a later change)"


def effects_line(effects: dict[str, Any]) -> str:
    """The effects in a line, for the text after `clicked e3`: what appeared and went
    away, state changes, requests, focus, scroll — or that nothing changed. Navigation,
    dialog, new tabs and downloads have lines of their own (render.py)."""
    threw = "".join(f"; the page threw: {_quote(e, 80)}"
                    for e in (effects.get("page_errors") or [])[:1])
    if effects.get("none"):
        # Watched only until the page failed to react (REACTION_MS): say so, so a change
        # that comes later is not taken as never coming (`--settle MS` waits for it).
        return "nothing on the page changed" + (_AT_ONCE if effects.get("brief") else "") \
            + threw
    dom = effects.get("dom") or {}
    parts: list[str] = []
    for text in dom.get("text_appeared", [])[:2]:
        parts.append(f"{_quote(text)} appeared")
    if dom.get("appeared"):
        parts.append("appeared: " + ", ".join(_element(e) for e in dom["appeared"][:3])
                     + (" …" if len(dom["appeared"]) > 3 else ""))
    for text in dom.get("text_gone", [])[:1]:
        parts.append(f"{_quote(text)} went away")
    if dom.get("gone"):
        parts.append("gone: " + ", ".join(_element(e) for e in dom["gone"][:3])
                     + (" …" if len(dom["gone"]) > 3 else ""))
    if dom.get("moved_to"):
        parts.append("moved: " + ", ".join(
            f"{_element(e)} (now {e['position'][0]} of {e['position'][1]})"
            for e in dom["moved_to"][:3]) + (" …" if dom.get("moved", 0) > 3 else ""))
    for st in dom.get("states", [])[:3]:
        changes = ", ".join(f"{k} {_short(a)} → {_short(b)}"
                            for k, (a, b) in st["changed"].items())
        # A ref held is named by it; an element none was held for, in full.
        parts.append(f"{_element(st) if st.get('held') is False else st['ref']} {changes}")
    if not parts and any(dom.get(k) for k in _COUNTED):
        parts.append("the DOM changed (" + ", ".join(
            f"{dom[k]} {_COUNTED[k][dom[k] != 1]}" for k in _COUNTED if dom.get(k)) + ")")
    for r in (effects.get("requests") or [])[:3]:
        end = (str(r["status"]) if "status" in r else "failed" if r.get("failed")
               else "pending")
        parts.append(f"{r['method']} {_path(r['url'])} {end}")
    if effects.get("requests_more"):
        parts.append(f"+{effects['requests_more']} more requests")
    if effects.get("focus"):
        parts.append("focus → " + _element(effects["focus"]))
    if effects.get("scrolled"):
        s = effects["scrolled"]
        parts.append(f"page scrolled by {s.get('dx', 0)},{s.get('dy', 0)}")
    if effects.get("unobserved"):
        parts.append("not watched: " + "; ".join(effects["unobserved"]))
    if not effects.get("settled", True):
        parts.append(f"still changing after {effects.get('watched_ms', 0)} ms")
    elif effects.get("brief"):
        parts.append("nothing new shown" + _AT_ONCE)
    return "; ".join(parts) + threw


def _short(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value, 30)
    return "null" if value is None else str(value).lower() if isinstance(value, bool) \
        else str(value)
