"""Each catalog tool has exactly one handler and each handler is a catalog tool's
(browserskill/tools/handlers.py): in the registry once the modules are loaded, and in the
source, so a handler in a module nobody imports, or a second one for a name, shows too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from browserskill.base.catalog import BY_NAME
from browserskill.tools import handlers, registry

TOOLS = Path(handlers.__file__).parent


def implemented_in_source() -> list[tuple[str, str]]:
    """(tool name, module file) of every `@implements("name")` under browserskill/tools."""
    found = []
    for path in sorted(TOOLS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for deco in node.decorator_list:
                    if isinstance(deco, ast.Call) and getattr(deco.func, "id", "") == "implements":
                        [name] = deco.args
                        assert isinstance(name, ast.Constant), (
                            f"{path.name}:{deco.lineno}: name the tool with a literal, so a "
                            "reader can find its handler")
                        found.append((name.value, path.name))
    return found


def test_every_tool_has_one_handler_in_the_source_and_no_other() -> None:
    names = [name for name, _ in implemented_in_source()]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"implemented more than once: {twice}"
    assert sorted(set(BY_NAME) - set(names)) == [], "catalog tools without a handler"
    assert sorted(set(names) - set(BY_NAME)) == [], "handlers of no catalog tool"


def test_the_loaded_handlers_are_the_catalogs_from_the_listed_modules() -> None:
    loaded = handlers.load()
    assert set(loaded) == set(BY_NAME) == set(registry.HANDLERS)
    listed = {m.__name__ for m in handlers.MODULES} | {handlers.__name__}
    by_module = {registry.HANDLERS[name].__module__ for name in BY_NAME}
    assert by_module == listed, (
        f"registering but not in handlers.MODULES: {sorted(by_module - listed)}; "
        f"in it but registering nothing: {sorted(listed - by_module)}")
    where = {name: f"browserskill.tools.{path[:-3]}" for name, path in implemented_in_source()}
    assert {name: fn.__module__ for name, fn in registry.HANDLERS.items()} == where


def test_a_second_or_unknown_registration_is_refused() -> None:
    with pytest.raises(KeyError, match="implemented twice"):
        registry.implements("click")(registry.HANDLERS["click"])
    with pytest.raises(KeyError, match="not in the tool catalog"):
        registry.implements("no_such_tool")
