"""Record WebMCP event orders from the real Chromium, for the fake-CDP replay tests.

    .venv/bin/python scripts/record_webmcp.py [--out tests/data/webmcp_orders.json] [--print]

Launches headless Chromium the way the daemon does (`--enable-features=WebMCP`), serves
tests/pages on two loopback origins (127.0.0.1 and a cross-site localhost), and for each
scenario opens a fresh tab on tests/pages/webmcp.html, invokes one page tool and does
what the scenario says (a second CDP client reloads, the page crashes, …). Every command
reply and every relevant event of the tab's sessions is written down in arrival order
with its time relative to the `WebMCP.invokeTool` send. Ids are normalised so replays
are stable: the main frame is FRAME_MAIN, CDP sessions are "page" or "child:N". Entry
kinds: send / reply / reply_error / no_reply (our commands), side_send / side_no_reply /
side_reply_error (a second CDP client's), event.

Sleeps here are observation windows of a recorder, not synchronisation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from browserskill.browser import launcher  # noqa: E402
from browserskill.browser.cdp import CdpLink  # noqa: E402
from browserskill.browser.link import CdpError, CommandTimeout, LinkError  # noqa: E402

PAGES = ROOT / "tests" / "pages"
KEEP = {
    "Page.frameStartedNavigating", "Page.frameStartedLoading", "Page.frameNavigated",
    "Page.frameStoppedLoading", "Page.frameDetached", "Page.frameRequestedNavigation",
    "Page.frameScheduledNavigation", "Page.navigatedWithinDocument",
    "Page.domContentEventFired", "Page.loadEventFired", "Target.attachedToTarget",
    "Target.detachedFromTarget",
}


class Handler(SimpleHTTPRequestHandler):
    """Static pages, plus /stall: a document that commits and then never finishes loading."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/stall"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>stalled</title><p>loading" + b" " * 2048)
            self.wfile.flush()
            time.sleep(30)
            return
        super().do_GET()


def serve(host: str) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer((host, 0), partial(Handler, directory=str(PAGES)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}"


class Recorder:
    def __init__(self, link: CdpLink) -> None:
        self.link = link
        self.entries: list[dict[str, Any]] = []
        self.t0 = time.monotonic()
        self.sessions: dict[str, str] = {}
        self.frames: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        self.on = False

    def _norm(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._norm(v) for k, v in value.items()
                    if k not in ("stackTrace", "securityOriginDetails", "adFrameStatus",
                                 "gatedAPIFeatures", "secureContextType",
                                 "crossOriginIsolatedContextType", "domainAndRegistry",
                                 "objectId", "browserContextId", "timestamp")}
        if isinstance(value, list):
            return [self._norm(v) for v in value]
        if isinstance(value, str):
            return self.frames.get(value) or self.sessions.get(value) or value
        return value

    def watch(self, session_id: str, role: str) -> None:
        self.sessions[session_id] = role

        def handler(method: str, params: dict[str, Any]) -> None:
            if method == "Target.attachedToTarget":
                sid = params["sessionId"]
                role_n = f"child:{len([r for r in self.sessions.values() if r != 'page'])}"
                self.watch(sid, role_n)
                asyncio.get_running_loop().create_task(self.start_child(sid))
            if self.on and (method in KEEP or method.startswith(("WebMCP.", "Inspector."))):
                self.add("event", method, params, session=session_id)

        self.link.subscribe(session_id, handler)

    async def start_child(self, sid: str) -> None:
        try:
            await self.link.send("Page.enable", session_id=sid, timeout=10)
            await self.link.send("WebMCP.enable", session_id=sid, timeout=10)
        except LinkError as e:
            print("child", e, file=sys.stderr)

    def add(self, kind: str, method: str, payload: Any = None, *, session: str | None = None,
            key: str = "params") -> None:
        entry: dict[str, Any] = {"t": round(time.monotonic() - self.t0, 4), "kind": kind,
                                 "method": method}
        if session is not None:
            entry["session"] = self.sessions.get(session, session)
        if payload is not None:
            entry[key] = self._norm(payload)
        self.entries.append(entry)

    def start(self) -> None:
        self.entries = []
        self.t0 = time.monotonic()
        self.on = True

    async def send(self, method: str, params: dict[str, Any] | None, session_id: str, *,
                   timeout: float = 10.0, record: bool = True) -> dict[str, Any] | None:
        if record:
            self.add("send", method, params)
        try:
            result = await self.link.send(method, params, session_id=session_id,
                                          timeout=timeout)
        except CdpError as e:
            if record:
                self.add("reply_error", method, {"code": e.code, "message": e.message},
                         key="error")
            return None
        except CommandTimeout:
            if record:
                self.add("no_reply", method, f"no answer within {timeout:g}s", key="error")
            return None
        if record:
            self.add("reply", method, result, key="result")
        return result


async def scenario(name: str, link: CdpLink, other: CdpLink, base: str, cross: str,
                   stall: str) -> dict[str, Any]:
    handle = await link.create_tab("about:blank")
    rec = Recorder(link)
    rec.frames[handle.target_id] = "FRAME_MAIN"
    rec.watch(handle.session_id, "page")
    sid = handle.session_id
    for method, params in (("Page.enable", None), ("Target.setAutoAttach", {
            "autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}),
            ("WebMCP.enable", None)):
        await link.send(method, params, session_id=sid)
    page = f"{base}/webmcp.html"
    loaded = asyncio.get_running_loop().create_future()
    unsub = link.subscribe(sid, lambda m, p: m == "WebMCP.toolsAdded" and any(
        t["name"] == "subscribe" for t in p["tools"]) and not loaded.done()
        and loaded.set_result(None))
    await link.send("Page.navigate", {"url": page}, session_id=sid)
    await asyncio.wait_for(loaded, 10)
    unsub()
    side = await other.attach(handle.target_id)  # a second CDP client on the same tab
    frame = handle.target_id
    invoke: dict[str, Any] = {"frameId": frame, "toolName": "hang", "input": {}}
    description = ""
    rec.start()

    async def do_invoke(tool: str, tool_input: dict[str, Any] | None = None,
                        timeout: float = 10.0) -> dict[str, Any] | None:
        invoke.update(toolName=tool, input=tool_input or {})
        return await rec.send("WebMCP.invokeTool", invoke, sid, timeout=timeout)

    async def side_send(method: str, params: dict[str, Any] | None = None, *,
                        timeout: float = 10.0) -> None:
        rec.add("side_send", method, params)
        try:
            await other.send(method, params, session_id=side.session_id, timeout=timeout)
        except LinkError as e:
            rec.add("side_no_reply" if isinstance(e, CommandTimeout) else "side_reply_error",
                    method, str(e), key="error")

    window = 2.0
    if name == "completed":
        description = "a normal call: the tool answers"
        await do_invoke("echo", {"text": "hi"})
    elif name == "error":
        description = "the tool throws"
        await do_invoke("fail")
    elif name == "cancel":
        description = "cancelInvocation of a started call"
        answer = await do_invoke("hang")
        await asyncio.sleep(0.2)
        await rec.send("WebMCP.cancelInvocation", {"invocationId": answer["invocationId"]}, sid)
    elif name == "external_reload":
        description = "a second CDP client reloads the page while the tool is pending"
        await do_invoke("hang")
        await asyncio.sleep(0.2)
        await side_send("Page.reload")
        window = 3.0
    elif name == "external_navigate":
        description = "a second CDP client navigates the page (same URL) while pending"
        await do_invoke("hang")
        await asyncio.sleep(0.2)
        await side_send("Page.navigate", {"url": page})
        window = 3.0
    elif name == "script_reload":
        description = "page script (not the tool) reloads the page while the tool is pending"
        await do_invoke("hang")
        await asyncio.sleep(0.2)
        await side_send("Runtime.evaluate", {"expression": "setTimeout(() => location.reload())"})
        window = 3.0
    elif name == "tool_reload":
        description = "the tool reloads its own page and answers"
        await do_invoke("reload_self")
        window = 3.0
    elif name == "tool_cross_origin":
        description = "the tool navigates its page to another origin and answers"
        await do_invoke("goto", {"url": f"{cross}/other.html"})
        window = 3.0
    elif name == "tool_reload_late":
        description = "the tool reloads its own page and would answer only after it began"
        await do_invoke("reload_later")
        window = 3.0
    elif name == "tool_cross_origin_late":
        description = "the tool navigates to another origin and would answer after it began"
        await do_invoke("goto_later", {"url": f"{cross}/other.html"})
        window = 3.0
    elif name == "crash":
        description = "the renderer crashes while the tool is pending"
        await do_invoke("hang")
        await asyncio.sleep(0.2)
        await side_send("Page.crash", timeout=0.5)
        window = 3.0
    elif name == "crash_recovery_stalls":
        description = "crash while pending, then (within the grace) a recovery navigation " \
                      "that commits and never finishes loading"
        await do_invoke("hang")
        await asyncio.sleep(0.2)
        await side_send("Page.crash", timeout=0.1)
        await side_send("Page.navigate", {"url": stall}, timeout=0.1)
        window = 3.0
    elif name == "reload_in_dispatch_window":
        description = "a reload starts between the invokeTool send and its reply"
        task = asyncio.get_running_loop().create_task(side_send("Page.reload"))
        await do_invoke("hang")
        await task
        window = 3.0
    elif name == "crash_in_dispatch_window":
        description = "the renderer crashes between the invokeTool send and its reply"
        task = asyncio.get_running_loop().create_task(side_send("Page.crash", timeout=1.0))
        await asyncio.sleep(0)
        await do_invoke("hang", timeout=3.0)
        await task
        window = 0.5
    elif name == "invoke_after_crash":
        description = "invokeTool on a crashed tab (no recovery) never answers"
        await side_send("Page.crash", timeout=1.0)
        await do_invoke("echo", timeout=3.0)
        window = 0.5
    elif name == "timeout":
        description = "no navigation: the tool never answers"
        await do_invoke("hang")
        window = 3.0
    elif name == "unknown_tool":
        description = "invokeTool with a name the frame does not have"
        await do_invoke("no_such_tool")
        window = 1.0
    elif name == "declarative":
        description = "a declarative form tool (no toolautosubmit): fills the form"
        await do_invoke("subscribe", {"email": "a@example.com"})
        window = 2.0
    elif name == "declarative_autosubmit":
        description = "a declarative form tool with toolautosubmit whose submit handler " \
                      "answers with respondWith"
        await do_invoke("search", {"q": "lamp"})
        window = 1.0
    await asyncio.sleep(window)
    rec.on = False
    try:
        await link.close_tab(handle.target_id)
    except LinkError:
        pass
    return {"description": description, "entries": rec.entries}


async def record_frames(link: CdpLink, base: str, cross: str) -> dict[str, Any]:
    """Which session reports which iframe's tools (same-origin, OOPIF allowed, denied)."""
    handle = await link.create_tab("about:blank")
    rec = Recorder(link)
    rec.frames[handle.target_id] = "FRAME_MAIN"
    rec.watch(handle.session_id, "page")
    rec.start()
    sid = handle.session_id
    for method, params in (("Page.enable", None), ("Target.setAutoAttach", {
            "autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}),
            ("WebMCP.enable", None)):
        await rec.send(method, params, sid)
    await rec.send("Page.navigate", {"url": f"{base}/webmcp_frames.html?other={cross}"}, sid)
    await asyncio.sleep(2.5)
    await rec.send("WebMCP.disable", None, sid)
    await rec.send("WebMCP.enable", None, sid)  # does enable report before its reply?
    await asyncio.sleep(0.5)
    rec.on = False
    await link.close_tab(handle.target_id)
    return {"description": "webmcp_frames.html: main, same-origin, OOPIF allow=tools, OOPIF "
                           "without; then disable+enable on the loaded page",
            "entries": rec.entries}


SCENARIOS = ("completed", "error", "cancel", "external_reload", "external_navigate",
             "script_reload", "tool_reload", "tool_cross_origin", "tool_reload_late",
             "tool_cross_origin_late", "crash",
             "crash_recovery_stalls", "reload_in_dispatch_window", "crash_in_dispatch_window",
             "invoke_after_crash", "timeout", "unknown_tool", "declarative",
             "declarative_autosubmit")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "tests" / "data" / "webmcp_orders.json"))
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--print", action="store_true", help="print instead of writing")
    args = parser.parse_args()
    executable = launcher.find_browser()
    if not executable:
        print("no Chromium found", file=sys.stderr)
        return 1
    server_a, base = serve("127.0.0.1")
    server_b, _ = serve("127.0.0.1")
    cross = f"http://localhost:{server_b.server_address[1]}"
    stall = f"{base}/stall"
    profile = Path(tempfile.mkdtemp(prefix="bsk-record-"))
    browser = await launcher.launch(executable, profile, profile / "chromium.log")
    link = await CdpLink.connect(browser.ws_url)
    other = await CdpLink.connect(browser.ws_url)
    out: dict[str, Any] = {
        "chromium": (await link.version()).get("product"),
        "note": "recorded by scripts/record_webmcp.py; times in seconds from the "
                "WebMCP.invokeTool send",
        "scenarios": {},
    }
    try:
        for name in args.only or SCENARIOS:
            print(f"recording {name}", file=sys.stderr)
            out["scenarios"][name] = await scenario(name, link, other, base, cross, stall)
        if args.only is None or "frames" in args.only:
            out["scenarios"]["frames"] = await record_frames(link, base, cross)
    finally:
        await other.close()
        await link.close()
        browser.terminate()
        server_a.shutdown()
        server_b.shutdown()
    text = json.dumps(out, indent=1) + "\n"
    if args.print:
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
