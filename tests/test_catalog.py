"""The catalog's shape (browserskill/base/catalog/): every tool in one family module, its
text renderer beside it, and a handler's typed params equal to its spec's params.

A TypedDict declared beside a spec (a family's `PARAMS`) says what the handler reads; the
spec says what the validator hands it — every param, a default filled in or None. If the
two drift, mypy checks the handler against a shape the daemon never sends: this test
fails first."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from browserskill.base import catalog
from browserskill.tools import handlers, registry

PY_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float,
                            "boolean": bool, "array": list[str], "object": dict[str, Any]}


def expected_type(p: catalog.Param) -> Any:
    """What a validated value of `p` is: its type, or None too when it may be left out
    and has no default (the validator fills in None then)."""
    kind = PY_TYPES[p.type]
    return kind if p.required or p.default is not None else kind | None


TYPED = [(family.__name__.rsplit(".", 1)[1], name, typed)
         for family in catalog.FAMILIES
         for name, typed in getattr(family, "PARAMS", {}).items()]


def test_every_tool_is_in_exactly_one_family_with_its_renderer_beside_it() -> None:
    homes: dict[str, list[str]] = {}
    for family in catalog.FAMILIES:
        for spec in family.TOOLS:
            homes.setdefault(spec.name, []).append(family.__name__)
        words = {spec.words for spec in family.TOOLS}
        strays = set(getattr(family, "RENDERERS", {})) - words
        assert not strays, f"{family.__name__} renders what is not its tools': {strays}"
    assert {n: h for n, h in homes.items() if len(h) != 1} == {}
    assert set(homes) == set(catalog.BY_NAME)


def test_the_order_every_surface_lists_is_the_catalogs() -> None:
    assert tuple(t.name for t in catalog.TOOLS) == catalog.ORDER


def test_a_tool_is_placed_by_its_family_module_alone() -> None:
    """Adding a tool touches its family module (spec, renderer, params), its handler and
    its test: its MCP group is its family's `CAPABILITY`, and `acting` on its spec gives
    it `settle`."""
    for family in catalog.FAMILIES:
        for spec in family.TOOLS:
            placed = catalog.BY_NAME[spec.name]
            assert placed.capability == (None if spec.hidden else family.CAPABILITY)
            assert placed.acting == spec.acting and placed.params[:len(spec.params)] == \
                spec.params
    assert {n for names in catalog.CAPABILITIES.values() for n in names} == {
        t.name for t in (*catalog.TOOLS, *catalog.OP_TOOLS) if not t.hidden}


def test_acting_tools_take_settle_last() -> None:
    for spec in catalog.TOOLS:
        has = catalog.SETTLE in spec.params
        assert has == (spec.name in catalog.ACTING_TOOLS), spec.name
        if has:
            assert spec.params[-1] == catalog.SETTLE, spec.name


def test_every_tool_has_a_typed_params_view_beside_its_spec() -> None:
    for family in catalog.FAMILIES:
        assert set(family.PARAMS) == {t.name for t in family.TOOLS}, family.__name__


@pytest.mark.parametrize(("family", "tool", "typed"), TYPED,
                         ids=[f"{f}.{n}" for f, n, _ in TYPED])
def test_a_typed_params_view_is_its_specs_params(family: str, tool: str, typed: type) -> None:
    spec = catalog.BY_NAME[tool]
    assert spec.name in {t.name for t in getattr(catalog, family).TOOLS}, (
        f"{tool}'s TypedDict is declared in {family}, not beside its spec")
    hints = typing.get_type_hints(typed)
    assert list(hints) == [p.name for p in spec.params], (
        f"{typed.__name__} lists {list(hints)}; {tool}'s spec: {[p.name for p in spec.params]}")
    for p in spec.params:
        assert hints[p.name] == expected_type(p), (
            f"{typed.__name__}.{p.name} is {hints[p.name]}, its spec says {expected_type(p)}")
    assert typed.__required_keys__ == frozenset(hints)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("family", "tool", "typed"), TYPED,
                         ids=[f"{f}.{n}" for f, n, _ in TYPED])
def test_the_handler_reads_its_typed_params(family: str, tool: str, typed: type) -> None:
    handlers.load()
    handler = registry.HANDLERS[tool]
    assert typing.get_type_hints(handler)["params"] is typed, (
        f"{tool}'s handler {handler.__qualname__} should take params: {typed.__name__}")
