"""Conformance on real widget libraries (issue 24 item 1): each task of
tests/support/conformance_tasks.py, on a page that uses the library as its docs show
(pinned in tests/package.json, served from tests/pages/conformance/), done the way an
agent does it (support/agent_steps.py, the runner bench/conformance.py uses too):
snapshot, pick the ref by role and name from the snapshot's text alone, act on the ref,
then check the page's own state through the widget's API. Nothing on the pages is
written for bsk.

Every test writes what the snapshot offered before each step to `transcript.txt` in its
tmp dir, and a failure quotes it, so a failure says what was missing. A task that a known
snapshot defect stops today is a strict xfail naming the fix (`snapshot_fix`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.agent_steps import BskDriver, run_task
from support.cli import Bsk
from support.conformance_tasks import TASKS
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

    def add(self, heading: str, text: str) -> None:
        entry = f"## {heading}\n{text}".rstrip() + "\n"
        self.entries.append(entry)
        with self.path.open("a") as out:
            out.write(entry)

    def failure(self, what: str) -> str:
        return f"{what}\n(transcript: {self.path})\n" + "".join(self.entries[-3:])


def params() -> list[Any]:
    return [pytest.param(task, id=task["widget"], marks=[pytest.mark.xfail(
                strict=True, reason=task["snapshot_fix"])] if "snapshot_fix" in task else [])
            for task in TASKS]


@pytest.mark.parametrize("task", params())
def test_widget(agent: Bsk, site: str, tmp_path: Path, task: dict[str, Any]) -> None:
    log = Transcript(tmp_path / "transcript.txt")
    result = run_task(BskDriver(agent.text), site, task, find_seconds=FIND_SECONDS,
                      quiet_seconds=QUIET_SECONDS, check_seconds=CHECK_SECONDS, log=log.add)
    assert result.done, log.failure(result.describe())


def test_the_libraries_are_served_from_the_pinned_packages(agent: Bsk, site: str) -> None:
    """The pages run the pinned libraries, not a stand-in: the versions they report are
    the ones tests/package.json names."""
    pinned = json.loads((PAGES.parent / "package.json").read_text())["dependencies"]
    agent.ok("open", f"{site}/conformance/jqueryui-tabs.html")
    assert agent("eval", "[jQuery.fn.jquery, jQuery.ui.version]").value == [
        pinned["jquery"], pinned["jquery-ui"]]
    agent.ok("open", f"{site}/conformance/bootstrap-collapse.html")
    assert agent("eval", "bootstrap.Collapse.VERSION").value == pinned["bootstrap"]
