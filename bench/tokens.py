"""Tokens an agent reads for one fixed task, through `bsk` and through playwright-cli.

The task: open the login fixture (tests/pages/login.html), find the fields, fill the
username and the password, submit, read the result. Each tool is driven the way its own
skill teaches, with refs parsed from its own output:

    bsk:             open URL · snapshot --interactive · fill REF alice · fill REF PW ·
                     click REF · snapshot
    playwright-cli:  open URL · snapshot · fill REF alice · fill REF PW · click REF · snapshot

Counted: every character each command prints (stdout and stderr: the agent reads both),
as tokens = chars / 4. Commands typed are not counted (about the same for both).
Target: BrowserSkill's total <= playwright-cli's.

    .venv/bin/python bench/tokens.py [--show]      # --show prints every output
"""

from __future__ import annotations

import contextlib
import http.server
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import common
import playwright_peer as peer

PAGES = common.ROOT / "tests" / "pages"
USER, PASSWORD, EXPECTED = "alice", "correct horse", "Welcome, alice"
Step = common.Step


@contextlib.contextmanager
def fixture_site() -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             partial(Quiet, directory=str(PAGES)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/login.html"
    finally:
        server.shutdown()
        server.server_close()


def run_task(run: Callable[..., str], url: str, first_snapshot: list[str]) -> list[Step]:
    """The task through one tool; `run(*args)` returns what the command printed."""
    step = common.Recorder(run)
    step("open", url)
    snap = step(*first_snapshot)
    step("fill", common.ref_of(snap, "textbox", "Username"), USER)
    step("fill", common.ref_of(snap, "textbox", "Password"), PASSWORD)
    step("click", common.ref_of(snap, "button", "Log in"))
    final = step("snapshot")
    if EXPECTED not in final:
        raise RuntimeError(f"the result {EXPECTED!r} is not in the final snapshot:\n{final}")
    return step.steps


def bsk_task(bsk: common.BskDaemon, url: str) -> list[Step]:
    bsk.run("session", "start", "tokens")

    def run(*args: str) -> str:
        return common.printed(bsk.run("-s", "tokens", *args, check=False), list(args))

    return run_task(run, url, ["snapshot", "--interactive"])


def peer_task(workdir: Path, url: str) -> list[Step]:
    def run(*args: str) -> str:
        return common.printed(peer.run(list(args), workdir), ["playwright-cli", *args])

    return run_task(run, url, ["snapshot"])


def report(name: str, steps: list[Step], show: bool) -> float:
    total = 0.0
    print(f"\n{name}:")
    for command, out in steps:
        total += common.tokens(out)
        print(f"  {command[:44]:<44} {len(out):>6} chars  {common.tokens(out):>7.1f} tokens")
        if show:
            print("    | " + out.rstrip().replace("\n", "\n    | "))
    print(f"  {'total':<44} {sum(len(o) for _, o in steps):>6} chars  {total:>7.1f} tokens")
    return total


def main(show: bool = False) -> int:
    common.exit_on_sigterm()
    common.header("Tokens for one task: open the login page, fill, submit, read the result")
    print("   tokens = characters / 4 of everything each command prints (stdout + stderr)")
    peer.ensure_installed()
    workdir = peer.write_config()
    try:
        with fixture_site() as url, common.BskDaemon() as bsk:
            ours = report("bsk", bsk_task(bsk, url), show)
            theirs = report(f"playwright-cli {common.peer_version()}",
                            peer_task(workdir, url), show)
    finally:
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n  bsk / playwright-cli: {ours / theirs:.2f}")
    return 0 if common.verdict("bsk tokens <= playwright-cli tokens", ours, theirs,
                               unit="tokens") else 1


if __name__ == "__main__":
    common.run_main(main, "--show" in sys.argv[1:])
