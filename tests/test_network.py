"""Network detail, HAR and routes against real Chromium: `network show`, `network har`,
`route add|list|remove|clear` through the CLI, the HTTP API, MCP and the Python client.

The page (tests/pages/net.html) fetches tests/pages/api/items.json and shows what it
got; `load()` fetches again and returns "STATUS BODY" or "error MESSAGE".
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft6Validator, FormatChecker
from referencing import Registry, Resource
from support.cli import Bsk
from support.site import PAGES

from browserskill.browser.routing import RouteTable, chromium_pattern, glob_regex
from browserskill.client import Client

HAR_SCHEMA = Path(__file__).parent / "node_modules" / "har-schema" / "lib"
REAL = "200 " + (PAGES / "api" / "items.json").read_text().strip()


@pytest.fixture
def page(bsk: Bsk, site: str) -> Bsk:
    bsk.ok("open", f"{site}/net.html")
    return bsk


@pytest.fixture
def other(shared_bsk: Bsk) -> Iterator[Bsk]:
    """A second session of the same daemon, in the same shared profile."""
    sid = "t-" + uuid.uuid4().hex[:8]
    shared_bsk.ok("session", "start", sid)
    runner = shared_bsk.with_session(sid)
    yield runner
    runner("session", "stop", "--wait")


def load(bsk: Bsk, path: str = "api/items.json?page=1") -> str:
    return str(bsk.ok("eval", f"load({json.dumps(path)})")["result"]["value"])


def routes(bsk: Bsk) -> list[dict[str, Any]]:
    return list(bsk.ok("route", "list")["result"]["routes"])


# -- routes -------------------------------------------------------------------------------


def test_route_mock_file_abort_times_and_remove(page: Bsk, tmp_path: Path) -> None:
    bsk = page
    assert load(bsk) == REAL
    added = bsk.ok("route", "add", "**/api/*", "--body", '{"items": ["mock"]}',
                   "--content-type", "application/json", "--header", "X-Mock: yes")
    assert added["result"]["route"]["pattern"] == "**/api/*"
    assert added["retry_safe"] is False
    assert load(bsk) == '200 {"items": ["mock"]}'
    # What the page got is what the route said: status, type, the extra header.
    seen = bsk.ok("eval", "fetch('api/items.json').then(r => [r.status, "
                  "r.headers.get('content-type'), r.headers.get('x-mock')])")["result"]["value"]
    assert seen == [200, "application/json", "yes"]

    # The same pattern again replaces it: now a file, with another status.
    body = tmp_path / "items.json"
    body.write_text('{"items": ["from a file"]}')
    replaced = bsk.ok("route", "add", "**/api/*", "--file", str(body), "--status", "201")
    assert replaced["result"]["replaced"] is True
    assert load(bsk) == '201 {"items": ["from a file"]}'
    assert [r["pattern"] for r in routes(bsk)] == ["**/api/*"]

    # A newer, narrower route wins over it; --abort alone fails the request.
    bsk.ok("route", "add", "--abort", "**/api/items.json*")
    assert load(bsk).startswith("error ")
    failed = bsk.ok("network")["result"]["entries"][-1]
    assert failed["state"] == "failed" and failed["route"] == "**/api/items.json*"
    assert failed["error"] == "net::ERR_FAILED"
    bsk.ok("route", "add", "**/api/items.json*", "--abort", "connectionrefused")
    load(bsk)
    assert bsk.ok("network")["result"]["entries"][-1]["error"] == "net::ERR_CONNECTION_REFUSED"

    # --times: the route answers that many requests, then the older one answers again.
    bsk.ok("route", "add", "**/api/items.json*", "--body", "once", "--times", "1")
    assert routes(bsk)[0]["times_left"] == 1
    assert load(bsk) == "200 once"
    assert load(bsk) == '201 {"items": ["from a file"]}'
    assert [r["pattern"] for r in routes(bsk)] == ["**/api/*"]

    # remove: the server answers again; removing it again says so, changes nothing.
    removed = bsk.ok("route", "remove", "**/api/*")["result"]
    assert removed == {"pattern": "**/api/*", "removed": True, "routes": 0}
    assert load(bsk) == REAL
    again = bsk.ok("route", "remove", "**/api/*")["result"]
    assert again["removed"] is False and "note" in again
    # clear: all of them at once.
    bsk.ok("route", "add", "**/nothing/*", "--body", "x")
    bsk.ok("route", "add", "**/api/*", "--body", "y")
    assert bsk.ok("route", "clear")["result"]["cleared"] == 2
    assert routes(bsk) == [] and load(bsk) == REAL


def test_a_click_whose_navigation_a_route_aborts_fails_naming_it(bsk: Bsk, site: str) -> None:
    """The click was sent; the page it led to never loaded: said as `open` says it, not
    as a navigation that happened."""
    bsk.ok("open", f"{site}/diff.html")
    bsk.ok("route", "add", "--abort", "**/other.html")
    answer = bsk("click", "text=Other page")
    assert answer.code != 0, answer
    error = answer.json["error"]
    assert answer.json["dispatched"] == "yes" and error["code"] == "action_failed", answer
    assert error["details"]["reason"] == "navigation_error"
    assert error["details"]["route"] == "**/other.html"
    assert error["details"]["url"] == f"{site}/other.html"
    assert "bsk route remove" in error["hint"] and "bsk back" in error["hint"]


def test_two_sessions_at_once_have_their_own_routes(page: Bsk, other: Bsk, site: str,
                                                     shared_bsk: Bsk) -> None:
    """Same profile, same page, same URL: each session's requests get its own route."""
    other.ok("open", f"{site}/net.html")
    page.ok("route", "add", "**/api/*", "--body", "first")
    other.ok("route", "add", "**/api/*", "--body", "second", "--status", "202")
    # Both at once, many requests each.
    script = ("Promise.all(Array.from({length: 20}, () => load())).then(a => "
              "[...new Set(a)])")
    procs = [s.popen("eval", script) for s in (page, other)]
    answers = [json.loads(p.communicate(timeout=60)[0])["result"]["value"] for p in procs]
    assert answers == [["200 first"], ["202 second"]]
    listed = {s["session_id"]: s for s in shared_bsk.ok("session", "list")["sessions"]}
    assert [r["body_bytes"] for r in listed[page.session or ""]["routes"]] == [5]
    assert listed[other.session or ""]["routes"][0]["status"] == 202
    assert listed[page.session or ""]["routes"][0]["hits"] == 20
    # One session's clear leaves the other's route in place.
    page.ok("route", "clear")
    assert load(page) == REAL
    assert load(other) == "202 second"


def test_routes_reach_new_tabs_workers_and_iframes(bsk: Bsk, site: str,
                                                   cross_site: str) -> None:
    bsk.ok("route", "add", "**/api/items.json*", "--body", "mocked")
    # A tab opened after the route was added: routed from its first request.
    bsk.ok("tab", "new", f"{site}/net_frame.html")
    assert bsk.ok("eval", "fromWorker()")["result"]["value"] == "200 mocked"
    assert bsk.ok("eval", "fromFrame()")["result"]["value"] == "200 mocked"
    # An out-of-process (cross-site) iframe: its requests once it is attached.
    bsk.ok("eval", f"""new Promise(r => {{ const f = document.createElement("iframe");
        f.src = "{cross_site}/net.html"; f.onload = () => r(true); document.body.append(f);
    }})""")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    frame = [line for line in snap.splitlines() if "iframe" in line][-1]
    ref = frame.split("[ref=")[1].rstrip("]")
    got = bsk.ok("eval", "--frame", ref, "load()")["result"]["value"]
    assert got == "200 mocked"


def test_a_navigation_a_route_fails_names_the_route(page: Bsk, site: str) -> None:
    bsk = page
    bsk.ok("route", "add", "**/other.html", "--abort", "--times", "1")
    r = bsk("open", f"{site}/other.html")
    assert r.code == 11 and r.json["error"]["details"]["route"] == "**/other.html"
    assert "route remove" in r.json["error"]["hint"]
    assert "server is up" not in r.json["error"]["hint"]
    # the route is spent: the same page loads, and a failure without a route says so
    assert bsk.ok("open", f"{site}/other.html")["result"]["url"].endswith("/other.html")
    with socket.socket() as s:  # a port nothing listens on (and not a restricted one)
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    gone = bsk("open", f"http://127.0.0.1:{closed}/")
    assert gone.code == 11 and "route" not in gone.json["error"]["details"]
    assert "server is up" in gone.json["error"]["hint"]


def test_route_bad_input_is_refused_naming_the_field(bsk: Bsk, tmp_path: Path) -> None:
    cases = {
        ("**/x", "--abort", "--body", "y"): "body",
        ("**/x", "--abort", "--status", "404"): "status",
        ("**/x", "--body", "y", "--file", str(tmp_path / "f")): "file",
        ("**/x", "--file", str(tmp_path / "missing")): "file",
        ("**/x", "--header", "no colon"): "header",
        ("**/{x", "--body", "y"): "pattern",
        ("**/x", "--abort", "nonsense"): "abort",  # no reason: named with the reasons
        ("**/x", "--body", "y", "nonsense"): "arguments",  # a second pattern
        ("**/x", "--status", "99"): "status",
    }
    (tmp_path / "f").write_text("f")
    for args, field in cases.items():
        r = bsk("route", "add", *args)
        assert r.code == 2, (args, r.stdout, r.stderr)
        assert r.json["error"]["details"]["field"] == field, (args, r.json)
    assert routes(bsk) == []
    reason = bsk("route", "add", "**/x", "--abort", "timeout")
    assert "timedout" in reason.json["error"]["message"], reason.json
    alone = bsk.ok("route", "add", "--abort", "**/x")["result"]["route"]  # a pattern after
    assert alone == {"pattern": "**/x", "abort": "failed", "hits": 0}


def test_every_surface_drives_the_same_routes(page: Bsk, api: httpx.Client) -> None:
    sid = page.session
    answer = api.post(f"/v1/sessions/{sid}/tools/route_add",
                      json={"pattern": "**/api/*", "body": "over http", "times": 5})
    assert answer.status_code == 200, answer.text
    with Client(home=page.home, session=sid, retries=0) as client:
        assert client.route_list().result["routes"][0]["times_left"] == 5
        assert client.eval("load()").value == "200 over http"
        client.route_add("**/api/*", abort="timedout")
        assert client.eval("load()").value.startswith("error ")
    bad = api.post(f"/v1/sessions/{sid}/tools/route_add", json={"pattern": "**", "abort": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "abort"
    # MCP: the tools come from the same catalog (tests/test_mcp.py drives them).
    mcp = subprocess.run([sys.executable, "-c", MCP_SCRIPT, sid or ""], env=page.env,
                         capture_output=True, text=True, timeout=60)
    assert mcp.returncode == 0, mcp.stderr
    assert json.loads(mcp.stdout) == {"cleared": 1, "routes": []}
    assert load(page) == REAL


MCP_SCRIPT = """
import asyncio, json, os, sys
from mcp import ClientSession, StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command=sys.executable,
        args=["-m", "browserskill", "mcp", "--session", sys.argv[1], "--caps", "network"],
        env={k: v for k, v in os.environ.items() if k.startswith("BSK_")})
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        cleared = (await s.call_tool("route_clear", {})).structured_content
        listed = (await s.call_tool("route_list", {})).structured_content
        print(json.dumps({"cleared": cleared["result"]["cleared"],
                          "routes": listed["result"]["routes"]}))

asyncio.run(main())
"""


# -- network show -------------------------------------------------------------------------


def entry_for(bsk: Bsk, suffix: str) -> dict[str, Any]:
    bsk.ok("wait", "--network-idle")
    entries = bsk.ok("network")["result"]["entries"]
    return next(e for e in reversed(entries) if e["url"].endswith(suffix))


def test_network_show_gives_the_bodys_size_and_says_so(page: Bsk) -> None:
    """`bytes` is the body's size (as Content-Length says), with or without --body; what
    came over the wire, headers included, is `transfer_bytes` — each named in the text."""
    bsk = page
    size = (PAGES / "api" / "items.json").stat().st_size
    api = entry_for(bsk, "api/items.json?page=1")
    plain = bsk.ok("network", "show", api["id"])["result"]
    assert plain["bytes"] == size == int(plain["response_headers"]["Content-Length"]), plain
    assert plain["transfer_bytes"] > size  # the headers came too
    assert bsk.ok("network", "show", api["id"], "--body")["result"]["bytes"] == size
    text = bsk.text("network", "show", api["id"]).splitlines()[0]
    assert f"body {size} bytes, {plain['transfer_bytes']} transferred" in text, text


def test_network_show_bodies_json_html_and_image(page: Bsk, site: str) -> None:
    bsk = page
    api = entry_for(bsk, "api/items.json?page=1")
    shown = bsk.ok("network", "show", api["id"], "--body")["result"]
    assert shown["url"] == f"{site}/api/items.json?page=1" and shown["method"] == "GET"
    assert shown["status"] == 200 and shown["mime_type"] == "application/json"
    assert json.loads(shown["body"]) == json.loads((PAGES / "api" / "items.json").read_text())
    assert shown["request_headers"]["Referer"] == f"{site}/net.html"
    assert shown["response_headers"]["Content-Length"] == str(
        (PAGES / "api" / "items.json").stat().st_size)
    assert set(shown["timing_ms"]) >= {"blocked", "dns", "connect", "send", "wait", "receive"}
    assert "body" not in bsk.ok("network", "show", api["id"])["result"]

    html = entry_for(bsk, "/net.html")
    doc = bsk.ok("network", "show", html["id"], "--body")["result"]
    assert doc["type"] == "Document" and doc["body"] == (PAGES / "net.html").read_text()
    # Cut: the first characters inline, the whole body in a file, and a note.
    cut = bsk.ok("network", "show", html["id"], "--body", "--max-body", "100")["result"]
    assert cut["body"] == doc["body"][:100] and cut["body_truncated"] is True
    assert Path(cut["body_path"]).read_text() == doc["body"] and "100" in cut["body_note"]

    image = entry_for(bsk, "/net_pixel.gif")
    pixel = bsk.ok("network", "show", image["id"], "--body")["result"]
    assert "body" not in pixel and pixel["mime_type"] == "image/gif"
    assert Path(pixel["body_path"]).read_bytes() == (PAGES / "net_pixel.gif").read_bytes()
    assert pixel["body_bytes"] == (PAGES / "net_pixel.gif").stat().st_size

    # A request body (a POST the route answers: the test server takes no POST).
    bsk.ok("route", "add", "**/api/echo", "--body", "ok")
    assert bsk.ok("eval", "send({q: 'lamp'})")["result"]["value"] == "200 ok"
    post = entry_for(bsk, "/api/echo")
    sent = bsk.ok("network", "show", post["id"], "--request-body", "--body")["result"]
    assert json.loads(sent["request_body"]) == {"q": "lamp"} and sent["body"] == "ok"
    assert sent["route"] == "**/api/echo" and sent["method"] == "POST"

    # Human output names the parts; an unknown id is not found, naming the ids there are.
    text = bsk("network", "show", api["id"], "--body", as_json=False).stdout
    assert "response headers:" in text and '"source": "server"' in text
    missing = bsk("network", "show", "r99999")
    assert missing.code == 3 and missing.json["error"]["code"] == "request_not_found"
    latest = missing.json["error"]["details"]["latest"]  # the ids it does hold, newest last
    assert post["id"] in latest and all(i in missing.json["error"]["message"] for i in latest)


def test_failed_and_redirected_requests(page: Bsk) -> None:
    page.ok("route", "add", "**/api/gone", "--abort", "namenotresolved")
    page.ok("eval", "load('api/gone')")
    gone = entry_for(page, "/api/gone")
    shown = page.ok("network", "show", gone["id"], "--body")["result"]
    assert shown["error"] == "net::ERR_NAME_NOT_RESOLVED"
    assert "failed" in shown["body_unavailable"]
    # The test server redirects a directory without its slash (301): the request shows
    # its hop, and its body is the last hop's.
    assert page.ok("eval", "load('api')")["result"]["value"].startswith("200 ")
    moved = entry_for(page, "/api/")
    shown = page.ok("network", "show", moved["id"], "--body")["result"]
    assert shown["redirects"] == [{"url": shown["url"][:-1], "status": 301}]
    assert "items.json" in shown["body"]


# -- HAR ----------------------------------------------------------------------------------


def har_validator() -> Draft6Validator:
    """The HAR 1.2 JSON schema as the `har-schema` npm package ships it (tests/package.json,
    installed by scripts/install.sh)."""
    if not HAR_SCHEMA.is_dir():
        pytest.fail(f"{HAR_SCHEMA} is missing: run scripts/install.sh (it runs npm ci in tests/)")
    schemas = {p.name: json.loads(p.read_text()) for p in HAR_SCHEMA.glob("*.json")}
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(s)) for name, s in schemas.items())
    return Draft6Validator(schemas["har.json"], registry=registry,
                           format_checker=FormatChecker())


def test_har_is_valid_har_1_2(page: Bsk, tmp_path: Path, site: str) -> None:
    bsk = page
    bsk.ok("route", "add", "**/api/items.json*", "--abort")
    bsk.ok("eval", "load()")  # a failed request too
    bsk.ok("route", "clear")
    bsk.ok("tab", "new", f"{site}/net.html")  # and a second tab's
    bsk.ok("wait", "--network-idle")
    path = tmp_path / "session.har"
    written = bsk.ok("network", "har", str(path), "--content")["result"]
    assert path.stat().st_mode & 0o777 == 0o600
    har = json.loads(path.read_text())
    validator = har_validator()
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(har)]
    assert errors == []
    entries = har["log"]["entries"]
    assert written["entries"] == len(entries) and har["log"]["version"] == "1.2"
    pages = [e for e in entries if e["request"]["url"] == f"{site}/net.html"]
    assert len(pages) == 2 and all(e["response"]["status"] == 200 for e in pages)
    assert pages[0]["response"]["content"]["text"] == (PAGES / "net.html").read_text()
    api = [e for e in entries if "/api/items.json" in e["request"]["url"]]
    assert {e["response"]["status"] for e in api} == {0, 200}  # the failed one: 0
    assert api[0]["request"]["queryString"] == [{"name": "page", "value": "1"}]
    gif = next(e for e in entries if e["request"]["url"].endswith(".gif"))
    assert gif["response"]["content"]["encoding"] == "base64"
    # The check can fail: a HAR without a request method is not HAR.
    del entries[0]["request"]["method"]
    assert any("method" in e.message for e in validator.iter_errors(har))


# -- the glob rules (no browser) ---------------------------------------------------------


@pytest.mark.parametrize(("pattern", "url", "matches"), [
    ("**/api/*", "http://h:1/api/items.json?page=1", True),
    ("**/api/*", "http://h:1/api/v2/items", False),  # * stops at /
    ("**/api/**", "http://h:1/api/v2/items", True),
    ("**/*.{png,gif}", "http://h/a/b/pixel.gif", True),
    ("**/*.{png,gif}", "http://h/a/b/pixel.jpg", False),
    ("http://h/page?x=1", "http://h/page?x=1", True),  # ? is itself
    ("http://h/page?x=1", "http://h/pageXx=1", False),
    ("http://h/a\\*b", "http://h/a*b", True),
    ("http://h/a\\*b", "http://h/axb", False),
    ("**/api", "http://h/api/x", False),  # the whole URL
])
def test_globs_follow_playwright(pattern: str, url: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(url)) is matches
    # What Chromium is asked to pause for is never narrower than the glob.
    wild = chromium_pattern(pattern)
    if matches:
        import fnmatch
        assert fnmatch.fnmatchcase(url, wild.replace("\\?", "[?]").replace("\\*", "[*]"))


def test_times_count_down_and_the_newest_wins() -> None:
    from browserskill.browser.routing import Route

    table = RouteTable()
    table.add(Route("**/a*", body=b"old"))
    table.add(Route("**/ab", body=b"new", times=2))
    assert [table.match("http://h/ab").body for _ in range(3)] == [b"new", b"new", b"old"]
    assert table.match("http://h/c") is None
    assert [r["pattern"] for r in table.describe()] == ["**/a*"]
