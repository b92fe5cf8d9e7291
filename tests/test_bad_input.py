"""Bad input, everywhere: every command and every HTTP endpoint rejects it before anything
reaches the browser, with the table's code, a message that names the field, and no
traceback. The cases are generated from the tool catalog, so new tools are covered."""

from __future__ import annotations

import json
import math
import shlex
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.cli import Bsk, CliRun

from browserskill.base.catalog import TOOLS, Param, ToolSpec
from browserskill.base.errors import CODES, SHOULD_RETRY
from browserskill.cli.commands import CONTROL, CONTROL_BY_WORDS

# Tools with a CLI form of their own (`session stop` is a control command on the CLI).
CLI_TOOLS = [t for t in TOOLS if t.words not in CONTROL_BY_WORDS]
HTTP_TOOLS = [t for t in TOOLS if t.name != "session_stop"]
COMMANDS = [t.words for t in CLI_TOOLS] + [c.words for c in CONTROL]
NO_SUCH_SESSION = "no-such-session"
NO_SUCH_OP = "op_000000000000"


def sample(p: Param) -> str:
    """A value the CLI accepts for this parameter."""
    if p.choices:
        return str(p.choices[0])
    if p.type == "integer":
        return str(math.ceil(p.minimum) if p.minimum is not None else 1)
    if p.type == "number":
        return str(p.minimum if p.minimum is not None else 1)
    if p.type == "object":
        return "{}"
    return "x.png" if p.path else "x"


def required_flags(spec: ToolSpec, but: Param | None = None) -> list[str]:
    return [f"{p.flag}={sample(p)}" for p in spec.params if p.required and p is not but]


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    code: str = "invalid_params"
    field: str | None = None  # details.field, also the message's first word
    mention: str | None = None  # text the message must contain

    @property
    def id(self) -> str:
        return " ".join(a if len(a) < 40 else f"{a[:12]}…({len(a)} chars)" for a in self.args)


def tool_cases() -> Iterator[Case]:
    seen: set[Param] = set()  # a parameter shared by tools (REF, WAIT_UNTIL) is checked once
    for spec in CLI_TOOLS:
        words = spec.words
        if any(p.required for p in spec.params):  # nothing given at all
            yield Case(words, field=next(p.name for p in spec.params if p.required))
        yield Case((*words, *required_flags(spec), "--no-such-option"), field="no-such-option")
        positionals = [p for p in spec.params if p.positional]
        if all(p.type != "array" for p in positionals):
            yield Case((*words, *map(sample, positionals), "surplus"), field="arguments",
                       mention="surplus")
        for p in spec.params:
            if p in seen:
                continue
            seen.add(p)
            others = (*words, *required_flags(spec, but=p))
            if p.required:
                yield Case(others, field=p.name)
                if p.type == "string" and not getattr(p, "blank_ok", False):
                    yield Case((*others, f"{p.flag}="), field=p.name)
            if p.type in ("integer", "number"):
                yield Case((*others, f"{p.flag}=abc"), field=p.name, mention="abc")
            if p.type == "object":
                yield Case((*others, f"{p.flag}={{no json"), field=p.name)
                yield Case((*others, f"{p.flag}=[1]"), field=p.name)
            if p.choices:
                yield Case((*others, f"{p.flag}=no-such-choice"), field=p.name,
                           mention="no-such-choice")
            if p.minimum is not None:
                yield Case((*others, f"{p.flag}={math.floor(p.minimum) - 1}"), field=p.name)
            if p.maximum is not None:
                yield Case((*others, f"{p.flag}={math.ceil(p.maximum) + 1}"), field=p.name)
            if p.type == "string" and p.max_length and p.max_length < 100_000:  # argv caps
                yield Case((*others, f"{p.flag}={'x' * (p.max_length + 1)}"), field=p.name)
            if p.type != "boolean" and not p.positional and p.bare is None:
                yield Case((*words, *required_flags(spec), p.flag), field=p.name)  # no value
            if p.bare is not None:  # may stand alone, but a value it takes must be a choice
                yield Case((*words, *required_flags(spec), f"{p.flag}=nonsense"),
                           field=p.name)


CONTROL_CASES = [
    Case(("session", "start", "--no-such-option"), field="no-such-option"),
    Case(("session", "start", "a", "surplus"), field="arguments", mention="surplus"),
    Case(("session", "start", "bad/id"), field="session_id"),
    Case(("session", "list", "surplus"), field="arguments", mention="surplus"),
    Case(("session", "stop", "a", "surplus"), field="arguments"),
    Case(("session", "stop", "--no-such-option"), field="arguments"),
    Case(("status", "surplus"), field="arguments", mention="surplus"),
    Case(("doctor", "surplus"), field="arguments", mention="surplus"),
    Case(("daemon", "stop", "surplus"), field="arguments", mention="surplus"),
    Case(("daemon", "status", "surplus"), field="arguments", mention="surplus"),
    Case(("op", "show"), field="op_id"),
    Case(("op", "show", "a", "b"), field="op_id"),
    Case(("op", "cancel"), field="op_id"),
    Case(("op", "wait"), field="op_id"),
    Case(("op", "list", "surplus"), field="arguments", mention="surplus"),
    Case(("version", "surplus"), field="arguments", mention="surplus"),
]


def good_call(spec: ToolSpec) -> list[str]:
    """A call the CLI accepts: the catalog's example, else the required parameters."""
    if spec.example:
        return shlex.split(spec.example)[1:]
    return [*spec.words, *required_flags(spec)]


def unknown_session_cases() -> Iterator[Case]:
    for spec in CLI_TOOLS:
        yield Case(("-s", NO_SUCH_SESSION, *good_call(spec)), code="session_not_found",
                   mention=NO_SUCH_SESSION)
    yield Case(("session", "stop", NO_SUCH_SESSION), code="session_not_found",
               mention=NO_SUCH_SESSION)


OP_CASES = [Case(("op", verb, NO_SUCH_OP), code="op_not_found", mention=NO_SUCH_OP)
            for verb in ("show", "wait", "cancel")]


def ids(case: Any) -> str:
    return case.id if isinstance(case, Case) else str(case)


def assert_rejected(r: CliRun, case: Case) -> dict[str, Any]:
    """The call was refused before dispatch, by the table, naming what was wrong."""
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    entry = CODES[case.code]
    assert r.code == entry.exit, f"exit {r.code}: {out}"
    answer = r.json
    error = answer["error"]
    assert error["code"] == case.code, error
    assert answer["status"] == "failed" and answer["dispatched"] == "no", answer
    assert answer["retry_safe"] is entry.retry_safe
    if case.field is not None:
        assert error["details"].get("field") == case.field, error
        assert error["message"].startswith(f"{case.field}:"), error["message"]
    if case.mention is not None:
        assert case.mention in error["message"], error["message"]
    return answer


@pytest.fixture(scope="module")
def agent(shared_bsk: Bsk) -> Iterator[Bsk]:
    """A real session on the shared daemon: bad calls are aimed at it, so nothing but the
    bad input itself can be why they fail."""
    runner = shared_bsk.with_session("bad-input")
    runner.ok("session", "start", runner.session)
    yield runner
    runner("session", "stop", "--wait")


# -- the CLI -------------------------------------------------------------------------


def run_all(run: Callable[[tuple[str, ...]], CliRun],
            arg_lists: Iterable[tuple[str, ...]]) -> dict[tuple[str, ...], CliRun]:
    """Run many independent `bsk` calls a few at a time (each is a process start-up)."""
    unique = list(dict.fromkeys(arg_lists))
    with ThreadPoolExecutor(max_workers=6) as pool:
        return dict(zip(unique, pool.map(run, unique), strict=True))


def case_args(cases: list[Any]) -> list[tuple[str, ...]]:
    return [(c.values[0] if hasattr(c, "values") else c).args for c in cases]


REJECT_CASES = [*dict.fromkeys(tool_cases()), *CONTROL_CASES]
ID_CASES = [*unknown_session_cases(), *OP_CASES]


@pytest.fixture(scope="module")
def rejected(agent: Bsk) -> dict[tuple[str, ...], CliRun]:
    return run_all(lambda args: agent(*args), case_args(REJECT_CASES))


@pytest.fixture(scope="module")
def unknown(shared_bsk: Bsk) -> dict[tuple[str, ...], CliRun]:
    return run_all(lambda args: shared_bsk(*args), case_args(ID_CASES))


@pytest.mark.parametrize("case", REJECT_CASES, ids=ids)
def test_cli_rejects_bad_arguments(rejected: dict[tuple[str, ...], CliRun], case: Case) -> None:
    assert_rejected(rejected[case.args], case)


@pytest.mark.parametrize("case", ID_CASES, ids=ids)
def test_cli_unknown_ids(unknown: dict[tuple[str, ...], CliRun], case: Case) -> None:
    answer = assert_rejected(unknown[case.args], case)
    key = "session_id" if case.code == "session_not_found" else "op_id"
    assert answer["error"]["details"][key] == case.mention


@pytest.mark.parametrize(("args", "key", "value"), [
    (("-s", "a/b", "eval", "1"), "session_id", "a/b"),
    (("-s", "", "eval", "1"), "session_id", ""),
    (("session", "stop", "a/b"), "session_id", "a/b"),
    (("op", "show", "op_a/b"), "op_id", "op_a/b"),
], ids=["-s a/b", "-s ''", "session stop a/b", "op show op_a/b"])
def test_cli_ids_that_are_not_ids(shared_bsk: Bsk, args: tuple[str, ...], key: str,
                                  value: str) -> None:
    r = shared_bsk(*args)
    assert "Traceback" not in r.stdout + r.stderr
    error = r.json["error"]
    assert r.json["dispatched"] == "no"
    # Either "no such session/op" or "this is not a valid id", but about the id, not a path.
    field = error["details"].get("field")
    assert error["details"].get(key) == value or field in (key, key.split("_")[0]), error
    assert field != "path", error


@pytest.fixture(scope="module")
def bad_timeout(shared_bsk: Bsk) -> dict[tuple[str, ...], CliRun]:
    return run_all(lambda args: shared_bsk(*args, "--timeout", "-1", as_json=False), COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_cli_bad_timeout_for_every_command(bad_timeout: dict[tuple[str, ...], CliRun],
                                           command: tuple[str, ...]) -> None:
    r = bad_timeout[command]
    assert r.code == CODES["invalid_params"].exit, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert r.stdout == ""
    first = r.stderr.splitlines()[0]
    assert "[invalid_params]" in first and "timeout:" in first
    assert "dispatched: no" in r.stderr


@pytest.mark.parametrize("case", [
    *(Case(("eval", "1", "--timeout", v), field="timeout") for v in ("-1", "0", "abc", "601")),
    Case(("eval", "1", "--session"), field="session"),
    Case(("eval", "1", "--key"), field="key"),
], ids=ids)
def test_cli_bad_global_option_is_json_with_json(shared_bsk: Bsk, case: Case) -> None:
    assert_rejected(shared_bsk(*case.args), case)


@pytest.mark.parametrize(("typed", "meant"), [
    (("opn", "http://x"), "open"),
    (("snapshto",), "snapshot"),
    (("relaod",), "reload"),
    (("screenshoot",), "screenshot"),
    (("sesion", "start"), "session start"),
    (("tab", "slect", "t1"), "tab select"),
    (("daemon", "stat"), "daemon status"),
], ids=ids)
def test_cli_unknown_command_suggests_the_close_one(
    shared_bsk: Bsk, typed: tuple[str, ...], meant: str
) -> None:
    answer = assert_rejected(shared_bsk(*typed), Case(typed, field="command", mention=typed[0]))
    hint = answer["error"]["hint"]
    assert hint.startswith("did you mean: "), hint
    suggested = hint.removeprefix("did you mean: ").rstrip("?").split(", ")
    assert meant in suggested


@pytest.mark.parametrize(("typed", "meant"), [
    (("goto", "http://x"), "open"), (("navigate", "http://x"), "open"), (("tap", "e1"), "click"),
    (("evaluate", "1"), "eval"), (("tabs",), "tab list"),
], ids=ids)
def test_cli_another_tools_word_is_answered_with_bsks(
    shared_bsk: Bsk, typed: tuple[str, ...], meant: str
) -> None:
    answer = assert_rejected(shared_bsk(*typed), Case(typed, field="command", mention=typed[0]))
    assert answer["error"]["hint"] == f"bsk calls it `{meant}`"


def test_cli_unknown_command_without_a_close_one(shared_bsk: Bsk) -> None:
    answer = assert_rejected(shared_bsk("xyzzy"), Case(("xyzzy",), field="command",
                                                       mention="xyzzy"))
    assert "bsk --help" in answer["error"]["hint"]


def test_cli_suggestions_are_not_repeated(shared_bsk: Bsk) -> None:
    hint = shared_bsk("sesion", "stop").json["error"]["hint"]
    suggested = hint.removeprefix("did you mean: ").rstrip("?").split(", ")
    assert len(suggested) == len(set(suggested)), hint


@pytest.mark.parametrize("options", [
    ("--no-such-option",),
    ("--idle-timeout", "abc"),
], ids=" ".join)
def test_cli_daemon_start_bad_options(make_bsk: Callable[..., Bsk],
                                      options: tuple[str, ...]) -> None:
    runner = make_bsk()
    case = Case(("daemon", "start", *options), field=options[0].lstrip("-"))
    assert_rejected(runner(*case.args), case)


# -- HTTP ------------------------------------------------------------------------------


def assert_http_error(r: httpx.Response, code: str, field: str | None = None) -> dict[str, Any]:
    assert r.status_code == CODES[code].http, r.text
    assert "Traceback" not in r.text
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert error["code"] == code, error
    assert set(error) >= {"code", "message", "hint", "details"}
    retry = code in SHOULD_RETRY
    assert r.headers["x-should-retry"] == ("true" if retry else "false")
    assert ("retry-after" in r.headers) is retry
    if field is not None:
        assert error["details"].get("field") == field, error
        assert error["message"].startswith(f"{field}:"), error["message"]
    return error


def tool_path(sid: str, tool: str) -> str:
    return f"/v1/sessions/{sid}/tools/{tool}"


def valid_body(spec: ToolSpec) -> dict[str, Any]:
    convert: dict[str, Callable[[str], Any]] = {
        "integer": int, "number": float, "array": lambda v: [v], "boolean": lambda v: True,
        "object": json.loads}
    # Over HTTP a path must be absolute (the CLI makes it so).
    return {p.name: convert.get(p.type, str)("/" + sample(p) if p.path else sample(p))
            for p in spec.params if p.required}


WRONG_TYPE: dict[str, list[Any]] = {
    "string": [5, ["x"]], "integer": ["abc", 1.5, True],
    "number": ["abc", True], "boolean": ["yes", 1], "array": ["x", [1]],
    "object": ["{}", [1]],
}


def wrong_type_cases() -> Iterator[Any]:
    seen: set[Param] = set()
    for spec in HTTP_TOOLS:
        for p in spec.params:
            if p in seen:
                continue
            seen.add(p)
            for bad in WRONG_TYPE[p.type]:
                yield pytest.param(spec, p.name, bad, id=f"{spec.name}.{p.name}={bad!r}")
    # The per-call options are read the same way for every tool.
    eval_spec = next(t for t in HTTP_TOOLS if t.name == "eval")
    for name, bad in (("wait", "yes"), ("detach", 1), ("timeout_ms", -1), ("timeout_ms", 0),
                      ("timeout_ms", "abc"), ("timeout_ms", 600_001), ("timeout_ms", True)):
        yield pytest.param(eval_spec, name, bad, id=f"eval.{name}={bad!r}")


BAD_BODIES = [b"{bad", b'{"expression": "1"', b"\xff\xfe", b"[1, 2]", b'"text"', b"42", b"null"]


@pytest.mark.parametrize("raw", BAD_BODIES, ids=repr)
@pytest.mark.parametrize("where", ["tool", "sessions"])
def test_http_body_not_a_json_object(api: httpx.Client, agent: Bsk, raw: bytes,
                                     where: str) -> None:
    path = tool_path(agent.session, "eval") if where == "tool" else "/v1/sessions"
    r = api.post(path, content=raw, headers={"content-type": "application/json"})
    assert_http_error(r, "invalid_params", field="body")


def test_http_unknown_tool(api: httpx.Client, agent: Bsk) -> None:
    """No such tool is no such path; session_stop's path exists in another form."""
    error = assert_http_error(api.post(tool_path(agent.session, "no_such_tool"), json={}),
                              "path_not_found")
    assert "no_such_tool" in error["message"] and error["details"] == {"tool": "no_such_tool"}
    error = assert_http_error(api.post(tool_path(agent.session, "session_stop"), json={}),
                              "invalid_params", field="tool")
    assert "DELETE" in error["message"]


@pytest.mark.parametrize("spec", HTTP_TOOLS, ids=lambda s: s.name)
def test_http_unknown_field(api: httpx.Client, agent: Bsk, spec: ToolSpec) -> None:
    body = {**valid_body(spec), "no_such_field": 1}
    assert_http_error(api.post(tool_path(agent.session, spec.name), json=body),
                      "invalid_params", field="no_such_field")


def test_http_session_create_bad_fields(api: httpx.Client) -> None:
    assert_http_error(api.post("/v1/sessions", json={"no_such_field": 1}),
                      "invalid_params", field="no_such_field")
    for name in ("session_id", "label"):
        assert_http_error(api.post("/v1/sessions", json={name: 5}), "invalid_params", field=name)
    # The daemon's rule is the contract's (a regex's `$` once let a trailing newline in).
    for bad_id in ("abc\n", "", "-a", "a" * 65, "a b"):
        assert_http_error(api.post("/v1/sessions", json={"session_id": bad_id}),
                          "invalid_params", field="session_id")


@pytest.mark.parametrize(("spec", "name", "bad"), list(wrong_type_cases()))
def test_http_wrong_type(api: httpx.Client, agent: Bsk, spec: ToolSpec, name: str,
                         bad: Any) -> None:
    body = {**valid_body(spec), name: bad}
    assert_http_error(api.post(tool_path(agent.session, spec.name), json=body),
                      "invalid_params", field=name)


@pytest.mark.parametrize("path", ["/v1/ops?limit=abc", "/v1/ops?limit=0",
                                  f"/v1/ops/{NO_SUCH_OP}/wait?timeout_ms=abc"])
def test_http_bad_query(api: httpx.Client, path: str) -> None:
    name = path.split("?")[1].split("=")[0]
    assert_http_error(api.get(path), "invalid_params", field=name)


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/nowhere"), ("GET", "/nowhere"), ("GET", "/v2/health"),
    ("GET", "/v1/nope?x=1"), ("POST", "/v1/sessions/x/nothing"),
    ("POST", "/v1/sessions/{sid}/tools/nosuchtool"), ("GET", "/v1/sessions/{sid}/tools"),
])
def test_http_unknown_path_is_404_path_not_found(api: httpx.Client, agent: Bsk, method: str,
                                                 path: str) -> None:
    """A path the API does not have is "not found" (it was 400 invalid_params), and the
    hint says where the paths are listed."""
    path = path.format(sid=agent.session)
    r = api.request(method, path, json={} if method == "POST" else None)
    error = assert_http_error(r, "path_not_found")
    assert r.status_code == 404 and CODES["path_not_found"].exit == 3
    shown = path.split("?")[0].split("/tools/")[-1] if "/tools/" in path else path.split("?")[0]
    assert shown in error["message"]
    assert "/v1/openapi.json" in error["hint"] or "/v1/tools" in error["hint"], error


@pytest.mark.parametrize(("method", "path"), [
    ("DELETE", "/v1/health"), ("POST", "/v1/status"), ("PUT", "/v1/sessions"),
])
def test_http_known_path_wrong_method_stays_405(api: httpx.Client, method: str,
                                                path: str) -> None:
    r = api.request(method, path)
    assert_http_error(r, "method_not_allowed", field="method")
    assert path in r.json()["error"]["message"]


@pytest.mark.parametrize(("method", "path", "code"), [
    ("POST", tool_path(NO_SUCH_SESSION, "eval"), "session_not_found"),
    ("DELETE", f"/v1/sessions/{NO_SUCH_SESSION}", "session_not_found"),
    ("GET", f"/v1/ops/{NO_SUCH_OP}", "op_not_found"),
    ("GET", f"/v1/ops/{NO_SUCH_OP}/wait", "op_not_found"),
    ("POST", f"/v1/ops/{NO_SUCH_OP}/cancel", "op_not_found"),
])
def test_http_unknown_ids(api: httpx.Client, method: str, path: str, code: str) -> None:
    body = {"expression": "1"} if path.endswith("/eval") else None
    error = assert_http_error(api.request(method, path, json=body), code)
    assert (NO_SUCH_SESSION if code == "session_not_found" else NO_SUCH_OP) in error["message"]


def test_an_unknown_tab_is_tab_not_found_listing_the_tabs(api: httpx.Client,
                                                          agent: Bsk) -> None:
    """A well-formed id naming nothing is "not found" (exit 3, HTTP 404), as an unknown
    session or operation is, and the message says which tabs there are."""
    tabs = [t["tab_id"] for t in agent.ok("tab", "list")["result"]["tabs"]]
    for words in (("tab", "select"), ("tab", "close")):
        r = agent(*words, "NOSUCH")
        assert r.code == 3, r
        error = r.json["error"]
        assert error["code"] == "tab_not_found" and r.json["dispatched"] == "no"
        assert "'NOSUCH'" in error["message"] and all(t in error["message"] for t in tabs)
        assert error["details"] == {"tab_id": "NOSUCH", "tabs": tabs}
        assert "bsk tab list" in error["hint"]
        text = agent(*words, "NOSUCH", as_json=False)
        assert text.code == 3 and "[tab_not_found]" in text.stderr and tabs[0] in text.stderr
    r = api.post(tool_path(agent.session, "tab_select"), json={"tab_id": "NOSUCH"})
    assert r.status_code == 404, r.text
    assert r.json()["error"]["code"] == "tab_not_found" and r.json()["status"] == "failed"
    assert [t["tab_id"] for t in agent.ok("tab", "list")["result"]["tabs"]] == tabs


def test_an_unknown_request_id_is_request_not_found(api: httpx.Client, agent: Bsk) -> None:
    r = agent("network", "show", "NOSUCH")
    assert r.code == 3, r
    error = r.json["error"]
    assert error["code"] == "request_not_found" and "'NOSUCH'" in error["message"]
    assert "bsk network" in error["hint"] and error["details"]["id"] == "NOSUCH"
    r = api.post(tool_path(agent.session, "network_show"), json={"id": "NOSUCH"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "request_not_found", r.text


def test_session_busy_says_retry_later(api: httpx.Client, bsk: Bsk) -> None:
    # A detached eval that holds the session until it is cancelled below.
    slow = api.post(tool_path(bsk.session, "eval"), json={
        "expression": "await new Promise(r => setTimeout(r, 60000))", "detach": True})
    assert slow.status_code == 202, slow.text
    holder = slow.json()["op_id"]

    for r in (api.post(tool_path(bsk.session, "eval"), json={"expression": "1"}),
              api.delete(f"/v1/sessions/{bsk.session}")):
        error = assert_http_error(r, "session_busy")
        assert int(r.headers["retry-after"]) >= 0
        body = r.json()
        assert body["dispatched"] == "no" and body["retry_safe"] is True
        assert error["details"]["holder"]["op_id"] == holder

    cli = bsk("eval", "1")
    answer = assert_rejected(cli, Case(("eval", "1"), code="session_busy"))
    assert answer["error"]["details"]["holder"]["op_id"] == holder

    assert api.post(f"/v1/ops/{holder}/cancel").status_code == 200
    ended = api.get(f"/v1/ops/{holder}/wait", params={"timeout_ms": 30_000})
    assert ended.status_code != 202 and ended.json()["state"] == "ended", ended.text
    assert bsk("eval", "1").value == 1  # free again


# -- hostile input: text that is not Unicode, deep or huge bodies, numbers that are not
#    numbers, NUL, short bodies, unwritable paths, unusable state dirs ------------------

LONE = "\ud800"  # a lone UTF-16 surrogate: what String.fromCharCode(0xD800) gives
LONG_NAME = "/tmp/" + "a" * 300 + ".png"  # ENAMETOOLONG where the daemon writes it


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


HOSTILE_BODIES = [
    # (tool or "sessions", raw JSON body, field the 400 names)
    ("sessions", '{"label": "a\\ud800"}', "label"),
    ("eval", '{"expression": "\\udc00 + 1"}', "expression"),
    ("eval", '{"expression": "1", "\\ud800": 1}', "\ud800"),
    ("eval", deep(5000), "body"),
    ("eval", '{"expression": "1", "x": ' + deep(100) + "}", "x"),
    ("emulate", '{"scale": NaN}', "scale"),
    ("emulate", '{"scale": Infinity}', "scale"),
    ("emulate", '{"scale": -Infinity}', "scale"),
    ("emulate", '{"scale": 1e999}', "scale"),
    ("scroll", '{"dx": 1000000000000000000000000000000}', "dx"),
    ("scroll", '{"dy": 2000000}', "dy"),
    ("scroll", '{"dx": 1e30}', "dx"),
    ("screenshot", '{"path": "/tmp/a\\u0000b.png"}', "path"),
    ("upload", '{"ref": "e1", "files": ["/tmp/a\\u0000b"]}', "files"),
    ("screenshot", json.dumps({"path": LONG_NAME}), "path"),
    ("screenshot", '{"path": "/no/such/dir/x.png"}', "path"),
    ("webmcp_invoke", '{"tool": "t", "input": {"a": NaN}}', "input"),
]


@pytest.mark.parametrize(("where", "raw", "field"), HOSTILE_BODIES,
                         ids=[f"{w}:{r[:40]}" for w, r, _ in HOSTILE_BODIES])
def test_http_hostile_body(api: httpx.Client, agent: Bsk, where: str, raw: str,
                           field: str) -> None:
    path = "/v1/sessions" if where == "sessions" else tool_path(agent.session, where)
    r = api.post(path, content=raw.encode(), headers={"content-type": "application/json"},
                 timeout=10)  # at once: nothing is sent to the browser
    if field == "\ud800":  # a key that is not Unicode is named by its own (replaced) text
        error = assert_http_error(r, "invalid_params")
        assert "\ufffd" in error["details"]["field"], error
        return
    assert_http_error(r, "invalid_params", field=field)


def raw_post(sock_path: Path, path: str, length: int, body: bytes) -> bytes:
    """A POST whose Content-Length says `length`, whatever `body` holds (httpx won't)."""
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(30)
    sock.connect(str(sock_path))
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: bsk\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {length}\r\n\r\n".encode() + body)
    answer = b""
    while not answer.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    sock.close()
    return answer


def test_http_body_size_and_short_body(agent: Bsk) -> None:
    import time

    sock, path = agent.home / "bsk.sock", tool_path(agent.session, "eval")
    too_big = raw_post(sock, path, 64 * 1024 * 1024, b"{}")
    assert too_big.startswith(b"HTTP/1.1 400"), too_big
    assert b'"field":"body"' in too_big and b"allowed" in too_big, too_big
    # A body shorter than its Content-Length: a bounded wait, then a clean 400.
    started = time.monotonic()
    short = raw_post(sock, path, 100, b'{"expression"')
    assert short.startswith(b"HTTP/1.1 400"), short
    assert b'"field":"body"' in short and b"Content-Length" in short, short
    assert time.monotonic() - started < 20
    assert "Traceback" not in (agent.home / "daemon.log").read_text()


def test_text_that_is_not_unicode_never_breaks_an_answer(api: httpx.Client, bsk: Bsk,
                                                         site: str) -> None:
    """A page's lone surrogate comes back as U+FFFD, and every later read still works:
    the op's stored row, the op list, the session list."""
    bsk.ok("open", f"{site}/index.html")
    r = bsk("eval", "String.fromCharCode(0xD800) + 'x'")
    assert r.code == 0, r.stdout + r.stderr
    assert r.value == "\ufffdx"
    op_id = r.json["op_id"]
    bsk.ok("eval", "document.body.textContent = 'a' + String.fromCharCode(0xDC00) + 'b'")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    assert "a\ufffdb" in snap
    assert "a\ufffdb" in bsk.ok("html")["result"]["html"]
    human = bsk("html", as_json=False)
    assert human.code == 0 and "a\ufffdb" in human.stdout
    for path in (f"/v1/ops/{op_id}", f"/v1/ops?session={bsk.session}", "/v1/ops",
                 "/v1/sessions"):
        got = api.get(path)
        assert got.status_code == 200, got.text
    assert api.get(f"/v1/ops/{op_id}").json()["result"]["value"] == "\ufffdx"
    assert bsk.ok("op", "list")["ops"]
    assert bsk.ok("op", "show", op_id)["result"]["value"] == "\ufffdx"


HOSTILE_CLI = [
    Case(("--key", "", "eval", "1"), field="key"),
    Case(("--key", "a\nb", "eval", "1"), field="key"),
    Case(("emulate", "--scale", "nan"), field="scale"),
    Case(("emulate", "--scale", "inf"), field="scale"),
    Case(("scroll", "--dx", "100000000000000000000"), field="dx"),
    Case(("scroll", "--dy", "-2000000"), field="dy"),
    Case(("eval", "\udcff"), field="expression"),  # a byte that is not UTF-8, in argv
    Case(("screenshot", LONG_NAME), field="path"),
    Case(("screenshot", "/no/such/dir/x.png"), field="path"),
]


@pytest.mark.parametrize("case", HOSTILE_CLI, ids=ids)
def test_cli_hostile_input(agent: Bsk, case: Case) -> None:
    assert_rejected(agent(*case.args, timeout=20), case)


def test_cli_unusable_state_dir_is_one_line(tmp_path_factory: pytest.TempPathFactory) -> None:
    import os

    too_long = tmp_path_factory.mktemp("h") / ("x" * 120)
    if os.geteuid() == 0:  # as root: a directory that belongs to nobody
        foreign = tmp_path_factory.mktemp("foreign")
        os.chown(foreign, 65534, 65534)
    else:  # any other user: root's own directory
        foreign = Path("/")
    for home, words in ((too_long, "too long"), (foreign, "another user")):
        runner = Bsk(home)
        r = runner("eval", "1", as_json=False, timeout=30)
        assert r.code == CODES["invalid_params"].exit, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        first = r.stderr.splitlines()[0]
        assert "BSK_HOME" in first and str(home) in first, first
        assert ("bytes, more than" if words == "too long" else words) in first, first
        assert not (home / "bsk.sock").exists()
        # The daemon itself, started by hand: the same one line.
        import subprocess
        import sys

        daemon = subprocess.run([sys.executable, "-m", "browserskill.api"],
                                env={**runner.env}, capture_output=True, text=True, timeout=30)
        assert daemon.returncode == 2, daemon.stderr
        assert daemon.stderr.count("\n") == 1 and "Traceback" not in daemon.stderr
        assert str(home) in daemon.stderr


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("TRACE", "/v1/status", "GET, HEAD"),
    ("PUT", "/v1/sessions", "GET, HEAD, POST"),
    ("DELETE", "/v1/health", "GET, HEAD"),
    ("GET", "/v1/ops/op_000000000000/cancel", "POST"),
])
def test_http_method_not_allowed_is_405_with_allow(api: httpx.Client, method: str, path: str,
                                                   allowed: str) -> None:
    r = api.request(method, path)
    error = assert_http_error(r, "method_not_allowed", field="method")
    assert r.headers["allow"] == allowed
    assert error["details"]["allowed"] == allowed.split(", ")


@pytest.mark.parametrize("path", [
    "/v1/sessions/{sid}/webmcp/tools?wait=yes",
    "/v1/sessions/{sid}/webmcp/tools?wait=1",
    "/v1/status?connect=maybe",
])
def test_http_boolean_query_must_be_a_boolean(api: httpx.Client, agent: Bsk, path: str) -> None:
    name = path.split("?")[1].split("=")[0]
    assert_http_error(api.get(path.format(sid=agent.session)), "invalid_params", field=name)


def test_http_session_stop_refuses_a_non_boolean_wait(api: httpx.Client, agent: Bsk) -> None:
    assert_http_error(api.delete(f"/v1/sessions/{agent.session}?wait=yes"),
                      "invalid_params", field="wait")
    assert api.get("/v1/sessions").json()["sessions"]  # nothing was stopped


def test_http_integral_numbers_count_as_integers(api: httpx.Client, agent: Bsk) -> None:
    """JSON has one number type: 2.0 is the integer 2 (as the schema's "integer" says)."""
    r = api.post(tool_path(agent.session, "eval"),
                 json={"expression": "6*7", "timeout_ms": 5000.0})
    assert r.status_code == 200 and r.json()["result"]["value"] == 42, r.text
    assert_http_error(api.post(tool_path(agent.session, "eval"),
                               json={"expression": "1", "timeout_ms": 5000.5}),
                      "invalid_params", field="timeout_ms")


@pytest.mark.parametrize("url", ["::::", "https://::::", "http://host:99999/", "https://a b/",
                                 "javascript:alert(1)"])
def test_an_unusable_url_is_refused_before_anything_is_sent(bsk: Bsk, url: str) -> None:
    """`open '::::'` once went to Chromium and came back action_failed, dispatched."""
    for words in (("open",), ("tab", "new")):
        r = bsk(*words, url)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_params", r.json
        assert r.json["dispatched"] == "no" and r.json["retry_safe"] is True
        assert r.json["error"]["details"] == {"field": "url"} and url in r.json["error"]["message"]
    assert len(bsk.ok("tab", "list")["result"]["tabs"]) == 1  # no tab was made


def test_a_urls_scheme_is_case_insensitive(bsk: Bsk, site: str) -> None:
    """RFC 3986 §3.1: `HTTP://…` is `http://…` (it was refused as an unsupported scheme)."""
    shouted = site.replace("http://", "HTTP://", 1)
    opened = bsk.ok("open", f"{shouted}/counter.html")
    assert opened["result"]["url"] == f"{site}/counter.html"
    assert bsk.ok("open", "ABOUT:blank")["result"]["url"] == "about:blank"


@pytest.mark.parametrize("header", ["Idempotency-Key", "X-Op-Id"])
def test_http_a_repeated_operation_header_is_refused_naming_it(
        api: httpx.Client, agent: Bsk, header: str) -> None:
    """Two names for one call (as two Host headers would be two listeners): which one the
    daemon used could differ from the one the caller retries or cancels with."""
    sid = agent.session
    values = ["op_dup_first_" + uuid.uuid4().hex[:8], "op_dup_second_" + uuid.uuid4().hex[:8]]
    calls = [("POST", tool_path(sid, "eval"), {"expression": "1+1"}),
             ("POST", f"/v1/sessions/{sid}/webmcp/invoke", {"name": "echo"})]
    if header == "X-Op-Id":
        calls.append(("GET", f"/v1/sessions/{sid}/webmcp/tools", None))
    for method, path, body in calls:
        r = api.request(method, path, json=body, headers=[(header, v) for v in values])
        assert_http_error(r, "invalid_params", header)
    for op_id in values:  # nothing ran under either name
        assert_http_error(api.get(f"/v1/ops/{op_id}"), "op_not_found")
