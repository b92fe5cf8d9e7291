"""The CLI's rough edges, as a new user meets them: group help, the exit-code list,
`press --key`, local files for `open`, long pauses, suggestions, `wait --gone` and
`--text-gone`, and `retry_safe` for failures that sent nothing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from support.cli import Bsk
from support.pages import ref_of
from support.site import PAGES


def test_group_help_lists_the_group(bsk: Bsk) -> None:
    for group, sub in (("tab", "tab new"), ("op", "op wait"), ("dialog", "dialog accept"),
                       ("window", "window resize")):
        r = bsk(group, "--help", as_json=False)
        assert r.code == 0, r.stderr
        assert r.stdout.startswith(f"Usage: bsk {group} SUBCOMMAND"), r.stdout
        assert sub in r.stdout and "Browser tools:" not in r.stdout
    lonely = bsk("tab", as_json=False)
    assert lonely.code == 2 and "needs a subcommand" in lonely.stderr
    assert "tab list" in lonely.stderr


def test_help_as_a_command_and_help_of_no_command(bsk: Bsk) -> None:
    """`bsk help open` is `bsk open --help` (as git and cargo take it); help of a word
    that is no command says so, rather than print the whole list."""
    assert bsk("help", "open", as_json=False).stdout == bsk("open", "--help",
                                                            as_json=False).stdout
    assert bsk("help", "tab", as_json=False).stdout.startswith("Usage: bsk tab SUBCOMMAND")
    for argv in (("help", "snapshto"), ("snapshto", "--help")):
        r = bsk(*argv)
        assert r.code == 2 and r.json["error"]["hint"] == "did you mean: snapshot?", r


def test_top_level_help_says_0_is_ok(bsk: Bsk) -> None:
    out = bsk("--help", as_json=False).stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("0 "))
    assert line.split()[1] == "ok" and "page_error" in line


def test_help_gives_a_numbers_bounds(bsk: Bsk) -> None:
    """What a number may be is in --help, as the refusal of one outside would say it."""
    settle = next(x for x in bsk("batch", "--help", as_json=False).stdout.splitlines()
                  if x.strip().startswith("--settle"))
    assert settle.endswith("(0 to 30000)"), settle
    refused = bsk("batch", "--settle", "30001", "eval 1")
    assert refused.code == 2 and "30000" in refused.json["error"]["message"], refused.json
    wait = bsk("wait", "--help", as_json=False).stdout
    assert re.search(r"--ms INTEGER .*\(0 to 600000\)", wait), wait


def test_unknown_commands_get_sensible_suggestions(bsk: Bsk) -> None:
    r = bsk("cookie", "list")
    assert r.code == 2 and "op list" not in r.json["error"]["hint"]
    assert bsk("snapshto").json["error"]["hint"] == "did you mean: snapshot?"
    assert "tab list" in bsk("tabb", "list").json["error"]["hint"]


def test_press_key_flag_is_the_key_to_press(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/keys.html")
    pressed = bsk.ok("press", "--key", "a")
    assert pressed["tool"] == "press" and pressed["result"]["key"] == "a"
    # The idempotency key is still there: before the command, or by its long name.
    first = bsk.ok("--idempotency-key", "k-press-1", "press", "--key", "b")
    again = bsk.ok("press", "--key", "b", "--idempotency-key", "k-press-1")
    assert again["op_id"] == first["op_id"]
    # The key by position and --key after it: which was meant is asked, nothing pressed.
    twice = bsk("press", "Escape", "--key", "k-press-2")
    assert twice.code == 2 and twice.json["error"]["code"] == "invalid_params"
    assert twice.json["dispatched"] == "no"
    assert "given twice: 'Escape' by position and 'k-press-2' by --key" in twice.json[
        "error"]["message"]
    assert "`bsk --key k-press-2 press …`" in twice.json["error"]["hint"]


def test_open_a_local_file_by_path(bsk: Bsk) -> None:
    page = PAGES / "act_wait.html"
    opened = bsk.ok("open", str(page))["result"]
    assert opened["url"] == page.as_uri()
    relative = bsk.ok("open", os.path.relpath(page))["result"]  # bsk runs in our cwd
    assert relative["url"] == page.as_uri()
    missing = bsk("open", "./no-such-file.html")
    assert missing.code == 2 and "no such file" in missing.json["error"]["message"]
    home = bsk("open", "/no/such/file.html")  # an absolute path is never a host name
    assert home.json["error"]["details"].get("url", "").startswith("file:///no/such")


def test_a_long_pause_stretches_the_deadline_or_says_how(bsk: Bsk) -> None:
    refused = bsk("wait", "--ms", "3000", "--timeout", "1")
    assert refused.code == 2
    error = refused.json["error"]
    assert error["details"]["field"] == "ms" and "--timeout 4" in error["hint"]
    assert refused.json["retry_safe"] is True and refused.json["dispatched"] == "no"
    # Shorter than --timeout, but not than what is left once the answer's margin is kept:
    # the message says what it was measured against.
    tight = bsk("wait", "--ms", "900", "--timeout", "1").json["error"]
    assert re.fullmatch(r"ms: 900 ms does not fit in what is left of the call's deadline "
                        r"\(\d+ ms, after 250 ms kept to answer\)", tight["message"]), tight


def test_wait_for_an_element_or_text_to_go(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_wait.html")
    snap = bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    spinner = ref_of(snap, "button", "Working")
    bsk.ok("click", ref_of(snap, "button", "Finish later"))  # removes the toast in 300 ms
    gone = bsk.ok("wait", "--text-gone", "Saving")
    assert gone["result"]["text_gone"] == "Saving"
    assert bsk("eval", "!!document.getElementById('toast')").value is False
    bsk.ok("click", ref_of(snap, "button", "Hide spinner later"))  # hides it in 300 ms
    hidden = bsk.ok("wait", "--gone", spinner)["result"]
    assert hidden["gone"] == spinner and hidden["why"] == "removed or hidden"
    text = bsk("wait", "--gone", spinner, as_json=False).stdout
    assert text.startswith("waited") and f"{spinner} is gone" in text
    # Still there at the deadline: a timeout that sent nothing, safe to retry.
    stays = bsk("wait", "--gone", ref_of(snap, "button", "Finish later"), "--timeout", "1")
    assert stays.code == 11 and stays.json["error"]["details"]["reason"] == "timeout"
    assert stays.json["dispatched"] == "no" and stays.json["retry_safe"] is True
    # A replaced page takes every element with it.
    bsk.ok("reload")
    went = bsk.ok("wait", "--gone", spinner)["result"]
    assert "replaced" in went["why"]


def test_failures_that_sent_nothing_are_safe_to_retry(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/act_wait.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    ref = ref_of(snap, "button", "Working")
    bsk.ok("reload")
    stale = bsk("click", ref)
    assert stale.json["error"]["code"] == "stale_ref"
    assert stale.json["dispatched"] == "no" and stale.json["retry_safe"] is True
    assert "retry_safe: yes" in bsk("click", ref, as_json=False).stderr
    missing = bsk("wait", "--text", "never there", "--timeout", "1")
    assert missing.json["dispatched"] == "no" and missing.json["retry_safe"] is True


def test_daemon_start_help_lists_every_option_it_takes(bsk: Bsk) -> None:
    """The options come from the daemon's own parser: none can be left out of --help (it
    once lacked --tcp-port and --expose-cdp)."""
    from browserskill.api.__main__ import parser

    shown = bsk("daemon", "start", "--help").stdout
    taken = [o for a in parser()._actions for o in a.option_strings if o not in ("-h", "--help")]
    assert len(taken) > 10 and "--tcp-port" in taken and "--expose-cdp" in taken
    for option in [*taken, "--foreground"]:
        assert f"\n  {option} " in shown, option


def test_peers_short_flags_and_the_nearest_real_option(bsk: Bsk, site: str) -> None:
    # Before any daemon (the whole CLI reads the line) and after (the launcher's fast
    # path: the daemon reads it, api/cli_call.py): one parser, the same answers.
    for when in ("no daemon yet", "daemon up"):
        typo = bsk("snapshot", "--interactiv")
        assert typo.code == 2, when
        assert typo.json["error"]["hint"].startswith("did you mean --interactive?"), when
        assert "--interactive (-i)" in typo.json["error"]["message"], when
        assert "did you mean --max-tokens?" in bsk("snapshot", "--depth", "3").json["error"]["hint"]
        assert "did you mean --count?" in bsk("click", "e1", "--cuont", "2").json["error"]["hint"]
        # Nothing near: no guess (the two dashes alone made --foo "near" --ref).
        assert bsk("click", "e1", "--foo").json["error"]["hint"] == "bsk click --help", when
        if when == "no daemon yet":
            bsk.ok("open", f"{site}/keys.html")
    assert bsk.ok("snapshot", "-i")["result"]["snapshot"] == \
        bsk.ok("snapshot", "--interactive")["result"]["snapshot"]
    assert "-i, --interactive" in bsk("snapshot", "--help", as_json=False).stdout


def test_eval_dash_reads_the_script_from_stdin(bsk: Bsk, tmp_path: Path) -> None:
    """`bsk eval -` runs what is piped in, through the launcher and the whole CLI alike."""
    from browserskill.cli import launcher

    script = tmp_path / "bsk"
    launcher.write(str(script))
    code = "const parts = ['4', '2'];\nNumber(parts.join(''))\n"
    for argv in ([str(script)], [sys.executable, "-m", "browserskill.cli.main"]):
        run = subprocess.run([*argv, "-s", str(bsk.session), "--json", "eval", "-"],
                             input=code, env=bsk.env, capture_output=True, text=True,
                             timeout=90)
        assert run.returncode == 0, run.stdout + run.stderr
        assert json.loads(run.stdout)["result"]["value"] == 42, run.stdout
    assert "- reads it from stdin" in bsk("eval", "--help", as_json=False).stdout


def test_a_reader_that_goes_away_ends_bsk_quietly(bsk: Bsk, tmp_path: Path) -> None:
    """`bsk --help | head -1`: stdout's reader is gone before bsk is done writing. bsk
    ends as other commands do there (killed by SIGPIPE, status 141 in a shell), with
    no traceback — the launcher's own printing, the whole CLI's, and the daemon's answer."""
    from browserskill.cli import launcher

    script = tmp_path / "bsk"
    launcher.write(str(script))
    whole = [sys.executable, "-m", "browserskill.cli.main"]
    for argv in ([str(script), "--help"], [str(script), "tab", "--help"], [*whole, "--help"],
                 [str(script), "-s", str(bsk.session), "eval", "'a few words'"],
                 [str(script), "-s", str(bsk.session), "eval", "'x'.repeat(200000)"]):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first byte: `head` that exited
        try:
            run = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, env=bsk.env,
                                 text=True, timeout=90)
        finally:
            os.close(write)
        assert (run.returncode, run.stderr) == (-signal.SIGPIPE, ""), argv


def test_health_and_tools_print_text_and_json_with_json(bsk: Bsk) -> None:
    """`bsk health` and `bsk tools` print lines a person reads; --json the answer as
    served."""
    from browserskill.base import catalog

    health = bsk("health", as_json=False)
    assert health.code == 0 and health.stdout.startswith("ok: the daemon answers (version ")
    assert health.stdout.count("\n") == 1 and "{" not in health.stdout
    assert set(bsk.ok("health")) >= {"ok", "version"}

    tools = bsk("tools", as_json=False)
    assert tools.code == 0 and "input_schema" not in tools.stdout, tools.stdout[:500]
    head, *rows = tools.stdout.splitlines()
    served = bsk.ok("tools")["tools"]
    assert head.startswith(f"Browser tools ({len(served)};") and len(rows) == len(served)
    # One line per tool, in --help's order and words, with its API name and effect.
    helped = [x for x in bsk("--help", as_json=False).stdout.splitlines()
              if x.startswith("  open URL ")]
    assert rows[0].startswith(helped[0].rstrip()) and rows[0].endswith("[open, mutation]")
    select = next(r for r in rows if r.lstrip().startswith("tab select TAB_ID"))
    assert catalog.BY_NAME["tab_select"].summary.rstrip(".") in select
    assert select.endswith("[tab_select, read]")
    assert all(t["input_schema"]["type"] == "object" for t in served)


def test_openapi_prints_its_json_document_either_way(bsk: Bsk) -> None:
    """The command's point is the JSON document: text mode prints it too, identical to
    --json, and its help says so."""
    text, as_json = bsk("openapi", as_json=False), bsk("openapi")
    assert text.code == as_json.code == 0 and text.stdout == as_json.stdout
    assert json.loads(text.stdout)["openapi"].startswith("3.")
    assert "JSON" in bsk("openapi", "--help", as_json=False).stdout


def test_an_eval_that_does_not_parse_says_nothing_ran(bsk: Bsk, site: str) -> None:
    """A parse error ran nothing (unlike a throw after statements ran); a `return` at the
    top, the common slip, is told what the value is instead."""
    bsk.ok("open", f"{site}/counter.html")
    said = bsk("eval", "return document.title", as_json=False)
    assert said.code == 0 and "threw: SyntaxError: Illegal return statement" in said.stdout
    assert "hint: nothing ran: the code did not parse; the value is the code's last " \
           "expression: drop `return`" in said.stderr, said.stderr
    thrown = bsk("eval", "window.effects = 1; null.x").json["error"]
    assert thrown["hint"].endswith("statements before it may have run"), thrown
