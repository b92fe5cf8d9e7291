"""Evidence against real Chromium: a PDF pdftotext reads back, a video ffprobe measures
(frames that follow the page), a trace with the navigation in it; recordings listed in
`session list` and saved when the session stops."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from support.cli import Bsk
from support.wait import in_ci, wait_until

from browserskill.client import AsyncClient


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        if in_ci():
            pytest.fail(f"{tool} is missing: scripts/install.sh installs it")
        pytest.skip(f"{tool} is not installed (scripts/install.sh installs it)")


@pytest.fixture
def page(bsk: Bsk, site: str) -> str:
    url = f"{site}/evidence.html"
    bsk.ok("open", url)
    return url


def recordings(bsk: Bsk) -> dict[str, Any]:
    sessions = bsk.ok("session", "list")["sessions"]
    mine = next(s for s in sessions if s["session_id"] == bsk.session)
    return mine["recordings"]


def probe(path: Path) -> dict[str, Any]:
    """What ffprobe, an independent reader, finds in a video: codec, size, frames."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,width,height,nb_read_frames", "-of", "json", str(path)],
        capture_output=True, text=True, check=True, timeout=60).stdout
    stream: dict[str, Any] = json.loads(out)["streams"][0]
    return stream


def pixel(path: Path, frame: int) -> tuple[int, int, int]:
    """The RGB colour at the centre of one decoded frame (ffmpeg decodes it)."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-vf",
         f"select=eq(n\\,{frame}),crop=2:2:iw/2:ih/2", "-frames:v", "1", "-f", "rawvideo",
         "-pix_fmt", "rgb24", "-"], capture_output=True, check=True, timeout=60).stdout
    return raw[0], raw[1], raw[2]


def test_pdf_reads_back(bsk: Bsk, page: str, tmp_path: Path) -> None:
    need("pdftotext")
    out = tmp_path / "page.pdf"
    r = bsk.ok("pdf", str(out), "--format", "Letter", "--landscape")["result"]
    assert r["path"] == str(out) and r["bytes"] == out.stat().st_size > 0
    text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "Evidence page 4711" in text
    info = subprocess.run(["pdfinfo", str(out)], capture_output=True, text=True,
                          check=True).stdout
    assert "792 x 612 pts" in info  # Letter, landscape
    a4 = tmp_path / "a4.pdf"
    bsk.ok("pdf", str(a4))
    assert "595" in subprocess.run(["pdfinfo", str(a4)], capture_output=True, text=True,
                                   check=True).stdout
    bad = bsk("pdf", str(tmp_path / "page.txt"))
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "path"
    assert bad.json["dispatched"] == "no"
    nodir = bsk("pdf", str(tmp_path / "no" / "such" / "x.pdf"))
    assert nodir.code == 2 and "does not exist" in nodir.json["error"]["message"]


def test_video_follows_the_page(bsk: Bsk, page: str, tmp_path: Path) -> None:
    need("ffprobe")
    started = bsk.ok("video", "start", "--size", "320x240")["result"]
    assert started["size"] == "320x240" and started["fps"] == 25
    listed = recordings(bsk)["video"]
    assert listed["state"] == "recording" and listed["tab_id"] == started["tab_id"]
    again = bsk("video", "start")
    assert again.code != 0 and again.json["error"]["details"]["reason"] == "already_recording"

    # The page turns from red to blue half-way: the screencast sends the new frame.
    wait_until(lambda: recordings(bsk)["video"]["frames_received"] >= 1)
    bsk.ok("wait", "--ms", "600")  # the red part of the film
    before = recordings(bsk)["video"]["frames_received"]
    bsk.ok("eval", "document.body.style.background = 'rgb(0, 0, 220)'")
    wait_until(lambda: recordings(bsk)["video"]["frames_received"] > before)
    bsk.ok("wait", "--ms", "600")  # the blue part

    out = tmp_path / "run.webm"
    stopped = bsk.ok("video", "stop", str(out))["result"]
    assert "video" not in recordings(bsk)
    info = probe(out)
    assert (info["codec_name"], info["width"], info["height"]) == ("vp8", 320, 240)
    frames = int(info["nb_read_frames"])
    assert frames == stopped["frames"]
    assert 25 <= frames <= 25 * 30  # ≥ 1.2 s of page at 25 fps, well under the test's time
    first, last = pixel(out, 0), pixel(out, frames - 1)
    assert first[0] > 150 and first[2] < 80, first  # red
    assert last[2] > 150 and last[0] < 80, last  # blue

    none = bsk("video", "stop", str(out))
    assert none.json["error"]["details"]["reason"] == "not_recording"
    bad = bsk("video", "start", "--size", "big")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "size"


def test_a_video_stopped_before_its_first_frame_is_the_page_as_it_was(
        bsk: Bsk, page: str, tmp_path: Path) -> None:
    # Before: start and stop in one batch ended before the screencast's first frame, and
    # `video stop` failed ("Output file #0 does not contain any stream"), as it did in CI
    # on a loaded machine. Now the film is one screenshot of the page.
    need("ffprobe")
    out = tmp_path / "blink.webm"
    r = bsk.ok("batch", "video start --size 320x240", f"video stop {out}")
    stopped = r["result"]["steps"][1]["result"]
    assert stopped["frames"] == int(probe(out)["nb_read_frames"]) >= 1
    red = pixel(out, 0)
    assert red[0] > 150 and red[2] < 80, red  # evidence.html starts red
    assert "video" not in recordings(bsk)


def test_a_still_page_is_encoded_as_it_records(bsk: Bsk, page: str, tmp_path: Path) -> None:
    # A still page sends no screencast frames; its film is encoded while it records, so
    # `video stop` after a long still stretch has little left to do (and its deadline,
    # 120 s by default, is not spent re-encoding minutes of one frame).
    need("ffprobe")
    bsk.ok("video", "start", "--size", "320x240")
    wait_until(lambda: recordings(bsk)["video"]["frames_received"] >= 1)
    received = recordings(bsk)["video"]["frames_received"]
    wait_until(lambda: recordings(bsk)["video"]["frames_written"] >= 3 * 25, timeout=30,
               what="3 s of a still page written while recording")
    assert recordings(bsk)["video"]["frames_received"] <= received + 5  # still, indeed
    out = tmp_path / "still.webm"
    r = bsk.ok("video", "stop", str(out))["result"]
    assert int(probe(out)["nb_read_frames"]) == r["frames"] >= 3 * 25


def test_a_recording_whose_tab_closed_says_so(bsk: Bsk, page: str, tmp_path: Path) -> None:
    tab = bsk.ok("tab", "new", page)["result"]["tab_id"]
    bsk.ok("video", "start", "--size", "320x240")
    wait_until(lambda: recordings(bsk)["video"]["frames_received"] >= 1)
    bsk.ok("tab", "close", tab)
    assert recordings(bsk)["video"]["state"] == "tab_closed"
    text = bsk("session", "list", as_json=False).stdout
    assert f"recording video (tab {tab}, tab closed)" in text, text
    r = bsk.ok("video", "stop", str(tmp_path / "closed.webm"))["result"]
    assert r["frames"] >= 1


def test_video_as_mp4_and_saved_when_the_session_stops(bsk: Bsk, page: str,
                                                       tmp_path: Path) -> None:
    need("ffprobe")
    bsk.ok("video", "start")
    wait_until(lambda: recordings(bsk)["video"]["frames_received"] >= 1)
    out = tmp_path / "run.mp4"
    bad = bsk("video", "stop", str(tmp_path / "run.avi"))  # refused, still recording
    assert bad.code == 2 and "video" in recordings(bsk)
    r = bsk.ok("video", "stop", str(out))["result"]
    info = probe(out)
    assert info["codec_name"] == "h264" and f"{info['width']}x{info['height']}" == r["size"]
    assert int(info["nb_read_frames"]) == r["frames"] >= 1

    bsk.ok("video", "start")
    bsk.ok("trace", "start")
    assert set(recordings(bsk)) == {"video", "trace"}
    stopped = bsk.ok("session", "stop", "--wait")
    saved = {x["kind"]: x for x in (stopped.get("result") or stopped)["recordings_saved"]}
    assert probe(Path(saved["video"]["path"]))["codec_name"] == "vp8"
    assert json.loads(Path(saved["trace"]["path"]).read_text())["traceEvents"]


def test_trace_holds_the_navigation(bsk: Bsk, page: str, site: str, tmp_path: Path) -> None:
    started = bsk.ok("trace", "start", "--screenshots")["result"]
    assert "disabled-by-default-devtools.screenshot" in started["categories"]
    assert recordings(bsk)["trace"]["state"] == "recording"
    # Chromium runs one trace per browser: another session is told who holds it.
    other = bsk.with_session(bsk.session + "-2")
    other.ok("session", "start", other.session or "")
    try:
        busy = other("trace", "start")
        assert busy.json["error"]["details"] == {"reason": "trace_busy",
                                                 "session": bsk.session}
        assert busy.json["dispatched"] == "no"
    finally:
        other("session", "stop", "--wait")
    target = f"{site}/counter.html?traced"
    bsk.ok("open", target)
    out = tmp_path / "trace.json"
    r = bsk.ok("trace", "stop", str(out))["result"]
    assert r["bytes"] == out.stat().st_size
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    urls = {e.get("args", {}).get("data", {}).get("url") for e in events
            if e.get("name") == "ResourceSendRequest"}
    assert target in urls
    assert any(e.get("name") == "navigationStart" for e in events)
    assert any(e.get("name") == "Screenshot" for e in events)
    assert "trace" not in recordings(bsk)
    bad = bsk("trace", "start", "--categories", " , ")
    assert bad.code == 2 and bad.json["error"]["details"]["field"] == "categories"


def test_http_surface(bsk: Bsk, page: str, tmp_path: Path, api: httpx.Client) -> None:
    need("pdftotext")
    via_http = tmp_path / "http.pdf"
    r = api.post(f"/v1/sessions/{bsk.session}/tools/pdf", json={"path": str(via_http)})
    assert r.status_code == 200 and r.json()["result"]["path"] == str(via_http)
    assert "Evidence page 4711" in subprocess.run(
        ["pdftotext", str(via_http), "-"], capture_output=True, text=True, check=True).stdout
    bad = api.post(f"/v1/sessions/{bsk.session}/tools/emulate", json={"cpu": 0})
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "cpu"


async def test_client_and_mcp_surfaces(bsk: Bsk, page: str, tmp_path: Path) -> None:
    """The same tools through the Python client and MCP (all from the one catalog)."""
    need("pdftotext")
    async with AsyncClient(home=bsk.home, session=bsk.session, retries=0) as c:
        tz = await c.emulate(timezone="Pacific/Auckland")
        assert tz.result["page"]["timezone"] == "Pacific/Auckland"
        await c.trace_start()
        mine = [s for s in await c.session_list() if s.session_id == bsk.session]
        assert mine[0].recordings and mine[0].recordings["trace"]["state"] == "recording"
        traced = await c.trace_stop(str(tmp_path / "client.json"))
        assert traced.ok and json.loads(Path(traced.result["path"]).read_text())

    env = {k: v for k, v in bsk.env.items() if k.startswith("BSK_")}
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "browserskill", "mcp", "--session", bsk.session,
                                         "--caps", "evidence,emulation"])
    via_mcp = tmp_path / "mcp.pdf"
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        printed = await session.call_tool("pdf", {"path": str(via_mcp)})
        assert not printed.is_error
        granted = await session.call_tool("permissions_grant", {"names": ["notifications"]})
        assert not granted.is_error
        seen = await session.call_tool("eval", {"expression": "Notification.permission"})
        value = seen.structured_content["result"]["value"]  # page text: marked over MCP
        assert re.fullmatch(r"<<<page-content nonce=\w+>>>\ngranted\n<<<end page-content "
                            r"nonce=\w+>>>", value), value
        await session.call_tool("permissions_clear", {"names": ["notifications"]})
    proc = await asyncio.create_subprocess_exec("pdftotext", str(via_mcp), "-",
                                                stdout=asyncio.subprocess.PIPE)
    text, _ = await proc.communicate()
    assert b"Evidence page 4711" in text
