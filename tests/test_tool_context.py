"""docs/design.md, the tool context: what a tool reaches stays narrow.

A feature keeps its state in `Session.features` (browserskill/session/features.py), by
its own class, and declares what it runs on every call in tools/call_hooks.py; a tool
reaches its operation only through its context's methods (`ctx.op_id`, `ctx.page_error`,
…), never `ctx.op` or the session table. Read with `ast` over browserskill/tools.
"""

from __future__ import annotations

import ast
import uuid
from dataclasses import fields
from pathlib import Path

from support.cli import Bsk

from browserskill.dispatch import dispatcher
from browserskill.session.features import FeatureStates
from browserskill.session.sessions import Session

TOOLS = Path(__file__).resolve().parent.parent / "browserskill" / "tools"

# What every session has. A feature's state (hover, help, recordings, …) is not here: it
# is a class of the feature's own in `session.features` (`ctx.feature(Kind)`).
SESSION_FIELDS = {
    "id", "label", "created_at", "tabs", "current_tab_id", "refs", "last_used", "popups",
    "tab_seq", "ref_seq", "backend", "download_dir", "origins", "routes", "policy",
    "narrowing",
}
# Distinct `ctx.<attribute>.<attribute>` paths the tools use (38 of session, sessions,
# op and backend alone before the features moved out; 25 of them, and 4 of ctx.tab, now):
# a ceiling, so the context can't widen unnoticed. Lower it when a change narrows it.
MAX_CTX_PATHS = 29


def _ctx_paths() -> dict[str, list[str]]:
    """Every `ctx.A.B` in the tool modules (bar the context itself), with where."""
    found: dict[str, list[str]] = {}
    for path in sorted(TOOLS.glob("*.py")):
        if path.name == "context.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == "ctx"):
                found.setdefault(f"ctx.{node.value.attr}.{node.attr}", []).append(
                    f"{path.name}:{node.lineno}")
    return found


def test_a_session_has_no_field_of_a_feature() -> None:
    extra = {f.name for f in fields(Session)} - SESSION_FIELDS
    assert not extra, (f"Session grew {sorted(extra)}: a feature's state is a class of its "
                       "own, reached with ctx.feature(Kind) (browserskill/session/features.py)")


def test_no_tool_reaches_its_operation_or_the_session_table() -> None:
    """Its operation ends in the dispatcher, once (tests/test_ownership.py): a tool says
    what it knows through the context's methods (tools/context.py)."""
    reached = []
    for path in sorted(TOOLS.glob("*.py")):
        if path.name == "context.py":
            continue
        reached += [f"{path.name}:{node.lineno} ctx.{node.attr}"
                    for node in ast.walk(ast.parse(path.read_text(), str(path)))
                    if isinstance(node, ast.Attribute) and node.attr in ("op", "sessions")
                    and isinstance(node.value, ast.Name) and node.value.id == "ctx"]
    assert not reached, f"use the context's methods (tools/context.py): {reached}"


def test_the_tools_reach_few_paths_through_the_context() -> None:
    paths = _ctx_paths()
    assert len(paths) <= MAX_CTX_PATHS, sorted(paths)


def test_the_dispatcher_names_no_feature() -> None:
    """It runs tools/call_hooks.py's hooks; it imports no feature's module to call it."""
    tree = ast.parse(Path(dispatcher.__file__).read_text())
    imported = {f"{node.module}.{a.name}" for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) for a in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    for feature in ("downloads", "routes", "recording", "effects", "locators",
                    "policy_check"):
        assert f"browserskill.tools.{feature}" not in imported


def test_a_feature_state_is_made_once_and_typed() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

    states = FeatureStates()
    assert states.find(Counter) is None  # a reader that must not make it
    states.get(Counter).n += 1
    states.get(Counter).n += 1
    assert states.find(Counter) is not None and states.get(Counter).n == 2


def test_a_new_session_under_an_old_id_starts_with_no_button_held(bsk: Bsk,
                                                                 site: str) -> None:
    """Held buttons were a module global keyed by session id: a session started again
    under the id of one that ended with a button down found it still held."""
    sid = "held-" + uuid.uuid4().hex[:8]
    runner = bsk.with_session(sid)
    for _ in range(2):
        bsk.ok("session", "start", sid)
        runner.ok("open", f"{site}/act_canvas.html")
        down = runner.ok("mouse", "down", "50", "60")["result"]
        assert down["buttons_held"] == ["left"]
        runner.ok("session", "stop", "--wait")
