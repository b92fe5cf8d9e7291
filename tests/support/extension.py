"""The user's own browser, through the BrowserSkill extension: a Chromium that loads
extension/, paired (as the user does, in its options page) with a daemon of its own."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.chromium import Chromium, PageDevTools, browser_cdp, launched_chromium
from support.cli import Bsk, answer_of, live_ops, stop_for_good
from support.pages import ref_of
from support.wait import wait_until

EXTENSION_DIR = Path(__file__).resolve().parent.parent.parent / "extension"


def _evaluate_in(chromium: Chromium, target: str, script: str) -> dict[str, Any] | None:
    """Evaluate `script` in a page target; None while that page is still loading."""
    try:
        result = browser_cdp(chromium, "Runtime.evaluate", {
            "expression": script, "awaitPromise": True, "returnByValue": True},
            session_of=target)
    except AssertionError as e:  # ran in the blank page the target starts with
        if "Execution context was destroyed" in str(e):
            return None
        raise
    if "exceptionDetails" in result:
        text = json.dumps(result["exceptionDetails"])
        assert "Cannot read properties of null" in text or "not defined" in text, text
        return None
    return result


@dataclass
class BrowserWithExtension:
    """A Chromium with extension/ loaded, connected to a daemon of its own."""

    chromium: Chromium
    bsk: Bsk
    port: int

    def worker_eval(self, expression: str) -> Any:
        """Evaluate in the extension's service worker (as its options page would act)."""
        def worker() -> str | None:
            targets = browser_cdp(self.chromium, "Target.getTargets")["targetInfos"]
            return next((t["targetId"] for t in targets if t["type"] == "service_worker"
                         and t["url"].startswith("chrome-extension://")), None)

        def ready() -> str | None:  # the target shows up before the worker's script ran
            target = worker()
            try:
                typed = browser_cdp(self.chromium, "Runtime.evaluate", {
                    "expression": "typeof bsk", "returnByValue": True,
                }, session_of=target)["result"].get("value") if target else None
            except AssertionError:  # the worker restarted meanwhile
                return None
            return target if typed == "object" else None

        target = wait_until(ready, 20, "the extension's service worker to start")
        result = browser_cdp(self.chromium, "Runtime.evaluate",
                             {"expression": expression, "awaitPromise": True,
                              "returnByValue": True}, session_of=target)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def pair_in_options_page(self, code: str, *, port: int | None = None,
                             label: str = "test-browser") -> str:
        """Open the extension's options page, enter the port, label and pairing code, press
        Pair, and return what the page then says (as a user would read it); the page is
        closed again."""
        from browserskill.browser.extension_protocol import EXTENSION_ORIGIN

        target = browser_cdp(self.chromium, "Target.createTarget",
                             {"url": f"{EXTENSION_ORIGIN}/options.html"})["targetId"]
        try:
            script = f"""(async () => {{
              const $ = (id) => document.getElementById(id);
              const until = (ok) => new Promise((resolve) => {{
                const check = () => ok() ? resolve() : requestAnimationFrame(check);
                check();
              }});
              await until(() => $("paired") && $("paired").textContent);  // options.js ran
              $("port").value = {json.dumps(str(port or self.port))};
              $("label").value = {json.dumps(label)};
              $("code").value = {json.dumps(code)};
              $("pair").click();
              await until(() => !["", "pairing…"].includes($("pair-result").textContent));
              return $("pair-result").textContent;
            }})()"""
            result = wait_until(lambda: _evaluate_in(self.chromium, target, script), 30,
                                "the options page to load")
            return result["result"]["value"]
        finally:
            browser_cdp(self.chromium, "Target.closeTarget", {"targetId": target})

    def popup(self) -> dict[str, str]:
        """What the extension's popup shows (its text fields by id), opened as a tab."""
        from browserskill.browser.extension_protocol import EXTENSION_ORIGIN

        target = browser_cdp(self.chromium, "Target.createTarget",
                             {"url": f"{EXTENSION_ORIGIN}/popup.html"})["targetId"]
        script = """(async () => {
          const $ = (id) => document.getElementById(id);
          await new Promise((resolve) => {
            const check = () => $("instance") && $("instance").textContent
              ? resolve() : requestAnimationFrame(check);
            check();
          });
          return Object.fromEntries(["state", "port", "error", "pairing", "instance"]
            .map((id) => [id, $(id).textContent]));
        })()"""
        try:
            result = wait_until(lambda: _evaluate_in(self.chromium, target, script), 30,
                                "the popup to load")
            return result["result"]["value"]
        finally:
            browser_cdp(self.chromium, "Target.closeTarget", {"targetId": target})

    def page_targets(self) -> list[dict[str, Any]]:
        return [t for t in browser_cdp(self.chromium, "Target.getTargets")["targetInfos"]
                if t["type"] == "page"]

    def connected(self) -> list[dict[str, Any]]:
        r = self.bsk("browsers")
        return [b for b in r.json.get("browsers", []) if b["connected"]] if r.code == 0 else []


@contextlib.contextmanager
def extension_browser(runner: Bsk, port: int, log_file: Path, *extra_args: str,
                      headless: bool = True, display: str | None = None,
                      pair: bool = True) -> Iterator[BrowserWithExtension]:
    """The daemon of `runner` (whose env sets BSK_EXTENSION_PORT=`port`), and a Chromium
    that loads extension/ and is pointed at that port; paired and connected when yielded
    (with `pair=False`: neither, only pointed there). The browser is killed and the daemon
    stopped afterwards."""
    runner.ok("daemon", "start")
    try:
        with launched_chromium(log_file, f"--load-extension={EXTENSION_DIR}", *extra_args,
                               headless=headless, display=display) as chromium:
            ext = BrowserWithExtension(chromium, runner, port)
            if not pair:  # the port and label saved in the options page, nothing more
                assert ext.worker_eval(f"bsk.configure({{port: {port}, "
                                       "label: 'test-browser'})")
                yield ext
                return
            # As the user does: the code from `bsk extension pair`, entered once (with
            # the port and a label) in the extension's options page.
            outcome = ext.pair_in_options_page(runner.ok("extension", "pair")["code"],
                                               label="test-browser")
            assert outcome.startswith("paired with the daemon"), outcome
            wait_until(ext.connected, 20, "the extension to connect to the daemon")
            yield ext
    finally:
        stop_for_good(runner)




def agent_session(ext: BrowserWithExtension, sid: str = "agent") -> Bsk:
    """A session of the extension's browser (a new Agent Window), bound to a runner."""
    started = ext.bsk.ok("session", "start", sid, "--browser", "extension", "--label", "tester")
    assert started["placement"]["browser"] == ext.connected()[0]["browser_id"]
    return ext.bsk.with_session(sid)


def answer_prompt(hand: PageDevTools, button: str) -> None:
    """Press a button of the extension's in-page UI (`stop`, `approve`, `deny`) as the
    user does: a trusted click, once the button shows."""
    node = wait_until(lambda: hand.find("data-bsk", button), what=f"the {button} button")
    hand.click(node)


def the_connected_browser(ext: BrowserWithExtension) -> dict[str, Any]:
    """The one browser `bsk browsers` lists as connected, its handshake checked."""
    (b,) = ext.connected()
    assert b["label"] == "test-browser"
    assert b["protocol"] == 2  # the handshake that proves pairing
    assert b["name"] and b["version"]
    assert len(b["browser_id"]) >= 8
    paired = ext.bsk.ok("browsers")["paired"]
    assert [p["browser_id"] for p in paired] == [b["browser_id"]]
    assert "secret" not in paired[0]
    return b


def log_in_through_the_relay(s: Bsk, site: str) -> None:
    """open, snapshot, fill, click and eval on the login page, all through the relay."""
    s.ok("open", f"{site}/login.html")
    snap = s.ok("snapshot")["result"]["snapshot"]
    s.ok("fill", ref_of(snap, "textbox", "Username"), "jane")
    s.ok("fill", ref_of(snap, "textbox", "Password"), "secret")
    s.ok("click", ref_of(snap, "button", "Log in"))
    assert s("eval", "document.getElementById('result').textContent").value == "Welcome, jane"
    # The overlay lives in a closed shadow root: the snapshot does not see into it.
    assert "Stop" not in s.ok("snapshot")["result"]["snapshot"]


def stop_button_interrupts(ext: BrowserWithExtension, s: Bsk, site: str) -> None:
    """The user presses Stop in the agent tab's overlay during a slow eval: the call ends
    (user_interrupt), reads still work, the next change is refused once."""
    s.ok("open", f"{site}/counter.html")
    (tab,) = s.ok("tab", "list")["result"]["tabs"]
    hand = PageDevTools(ext.chromium, tab["target_id"])
    running = s.popen("eval", "await slow('x', 20000)")
    wait_until(lambda: live_ops(s, "dispatched"), what="the eval to be dispatched")
    answer_prompt(hand, "stop")
    code, answer = answer_of(running)
    assert code == 9 and answer["error"]["details"]["reason"] == "user_interrupt"
    assert s.ok("snapshot")["result"]["snapshot"]  # reads still work
    r = s("eval", "window.count = 1")
    assert r.code == 6 and r.json["error"]["code"] == "user_interrupted"
    assert r.json["dispatched"] == "no"
    assert s("eval", "1 + 1").value == 2  # only once
    hand.close()
