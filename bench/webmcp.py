"""WebMCP fail-fast table on real Chromium: bsk vs `playwright-cli webmcp-call`, one run.

Page: tests/pages/webmcp.html (its tools: `hang` never answers, `reload_self` reloads its
own page and answers, `add_item`, `echo`, ...). Chromium runs with --enable-features=WebMCP
for both tools (the bsk daemon sets it; playwright-cli gets it in its launch args, plus a
--remote-debugging-port for the second client). "Someone else" is a second CDP client on
the tool's tab (as in tests/test_webmcp.py): it reloads (Page.reload), navigates
(Page.navigate), reloads by page script, crashes the renderer (Page.crash), reads the
page's log of tool runs to know a tool has started, and timestamps the main frame's
Page.frameStoppedLoading / Inspector.targetCrashed as it sees them.

With a 20 s timeout (bsk: `--timeout 20`):
  external reload / Page.navigate / page-script reload while `hang` is pending
      -> time from the command to the CLI's exit, and from the replacement document's
         frameStoppedLoading (seen by the second client) to the exit; for bsk also the
         operation's own timeline (stopped loading -> failed). Target <= 1.0 s after stop.
  the tool reloads its own page (`reload_self`) -> completes
  no navigation (`hang`) -> bsk times out at 20 s (both tools run at the same time here)
With a 15 s timeout:
  Page.crash while `hang` is pending -> failure (target <= 0.8 s after Page.crash)
  invoke a crashed tab's tool (`echo`) -> 404 tool_not_found (target <= 50 ms: operation
      time, and the HTTP round trip of the same call on the API)
  navigate the crashed tab, tools register, invoke `add_item` x3 via the CLI and x3 via
      the HTTP API (target <= 20 ms each: operation time and HTTP round trip)
playwright-cli 0.1.22 has `webmcp-call NAME [--params JSON] [--frame F]` (it runs the
tool through `document.modelContext.executeTool` in a page evaluate, not the CDP WebMCP
domain) and no timeout option: where it never answers, the bench kills it at 25 s.

    .venv/bin/python bench/webmcp.py [N]      # repetitions of each fail-fast row, default 3
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import playwright_peer as peer
from websockets.sync.client import ClientConnection, connect

N = 3
PAGE = "webmcp.html"
PEER_KILL_S = 25.0  # playwright-cli has no timeout: it is killed after this
TARGET_AFTER_STOP_S, TARGET_CRASH_S, TARGET_404_MS, TARGET_CALL_MS = 1.0, 0.8, 50.0, 20.0


# -- the second CDP client ----------------------------------------------------------------


class Side:
    """A second CDP client on one page target; timestamps the events it is sent."""

    def __init__(self, ws_url: str, frame_id: str) -> None:
        self.stack = ExitStack()
        self.ws: ClientConnection = self.stack.enter_context(connect(ws_url, max_size=None))
        self.frame_id = frame_id  # a page target's id is its main frame's id
        self.last_id = 0
        self.events: list[tuple[float, str]] = []
        self.send("Page.enable")
        self.send("Inspector.enable")

    def _note(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method == "Page.frameStoppedLoading":
            if msg["params"]["frameId"] == self.frame_id:
                self.events.append((time.monotonic(), "stopped loading"))
        elif method == "Page.frameNavigated":
            if not msg["params"]["frame"].get("parentId"):
                self.events.append((time.monotonic(), "navigated"))
        elif method == "Inspector.targetCrashed":
            self.events.append((time.monotonic(), "crashed"))

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             reply: bool = True) -> dict[str, Any] | None:
        self.last_id += 1
        msg_id = self.last_id
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        while reply:
            msg = json.loads(self.ws.recv(timeout=20))
            if msg.get("id") == msg_id:
                return msg
            self._note(msg)
        return None

    def pump(self, seconds: float) -> None:
        """Read (and timestamp) events for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self._note(json.loads(self.ws.recv(timeout=left)))
            except TimeoutError:
                return

    def eval(self, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True}) or {}
        return answer.get("result", {}).get("result", {}).get("value")

    def ran(self, tool: str) -> bool:
        return bool(self.eval(f"(window.runs || []).includes({json.dumps(tool)})"))

    def first(self, what: str, after: float) -> float | None:
        return next((t for t, w in self.events if w == what and t >= after), None)

    def close(self) -> None:
        self.stack.close()


def page_targets(http_endpoint: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(http_endpoint + "/json/list", timeout=10) as r:
        return [t for t in json.load(r) if t["type"] == "page"]


# -- the two tools ------------------------------------------------------------------------


@dataclass
class Outcome:
    """How one call ended: exit code, a short label, CLI wall (s), end time (monotonic)."""

    code: int | None
    label: str
    wall: float
    ended: float
    answer: dict[str, Any] | None = None
    killed: bool = False


class Runner:
    name = ""

    def goto(self, url: str) -> None:
        raise NotImplementedError

    def side(self) -> Side:
        raise NotImplementedError

    def invoke_argv(self, tool: str, timeout_s: int, params: dict[str, Any] | None
                    ) -> tuple[list[str], dict[str, str], Path | None]:
        raise NotImplementedError

    def outcome(self, code: int, stdout: str, stderr: str) -> tuple[str, dict[str, Any] | None]:
        raise NotImplementedError

    def start(self, tool: str, timeout_s: int, params: dict[str, Any] | None = None,
              kill_after: float | None = None) -> Call:
        argv, env, cwd = self.invoke_argv(tool, timeout_s, params)
        return Call(self, argv, env, cwd, kill_after or timeout_s + 30)

    def call(self, tool: str, timeout_s: int, params: dict[str, Any] | None = None) -> Outcome:
        return self.start(tool, timeout_s, params).wait()


class Call:
    """One CLI call in the background; its exit time is taken by a thread waiting on it."""

    started: list[subprocess.Popen[str]] = []  # killed (by pid) if the bench stops early

    def __init__(self, runner: Runner, argv: list[str], env: dict[str, str], cwd: Path | None,
                 kill_after: float) -> None:
        self.runner = runner
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        Call.started.append(self.proc)
        self.kill_after = kill_after
        self.result: Outcome | None = None
        self.thread = threading.Thread(target=self._wait, daemon=True)
        self.thread.start()

    def _wait(self) -> None:
        killed = False
        try:
            out, err = self.proc.communicate(timeout=self.kill_after)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its pid
            out, err = self.proc.communicate()
            killed = True
        ended = time.monotonic()
        if killed:
            label, answer = f"no answer, killed at {self.kill_after:.0f} s", None
        else:
            label, answer = self.runner.outcome(self.proc.returncode, out, err)
        self.result = Outcome(None if killed else self.proc.returncode, label,
                              ended - self.t0, ended, answer, killed)

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def wait(self) -> Outcome:
        self.thread.join()
        assert self.result is not None
        return self.result


class BskRunner(Runner):
    name = "bsk"

    def __init__(self, bsk: common.BskDaemon) -> None:
        self.bsk = bsk

    def goto(self, url: str) -> None:
        self.bsk.run("open", url)

    def side(self) -> Side:
        http = self.bsk.json("status")["browser"]["http_endpoint"]
        tabs = self.bsk.json("tab", "list")["result"]["tabs"]
        target = next(t["target_id"] for t in tabs if t["tab_id"] == "t1")
        ws = next(t["webSocketDebuggerUrl"] for t in page_targets(http) if t["id"] == target)
        return Side(ws, target)

    def invoke_argv(self, tool: str, timeout_s: int, params: dict[str, Any] | None
                    ) -> tuple[list[str], dict[str, str], Path | None]:
        extra = ["--input", json.dumps(params)] if params else []
        return (self.bsk.argv("--json", "--timeout", str(timeout_s), "webmcp", "invoke", tool,
                              *extra), self.bsk.env, None)

    def outcome(self, code: int, stdout: str, stderr: str) -> tuple[str, dict[str, Any] | None]:
        try:
            answer = json.loads(stdout)
        except ValueError:
            return f"exit {code}, no JSON: {(stdout + stderr)[:200]!r}", None
        if answer.get("status") == "completed":
            r = answer["result"]
            label = f"exit {code} completed ({r['status']}" + (
                ", navigated" if r.get("navigated") else "") + ")"
        else:
            error = answer.get("error") or {}
            reason = (error.get("details") or {}).get("reason")
            label = f"exit {code} {error.get('code')}" + (f" ({reason})" if reason else "")
        return label, answer

    def api_invoke(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
        status, _, answer, wall = common.api(self.bsk.socket, "POST",
                                             "/v1/sessions/default/webmcp/invoke", body)
        return status, answer, wall


class PeerRunner(Runner):
    name = "playwright-cli"

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir, self.port = workdir, port
        self.argv = peer.ensure_installed()
        self.url = ""

    def goto(self, url: str) -> None:
        cp = peer.run(["goto", url], self.workdir)
        if cp.returncode != 0:
            raise RuntimeError(f"playwright-cli goto: {cp.stdout}{cp.stderr}")
        self.url = url

    def side(self) -> Side:
        pages = [t for t in page_targets(f"http://127.0.0.1:{self.port}")
                 if t["url"] == self.url]
        if len(pages) != 1:
            raise RuntimeError(f"playwright-cli's page {self.url}: {len(pages)} targets")
        return Side(pages[0]["webSocketDebuggerUrl"], pages[0]["id"])

    def invoke_argv(self, tool: str, timeout_s: int, params: dict[str, Any] | None
                    ) -> tuple[list[str], dict[str, str], Path | None]:
        extra = ["--params", json.dumps(params)] if params else []
        return [*self.argv, "webmcp-call", tool, *extra], peer._env(), self.workdir

    def start(self, tool: str, timeout_s: int, params: dict[str, Any] | None = None,
              kill_after: float | None = None) -> Call:
        return super().start(tool, timeout_s, params, kill_after or PEER_KILL_S)

    def outcome(self, code: int, stdout: str, stderr: str) -> tuple[str, dict[str, Any] | None]:
        text = stdout + stderr
        for head, word in (("### Error\n", "error"), ("### Result\n", "result")):
            if head in text:
                first = text.split(head, 1)[1].strip().splitlines()[0][:44]
                return f"exit {code} {word}: {first}", None
        return f"exit {code}: {text.strip()[:80]!r}", None


# -- scenarios ----------------------------------------------------------------------------


@dataclass
class Row:
    """One run of one fail-fast scenario."""

    outcome: Outcome
    total: float  # trigger -> exit (s)
    after_stop: float | None  # the replacement document's frameStoppedLoading (crash:
    # Inspector.targetCrashed), as the second client saw it -> exit
    op_after_stop: float | None = None  # bsk's own timeline: stopped loading (crash) -> failed


def wait_started(call: Call, side: Side, tool: str) -> None:
    deadline = time.monotonic() + 20
    while not side.ran(tool):
        if not call.running:
            raise RuntimeError(f"{call.runner.name}: {tool} ended before it was seen running: "
                               f"{call.wait().label}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{call.runner.name}: {tool} never started")
        time.sleep(0.02)


def timeline_gap(answer: dict[str, Any] | None, start: str, end: str) -> float | None:
    """Seconds between two entries of a tool_page_unloaded timeline (by prefix)."""
    details = ((answer or {}).get("error") or {}).get("details") or {}
    marks = {what: t for t, what in details.get("timeline", [])}
    a = next((t for w, t in marks.items() if w.startswith(start)), None)
    b = next((t for w, t in marks.items() if w.startswith(end)), None)
    return b - a if a is not None and b is not None else None


def fail_fast(runner: Runner, url: str, how: str, timeout_s: int) -> Row:
    """`hang` pending, then someone else reloads/navigates/crashes the page."""
    runner.goto(url)
    side = runner.side()
    try:
        call = runner.start("hang", timeout_s)
        wait_started(call, side, "hang")
        side.events.clear()
        t0 = time.monotonic()
        if how == "Page.reload":
            side.send("Page.reload", reply=False)
        elif how == "Page.navigate":
            side.send("Page.navigate", {"url": url}, reply=False)
        elif how == "page script":
            side.send("Runtime.evaluate", {"expression": "setTimeout(() => location.reload())"},
                      reply=False)
        elif how == "Page.crash":
            side.send("Page.crash", reply=False)  # answers late or never
        while call.running:
            side.pump(0.005)
        side.pump(0.3 if how != "Page.crash" else 0)  # a late frameStoppedLoading
        out = call.wait()
        seen = side.first("crashed" if how == "Page.crash" else "stopped loading", t0)
        row = Row(out, out.ended - t0, out.ended - seen if seen is not None else None)
        if how == "Page.crash":
            row.op_after_stop = timeline_gap(out.answer, "renderer crashed", "failed")
        else:
            row.op_after_stop = timeline_gap(out.answer, "the replacement document stopped",
                                             "failed")
        return row
    finally:
        side.close()


def fmt_s(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.2f} s" if signed else f"{x:.2f} s"


def print_rows(title: str, rows: dict[str, list[Row]], seen: str = "stop") -> None:
    print(f"\n{title}")
    for name, runs in rows.items():
        for r in runs:
            extra = (f", {seen}→exit {fmt_s(r.after_stop, True)}" if r.after_stop is not None
                     else f", no {seen} event before the exit")
            if r.op_after_stop is not None:
                extra += f", op timeline {fmt_s(r.op_after_stop)}"
            print(f"  {name:<15} {r.outcome.label:<58} trigger→exit {fmt_s(r.total)}{extra}")


def median_of(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return common.median(vals) if vals else None


def main(n: int = N) -> int:
    common.exit_on_sigterm()
    common.header("WebMCP fail fast: bsk vs playwright-cli webmcp-call, real Chromium")
    help_text = peer.run(["--help"], common.BENCH_DIR).stdout
    has_call = "webmcp-call" in help_text
    print(f"   playwright-cli {common.peer_version()}: webmcp-call "
          f"{'present' if has_call else 'ABSENT (peer columns skipped)'}; it has no timeout "
          f"option (killed by the bench at {PEER_KILL_S:.0f} s where it never answers)")
    with socket.socket() as s:  # a free port for the peer browser's second client
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = peer.write_config(extra_args=["--enable-features=WebMCP",
                                            f"--remote-debugging-port={port}"])
    ok = True
    try:
        with common.fixture_sites() as (site, _), common.BskDaemon(expose_cdp=True) as bsk:
            url = f"{site}/{PAGE}"
            ours = BskRunner(bsk)
            runners: list[Runner] = [ours]
            if has_call:
                opened = peer.run(["open", url], workdir)
                if opened.returncode != 0:
                    raise RuntimeError(f"playwright-cli open: {opened.stdout}{opened.stderr}")
                runners.append(PeerRunner(workdir, port))
            bsk.run("open", url)
            for r in runners:  # warm-up: one ordinary call each
                out = r.call("echo", 20)
                if "completed" not in out.label and "result" not in out.label:
                    raise RuntimeError(f"{r.name} echo: {out.label}")

            # 20 s: external document changes
            fast: dict[str, dict[str, list[Row]]] = {}
            for how in ("Page.reload", "Page.navigate", "page script"):
                fast[how] = {r.name: [] for r in runners}
                for _ in range(n):
                    for r in runners:
                        fast[how][r.name].append(fail_fast(r, url, how, 20))
                print_rows(f"external {how} while `hang` is pending (timeout 20 s), "
                           f"trigger → CLI exit:", fast[how])

            # 20 s: the tool reloads its own page
            print("\nthe tool reloads its own page (`reload_self`, timeout 20 s):")
            own: dict[str, list[Outcome]] = {r.name: [] for r in runners}
            for _ in range(n):
                for r in runners:
                    r.goto(url)
                    own[r.name].append(r.call("reload_self", 20))
            for name, outs in own.items():
                for o in outs:
                    print(f"  {name:<15} {o.label:<58} CLI wall {o.wall:.2f} s")
            late = {}
            for r in runners:
                r.goto(url)
                late[r.name] = r.call("reload_later", 20)
                print(f"  {r.name:<15} (`reload_later`: answers 300 ms after its reload began)"
                      f" {late[r.name].label}")

            # 20 s: no navigation -> timeout (both tools at once: they only wait)
            print("\nno navigation (`hang`, timeout 20 s), both tools at the same time:")
            for r in runners:
                r.goto(url)
            calls = {r.name: r.start("hang", 20) for r in runners}
            hung = {name: c.wait() for name, c in calls.items()}
            for name, o in hung.items():
                print(f"  {name:<15} {o.label:<58} CLI wall {o.wall:.2f} s")

            # 15 s: crash, then the crashed tab's tool, then recovery
            crash: dict[str, list[Row]] = {r.name: [] for r in runners}
            gone: dict[str, list[Outcome]] = {r.name: [] for r in runners}
            gone_api: list[tuple[int, dict[str, Any], float]] = []
            recovery: dict[str, list[Outcome]] = {r.name: [] for r in runners}
            recovery_api: list[tuple[int, dict[str, Any], float]] = []
            navigate_s: dict[str, list[float]] = {r.name: [] for r in runners}
            for _ in range(n):
                for r in runners:
                    crash[r.name].append(fail_fast(r, url, "Page.crash", 15))
                    gone[r.name].append(r.call("echo", 15))
                    if r is ours:
                        gone_api.append(ours.api_invoke({"name": "echo", "timeout_sec": 15}))
                    t0 = time.monotonic()
                    r.goto(url)
                    navigate_s[r.name].append(time.monotonic() - t0)
                    for i in range(3):
                        recovery[r.name].append(r.call("add_item", 15, {"item": f"i{i}"}))
                    if r is ours:
                        for i in range(3):
                            recovery_api.append(ours.api_invoke(
                                {"name": "add_item", "input": {"item": f"h{i}"},
                                 "timeout_sec": 15}))
            print_rows("Page.crash while `hang` is pending (timeout 15 s), Page.crash → "
                       "CLI exit:", crash, seen="crashed")
            print("\ninvoke the crashed tab's tool (`echo`, timeout 15 s):")
            for name, outs in gone.items():
                for o in outs:
                    op = (f", op {common.op_ms(o.answer):.0f} ms" if o.answer else "")
                    print(f"  {name:<15} {o.label:<58} CLI wall {o.wall * 1000:.0f} ms{op}")
            for status, answer, wall in gone_api:
                print(f"  {'bsk HTTP API':<15} {status} {answer['error']['code']:<54} "
                      f"round trip {wall:.1f} ms, op {common.op_ms(answer):.0f} ms")
            print("\nnavigate the crashed tab, then `add_item` x3 (timeout 15 s):")
            for name, secs in navigate_s.items():
                print(f"  {name:<15} navigate (`{'open' if name == 'bsk' else 'goto'}`), "
                      f"CLI wall: " + ", ".join(f"{s:.2f} s" for s in secs))
            for name, outs in recovery.items():
                walls = ", ".join(f"{o.wall * 1000:.0f}" for o in outs)
                ops = ", ".join(f"{common.op_ms(o.answer):.0f}" for o in outs if o.answer)
                labels = sorted({o.label for o in outs})
                print(f"  {name:<15} {'; '.join(labels)}")
                print(f"  {'':<15} CLI wall ms: {walls}" + (f"; op ms: {ops}" if ops else ""))
            print(f"  {'bsk HTTP API':<15} statuses "
                  f"{sorted({s for s, _, _ in recovery_api})}; round trip ms: "
                  + ", ".join(f"{w:.1f}" for _, _, w in recovery_api) + "; op ms: "
                  + ", ".join(f"{common.op_ms(a):.0f}" for _, a, _ in recovery_api))

            # verdicts (bsk)
            print()
            b = "bsk"
            for how, rows in fast.items():
                failed = all(r.outcome.code == 8 for r in rows[b])
                ok &= check(f"{how}: every call ends tool_page_unloaded (exit 8)", failed)
                worst = max((r.after_stop if r.after_stop is not None else 99.0)
                            for r in rows[b])
                ok &= common.verdict(f"{how}: stopped loading → exit, worst of {n}", worst,
                                     TARGET_AFTER_STOP_S, unit="s")
            ok &= check("reload_self completes every time",
                        all("completed (completed" in o.label for o in own[b]))
            ok &= check("no navigation: outcome_unknown (exit 9) at 20 s (19.5 to 21.5 s wall)",
                        hung[b].code == 9 and 19.5 <= hung[b].wall <= 21.5)
            ok &= check("crash: every call ends tool_page_unloaded (crashed)",
                        all(r.outcome.code == 8 and "crashed" in r.outcome.label
                            for r in crash[b]))
            ok &= common.verdict(f"crash: Page.crash → exit, worst of {n}",
                                 max(r.total for r in crash[b]), TARGET_CRASH_S, unit="s")
            ok &= check("crashed tab's tool: tool_not_found (CLI exit 3, HTTP 404)",
                        all(o.code == 3 for o in gone[b])
                        and all(s == 404 for s, _, _ in gone_api))
            ok &= common.verdict("crashed tab's tool: op time, worst",
                                 max(common.op_ms(o.answer) for o in gone[b] if o.answer),
                                 TARGET_404_MS)
            ok &= common.verdict("crashed tab's tool: HTTP 404 round trip, worst",
                                 max(w for _, _, w in gone_api), TARGET_404_MS)
            ok &= check("after recovery every add_item completes",
                        all(o.code == 0 for o in recovery[b])
                        and all(s == 200 for s, _, _ in recovery_api))
            ops = ([common.op_ms(o.answer) for o in recovery[b] if o.answer]
                   + [common.op_ms(a) for _, a, _ in recovery_api])
            trips = [w for _, _, w in recovery_api]
            print(f"  (after recovery, medians: op {common.median(ops):.1f} ms, "
                  f"HTTP round trip {common.median(trips):.1f} ms)")
            ok &= common.verdict(f"after recovery: op time per call, worst of {len(ops)}",
                                 max(ops), TARGET_CALL_MS)
            ok &= common.verdict(f"after recovery: HTTP round trip per call, worst of "
                                 f"{len(trips)}", max(trips), TARGET_CALL_MS)
            if has_call:
                theirs = {how: rows["playwright-cli"] for how, rows in fast.items()}
                theirs["Page.crash"] = crash["playwright-cli"]
                print("\n  playwright-cli (no targets), medians trigger → exit: " + ", ".join(
                    f"{how} {fmt_s(median_of([r.total for r in rows]))}"
                    for how, rows in theirs.items()))
    finally:
        for proc in Call.started:
            if proc.poll() is None:
                proc.kill()
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


def check(label: str, passed: bool) -> bool:
    print(f"  target {label}: {'PASS' if passed else 'FAIL'}")
    return passed


if __name__ == "__main__":
    common.run_main(main, *(int(a) for a in sys.argv[1:2]))
