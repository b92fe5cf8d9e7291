"""Conformance on real pages, bsk next to its peers (issue 24 item 2): the same tasks, the
same steps, through `bsk`, playwright-cli and agent-browser (npm, pinned in
bench/package.json, on Debian's Chromium).

The tasks: the Django admin's (tests/support/django_tasks.py, a throwaway project the
script starts, as the test suite does) and the widget libraries' (tests/support/
conformance_tasks.py, pages in tests/pages/conformance served with tests/node_modules,
when that suite is installed). Each is run the way an agent runs it
(tests/support/agent_steps.py): before each step the tool's own snapshot, the ref found
by role and name in that snapshot's TEXT (tests/support/snapshot_text.py reads the three
tools' line formats), the tool's own command on that ref; at the end the page's own
check (the tool's eval). A task marked `interactive` reads `bsk snapshot --interactive`
and `agent-browser snapshot -i`; playwright-cli has only its full snapshot.

Printed per task and tool: done, or the first step the snapshot could not serve (or the
command that failed), and the size (characters the command printed, what the agent
reads) of the first snapshot of the task's page and of all the snapshots the task read.
Targets: bsk completes every task a peer completes (widget by widget), and its first
snapshots total no more characters than each peer's.

    .venv/bin/python bench/conformance.py [--only SUBSTRING] [--tools bsk,agent-browser]
        [--suites django,widgets] [--show]   # --show: each failed task's last snapshot
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import common
import playwright_peer as peer

sys.path.insert(0, str(common.ROOT / "tests"))
from support.agent_steps import BskDriver, CliDriver, TaskResult, run_task
from support.django_admin import running_django_admin
from support.django_tasks import DJANGO_TASKS

TOOLS = ("bsk", "playwright-cli", "agent-browser")
FIND_SECONDS = 3  # how long a step looks again for its target (widgets open, animate)


def bsk_tool(daemon: common.BskDaemon) -> BskDriver:
    """bsk through its CLI, as an agent types it (plain output; --json for eval)."""

    def run(*args: str) -> str:
        return common.printed(daemon.run(*args, check=False), daemon.argv(*args))

    return BskDriver(run)


class PlaywrightCliTool(CliDriver):
    """playwright-cli (bench/playwright_peer.py), from its own workspace folder."""

    name = "playwright-cli"

    def __init__(self, workdir: Path) -> None:
        super().__init__(lambda *args: common.printed(peer.run(list(args), workdir),
                                                      ["playwright-cli", *args]))

    def open(self, url: str) -> None:
        self.run("goto", url)

    def snapshot(self, interactive: bool) -> str:
        return self.run("snapshot")  # it has no interactive-only mode

    def scroll(self, at: str, dy: str) -> None:  # the wheel over the element: hover it
        self.run("hover", at)
        self.run("mousewheel", "0", dy)

    def eval(self, expression: str) -> Any:
        out = self.run("eval", expression)
        result = out.split("### Result\n", 1)[1].split("\n###", 1)[0].strip()
        return json.loads(result)


class AgentBrowserTool(CliDriver):
    """agent-browser's Linux binary (inside its npm package) on Debian's Chromium; after
    an action it waits for the page's load, since its click answers before a navigation
    it starts has loaded (an agent following its skill does the same)."""

    name = "agent-browser"
    ref_prefix = "@"

    def __init__(self, session: str) -> None:
        self.argv = [str(peer.AGENT_BROWSER), "--session", session]
        self.env = peer.agent_browser_env()
        super().__init__(self.command)

    def command(self, *args: str) -> str:
        argv = [*self.argv, *args]
        return common.printed(subprocess.run(argv, env=self.env, capture_output=True,
                                             text=True, timeout=120), argv)

    def settle(self) -> None:
        self.run("wait", "--load", "load")

    def snapshot(self, interactive: bool) -> str:
        return self.run("snapshot", *(["-i"] if interactive else []))

    def act(self, action: str, ref: str, value: str | None, to_ref: str | None) -> None:
        super().act(action, ref, value, to_ref)
        self.settle()

    def scroll(self, at: str, dy: str) -> None:  # the wheel over the element: hover it
        self.run("hover", at)
        self.run("mouse", "wheel", dy)

    def keys(self, action: str, value: str) -> None:
        if action == "type":
            self.run("keyboard", "type", value)
        else:
            self.run("press", value)
        self.settle()

    def eval(self, expression: str) -> Any:
        answer = json.loads(self.run("--json", "eval", expression))
        if not answer.get("success"):
            raise common.ToolFailed(str(answer.get("error")))
        return answer["data"]["result"]

    def close(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run([*self.argv, "close"], env=self.env, capture_output=True,
                           timeout=60)


@contextlib.contextmanager
def tools(names: list[str]) -> Iterator[list[CliDriver]]:
    """Each tool with a browser of its own, open on about:blank; closed after."""
    made: list[CliDriver] = []
    daemon: common.BskDaemon | None = None
    workdir: Path | None = None
    try:
        for name in names:
            if name == "bsk":
                daemon = common.BskDaemon().start()
                made.append(bsk_tool(daemon))
            elif name == "playwright-cli":
                peer.ensure_installed()
                workdir = peer.write_config()
                tool: CliDriver = PlaywrightCliTool(workdir)
                tool.run("open", "about:blank")
                made.append(tool)
            elif name == "agent-browser":
                if not peer.AGENT_BROWSER.exists():
                    raise RuntimeError(f"no {peer.AGENT_BROWSER}: (cd bench && npm ci)")
                tool = AgentBrowserTool(f"bsk-conformance-{os.getpid()}")
                tool.run("open", "about:blank")
                made.append(tool)
        yield made
    finally:
        for tool in made:
            if isinstance(tool, AgentBrowserTool):
                tool.close()
        if workdir is not None:
            peer.close_all([workdir])
            shutil.rmtree(workdir, ignore_errors=True)
        if daemon is not None:
            daemon.stop()


@contextlib.contextmanager
def widget_site() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The widget suite's pages and tasks, if this checkout has them installed."""
    try:
        from support.conformance_tasks import TASKS  # the widget suite's branch
        from support.site import serve_pages
    except ImportError:
        yield "", []
        return
    built = common.ROOT / "tests" / "pages" / "conformance" / "build" / ".built"
    if not built.exists():
        print("   (widget tasks skipped: run scripts/install.sh to build tests/pages/conformance)")
        yield "", []
        return
    with serve_pages() as url:
        yield url, list(TASKS)


def cell(result: TaskResult) -> str:
    if result.done:
        return "done"
    bad = result.failed_step
    if bad is None:
        return "check failed"
    index = result.steps.index(bad) + 1
    return f"✗ {index}: {'failed' if bad.error else 'missing'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run only tasks whose widget has this")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--suites", default="django,widgets")
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    names = [t for t in args.tools.split(",") if t]
    common.exit_on_sigterm()
    common.header("Conformance on real pages: the same tasks through bsk and its peers")
    print(f"   playwright-cli {common.peer_version()}, agent-browser "
          f"{_ab_version()}; find {FIND_SECONDS}s per step")
    results: dict[str, dict[str, TaskResult]] = {}
    order: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bsk-conformance-") as scratch, \
            contextlib.ExitStack() as stack, \
            widget_site() as (widgets_url, widget_tasks), tools(names) as made:
        # A Django project per tool: each starts from the same rows (a task adds "alice",
        # deletes the two drafts), and its browser logs in with "log in", the first task.
        django = {tool.name: stack.enter_context(running_django_admin(Path(scratch) / tool.name))
                  for tool in made}
        suites: list[tuple[str, list[dict[str, Any]]]] = [("django", DJANGO_TASKS),
                                                           ("widgets", widget_tasks)]
        for suite, tasks in suites:
            if suite not in args.suites.split(","):
                continue
            for task in tasks:
                if args.only not in task["widget"] and task is not DJANGO_TASKS[0]:
                    continue
                if task["widget"] not in order:
                    order.append(task["widget"])
                for tool in made:
                    base = django[tool.name].url if suite == "django" else widgets_url
                    t0 = time.monotonic()
                    try:
                        result = run_task(tool, base, task, find_seconds=FIND_SECONDS,
                                          check_seconds=5)
                    except Exception as exc:  # the tool could not even open the page
                        result = TaskResult(task)
                        result.last_snapshot = f"(the task broke: {exc})"
                    results.setdefault(task["widget"], {})[tool.name] = result
                    print(f"   {task['widget'][:44]:<44} {tool.name:<15} {cell(result):<12} "
                          f"{time.monotonic() - t0:5.1f}s  {result.describe()[:120]}",
                          flush=True)
    return report(order, results, [t.name for t in made], args.show)


def _ab_version() -> str:
    pkg = peer.BENCH_DIR / "node_modules" / "agent-browser" / "package.json"
    try:
        return str(json.loads(pkg.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "?"


def report(order: list[str], results: dict[str, dict[str, TaskResult]], names: list[str],
           show: bool) -> int:
    print()
    cols = "".join(f" | {n} | chars" for n in names)
    print(f"| task{cols} |")
    print("|---" + "|---|---:" * len(names) + "|")
    first: dict[str, int] = dict.fromkeys(names, 0)
    read: dict[str, int] = dict.fromkeys(names, 0)
    done: dict[str, int] = dict.fromkeys(names, 0)
    behind: list[str] = []
    for widget in order:
        row = results[widget]
        cells = []
        for n in names:
            r = row.get(n)
            if r is None:
                cells.append(" | - | -")
                continue
            chars = [c for s in r.steps for c in s.chars]
            first_chars = chars[0] if chars else 0
            first[n] += first_chars
            read[n] += sum(chars)
            done[n] += r.done
            cells.append(f" | {cell(r)} | {first_chars:,}")
        print(f"| {widget}{''.join(cells)} |")
        if "bsk" in row:
            for n in names:
                if n != "bsk" and row[n].done and not row["bsk"].done:
                    behind.append(f"{widget}: {n} done, bsk not ({row['bsk'].describe()})")
    print()
    for n in names:
        print(f"   {n:<15} tasks done {done[n]}/{len(order)}; first snapshots "
              f"{first[n]:,} chars; all snapshots read {read[n]:,} chars")
    print("\n   where a step failed:")
    for widget in order:
        for n in names:
            r = results[widget].get(n)
            if r is not None and not r.done:
                print(f"   - {n}: {r.describe()}")
                if show:
                    print("     " + r.last_snapshot.replace("\n", "\n     "))
    ok = True
    if "bsk" in names:
        print()
        ok = common.verdict("tasks a peer completes and bsk does not", len(behind), 0,
                            unit="tasks") and ok
        for line in behind:
            print(f"     {line}")
        for n in names:
            if n != "bsk":
                ok = common.verdict(f"bsk first snapshots vs {n}'s", first["bsk"], first[n],
                                    unit="chars") and ok
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main)
