#!/usr/bin/env bash
# Set up (if needed), then drive a headless Chromium the way an agent does.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export PATH="$PWD/.venv/bin:$PATH"
# A private state dir, so the demo never touches your own sessions.
export BSK_HOME="${BSK_HOME:-$(mktemp -d /tmp/bsk-demo.XXXXXX)}"
export BSK_SESSION=demo
page="file://$PWD/examples/demo.html"
trap 'bsk daemon stop >/dev/null 2>&1 || true' EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
step bsk session start demo --label "README demo"
step bsk open "$page"
step bsk snapshot
ref=$(bsk --json snapshot | .venv/bin/python -c '
import json, sys
text = json.load(sys.stdin)["result"]["snapshot"]
print(next(l.split("[ref=")[1].rstrip("]") for l in text.splitlines() if "button" in l))')
step bsk click "$ref"
step bsk eval 'document.querySelector("#status").textContent'
step bsk screenshot "$BSK_HOME/demo.png"
step bsk --json eval 'Promise.resolve(6 * 7)'
step bsk op list
step bsk session stop
printf '\nDone. The screenshot is at %s\n' "$BSK_HOME/demo.png"
