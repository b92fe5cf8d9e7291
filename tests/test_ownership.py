"""Who owns what: every background task has an owner (browserskill/base/background.py), and an
operation ends in the dispatcher alone.

A task whose reference is thrown away can be collected mid-flight and its exception is
lost; the package starts such work through `background.start`, or keeps the task, or
starts it in a TaskGroup it waits on. The scan reads every module with `ast`.
"""

from __future__ import annotations

import ast
import asyncio
import gc
import logging
import weakref
from pathlib import Path

import pytest

from browserskill.base import background

PACKAGE = Path(__file__).resolve().parent.parent / "browserskill"
SPAWNERS = {"create_task", "ensure_future"}


def _task_groups(tree: ast.AST) -> set[str]:
    """Names bound by `async with asyncio.TaskGroup() as NAME` (the group owns its tasks)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncWith):
            for item in node.items:
                call = item.context_expr
                if (isinstance(call, ast.Call) and isinstance(item.optional_vars, ast.Name)
                        and getattr(call.func, "attr", getattr(call.func, "id", ""))
                        == "TaskGroup"):
                    names.add(item.optional_vars.id)
    return names


def thrown_away_tasks(source: str, filename: str) -> list[str]:
    tree = ast.parse(source, filename)
    groups = _task_groups(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in SPAWNERS:
            continue
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in groups):
            continue
        found.append(f"{filename}:{node.lineno}")
    return found


def test_no_task_in_the_package_is_thrown_away() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in thrown_away_tasks(path.read_text(), str(path.relative_to(PACKAGE)))]
    assert found == [], ("tasks started and thrown away (use browserskill.base.background.start, "
                         f"or keep the task): {found}")


def test_the_scan_finds_what_it_is_for() -> None:
    source = ("import asyncio\n"
              "async def f(loop):\n"
              "    asyncio.get_running_loop().create_task(g())\n"
              "    asyncio.ensure_future(g())\n"
              "    kept = asyncio.create_task(g())\n"
              "    async with asyncio.TaskGroup() as group:\n"
              "        group.create_task(g())\n")
    assert thrown_away_tasks(source, "x.py") == ["x.py:3", "x.py:4"]


async def test_an_owned_task_is_kept_and_its_failure_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    ran = asyncio.Event()

    async def fails() -> None:
        await asyncio.sleep(0)
        ran.set()
        raise RuntimeError("the page went away")

    owned = weakref.ref(background.start(fails(), name="probe-failing"))
    gc.collect()  # nothing here refers to the task: its owner must
    task = owned()
    assert task is not None and task in background.pending()
    with caplog.at_level(logging.ERROR, logger="bsk.background"):
        await asyncio.wait([task])
        await asyncio.sleep(0)  # done callbacks run on the loop's next turn
    assert ran.is_set() and task not in background.pending()
    assert "probe-failing failed: RuntimeError: the page went away" in caplog.text


def test_no_tool_writes_its_operations_error() -> None:
    """An operation ends in the dispatcher, once; a tool says a page failed through its
    context (`ctx.page_error`), never by writing `op.error` (docs/design.md)."""
    found = []
    for path in sorted((PACKAGE / "tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [f"{path.name}:{node.lineno}" for t in targets
                          if isinstance(t, ast.Attribute) and t.attr == "error"
                          and isinstance(t.value, ast.Attribute) and t.value.attr == "op"
                          and path.name != "context.py"]
    assert found == []
