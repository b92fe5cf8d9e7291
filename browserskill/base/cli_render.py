"""What `bsk` prints: the result shape with --json, short human text otherwise.

Results go to stdout; failures go to stderr with the code, what happened, whether
anything reached the browser, whether a retry is safe, and what to do next. The text
itself comes from `browserskill/base/render.py`, which the MCP server shares; the help texts
are the CLI's own.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable

from browserskill.base.contract import refused
from browserskill.base.errors import CODES
from browserskill.base.errors import exit_code as exit_code_of
from browserskill.base.render import RENDERERS, Words, error_text, one_line, result_text

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any, TextIO


def outcome(answer: Any) -> tuple[dict[str, Any], int]:
    """Normalise any daemon answer to the result shape, with its exit code."""
    if not isinstance(answer, dict):
        answer = {"error": {"code": "internal", "message": f"unexpected answer: {answer!r}"}}
    error = answer.get("error")
    if "op_id" not in answer and error:
        answer = refused(error)
    code = error.get("code") if error else None
    return answer, exit_code_of(code)


def show(words: Words, answer: dict[str, Any], *, as_json: bool,
         as_report: bool = False, out: TextIO | None = None,
         err: TextIO | None = None, marked: bool = False) -> None:
    """Print an answer to `out` / `err` (default: this process's stdout / stderr; the
    daemon writes the text of a command line it ran for `bsk` into buffers). `marked`
    (--boundaries): what the page wrote is wrapped in nonce markers first."""
    out = out or sys.stdout
    err = err or sys.stderr
    if marked:
        from browserskill.base.boundaries import mark

        answer = mark(answer)
    if as_json:
        print(json.dumps(answer, indent=2, ensure_ascii=False), file=out)
        return
    if as_report:
        print(RENDERERS[words](answer), file=out)
        return
    error = answer.get("error")
    if error and error.get("code") != "page_error":
        if words == ("batch",) and answer.get("result"):  # the steps, then why it stopped
            print(result_text(words, answer), file=out)
        print_error(answer, err)
        return
    text = result_text(words, answer)
    if text:
        print(text, file=out)
    restarted = (answer.get("result") or {}).get("browser_restarted") \
        if isinstance(answer.get("result"), dict) else None
    if restarted:  # the tabs came back before the call: say what was lost
        print(f"note: {restarted.get('note') or 'the browser connection was restored'}",
              file=err)
    if error:  # page_error: the script threw; the call itself completed
        print(f"page error: {error['message']}", file=err)
        if error.get("hint"):
            print(f"  hint: {error['hint']}", file=err)


def print_error(answer: dict[str, Any], err: TextIO | None = None) -> None:
    print(error_text(answer), file=err or sys.stderr)


# -- help --------------------------------------------------------------------------------

GLOBAL_HELP = """\
Global options (before or after the command):
  -s, --session ID   session to act in (env BSK_SESSION; default: "default", started on use)
  --json             print the full result shape as JSON
  --wait             queue behind a running operation instead of failing session_busy
  --timeout SEC      the call's deadline (a deadline is a cancel, never an abandon)
  --key K            idempotency key: a repeat with the same key returns the first result
                     (also --idempotency-key K: after `press`, --key is the key to press)
  --boundaries       wrap what the page wrote in nonce markers (env BSK_BOUNDARIES=1;
                     on by default for `bsk mcp`; docs/safety.md)"""


def main_help(controls: Iterable[Any], tools: Iterable[Any], hidden: set[Words]) -> str:
    lines = ["bsk — a real browser for AI agents, with honest outcomes.", "",
             "Usage: bsk [options] COMMAND [ARGS…]", "", "Browser tools:"]
    for t in tools:
        if t.words not in hidden:
            lines.append(f"  {t.usage():<26} {one_line(t.summary)}")
    lines += ["", "Sessions, daemon, operations:"]
    for c in controls:
        lines.append(f"  {c.usage.split(' [--cdp')[0]:<26} {c.summary}")
    lines += ["", GLOBAL_HELP, "", "Exit codes:"]
    seen: dict[int, list[str]] = {0: ["ok"]}
    for code in CODES.values():
        seen.setdefault(code.exit, []).append(code.name)
    for exit_code, names in sorted(seen.items()):
        if names[1:] == ["page_error"]:
            names = ["ok (also page_error: the eval'd script threw; the call completed)"]
        lines.append(f"  {exit_code:<3} {', '.join(names)}")
    lines += ["",
              "A quick loop: bsk open URL; bsk snapshot; bsk click e3; bsk eval 'document.title'",
              "More: bsk COMMAND --help"]
    return "\n".join(lines)


def group_help(word: str, controls: Iterable[Any], tools: Iterable[Any],
               hidden: set[Words]) -> str | None:
    """`bsk tab --help`: the commands of one group, or None if `word` is not a group."""
    rows = [(c.usage, c.summary)
            for c in controls if c.words[0] == word and len(c.words) > 1]
    rows += [(t.usage(), one_line(t.summary))
             for t in tools if t.words[0] == word and len(t.words) > 1 and t.words not in hidden]
    if not rows:
        return None
    lines = [f"Usage: bsk {word} SUBCOMMAND [ARGS…]", "", "Commands:"]
    lines += [f"  {usage:<26} {summary}" for usage, summary in rows]
    lines += ["", f"More: bsk {word} SUBCOMMAND --help", "", GLOBAL_HELP]
    return "\n".join(lines)


def command_help(control: Any, spec: Any) -> str:
    if control is not None and control.spec is None:
        lines = [f"Usage: bsk {control.usage}", "", control.summary]
        if control.options is not None:
            lines += ["", "Options:"]
            lines += [f"  {name:<24} {text}" for name, text in control.options()]
        return "\n".join([*lines, "", GLOBAL_HELP])
    if control is not None:
        spec = control.spec
        lines = [f"Usage: bsk {control.usage}", "", spec.summary]
    else:
        lines = [f"Usage: bsk {spec.usage()} [options]", "", spec.summary,
                 f"Effect: {spec.effect.value}" + (" (safe to retry)" if spec.effect.retry_safe
                                                   else " (a retry may repeat it)")]
    if spec.params:
        lines += ["", "Arguments:"]
        for p in spec.params:
            if p.positional:
                name = p.name.upper()
            elif p.type == "boolean":  # a switch: --x on (default off), --no-x off
                name = p.flag if not p.default else f"--no-{p.flag[2:]}"
            elif p.bare is not None:  # the value may be left out
                name = f"{p.flag} [{p.type.upper()}]"
            else:
                name = f"{p.flag} {p.type.upper()}"
            if p.positional and not p.required:
                name = f"[{name}]"
            if p.short:
                name = f"{p.short}, {name}"
            extra = []
            if p.choices:
                extra.append("one of " + "|".join(map(str, p.choices)))
            if p.minimum is not None and p.maximum is not None:
                extra.append(f"{p.minimum} to {p.maximum}")
            elif p.minimum is not None or p.maximum is not None:
                extra.append(f"at least {p.minimum}" if p.maximum is None
                             else f"at most {p.maximum}")
            if p.default is not None and p.type != "boolean":
                extra.append(f"default {p.default}")
            lines.append(f"  {name:<24} {p.help}" + (f" ({'; '.join(extra)})" if extra else ""))
            if p.positional:
                lines.append(f"  {'':<24} (also {p.flag} VALUE"
                             + ("; - reads it from stdin)" if p.stdin else ")"))
    if spec.example:
        lines += ["", f"Example: {spec.example}"]
    lines += ["", GLOBAL_HELP]
    return "\n".join(lines)
