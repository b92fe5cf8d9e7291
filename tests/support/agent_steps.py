"""A conformance task run the way an agent runs it, through any tool: before each step a
snapshot, the ref picked from the snapshot's text by role and name alone
(support/snapshot_text.py), the action on that ref; at the end the page's own check.

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

import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from support.snapshot_text import find_node, find_ref

Task = dict[str, Any]
Step = dict[str, Any]
SCROLL_TRIES = 40  # as support/conformance_tasks.py


class Driver(Protocol):
    """One tool, as an agent types its commands (each raises on a failed command)."""

    def open(self, url: str) -> None: ...
    def snapshot(self, interactive: bool) -> str: ...
    def act(self, action: str, ref: str, value: str | None, to_ref: str | None) -> None:
        """click, hover, fill, select, drag (to `to_ref`), scroll (by `value` px down)."""
    def keys(self, action: str, value: str) -> None:
        """press (a key or chord) or type (text, key by key) into the focused element."""
    def eval(self, expression: str) -> Any: ...


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
             check_seconds: float = 10) -> TaskResult:
    """Run one task; stop at the first step the snapshot cannot serve or the tool fails.
    A step's target is looked for again until `find_seconds` pass (widgets open and
    animate; an agent looks again)."""
    result = TaskResult(task)
    interactive = bool(task.get("interactive"))

    def snapshot(record: StepResult) -> str:
        text = driver.snapshot(interactive)
        record.chars.append(len(text))
        result.last_snapshot = text
        return text

    def find(record: StepResult, target: dict[str, Any], seen: str | None) -> str | None:
        deadline = time.monotonic() + find_seconds
        while True:
            text = snapshot(record)
            ref = find_ref(text, target["role"], target["name"], target.get("nth", 0))
            if ref and (seen is None or re.search(seen, text)):
                return ref
            if time.monotonic() > deadline:
                shown = find_node(text, target["role"], target["name"], with_ref=False)
                record.missing = (f"the text /{seen}/" if ref else _wanted(target)
                                  + (" with a ref" if shown else ""))
                return None
            time.sleep(0.1)

    if task.get("page"):
        driver.open(base + task["page"])
    for step in task["steps"]:
        action, record = step["action"], StepResult(describe(step), True)
        result.steps.append(record)
        try:
            if action in ("press", "type"):
                driver.keys(action, step["value"])
            elif action == "scroll":
                # What to scroll over, once the page has drawn it (a grid renders late).
                if find(record, step, None) is None:
                    record.found = False
                    return result
                for _ in range(SCROLL_TRIES):
                    text = snapshot(record)
                    if find_ref(text, step["to"]["role"], step["to"]["name"]):
                        break
                    over = find_ref(text, step["role"], step["name"], step.get("nth", 0))
                    if over is None:
                        record.found, record.missing = False, _wanted(step)
                        return result
                    driver.act("scroll", over, step["value"], None)
                else:
                    record.found, record.missing = False, _wanted(step["to"])
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
            return result
    deadline = time.monotonic() + check_seconds
    while not result.checked:
        try:
            result.checked = driver.eval(task["check"]) is True
        except Exception:
            result.checked = False
        if not result.checked and time.monotonic() > deadline:
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
                return result
            time.sleep(0.1)
    return result
