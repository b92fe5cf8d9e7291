"""Run every benchmark in turn (each in its own process, each cleaning up after itself).

    .venv/bin/python bench/run_all.py

Exit status: 0 when every target passed, 1 when one missed, 2 when one could not run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
SCRIPTS = ("cli_roundtrip.py", "daemon_overhead.py", "memory.py", "snapshot.py", "webmcp.py",
           "extension_relay.py", "interruption.py", "sessions.py",
           "keeper.py", "async_client.py", "actions.py", "network.py", "dashboard.py",
           "video.py")


def main() -> int:
    worst = 0
    summary = []
    for script in SCRIPTS:
        code = subprocess.run([sys.executable, str(BENCH_DIR / script)]).returncode
        verdict = {0: "all targets met", 1: "a target missed"}.get(code, f"error (exit {code})")
        summary.append(f"  {script:<20} {verdict}")
        worst = max(worst, min(code, 2))
        print(flush=True)
    print("== summary")
    print("\n".join(summary))
    return worst


if __name__ == "__main__":
    sys.exit(main())
