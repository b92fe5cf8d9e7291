"""WebMCP end to end on the real Chromium: list and invoke page tools, and fail fast
(docs/design.md §5) when the tool's page reloads, navigates or crashes under a pending call.

A second CDP client on the same tab (`SideCdp`) plays "someone else": it reloads,
navigates, crashes the renderer, and reads the page's own log of tool runs to know when
a tool has started. The recorded event orders are replayed in test_webmcp_replay.py.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.request
from contextlib import ExitStack
from datetime import datetime
from typing import Any

import httpx
import pytest
from support.cli import Bsk, live_ops
from support.wait import wait_until
from websockets.sync.client import connect

PAGE = "webmcp.html"


class SideCdp:
    """A second CDP client attached to one of the session's tabs."""

    def __init__(self, bsk: Bsk, tab_id: str = "t1") -> None:
        http = bsk.ok("status")["browser"]["http_endpoint"]
        tabs = bsk.ok("tab", "list")["result"]["tabs"]
        target = next(t["target_id"] for t in tabs if t["tab_id"] == tab_id)
        with urllib.request.urlopen(http + "/json/list", timeout=10) as r:
            ws_url = next(t["webSocketDebuggerUrl"] for t in json.load(r) if t["id"] == target)
        self.stack = ExitStack()
        self.ws = self.stack.enter_context(connect(ws_url, max_size=None))
        self.last_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             reply: bool = True) -> dict[str, Any] | None:
        self.last_id += 1
        msg_id = self.last_id
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        while reply:
            msg = json.loads(self.ws.recv(timeout=10))
            if msg.get("id") == msg_id:
                return msg
        return None

    def eval(self, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True})
        assert answer is not None
        return answer.get("result", {}).get("result", {}).get("value")

    def ran(self, tool: str) -> bool:
        return bool(self.eval(f"(window.runs || []).includes({json.dumps(tool)})"))

    def close(self) -> None:
        self.stack.close()


@pytest.fixture
def side(bsk: Bsk, site: str) -> Any:
    bsk.ok("open", f"{site}/{PAGE}")
    client = SideCdp(bsk)
    yield client
    client.close()


def pending(bsk: Bsk, side: SideCdp, tool: str = "hang", timeout: str = "20",
            *extra: str) -> subprocess.Popen[str]:
    """`bsk webmcp invoke TOOL` in the background, returned once the page runs it."""
    proc = bsk.popen("--timeout", timeout, "webmcp", "invoke", tool, *extra)
    wait_until(lambda: side.ran(tool) or proc.poll() is not None, 20, f"{tool} to start")
    assert proc.poll() is None, proc.communicate()
    return proc


def ended(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    stdout, stderr = proc.communicate(timeout=90)
    assert "Traceback" not in stderr, stderr
    return proc.returncode, json.loads(stdout)


def duration(answer: dict[str, Any]) -> float:
    def parse(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    return (parse(answer["ended_at"]) - parse(answer["started_at"])).total_seconds()


def tools_by_name(bsk: Bsk) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for t in bsk.ok("webmcp", "list")["result"]["tools"]:
        out.setdefault(t["name"], []).append(t)
    return out


# -- list and invoke ------------------------------------------------------------------------


def test_list_shows_refs_schemas_annotations_sources_and_form_tools(
        bsk: Bsk, side: SideCdp, site: str) -> None:
    answer = bsk.ok("webmcp", "list")["result"]
    assert answer["untrusted"] is True and "page-provided" in answer["note"]
    tools = {t["name"]: t for t in answer["tools"]}
    assert {"echo", "add_item", "fail", "hang", "reload_self", "goto"} <= set(tools)
    echo = tools["echo"]
    assert echo["tool_ref"] == "t1/f0/echo" and len(echo["tool_ref"]) <= 128
    assert echo["description"] == "Return the input as given."
    assert echo["input_schema"]["properties"] == {"text": {"type": "string"}}
    assert echo["annotations"] == {"read_only": True, "untrusted_content": True,
                                   "consequential": False, "autosubmit": False}
    assert tools["add_item"]["annotations"]["consequential"] is True
    assert echo["source"] == {
        "tab_id": "t1", "frame_id": echo["source"]["frame_id"], "main_frame": True,
        "frame_url": f"{site}/{PAGE}", "page_url": f"{site}/{PAGE}",
        "page_title": "WebMCP tools", "out_of_process": False}
    # Declarative form tools: registered when the form is parsed (just after the load).
    forms = wait_until(lambda: {n: t for n, t in tools_by_name(bsk).items()
                                if n in ("subscribe", "search")} or None, 10, "form tools")
    subscribe, search = forms["subscribe"][0], forms["search"][0]
    assert subscribe["declarative"] and subscribe["input_schema"]["required"] == ["email"]
    assert search["annotations"]["autosubmit"] is True
    human = bsk("webmcp", "list", as_json=False)
    assert human.code == 0 and "t1/f0/echo" in human.stdout and "untrusted" in human.stdout


def test_invoke_completes_with_untrusted_output(bsk: Bsk, side: SideCdp) -> None:
    answer = bsk.ok("webmcp", "invoke", "echo", "--input", '{"text": "hi"}')
    assert answer["status"] == "completed" and answer["dispatched"] == "yes"
    assert answer["retry_safe"] is False
    r = answer["result"]
    assert r["status"] == "completed" and r["ok"] is True
    assert r["output"] == {"echo": {"text": "hi"}, "title": "WebMCP tools"}
    assert r["untrusted"] is True and "never as instructions" in r["note"]
    assert r["tool_ref"] == "t1/f0/echo" and r["invocation_id"] and r["tool_started"]
    assert side.eval("window.runs") == ["echo"]  # ran exactly once
    by_ref = bsk.ok("webmcp", "invoke", "t1/f0/add_item", "--input", '{"item": "lamp"}')
    assert by_ref["result"]["output"]["added"] == "lamp"
    human = bsk("webmcp", "invoke", "echo", as_json=False)
    assert human.code == 0 and '"echo": {}' in human.stdout and "untrusted" in human.stdout


def test_tool_error_is_a_result_with_chromiums_text(bsk: Bsk, side: SideCdp) -> None:
    r = bsk("webmcp", "invoke", "fail")
    assert r.code == 0
    answer = r.json
    assert answer["status"] == "completed" and answer["error"]["code"] == "page_error"
    assert answer["result"]["status"] == "error" and answer["result"]["ok"] is False
    assert "out of stock" in answer["result"]["exception"]
    assert "out of stock" in answer["error"]["message"]


def test_declarative_form_tool_with_autosubmit(bsk: Bsk, side: SideCdp) -> None:
    wait_until(lambda: "search" in tools_by_name(bsk), 10, "the search form tool")
    answer = bsk.ok("webmcp", "invoke", "search", "--input", '{"q": "lamp"}')
    assert answer["result"]["output"] == {"results": ["lamp (1)"]}
    assert side.eval("window.searched") == "lamp"


def test_iframe_tools_same_origin_and_out_of_process(bsk: Bsk, site: str,
                                                     cross_site: str) -> None:
    bsk.ok("open", f"{site}/webmcp_frames.html?other={cross_site}")
    tools = tools_by_name(bsk)
    same, cross = tools["same_echo"][0], tools["cross_echo"][0]
    assert same["source"]["main_frame"] is False and same["source"]["out_of_process"] is False
    assert same["source"]["frame_url"] == f"{site}/webmcp_frame.html?who=same"
    assert cross["source"]["out_of_process"] is True
    assert cross["source"]["frame_url"] == f"{cross_site}/webmcp_frame.html?who=cross"
    assert "denied_echo" not in tools  # a cross-origin iframe without allow="tools"
    assert len({t["tool_ref"] for t in tools["whoami"]}) == 3
    answer = bsk.ok("webmcp", "invoke", "cross_echo", "--input", '{"n": 1}')
    assert answer["result"]["output"] == {"from": "cross", "origin": cross_site,
                                          "input": {"n": 1}}
    # The same name in three frames: the call names the candidates, runs nothing.
    r = bsk("webmcp", "invoke", "whoami")
    assert r.code == 2 and r.json["error"]["code"] == "invalid_params"
    candidates = r.json["error"]["details"]["candidates"]
    assert {c["tool_ref"] for c in candidates} == {t["tool_ref"] for t in tools["whoami"]}
    assert r.json["dispatched"] == "no"
    ref = next(t["tool_ref"] for t in tools["whoami"] if t["source"]["out_of_process"])
    assert bsk.ok("webmcp", "invoke", ref)["result"]["output"]["who"] == "cross"


# -- fail fast ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["cdp_reload", "cdp_navigate", "page_script"])
def test_external_reload_fails_fast_keeping_the_invocation_id(
        bsk: Bsk, side: SideCdp, site: str, how: str) -> None:
    proc = pending(bsk, side, "hang", "20")
    start = time.monotonic()
    if how == "cdp_reload":
        side.send("Page.reload")
    elif how == "cdp_navigate":
        side.send("Page.navigate", {"url": f"{site}/{PAGE}"})
    else:
        side.eval("setTimeout(() => location.reload())")
    code, answer = ended(proc)
    took = time.monotonic() - start
    assert code == 8, answer
    assert answer["status"] == "failed" and answer["dispatched"] == "yes"
    assert answer["retry_safe"] is False
    error = answer["error"]
    assert error["code"] == "tool_page_unloaded"
    details = error["details"]
    assert details["invocation_id"] and details["tool_started"] is True
    assert details["reason"] == "navigated"
    timeline = dict((what, t) for t, what in details["timeline"])
    stopped = timeline["the replacement document stopped loading"]
    failed = timeline["failed: page unloaded (navigated)"]
    assert 0.45 <= failed - stopped <= 1.0  # the grace after the new document loaded
    assert took < 3.0, f"{how}: failed {took:.2f}s after the reload; the timeout was 20 s"
    print(f"\n{how}: action → exit 8 in {took * 1000:.0f} ms "
          f"(stopped loading → failure {1000 * (failed - stopped):.0f} ms)")


def test_tab_closed_under_a_pending_call_fails_at_once(bsk: Bsk, side: SideCdp) -> None:
    proc = pending(bsk, side, "hang", "20")
    start = time.monotonic()
    side.send("Page.close", reply=False)
    code, answer = ended(proc)
    assert code == 8 and answer["error"]["details"]["reason"] == "tab_closed"
    assert answer["error"]["details"]["invocation_id"]
    assert time.monotonic() - start < 2.0


def test_tool_reloading_its_own_page_delivers_its_result(bsk: Bsk, side: SideCdp) -> None:
    answer = bsk.ok("webmcp", "invoke", "reload_self")
    assert answer["result"]["status"] == "completed"
    assert answer["result"]["output"] == {"reloading": True}
    # It did reload: the page's per-document log is new, the session log kept the run.
    wait_until(lambda: side.eval("document.readyState") == "complete", 10, "the reload")
    assert side.eval("JSON.parse(sessionStorage.runs)")[-1] == "reload_self"
    assert side.eval("window.runs") == []
    # A tool that would answer only after its reload began: Chromium's answer, flagged.
    late = bsk.ok("webmcp", "invoke", "reload_later")["result"]
    assert late["status"] == "completed" and late["navigated"] is True


def test_cross_origin_navigation_by_the_tool(bsk: Bsk, side: SideCdp, site: str,
                                             cross_site: str) -> None:
    target = json.dumps({"url": f"{cross_site}/other.html"})
    late = bsk.ok("webmcp", "invoke", "goto_later", "--input", target)["result"]
    assert late["status"] == "error"
    assert "cross-origin navigation" in late["error_text"]
    # A tool that answers after its page has gone gets Chromium's error.
    # A tool that answers and then leaves: its answer arrives.
    bsk.ok("open", f"{site}/{PAGE}")
    soon = bsk.ok("webmcp", "invoke", "goto_soon", "--input", target)["result"]
    assert soon["status"] == "completed"
    assert soon["output"] == {"leaving_for": f"{cross_site}/other.html"}
    bsk.ok("wait", "--text", "Other page")
    # A tool that starts the navigation and answers in the same task races the commit in
    # Chromium (its answer and the navigation travel apart): whichever Chromium sends first
    # is the result, and it says which (docs/webmcp.md).
    bsk.ok("open", f"{site}/{PAGE}")
    quick = bsk.ok("webmcp", "invoke", "goto", "--input", target)["result"]
    if quick["status"] == "completed":
        assert quick["output"] == {"leaving_for": f"{cross_site}/other.html"}
    else:
        assert quick["status"] == "error", quick
        assert "cross-origin navigation" in quick["error_text"]
    bsk.ok("wait", "--text", "Other page")


def test_crash_fails_fast_then_tools_after_recovery_work(bsk: Bsk, side: SideCdp,
                                                         site: str) -> None:
    proc = pending(bsk, side, "hang", "15")
    start = time.monotonic()
    side.send("Page.crash", reply=False)
    code, answer = ended(proc)
    took = time.monotonic() - start
    assert code == 8 and answer["error"]["code"] == "tool_page_unloaded"
    assert answer["error"]["details"]["reason"] == "crashed"
    assert answer["error"]["details"]["invocation_id"]
    assert took < 2.5, f"crash → failure took {took:.2f}s"
    print(f"\ncrash: Page.crash → exit 8 in {took * 1000:.0f} ms")
    listing = bsk.ok("webmcp", "list")["result"]
    assert listing["tools"] == [] and listing["crashed_tabs"] == ["t1"]
    # A crashed tab's tool: tool_not_found at once, nothing sent.
    r = bsk("webmcp", "invoke", "echo")
    assert r.code == 3 and r.json["error"]["code"] == "tool_not_found"
    assert "crashed" in r.json["error"]["message"] and r.json["dispatched"] == "no"
    assert duration(r.json) < 0.2
    print(f"crashed tab's tool → tool_not_found in {duration(r.json) * 1000:.0f} ms (op)")
    # Navigating the crashed tab brings it back; its new tools are picked up.
    bsk.ok("open", f"{site}/{PAGE}")
    for i in range(3):
        answer = bsk.ok("webmcp", "invoke", "add_item", "--input", json.dumps({"item": i}))
        assert answer["result"]["output"]["added"] == i
        print(f"after recovery, call {i + 1}: {duration(answer) * 1000:.0f} ms (op)")


def test_tool_of_a_vanished_page_is_tool_not_found_at_once(bsk: Bsk, side: SideCdp,
                                                           site: str) -> None:
    bsk.ok("tab", "new", f"{site}/{PAGE}")  # t2
    bsk.ok("tab", "close", "t1")
    r = bsk("webmcp", "invoke", "t1/f0/echo")
    assert r.code == 3 and r.json["error"]["code"] == "tool_not_found"
    assert "t1" in r.json["error"]["message"] and duration(r.json) < 0.2
    assert bsk.ok("webmcp", "invoke", "echo")["result"]["tool_ref"] == "t2/f0/echo"
    bsk.ok("open", f"{site}/other.html")  # t2's page goes away: its tools with it
    r = bsk("webmcp", "invoke", "echo")
    assert r.code == 3 and r.json["error"]["code"] == "tool_not_found"
    assert "navigated" in r.json["error"]["message"]


def test_timeout_is_outcome_unknown(bsk: Bsk, side: SideCdp) -> None:
    start = time.monotonic()
    r = bsk("--timeout", "1", "webmcp", "invoke", "hang")
    assert r.code == 9 and r.json["status"] == "outcome_unknown"
    assert r.json["dispatched"] == "yes" and r.json["retry_safe"] is False
    details = r.json["error"]["details"]
    assert details["invocation_id"] and details["cancel_sent"] is True
    assert details["tool_status"] == "Canceled"  # the compensation cancelled it in the page
    assert time.monotonic() - start < 4


def test_cancel_sends_cancel_invocation_and_reports_honestly(bsk: Bsk, side: SideCdp) -> None:
    proc = pending(bsk, side, "hang", "30")
    op = live_ops(bsk, "dispatched")[0]
    bsk("op", "cancel", op["op_id"])
    code, answer = ended(proc)
    assert code == 7 and answer["status"] == "cancelled"
    assert answer["dispatched"] == "yes"  # the tool had started: never "nothing happened"
    details = answer["error"]["details"]
    assert details["compensation"] == [{"action": "webmcp_cancel_invocation",
                                        "undoes_effect": False, "ok": True}]
    assert details["cancel_sent"] is True and details["tool_status"] == "Canceled"
    assert details["tool_started"] is True and details["invocation_id"]
    assert "may have partly acted" in answer["error"]["message"]


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "field"), [
    (("--input", "{not json"), "input"),
    (("--input", "[1, 2]"), "input"),
    (("--input", '"text"'), "input"),
    (("--timeout", "0.5"), "timeout"),
    (("--timeout", "121"), "timeout"),
])
def test_cli_bad_input(bsk: Bsk, args: tuple[str, ...], field: str) -> None:
    r = bsk("webmcp", "invoke", "echo", *args)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_params"
    assert r.json["error"]["message"].startswith(f"{field}:")
    assert r.json["dispatched"] == "no"


def test_cli_unknown_tool(bsk: Bsk, side: SideCdp) -> None:
    for query in ("t1/f0/nope", "nope"):
        r = bsk("webmcp", "invoke", query)
        assert r.code == 3 and r.json["error"]["code"] == "tool_not_found"
        assert r.json["dispatched"] == "no"
    assert side.eval("window.runs") == []


# -- HTTP -------------------------------------------------------------------------------------


def test_http_list_and_invoke(api: httpx.Client, bsk: Bsk, side: SideCdp) -> None:
    base = f"/v1/sessions/{bsk.session}/webmcp"
    listing = api.get(f"{base}/tools")
    assert listing.status_code == 200
    refs = {t["name"]: t["tool_ref"] for t in listing.json()["result"]["tools"]}
    by_ref = api.post(f"{base}/invoke", json={"tool_ref": refs["echo"], "input": {"a": 1}})
    assert by_ref.status_code == 200
    assert by_ref.json()["result"]["output"]["echo"] == {"a": 1}
    assert by_ref.json()["result"]["untrusted"] is True
    by_name = api.post(f"{base}/invoke", json={"name": "add_item", "input": {"item": "x"},
                                               "timeout_sec": 5})
    assert by_name.status_code == 200 and by_name.json()["tool"] == "webmcp_invoke"


def test_http_timeout_is_504_no_retry(api: httpx.Client, bsk: Bsk, side: SideCdp) -> None:
    r = api.post(f"/v1/sessions/{bsk.session}/webmcp/invoke",
                 json={"name": "hang", "timeout_sec": 1})
    assert r.status_code == 504
    assert r.headers["X-Should-Retry"] == "false"
    body = r.json()
    assert body["status"] == "outcome_unknown" and body["dispatched"] == "yes"
    assert body["error"]["code"] == "outcome_unknown"
    assert body["error"]["details"]["invocation_id"]


def test_http_reload_is_410_no_retry(api: httpx.Client, bsk: Bsk, side: SideCdp) -> None:
    got: dict[str, httpx.Response] = {}

    def call() -> None:
        got["r"] = api.post(f"/v1/sessions/{bsk.session}/webmcp/invoke",
                            json={"name": "hang", "timeout_sec": 20})

    caller = threading.Thread(target=call)
    caller.start()
    wait_until(lambda: side.ran("hang"), 20, "hang to start")
    start = time.monotonic()
    side.send("Page.reload")
    caller.join(30)
    took = time.monotonic() - start
    r = got["r"]
    assert r.status_code == 410
    assert r.headers["X-Should-Retry"] == "false"
    body = r.json()
    assert body["error"]["code"] == "tool_page_unloaded" and body["dispatched"] == "yes"
    assert body["error"]["details"]["invocation_id"]
    assert took < 3.0
    print(f"\nHTTP: reload → 410 in {took * 1000:.0f} ms")


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "echo", "input": [1]}, "input"),
    ({"name": "echo", "input": "x"}, "input"),
    ({"name": "echo", "input": {"blob": "x" * (1 << 20)}}, "input"),
    ({"name": "echo", "tool_ref": "t1/f0/echo"}, "tool_ref"),
    ({"input": {}}, "tool_ref"),
    ({"tool_ref": "echo"}, "tool_ref"),
    ({"name": ""}, "name"),
    ({"name": "echo", "timeout_sec": 0}, "timeout_sec"),
    ({"name": "echo", "timeout_sec": 121}, "timeout_sec"),
    ({"name": "echo", "timeout_sec": "5"}, "timeout_sec"),
    ({"name": "echo", "bogus": 1}, "bogus"),
])
def test_http_bad_input_is_400_naming_the_field(api: httpx.Client, bsk: Bsk,
                                                body: dict[str, Any], field: str) -> None:
    r = api.post(f"/v1/sessions/{bsk.session}/webmcp/invoke", json=body)
    assert r.status_code == 400, r.text
    assert r.headers["X-Should-Retry"] == "false"
    assert r.json()["error"]["code"] == "invalid_params"
    assert r.json()["error"]["details"]["field"] == field


def test_http_generic_tool_path_enforces_the_timeout_range(api: httpx.Client,
                                                           bsk: Bsk) -> None:
    r = api.post(f"/v1/sessions/{bsk.session}/tools/webmcp_invoke",
                 json={"tool": "echo", "timeout_ms": 500})
    assert r.status_code == 400 and r.json()["error"]["details"]["field"] == "timeout_ms"


def test_http_unknown_ref_is_404(api: httpx.Client, bsk: Bsk, side: SideCdp) -> None:
    r = api.post(f"/v1/sessions/{bsk.session}/webmcp/invoke", json={"tool_ref": "t1/f0/nope"})
    assert r.status_code == 404 and r.headers["X-Should-Retry"] == "false"
    assert r.json()["error"]["code"] == "tool_not_found"


def test_openapi_declares_410_and_504_without_retry(api: httpx.Client) -> None:
    doc = api.get("/v1/openapi.json").json()
    responses = doc["paths"]["/v1/sessions/{sid}/webmcp/invoke"]["post"]["responses"]
    for status, code in (("410", "tool_page_unloaded"), ("504", "outcome_unknown"),
                         ("404", "tool_not_found")):
        assert code in responses[status]["description"]
        assert responses[status]["headers"]["X-Should-Retry"]["schema"]["enum"] == ["false"]
    assert "/v1/sessions/{sid}/webmcp/tools" in doc["paths"]
