"""What `bsk mcp` costs a client before its first call: the `tools/list` answer, measured
as the server sends it (JSON characters), pinned so it cannot creep back (issue 23)."""

from __future__ import annotations

import json

from mcp import types

from browserskill import mcp_server
from browserskill.base import catalog
from browserskill.base.errors import BskError

# Playwright MCP's default list is 21,332 characters (bench/mcp_footprint.py); ours stays
# below it. Raise this only with a reason: every connection pays it.
DEFAULT_LIST_MAX_CHARS = 21_000
# +400 (issue 20): `settle` on the 25 tools that act, which report result.effects.
ALL_LIST_MAX_CHARS = 52_500


def listed_chars(caps: tuple[str, ...]) -> int:
    result = types.ListToolsResult(tools=mcp_server.tool_definitions(caps))
    return len(json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True)))


def test_the_default_tool_list_is_smaller_than_playwright_mcps() -> None:
    assert listed_chars(mcp_server.DEFAULT_CAPS) <= DEFAULT_LIST_MAX_CHARS
    assert listed_chars(mcp_server.parse_caps("all")) <= ALL_LIST_MAX_CHARS


def test_every_tool_is_in_exactly_one_capability_group() -> None:
    names = [n for group in catalog.CAPABILITIES.values() for n in group]
    assert len(names) == len(set(names))
    exposed = {t.name for t in catalog.TOOLS if not t.hidden} | {
        t.name for t in catalog.OP_TOOLS}
    assert set(names) == exposed
    every = {t.name for t in mcp_server.offered(mcp_server.parse_caps("all"))}
    assert every == exposed


def test_caps_always_include_core_and_refuse_unknown_groups() -> None:
    assert mcp_server.parse_caps(None) == ("core",)
    assert mcp_server.parse_caps("state, network") == ("core", "network", "state")
    try:
        mcp_server.parse_caps("network,bogus")
    except BskError as e:
        assert e.code == "invalid_params" and "bogus" in e.message
    else:
        raise AssertionError("an unknown group was accepted")


def test_schemas_are_compact_and_descriptions_are_lines() -> None:
    for tool in mcp_server.tool_definitions(mcp_server.parse_caps("all")):
        assert tool.output_schema is None and tool.title is None
        assert "\n" not in (tool.description or "") and len(tool.description or "") <= 500
        for name, prop in tool.input_schema["properties"].items():
            assert not {"pattern", "maxLength", "minLength"} & set(prop), (tool.name, name)
