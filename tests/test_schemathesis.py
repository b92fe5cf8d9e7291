"""The OpenAPI document says what the server does: a bounded schemathesis run against the
document a real daemon serves finds no server error and no answer the document does not
describe (status, headers, content type, body schema), and no schema-valid request is
refused.

The daemon is reached on its loopback TCP listener (schemathesis speaks TCP), with its
bearer token. Two runs, so that no tool call can ever land in a session the fuzzer
made: first every endpoint but session creation (tool calls then go to sessions that
don't exist, and are refused before anything reaches a page), then session creation and
listing (`POST /v1/sessions` with generated bodies). `POST /v1/daemon/stop` ends the
daemon it is sent to, so it runs last, against a daemon of its own: the other runs never
lose theirs.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli import Bsk, daemon_pid
from support.wait import wait_until

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = "14"  # a fixed seed: the same cases every run


def schemathesis(base: str, token: str, cwd: Path, *options: str) -> tuple[int, str]:
    proc = subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(CONFIG), "run", f"{base}/v1/openapi.json",
         "--url", base,
         "--header", f"Authorization: Bearer {token}", "--seed", SEED, "--workers", "1",
         "--phases", "fuzzing", *options],
        cwd=cwd, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.skipif(not SCHEMATHESIS.exists(), reason="schemathesis is not installed "
                    "(pip install -e '.[test]')")
def test_the_served_document_matches_the_server(make_bsk: Callable[..., Bsk],
                                                tmp_path: Path) -> None:
    runner = make_bsk(BSK_TCP_PORT="0")
    info = runner.ok("daemon", "start")
    base = info.get("tcp") or runner.ok("status")["tcp"]
    assert base and base.startswith("http://127.0.0.1:"), info
    token = (runner.home / "token").read_text().strip()

    code, report = schemathesis(base, token, tmp_path, "--max-examples", "7",
                                "--exclude-path", "/v1/sessions",
                                "--exclude-path", "/v1/daemon/stop")
    assert code == 0, report[-6000:]
    assert " passed" in report and "generated" in report, report[-2000:]

    # Session creation: whether a `state` file exists and is a storageState can't be said
    # in a schema, so a schema-valid body may rightly be refused there (400 naming
    # `state`); every other check still holds.
    code, report = schemathesis(base, token, tmp_path, "--max-examples", "25",
                                "--include-path", "/v1/sessions",
                                "--exclude-checks", "positive_data_acceptance")
    assert code == 0, report[-6000:]
    log = (runner.home / "daemon.log").read_text()
    assert "Traceback" not in log, log[-4000:]


@pytest.mark.skipif(not SCHEMATHESIS.exists(), reason="schemathesis is not installed "
                    "(pip install -e '.[test]')")
def test_the_daemon_stop_route_matches_its_document(make_bsk: Callable[..., Bsk],
                                                    tmp_path: Path) -> None:
    """The one case a daemon can answer on this route: the answer as documented, and the
    daemon then gone, cleanly."""
    runner = make_bsk(BSK_TCP_PORT="0")
    base = runner.ok("daemon", "start")["tcp"]
    token = (runner.home / "token").read_text().strip()
    code, report = schemathesis(base, token, tmp_path, "--max-examples", "1",
                                "--include-path", "/v1/daemon/stop")
    assert code == 0, report[-6000:]
    assert "1 generated, 1 passed" in report, report[-2000:]
    wait_until(lambda: daemon_pid(runner.home) is None, 30, "the daemon to stop")
    log = (runner.home / "daemon.log").read_text()
    assert "stopping: stopped by request" in log and "Traceback" not in log, log[-4000:]
