"""A conformance task run the way an agent runs it, through any tool: before each step a
snapshot, the ref picked from the snapshot's text by role and name alone
(support/snapshot_text.py), the action on that ref; at the end the page's own check.
The one runner of the conformance tasks: tests/test_conformance_widgets.py and
tests/test_conformance_django.py run them through bsk (`BskDriver`), bench/conformance.py
through bsk and its peers.

Tasks are the dicts of tests/support/conformance_tasks.py (its docstring defines the
shape: `widget`, `page`, `steps` of `action`/`role`/`name`/`nth`/`value`/`to`/`seen`,
`check`, `shows`, `snapshot_fix`) and tests/support/django_tasks.py, which adds one key:
`interactive: true`, every snapshot the tool's interactive-only one (`snapshot -i`).
A task's `page` is opened first; an empty one stays where the browser is.

What is recorded per step is what a benchmark compares across tools: whether the
snapshot gave what the step needed, how big the snapshots read for it were. Stdlib only:
bench/conformance.py runs the same tasks through bsk, playwright-cli and agent-browser.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from support.conformance_tasks import SCROLL_TRIES
from support.snapshot_text import find_node, find_ref

Task = dict[str, Any]
Step = dict[str, Any]
# What the snapshot offered, as the run goes: (what the step did or found, the snapshot
# text it read, "" if none).
Log = Callable[[str, str], None]


class Driver(Protocol):
    """One tool, as an agent types its commands (each raises on a failed command)."""

    name: str  # the tool, as a report names it

    def open(self, url: str) -> None: ...
    def snapshot(self, interactive: bool) -> str: ...
    def act(self, action: str, ref: str, value: str | None, to_ref: str | None) -> None:
        """click, hover, fill, select, drag (to `to_ref`), scroll (by `value` px down)."""
    def keys(self, action: str, value: str) -> None:
        """press (a key or chord) or type (text, key by key) into the focused element."""
    def eval(self, expression: str) -> Any: ...


class CliDriver:
    """A Driver through a CLI whose commands are named as the actions, as an agent types
    them: `run(*args)` runs one command and returns what it printed (what the agent
    reads), raising if it failed. A tool whose commands differ overrides that part."""

    name = ""
    ref_prefix = ""  # how the tool's commands write a ref (agent-browser: "@e3")

    def __init__(self, run: Callable[..., str]) -> None:
        self.run = run

    def open(self, url: str) -> None:
        self.run("open", url)

    def snapshot(self, interactive: bool) -> str:
        return self.run("snapshot", *(["--interactive"] if interactive else []))

    def act(self, action: str, ref: str, value: str | None, to_ref: str | None) -> None:
        at = self.ref_prefix + ref
        if action == "drag":
            self.run("drag", at, self.ref_prefix + (to_ref or ""))
        elif action == "scroll":
            self.scroll(at, value or "0")
        elif action in ("fill", "select"):
            self.run(action, at, value or "")
        else:
            self.run(action, at)

    def scroll(self, at: str, dy: str) -> None:
        self.run("scroll", at, "--dy", dy)

    def keys(self, action: str, value: str) -> None:
        self.run(action, value)

    def eval(self, expression: str) -> Any:
        return json.loads(self.run("--json", "eval", expression))["result"]["value"]


class BskDriver(CliDriver):
    """bsk through its CLI: plain output (what the agent reads), eval's value read from
    its --json answer."""

    name = "bsk"


@dataclass
class StepResult:
    what: str  # the step as an agent would say it
    found: bool  # the snapshot gave what the step needed (a ref, the text to see)
    chars: list[int] = field(default_factory=list)  # sizes of the snapshots read for it
    error: str = ""  # the tool's failure, if its command failed
    missing: str = ""  # what the snapshot lacked, if it lacked something


@dataclass
class TaskResult:
    task: Task
    steps: list[StepResult] = field(default_factory=list)
    checked: bool = False  # the page's own check held at the end
    last_snapshot: str = ""

    @property
    def done(self) -> bool:
        return self.checked and all(s.found and not s.error for s in self.steps)

    @property
    def failed_step(self) -> StepResult | None:
        return next((s for s in self.steps if not s.found or s.error), None)

    def describe(self) -> str:
        bad = self.failed_step
        if bad is not None:
            why = bad.error or f"the snapshot never offered {bad.missing}"
            return f"{self.task['widget']}: {bad.what}: {why}"
        if not self.checked:
            return f"{self.task['widget']}: the page's state is not done: {self.task['check']}"
        return f"{self.task['widget']}: done"


def describe(step: Step) -> str:
    words = [step["action"]]
    if "role" in step:
        words.append(f"{step['role']} /{step['name']}/")
    if "value" in step:
        words.append(repr(step["value"]))
    if "to" in step:
        words.append(f"to {step['to']['role']} /{step['to']['name']}/")
    return " ".join(words)


def _wanted(target: dict[str, Any]) -> str:
    return f"{target['role']} /{target['name']}/"


def run_task(driver: Driver, base: str, task: Task, *, find_seconds: float = 10,
             quiet_seconds: float | None = None, check_seconds: float = 10,
             log: Log | None = None) -> TaskResult:
    """Run one task; stop at the first step the snapshot cannot serve or the tool fails.
    A step's target is looked for again until `find_seconds` pass (widgets open and
    animate; an agent looks again), or, with `quiet_seconds`, once the snapshot has not
    changed for that long (the page has stopped). `log` is told what each step read."""
    result = TaskResult(task)
    interactive = bool(task.get("interactive"))
    note: Log = log or (lambda what, text: None)

    def snapshot(record: StepResult) -> str:
        text = driver.snapshot(interactive)
        record.chars.append(len(text))
        result.last_snapshot = text
        return text

    def find(record: StepResult, target: dict[str, Any], seen: str | None) -> str | None:
        deadline = time.monotonic() + find_seconds
        last, changed = "", time.monotonic()
        while True:
            text = snapshot(record)
            ref = find_ref(text, target["role"], target["name"], target.get("nth", 0))
            if ref and (seen is None or re.search(seen, text)):
                note(f"{record.what}: {_wanted(target)} is {ref}", text)
                return ref
            if text != last:
                last, changed = text, time.monotonic()
            now = time.monotonic()
            if now > deadline or (quiet_seconds is not None and now > changed + quiet_seconds):
                shown = find_node(text, target["role"], target["name"], with_ref=False)
                record.missing = (f"the text /{seen}/" if ref else _wanted(target)
                                  + (" with a ref" if shown else ""))
                note(f"{record.what}: NOT FOUND: {record.missing}", text)
                return None
            time.sleep(0.1)

    if task.get("page"):
        driver.open(base + task["page"])
    for step in task["steps"]:
        action, record = step["action"], StepResult(describe(step), True)
        result.steps.append(record)
        try:
            if action in ("press", "type"):
                note(record.what, "")
                driver.keys(action, step["value"])
            elif action == "scroll":
                # What to scroll over, once the page has drawn it (a grid renders late).
                if find(record, step, None) is None:
                    record.found = False
                    return result
                for _ in range(SCROLL_TRIES):
                    text = snapshot(record)
                    if find_ref(text, step["to"]["role"], step["to"]["name"]):
                        note(f"{record.what}: reached", text)
                        break
                    over = find_ref(text, step["role"], step["name"], step.get("nth", 0))
                    if over is None:
                        record.found, record.missing = False, _wanted(step)
                        note(f"{record.what}: nothing to scroll over", text)
                        return result
                    note(f"{record.what}: scroll over {over}", "")
                    driver.act("scroll", over, step["value"], None)
                else:
                    record.found, record.missing = False, _wanted(step["to"])
                    note(f"{record.what}: not reached in {SCROLL_TRIES} scrolls", text)
                    return result
            else:
                ref = find(record, step, step.get("seen"))
                to = find(record, step["to"], None) if ref and "to" in step else None
                if ref is None or ("to" in step and to is None):
                    record.found = False
                    return result
                driver.act(action, ref, step.get("value"), to)
        except Exception as exc:  # the tool's command failed: the step is not done
            record.error = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            note(f"{record.what}: FAILED: {record.error}", "")
            return result
    deadline = time.monotonic() + check_seconds
    while not result.checked:
        try:
            result.checked = driver.eval(task["check"]) is True
        except Exception:  # a check that throws (its widget not there yet) is not true
            result.checked = False
        if not result.checked and time.monotonic() > deadline:
            if log is not None:
                note("after the last step", driver.snapshot(interactive))
            return result
        if not result.checked:
            time.sleep(0.1)
    if "shows" in task:
        record = StepResult(f"read /{task['shows']}/", True)
        result.steps.append(record)
        deadline = time.monotonic() + check_seconds
        while not re.search(task["shows"], snapshot(record)):
            if time.monotonic() > deadline:
                record.found, record.missing = False, f"the text /{task['shows']}/"
                note(f"{record.what}: NOT FOUND", result.last_snapshot)
                return result
            time.sleep(0.1)
    return result
