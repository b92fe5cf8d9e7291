"""Form tools — fill, select, check, uncheck, upload — acting on refs.

Each first asks the element (without changing anything) whether the action fits it, so
a wrong target fails with `action_failed` and `dispatched: "no"`. `fill` enters text as
real input (`Input.insertText` after focusing and selecting the old value), `check`
clicks like a user would; `select` and `upload` set the state the browser's own pickers
would set and fire the same events. Results carry the element's new value or state.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from browserskill.base import user_files
from browserskill.base.catalog.forms import CheckParams, FillParams, SelectParams, UploadParams
from browserskill.base.contract import SECRET_MASK, Dispatched
from browserskill.base.errors import BskError, invalid
from browserskill.browser import keys
from browserskill.browser.link import LinkError
from browserskill.tools import secrets
from browserskill.tools.context import ToolContext
from browserskill.tools.input import Marks, after_input, click_at
from browserskill.tools.keyboard import Keyboard
from browserskill.tools.pointer import Pointer, point_for
from browserskill.tools.refs import Resolved, call_on, element_handle, resolve
from browserskill.tools.registry import implements

log = logging.getLogger(__name__)

# -- fill ------------------------------------------------------------------------------

# What kind of text target this is, or why it is not one. Changes nothing.
_FILL_KIND = """function() {
  const el = this;
  const secret = IS_SECRET_FIELD(el);
  const tag = el.tagName ? el.tagName.toLowerCase() : "#" + el.nodeName;
  const typing = ["", "text", "search", "url", "tel", "email", "password", "number"];
  const setting = ["date", "time", "datetime-local", "month", "week", "color", "range"];
  let mode;
  if (tag === "input") {
    if (typing.includes(el.type)) mode = "type";  // unknown types read as "text"
    else if (setting.includes(el.type)) mode = "set";
    else return {error: "not_editable", why: `<input type=${el.type}> takes no text`};
  } else if (tag === "textarea") {
    mode = "type";
  } else if (el.isContentEditable) {
    mode = "editable";
  } else if (tag === "label" && el.control) {  // `text=Volume` finds the words, not the field
    const c = el.control, what = c.localName + (c.type ? ` type=${c.type}` : "") +
      (c.id ? ` id=${c.id}` : "");
    return {error: "not_editable", labels: true,
            why: `<label> is not a text field: it labels <${what}>`};
  } else {
    return {error: "not_editable", why: `<${tag}> is not a text field or contenteditable`};
  }
  if (mode !== "editable") {
    if (el.disabled) return {error: "element_disabled", why: "it is disabled"};
    if (el.readOnly) return {error: "element_readonly", why: "it is read-only"};
  }
  const style = getComputedStyle(el);
  const boxes = [...el.getClientRects()].filter(r => r.width > 0 && r.height > 0);
  if (!boxes.length || style.visibility === "hidden")
    return {error: "not_visible", why: "it is hidden or has no size"};
  return {mode, secret, origin: self.origin};  // this world's global: the frame's own
}""".replace("IS_SECRET_FIELD", secrets.IS_SECRET_FIELD)

# Focus the element and select all of its content, so inserted text replaces it.
_FOCUS_SELECT = """function() {
  this.scrollIntoView({block: "center", inline: "nearest", behavior: "instant"});
  this.focus({preventScroll: true});
  const root = this.getRootNode();
  let active = root.activeElement || document.activeElement;
  const focused = active === this || (this.isContentEditable && this.contains(active));
  if (!focused) return {focused: false};
  if ("value" in this && (this.tagName === "INPUT" || this.tagName === "TEXTAREA")) {
    this.select();
    return {focused: true, before: this.value};
  }
  const range = document.createRange();
  range.selectNodeContents(this);
  const sel = (root.getSelection ? root : window).getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  return {focused: true, before: this.innerText};
}"""

# After the input: the new value. A field whose value changed commits it the way a user
# does, by leaving it (the browser fires `change`, once), and takes focus back so that a
# following `press Enter` still goes to it — except a field that suggests as you type
# (a combobox, aria-autocomplete, a datalist, or the browser's own suggestions turned off,
# as jQuery UI, Select2 and typeahead libraries do for theirs): leaving it would close or
# cancel its suggestions (jQuery UI's autocomplete drops its pending search on blur), so
# it is left focused, as a person typing into it is, and `change` comes when they leave.
_FILL_DONE = """function(before) {
  if ("value" in this && (this.tagName === "INPUT" || this.tagName === "TEXTAREA")) {
    const root = this.getRootNode();
    const suggests = this.getAttribute("role") === "combobox" || this.hasAttribute("list")
      || ["list", "both", "inline"].includes(this.getAttribute("aria-autocomplete"))
      || (this.getAttribute("autocomplete") || "").trim().toLowerCase() === "off";
    if (this.value !== before && !suggests
        && (root.activeElement || document.activeElement) === this) {
      this.blur();
      this.focus({preventScroll: true});
    }
    return {value: this.value};
  }
  return {value: this.innerText};
}"""

# Inputs without a text caret (date, color, range): set the value as their picker does.
_FILL_SET = """function(text) {
  const before = this.value;
  this.focus();
  this.value = text;
  if (this.value !== text) {
    this.value = before;
    return {error: "invalid_value", value: before};
  }
  this.dispatchEvent(new Event("input", {bubbles: true, composed: true}));
  this.dispatchEvent(new Event("change", {bubbles: true}));
  return {value: this.value};
}"""


def _not_editable(ref: str, verdict: dict[str, Any]) -> BskError:
    reason = verdict.get("error", "not_editable")
    hint = {"not_editable": "fill the field itself: its ref in `bsk snapshot`, or a role "
                            "locator naming it (role=textbox[name=\"…\"])"
            if verdict.get("labels") else
            "fill takes a text input, textarea or contenteditable element: check the ref "
            "with `bsk snapshot`",
            "element_disabled": "nothing was sent; if the page enables it once something "
                                "is done, do that or wait for it first (some stay disabled)",
            "element_readonly": f"nothing was sent; a read-only field takes no input — a "
                                f"date or color picker's opens when clicked (`bsk click "
                                f"{ref}`), then pick from it"}.get(
        reason, "scroll or open what hides it, then snapshot again")
    return BskError("action_failed", f"{ref} can't be filled: {verdict.get('why', reason)}",
                    hint=hint, details={"reason": reason, "ref": ref}, dispatched=Dispatched.NO)


@implements("fill")
async def fill(ctx: ToolContext, params: FillParams) -> dict[str, Any]:
    ref = params["ref"]
    text, stored = secrets.wanted(ctx, params)
    target = resolve(ctx, ref)
    # In BrowserSkill's isolated world of the field's own frame: the page can't forge it.
    kind: Any = await call_on(ctx, target, _FILL_KIND)
    if not isinstance(kind, dict) or kind.get("error"):
        raise _not_editable(ref, kind if isinstance(kind, dict) else {})
    if stored is not None:
        stored.check_origin(kind.get("origin"))
        await call_on(ctx, target, f"function() {{ {secrets.NO_AUTOCOMPLETE}(this); }}",
                      act=True)
    secret = stored is not None or bool(kind.get("secret"))
    if stored is None:
        secrets.settle(ctx, secret)
    result: dict[str, Any] = {"ref": ref, "tab_id": target.tab.tab_id}
    if kind["mode"] == "set":
        done: Any = await call_on(ctx, target, _FILL_SET, text, act=True)
        if done.get("error"):
            shown = SECRET_MASK if secret else repr(text)
            raise BskError("action_failed", f"{ref} does not accept {shown}",
                           hint="use the format the field expects (e.g. 2024-05-31, #ff0000)",
                           details={"reason": "invalid_value", "ref": ref,
                                    "value": done.get("value")}, dispatched=Dispatched.NO)
    else:
        focus: Any = await call_on(ctx, target, _FOCUS_SELECT, act=True)
        if not focus.get("focused"):
            raise BskError("action_failed", f"{ref} did not take focus, so it can't be filled",
                           hint="something on the page keeps focus elsewhere; snapshot again",
                           details={"reason": "not_focusable", "ref": ref},
                           dispatched=Dispatched.YES)
        tab = target.tab
        if text:
            await ctx.step("insertText", "Input.insertText", {"text": text}, tab=tab)
        else:
            await Keyboard(ctx, tab).press(keys.parse_chord("Delete"))
        done = await call_on(ctx, target, _FILL_DONE, focus.get("before", ""), act=True)
    value = done.get("value", "")
    result["value"] = value[:1000]
    expected = text.replace("\r\n", "\n")
    if kind["mode"] == "editable":
        value, expected = value.strip(), expected.strip()
    result["matches"] = value == expected
    if not result["matches"]:
        result["note"] = "the field's value differs from TEXT (a length limit, mask or format)"
    return secrets.masked(result, secret, "value")


# -- select ----------------------------------------------------------------------------

_SELECT = """function(wanted, apply) {
  if (this.tagName !== "SELECT") {
    const tag = this.tagName ? this.tagName.toLowerCase() : this.nodeName;
    const role = this.getAttribute ? this.getAttribute("role") : null;
    const combo = ["combobox", "listbox", "button"].includes(role) || tag === "button"
      || (this.hasAttribute && this.hasAttribute("aria-haspopup"));
    return {error: "not_a_select", why: `<${tag}> is not a <select>`, combo};
  }
  if (this.disabled) return {error: "element_disabled", why: "it is disabled"};
  // A library's combobox hides the <select> it replaces (display: none, or 1 px clipped
  // "for accessibility") and does not watch it: choosing there changes what it won't show.
  const box = this.getBoundingClientRect(), style = getComputedStyle(this);
  if (style.display === "none" || style.visibility === "hidden"
      || box.width < 2 || box.height < 2)
    return {error: "select_hidden", why: "the page hides it and shows a control of its own"};
  const options = [...this.options];
  const listed = options.slice(0, 200).map(o => {
    const d = {value: o.value, label: o.label};
    if (o.disabled) d.disabled = true;
    return d;
  });
  const picked = [], missing = [], disabled = [];
  for (const w of wanted) {
    const o = options.find(o => o.value === w) || options.find(o => o.label === w)
      || options.find(o => o.label.trim().toLowerCase() === w.trim().toLowerCase());
    if (!o) missing.push(w);
    else if (o.disabled) disabled.push(w);
    else if (!picked.includes(o)) picked.push(o);
  }
  if (missing.length) return {error: "option_missing", missing, options: listed,
                              count: options.length};
  if (disabled.length) return {error: "option_disabled", disabled, options: listed,
                               count: options.length};
  if (!this.multiple && picked.length > 1) return {error: "not_multiple"};
  if (!apply) return {ok: true};
  const before = options.map(o => o.selected).join();
  for (const o of options) o.selected = picked.includes(o);
  this.dispatchEvent(new Event("input", {bubbles: true, composed: true}));
  this.dispatchEvent(new Event("change", {bubbles: true}));
  const now = options.filter(o => o.selected);
  return {values: now.map(o => o.value), labels: now.map(o => o.label),
          changed: before !== options.map(o => o.selected).join()};
}"""


@implements("select")
async def select(ctx: ToolContext, params: SelectParams) -> dict[str, Any]:
    ref, wanted = params["ref"], params["values"]
    target = resolve(ctx, ref)
    check: Any = await call_on(ctx, target, _SELECT, wanted, False)
    if check.get("error"):
        raise _select_error(ref, wanted, check)
    done: Any = await call_on(ctx, target, _SELECT, wanted, True, act=True)
    if done.get("error"):  # the options changed between the check and the change
        raise _select_error(ref, wanted, done)
    return {"ref": ref, "tab_id": target.tab.tab_id, "values": done["values"],
            "labels": done["labels"], "changed": done["changed"]}


def _select_error(ref: str, wanted: list[str], v: dict[str, Any]) -> BskError:
    reason = v["error"]
    details: dict[str, Any] = {"reason": reason, "ref": ref}
    if reason == "option_missing":
        details.update(missing=v["missing"], options=v["options"], option_count=v["count"])
        shown = ", ".join(f"{o['value']!r} ({o['label']})" if o["label"] != o["value"]
                          else repr(o["value"]) for o in v["options"][:20])
        more = f", … {v['count'] - 20} more" if v["count"] > 20 else ""
        return BskError("action_failed",
                        f"{ref} has no option {', '.join(map(repr, v['missing']))}; "
                        f"options: {shown}{more}",
                        hint="pass an option's value or label as listed",
                        details=details, dispatched=Dispatched.NO)
    if reason == "option_disabled":
        details.update(disabled=v["disabled"], options=v["options"])
        return BskError("action_failed", f"option {', '.join(map(repr, v['disabled']))} of "
                        f"{ref} is disabled", details=details, dispatched=Dispatched.NO)
    if reason == "not_multiple":
        return invalid("values", f"{ref} takes one option, got {len(wanted)}")
    hint = "select takes a <select> element; check the ref with `bsk snapshot`"
    if reason == "not_a_select" and v.get("combo"):
        hint = (f"this is the page's own control, not a <select>: click it (`bsk click "
                f"{ref}`), then click the option it lists")
    elif reason == "select_hidden":
        hint = ("click the control the page shows for it (a combobox near it in `bsk "
                "snapshot`), then click the option it lists")
    return BskError("action_failed", f"{ref} can't be selected from: {v.get('why', reason)}",
                    hint=hint, details=details, dispatched=Dispatched.NO)


# -- check / uncheck -------------------------------------------------------------------

_CHECK_STATE = """function() {
  const el = this;
  if (el.tagName === "INPUT" && (el.type === "checkbox" || el.type === "radio"))
    return {kind: el.type, checked: el.checked, disabled: el.disabled};
  const role = el.getAttribute && el.getAttribute("role");
  if (["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"].includes(role)) {
    const a = el.getAttribute("aria-checked");
    return {kind: role, checked: a === "true" ? true : a === "mixed" ? "mixed" : false,
            disabled: el.getAttribute("aria-disabled") === "true"};
  }
  const tag = el.tagName ? el.tagName.toLowerCase() : el.nodeName;
  const what = `<${tag}${role ? ` role=${role}` : ""}>`;
  return {kind: null, why: `${what} is not a checkbox, radio or switch`};
}"""


async def _set_checked(ctx: ToolContext, params: CheckParams, want: bool) -> dict[str, Any]:
    ref = params["ref"]
    target = resolve(ctx, ref)
    state: Any = await call_on(ctx, target, _CHECK_STATE)
    if not state.get("kind"):
        raise BskError("action_failed", f"{ref} can't be {'checked' if want else 'unchecked'}:"
                       f" {state.get('why')}", hint="check the ref with `bsk snapshot`",
                       details={"reason": "not_checkable", "ref": ref}, dispatched=Dispatched.NO)
    result: dict[str, Any] = {"ref": ref, "tab_id": target.tab.tab_id, "kind": state["kind"]}
    if state["checked"] is want:
        return {**result, "checked": want, "changed": False}
    if state.get("disabled"):
        raise BskError("action_failed", f"{ref} is disabled", details={
            "reason": "element_disabled", "ref": ref, "checked": state["checked"]},
            dispatched=Dispatched.NO)
    if not want and state["kind"] in ("radio", "menuitemradio"):
        raise BskError("action_failed", f"{ref} is a radio button: check another option of "
                       "its group instead", details={"reason": "not_checkable", "ref": ref},
                       dispatched=Dispatched.NO)
    tab = target.tab
    x, y = await _click_point(ctx, target)
    marks = Marks.take(ctx, tab)
    await click_at(ctx, tab, x, y, button="left", count=1, modifiers=0)
    ctx.feature(Pointer).hover = None
    result.update(await after_input(ctx, marks, "load"))
    if result.get("navigated"):
        return {**result, "changed": True}
    after: Any = await call_on(ctx, target, _CHECK_STATE)
    result.update(checked=after["checked"], changed=after["checked"] != state["checked"])
    if after["checked"] is not want:
        raise BskError("action_failed", f"clicking {ref} did not make it "
                       f"{'checked' if want else 'unchecked'} (the page handled the click)",
                       hint="snapshot to see the page's state",
                       details={"reason": "state_unchanged", "ref": ref,
                                "checked": after["checked"]}, dispatched=Dispatched.YES)
    return result


async def _click_point(ctx: ToolContext, target: Resolved) -> tuple[float, float]:
    """A hidden checkbox (a styled one) is clicked through its label, as a user would."""
    try:
        return await point_for(ctx, target)
    except BskError as e:
        if e.details.get("reason") != "not_visible":
            raise
        return await point_for(ctx, target, via_label=True)


@implements("check")
async def check(ctx: ToolContext, params: CheckParams) -> dict[str, Any]:
    return await _set_checked(ctx, params, True)


@implements("uncheck")
async def uncheck(ctx: ToolContext, params: CheckParams) -> dict[str, Any]:
    return await _set_checked(ctx, params, False)


# -- upload ----------------------------------------------------------------------------

CHOOSER_WAIT_S = 2.0  # a click's chooser opens at once; a page that waits longer is rare

_FILE_INPUT = """function() {
  // Not a form field: maybe what opens a chooser (a button, a label, a drop zone).
  if (!["INPUT", "TEXTAREA", "SELECT"].includes(this.tagName)) return {chooser: true};
  if (this.tagName !== "INPUT" || this.type !== "file") {
    const tag = this.tagName ? this.tagName.toLowerCase() : this.nodeName;
    const type = this.tagName === "INPUT" ? ` type=${this.type}` : "";
    return {error: "not_file_input", why: `<${tag}${type}> is not a file input`};
  }
  if (this.disabled) return {error: "element_disabled", why: "it is disabled"};
  return {multiple: this.multiple, accept: this.accept};
}"""
_FILES = """function() {
  return [...this.files].map(f => ({name: f.name, size: f.size, type: f.type}));
}"""


@implements("upload")
async def upload(ctx: ToolContext, params: UploadParams) -> dict[str, Any]:
    ref, files = params["ref"], params["files"]
    for f in files:
        if not os.path.isabs(f):
            raise invalid("files", f"{f!r} must be an absolute path (the CLI makes it so)")
        # The browser reads it (streamed, when the page does): only a regular file, as
        # a FIFO or a device would hang or flood it (browserskill/base/user_files.py).
        await user_files.in_worker(user_files.check_regular, f, "files")
    target = resolve(ctx, ref)
    kind: Any = await call_on(ctx, target, _FILE_INPUT)
    if kind.get("chooser"):  # a button, label or drop zone: the chooser it opens
        return await _upload_through_chooser(ctx, target, ref, files)
    if kind.get("error"):
        raise BskError("action_failed", f"{ref} can't take files: {kind['why']}",
                       hint="upload takes an <input type=file>, or the button or label "
                            "that opens its file chooser; check the ref with `bsk snapshot`",
                       details={"reason": kind["error"], "ref": ref}, dispatched=Dispatched.NO)
    if len(files) > 1 and not kind["multiple"]:
        raise invalid("files", f"{ref} takes one file, got {len(files)}")
    node = await element_handle(ctx, target)
    await ctx.act("DOM.setFileInputFiles", {"files": files, "objectId": node},
                  tab=target.tab, session_id=target.session_id)
    chosen = await call_on(ctx, target, _FILES)
    return {"ref": ref, "tab_id": target.tab.tab_id, "files": chosen}


async def _upload_through_chooser(ctx: ToolContext, target: Resolved, ref: str,
                                  files: list[str]) -> dict[str, Any]:
    """An element that is no file input but opens a file chooser when clicked (a
    "Select file" button over a hidden input, a label, a drop zone), as a person picks
    files: the chooser is intercepted (`Page.setInterceptFileChooserDialog`), the element
    clicked for real, and the files set on the input the chooser was opened for. No
    chooser within CHOOSER_WAIT_S: the click happened, and the answer says so."""
    tab, sid = target.tab, target.session_id
    opened: list[dict[str, Any]] = []

    def on_event(session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "Page.fileChooserOpened" and session_id == sid:
            opened.append(params)

    tab.listeners.append(on_event)
    await ctx.inspect("Page.setInterceptFileChooserDialog", {"enabled": True}, tab=tab,
                      session_id=sid)
    try:
        x, y = await point_for(ctx, target, enabled_only=True)
        await click_at(ctx, tab, x, y, button="left", count=1, modifiers=0)
        ctx.feature(Pointer).hover = None  # the mouse is here now
        try:
            chooser = await tab.until(lambda: opened[0] if opened else None,
                                      min(CHOOSER_WAIT_S, ctx.remaining()))
        except TimeoutError:
            raise BskError(
                "action_failed", f"{ref} was clicked, but no file chooser opened",
                hint="upload takes an <input type=file> or an element that opens a file "
                     "chooser when clicked; look in `bsk snapshot` for the one that does "
                     "(or `bsk find --css 'input[type=file]'`)",
                details={"reason": "no_file_chooser", "ref": ref},
                dispatched=Dispatched.YES) from None
    finally:
        tab.listeners.remove(on_event)
        if not tab.gone:
            try:
                await ctx.inspect("Page.setInterceptFileChooserDialog", {"enabled": False},
                                  tab=tab, session_id=sid)
            except (LinkError, TimeoutError) as e:  # the next chooser then opens nowhere
                log.info("file chooser interception left on in %s: %s", tab.tab_id, e)
    if len(files) > 1 and chooser.get("mode") != "selectMultiple":
        raise BskError("action_failed", f"the file chooser {ref} opened takes one file, "
                       f"got {len(files)}", hint="give one file",
                       details={"reason": "single_file_chooser", "ref": ref},
                       dispatched=Dispatched.YES)
    node = chooser.get("backendNodeId")
    if node is None:  # a chooser opened by no input (showOpenFilePicker): nothing to set
        raise BskError("action_failed", f"{ref} opened a file picker that is not a file "
                       "input's", hint="this page picks files in a way bsk can't answer",
                       details={"reason": "not_file_input_chooser", "ref": ref},
                       dispatched=Dispatched.YES)
    await ctx.act("DOM.setFileInputFiles", {"files": files, "backendNodeId": node},
                  tab=tab, session_id=sid)
    handle = (await ctx.inspect("DOM.resolveNode", {"backendNodeId": node}, tab=tab,
                                session_id=sid))["object"]["objectId"]
    chosen = (await ctx.inspect("Runtime.callFunctionOn", {
        "objectId": handle, "functionDeclaration": _FILES, "returnByValue": True},
        tab=tab, session_id=sid))["result"].get("value")
    return {"ref": ref, "tab_id": tab.tab_id, "files": chosen, "via": "file_chooser"}
