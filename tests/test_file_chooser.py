"""`upload` through a file chooser: the element an agent sees is a "Select file" button,
not the input behind it. Driven on Playwright's trace viewer (playwright-core's own build,
the pinned copy scripts/install.sh puts in the user's cache for the device list), whose
button makes a detached `<input type=file>` and clicks it; the trace loaded is a real one,
written by playwright-core from the same browser."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest
from support.cli import Bsk
from support.pages import ref_of

from browserskill.browser import launcher

NPM = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "browserskill" / "npm"
VIEWER = NPM / "node_modules" / "playwright-core" / "lib" / "vite" / "traceViewer"
# A trace of one click, written by Playwright itself (its tracing API, our Chromium).
MAKE_TRACE = """
const { chromium } = require(process.argv[1] + "/playwright-core");
(async () => {
  const browser = await chromium.launch({ executablePath: process.argv[2],
                                          args: ["--no-sandbox"] });
  const context = await browser.newContext();
  await context.tracing.start({ snapshots: true });
  const page = await context.newPage();
  await page.setContent("<button onclick=\\"this.textContent='Pressed'\\">Press me</button>");
  await page.click("text=Press me");
  await context.tracing.stop({ path: process.argv[3] });
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });
"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def viewer() -> Iterator[str]:
    if not (VIEWER / "index.html").is_file() or not shutil.which("node"):
        pytest.skip(f"no trace viewer at {VIEWER} or no node: scripts/install.sh installs "
                    "playwright-core there (with npm) for the device list")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(VIEWER)))
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "click.zip"
    browser = launcher.find_browser()
    assert browser, "no Chromium on this machine"
    subprocess.run(["node", "-e", MAKE_TRACE, str(NPM / "node_modules"), browser, str(path)],
                   check=True, timeout=120, capture_output=True)
    return path


def test_a_select_file_button_takes_the_files_through_the_chooser_it_opens(
        bsk: Bsk, viewer: str, trace: Path) -> None:
    bsk.ok("open", viewer)
    bsk.ok("wait", "--text", "Select file")  # the app renders after its scripts load
    select = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Select file")
    up = bsk.ok("upload", select, str(trace))["result"]
    assert up["via"] == "file_chooser"
    assert up["files"] == [{"name": "click.zip", "size": trace.stat().st_size,
                            "type": "application/zip"}]
    # The viewer read the file: the traced actions are listed, as an agent reads them.
    bsk.ok("wait", "--text", "Set content")
    snap = bsk.ok("snapshot")["result"]["snapshot"]
    assert 'treeitem "Click' in snap and "locator('text=Press me')" in snap, snap
    said = bsk("upload", ref_of(snap, "button", "Settings"), str(trace), as_json=False)
    assert said.code == 11  # clicked: no chooser opened (the settings did)
    assert "was clicked, but no file chooser opened" in said.stdout + said.stderr


def test_the_answer_says_the_click_happened_when_no_chooser_opens(
        bsk: Bsk, site: str, tmp_path: Path) -> None:
    bsk.ok("open", f"{site}/form.html")
    go = ref_of(bsk.ok("snapshot")["result"]["snapshot"], "button", "Go")
    one = tmp_path / "one.txt"
    one.write_text("hello")
    r = bsk("upload", go, str(one))
    assert r.code == 11 and r.json["status"] == "failed", r.json
    assert r.json["error"]["details"]["reason"] == "no_file_chooser"
    assert r.json["dispatched"] == "yes" and r.json["retry_safe"] is False
