"""Snapshot size and time on three pages and nine web-app pages, and click/fill round trip,
bsk vs playwright-cli.

Pages (tests/pages served on 127.0.0.1, a second server addressed as `localhost` for the
cross-origin frames): the login form (login.html), the 5,000-row table (big-table.html),
and NESTED below: iframes two levels deep, 7 documents, 4 of them cross-origin
(level 1: frames.html and, cross-origin, form-frames.html; level 2: their inner.html /
login.html frames, same- and cross-origin).

For each page, alternated in one run on a warm daemon and a warm playwright-cli session
(both on /usr/bin/chromium):
  * `bsk snapshot`, `bsk snapshot --interactive`: wall time, process start to exit, and
    what the command printed; the operation's own time (result started_at → ended_at)
    comes from the same tool called over the HTTP API (the CLI's --json would add the
    structured tree, i.e. another operation);
  * `playwright-cli snapshot` (it prints the tree inline): wall time and output.
Then the same on the issue-13 pages (tests/pages/reach_*.html: an inbox of clickable div
rows with icon spans, a tree of spans, a date picker with <a> without href, a sortable
list, a custom slider, a canvas app, a dialog-opening div and a disabled button, a long
textarea and other fidelity cases, an iframe checkout), where `--interactive` must also
give refs to the elements listed in REACH.
Size = characters printed (stdout + stderr: what an agent reads), tokens = chars / 4;
"tree" = the tree alone (bsk: result.snapshot; playwright-cli: its yaml block).
Then `click` (the Log in button) and `fill` (Username) round trips on the login page,
refs parsed from each tool's own snapshot.

Targets: bsk snapshot chars <= playwright-cli's on each page (reach pages too);
--interactive <= half of playwright-cli's on the table page; table snapshot <= 250 ms
(operation time and CLI wall, medians); click round trip median <= 1/5 of playwright-cli's.

    .venv/bin/python bench/snapshot.py [N_BSK] [N_PEER]     # defaults 10 5 (round trips x2)
    .venv/bin/python bench/snapshot.py --reach [N_BSK] [N_PEER]   # only the reach pages
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import common
import playwright_peer as peer
from tokens import ref_of

N_BSK, N_PEER, WARMUP = 10, 5, 2
TABLE_TARGET_MS = 250

NESTED = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Nested frames</title></head>
<body>
<h1>Nested frames</h1>
<iframe id="l1-same" title="level 1 same origin" width="460" height="360"></iframe>
<iframe id="l1-cross" title="level 1 cross origin" width="560" height="600"></iframe>
<script>
  // ?cross=PORT: the second server ("localhost"). Level 1: frames.html (same origin) and
  // form-frames.html from the other site; each nests a same- and a cross-origin frame.
  const here = location.port, cross = new URLSearchParams(location.search).get("cross");
  document.getElementById("l1-same").src = `frames.html?cross=${cross}`;
  document.getElementById("l1-cross").src =
    `http://localhost:${cross}/form-frames.html?cross=${here}`;
</script>
</body></html>
"""


@dataclass
class Page:
    name: str
    path: str
    must: dict[str, int]  # text -> how often a full snapshot must show it (all frames in)
    bsk_refs: tuple[str, ...] = ()  # nodes bsk's --interactive must give refs (reach pages)


PAGES = [
    Page("login", "login.html", {'textbox "Username"': 1, 'button "Log in"': 1}),
    Page("table", "big-table.html", {'cell "5000"': 1, 'button "Export"': 1}),
    Page("nested", "nested.html?cross={cross}",
         {'button "Inner button"': 2, 'textbox "Username"': 2}),
]
# Issue 13: pages built like web apps, where most of what to act on is not a control.
REACH = [
    Page("inbox", "reach_inbox.html", {"Quarterly report": 1},
         ('clickable "Star"', 'clickable "Delete"', 'clickable "☆ Bob Quarterly report 🗑"')),
    Page("tree", "reach_tree.html", {"Notes.txt": 1}, ('clickable "Documents"',)),
    Page("datepicker", "reach_datepicker.html", {"March 2026": 1},
         ('link "\u2039"', 'link "\u203a"', 'clickable "15"')),
    Page("sortable", "reach_sortable.html", {"Cheese": 2}, ('listitem "Cheese" [draggable]',)),
    Page("slider", "reach_slider.html", {"Volume": 1}, ('slider "Volume"',)),
    Page("canvas", "reach_canvas.html", {"Sketch": 1}, ('canvas "Drawing pad"',)),
    Page("dialog", "reach_dialog.html", {"New project": 1},
         ('clickable "+ New project"', 'button "Delete project" [disabled]')),
    Page("fidelity", "reach_fidelity.html", {"THE-END": 1}, ('textbox "Essay"',)),
    Page("checkout", "reach_checkout.html", {'button "Pay"': 1}, ('button "Pay"',)),
]


@dataclass
class Series:
    """One command's samples on one page."""

    wall: list[float] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    tree: list[int] = field(default_factory=list)
    op: list[float] = field(default_factory=list)  # operation time (bsk, via the API)
    api: list[float] = field(default_factory=list)  # HTTP round trip of that call


def yaml_block(out: str) -> str:
    match = re.search(r"```yaml\n(.*?)```", out, re.S)
    if not match:
        raise RuntimeError(f"no yaml snapshot in playwright-cli's output:\n{out[:2000]}")
    return match.group(1)


def check(page: Page, who: str, out: str) -> None:
    for text, count in page.must.items():
        if out.count(text) < count:
            raise RuntimeError(f"{who} on {page.name}: {text!r} x{out.count(text)}, "
                               f"expected {count} (frames not in?):\n{out[:3000]}")


def check_refs(page: Page, out: str) -> None:
    for node in page.bsk_refs:
        if not re.search(re.escape(node) + r"[^\n]*\[ref=", out):
            raise RuntimeError(f"bsk snapshot --interactive on {page.name}: no ref for "
                               f"{node}:\n{out[:3000]}")


def measure_page(page: Page, url: str, bsk: common.BskDaemon, workdir: Path,
                 peer_argv: list[str], n_bsk: int, n_peer: int) -> dict[str, Series]:
    bsk.run("open", url)
    opened = peer.run(["goto", url], workdir)
    if opened.returncode != 0:
        raise RuntimeError(f"playwright-cli goto failed:\n{opened.stdout}{opened.stderr}")
    runs = {"full": Series(), "interactive": Series(), "peer": Series()}

    def bsk_cli(kind: str) -> None:
        args = ("snapshot", "--interactive") if kind == "interactive" else ("snapshot",)
        wall, _, cp = common.timed_ms(bsk.argv(*args), env=bsk.env)
        if cp.returncode != 0:
            raise RuntimeError(f"bsk {' '.join(args)}: rc={cp.returncode}\n{cp.stdout}{cp.stderr}")
        if kind == "full":
            check(page, "bsk snapshot", cp.stdout)
        else:
            check_refs(page, cp.stdout)
        runs[kind].wall.append(wall)
        runs[kind].chars.append(len(cp.stdout) + len(cp.stderr))

    def bsk_api(kind: str) -> None:
        body = {"interactive": True} if kind == "interactive" else {}
        status, _, answer, wall = common.api(bsk.socket, "POST",
                                             "/v1/sessions/default/tools/snapshot", body)
        if status != 200 or answer["status"] != "completed":
            raise RuntimeError(f"POST tools/snapshot {body}: {status} {answer}")
        runs[kind].op.append(common.op_ms(answer))
        runs[kind].api.append(wall)
        runs[kind].tree.append(len(answer["result"]["snapshot"]))

    def peer_cli() -> None:
        wall, _, cp = common.timed_ms([*peer_argv, "snapshot"], cwd=workdir, env=peer._env())
        if cp.returncode != 0:
            raise RuntimeError(f"playwright-cli snapshot: rc={cp.returncode}\n{cp.stdout}")
        check(page, "playwright-cli snapshot", cp.stdout)
        runs["peer"].wall.append(wall)
        runs["peer"].chars.append(len(cp.stdout) + len(cp.stderr))
        runs["peer"].tree.append(len(yaml_block(cp.stdout)))

    steps: list[Callable[[], None]] = [
        lambda: bsk_cli("full"), lambda: bsk_api("full"),
        lambda: bsk_cli("interactive"), lambda: bsk_api("interactive")]
    for _ in range(WARMUP):
        for step in [*steps, peer_cli]:
            step()
    for kind in runs:  # warm-up samples out
        runs[kind] = Series()
    every = max(1, n_bsk // n_peer)
    for i in range(n_bsk):
        for step in steps:
            step()
        if (i + 1) % every == 0 and len(runs["peer"].wall) < n_peer:
            peer_cli()
    while len(runs["peer"].wall) < n_peer:
        peer_cli()
    return runs


def print_page(page: Page, runs: dict[str, Series]) -> None:
    names = {"full": "bsk snapshot", "interactive": "bsk snapshot --interactive",
             "peer": f"playwright-cli {common.peer_version()} snapshot"}
    print(f"\n{page.name} (tests/pages/{page.path.split('?')[0]}"
          f"{', bench page' if page.name == 'nested' else ''}):")
    print(f"  {'command':<34} {'chars':>7} {'tokens':>8} {'tree':>7}  "
          f"{'CLI wall med/p90 ms':>20}  {'op med/p90 ms':>14}  {'API med ms':>10}")
    for kind, name in names.items():
        s = runs[kind]
        chars = common.median([float(c) for c in s.chars])
        tree = common.median([float(c) for c in s.tree])
        op = f"{common.median(s.op):.0f}/{common.p90(s.op):.0f}" if s.op else "—"
        api = f"{common.median(s.api):.0f}" if s.api else "—"
        print(f"  {name:<34} {chars:>7.0f} {chars / 4:>8.0f} {tree:>7.0f}  "
              f"{common.median(s.wall):>11.0f}/{common.p90(s.wall):<8.0f}  {op:>14}  {api:>10}"
              f"   (n={len(s.wall)})")


def round_trips(url: str, bsk: common.BskDaemon, workdir: Path, peer_argv: list[str],
                n_bsk: int, n_peer: int) -> dict[str, list[float]]:
    """click and fill, process start to exit, alternated; refs from each tool's snapshot."""
    bsk.run("open", url)
    snap = bsk.run("snapshot", "--interactive").stdout
    ours = {"fill": ref_of(snap, "textbox", "Username"), "click": ref_of(snap, "button", "Log in")}
    bsk.run("fill", ref_of(snap, "textbox", "Password"), "pw")  # so a submit says Welcome
    if peer.run(["goto", url], workdir).returncode != 0:
        raise RuntimeError("playwright-cli goto failed")
    snap = peer.run(["snapshot"], workdir).stdout
    theirs = {"fill": ref_of(snap, "textbox", "Username"),
              "click": ref_of(snap, "button", "Log in")}
    peer.run(["fill", ref_of(snap, "textbox", "Password"), "pw"], workdir).check_returncode()
    times: dict[str, list[float]] = {k: [] for k in
                                     ("bsk click", "bsk fill", "peer click", "peer fill")}

    def once(who: str, action: str, record: bool = True) -> None:
        extra = ["alice"] if action == "fill" else []
        if who == "bsk":
            argv, cwd, env = bsk.argv(action, ours[action], *extra), None, bsk.env
        else:
            argv, cwd, env = [*peer_argv, action, theirs[action], *extra], workdir, peer._env()
        wall, _, cp = common.timed_ms(argv, cwd=cwd, env=env)
        if cp.returncode != 0:
            raise RuntimeError(f"{who} {action}: rc={cp.returncode}\n{cp.stdout}{cp.stderr}")
        if record:
            times[f"{who} {action}"].append(wall)

    for _ in range(WARMUP):
        for who in ("bsk", "peer"):
            for action in ("fill", "click"):
                once(who, action, record=False)
    every = max(1, n_bsk // n_peer)
    for i in range(n_bsk):
        once("bsk", "fill")
        once("bsk", "click")
        if (i + 1) % every == 0 and len(times["peer click"]) < n_peer:
            once("peer", "fill")
            once("peer", "click")
    while len(times["peer click"]) < n_peer:
        once("peer", "fill")
        once("peer", "click")
    result = "document.getElementById('result').textContent"
    for who, out in (("bsk", bsk.run("eval", result).stdout),
                     ("playwright-cli", peer.run(["eval", result], workdir).stdout)):
        if "Welcome, alice" not in out:
            raise RuntimeError(f"{who}'s fill + click did not log in: {out!r}")
    return times


def main(n_bsk: int = N_BSK, n_peer: int = N_PEER, only: str = "") -> int:
    common.exit_on_sigterm()
    common.header("Snapshot size and time on three pages and the reach pages; click/fill "
                  "round trip" if only != "reach" else "Snapshot size on the reach pages")
    print("   size = characters printed (stdout + stderr); tokens = chars / 4 (estimate, no "
          "tokenizer)")
    print("   CLI wall = process start to exit; op = the operation's started_at → ended_at "
          "(same tool via the HTTP API); API = that HTTP call's round trip")
    peer_argv = peer.ensure_installed()
    workdir = peer.write_config()
    results: dict[str, dict[str, Series]] = {}
    try:
        with common.fixture_sites({"/nested.html": NESTED}) as (site, cross), \
                common.BskDaemon() as bsk:
            first = peer.run(["open", f"{site}/login.html"], workdir)
            if first.returncode != 0:
                raise RuntimeError(f"playwright-cli open failed:\n{first.stdout}{first.stderr}")
            cross_port = cross.rsplit(":", 1)[1]
            pages = REACH if only == "reach" else PAGES + REACH
            for page in pages:
                url = f"{site}/{page.path.format(cross=cross_port)}"
                results[page.name] = measure_page(page, url, bsk, workdir, peer_argv,
                                                  n_bsk, n_peer)
                print_page(page, results[page.name])
            rt = (round_trips(f"{site}/login.html", bsk, workdir, peer_argv, 2 * n_bsk,
                              2 * n_peer) if only != "reach" else {})
    finally:
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)

    if rt:
        print("\nround trip on login.html, process start to exit:")
        for name, xs in rt.items():
            label = name.replace("peer", f"playwright-cli {common.peer_version()}")
            print("  " + common.describe(label, xs))
        for action in ("click", "fill"):
            ratio = common.median(rt[f"peer {action}"]) / common.median(rt[f"bsk {action}"])
            print(f"  playwright-cli / bsk, {action} wall medians: {ratio:.1f}x")

    def med(page: str, kind: str, what: str = "chars") -> float:
        return common.median([float(x) for x in getattr(results[page][kind], what)])

    print("\nratios (printed chars): bsk snapshot / playwright-cli, "
          "bsk --interactive / playwright-cli")
    for page in pages:
        print(f"  {page.name:<10} {med(page.name, 'full') / med(page.name, 'peer'):.3f}   "
              f"{med(page.name, 'interactive') / med(page.name, 'peer'):.3f}")
    print()
    ok = True
    for page in pages:
        ok &= common.verdict(f"{page.name}: bsk snapshot chars <= playwright-cli's",
                             med(page.name, "full"), med(page.name, "peer"), unit="chars")
    if only == "reach":
        return 0 if ok else 1
    ok &= common.verdict("table: --interactive chars <= playwright-cli's / 2",
                         med("table", "interactive"), med("table", "peer") / 2, unit="chars")
    for kind, flag in (("full", ""), ("interactive", " --interactive")):
        ok &= common.verdict(f"table: snapshot{flag} op time median",
                             med("table", kind, "op"), TABLE_TARGET_MS)
        ok &= common.verdict(f"table: bsk snapshot{flag} CLI wall median",
                             med("table", kind, "wall"), TABLE_TARGET_MS)
    ok &= common.verdict("bsk click median <= playwright-cli's / 5",
                         common.median(rt["bsk click"]), common.median(rt["peer click"]) / 5)
    return 0 if ok else 1


if __name__ == "__main__":
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()][:2]
    common.run_main(main, *numbers, *[N_BSK, N_PEER][len(numbers):],
                    "reach" if "--reach" in sys.argv else "")
