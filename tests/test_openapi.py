"""The OpenAPI document: the served one is the one kept in the repo, it covers every tool,
and it declares `X-Should-Retry` for every error status the error table can produce."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from browserskill.base.catalog import TOOLS, ToolSpec
from browserskill.base.errors import CODES, SHOULD_RETRY

REPO_COPY = Path(__file__).resolve().parent.parent / "browserskill" / "api" / "openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def served(api: httpx.Client) -> dict[str, Any]:
    r = api.get("/v1/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    return r.json()


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in doc["paths"].items()
            for method, op in item.items() if method in METHODS]


def error_responses(doc: dict[str, Any]) -> list[tuple[str, str, int, dict[str, Any]]]:
    return [(path, method, int(status), response)
            for path, method, op in operations(doc)
            for status, response in op["responses"].items() if int(status) >= 300]


def test_served_document_is_the_one_in_the_repo(served: dict[str, Any]) -> None:
    kept = json.loads(REPO_COPY.read_text())
    assert served == kept, ("the served OpenAPI document differs from the repo's copy; "
                            "regenerate it with `python -m browserskill.api.openapi --write`")
    assert served["openapi"].startswith("3.")


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_every_tool_has_a_path(served: dict[str, Any], spec: ToolSpec) -> None:
    if spec.name == "session_stop":  # docs/http-api.md: stopping is DELETE on the session
        assert "delete" in served["paths"]["/v1/sessions/{sid}"]
        return
    item = served["paths"].get(f"/v1/sessions/{{sid}}/tools/{spec.name}")
    assert item is not None and "post" in item, f"no path for tool {spec.name}"
    schema = item["post"]["requestBody"]["content"]["application/json"]["schema"]
    for p in spec.params:
        assert schema["properties"][p.name]["type"] == p.type, p.name
    # A batch answers when its last step ends (api/batch.py): it has no detach.
    options = {"wait", "timeout_ms"} | ({"detach"} if spec.name != "batch" else set())
    assert options <= set(schema["properties"])
    assert spec.name != "batch" or "detach" not in schema["properties"]
    assert sorted(schema["required"]) == sorted(p.name for p in spec.params if p.required)
    assert schema["additionalProperties"] is False


def test_no_path_for_a_tool_that_does_not_exist(served: dict[str, Any]) -> None:
    prefix = "/v1/sessions/{sid}/tools/"
    documented = {p.removeprefix(prefix) for p in served["paths"] if p.startswith(prefix)}
    assert documented == {t.name for t in TOOLS if t.name != "session_stop"}


@pytest.mark.parametrize("status", sorted({c.http for c in CODES.values() if c.http >= 300}))
def test_every_error_status_is_declared_with_x_should_retry(
    served: dict[str, Any], status: int
) -> None:
    declared = [r for _, _, s, r in error_responses(served) if s == status]
    assert declared, f"no operation declares HTTP {status}"
    assert any("X-Should-Retry" in r.get("headers", {}) for r in declared)


def test_every_error_response_declares_x_should_retry(served: dict[str, Any]) -> None:
    missing = [(path, method, status) for path, method, status, r in error_responses(served)
               if "X-Should-Retry" not in r.get("headers", {})]
    assert missing == []


def test_declared_retry_values_admit_what_is_sent(served: dict[str, Any]) -> None:
    wrong = []
    for path, method, status, r in error_responses(served):
        schema = r.get("headers", {}).get("X-Should-Retry", {}).get("schema", {})
        names = [n for n in r.get("description", "").split(", ") if n in CODES]
        for name in names:
            sent = "true" if name in SHOULD_RETRY else "false"
            if "enum" in schema and sent not in schema["enum"]:
                wrong.append(f"{method.upper()} {path} {status} {name}: sends {sent}, "
                             f"declares {schema['enum']}")
    assert wrong == []


def test_every_documented_operation_is_served(api: httpx.Client, served: dict[str, Any]) -> None:
    """Each path answers (not "no endpoint") with a status it declares. Ids are unknown
    and bodies invalid, so nothing is created, run or stopped."""
    for path, method, op in operations(served):
        if path == "/v1/daemon/stop":
            continue  # the shared daemon must live on
        url = path.replace("{sid}", "no-such-session").replace("{op_id}", "op_000000000000")
        body = {"no_such_field": 1} if method == "post" else None
        r = api.request(method.upper(), url, json=body)
        if r.status_code >= 300:
            error = r.json()["error"]
            assert error["details"].get("field") != "path", f"{method} {path}: {error}"
            assert "x-should-retry" in r.headers
        assert str(r.status_code) in op["responses"], f"{method} {path} answered {r.status_code}"
