"""`record start` / `record stop FILE`: what happens in a session's tabs — by a person in
the dashboard's live view or by the agent's own tools — as a script of bsk commands
(docs/dashboard.md, "Recording"); `bsk replay FILE` runs it (cli/replay.py).

Invariants: one command per line, each target a locator (snapshot.js `locatorFor`: role
and name where they pick exactly that element, else a unique id, else its exact text,
else a CSS path); the in-page recorder lives in a world of its own ("bsk-recorder") and
reports through a binding only that world has, so a page script can't forge a line; a
password field's value is never written: it becomes `${BSK_SECRET_N}`, which replay takes
from the environment; a stored secret's value becomes `--secret NAME`, which replay
enters from the vault (browserskill/base/vault.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserskill.base import user_files, vault
from browserskill.base.catalog.evidence import PathParams
from browserskill.base.catalog.params import NoParams
from browserskill.base.errors import BskError
from browserskill.browser.link import LinkError
from browserskill.browser.tab import Tab, TabGone
from browserskill.tools.context import ToolContext
from browserskill.tools.output_files import check_writable
from browserskill.tools.registry import implements
from browserskill.tools.roles import ACTIONABLE, REF_ROLES
from browserskill.tools.secrets import IS_SECRET_FIELD
from browserskill.tools.snapshot import _SCRIPT

log = logging.getLogger(__name__)

WORLD = "bsk-recorder"
BINDING = "__bskRecord"
NAVIGATIONS = {"open", "back", "forward", "reload"}  # recorded from the agent's own calls

# Runs in the recorder's world of every document of the tab (main frame).
_RECORDER = """(() => {
  if (window !== window.top) return;
  if (globalThis.__bskRecorder) { globalThis.__bskRecorder.off = false; return; }
  const snap = %(snapshot)s;
  const opts = {refRoles: %(roles)s, actionable: %(actionable)s, prefix: "", next: 1};
  const where = (el) => snap({...opts, describe: el});
  const send = (line) => globalThis.__bskRecorder.off ||
    globalThis.%(binding)s(JSON.stringify(line));
  const NOT_TEXT = ["checkbox", "radio", "file", "submit", "button", "reset", "image",
                    "range", "color"];
  const textual = (el) => el && (el.localName === "textarea" ||
    (el.localName === "input" && !NOT_TEXT.includes(el.type)) || el.isContentEditable);
  const written = new WeakMap();  // field -> the value last recorded
  const valueOf = (el) => el.isContentEditable ? el.innerText : el.value;
  function flush(el) {
    if (!textual(el) || written.get(el) === valueOf(el)) return;
    written.set(el, valueOf(el));
    send({cmd: "fill", target: where(el), value: valueOf(el),
          secret: %(is_secret)s(el)});
  }
  globalThis.__bskRecorder = {off: false, flush: () => flush(document.activeElement)};
  const ACT = "button, a[href], summary, [role], input, select, textarea, label";
  document.addEventListener("click", (e) => {
    if (!(e.target instanceof Element)) return;
    const el = e.target.closest(ACT) || e.target;
    const box = el.localName === "label" ? el.control : el;
    if (box && box.localName === "input" && ["checkbox", "radio", "file"].includes(box.type))
      return;  // its change event says what happened (check, uncheck, upload)
    if (textual(el) || el.localName === "select" || el.localName === "option") return;
    send({cmd: "click", target: where(el)});
  }, true);
  document.addEventListener("change", (e) => {
    const el = e.target;
    if (!(el instanceof Element)) return;
    if (el.localName === "select")
      send({cmd: "select", target: where(el), values: [...el.selectedOptions].map(o => o.value)});
    else if (el.type === "checkbox")
      send({cmd: el.checked ? "check" : "uncheck", target: where(el)});
    else if (el.type === "radio") send({cmd: "check", target: where(el)});
    else if (el.type === "file")
      send({cmd: "upload", target: where(el), files: [...el.files].map(f => f.name)});
    else flush(el);
  }, true);
  document.addEventListener("keydown", (e) => {
    if (!["Enter", "Escape", "Tab"].includes(e.key) || e.isComposing) return;
    flush(e.target);  // the value typed so far goes first
    send({cmd: "press", key: e.key});
  }, true);
})()"""


def recorder_source() -> str:
    return _RECORDER % {"snapshot": _SCRIPT.strip().rstrip(";"),
                        "roles": json.dumps(sorted(REF_ROLES)),
                        "actionable": json.dumps(sorted(ACTIONABLE)), "binding": BINDING,
                        "is_secret": IS_SECRET_FIELD}


class Recording:
    """A session's recording: its lines so far and the tabs it listens to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.secrets = 0
        self.tabs: dict[str, tuple[Tab, str]] = {}  # tab id -> (tab, new-document script)

    def add(self, event: dict[str, Any]) -> None:
        cmd = event.get("cmd")
        target = event.get("target")
        if cmd == "fill" and isinstance(target, str):
            value = str(event.get("value", ""))
            stored = vault.name_of(value)
            if stored is not None:  # a stored secret (`fill --secret`): named, not written
                self._line("fill", target, "--secret", stored)
                return
            if event.get("secret"):
                self.secrets += 1
                value = f"${{BSK_SECRET_{self.secrets}}}"
                self.lines.append(f"# a password: replay takes it from $BSK_SECRET_{self.secrets}")
            self._line("fill", target, value)
        elif cmd in ("click", "check", "uncheck") and isinstance(target, str):
            self._line(cmd, target)
        elif cmd == "select" and isinstance(target, str):
            self._line("select", target, *map(str, event.get("values") or []))
        elif cmd == "press" and isinstance(event.get("key"), str):
            self._line("press", event["key"])
        elif cmd == "upload" and isinstance(target, str):
            names = [str(n) for n in event.get("files") or []]
            self.lines.append("# upload: the page saw only the files' names; give their paths")
            self._line("upload", target, *names)

    def agent_did(self, tool: str, params: dict[str, Any], result: dict[str, Any]) -> None:
        """An agent's completed call that the page alone can't tell (navigations, the
        files an upload took)."""
        if tool == "open":
            self._line("open", str(result.get("url") or params["url"]))
        elif tool in NAVIGATIONS:
            self._line(tool)
        elif tool == "upload":
            for i in range(len(self.lines) - 1, -1, -1):  # the page's line, with the paths
                if self.lines[i].startswith("upload "):
                    target = shlex.split(self.lines[i])[1]
                    self.lines[i] = shlex.join(["upload", target, *params["files"]])
                    if i and self.lines[i - 1].startswith("# upload"):
                        del self.lines[i - 1]
                    break

    def _line(self, *words: str) -> None:
        self.lines.append(shlex.join(words))

    def on_event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.bindingCalled" and params.get("name") == BINDING:
            try:
                self.add(json.loads(params.get("payload") or "{}"))
            except (ValueError, TypeError) as e:
                log.info("recorder sent %r: %s", vault.scrub_text(str(params.get("payload"))),
                         e)

    async def follow(self, tabs: list[Tab]) -> None:
        """Listen in every tab of the session (new ones since the last look too)."""
        for tab in tabs:
            known = self.tabs.get(tab.tab_id)
            if tab.gone or (known is not None and known[0] is tab):
                continue
            with contextlib.suppress(LinkError, TabGone):
                self.tabs[tab.tab_id] = (tab, await _install(tab))
                tab.listeners.append(self.on_event)

    async def finish(self, tabs: list[Tab]) -> None:
        """Flush a field being typed in, stop listening, take the recorder out."""
        for tab_id, (tab, script) in list(self.tabs.items()):
            if self.on_event in tab.listeners:
                with contextlib.suppress(LinkError, TabGone):
                    await _evaluate(tab, "globalThis.__bskRecorder?.flush(); "
                                         "if (globalThis.__bskRecorder) "
                                         "globalThis.__bskRecorder.off = true")
                tab.listeners.remove(self.on_event)
            with contextlib.suppress(LinkError, TabGone):
                await tab.send("Page.removeScriptToEvaluateOnNewDocument",
                               {"identifier": script}, timeout=5)
                await tab.send("Runtime.removeBinding", {"name": BINDING}, timeout=5)
            del self.tabs[tab_id]

    def script(self) -> str:
        head = ["# bsk script recorded by `bsk record`; run it with `bsk replay FILE`.",
                "# One command per line, as typed after `bsk`; ${VAR} comes from the "
                "environment."]
        return "\n".join(head + self.lines) + "\n"


async def _evaluate(tab: Tab, expression: str) -> Any:
    assert tab.main_frame_id is not None
    world = await tab.send("Page.createIsolatedWorld", {"frameId": tab.main_frame_id,
                                                        "worldName": WORLD}, timeout=5)
    return await tab.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "contextId": world["executionContextId"]},
                          timeout=5)


async def _install(tab: Tab) -> str:
    """The recorder in the tab's current document and every later one; its script id."""
    await tab.send("Runtime.addBinding", {"name": BINDING, "executionContextName": WORLD},
                   timeout=5)
    source = recorder_source()
    added = await tab.send("Page.addScriptToEvaluateOnNewDocument",
                           {"source": source, "worldName": WORLD}, timeout=5)
    await _evaluate(tab, source)
    return str(added["identifier"])


@dataclass
class ScriptRecording:
    """A session's script being recorded, from `record start` to `record stop`."""

    script: Recording | None = None


async def after_call(ctx: ToolContext, params: dict[str, Any],
                     result: dict[str, Any]) -> None:
    """Every completed call (tools/call_hooks.py): a recording session notes what the
    page alone can't tell, and listens in the tabs the call opened."""
    recording = ctx.feature(ScriptRecording).script
    if recording is not None:
        recording.agent_did(ctx.tool, params, result)
        await recording.follow(list(ctx.session.tabs.values()))


@implements("record_start")
async def record_start(ctx: ToolContext, params: NoParams) -> dict[str, Any]:
    session = ctx.session
    state = ctx.feature(ScriptRecording)
    if state.script is not None:
        raise BskError("invalid_params", "session: this session is already recording",
                       hint="`bsk record stop FILE` writes what it has so far",
                       details={"field": "session"})
    recording = Recording()
    current = session.tabs.get(session.current_tab_id or "")
    if current is not None and current.url.split(":", 1)[0] in ("http", "https", "file"):
        # The page it starts on: a replay in another session (a fresh tab) begins there too.
        recording.agent_did("open", {"url": current.url}, {})
    state.script = recording
    await recording.follow(list(session.tabs.values()))
    return {"recording": True, "tabs": sorted(recording.tabs)}


@implements("record_stop")
async def record_stop(ctx: ToolContext, params: PathParams) -> dict[str, Any]:
    session = ctx.session
    path = Path(params["path"])
    check_writable(path)
    state = ctx.feature(ScriptRecording)
    recording = state.script
    if recording is None:
        raise BskError("invalid_params", "session: this session is not recording",
                       hint="start with `bsk record start`", details={"field": "session"})
    await recording.finish(list(session.tabs.values()))
    state.script = None
    text = recording.script()
    try:
        await user_files.write_file(path, text.encode())
    except BaseException:  # refused, failed or past its deadline
        state.script = recording  # nothing lost: stop again with another path
        raise
    commands = [line for line in recording.lines if not line.startswith("#")]
    return {"path": str(path), "commands": len(commands), "secrets": [
        f"BSK_SECRET_{i}" for i in range(1, recording.secrets + 1)], "script": text}
