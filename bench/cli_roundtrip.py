"""CLI round trip: wall time from process start to exit of `eval 1+1` on a warm daemon.

`bsk eval 1+1` (the venv's console script) next to `playwright-cli eval 1+1` (the official
launcher, same Chromium), both on an open local page, alternated in one run so machine
noise hits both. Targets: bsk median <= 80 ms and <= 1/8 of playwright-cli's.

    .venv/bin/python bench/cli_roundtrip.py [N_BSK] [N_PEER]
"""

from __future__ import annotations

import shutil
import sys

import common
import playwright_peer as peer

N_BSK, N_PEER, WARMUP = 30, 15, 3


def main(n_bsk: int = N_BSK, n_peer: int = N_PEER) -> int:
    common.exit_on_sigterm()
    common.header("CLI round trip: `eval 1+1` on a warm daemon and page")
    peer_argv = peer.ensure_installed()
    workdir = peer.write_config()
    try:
        with common.page_server() as url, common.BskDaemon() as bsk:
            bsk.run("open", url)
            opened = peer.run(["open", url], workdir)
            if opened.returncode != 0:
                raise RuntimeError(f"playwright-cli open failed:\n{opened.stdout}{opened.stderr}")

            def bsk_once() -> float:
                ms, cp = common.timed_ms(bsk.argv("eval", "1+1"), env=bsk.env)
                if cp.returncode != 0 or cp.stdout.strip() != "2":
                    raise RuntimeError(f"bsk eval: rc={cp.returncode} {cp.stdout}{cp.stderr}")
                return ms

            def peer_once() -> float:
                ms, cp = common.timed_ms([*peer_argv, "eval", "1+1"], cwd=workdir,
                                         env=peer._env())
                if cp.returncode != 0 or "### Result\n2\n" not in cp.stdout:
                    raise RuntimeError(f"playwright-cli eval: rc={cp.returncode} {cp.stdout}")
                return ms

            for _ in range(WARMUP):
                bsk_once()
                peer_once()
            bsk_ms: list[float] = []
            peer_ms: list[float] = []
            every = max(1, n_bsk // n_peer)  # one peer run after every `every` bsk runs
            for i in range(n_bsk):
                bsk_ms.append(bsk_once())
                if (i + 1) % every == 0 and len(peer_ms) < n_peer:
                    peer_ms.append(peer_once())
            while len(peer_ms) < n_peer:
                peer_ms.append(peer_once())
    finally:
        peer.close_all()
        shutil.rmtree(workdir, ignore_errors=True)

    print(common.describe("bsk eval 1+1", bsk_ms))
    print(common.describe(f"playwright-cli {common.peer_version()} eval 1+1", peer_ms))
    ratio = common.median(peer_ms) / common.median(bsk_ms)
    print(f"  playwright-cli / bsk (medians): {ratio:.1f}x")
    ok = common.verdict("bsk median", common.median(bsk_ms), 80)
    ok &= common.verdict("bsk median vs playwright-cli/8", common.median(bsk_ms),
                         common.median(peer_ms) / 8)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
