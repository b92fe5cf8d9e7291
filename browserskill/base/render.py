"""The human text of a result or a failure, shared by the `bsk` CLI and the MCP server.

Neither surface owns it: the CLI prints it (`base/cli_render.py`), the MCP server sends it
as a tool's text content (`mcp_server.py`). A tool's renderer sits beside its spec in
its catalog family (browserskill/base/catalog/); here are the control commands' (session,
daemon, op, secret, extension, …), `batch`'s (each step as its own command prints it),
and what every answer shares: the effects line, a failure's text. Stdlib only.
"""

from __future__ import annotations

import json

from browserskill.base import catalog
from browserskill.base.boundaries import first_line
from browserskill.base.catalog.text import SCOPE, Words, effect_lines
from browserskill.base.contract import Status
from browserskill.base.effects import effects_line
from browserskill.base.errors import CODES

TYPE_CHECKING = False  # typing costs ms at the CLI's start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer

__all__ = ["RENDERERS", "Words", "error_text", "one_line", "result_text", "with_effects"]


def result_text(words: Words, answer: dict[str, Any]) -> str:
    """The human text of a completed answer (the MCP server sends the same text)."""
    body = answer.get("result") if "op_id" in answer else answer
    if isinstance(body, dict) and body.get("dialog") and set(body) <= {"dialog", "note",
                                                                         "effects"}:
        # Any action can end this way: it ran, and the page answered with a dialog.
        return with_effects(f"{' '.join(words) or 'done'}: done; the page now shows a "
                            "dialog" + effect_lines(body), body)
    renderer = RENDERERS.get(words, _generic)
    return with_effects(renderer(body if isinstance(body, dict) else {"value": body}), body)


def with_effects(text: str, body: Any) -> str:
    """An action's text with what it was seen to do (`result.effects`) on its first line,
    or on a line of its own when that one is long (browserskill/base/effects.py)."""
    effects = body.get("effects") if isinstance(body, dict) else None
    if not isinstance(effects, dict):
        return text
    line = effects_line(effects)
    if not line:
        return text
    first, sep, rest = first_line(text)
    joint = " — " if effects.get("none") else " → "
    if len(first) + len(line) > 110:
        return f"{first}\n{joint.strip()} {line}{sep}{rest}"
    return f"{first}{joint}{line}{sep}{rest}"


def _ended(status: Any, code: Any) -> str:
    """`failed [ref_not_found]`; the status alone where the code repeats it (`cancelled`)."""
    return str(status) if code == status else f"{status} [{code}]"


def error_text(answer: dict[str, Any]) -> str:
    """A failure in a few lines: code, message, hint, holder, what reached the browser."""
    error = answer["error"]
    code = error.get("code", "internal")
    status = answer.get("status") or "failed"
    lines = [f"bsk: {_ended(status, code)}: {error.get('message', '')}"]
    if error.get("hint"):
        lines.append(f"  hint: {error['hint']}")
    details = error.get("details") or {}
    holder = details.get("holder")
    if holder:
        who = "a person, " if holder.get("holder") == "person" else ""
        lines.append(f"  held by: {who}{holder['tool']} {holder['op_id']} ({holder['state']}, "
                     f"{holder['age_s']}s)")
    if details.get("steps_sent"):
        lines.append(f"  input steps sent: {', '.join(details['steps_sent'])}")
    for c in details.get("candidates") or ():  # an ambiguous WebMCP tool name
        lines.append(f"  candidate: {c.get('tool_ref')}  {c.get('frame_url', '')}")
    if details.get("invocation_id"):
        lines.append(f"  webmcp invocation: {details['invocation_id']}"
                     f" (tool started: {'yes' if details.get('tool_started') else 'no'})")
    default = CODES.get(code, CODES["internal"]).dispatched
    facts = [f"dispatched: {answer.get('dispatched', default)}",
             f"retry_safe: {'yes' if answer.get('retry_safe') else 'no'}"]
    steps = (answer.get("result") or {}).get("steps") if answer.get("tool") == "batch" \
        and isinstance(answer.get("result"), dict) else None
    if steps:
        lines += _batch_facts(answer, steps, facts)
    else:
        if answer.get("op_id"):
            facts.append(f"op: {answer['op_id']}")
        lines.append("  " + " · ".join(facts))
    return "\n".join(lines)


def _batch_facts(answer: dict[str, Any], steps: list[dict[str, Any]],
                 batch: list[str]) -> list[str]:
    """A batch's footer: the step that stopped it with its own op id, dispatched and
    retry_safe, then the batch's overall (any step dispatched; safe only if all were) —
    never one's op id beside the other's dispatched."""
    stopped = next((s for s in steps if s.get("sent", True)
                    and s.get("status") != "completed"), None)
    if stopped is not None:
        own = [f"dispatched: {stopped.get('dispatched')}",
               f"retry_safe: {'yes' if stopped.get('retry_safe') else 'no'}"]
        if stopped.get("op_id"):
            own.append(f"op: {stopped['op_id']}")
        return [f"  step {stopped.get('step')}: " + " · ".join(own),
                "  batch: " + " · ".join(batch)]
    unsent = next((s for s in steps if s.get("sent") is False), None)
    last = next((s for s in reversed(steps) if s.get("op_id")), None)
    if last is not None:
        batch = [*batch, f"op: {last['op_id']} (step {last.get('step')}, the last sent)"]
    head = [f"  step {unsent.get('step')} and after: not sent"] if unsent else []
    return [*head, "  batch: " + " · ".join(batch)]


# -- the control commands' text, and batch's --------------------------------------------


def _generic(r: dict[str, Any]) -> str:
    return json.dumps(r, indent=2, ensure_ascii=False)


def _json(r: dict[str, Any]) -> str:
    """A command whose answer is a JSON document to use as such (`bsk openapi`): the
    same text as --json."""
    return json.dumps(r, indent=2, ensure_ascii=False)


def one_line(summary: str) -> str:
    """A summary's first sentence, as `bsk --help` lists a command."""
    return summary.split(". ")[0].rstrip(".")


def _health(r: dict[str, Any]) -> str:
    return (f"ok: the daemon answers (version {r.get('version')})" if r.get("ok")
            else f"not ok: {r}")


def _tools(r: dict[str, Any]) -> str:
    """The catalog the daemon serves, one line per tool as `bsk --help` lists the browser
    tools, with its API name and effect (--json: the input schemas too)."""
    tools = r.get("tools") or []
    lines = [f"Browser tools ({len(tools)}; bsk COMMAND --help for one, --json for their "
             "input schemas):"]
    for t in tools:
        spec = catalog.BY_NAME.get(t.get("name", ""))
        usage = spec.usage() if spec is not None else t.get("cli", "")
        lines.append(f"  {usage:<26} {one_line(t.get('summary', ''))}  "
                     f"[{t.get('name')}, {t.get('effect')}]")
    return "\n".join(lines)


def _browsers(r: dict[str, Any]) -> str:
    if not r.get("listening"):
        return "no extension listener: " + r.get("hint", "start the daemon with "
                                                 "--extension-port PORT")
    rows = [f"{'*' if b.get('connected') else ' '} {b['browser_id']}  "
            f"{b.get('label') or '-'}  {b.get('name', '')} {b.get('version', '')}  "
            f"sessions: {', '.join(b.get('sessions') or []) or 'none'}"
            + ("" if b.get("connected") else "  [disconnected]")
            for b in r.get("browsers", [])]
    return "\n".join(rows) or f"(no browser connected on port {r.get('port')})"


def _policy(r: dict[str, Any]) -> str:
    """`policy show`: the person's policy, a line per kind of rule, then the sessions that
    narrowed it (--json: the same as data)."""
    p = r.get("policy") or {}
    if not p.get("active"):
        lines = ["policy: none — every domain, scheme and action is allowed (a person sets "
                 "one: `bsk daemon start --policy FILE`, docs/safety.md)"]
    else:
        def listed(values: list[str] | None, unset: str) -> str:
            return unset if values is None else ", ".join(values) or "none"

        def rules(found: list[dict[str, str]]) -> str:
            return "; ".join(" ".join(f"{k}={v}" for k, v in rule.items())
                             for rule in found) or "none"

        lines = [f"policy: {p.get('source') or '(no file)'} (read-only)",
                 f"  allow domains: {listed(p.get('allow_domains'), 'any')}",
                 f"  block domains: {listed(p.get('block_domains'), 'none')}",
                 f"  allow schemes: {listed(p.get('allow_schemes'), 'any')}",
                 f"  confirm: {rules(p.get('confirm') or [])}",
                 f"  deny: {rules(p.get('deny') or [])}"]
    for sid, narrowing in (r.get("sessions_narrowed") or {}).items():
        lines.append(f"session {sid} narrows it: " + "; ".join(
            f"{key.replace('_', ' ')}: {', '.join(values)}"
            for key, values in narrowing.items()))
    return "\n".join(lines)


def _session(r: dict[str, Any]) -> str:
    where = _placement(r.get("placement") or {})
    return (f"session {r['session_id']} started (tab {r.get('current_tab')}) {where}\n"
            f"use it with: bsk -s {r['session_id']} …  or  export BSK_SESSION={r['session_id']}")


def _sessions(r: dict[str, Any]) -> str:
    rows = []
    for s in r.get("sessions", []):
        busy = f"  busy: {s['busy']['tool']} {s['busy']['op_id']}" if s.get("busy") else ""
        label = f"  ({s['label']})" if s.get("label") else ""
        routes = f"  routes: {len(s['routes'])}" if s.get("routes") else ""
        recording = "".join(f"  recording {kind} (tab {r.get('tab_id')}"
                            + (f", {r['state'].replace('_', ' ')}"
                               if r.get("state", "recording") != "recording" else "") + ")"
                            for kind, r in (s.get("recordings") or {}).items())
        rows.append(f"{s['session_id']}{label}  tabs: {s['tabs']}  "
                    f"{_placement(s.get('placement') or {})}{routes}{busy}{recording}")
    rows += [f"{e['session_id']}  ended when the daemon restarted: {e['reason']}"
             for e in r.get("ended_at_restart") or []]
    return "\n".join(rows) or "(no sessions)"


def _placement(p: dict[str, Any]) -> str:
    if p.get("kind") == "extension":
        return f"[user's browser {p.get('browser')}, Agent Window {p.get('window_id')}]"
    if not p:
        return ""
    scope = SCOPE["isolated" if p.get("isolated") else "shared"]
    if p.get("kind") == "grid":
        # Each Grid session is a browser of its own: nothing is shared with other sessions.
        return (f"[Selenium Grid {p.get('browser')}, node {p.get('node') or '?'}, "
                f"WebDriver session {p.get('webdriver_id')}, a browser of its own]")
    if p.get("kind") == "cdp":
        return f"[remote browser {p.get('browser')}, {scope}]"
    return f"[{p.get('browser', 'embedded')}, {scope}]"


def _replayed(r: dict[str, Any]) -> str:
    return f"replayed {r['file']}: {r['completed']} command(s) completed"


def _batch(r: dict[str, Any]) -> str:
    """Each step on its own line, as its own command would print it (indented below)."""
    steps = r.get("steps") or []
    head = f"batch: {r.get('completed', 0)} of {len(steps)} completed"
    if r.get("failed"):
        head += f", {r['failed']} did not"
    if r.get("not_sent"):
        head += f", {r['not_sent']} not sent"
    lines = [head]
    for step in steps:
        label = f"[{step.get('step')}] {step.get('command', '')}"
        if step.get("sent") is False:
            lines.append(f"{label} — not sent")
            continue
        error = step.get("error")
        if step.get("status") != Status.COMPLETED and error:
            lines.append(f"{label} — {_ended(step.get('status'), error.get('code'))}: "
                         f"{error.get('message', '')} (dispatched: {step.get('dispatched')})")
            continue
        first = str(step.get("command", "")).split()
        words = next((tuple(first[:n]) for n in (2, 1) if tuple(first[:n]) in RENDERERS), ())
        text = result_text(words, step).replace("\n", "\n    ")
        lines.append(f"{label} — {text}")
    return "\n".join(lines)


def _session_stop(r: dict[str, Any]) -> str:
    if "stopped" in r and isinstance(r["stopped"], list):
        return "\n".join(_session_stop(x.get("result") or x) for x in r["stopped"]) or "(none)"
    saved = "".join(f"\n{x['kind']} saved: {x.get('path') or x.get('error')}"
                    for x in r.get("recordings_saved") or ())
    return f"session {r.get('session_id')} stopped{saved}"


def _daemon(r: dict[str, Any]) -> str:
    if r.get("running") is False:
        return f"daemon: not running (socket {r.get('socket')})"
    if "stopped" in r:
        return "daemon stopped" if r["stopped"] else f"daemon: {r.get('note', 'still running')}"
    lines = [f"daemon: pid {r['pid']}, version {r['version']}, up {r['uptime_s']}s",
             f"socket: {r['socket']}"]
    if r.get("already_running"):
        lines.insert(0, "already running")
    if r.get("note"):
        lines.append(f"note: {r['note']}")
    lines += _journal_faults(r.get("journal") or {})
    b = r.get("browser")
    if b:
        if b.get("connected"):
            lines.append(f"browser: {b.get('version')} ({b['mode']})")
            lines.append(f"cdp endpoint: {b['cdp_endpoint']}" if b.get("cdp_endpoint")
                         else f"devtools: {b.get('devtools', 'none shared')}")
        else:
            lines.append(f"browser: not connected ({b['mode']}); it starts with the first "
                         "session, or run `bsk status --connect`")
        lines.append(f"sessions: {r.get('sessions', 0)}")
    return "\n".join(lines)


def _journal_faults(j: dict[str, Any]) -> list[str]:
    """What the daemon found wrong with its journal (docs/outcomes.md), one line each."""
    lines = []
    if j.get("moved_aside"):
        lines.append(f"journal: unreadable ({j['moved_aside']['error']}), moved aside to "
                     f"{j['moved_aside']['path']}; a new one was started (see `bsk doctor`)")
    if j.get("wal_damage"):
        w = j["wal_damage"]
        lines.append(f"journal: its write-ahead log was damaged ({w['why']}): "
                     f"{w['transactions_dropped']} writes lost; copy at {w['copy']}")
    if j.get("write_error"):
        lines.append(f"journal: writes fail ({j['write_error']}); {j.get('unwritten', 0)} "
                     "operations wait in memory: free space, calls are refused until then")
    return lines


def _doctor(r: dict[str, Any]) -> str:
    lines = []
    for c in r.get("checks", []):
        lines.append(f"{'ok ' if c['ok'] else 'BAD'} {c['check']}: {c['detail']}")
        if not c["ok"] and c.get("fix"):
            lines.append(f"    fix: {c['fix']}")
    lines.append("all good" if r.get("ok") else "problems found")
    return "\n".join(lines)


def _op(r: dict[str, Any]) -> str:
    lines = [f"{r['op_id']}  {r['tool']}  session {r['session_id']}",
             f"state: {r['state']}  status: {r.get('status') or 'not ended yet'}  "
             f"dispatched: {r['dispatched']}  "
             f"retry_safe: {'yes' if r['retry_safe'] else 'no'}"]
    if r.get("cancel"):
        lines.append(f"cancel: {r['cancel']}")
    approval = r.get("approval")
    if approval and "answer" not in approval:  # docs/safety.md, Approvals
        lines.append(f"waiting for a person to approve: {approval['what']} "
                     f"({approval['why']})")
    if r.get("error"):
        lines.append(f"error: [{r['error']['code']}] {r['error']['message']}")
    for entry in r.get("timeline") or []:
        line = "  " + "  ".join(str(x) for x in entry)
        if entry[1:2] == ["dispatched"] and r["dispatched"] == "no":
            # the state (its handler started), not the result's `dispatched`: no step went
            line += "  (its handler started; nothing reached the page)"
        lines.append(line)
    return "\n".join(lines)


def _target(params: Any) -> str:
    """What an operation acted on, in a few words: its ref, URL, script, key or text."""
    if not isinstance(params, dict):
        return ""
    for key in ("ref", "url", "expression", "key", "text", "values", "files", "path"):
        value = params.get(key)
        if value in (None, "", []):
            continue
        if key in ("text", "key") and isinstance(value, str) and (
                " ".join(value.split()) != value or value.startswith('"')):
            return _quoted(value)  # its spaces are what was typed (`type " login"`)
        said = " ".join(map(str, value)) if isinstance(value, list) else str(value)
        said = " ".join(said.split())  # a script's or a path's layout: one line
        return said if len(said) <= 40 else said[:39] + "…"
    return ""


def _quoted(text: str, most: int = 40) -> str:
    """`text` in double quotes, JSON-escaped, every blank but a space escaped too (a
    U+2028 would break the row); cut between characters to fit `most`."""
    shown = [json.dumps(c, ensure_ascii=c != " " and c.isspace())[1:-1] for c in text]
    if sum(map(len, shown)) + 2 <= most:
        return '"' + "".join(shown) + '"'
    out, used = [], 3  # the quotes and the ellipsis
    for piece in shown:
        if used + len(piece) > most:
            break
        out.append(piece)
        used += len(piece)
    return '"' + "".join(out) + '…"'


def _ops(r: dict[str, Any]) -> str:
    ops = r.get("ops", [])
    width = max((len(o["op_id"]) for o in ops), default=0)  # a batch's steps' ids are longer
    # `op list --all`: whose each operation is, once more than one session is listed
    sessions = {o.get("session_id") for o in ops}
    shown = max(map(len, map(str, sessions))) if len(sessions) > 1 else 0
    rows = [f"{o['op_id']:<{width}}  {o['started_at']}  "
            + (f"{o.get('session_id')!s:<{shown}}  " if shown else "")
            + f"{o['tool']:<12} {o['state']:<11} "
            f"{o.get('status') or '':<15} {_target(o.get('params'))}".rstrip() for o in ops]
    return "\n".join(rows) or "(no operations)"


def _install_skill(r: dict[str, Any]) -> str:
    if "harnesses" in r:
        return "\n".join(f"{h['harness']:<9} {h['state']:<14} {h['path']}"
                         for h in r["harnesses"])
    return "\n".join(f"{x['action']:<9} {x['path']}  ({x['harness']}, {x['bytes']} bytes)"
                     for x in r["installed"])


def _secrets(r: dict[str, Any]) -> str:
    rows = r.get("secrets") or []
    if not rows:
        return "no secrets (bsk secret set NAME --origin URL)"
    return "\n".join(f"{x['name']}  {' '.join(x['origins'])}" for x in rows)


def _extension_pair(r: dict[str, Any]) -> str:
    return (f"pairing code: {r['code']}  (valid {r['ttl_s'] / 60:g} minutes, for one "
            "browser)\n"
            "In that browser: BrowserSkill's popup → Settings, port "
            f"{r['port']}, enter the code, press Pair.")


def _extension_unpair(r: dict[str, Any]) -> str:
    return (f"unpaired {r['unpaired']}"
            + (" (disconnected)" if r.get("disconnected") else "")
            + ": it must pair again (`bsk extension pair`) to connect")


RENDERERS: dict[Words, Renderer] = {
    **catalog.RENDERERS,
    ("extension", "pair"): _extension_pair, ("extension", "unpair"): _extension_unpair,
    ("batch",): _batch, ("browsers",): _browsers, ("policy", "show"): _policy,
    ("session", "start"): _session, ("session", "list"): _sessions,
    ("session", "stop"): _session_stop, ("status",): _daemon, ("daemon", "start"): _daemon,
    ("daemon", "stop"): _daemon, ("daemon", "status"): _daemon, ("doctor",): _doctor,
    ("op", "show"): _op, ("op", "wait"): _op, ("op", "cancel"): _op, ("op", "list"): _ops,
    ("version",): lambda r: f"bsk {r['version']}",
    ("health",): _health, ("tools",): _tools, ("openapi",): _json,
    ("secret", "set"): lambda r: f"secret {r['name']} stored for {' '.join(r['origins'])}",
    ("secret", "list"): _secrets,
    ("secret", "delete"): lambda r: f"deleted {r['deleted']}",
    ("show",): lambda r: r["url"] + ("" if r.get("opened") else
                                     "\n  (open it in a browser on this machine: the link "
                                     "is good once, for 5 minutes)"),
    ("install-skill",): _install_skill, ("replay",): _replayed,
}
