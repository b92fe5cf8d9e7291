"""The control calls (browserskill/base/controls.py) reach every surface from their one
definition: a route served by the handler registered under their name, an OpenAPI path,
a `bsk` command and a method on both clients; and nothing is served, documented,
commanded or offered that has no control."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from support.cli import Bsk

from browserskill.api.app import build_app
from browserskill.api.openapi import document
from browserskill.base import catalog, controls
from browserskill.base.controls import CONTROLS, Control
from browserskill.cli import commands
from browserskill.client import AsyncClient, Client, Result
from browserskill.client.core import _Request

ids = [c.name for c in CONTROLS]
TOOL_ROUTE = ("/v1/sessions/{sid}/tools/{tool}", "POST")  # every catalog tool's
CLI_ROUTE = ("/v1/cli", "POST")  # bsk's launcher only: not an API


def served_routes() -> set[tuple[str, str]]:
    """The app's routes, built with a stand-in daemon (handlers reach it only when called)."""
    daemon = SimpleNamespace(dispatcher=None, test_routes=[])
    app = build_app(daemon, SimpleNamespace())  # type: ignore[arg-type]
    return {(r.path, m) for r in app.app.routes for m in r.methods - {"HEAD"}}


def test_the_served_routes_are_the_controls_and_the_tool_route() -> None:
    declared = {(c.path, c.method) for c in CONTROLS}
    assert len(declared) == len(CONTROLS), "two controls with one method and path"
    assert served_routes() == declared | {TOOL_ROUTE, CLI_ROUTE}


def test_the_documented_paths_are_the_controls_and_the_tools() -> None:
    doc = document()
    documented = {(path, method.upper()): op for path, item in doc["paths"].items()
                  for method, op in item.items()}
    tools = {(f"/v1/sessions/{{sid}}/tools/{t.name}", "POST")
             for t in catalog.TOOLS if not t.hidden}
    assert set(documented) == {(c.path, c.method) for c in CONTROLS} | tools
    for c in CONTROLS:
        op = documented[(c.path, c.method)]
        assert op["operationId"] == c.name and op["summary"] == c.summary
        path_params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert path_params == {f.name for f in c.params if f.where == "path"}
        assert path_params == {part[1:-1] for part in c.path.split("/")
                               if part.startswith("{")}, c.name
    assert len({op["operationId"] for op in documented.values()}) == len(documented)


@pytest.mark.parametrize("c", CONTROLS, ids=ids)
def test_every_control_has_a_command(c: Control) -> None:
    if c.cli is None:  # the HTTP form of a catalog tool: the tool's command is its
        assert c.tool is not None and catalog.BY_NAME[c.tool].words in catalog.BY_WORDS
        return
    command = commands.CONTROL_BY_WORDS[c.cli.words]
    assert (command.usage, command.summary) == (c.cli.usage, c.cli.summary)
    tool = catalog.BY_WORDS.get(command.words)
    assert tool is None or tool.hidden, "a tool's words"  # session stop: a hidden tool


def test_every_command_is_a_control_or_local() -> None:
    from_controls = {c.cli.words for c in CONTROLS if c.cli is not None}
    local = {c.words for c in commands.LOCAL}
    assert not from_controls & local
    assert [c.words for c in commands.CONTROL] == list(commands.CONTROL_BY_WORDS)
    assert set(commands.CONTROL_BY_WORDS) == from_controls | local
    assert set(commands.RUNNERS) <= {c.name for c in CONTROLS if c.cli is not None}


@pytest.mark.parametrize("c", CONTROLS, ids=ids)
def test_every_control_has_a_method_on_both_clients(c: Control) -> None:
    name = c.tool if c.client is None else c.client.name
    assert c.client is not None or c.tool is not None
    blocking, awaitable = getattr(Client, name), getattr(AsyncClient, name)
    assert not inspect.iscoroutinefunction(blocking)
    assert inspect.iscoroutinefunction(awaitable)
    if c.client is None:
        return
    assert name not in catalog.BY_NAME or catalog.BY_NAME[name].hidden, "a tool's name"
    for method in (blocking, awaitable):
        params = list(inspect.signature(method).parameters)[1:]
        if c.client.args is not None:  # written by hand: held to the declared parameters
            assert params == list(c.client.args), (name, params)
        else:
            assert params[:len(path := [f.name for f in c.params if f.where == "path"])] \
                == path


@pytest.mark.parametrize(("cls", "own"), [(Client, {"call", "close"}),
                                         (AsyncClient, {"call", "aclose"})])
def test_every_client_method_is_a_tool_or_a_control(cls: type, own: set[str]) -> None:
    public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
    tools = {t.name for t in catalog.TOOLS if not t.hidden}
    assert public == tools | {c.client.name for c in CONTROLS if c.client} | own


# What the hand-written methods are called with, and what their answer is made from.
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "session_start": (("s1",), {}), "session_list": ((), {}), "session_stop": (("s1",), {}),
    "op_list": ((), {}), "op_get": (("op_1",), {}), "op_cancel": (("op_1",), {}),
    "op_wait": (("op_1",), {}), "health": ((), {}), "status": ((), {"connect": True}),
    "tools": ((), {}),
}
ANSWER = {"session_id": "s1", "sessions": [], "ops": [], "tools": [], "op_id": "op_1",
          "session": "s1", "tool": "eval", "state": "ended", "status": "completed"}


def _template_matches(template: str, path: str) -> bool:
    parts, sent = template.split("/"), path.split("?")[0].split("/")
    return len(parts) == len(sent) and all(
        p.startswith("{") or p == s for p, s in zip(parts, sent, strict=True))


@pytest.mark.parametrize("c", [c for c in CONTROLS if c.client is not None], ids=lambda c: c.name)
def test_every_client_method_sends_its_controls_method_and_path(c: Control) -> None:
    sent: list[_Request] = []

    def record(req: _Request) -> tuple[int, Mapping[str, str], Any]:
        sent.append(req)
        return 200, {}, ANSWER

    async def arecord(req: _Request) -> tuple[int, Mapping[str, str], Any]:
        return record(req)

    args, kwargs = CALLS.get(c.client.name, (("x",) * sum(
        f.where == "path" for f in c.params), {}))
    with Client(autostart=False) as blocking:
        blocking._send = record  # type: ignore[method-assign]
        answer = getattr(blocking, c.client.name)(*args, **kwargs)
    aio = AsyncClient(autostart=False)
    aio._send = arecord  # type: ignore[method-assign]
    asyncio.run(getattr(aio, c.client.name)(*args, **kwargs))
    assert len(sent) == 2
    for req in sent:
        assert req.method == c.method and _template_matches(c.path, req.path), req
    if c.answers == "operation":
        assert isinstance(answer, Result)


# -- the generated surfaces, against the real daemon -------------------------------------------


def test_generated_commands_answer(shared_bsk: Bsk) -> None:
    health = shared_bsk.ok("health")
    assert health["ok"] is True and health["version"]
    assert {t["name"] for t in shared_bsk.ok("tools")["tools"]} >= {"open", "click"}
    assert shared_bsk.ok("openapi")["paths"]["/v1/health"]["get"]["operationId"] == "health"
    surplus = shared_bsk("health", "surplus")
    assert surplus.code == 2 and surplus.json["error"]["details"]["field"] == "arguments"
    assert "usage: bsk health" in surplus.json["error"]["hint"]


def test_generated_client_methods_answer(shared_bsk: Bsk) -> None:
    shared_bsk.ok("daemon", "start")
    with Client(home=shared_bsk.home, autostart=False) as c:
        info = c.daemon_info()  # type: ignore[attr-defined]
        assert info["pid"] == shared_bsk.ok("daemon", "status")["pid"]
        assert "policy" in c.policy()  # type: ignore[attr-defined]
        assert c.openapi()["info"]["title"]  # type: ignore[attr-defined]
        with pytest.raises(Exception) as failed:
            c.extension_unpair("no-such-browser")  # type: ignore[attr-defined]
        assert getattr(failed.value, "code", None) == "not_configured"

    async def run() -> dict[str, Any]:
        async with AsyncClient(home=shared_bsk.home, autostart=False) as a:
            answer: dict[str, Any] = await a.browsers()  # type: ignore[attr-defined]
            return answer

    assert asyncio.run(run())["listening"] is False


def test_a_path_parameter_is_quoted() -> None:
    unpair = controls.BY_NAME["extension_unpair"]
    assert controls.path_of(unpair, browser_id="a/b c") == "/v1/extension/pairings/a%2Fb%20c"
