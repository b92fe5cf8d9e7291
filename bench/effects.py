"""What effects, `snapshot --diff` and `batch` cost and save (issue 20, "Benchmark").

(a) Latency the settle window adds to a click (`result.effects`, `--settle MS`): the same
    click through the HTTP API, alternated, with the default window and with `settle: 0`,
    on a page that settles at once because the click changes nothing (median difference;
    target <= 30 ms), on one that changes its text at once and is then quiet (shown: the
    quiet window is its cost), and on a page that keeps animating (the click must end at
    the bound, `effects.settled: false`, not hang).
    Needs a build with effects (branch `effects`); without it (a) says so and is skipped.
(b) Tokens an agent reads, and the wall time it waits, for one scripted task on
    tests/pages/diff.html (and the same with 40 products under it) — open, read the
    page, then: place an order, count, remove pears, write a note, place a second order,
    looking at the page after each step — through:
      bsk full          every action, then a full `snapshot`
      bsk effects+diff  every action (its effects line), then `snapshot --diff`
      bsk batch         the five actions in one `bsk batch`, then `snapshot --diff`
      bsk batch --settle 0  the same, no step waiting for the page to settle (no
                        effects: what an agent that only needs the end state runs)
      playwright-cli    every action, then `snapshot`
      agent-browser     every action, then `snapshot`; then again with `diff snapshot`
                        (its own diff, as documented), and with `diff snapshot --baseline
                        FILE` where the bench saved the last snapshot to FILE unread
    Counted: characters each command prints (stdout + stderr), tokens = chars / 4; and
    the task's wall time, first command to last, whole processes as an agent runs them
    (each tool's session and browser started before, untimed), the ways alternated for
    --task-rounds rounds (medians). Each tool's refs come from its own first snapshot.
    Every run checks the page ended right. Targets: bsk's batch + diff reads fewer tokens
    and takes less time than the best peer.

    .venv/bin/python bench/effects.py [--show] [--rounds N] [--only a|b] [--task-rounds N]
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import common
import playwright_peer as peer

SETTLED_PAGE = b"""<!doctype html><title>settles</title>
<button id="go" onclick="out.textContent = 'clicked ' + (++n)">Go</button>
<p id="out">-</p><script>var n = 0;</script>"""
DEAD_PAGE = b"""<!doctype html><title>does nothing</title><button id="go">Go</button>"""
ANIMATING_PAGE = b"""<!doctype html><title>animates</title>
<button id="go">Go</button><p id="tick">0</p>
<script>let t = 0; setInterval(() => { tick.textContent = String(++t); }, 16);</script>"""

# The task's page with a catalogue of 40 products under it: a page as long as a real
# shop's, where re-reading everything after each step costs what it costs there.
BIG_PAGE = (common.TEST_PAGES / "diff.html").read_bytes().replace(b"</main>", b"".join(
    b'<section><h3>Product %d</h3><a href="p%d.html">Details of product %d</a> '
    b'<button>Add product %d</button><p>Price %d.00 EUR, in stock.</p></section>'
    % (i, i, i, i, 10 + i) for i in range(1, 41)) + b"</main>")

Step = common.Step


# -- (a) the settle window's latency ---------------------------------------------------


def _click(sock: str, sid: str, ref: str, settle: int | None) -> tuple[float, dict[str, Any]]:
    body: dict[str, Any] = {"ref": ref}
    if settle is not None:
        body["settle"] = settle
    status, _, answer, wall = common.api(sock, "POST", f"/v1/sessions/{sid}/tools/click", body)
    if status != 200:
        raise RuntimeError(f"click {body}: {status} {answer}")
    return wall, answer


def _open_and_ref(sock: str, sid: str, url: str) -> str:
    common.api(sock, "POST", f"/v1/sessions/{sid}/tools/open", {"url": url})
    snap = common.api(sock, "POST", f"/v1/sessions/{sid}/tools/snapshot", {})[2]
    return common.ref_of(snap["result"]["snapshot"], "button", "Go")


def settle_latency(bsk: common.BskDaemon, base: str, rounds: int) -> bool:
    sock, sid = bsk.socket, "fx"
    common.api(sock, "POST", "/v1/sessions", {"session_id": sid})
    print("\n(a) latency the settle window adds to a click (HTTP API, wall ms)")
    ref = _open_and_ref(sock, sid, f"{base}/dead.html")
    status, _, _, _ = common.api(sock, "POST", f"/v1/sessions/{sid}/tools/click",
                                 {"ref": ref, "settle": 0})
    if status == 400:
        print("  skipped: this build has no --settle (result.effects: branch `effects`)")
        return True
    ok = True
    # A page that does nothing is settled once it has not reacted for REACTION_MS (the
    # target's case); one that reacts at once is watched for the quiet window after
    # (browserskill/base/effects.py): its figure is shown beside, the window being its cost.
    for page, what, target in (("dead.html", "changes nothing", 30.0),
                               ("settles.html", "changes its text at once, then quiet",
                                None)):
        ref = _open_and_ref(sock, sid, f"{base}/{page}")
        watched, quiet = [], []
        for _ in range(3):  # warm-up
            _click(sock, sid, ref, None)
            _click(sock, sid, ref, 0)
        for i in range(rounds):  # alternated, so load drifts hit both alike
            for settle in ((None, 0) if i % 2 == 0 else (0, None)):
                wall, answer = _click(sock, sid, ref, settle)
                (quiet if settle == 0 else watched).append(wall)
                if settle is None and "effects" not in answer["result"]:
                    raise RuntimeError(f"no result.effects: {answer['result']}")
        print(f"  a page that {what}:")
        print("    " + common.describe("default window", watched))
        print("    " + common.describe("--settle 0", quiet))
        added = common.median(watched) - common.median(quiet)
        print(f"    added by the window (median difference): {added:.1f} ms")
        if target is not None:
            ok = common.verdict("settle window's added latency", added, target) and ok

    ref = _open_and_ref(sock, sid, f"{base}/animates.html")
    walls, ends = [], []
    for _ in range(max(3, rounds // 5)):
        wall, answer = _click(sock, sid, ref, None)
        walls.append(wall)
        effects = answer["result"].get("effects") or {}
        ends.append((effects.get("settled"), effects.get("watched_ms")))
    print("  " + common.describe("keeps animating, default window", walls))
    print(f"  effects (settled, watched_ms) per click: {ends}")
    bounded = all(settled is False for settled, _ in ends) and max(walls) < 3000
    print(f"  ends at the bound, saying it was still changing: {'yes' if bounded else 'NO'}")
    return ok and bounded


# -- (b) tokens for a multi-step task --------------------------------------------------

ACTIONS = (("click", "button", "Place order"), ("click", "button", "Count: 0"),
           ("click", "button", "Remove pears"), ("fill", "textbox", "Note"),
           ("click", "button", "Place order"))
NOTE = "gift wrap"
EXPECTED = "Order #2 placed"
CHECK_JS = ("document.getElementById('status').textContent + '|' + "
            "document.getElementById('note').value + '|' + document.querySelectorAll('li').length")
CHECK_OK = f"{EXPECTED}|{NOTE}|2"


def _action_args(action: tuple[str, str, str], ref: str) -> list[str]:
    verb = action[0]
    return [verb, ref, NOTE] if verb == "fill" else [verb, ref]


def task(run: Callable[..., str], url: str, look: list[str] | None,
         ref_prefix: str = "", first: list[str] | None = None) -> list[Step]:
    """open, a first snapshot, then each action followed by `look` (if any)."""
    step = common.Recorder(run)
    step("open", url)
    snap = step(*(first or ["snapshot"]))
    refs = [ref_prefix + common.ref_of(snap, role, name) for _, role, name in ACTIONS]
    for action, ref in zip(ACTIONS, refs, strict=True):
        step(*_action_args(action, ref))
        if look:
            step(*look)
    return step.steps


def bsk_runner(bsk: common.BskDaemon, sid: str) -> Callable[..., str]:
    bsk.run("session", "start", sid)

    def run(*args: str) -> str:
        return common.printed(bsk.run("-s", sid, *args, check=False), ["bsk", *args])

    return run


def bsk_batch_task(run: Callable[..., str], url: str, *options: str) -> list[Step]:
    """open, snapshot, the five actions in one batch (`batch OPTIONS …`), one diff."""
    steps: list[Step] = []
    for args in (("open", url), ("snapshot",)):
        steps.append((" ".join(args), run(*args)))
    snap = steps[-1][1]
    commands = [shlex.join(_action_args(a, common.ref_of(snap, a[1], a[2]))) for a in ACTIONS]
    argv = ["batch", *options, *commands]
    steps.append((shlex.join(argv), run(*argv)))
    steps.append(("snapshot --diff", run("snapshot", "--diff")))
    return steps


def pw_runner(workdir: Path) -> Callable[..., str]:
    def run(*args: str) -> str:
        return common.printed(peer.run(list(args), workdir), ["playwright-cli", *args])

    return run


def ab_runner(session: str) -> Callable[..., str]:
    def run(*args: str) -> str:
        argv = [str(peer.AGENT_BROWSER), "--session", session, *args]
        return common.printed(subprocess.run(argv, env=peer.agent_browser_env(),
                                             capture_output=True, text=True, timeout=120), argv)

    return run


def ab_baseline_task(session: str, url: str, scratch: Path) -> list[Step]:
    """`diff snapshot --baseline FILE` after each step; FILE written by the bench with the
    snapshot the agent last saw (`snapshot > FILE`: not read, so not counted)."""
    run = ab_runner(session)
    base = scratch / "ab-baseline.txt"
    steps: list[Step] = [("open " + url, run("open", url))]
    snap = run("snapshot")
    steps.append(("snapshot", snap))
    base.write_text(snap)
    refs = ["@" + common.ref_of(snap, role, name) for _, role, name in ACTIONS]
    for action, ref in zip(ACTIONS, refs, strict=True):
        steps.append((" ".join(_action_args(action, ref)), run(*_action_args(action, ref))))
        steps.append(("diff snapshot --baseline FILE",
                      run("diff", "snapshot", "--baseline", str(base))))
        base.write_text(run("snapshot"))  # the agent saves it unread: `snapshot > FILE`
    return steps


def report(name: str, steps: list[Step], show: bool) -> float:
    total = sum(common.tokens(out) for _, out in steps)
    print(f"\n  {name}: {total:.0f} tokens in {len(steps)} commands")
    for command, out in steps:
        print(f"    {command[:56]:<56} {len(out):>6} chars  {common.tokens(out):>7.1f} tokens")
        if show:
            print("      | " + out.rstrip().replace("\n", "\n      | "))
    return total


def check(name: str, value: str) -> None:
    if CHECK_OK not in value:
        raise RuntimeError(f"{name}: the page did not end as the task wants: {value!r}")


@contextlib.contextmanager
def peers() -> Iterator[tuple[Path, list[str]]]:
    peer.ensure_installed()
    workdir = peer.write_config()
    sessions: list[str] = []
    try:
        yield workdir, sessions
    finally:
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)
        for session in sessions:
            subprocess.run([str(peer.AGENT_BROWSER), "--session", session, "close"],
                           env=peer.agent_browser_env(),
                           capture_output=True, timeout=60)


Run = tuple[list[Step], float, Callable[[], str]]  # steps, their seconds, the end state
Variant = Callable[[int], Run]


def variants(bsk: common.BskDaemon, url: str, workdir: Path, ab_sessions: list[str],
             scratch: Path, tag: str) -> dict[str, Variant]:
    """Each way of doing the task: given a round's number, its steps (what the agent ran
    and read) and how to read the page's end state. Only the steps are timed: a session,
    and a peer's browser, is started before them (`open about:blank`), as an agent's is
    by its second task."""
    def bsk_looking(sid: str, look: list[str]) -> Variant:
        def one(r: int) -> Run:
            run = bsk_runner(bsk, f"{sid}-{tag}-{r}")
            return *timed(lambda: task(run, url, look)), lambda: run("eval", CHECK_JS)
        return one

    def bsk_batch(*options: str) -> Variant:
        def one(r: int) -> Run:
            run = bsk_runner(bsk, f"tok-batch{len(options)}-{tag}-{r}")
            return (*timed(lambda: bsk_batch_task(run, url, *options)),
                    lambda: run("eval", CHECK_JS))
        return one

    pw = pw_runner(workdir)
    pw("open", "about:blank")

    def playwright(r: int) -> Run:
        return (*timed(lambda: task(pw, url, ["snapshot"])),
                lambda: pw("eval", f"() => {CHECK_JS}"))

    def ab_session() -> tuple[str, Callable[..., str]]:
        session = f"bskfx{tag}{len(ab_sessions)}"
        ab_sessions.append(session)
        ab = ab_runner(session)
        ab("open", "about:blank")  # its daemon and browser start here, untimed
        return session, ab

    def agent_browser(look: list[str]) -> Variant:
        def one(r: int) -> Run:
            _, ab = ab_session()
            return *timed(lambda: task(ab, url, look, "@")), lambda: ab("eval", CHECK_JS)
        return one

    def ab_baseline(r: int) -> Run:
        session, ab = ab_session()
        return (*timed(lambda: ab_baseline_task(session, url, scratch)),
                lambda: ab("eval", CHECK_JS))

    return {"bsk full": bsk_looking("tok-full", ["snapshot"]),
            "bsk effects+diff": bsk_looking("tok-diff", ["snapshot", "--diff"]),
            "bsk batch+diff": bsk_batch(),
            "bsk batch --settle 0 +diff": bsk_batch("--settle", "0"),
            f"playwright-cli {common.peer_version()}": playwright,
            "agent-browser snapshot": agent_browser(["snapshot"]),
            "agent-browser diff snapshot": agent_browser(["diff", "snapshot"]),
            "agent-browser diff --baseline": ab_baseline}


def timed(steps: Callable[[], list[Step]]) -> tuple[list[Step], float]:
    t0 = time.perf_counter()
    out = steps()
    return out, time.perf_counter() - t0


def token_task(bsk: common.BskDaemon, base: str, page: str, show: bool,
               rounds: int) -> dict[str, tuple[float, float]]:
    """Each way's tokens (the first round's steps, printed) and median wall seconds for
    the whole task, the ways alternated round by round."""
    print(f"\n(b) what an agent reads and waits for: open, read, then 5 steps each looked "
          f"at ({page}; {rounds} rounds alternated)")
    url = f"{base}/{page}"
    tag = f"{os.getpid()}{page[:5].replace('.', '')}"
    tokens: dict[str, float] = {}
    walls: dict[str, list[float]] = {}
    with peers() as (workdir, ab_sessions), tempfile.TemporaryDirectory() as scratch:
        ways = variants(bsk, url, workdir, ab_sessions, Path(scratch), tag)
        for r in range(rounds):
            for name, way in ways.items():
                steps, took, end_state = way(r)
                walls.setdefault(name, []).append(took)
                check(name, end_state())
                if r == 0:
                    tokens[name] = report(name, steps, show)
    print("\n  totals: tokens read, and the task's wall time (median of the rounds)")
    full = tokens["bsk full"]
    out = {name: (tokens[name], common.median(walls[name])) for name in ways}
    for name, (total, wall) in out.items():
        print(f"    {name:<34} {total:>8.0f} tokens  {total / full:5.2f} x bsk full"
              f"   {wall:6.2f} s  ({', '.join(f'{w:.2f}' for w in walls[name])})")
    return out


def main(show: bool = False, rounds: int = 30, only: str | None = None,
         task_rounds: int = 3) -> int:
    common.exit_on_sigterm()
    common.header("Effects, snapshot --diff and batch: latency and tokens")
    ok = True
    pages = {"/settles.html": SETTLED_PAGE, "/animates.html": ANIMATING_PAGE,
             "/dead.html": DEAD_PAGE,
             "/diff-big.html": BIG_PAGE}
    with common.fixture_sites(pages) as (base, _other), common.BskDaemon() as bsk:
        if only in (None, "a"):
            ok = settle_latency(bsk, base, rounds) and ok
        if only in (None, "b"):
            for page in ("diff.html", "diff-big.html"):
                totals = token_task(bsk, base, page, show, task_rounds)
                ok = common.verdict(f"{page}: bsk effects+diff tokens <= bsk full",
                                    totals["bsk effects+diff"][0], totals["bsk full"][0],
                                    unit="tokens") and ok
                peers_ = {n: v for n, v in totals.items() if not n.startswith("bsk")}
                for i, unit in ((0, "tokens"), (1, "s")):
                    best = min(peers_, key=lambda n: peers_[n][i])
                    ok = common.verdict(f"{page}: bsk batch+diff {unit} <= the best peer's "
                                        f"({best})", totals["bsk batch+diff"][i],
                                        peers_[best][i], unit=unit) and ok
    return 0 if ok else 1


def _arg(name: str, default: str | None) -> str | None:
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args else default


if __name__ == "__main__":
    common.run_main(main, "--show" in sys.argv[1:], int(_arg("--rounds", "30") or 30),
                    _arg("--only", None), int(_arg("--task-rounds", "3") or 3))
