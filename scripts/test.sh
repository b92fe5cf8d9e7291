#!/usr/bin/env bash
# Set up (if needed), then run the whole test suite against a real headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/ruff check browserskill tests bench
.venv/bin/mypy    # files and strictness: [tool.mypy] in pyproject.toml
node --test extension/test/    # the extension's own unit tests (plain JS, no build step)
exec .venv/bin/python -m pytest -q "$@"
