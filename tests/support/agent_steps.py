"""A conformance task run the way an agent runs it, through any tool: before each step a
snapshot, the ref picked from the snapshot's text by role and name alone
(support/snapshot_text.py), the action on that ref; at the end the page's own check.

A task is a dict (tests/support/django_tasks.py, tests/support/conformance_tasks.py):

    {"widget": "…", "page": "/path" (opened first; "" stays where the last task left),
     "steps": [{"action": "click" | "fill" | "select" | "check" | "drag" | "press" | "see",
                "role": "…", "name": "regex of the whole name",
                "value"?: "…" (fill, select, press), "to"?: {"role", "name"} (drag),
                "after"?: ["role", "name regex"] (a node read by its place)}],
     "check": "a JavaScript expression, true once the task is done",
     "interactive"?: true (every snapshot is the tool's interactive-only one)}

`see` needs no ref: the step is done when the snapshot shows a line with that role and
name (role "" matches any; the name is searched within the line's text). `press` needs no
snapshot: a key in whatever has the focus. Stdlib only: bench/conformance.py runs the
same tasks through bsk, playwright-cli and agent-browser.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from support.snapshot_text import find_ref

Task = dict[str, Any]
Step = dict[str, Any]


class Driver(Protocol):
    """One tool, as an agent types its commands (each raises on a failed command)."""

    def open(self, url: str) -> None: ...
    def snapshot(self, interactive: bool) -> str: ...
    def act(self, action: str, ref: str, value: str | None, to_ref: str | None) -> None: ...
    def press(self, key: str) -> None: ...
    def eval(self, expression: str) -> Any: ...


@dataclass
class StepResult:
    step: Step
    found: bool  # the snapshot gave what the step needed (a ref, or the text to see)
    chars: int  # size of the snapshot read for it (0: none read)
    error: str = ""  # the action's failure, if it failed


@dataclass
class TaskResult:
    task: Task
    steps: list[StepResult] = field(default_factory=list)
    checked: bool = False  # the page's own check held at the end

    @property
    def done(self) -> bool:
        return self.checked and all(s.found and not s.error for s in self.steps)

    @property
    def failed_step(self) -> StepResult | None:
        return next((s for s in self.steps if not s.found or s.error), None)

    def describe(self) -> str:
        bad = self.failed_step
        if bad is None:
            return f"{self.task['widget']}: done" if self.checked else \
                f"{self.task['widget']}: every step acted, but the check failed"
        what = "not in the snapshot" if not bad.found else bad.error
        return f"{self.task['widget']}: step {bad.step} — {what}"


def _seen(text: str, role: str, name: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if role and not stripped.startswith(f"- {role}"):
            continue
        if re.search(name, stripped):
            return True
    return False


def run_task(driver: Driver, base: str, task: Task, *, check_timeout: float = 15,
             last_snapshot: list[str] | None = None) -> TaskResult:
    """Run one task; stop at the first step the snapshot cannot serve or the tool fails.
    `last_snapshot`, if given, gets the text of the last snapshot read (for a message)."""
    result = TaskResult(task)
    if task.get("page"):
        driver.open(base + task["page"])
    interactive = bool(task.get("interactive"))
    for step in task["steps"]:
        action = step["action"]
        if action == "press":
            try:
                driver.press(step["value"])
            except Exception as exc:
                result.steps.append(StepResult(step, True, 0, str(exc)))
                return result
            result.steps.append(StepResult(step, True, 0))
            continue
        text = driver.snapshot(interactive)
        if last_snapshot is not None:
            last_snapshot[:] = [text]
        if action == "see":
            result.steps.append(StepResult(step, _seen(text, step.get("role", ""),
                                                        step["name"]), len(text)))
            if not result.steps[-1].found:
                return result
            continue
        after = tuple(step["after"]) if step.get("after") else None
        ref = find_ref(text, step["role"], step["name"], after=after)  # type: ignore[arg-type]
        to_ref = None
        if ref is not None and step.get("to"):
            to_ref = find_ref(text, step["to"]["role"], step["to"]["name"])
        if ref is None or (step.get("to") and to_ref is None):
            result.steps.append(StepResult(step, False, len(text)))
            return result
        try:
            driver.act(action, ref, step.get("value"), to_ref)
        except Exception as exc:
            result.steps.append(StepResult(step, True, len(text), str(exc)))
            return result
        result.steps.append(StepResult(step, True, len(text)))
    deadline = time.monotonic() + check_timeout
    while True:  # the page may still be loading what the last step started
        try:
            result.checked = bool(driver.eval(task["check"]))
        except Exception:
            result.checked = False
        if result.checked or time.monotonic() > deadline:
            return result
        time.sleep(0.1)
