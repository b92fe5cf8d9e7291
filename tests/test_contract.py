"""The contract every surface shares (`browserskill/base/contract.py`): one result schema that
every builder's answer satisfies and every surface publishes, one op-id rule, one
timeout range, and the catalog's per-tool facts read by every surface. No daemon: the
real-daemon checks are in test_openapi.py, test_mcp.py, test_cli_edges.py."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import jsonschema
import pytest

from browserskill.api import openapi
from browserskill.base import catalog, contract
from browserskill.base.errors import CODES, STATUS_FOR_CODE, BskError
from browserskill.session.operations import Operation

ROOT = Path(contract.__file__).parent


def valid(answer: dict[str, object]) -> None:
    jsonschema.validate(answer, contract.RESULT_SCHEMA)


def test_every_builder_answers_the_one_schema() -> None:
    refused = contract.refused(contract.error_dict("invalid_params", "url: is required"))
    valid(refused)
    assert (refused["op_id"], refused["status"], refused["dispatched"],
            refused["retry_safe"]) == (None, "failed", "no", True)
    plan = contract.CancelThenWait(contract.new_op_id(), 0.0)
    never = plan.never_arrived("default", "click")
    valid(never)
    assert (never["status"], never["dispatched"], never["retry_safe"],
            never["error"]["code"]) == ("cancelled", "no", False, "cancelled")

    async def ops() -> list[dict[str, object]]:
        running = Operation("default", "click", {"ref": "e1"})
        done = Operation("default", "click", {"ref": "e1"})
        done.fail(BskError("stale_ref", "gone"))
        return [running.to_result(), done.to_result()]

    for answer in asyncio.run(ops()):
        valid(answer)
        assert set(answer) == set(contract.RESULT_FIELDS)


def test_a_shape_missing_a_field_is_refused_by_the_schema() -> None:
    answer = contract.refused(contract.error_dict("internal", "boom"))
    del answer["retry_safe"]
    with pytest.raises(jsonschema.ValidationError):
        valid(answer)


def test_surfaces_publish_the_one_schema() -> None:
    from browserskill import mcp_server

    # MCP states the shape once (its instructions name every field) instead of declaring
    # it on every tool (docs/mcp.md, "What a connection costs").
    assert all(t.output_schema is None for t in mcp_server.tool_definitions())
    assert all(field in mcp_server.INSTRUCTIONS for field in contract.RESULT_SCHEMA["required"])
    doc = openapi.document()
    result = doc["components"]["schemas"]["Result"]
    assert result == contract.result_schema({"$ref": "#/components/schemas/Error"})
    assert doc["components"]["schemas"]["Error"] == contract.ERROR_SCHEMA
    body = doc["paths"]["/v1/sessions/{sid}/tools/click"]["post"]["requestBody"]
    props = body["content"]["application/json"]["schema"]["properties"]
    assert props["timeout_ms"]["maximum"] == contract.MAX_TIMEOUT_MS
    # MCP says the per-call options in few words on every tool (its tools/list is pinned
    # small: tests/test_mcp_footprint.py); the bounds are the daemon's to check.
    mcp_click = next(t for t in mcp_server.tool_definitions() if t.name == "click")
    assert mcp_click.input_schema["properties"]["timeout_ms"]["type"] == "integer"


@pytest.mark.parametrize(("text", "ok"), [
    ("op_abcdef", True), ("op_" + "a" * 64, True), ("op_A-b_9xyz", True),
    ("op_abcde", False), ("op_" + "a" * 65, False), ("op_", False), ("op_abc/def", False),
    ("op_abcdé1", False), ("xx_abcdef", False), ("", False),
])
def test_one_op_id_rule(text: str, ok: bool) -> None:
    """The daemon's rule, and the CLI's: `bsk op show ID` refuses what the daemon would."""
    from browserskill.cli.commands import _op_id

    assert contract.valid_op_id(text) is ok
    if ok:
        assert _op_id([text], "op show OP_ID") == text
    elif text and not text.startswith("-"):
        with pytest.raises(BskError) as e:
            _op_id([text], "op show OP_ID")
        assert e.value.code == "op_not_found"


def test_minted_op_ids_follow_the_rule_and_differ() -> None:
    minted = {contract.new_op_id() for _ in range(200)}
    assert len(minted) == 200 and all(contract.valid_op_id(i) for i in minted)


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), (1, 1), (2.0, 2), (contract.MAX_TIMEOUT_MS, contract.MAX_TIMEOUT_MS),
])
def test_timeout_ms_accepted(value: object, expected: int | None) -> None:
    assert contract.check_timeout_ms(value) == expected


@pytest.mark.parametrize("value", [0, -5, contract.MAX_TIMEOUT_MS + 1, True, "5", 1.5])
def test_timeout_ms_refused_naming_the_field(value: object) -> None:
    with pytest.raises(BskError) as e:
        contract.check_timeout_ms(value)
    assert e.value.code == "invalid_params" and "timeout_ms" in e.value.message


def test_a_tools_own_timeout_range() -> None:
    spec = catalog.BY_NAME["webmcp_invoke"]
    with pytest.raises(BskError, match="1000 to 120000"):
        contract.check_timeout_ms(500, spec.name, spec.timeout_range_s)
    with pytest.raises(BskError, match="1-120 seconds"):
        contract.check_timeout_s("200", "webmcp invoke", spec.timeout_range_s)
    assert contract.check_timeout_s("30", "webmcp invoke", spec.timeout_range_s) == 30.0
    with pytest.raises(BskError, match=f"at most {contract.MAX_TIMEOUT_S}"):
        contract.check_timeout_s("601")


def test_cancel_is_repeated_only_while_the_call_may_be_on_its_way() -> None:
    plan = contract.CancelThenWait("op_abcdef", now=100.0)
    assert plan.again(404, 100.5)  # the daemon does not know it yet
    assert not plan.again(404, 100.0 + contract.CANCEL_ARRIVAL_S + 0.01)  # never arrived
    assert not plan.again(200, 100.1)  # cancelled: now wait for its ending
    assert plan.cancel_path == "/v1/ops/op_abcdef/cancel"
    assert plan.wait_path.startswith("/v1/ops/op_abcdef/wait?timeout_ms=")


def test_catalog_facts_are_read_by_every_surface() -> None:
    from browserskill import mcp_server
    from browserskill.client import AsyncClient, Client

    hidden = [t for t in catalog.TOOLS if t.hidden]
    assert [t.name for t in hidden] == ["session_stop"]
    mcp_names = {t.name for t in mcp_server.tool_definitions(mcp_server.parse_caps("all"))}
    paths = openapi.document()["paths"]
    for spec in catalog.TOOLS:
        assert set(spec.errors) <= set(CODES), spec.name
        exposed = not spec.hidden
        assert (spec.name in mcp_names) is exposed, spec.name
        assert (f"/v1/sessions/{{sid}}/tools/{spec.name}" in paths) is exposed, spec.name
        if exposed and spec.name.isidentifier():
            assert getattr(Client, spec.name).__name__ == spec.name
            assert getattr(AsyncClient, spec.name).__name__ == spec.name
        if exposed:
            post = paths[f"/v1/sessions/{{sid}}/tools/{spec.name}"]["post"]
            codes = {c for r in post["responses"].values()
                     for c in r.get("description", "").split(", ") if c in CODES}
            assert codes == {c for c in spec.errors if CODES[c].http >= 300}, spec.name
    assert catalog.BY_NAME["dialog_accept"].during_dialog
    assert not catalog.BY_NAME["click"].during_dialog
    assert catalog.BY_NAME["reload"].after_crash
    assert not catalog.BY_NAME["click"].after_crash


# -- the result shape's words: StrEnums whose members are the wire values -------------------


async def test_the_words_are_the_wire_values() -> None:
    assert contract.STATES == ("queued", "awaiting_approval", "dispatched", "cleaning_up",
                               "ended")
    assert contract.STATUSES == ("completed", "failed", "cancelled", "outcome_unknown")
    assert contract.DISPATCHED == ("no", "yes", "unknown")
    op = Operation("s", "eval", {})
    op.fail(BskError("cancelled", "stop", details={"reason": contract.CancelReason.DEADLINE}))
    sent = json.loads(json.dumps(op.to_result()))
    assert (sent["state"], sent["status"], sent["dispatched"]) == ("ended", "cancelled", "no")
    assert type(op.state) is contract.State and type(op.dispatched) is contract.Dispatched
    assert sent["error"]["details"]["reason"] == "deadline"


def test_every_cancel_reason_is_worded() -> None:
    from browserskill.dispatch.dispatcher import _CANCEL_TEXT

    assert set(_CANCEL_TEXT) == set(contract.CancelReason)


def _keyword_literals(names: set[str]) -> list[tuple[str, str, str]]:
    """(keyword, its literal, where) for every `f(name="literal")` in the package."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg in names and isinstance(kw.value, ast.Constant) \
                            and isinstance(kw.value.value, str):
                        found.append((kw.arg, kw.value.value,
                                      f"{path.relative_to(ROOT.parent)}:{kw.value.lineno}"))
    return found


def test_the_words_still_written_as_text_are_the_enums() -> None:
    """Tools (and the error table) still write `dispatched="no"` as plain text; a typo
    there would be no enum's error, so it is this test's."""
    words = {"dispatched": set(contract.DISPATCHED), "status": set(contract.STATUSES)}
    wrong = [(k, v, where) for k, v, where in _keyword_literals(set(words))
             if v not in words[k]]
    assert not wrong, wrong
    assert {c.dispatched for c in CODES.values()} <= set(contract.DISPATCHED)
    assert set(STATUS_FOR_CODE.values()) <= set(contract.STATUSES)


async def test_a_batchs_steps_are_found_by_its_id_even_when_cut_to_fit(tmp_path: Path) -> None:
    """`op show BATCH_ID` names the steps: the journal's lookup and the ids minted for
    them agree, a long batch id (its end cut to fit `-k`) and its ids past step 9 too."""
    from browserskill.dispatch.journal import Journal

    journal = Journal(tmp_path / "journal.sqlite3")
    for batch_id in (contract.new_op_id(), "op_" + "b" * contract.OP_ID_LENGTH[1]):
        steps = [contract.batch_step_op_id(batch_id, k) for k in range(1, 13)]
        assert all(contract.valid_op_id(s) for s in steps)
        others = [steps[0] + "0", steps[0].rpartition("-")[0] + "-01", batch_id + "x-1"]
        for op_id in [*reversed(steps), *others]:
            assert journal.record(Operation("s1", "eval", {"expression": "1"}, op_id=op_id))
        assert journal.steps_of(batch_id) == steps
        assert contract.batch_steps(batch_id, [*others, *steps[::-1]]) == steps
    journal.close()
