"""docs/design.md, shape: the folders are the layers, the layers point one way, and no
two modules — nor two folders — need each other.

The package's imports are read with `ast` — every `import`, at module level, inside a
function (lazy) or under `if TYPE_CHECKING:` (type-only) — so a cycle can't hide behind
a deferred import, and a module can't reach up a layer just for a type.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "browserskill"

# Top first: the folders of the package (and the front ends' top-level modules), each
# layer importing only from its own layer and those below it. The tree is the table.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("front ends", ("__main__", "cli", "client", "mcp_server", "docgen")),
    ("api", ("api",)),  # the HTTP API, and the daemon's process that serves it
    ("daemon", ("daemon",)),  # the daemon's parts wired together; how a front end starts it
    ("dispatch", ("dispatch",)),  # the dispatcher, the journal, a person in the loop
    ("tools", ("tools",)),
    ("session", ("session",)),  # sessions, their queues, operations and cancel scopes
    ("browser", ("browser",)),
    ("webmcp", ("webmcp",)),  # WebMCP's I/O-free model, which the browser's tabs keep
    ("base", ("base",)),  # contract, errors, the catalog (pure data), paths, text
]

# The one import allowed up the layers: the package's facade (`from browserskill import
# Client`) loads the client on first use; nothing inside the package goes through it.
FACADE = ("browserskill", "browserskill.client")
# ... and, for type checkers only, the client's generated names it re-exports
FACADES = {FACADE, ("browserskill", "browserskill.client.generated")}


def _modules() -> dict[str, Path]:
    found = {}
    # A stub of its own (client/generated.pyi, for type checkers) is a module too.
    stubs = [p for p in PACKAGE.rglob("*.pyi") if not p.with_suffix(".py").exists()]
    for path in [*PACKAGE.rglob("*.py"), *stubs]:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The package module that `name` (a module, or a name in one) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> dict[str, int]:
    """Every package module `module` imports, anywhere in it, with a line of each."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            # `from pkg import mod` imports the submodule; `from mod import name`, the module.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        for target in targets:
            owner = _owner(target) if target.startswith("browserskill") else None
            if owner is not None and owner != module:
                found.setdefault(owner, node.lineno)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def folder_of(module: str) -> str:
    """The folder (or top-level module) of the package that `module` is in."""
    return module.split(".")[1] if "." in module else module


def layer_of(module: str) -> int:
    if module == "browserskill":  # `__version__`; its facade is below (FACADE)
        return len(LAYERS) - 1
    folder = folder_of(module)
    for rank, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return rank
    raise AssertionError(f"{module}: browserskill/{folder} is in no layer: add it to LAYERS "
                         f"in {Path(__file__).name}")


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_reader_sees_every_kind_of_import() -> None:
    # Each kind, on a module known to use it (if these move, pick others: the point is
    # that lazy and type-only imports are edges too).
    assert "browserskill.browser.link" in GRAPH["browserskill.browser.cdp"]  # module level
    assert "browserskill.client" in GRAPH["browserskill"]  # inside a function
    assert "browserskill.browser.backend" in GRAPH["browserskill.browser.agent_window"]  # type-only
    # `from pkg import mod`:
    assert "browserskill.base.render" in GRAPH["browserskill.base.cli_render"]
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


# Cycles known and owned elsewhere, each with its way out; one that is gone must leave
# this list too (the test says so).
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}  # cycle -> why it stays for now, and the way out


def test_no_import_cycles() -> None:
    found = [c for c in cycles(GRAPH) if tuple(c) not in KNOWN_CYCLES]
    gone = set(KNOWN_CYCLES) - {tuple(c) for c in cycles(GRAPH)}
    assert not gone, f"no longer cycles: take them out of KNOWN_CYCLES: {sorted(gone)}"
    described = ["; ".join(f"{m} -> {', '.join(sorted(set(GRAPH[m]) & set(c)))}" for m in c)
                 for c in found]
    assert not found, "import cycles (lazy and type-only imports count):\n" + "\n".join(described)


def test_layers_point_one_way() -> None:
    wrong = []
    for module, imported in sorted(GRAPH.items()):
        for target, line in sorted(imported.items()):
            if layer_of(target) < layer_of(module) and (module, target) not in FACADES:
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} "
                             f"({LAYERS[layer_of(module)][0]}) imports {target} "
                             f"({LAYERS[layer_of(target)][0]})")
    assert not wrong, "imports up the layers:\n" + "\n".join(wrong)


def folder_graph() -> dict[str, dict[str, str]]:
    """Folder -> the folders it imports, each with one import that makes the edge."""
    graph: dict[str, dict[str, str]] = {folder_of(m): {} for m in MODULES if m != "browserskill"}
    for module, imported in GRAPH.items():
        for target, line in imported.items():
            if module == "browserskill" or target == "browserskill" or (
                    folder_of(module) == folder_of(target)):
                continue
            graph[folder_of(module)].setdefault(
                folder_of(target), f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    return graph


def test_no_cycles_between_folders() -> None:
    """A folder needs only folders below it (or, among the front ends, one that does not
    need it back): no two folders import each other, however far round."""
    graph = folder_graph()
    found = cycles(graph)
    described = ["; ".join(f"{f}: {graph[f][g]}" for f in c for g in sorted(graph[f]) if g in c)
                 for c in found]
    assert not found, "folders that import each other:\n" + "\n".join(described)


def test_every_folder_is_in_one_layer() -> None:
    listed = [f for _, folders in LAYERS for f in folders]
    assert len(listed) == len(set(listed))
    on_disk = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
               if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert on_disk == set(listed), (f"unlisted: {sorted(on_disk - set(listed))}, "
                                    f"gone: {sorted(set(listed) - on_disk)}")


@pytest.mark.parametrize(("lower", "upper"), [
    ("browserskill.browser", ("browserskill.dispatch", "browserskill.tools",
                              "browserskill.cli", "browserskill.api", "browserskill.client")),
    ("browserskill.client", ("browserskill.cli",)),
    ("browserskill.base.render", ("browserskill.cli",)),
    ("browserskill.mcp_server", ("browserskill.cli",)),
])
def test_named_boundaries(lower: str, upper: tuple[str, ...]) -> None:
    """The boundaries issue 11 named, spelled out (the layer table implies them)."""
    for module, imported in GRAPH.items():
        if module == lower or module.startswith(lower + "."):
            bad = [t for t in imported if any(t == u or t.startswith(u + ".") for u in upper)]
            assert not bad, f"{module} imports {bad}"


# -- the CLI runs on the standard library alone ----------------------------------------

# Where `bsk` starts (the launcher, the console script, `python -m browserskill`), and
# the modules whose docstring promises stdlib only.
CLI_ROOTS = ("browserskill.cli.launcher", "browserskill.cli.main", "browserskill.__main__",
             "browserskill.browser.keeper", "browserskill.browser.keys")


def module_level_imports(module: str) -> set[str]:
    """What `module` imports when it is imported: not in functions (a command that needs a
    library loads it when it runs: `bsk mcp`, the daemon) and not type-only."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1]
                                    + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and not (
                    isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(ast.parse(path.read_text(), str(path)).body)
    return found


def test_the_cli_imports_only_the_standard_library() -> None:
    """The promise `bsk` makes in several docstrings, checked: its start-up reaches no
    third-party package, however far the package's own imports go."""
    seen: set[str] = set()
    todo = list(CLI_ROOTS)
    outside: dict[str, str] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in module_level_imports(module):
            top = name.partition(".")[0]
            if top == "browserskill":
                owner = _owner(name)
                if owner is not None:
                    todo.append(owner)
            elif top not in sys.stdlib_module_names and top != "__future__":
                outside[name] = module
    assert outside == {}, f"the CLI's start-up imports non-stdlib modules: {outside}"
    assert "browserskill.base.catalog" in seen  # the walk did reach the package's core
