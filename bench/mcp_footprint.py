"""MCP footprint: what a client pays before its first call — the `tools/list` answer.

Starts each server on stdio, sends `initialize` and `tools/list`, and counts the tools
and the characters of the result as JSON (`json.dumps`, Python's default separators; ~4
characters a token): `bsk mcp` with its default (core) tools and with `--caps all`,
Playwright MCP (npm @playwright/mcp) and agent-browser's MCP server (npm agent-browser),
both pinned in bench/package.json, in one run. Listing tools starts no browser.
Targets: `bsk mcp`'s default list <= 21,000 characters and smaller than Playwright MCP's.

    .venv/bin/python bench/mcp_footprint.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import common
import playwright_peer as peer

PLAYWRIGHT_MCP = peer.BENCH_DIR / "node_modules" / "@playwright" / "mcp" / "cli.js"
TARGET_CHARS = 21_000


def tools_list(argv: list[str], env: dict[str, str], timeout: float = 60.0) -> dict[str, Any]:
    """The `tools/list` result of the stdio MCP server `argv`."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}
    messages = [hello, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(messages[0]) + "\n")
        proc.stdin.flush()
        sent_rest = False
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a server's stray log line
            if message.get("id") == 1 and not sent_rest:
                proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages[1:]))
                proc.stdin.flush()
                sent_rest = True
            elif message.get("id") == 2:
                if "result" not in message:
                    raise RuntimeError(f"{argv[0]}: tools/list failed: {message}")
                return message["result"]
        raise RuntimeError(f"{' '.join(argv)}: ended without answering tools/list")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    common.exit_on_sigterm()
    common.header("MCP footprint: tools/list of each server")
    peer.ensure_installed()
    node = shutil.which("node") or "node"
    home = tempfile.mkdtemp(prefix="bsk-mcp-bench-")
    bsk_env = {**os.environ, "BSK_HOME": home}
    peer_env = peer.agent_browser_env()
    servers = {
        "bsk mcp": ([str(common.BSK), "mcp"], bsk_env),
        "bsk mcp --caps all": ([str(common.BSK), "mcp", "--caps", "all"], bsk_env),
        "Playwright MCP": ([node, str(PLAYWRIGHT_MCP), "--headless", "--executable-path",
                            peer.DEFAULT_CHROMIUM], peer_env),
        "agent-browser mcp": ([str(peer.AGENT_BROWSER), "mcp"], peer_env),
    }
    sizes: dict[str, int] = {}
    try:
        print(f"   {'server':<22} {'tools':>5} {'characters':>11} {'~tokens':>8}")
        for name, (argv, env) in servers.items():
            if not Path(argv[1] if argv[0] == node else argv[0]).exists():
                print(f"   {name:<22} not installed (npm install in bench/)")
                continue
            result = tools_list(argv, env)
            chars = len(json.dumps(result))
            sizes[name] = chars
            print(f"   {name:<22} {len(result['tools']):>5} {chars:>11,} {chars // 4:>8,}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    ok = common.verdict("bsk mcp default tools/list", sizes["bsk mcp"], TARGET_CHARS,
                        unit="chars")
    if "Playwright MCP" in sizes:
        ok = common.verdict("bsk mcp default vs Playwright MCP", sizes["bsk mcp"],
                            sizes["Playwright MCP"], unit="chars") and ok
    return 0 if ok else 1


if __name__ == "__main__":
    common.run_main(main)
