"""Text typed into a password field is shown and stored nowhere (docs/outcomes.md,
"Passwords"): not in the CLI's answer (text or JSON), `op show`, `op list`, the journal
on disk, the daemon's log or the dashboard's feed — as `record stop` already wrote it
`${BSK_SECRET_N}`. Text typed into any other field stays visible."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from support.cli import Bsk
from support.pages import ref_of
from support.wait import wait_until
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from browserskill.base.contract import SECRET_MASK

SECRET = "Pw-dana-4471!"


@contextmanager
def dashboard_feed(bsk: Bsk) -> Iterator[list[str]]:
    """Every state frame the dashboard's feed sends while the block runs."""
    url = bsk.ok("show", "--url")["url"]
    base = url.partition("/?code=")[0]
    cookie = httpx.get(url).cookies["bsk_dashboard"]
    frames: list[str] = []
    with connect(base.replace("http://", "ws://") + "/feed", open_timeout=10,
                 additional_headers={"Origin": base,
                                     "Cookie": f"bsk_dashboard={cookie}"}) as ws:
        def read() -> None:
            try:
                for message in ws:
                    if isinstance(message, str):
                        frames.append(message)
            except ConnectionClosed:
                pass

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            yield frames
        finally:
            ws.close()
            reader.join(10)


def _fill_rows(frames: list[str], op_id: str) -> list[dict[str, object]]:
    return [row for frame in frames for s in json.loads(frame).get("sessions", [])
            for row in s["ops"] if row["op_id"] == op_id]


def test_a_password_is_masked_everywhere(bsk: Bsk, site: str) -> None:
    bsk.ok("open", f"{site}/login.html")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    password, username = ref_of(snap, "textbox", "Password"), ref_of(snap, "textbox", "Username")
    with dashboard_feed(bsk) as frames:
        text = bsk("fill", password, SECRET, as_json=False)
        as_json = bsk("fill", password, SECRET)
        op_id = as_json.json["op_id"]
        wait_until(lambda: any(r["state"] == "ended" for r in _fill_rows(frames, op_id)),
                   what="the fill's ended row in the dashboard's feed")
    # The CLI's own answers: `filled e47: "••••••"`, never the text.
    assert text.code == 0 and SECRET not in text.stdout + text.stderr
    assert f"filled {password}: " in text.stdout and SECRET_MASK in text.stdout
    assert as_json.code == 0 and SECRET not in as_json.stdout
    assert as_json.json["result"]["value"] == SECRET_MASK and as_json.json["result"]["matches"]
    # The page did get it.
    reversed_value = "document.getElementById('password').value.split('').reverse().join('')"
    assert bsk("eval", reversed_value).value == SECRET[::-1]
    shown = bsk("op", "show", op_id)
    assert SECRET not in shown.stdout and shown.json["params"]["text"] == SECRET_MASK
    listed = bsk("op", "list")
    assert SECRET not in listed.stdout and op_id in listed.stdout
    assert frames and all(SECRET not in f for f in frames)
    assert {r["params"] for r in _fill_rows(frames, op_id)} == {
        json.dumps({"ref": password, "text": SECRET_MASK}, separators=(",", ":"),
                   ensure_ascii=False)}
    # An idempotency key still names the same call (the journal compares it masked).
    first = bsk.ok("--key", "pw-once", "fill", password, SECRET)
    assert bsk.ok("--key", "pw-once", "fill", password, SECRET)["op_id"] == first["op_id"]
    assert bsk("--key", "pw-once", "fill", password, "other").code == 2
    # `type` into the focused password field is masked the same way.
    bsk.ok("click", password)
    typed = bsk.ok("type", SECRET)
    assert bsk.ok("op", "show", typed["op_id"])["params"]["text"] == SECRET_MASK
    # Another field's text stays visible.
    named = bsk.ok("fill", username, "dana")
    assert named["result"]["value"] == "dana"
    assert bsk.ok("op", "show", named["op_id"])["params"]["text"] == "dana"
    # Nothing on disk holds it: the journal (with its WAL) and the daemon's log.
    for path in bsk.home.iterdir():
        if path.name.startswith(("journal", "daemon")) and path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
