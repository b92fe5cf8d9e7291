"""Independent sessions on the embedded browser: each visible and unthrottled whatever the
others do, its own window size; isolated ones with cookies and storage of their own;
cookies, storage and state save/load (Playwright's storageState) on a real Chromium."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.cli import Bsk, alive
from support.pages import ref_of
from support.wait import wait_until
from test_mcp import mcp, structured

# Page-side workload: visibility, how long a 300 ms timer really takes, and how many of
# five animation frames arrive within 2 s.
WORKLOAD = """(async () => {
  const visible = document.visibilityState;
  const t0 = performance.now();
  await new Promise(r => setTimeout(r, 300));
  const timer_ms = performance.now() - t0;
  const frames = await new Promise(r => {
    let n = 0;
    const tick = () => { if (++n >= 5) r(n); else requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    setTimeout(() => r(n), 2000);
  });
  return {visible, timer_ms, frames, focused: document.hasFocus()};
})()"""


def run_together(runners: list[Bsk], *args: str) -> list[dict[str, Any]]:
    procs = [r.popen(*args) for r in runners]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stdout + stderr
        out.append(json.loads(stdout))
    return out


@pytest.fixture
def three(fresh_bsk: Bsk, site: str) -> list[Bsk]:
    runners = []
    for sid in ("a", "b", "c"):
        fresh_bsk.ok("session", "start", sid)
        runner = fresh_bsk.with_session(sid)
        runner.ok("open", f"{site}/click.html")
        runners.append(runner)
    return runners


def test_three_sessions_are_each_visible_and_unthrottled_at_once(three: list[Bsk]) -> None:
    for answer in run_together(three, "eval", WORKLOAD):
        page = answer["result"]["value"]
        assert page["visible"] == "visible", page
        assert page["timer_ms"] < 400, page
        assert page["frames"] == 5, page
        assert page["focused"] is True, page


def test_frame_hungry_tools_work_in_the_oldest_session(three: list[Bsk], tmp_path: Path) -> None:
    first = three[0]  # started first: in one shared window it would be hidden by the others
    shot = first.ok("--timeout", "10", "screenshot", str(tmp_path / "a.png"))
    assert shot["status"] == "completed"
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first.ok("--timeout", "10", "scroll", "--dy", "400")["result"]["position"]["y"] >= 300
    first.ok("eval", "for (const id of ['drag-src', 'drop']) "
             "document.getElementById(id).setAttribute('role', 'button')")
    snap = first.ok("snapshot")["result"]["snapshot"]
    dragged = first.ok("--timeout", "10", "drag", ref_of(snap, "button", "Card"),
                       ref_of(snap, "button", "Drop here"))
    assert dragged["status"] == "completed"
    assert "dropped:card" in [h["name"] for h in first("eval", "window.hits").value]


def test_window_resize_leaves_other_sessions_alone(three: list[Bsk]) -> None:
    a, b, _ = three
    before = b("eval", "innerWidth").value
    resized = a.ok("window", "resize", "900", "700")["result"]
    assert resized["window"]["width"] == 900
    assert a("eval", "outerWidth").value == 900
    assert b("eval", "innerWidth").value == before != a("eval", "innerWidth").value
    # The session's next tab gets its size too; the others' tabs don't.
    a.ok("tab", "new")
    assert a("eval", "outerWidth").value == 900
    b.ok("tab", "new")
    assert b("eval", "outerWidth").value != 900


def test_a_page_opened_tab_does_not_hide_the_current_one(three: list[Bsk]) -> None:
    a = three[0]
    snap = a.ok("snapshot")["result"]["snapshot"]
    clicked = a.ok("click", ref_of(snap, "link", "Open in new tab"))["result"]
    assert clicked.get("new_tabs"), clicked
    page = a.ok("eval", WORKLOAD)["result"]["value"]
    assert (page["visible"], page["frames"]) == ("visible", 5), page
    new_tab = clicked["new_tabs"][0]
    a.ok("tab", "select", new_tab)
    assert a("eval", "document.visibilityState").value == "visible"


def test_session_list_shows_placement(fresh_bsk: Bsk) -> None:
    fresh_bsk.ok("session", "start", "shared-one")
    fresh_bsk.ok("session", "start", "own", "--isolated")
    listed = {s["session_id"]: s for s in fresh_bsk.ok("session", "list")["sessions"]}
    assert listed["shared-one"]["placement"] == {"kind": "embedded", "browser": "embedded",
                                                 "isolated": False}
    assert listed["own"]["placement"]["isolated"] is True
    assert listed["own"]["placement"]["context_id"]
    text = fresh_bsk("session", "list", as_json=False).stdout
    assert "its own browser context" in text and "the shared profile" in text


async def test_an_mcp_connection_does_not_hide_the_cli_session(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/click.html")
    async with mcp(bsk) as session:  # its own session, opened by the first call
        opened = await session.call_tool("open", {"url": f"{site}/other.html"})
        assert not opened.is_error
        page = (await asyncio.to_thread(bsk.ok, "eval", WORKLOAD))["result"]["value"]
    assert (page["visible"], page["frames"]) == ("visible", 5), page


# -- isolation and state ----------------------------------------------------------------


class _LoginHandler(BaseHTTPRequestHandler):
    """/login sets an HttpOnly session cookie; every page reports the cookie it was sent."""

    def do_GET(self) -> None:
        body = b"<title>site</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        if self.path.startswith("/login"):
            self.send_header("Set-Cookie", "sid=s3cret; HttpOnly; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.seen.append(self.headers.get("Cookie"))  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def login_site() -> Iterator[tuple[str, list[str | None]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LoginHandler)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server.seen  # type: ignore[attr-defined]
    server.shutdown()


def cookie_names(runner: Bsk, *args: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in runner.ok("cookies", "list", *args)["result"]["cookies"]}


def test_isolated_sessions_keep_cookies_and_storage_apart(
        fresh_bsk: Bsk, login_site: tuple[str, list[str | None]]) -> None:
    url, _ = login_site
    fresh_bsk.ok("session", "start", "alice", "--isolated")
    fresh_bsk.ok("session", "start", "bob", "--isolated")
    fresh_bsk.ok("session", "start", "shared")
    alice, bob, shared = (fresh_bsk.with_session(s) for s in ("alice", "bob", "shared"))
    for s in (alice, bob, shared):
        s.ok("open", f"{url}/")
    alice.ok("open", f"{url}/login")
    alice.ok("storage", "set", "who", "alice")
    bob.ok("cookies", "set", "pref", "bob-only")
    bob.ok("storage", "set", "who", "bob", "--session-storage")
    assert cookie_names(alice)["sid"]["httpOnly"] is True
    assert "sid" not in cookie_names(bob) and "sid" not in cookie_names(shared)
    assert "pref" not in cookie_names(alice) and "pref" not in cookie_names(shared)
    assert alice.ok("storage", "get", "who")["result"]["value"] == "alice"
    missing = bob("storage", "get", "who")
    assert missing.code == 11 and missing.json["error"]["details"]["reason"] == "no_such_key"
    assert missing.json["dispatched"] == "no"
    assert shared("eval", "localStorage.getItem('who')").value is None
    assert bob("eval", "sessionStorage.getItem('who')").value == "bob"
    # Clearing one isolated session's cookies leaves the other's.
    assert bob.ok("cookies", "clear")["result"]["cleared"] == 1
    assert "sid" in cookie_names(alice)


def test_cookie_tools(bsk: Bsk, login_site: tuple[str, list[str | None]]) -> None:
    url, seen = login_site
    bsk.ok("open", f"{url}/")
    made = bsk.ok("cookies", "set", "theme", "dark", "--http-only", "--same-site", "Strict")
    assert made["result"]["set"] == "theme"
    bsk.ok("reload")
    assert seen[-1] is not None and "theme=dark" in seen[-1]
    assert bsk("eval", "document.cookie").value == ""  # HttpOnly: page script can't see it
    got = cookie_names(bsk, "--url", f"{url}/")["theme"]
    assert (got["httpOnly"], got["sameSite"], got["expires"]) == (True, "Strict", -1)
    assert bsk.ok("cookies", "delete", "theme")["result"]["deleted"] == 1
    assert "theme" not in cookie_names(bsk, "--url", f"{url}/")
    bad = bsk("cookies", "set", "x", "1", "--same-site", "Sometimes")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "same_site"
    bsk.ok("open", "about:blank")
    nowhere = bsk("cookies", "set", "x", "1")
    assert nowhere.code == 2 and nowhere.json["error"]["details"]["field"] == "url"
    assert nowhere.json["dispatched"] == "no"
    no_storage = bsk("storage", "list")
    assert no_storage.code == 11 and no_storage.json["error"]["details"]["reason"] == \
        "no_storage"


def test_state_save_and_start_from_it(fresh_bsk: Bsk, tmp_path: Path,
                                      login_site: tuple[str, list[str | None]]) -> None:
    url, seen = login_site
    fresh_bsk.ok("session", "start", "first", "--isolated")
    first = fresh_bsk.with_session("first")
    first.ok("open", f"{url}/login")
    first.ok("storage", "set", "token", "abc123")
    saved = first.ok("state", "save", str(tmp_path / "state.json"))["result"]
    assert saved["cookies"] == 1 and saved["origins"] == [url]
    path = tmp_path / "state.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds credentials
    state = json.loads(path.read_text())
    assert state["cookies"][0]["name"] == "sid" and state["cookies"][0]["httpOnly"] is True
    assert state["origins"] == [{"origin": url, "localStorage": [
        {"name": "token", "value": "abc123"}]}]
    fresh_bsk.ok("session", "stop", "first")

    started = fresh_bsk.ok("session", "start", "again", "--isolated", "--state", str(path))
    assert started["placement"]["isolated"] is True
    again = fresh_bsk.with_session("again")
    assert again("eval", "location.href").value == "about:blank"
    # Saved again before any page of the site is open: its loaded storage is kept.
    resaved = again.ok("state", "save", str(tmp_path / "again.json"))["result"]
    assert resaved["origins"] == [url]
    assert json.loads((tmp_path / "again.json").read_text())["origins"] == state["origins"]
    assert [t["tab_id"] for t in again.ok("tab", "list")["result"]["tabs"]] == ["t1"]
    again.ok("open", f"{url}/")
    assert seen[-1] == "sid=s3cret"  # the HttpOnly cookie went back to the server
    assert again("eval", "localStorage.getItem('token')").value == "abc123"


def test_a_playwright_state_file_loads(fresh_bsk: Bsk, tmp_path: Path,
                                       login_site: tuple[str, list[str | None]]) -> None:
    url, seen = login_site
    # As Playwright's `context.storageState({path})` writes it.
    playwright_state = {
        "cookies": [{"name": "pw", "value": "from-playwright", "domain": "127.0.0.1",
                     "path": "/", "expires": -1, "httpOnly": False, "secure": False,
                     "sameSite": "Lax"}],
        "origins": [{"origin": url, "localStorage": [{"name": "pw_key", "value": "v1"}]}],
    }
    path = tmp_path / "pw.json"
    path.write_text(json.dumps(playwright_state))
    fresh_bsk.ok("session", "start", "pw", "--isolated")
    pw = fresh_bsk.with_session("pw")
    loaded = pw.ok("state", "load", str(path))["result"]
    assert (loaded["cookies"], loaded["origins"]) == (1, [url])
    assert pw.ok("tab", "list")["result"]["tabs"][0]["tab_id"] == "t1"  # no helper tab left
    assert len(pw.ok("tab", "list")["result"]["tabs"]) == 1
    pw.ok("open", f"{url}/")
    assert seen[-1] == "pw=from-playwright"
    assert pw("eval", "localStorage.getItem('pw_key')").value == "v1"


@pytest.mark.parametrize("args,field", [
    (("--state", "STATE"), "state"),  # a state needs --isolated
    (("--isolated", "--state", "NOT_JSON"), "state"),
    (("--isolated", "--state", "MISSING"), "state"),
    (("--isolated", "--state", "BAD_COOKIE"), "state"),
])
def test_session_start_refuses_bad_state(fresh_bsk: Bsk, tmp_path: Path, args: tuple[str, ...],
                                         field: str) -> None:
    files = {"STATE": '{"cookies": [], "origins": []}', "NOT_JSON": "{nope",
             "BAD_COOKIE": '{"cookies": [{"name": 1, "value": "x", "domain": "a"}]}'}
    paths = []
    for a in args:
        if a in files:
            (tmp_path / a).write_text(files[a])
        paths.append(str(tmp_path / a) if a.isupper() else a)
    r = fresh_bsk("session", "start", "x", *paths)
    assert r.code == 2, r.stdout
    assert r.json["error"]["details"]["field"] == field
    assert "x" not in [s["session_id"] for s in fresh_bsk.ok("session", "list")["sessions"]]


def test_isolated_session_survives_a_daemon_restart(fresh_bsk: Bsk,
                                                    login_site: tuple[str, list[str | None]]
                                                    ) -> None:
    url, _ = login_site
    fresh_bsk.ok("session", "start", "keep", "--isolated")
    keep = fresh_bsk.with_session("keep")
    keep.ok("open", f"{url}/login")
    pid = int((fresh_bsk.home / "daemon.lock").read_text())
    os.kill(pid, 9)
    wait_until(lambda: not alive(pid), 10, "the killed daemon to go")
    # The next call spawns a new daemon, which re-adopts the session and its context.
    assert "sid" in cookie_names(keep)
    listed = {s["session_id"]: s for s in fresh_bsk.ok("session", "list")["sessions"]}
    assert listed["keep"]["placement"]["isolated"] is True
    fresh_bsk.ok("session", "stop", "keep")


async def test_an_isolated_mcp_connection_has_cookies_of_its_own(
        bsk: Bsk, login_site: tuple[str, list[str | None]]) -> None:
    url, _ = login_site
    bsk.ok("open", f"{url}/")
    async with mcp(bsk, "--isolated", "--caps", "state") as session:
        opened = await session.call_tool("open", {"url": f"{url}/login"})
        assert not opened.is_error
        listed = structured(await session.call_tool("cookies_list", {}))
        assert "sid" in [c["name"] for c in listed["result"]["cookies"]]
        assert listed["result"]["scope"] == "isolated"
        assert "sid" not in await asyncio.to_thread(cookie_names, bsk)


def test_a_killed_browser_comes_back_with_every_tab(
        fresh_bsk: Bsk, site: str, login_site: tuple[str, list[str | None]]) -> None:
    url, _ = login_site
    fresh_bsk.ok("session", "start", "two")
    s = fresh_bsk.with_session("two")
    s.ok("open", f"{site}/counter.html")
    s.ok("tab", "new", f"{site}/other.html")
    fresh_bsk.ok("session", "start", "iso", "--isolated")
    iso = fresh_bsk.with_session("iso")
    iso.ok("open", f"{url}/login")
    iso.ok("open", f"{url}/")
    assert "sid" in cookie_names(iso)
    pid = s.ok("status")["browser"]["pid"]
    os.killpg(pid, signal.SIGKILL)
    # Once the daemon has seen it go (a call racing the death would be outcome_unknown:
    # it may have been sent), the next call brings the tabs back.
    wait_until(lambda: not s.ok("status")["browser"]["connected"], 10, "the loss noticed")
    back = s.ok("eval", "document.title")["result"]
    assert back["value"] == "Other"  # t2 was current, and is again
    assert {t["tab_id"] for t in back["browser_restarted"]["reopened"]} == {"t1", "t2"}
    s.ok("tab", "select", "t1")
    assert s("eval", "document.title").value == "Counter"
    again = iso.ok("cookies", "list")["result"]
    assert again["cookies"] == [] and again["scope"] == "isolated"
    assert "cookies and storage" in again["browser_restarted"]["note"]
    assert iso("eval", "location.href").value == f"{url}/"
