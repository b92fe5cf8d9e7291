"""`bsk record start` / `record stop FILE` / `bsk replay FILE` against the real browser:
what the agent did becomes a script of locators that replays to the same page state."""

from __future__ import annotations

import uuid
from pathlib import Path

from support.cli import Bsk

STATE = ("[v => document.getElementById('out').textContent, v => "
         "document.getElementById('name').value, v => document.getElementById('color').value,"
         " v => document.getElementById('sub').checked].map(f => f())")


def _record(bsk: Bsk, site: str, path: Path) -> dict:
    bsk.ok("record", "start")
    bsk.ok("open", f"{site}/rec.html")
    bsk.ok("fill", "css=#name", "Ada")
    bsk.ok("fill", "css=#pw", "hunter22")
    bsk.ok("select", "css=#color", "green")
    bsk.ok("check", "css=#sub")
    bsk.ok("click", "role=button[name=\"Save\"]")
    return bsk.ok("record", "stop", str(path))["result"]


def _other(shared_bsk: Bsk) -> Bsk:
    sid = "rec-" + uuid.uuid4().hex[:6]
    shared_bsk.ok("session", "start", sid)
    return shared_bsk.with_session(sid)


def test_a_recording_replays_to_the_same_page_state(bsk: Bsk, shared_bsk: Bsk, site: str,
                                                    tmp_path: Path) -> None:
    script = tmp_path / "signup.bsk"
    result = _record(bsk, site, script)
    assert result["commands"] == 6 and result["secrets"] == ["BSK_SECRET_1"]
    text = script.read_text()
    assert "hunter22" not in text  # the password is a placeholder
    commands = [line for line in text.splitlines() if not line.startswith("#")]
    assert commands == [
        f"open {site}/rec.html",
        "fill 'role=textbox[name=\"Name\"]' Ada",
        "fill 'role=textbox[name=\"Password\"]' '${BSK_SECRET_1}'",
        "select 'role=combobox[name=\"Color\"]' green",
        "check 'role=checkbox[name=\"Subscribe\"]'",
        "click 'role=button[name=\"Save\"]'",
    ], text
    before = bsk("eval", STATE).value
    assert before == ["saved Ada 8 green true", "Ada", "green", True]
    other = _other(shared_bsk)
    other.env = {**other.env, "BSK_SECRET_1": "hunter22"}
    replayed = other.ok("replay", str(script))
    assert replayed["status"] == "completed" and replayed["result"]["completed"] == 6
    assert other("eval", STATE).value == before
    other("session", "stop")


def test_a_recording_begun_on_a_page_starts_its_script_there(bsk: Bsk, shared_bsk: Bsk,
                                                              site: str, tmp_path: Path) -> None:
    bsk.ok("open", f"{site}/rec.html")
    started = bsk("record", "start", as_json=False).stdout
    assert "stop with `bsk record stop FILE`" in started, started
    bsk.ok("fill", "css=#name", "Bo")
    bsk.ok("click", "css=#save")
    script = tmp_path / "begun.bsk"
    stopped = bsk("record", "stop", str(script), as_json=False).stdout
    assert stopped.startswith(f"wrote {script}: 3 command(s)"), stopped
    commands = [line for line in script.read_text().splitlines() if not line.startswith("#")]
    assert commands[0] == f"open {site}/rec.html", commands
    other = _other(shared_bsk)  # a fresh tab: the script itself brings it to the page
    out = other("replay", str(script), as_json=False).stdout
    assert out.strip() == f"replayed {script}: 3 command(s) completed", out
    assert other("eval", STATE).value == ["saved Bo 0 red false", "Bo", "red", False]
    other("session", "stop")


def test_replay_stops_at_the_line_whose_target_is_gone(bsk: Bsk, shared_bsk: Bsk, site: str,
                                                       tmp_path: Path) -> None:
    script = tmp_path / "signup.bsk"
    _record(bsk, site, script)
    script.write_text(script.read_text().replace("/rec.html", "/rec.html?nosave"))
    other = _other(shared_bsk)
    other.env = {**other.env, "BSK_SECRET_1": "pw"}
    r = other("replay", str(script))
    assert r.code == 4, r.stdout
    answer = r.json
    assert answer["error"]["code"] == "ref_not_found" and answer["dispatched"] == "no"
    lines = script.read_text().splitlines()
    assert answer["replay"]["line"] == len(lines) and lines[-1].startswith("click ")
    assert answer["replay"]["completed"] == 5 and f"line {len(lines)}" in answer["error"]["message"]
    assert other("eval", STATE).value == ["", "Ada", "green", True]  # nothing more was sent
    other("session", "stop")


def test_replay_needs_the_recorded_secret(bsk: Bsk, shared_bsk: Bsk, site: str,
                                          tmp_path: Path) -> None:
    script = tmp_path / "signup.bsk"
    _record(bsk, site, script)
    other = _other(shared_bsk)
    other.env.pop("BSK_SECRET_1", None)
    r = other("replay", str(script))
    assert r.code == 2 and "BSK_SECRET_1" in r.json["error"]["message"]
    lines = script.read_text().splitlines()
    password_line = next(n for n, line in enumerate(lines, 1) if line.startswith("fill ")
                         and "BSK_SECRET_1" in line)
    assert r.json["replay"]["line"] == password_line and r.json["dispatched"] == "no"
    assert r.json["replay"]["completed"] == 0  # every line is checked before any is sent
    assert other("eval", "location.href").value == "about:blank"
    other("session", "stop")


def test_a_script_that_cannot_run_is_refused_before_anything_is_sent(
        shared_bsk: Bsk, site: str, tmp_path: Path) -> None:
    other = _other(shared_bsk)
    script = tmp_path / "typo.bsk"
    script.write_text(f"open {site}/rec.html\nfill css=#name Ada\nclik css=#save\n")
    r = other("replay", str(script))
    assert r.code == 2 and r.json["replay"]["line"] == 3 and "'clik'" in r.json["error"]["message"]
    assert r.json["replay"]["completed"] == 0 and r.json["dispatched"] == "no"
    assert other("eval", "location.href").value == "about:blank"  # line 1 did not run
    # A locator is read before anything is sent too (its syntax; the page resolves it).
    script.write_text(f"open {site}/rec.html\nclick 'role=button[name=\"Save]'\n")  # open quote
    r = other("replay", str(script))
    assert r.code == 2 and r.json["replay"]["line"] == 2, r.json
    assert "role locator" in r.json["error"]["message"], r.json
    assert r.json["replay"]["completed"] == 0 and r.json["dispatched"] == "no"
    assert other("eval", "location.href").value == "about:blank"
    binary = tmp_path / "binary.bsk"
    binary.write_bytes(b"\x00\xff\xfe open x\n")
    r = other("replay", str(binary))
    assert r.code == 2 and r.json["error"]["details"]["field"] == "file", r.stderr
    other("session", "stop")
