"""Browser-native keyboard input — type, press — sent as recorded steps.

Every key goes down and up through `Input.dispatchKeyEvent`, each half recorded as a
step before it is sent. While a key is down a compensation is armed that releases every
held key (modifiers last), so a cancel never leaves Control or Shift stuck. Characters
that no key on the layout makes (é, 漢, emoji) are sent with `Input.insertText`.
"""

from __future__ import annotations

from typing import Any

from browserskill.base.catalog.input import PressParams, TypeParams
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.browser import keys
from browserskill.browser.tab import Tab
from browserskill.tools import secrets
from browserskill.tools.context import ToolContext
from browserskill.tools.input import Marks, after_input
from browserskill.tools.refs import call_on, isolated_world, resolve
from browserskill.tools.registry import implements

# Run in BrowserSkill's isolated world (tools/refs.py): the same DOM, and the ref registry
# the snapshot keeps there, so the answer names the ref an agent knows it by.
_FOCUSED = """(() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (!el || el === document.body || el === document.documentElement) return {focused: null};
  let desc = el.tagName.toLowerCase();
  if (el.id) desc += "#" + el.id;
  else if (el.name) desc += `[name="${el.name}"]`;
  else if (el.getAttribute("role")) desc += `[role="${el.getAttribute("role")}"]`;
  const out = {focused: desc};
  const bsk = globalThis.__bsk, ref = bsk && bsk.byEl.get(el);
  if (ref && bsk.refs.get(ref) === el) out.focused_ref = ref;
  if (el.tagName === "IFRAME") return out;
  if ("value" in el && typeof el.value === "string" && el.type !== "password")
    out.value = el.value.slice(0, 1000);
  else if (el.isContentEditable) out.value = el.innerText.slice(0, 1000);
  return out;
})()"""


class Keyboard:
    """Keys held down in one tab during one operation, released on cancel."""

    def __init__(self, ctx: ToolContext, tab: Tab) -> None:
        self.ctx = ctx
        self.tab = tab
        self.held: list[keys.KeyDef] = []
        self.modifiers: list[str] = []
        self._guard: Any = None

    def _event(self, kind: str, k: keys.KeyDef, text: str = "") -> dict[str, Any]:
        event: dict[str, Any] = {
            "type": kind, "modifiers": keys.modifier_bits(self.modifiers), "key": k.key,
            "code": k.code, "windowsVirtualKeyCode": k.key_code,
            "nativeVirtualKeyCode": k.key_code, "location": k.location,
        }
        if text:
            event["text"] = event["unmodifiedText"] = text
        if k.location == 3:
            event["isKeypad"] = True
        return event

    async def down(self, k: keys.KeyDef) -> None:
        if not self.held:
            self._guard = self.ctx.on_cancel("key_released", self.release_all,
                                             undoes_effect=False)
        self.held.append(k)
        if keys.modifier_name(k):
            self.modifiers.append(k.key)
        kind = "keyDown" if k.text else "rawKeyDown"
        await self.ctx.step(f"keyDown:{k.label}", "Input.dispatchKeyEvent",
                            self._event(kind, k, k.text), tab=self.tab)

    async def up(self, k: keys.KeyDef) -> None:
        if keys.modifier_name(k) and k.key in self.modifiers:
            self.modifiers.remove(k.key)
        await self.ctx.step(f"keyUp:{k.label}", "Input.dispatchKeyEvent",
                            self._event("keyUp", k), tab=self.tab)
        if k in self.held:
            self.held.remove(k)
        if not self.held and self._guard is not None:
            self.ctx.settled(self._guard)
            self._guard = None

    async def release_all(self) -> None:
        """Compensation: let go of every key still down, the last pressed first."""
        for k in reversed(self.held):
            if keys.modifier_name(k) and k.key in self.modifiers:
                self.modifiers.remove(k.key)
            await self.tab.send("Input.dispatchKeyEvent", self._event("keyUp", k), timeout=2)
        self.held.clear()

    async def press(self, chord: keys.Chord) -> None:
        for m in chord.modifiers:
            await self.down(m)
        await self.down(chord.key)
        await self.up(chord.key)
        for m in reversed(chord.modifiers):
            await self.up(m)

    async def type_char(self, ch: str) -> None:
        k = keys.CHARS.get(ch)
        if k is None:
            await self.ctx.step(f"insertText:{ch}", "Input.insertText", {"text": ch},
                                tab=self.tab)
            return
        await self.down(k)
        await self.up(k)


def parse_key(combo: str) -> keys.Chord:
    try:
        return keys.parse_chord(combo)
    except keys.BadKeyError as e:
        raise BskError(
            "invalid_params", f"key: {e}",
            hint="examples: " + ", ".join(keys.EXAMPLES),
            details={"field": "key", "examples": list(keys.EXAMPLES)},
        ) from None


async def focused_state(ctx: ToolContext, tab: Tab) -> dict[str, Any]:
    """Which element has focus and, cheaply, its value (never a password's)."""
    try:
        where = ({"contextId": await isolated_world(ctx, tab, tab.main_frame_id)}
                 if tab.main_frame_id else {})
        answer = await ctx.inspect("Runtime.evaluate", {
            "expression": _FOCUSED, "returnByValue": True, **where}, tab=tab)
    except Exception:
        return {}
    value = answer.get("result", {}).get("value")
    return value if isinstance(value, dict) else {}


@implements("press")
async def press(ctx: ToolContext, params: PressParams) -> dict[str, Any]:
    chord = parse_key(params["key"])
    tab = ctx.tab
    marks = Marks.take(ctx, tab)
    await Keyboard(ctx, tab).press(chord)
    result: dict[str, Any] = {"key": params["key"], "tab_id": tab.tab_id}
    result.update(await after_input(ctx, marks, params["wait_until"]))
    if "navigated" not in result:
        result.update(await focused_state(ctx, tab))
    return result


# The focused field, if typing into it can't change it (read-only or disabled).
_UNTYPABLE = """(() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (el && el.tagName === "IFRAME") return {secret: true};  // its field is out of reach:
  if (!el || !("readOnly" in el)) return null;                // a password, for all we know
  const why = el.disabled ? "element_disabled" : el.readOnly ? "element_readonly" : null;
  if (!why) return {secret: IS_SECRET_FIELD(el)};
  let desc = el.tagName.toLowerCase();
  if (el.id) desc += "#" + el.id;
  return {reason: why, focused: desc};
})()""".replace("IS_SECRET_FIELD", secrets.IS_SECRET_FIELD)


async def refuse_untypable(ctx: ToolContext, tab: Tab) -> bool:
    """Typing into a read-only field sends keys that change nothing: say so, send none.
    True: the focused field takes a secret (a password)."""
    answer = await ctx.inspect("Runtime.evaluate", {"expression": _UNTYPABLE,
                                                    "returnByValue": True}, tab=tab)
    found = answer.get("result", {}).get("value")
    if isinstance(found, dict) and found.get("reason"):
        what = "read-only" if found["reason"] == "element_readonly" else "disabled"
        raise BskError("action_failed", f"the focused {found['focused']} is {what}: "
                       "nothing was typed", hint="focus an editable field first (click "
                       "it), or use `bsk press KEY` for keys that are not text",
                       details={"reason": found["reason"], "focused": found["focused"]},
                       dispatched=Dispatched.NO)
    return isinstance(found, dict) and bool(found.get("secret"))


# The origin of the document whose field has focus, read in BrowserSkill's isolated world
# of the top frame (the page can't forge activeElement there); a cross-origin frame's is
# out of reach: null. MARK: also keep the browser from saving what is typed there
# (secrets.NO_AUTOCOMPLETE).
_FOCUSED_ORIGIN = """(() => {
  let doc = document, el = doc.activeElement;
  for (;;) {
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    if (!el || el.tagName !== "IFRAME") {
      if (MARK && el) NO_AUTOCOMPLETE(el);
      return el ? el.ownerDocument.defaultView.origin : self.origin;
    }
    let inner;
    try { inner = el.contentDocument; } catch (e) { inner = null; }
    if (!inner) return null;
    el = inner.activeElement;
  }
})()"""


async def focused_origin(ctx: ToolContext, tab: Tab, *, mark: bool = False) -> str | None:
    assert tab.main_frame_id is not None
    world = await isolated_world(ctx, tab, tab.main_frame_id)
    expression = _FOCUSED_ORIGIN.replace("MARK", "true" if mark else "false").replace(
        "NO_AUTOCOMPLETE", secrets.NO_AUTOCOMPLETE)
    answer = await ctx.inspect("Runtime.evaluate", {"expression": expression,
                                                    "returnByValue": True,
                                                    "contextId": world}, tab=tab)
    found = answer.get("result", {}).get("value")
    return found if isinstance(found, str) else None


# `type --ref`: the element takes focus first, as a click on it would give it (in its own
# frame's isolated world; inside a shadow root, its root's activeElement says).
_FOCUS = """function() {
  this.focus();
  const active = this.getRootNode().activeElement;
  return {focused: active === this || this.contains(active)};
}"""


@implements("type")
async def type_text(ctx: ToolContext, params: TypeParams) -> dict[str, Any]:
    wanted, stored = secrets.wanted(ctx, params)
    text: str = wanted.replace("\r\n", "\n")
    tab = ctx.tab
    if params["ref"]:
        target = resolve(ctx, params["ref"])
        focus: Any = await call_on(ctx, target, _FOCUS, act=True)
        if not (isinstance(focus, dict) and focus.get("focused")):
            raise BskError("action_failed", f"{params['ref']} did not take focus, so nothing "
                           "was typed", hint="click it first (some widgets focus an inner "
                           "field), or give the field's own ref",
                           details={"reason": "not_focusable", "ref": params["ref"]},
                           dispatched=Dispatched.YES)
    is_password = await refuse_untypable(ctx, tab)
    if stored is not None:
        stored.check_origin(await focused_origin(ctx, tab))
        await focused_origin(ctx, tab, mark=True)
    else:
        secrets.settle(ctx, is_password)
    marks = Marks.take(ctx, tab)
    board = Keyboard(ctx, tab)
    for ch in text:
        await board.type_char(ch)
    result: dict[str, Any] = {"typed": len(text), "tab_id": tab.tab_id}
    result.update(await after_input(ctx, marks, params["wait_until"]))
    if "navigated" not in result:
        result.update(await focused_state(ctx, tab))
    return secrets.masked(result, stored is not None, "value")
