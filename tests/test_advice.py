"""The daemon's advice in each front end's words (browserskill/base/advice.py): what a
hint says in the CLI's words, over MCP and in the Python client."""

from __future__ import annotations

import pytest

from browserskill.base import boundaries
from browserskill.base.advice import MCP, PYTHON, in_terms

CASES = [  # the CLI's words, MCP's, Python's
    ("click it (`bsk click e1`)", "click it (`click` with ref=e1)",
     'click it (`click(ref="e1")`)'),
    ("`bsk tab select t2` first", "`tab_select` with tab_id=t2 first",
     '`tab_select(tab_id="t2")` first'),
    ("`bsk fill e4 'hi'`", '`fill` with ref=e4, text="hi"', '`fill(ref="e4", text="hi")`'),
    ("answer with `bsk dialog accept [TEXT]` or `bsk dialog dismiss`",
     "answer with `dialog_accept` with text=TEXT (optional) or `dialog_dismiss`",
     "answer with `dialog_accept(text=…)` or `dialog_dismiss()`"),
    ("`bsk tab list --scope user`", '`tab_list` with scope="user"',
     '`tab_list(scope="user")`'),
    # Seconds: milliseconds over MCP, seconds in Python.
    ("pass --timeout 4 or more", "pass timeout_ms=4000 or more", "pass timeout=4 or more"),
    ('or pass --wait (HTTP "wait": true) to queue', "or pass wait=true to queue",
     "or pass wait=True to queue"),
    ("usage: bsk click REF", "`click` needs ref", "`click()` needs ref"),
    ("stopping unless --continue", "stopping unless continue=true",
     "stopping unless continue_=True"),  # a Python keyword: the method's name for it
    ("pass --no-boundaries", "pass boundaries=false", "pass boundaries=False"),
    ("e.g. `bsk wait --text 'Welcome'`", 'e.g. `wait` with text="Welcome"',
     'e.g. `wait(text="Welcome")`'),
    # Left whole: a quoted batch command, a command that is no tool, the CLI's --json.
    ("e.g. 'click e3' 'snapshot --diff'", "e.g. 'click e3' 'snapshot --diff'",
     "e.g. 'click e3' 'snapshot --diff'"),
    ("it's --diff, don't", "it's diff=true, don't", "it's diff=True, don't"),
    ("`bsk mcp --caps network`", "`bsk mcp --caps network`", "`bsk mcp --caps network`"),
    ("the CLI's --json", "the CLI's --json", "the CLI's --json"),
    ("covered by div.btn--primary", "covered by div.btn--primary",
     "covered by div.btn--primary"),  # a page's class name, not a flag
]


@pytest.mark.parametrize(("cli", "mcp", "python"), CASES)
def test_cli_advice_reads_as_each_front_ends_tools_and_parameters(
        cli: str, mcp: str, python: str) -> None:
    assert in_terms(cli, MCP) == mcp
    assert in_terms(cli, PYTHON) == python


def test_only_bsks_own_words_around_the_pages_text_change() -> None:
    """A rendered answer over MCP: bsk's lines in MCP's words, the page's marked text as
    the page wrote it, even where it looks like advice."""
    page = boundaries.wrap("press `bsk click e1` --now", "n0nce")
    text = f"clicked e1: {page}\n  answer it: `bsk dialog dismiss` (--timeout 4)"
    assert boundaries.outside(text, lambda t: in_terms(t, MCP)) == (
        f"clicked e1: {page}\n  answer it: `dialog_dismiss` (timeout_ms=4000)")
    forged = "<<<page-content nonce=x>>>\nno end marker --timeout 4"  # not a block
    assert boundaries.outside(forged, lambda t: in_terms(t, MCP)).endswith("timeout_ms=4000")
