"""Memory: peak RSS of one CLI call, and the daemon's RSS with 10 idle sessions.

  * peak RSS of `bsk eval 1+1` (warm daemon and page) next to `playwright-cli eval 1+1`
    in the same run; target bsk <= 25 MiB;
  * VmRSS of the daemon process alone (the browser is another process, not counted)
    after `bsk session start` x10 on a fresh daemon; target <= 100 MiB.

    .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import shutil
import statistics

import common
import playwright_peer as peer

RUNS, SESSIONS = 5, 10
MIB = 1024


def cli_peaks(url: str) -> tuple[list[int], list[int], str]:
    """Peak RSS (KB) of RUNS calls each of bsk and playwright-cli, alternating."""
    workdir = peer.write_config()
    try:
        with common.BskDaemon() as bsk:
            bsk.run("open", url)
            if peer.run(["open", url], workdir).returncode != 0:
                raise RuntimeError("playwright-cli open failed")
            bsk.run("eval", "1+1")  # warm the byte-code cache
            ours, theirs, how = [], [], ""
            for _ in range(RUNS):
                kb, how = common.peak_rss_kb(bsk.argv("eval", "1+1"), bsk.env)
                ours.append(kb)
                theirs.append(peer.peak_rss_kb(["eval", "1+1"], workdir)[0])
            return ours, theirs, how
    finally:
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)


def daemon_rss() -> tuple[int, int, int, int]:
    """Daemon VmRSS (KB) before and after SESSIONS sessions, its VmHWM, browser tree Pss."""
    with common.BskDaemon() as bsk:
        assert bsk.pid is not None
        before = common.rss_kb(bsk.pid)
        for i in range(SESSIONS):
            bsk.run("session", "start", f"idle{i}")
        after = common.rss_kb(bsk.pid)
        hwm = common.rss_kb(bsk.pid, "VmHWM")
        browser_pid = bsk.json("status")["browser"]["pid"]
        return before, after, hwm, peer.tree_pss_kb(int(browser_pid))


def main() -> int:
    common.exit_on_sigterm()
    common.header("Memory: one CLI call, and the daemon with 10 idle sessions")
    with common.page_server() as url:
        ours, theirs, how = cli_peaks(url)
    before, after, hwm, browser = daemon_rss()
    med_ours, med_theirs = statistics.median(ours), statistics.median(theirs)
    print(f"peak RSS, one `eval 1+1` call ({how}, median of {RUNS}):")
    print(f"  bsk                       {med_ours / MIB:6.1f} MiB  (max {max(ours) / MIB:.1f})")
    print(f"  playwright-cli {common.peer_version():<10} {med_theirs / MIB:6.1f} MiB  "
          f"(max {max(theirs) / MIB:.1f})   ratio {med_theirs / med_ours:.1f}x")
    ok = common.verdict("bsk peak RSS", med_ours / MIB, 25, "MiB")
    print(f"daemon VmRSS (browser excluded): {before / MIB:.1f} MiB at start, "
          f"{after / MIB:.1f} MiB with {SESSIONS} idle sessions (VmHWM {hwm / MIB:.1f} MiB)")
    print(f"  (for reference: Chromium process tree Pss {browser / MIB:.0f} MiB)")
    ok &= common.verdict(f"daemon RSS with {SESSIONS} sessions", after / MIB, 100, "MiB")
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main)
