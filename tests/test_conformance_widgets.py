"""Conformance on real widget libraries (issue 24 item 1): each task of
tests/support/conformance_tasks.py, on a page that uses the library as its docs show
(pinned in tests/package.json, served from tests/pages/conformance/), done the way an
agent does it: snapshot, pick the ref by role and name from the snapshot's text alone
(support.pages.find_ref), act on the ref, then check the page's own state through the
widget's API. Nothing on the pages is written for bsk.

Every test writes what the snapshot offered before each step to `transcript.txt` in its
tmp dir, and a failure quotes it, so a failure says what was missing. A task that a known
snapshot defect stops today is a strict xfail naming the fix (`snapshot_fix`).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import Bsk
from support.conformance_tasks import SCROLL_TRIES, TASKS
from support.pages import find_ref
from support.site import PAGES
from support.wait import in_ci

FIND_SECONDS = 10  # an agent looks again while a widget opens or animates,
QUIET_SECONDS = 3  # but not once the page has stopped changing
CHECK_SECONDS = 10

pytestmark = pytest.mark.skipif(
    not (PAGES / "conformance" / "build" / ".built").exists() and not in_ci(),
    reason="the widget libraries are not installed: run scripts/install.sh")


@pytest.fixture(scope="module")
def agent(shared_bsk: Bsk) -> Iterator[Bsk]:
    """One session (one tab) for the whole module: each task opens its own page."""
    sid = "conf-" + uuid.uuid4().hex[:8]
    shared_bsk.ok("session", "start", sid)
    runner = shared_bsk.with_session(sid)
    yield runner
    runner("session", "stop", "--wait")


class Transcript:
    """What the snapshot offered before each step, kept for the failure message and
    written to a file as the test goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[str] = []
        path.write_text("")

    def add(self, heading: str, text: str = "") -> None:
        entry = f"## {heading}\n{text}".rstrip() + "\n"
        self.entries.append(entry)
        with self.path.open("a") as out:
            out.write(entry)

    def failure(self, what: str) -> str:
        return f"{what}\n(transcript: {self.path})\n" + "".join(self.entries[-3:])


def snapshot(agent: Bsk) -> str:
    return str(agent.ok("snapshot")["result"]["snapshot"])


def find(agent: Bsk, log: Transcript, step: dict[str, Any], target: dict[str, Any]
         ) -> tuple[str, str]:
    """Snapshot until `target` (role, name, nth) is there and the step's `seen` text is:
    its ref, and the snapshot that showed it."""
    deadline = time.monotonic() + FIND_SECONDS
    last, quiet_since = "", time.monotonic()
    while True:
        text = snapshot(agent)
        seen = step.get("seen")
        ref = find_ref(text, target["role"], target["name"], target.get("nth", 0))
        if ref and (seen is None or re.search(seen, text)):
            log.add(f"{describe(step)}: {ref}", text)
            return ref, text
        if text != last:
            last, quiet_since = text, time.monotonic()
        if time.monotonic() > min(deadline, quiet_since + QUIET_SECONDS):
            log.add(f"{describe(step)}: NOT FOUND", text)
            missing = (f"{target['role']} /{target['name']}/" if not ref
                       else f"the text /{seen}/")
            raise AssertionError(log.failure(f"the snapshot never offered {missing}"))
        time.sleep(0.1)


def describe(step: dict[str, Any]) -> str:
    words = [step["action"]]
    if "role" in step:
        words.append(f"{step['role']} /{step['name']}/")
    if "value" in step:
        words.append(repr(step["value"]))
    if "to" in step:
        words.append(f"to {step['to']['role']} /{step['to']['name']}/")
    return " ".join(words)


def act(agent: Bsk, *args: str) -> None:
    answer = agent(*args)
    assert answer.code == 0, f"bsk {' '.join(args)} exited {answer.code}: {answer.stdout}"


def run_step(agent: Bsk, log: Transcript, step: dict[str, Any]) -> None:
    action = step["action"]
    if action in ("press", "type"):
        log.add(describe(step))
        act(agent, action, step["value"])
        return
    if action == "scroll":
        for _ in range(SCROLL_TRIES):
            text = snapshot(agent)
            if find_ref(text, step["to"]["role"], step["to"]["name"]):
                log.add(f"{describe(step)}: reached", text)
                return
            over = find_ref(text, step["role"], step["name"], step.get("nth", 0))
            assert over, log.failure(f"nothing to scroll over in:\n{text}")
            log.add(f"scroll over {over}")
            act(agent, "scroll", over, "--dy", step["value"])
        raise AssertionError(log.failure(f"{describe(step)}: not reached in {SCROLL_TRIES}"))
    ref, _ = find(agent, log, step, step)
    if action == "drag":
        to, _ = find(agent, log, step, step["to"])
        act(agent, "drag", ref, to)
    elif action in ("fill", "select"):
        act(agent, action, ref, step["value"])
    else:
        act(agent, action, ref)


def check(agent: Bsk, log: Transcript, task: dict[str, Any]) -> None:
    deadline = time.monotonic() + CHECK_SECONDS
    while not done(agent, task["check"]):
        if time.monotonic() > deadline:
            log.add("after the last step", snapshot(agent))
            raise AssertionError(log.failure(f"the page's state is not done: {task['check']}"))
        time.sleep(0.1)
    if "shows" in task:
        deadline = time.monotonic() + CHECK_SECONDS
        while not re.search(task["shows"], text := snapshot(agent)):
            if time.monotonic() > deadline:
                log.add("after the last step", text)
                raise AssertionError(log.failure(f"the snapshot never showed /{task['shows']}/"))
            time.sleep(0.1)


def done(agent: Bsk, expression: str) -> bool:
    """The check is true (one that throws, its widget not there yet, is not)."""
    answer = agent("eval", expression)
    return answer.code == 0 and answer.json["result"].get("value") is True


def params() -> list[Any]:
    return [pytest.param(task, id=task["widget"], marks=[pytest.mark.xfail(
                strict=True, reason=task["snapshot_fix"])] if "snapshot_fix" in task else [])
            for task in TASKS]


@pytest.mark.parametrize("task", params())
def test_widget(agent: Bsk, site: str, tmp_path: Path, task: dict[str, Any]) -> None:
    log = Transcript(tmp_path / "transcript.txt")
    agent.ok("open", f"{site}{task['page']}")
    for step in task["steps"]:
        run_step(agent, log, step)
    check(agent, log, task)


def test_the_libraries_are_served_from_the_pinned_packages(agent: Bsk, site: str) -> None:
    """The pages run the pinned libraries, not a stand-in: the versions they report are
    the ones tests/package.json names."""
    pinned = json.loads((PAGES.parent / "package.json").read_text())["dependencies"]
    agent.ok("open", f"{site}/conformance/jqueryui-tabs.html")
    assert agent("eval", "[jQuery.fn.jquery, jQuery.ui.version]").value == [
        pinned["jquery"], pinned["jquery-ui"]]
    agent.ok("open", f"{site}/conformance/bootstrap-collapse.html")
    assert agent("eval", "bootstrap.Collapse.VERSION").value == pinned["bootstrap"]
