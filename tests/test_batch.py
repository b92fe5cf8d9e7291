"""`bsk batch` (browserskill/api/batch.py, cli/batch.py): several commands in one call, each
its own journaled operation, stopping at the first that does not complete; the same over
the CLI (arguments, stdin, the launcher), HTTP and MCP."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
from support.cli import Bsk
from support.pages import ref_of

from browserskill.base import render
from browserskill.base.contract import batch_answer


def _ops_of(bsk: Bsk, batch: dict[str, Any]) -> list[str]:
    """The op ids the journal holds for this batch's steps (named <batch id>-k)."""
    first = batch["result"]["steps"][0]["op_id"]
    prefix = first.rsplit("-", 1)[0] + "-"
    return sorted(o["op_id"] for o in bsk.ok("op", "list")["ops"]
                  if o["op_id"].startswith(prefix))


def _five(button: str) -> list[str]:
    return [f"click {button}", "eval window.count", "click e99999", f"click {button}",
            "eval window.count"]


def test_a_failing_third_stops_the_batch_and_sends_nothing_after(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    button = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Add one")
    run = bsk("batch", *_five(button))
    assert run.code == 4  # the third's own exit code (ref_not_found)
    answer = run.json
    assert (answer["tool"], answer["status"], answer["dispatched"]) == ("batch", "failed", "yes")
    assert answer["error"]["code"] == "ref_not_found"
    assert answer["error"]["message"].startswith("step 3 (click e99999): ")
    steps = answer["result"]["steps"]
    assert [s.get("status") for s in steps[:3]] == ["completed", "completed", "failed"]
    assert steps[1]["result"]["value"] == 1 and steps[2]["dispatched"] == "no"
    assert [s.get("sent") for s in steps[3:]] == [False, False]
    assert answer["op_id"] == steps[2]["op_id"]  # the step that decided the status
    assert (answer["result"]["completed"], answer["result"]["not_sent"]) == (2, 2)
    # The journal: three operations, nothing for the fourth and fifth.
    assert _ops_of(bsk, answer) == sorted(s["op_id"] for s in steps[:3])
    assert bsk.ok("eval", "window.count")["result"]["value"] == 1
    # The batch's own id (its steps' prefix) is no operation: `op show` names its steps.
    batch_id = steps[0]["op_id"].rsplit("-", 1)[0]
    shown = bsk("op", "show", batch_id)
    assert shown.code == 3 and shown.json["error"]["code"] == "op_not_found"
    assert shown.json["error"]["details"]["steps"] == [s["op_id"] for s in steps[:3]]
    assert shown.json["error"]["hint"] == f"show a step with `bsk op show {batch_id}-1`"

    # --continue: every step runs, each with its own result.
    cont = bsk("batch", "--continue", *_five(button)).json
    assert [s["status"] for s in cont["result"]["steps"]] == [
        "completed", "completed", "failed", "completed", "completed"]
    assert cont["result"]["steps"][4]["result"]["value"] == 3
    assert cont["status"] == "failed" and cont["result"]["not_sent"] == 0

    # Text: one line a step, then why it stopped.
    text = bsk("batch", f"click {button}", "click e99999", "eval 1", as_json=False)
    assert text.code == 4
    assert "[1] click" in text.stdout and "[3] eval 1 — not sent" in text.stdout
    assert "step 2 (click e99999)" in text.stderr
    # The footer: the failing step's own facts by its own op id, then the batch's (step
    # 1's click reached the browser; step 2 sent nothing).
    footer = [x.strip() for x in text.stderr.splitlines()[-2:]]
    assert re.fullmatch(r"step 2: dispatched: no · retry_safe: yes · op: op_[0-9a-f]+-2",
                        footer[0]), text.stderr
    assert footer[1] == "batch: dispatched: yes · retry_safe: no", text.stderr
    # As a person reads them: the step that sent nothing says so beside its `dispatched`
    # event, and `op list`'s columns line up across step ids and plain ones.
    step = re.search(r"op: (op_[0-9a-f]+-2)", text.stderr)
    assert step, text.stderr
    said = bsk("op", "show", step.group(1), as_json=False).stdout
    assert "dispatched  (its handler started; nothing reached the page)" in said, said
    rows = bsk("op", "list", as_json=False).stdout.splitlines()
    starts = {m.start() for m in (re.search(r" \d{4}-\d\d-\d\dT", r) for r in rows) if m}
    assert len(starts) == 1 and len(rows) > 5, rows
    assert re.search(rf"^{re.escape(step.group(1))} .* failed +e99999$", "\n".join(rows),
                     re.M), rows  # and what each acted on


def test_a_typo_anywhere_sends_nothing(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    run = bsk("batch", "eval 'window.count = 5'", "clik e1")
    assert run.code == 2 and run.json["error"]["code"] == "invalid_params"
    assert run.json["error"]["message"].startswith("commands: step 2: 'clik' is not")
    # A step's arguments wrong: the step, as written, is named before what is wrong.
    opt = bsk("batch", "eval 1", "eval 2 --max-chars -3")
    assert opt.code == 2 and opt.json["error"]["message"].startswith(
        "step 2 (eval 2 --max-chars -3): max_chars: "), opt.json["error"]
    assert run.json["error"]["hint"] == "did you mean `click`?"  # as at the top level
    assert bsk.ok("eval", "window.count")["result"]["value"] is None
    assert bsk("batch", "batch 'eval 1'").json["error"]["code"] == "invalid_params"


def test_stdin_one_command_a_line(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    script = ("# a comment, then a blank line\n\neval 'window.count = 41'\n"
              "eval 'window.count + ${BSK_TEST_ADD}'\n")
    for argv in (bsk.argv(("batch",), True), bsk.argv(("batch", "-"), True)):
        proc = subprocess.run(argv, input=script, env={**bsk.env, "BSK_TEST_ADD": "1"},
                              capture_output=True, text=True, timeout=90)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        import json

        answer = json.loads(proc.stdout)
        assert [s["command"] for s in answer["result"]["steps"]] == [
            "eval 'window.count = 41'", "eval 'window.count + 1'"]
        assert answer["result"]["steps"][1]["result"]["value"] == 42


def test_http_and_its_deadline(api: httpx.Client, shared_bsk: Bsk, site: str) -> None:
    sid = "batch-http"
    api.post("/v1/sessions", json={"session_id": sid})
    try:
        ok = api.post(f"/v1/sessions/{sid}/tools/batch", json={
            "commands": [f"open {site}/counter.html", "eval 'window.count = 7'",
                         "eval window.count"]})
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"]["steps"][2]["result"]["value"] == 7
        bad = api.post(f"/v1/sessions/{sid}/tools/batch",
                       json={"commands": ["eval 1", "click e99999", "eval 2"]})
        assert bad.status_code == 409 and bad.headers["X-Should-Retry"] == "false"
        assert bad.json()["result"]["not_sent"] == 1
        # The batch's deadline bounds its steps: a 1 s batch ends a 30 s wait at 1 s.
        slow = api.post(f"/v1/sessions/{sid}/tools/batch", json={
            "commands": ["wait --text 'never there'", "eval 1"], "timeout_ms": 1000})
        steps = slow.json()["result"]["steps"]
        assert steps[0]["error"]["details"]["reason"] == "timeout", steps
        assert steps[0]["error"]["details"]["waited_ms"] < 1000 and steps[1]["sent"] is False
        # A pause longer than what is left of the batch is not sent (it could only fail).
        short = api.post(f"/v1/sessions/{sid}/tools/batch", json={
            "commands": ["eval 1", "wait --ms 3000", "eval 2"], "timeout_ms": 1000})
        answer = short.json()
        assert [s.get("sent", True) for s in answer["result"]["steps"]] == [True, False, False]
        assert answer["error"]["code"] == "cancelled", answer
        assert answer["error"]["details"] == {"reason": "batch_deadline", "step": 2}
        assert re.search(r"step 2 needs more than the \d+ ms left of the batch's deadline",
                         answer["error"]["message"]), answer["error"]
        empty = api.post(f"/v1/sessions/{sid}/tools/batch", json={"commands": []})
        assert empty.status_code == 400
    finally:
        api.delete(f"/v1/sessions/{sid}")


def test_the_batchs_settle_is_each_acting_steps_unless_it_gives_its_own(
        bsk: Bsk, api: httpx.Client, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    button = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Add one")
    run = bsk("batch", "--settle", "0", f"click {button}", f"click {button} --settle 100",
              "eval window.count")
    assert run.code == 0, run.stderr
    quick, watched, counted = run.json["result"]["steps"]
    assert "effects" not in quick["result"]  # not watched: it answered without waiting
    assert watched["result"]["effects"]["dom"]["text_appeared"] == ["count 2"]
    assert watched["result"]["effects"]["watched_ms"] >= 100  # its own 100 ms window
    assert counted["result"]["value"] == 2  # eval takes no settle: run as written
    shown = bsk.ok("op", "show", quick["op_id"])
    assert shown["params"]["settle"] == 0  # the journal keeps what the step ran with

    over_http = api.post(f"/v1/sessions/{bsk.session}/tools/batch", json={
        "commands": [f"click {button}"], "settle": 0})
    assert over_http.status_code == 200, over_http.text
    assert "effects" not in over_http.json()["result"]["steps"][0]["result"]
    refused = api.post(f"/v1/sessions/{bsk.session}/tools/batch", json={
        "commands": [f"click {button}"], "settle": -1})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_params"
    assert bsk.ok("eval", "window.count")["result"]["value"] == 3  # the refused one: not sent


def test_interrupted_during_a_step_reports_each_honestly(bsk: Bsk, site: str) -> None:
    """Ctrl-C during step 2: step 1 as it ended, step 2 cancelled, step 3 not sent."""
    import signal

    from support.wait import wait_until

    bsk.ok("open", f"{site}/counter.html")
    proc = bsk.popen("batch", "eval 'window.count = 1'", "eval 'slow(\"b\", 20000)'",
                     "eval 'window.count = 3'")
    wait_until(lambda: _running(bsk, step=2), timeout=30)  # not step 1: it is an eval too
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    code, answer = proc.returncode, json.loads(out)
    steps = answer["result"]["steps"]
    assert steps[0]["status"] == "completed"
    # What bsk says while it cancels names ids `op show` knows: the steps', first to last.
    named = re.search(r"cancelling the batch's running step \(its steps: (op_\S+) … (op_\S+)\)",
                      err)
    assert named and (named[1], named[2]) == (steps[0]["op_id"],
                                              steps[1]["op_id"][:-1] + "3"), err
    assert bsk.ok("op", "show", named[1])["status"] == "completed"
    # The batch ran from its first step's start to its last sent step's end.
    assert (answer["started_at"], answer["ended_at"]) == (steps[0]["started_at"],
                                                          steps[1]["ended_at"])
    # Step 2's own honest end: a dispatched eval cut short may have run (as a lone call's).
    assert steps[1]["state"] == "ended" and steps[1]["status"] in ("cancelled", "outcome_unknown")
    assert steps[2]["sent"] is False and answer["result"]["not_sent"] == 1
    assert bsk.ok("eval", "window.count")["result"]["value"] == 1
    assert code != 0


def _running(bsk: Bsk, step: int) -> bool:
    """Step `step` of a batch (its op id ends `-step`) is dispatched."""
    ops = bsk.ok("op", "list")["ops"]
    return any(o["op_id"].endswith(f"-{step}") and o["state"] == "dispatched" for o in ops)


def test_batch_answer_is_the_first_failure() -> None:
    ok = {"op_id": "op_a-1", "status": "completed", "dispatched": "yes", "retry_safe": True}
    busy = {"op_id": "op_a-2", "status": "failed", "dispatched": "no", "retry_safe": True,
            "error": {"code": "session_busy", "message": "busy"}}
    answer = batch_answer("s", ["eval 1", "eval 2", "eval 3"], [ok, busy], "step 2 …")
    assert answer["status"] == "failed" and answer["error"]["code"] == "session_busy"
    assert answer["op_id"] == "op_a-2" and answer["retry_safe"] is True
    assert answer["result"]["steps"][2] == {"step": 3, "command": "eval 3", "sent": False,
                                           "why": "step 2 …"}
    cut = batch_answer("s", ["eval 1", "eval 2"], [ok], "the batch's deadline passed")
    assert cut["status"] == "cancelled" and "step 2" in cut["error"]["message"]
    assert batch_answer("s", ["eval 1"], [ok])["status"] == "completed"
    # Its times are its steps': the first one's start, the last sent one's end.
    timed = [{**ok, "started_at": "2026-12-03T10:00:00.100Z",
              "ended_at": "2026-12-03T10:00:00.250Z"},
             {**ok, "started_at": "2026-12-03T10:00:00.250Z",
              "ended_at": "2026-12-03T10:00:01.000Z"}]
    answer = batch_answer("s", ["eval 1", "eval 2", "eval 3"], timed, "…")
    assert (answer["started_at"], answer["ended_at"]) == ("2026-12-03T10:00:00.100Z",
                                                          "2026-12-03T10:00:01.000Z")
    assert batch_answer("s", ["eval 1"], [])["started_at"] is None  # nothing sent, no time
    # Said once: a cancelled step reads "cancelled: …", not "cancelled [cancelled]: …".
    gone = {"op_id": "op_a-1", "status": "cancelled", "dispatched": "no", "retry_safe": True,
            "error": {"code": "cancelled", "message": "the caller went away"}}
    text = render.result_text(("batch",), batch_answer("s", ["eval 1"], [gone]))
    assert "[1] eval 1 — cancelled: the caller went away (dispatched: no)" in text, text
    assert render.error_text(busy | {"error": {"code": "cancelled", "message": "m"},
                                     "status": "cancelled"}).startswith("bsk: cancelled: m")
    assert render.error_text(busy).startswith("bsk: failed [session_busy]: busy")


async def test_mcp_a_list_of_calls_in_one_round_trip(bsk: Bsk, site: str) -> None:
    import contextlib
    import sys

    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: v for k, v in bsk.env.items() if k.startswith("BSK_")}
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "browserskill", "mcp", "--session", bsk.session])
    async with contextlib.AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        listed = {t.name for t in (await session.list_tools()).tools}
        assert "batch" in listed  # core: it saves round trips, so every client has it
        done = await session.call_tool("batch", {"commands": [
            f"open {site}/counter.html", "eval 'window.count = 2'", "snapshot --interactive"]})
        assert not done.is_error
        answer = done.structured_content
        assert answer is not None and answer["result"]["completed"] == 3
        text = "\n".join(c.text for c in done.content if c.type == "text")
        assert "[3] snapshot --interactive" in text and "Add one" in text
        failed = await session.call_tool("batch", {"commands": ["eval 1", "click e99999",
                                                                "eval 3"], "continue": False})
        assert failed.is_error
        answer = failed.structured_content
        assert answer is not None and answer["error"]["code"] == "ref_not_found"
        assert [s.get("sent", True) for s in answer["result"]["steps"]] == [True, True, False]
        text = "\n".join(c.text for c in failed.content if c.type == "text")
        assert "[1] eval 1" in text and "[ref_not_found]" in text


def test_the_launcher_runs_a_batch_in_the_daemon(bsk: Bsk, site: str, tmp_path: Path) -> None:
    """`bsk batch ARGS` goes the launcher's way (the daemon reads the line: no CLI import);
    `bsk batch` with its commands on stdin goes to the whole CLI, which reads them."""
    import sys

    from browserskill.cli import launcher

    script = tmp_path / "bsk"
    launcher.write(str(script))
    bsk.ok("open", f"{site}/counter.html")
    run = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(script),
                          "-s", bsk.session, "batch", "eval 'window.count = 9'",
                          "eval window.count"], env=bsk.env, capture_output=True, text=True,
                         timeout=90)
    assert run.returncode == 0 and "[2] eval window.count — 9" in run.stdout, run.stderr[-2000:]
    assert "browserskill.cli.main" not in run.stderr  # not the whole CLI
    piped = subprocess.run([str(script), "-s", bsk.session, "batch"], input="eval 7*6\n",
                           env=bsk.env, capture_output=True, text=True, timeout=90)
    assert piped.returncode == 0 and "— 42" in piped.stdout, piped.stderr


def test_a_batch_sent_again_with_its_key_sends_nothing_twice(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/counter.html")
    commands = ("eval 'window.count = (window.count || 0) + 1'", "eval window.count")
    first = bsk("--key", "twice-1", "batch", *commands).json
    again = bsk("--key", "twice-1", "batch", *commands).json
    ids = [[s["op_id"] for s in a["result"]["steps"]] for a in (first, again)]
    assert ids[0] == ids[1] and again["result"]["steps"][1]["result"]["value"] == 1
    assert bsk.ok("eval", "window.count")["result"]["value"] == 1


def test_http_caller_going_away_cancels_the_running_step(api: httpx.Client, site: str) -> None:
    import uuid

    from support.wait import wait_until

    sid = "batch-gone"
    api.post("/v1/sessions", json={"session_id": sid})
    try:
        api.post(f"/v1/sessions/{sid}/tools/open", json={"url": f"{site}/counter.html"})
        batch_id = f"op_{uuid.uuid4().hex[:12]}"
        try:
            api.post(f"/v1/sessions/{sid}/tools/batch", headers={"X-Op-Id": batch_id},
                     json={"commands": ["eval 'slow(\"g\", 20000)'", "eval 'window.count = 3'"]},
                     timeout=httpx.Timeout(60, read=2))
        except httpx.ReadTimeout:
            pass  # the caller hangs up mid-step
        first = wait_until(lambda: (a := api.get(f"/v1/ops/{batch_id}-1").json())
                           .get("state") == "ended" and a, timeout=30)
        assert first["status"] != "completed"
        assert api.get(f"/v1/ops/{batch_id}-2").status_code == 404  # never sent
        value = api.post(f"/v1/sessions/{sid}/tools/eval", json={"expression": "window.count"})
        assert value.json()["result"]["value"] is None
    finally:
        api.delete(f"/v1/sessions/{sid}")
