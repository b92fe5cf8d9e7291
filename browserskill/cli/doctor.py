"""`bsk doctor`: what works, what doesn't, and the fix for each problem.

The browser check runs here too, so that it answers even when the daemon can't start.
"""

from __future__ import annotations

from typing import Any

from browserskill.base import paths
from browserskill.base.controls import route
from browserskill.base.errors import BskError


def run_doctor(client: Any) -> dict[str, Any]:
    from browserskill.browser import launcher

    checks: list[dict[str, Any]] = []
    home = paths.state_dir()
    try:
        paths.ensure_state_dir()
        checks.append({"check": "state_dir_writable", "ok": True, "detail": str(home)})
    except OSError as e:
        checks.append({"check": "state_dir_writable", "ok": False, "detail": f"{home}: {e}",
                       "fix": "set BSK_HOME to a writable directory"})
    try:
        _, _, report = client.call(*route("doctor"), timeout=30)
        checks.append({"check": "daemon", "ok": True,
                       "detail": f"reachable, pid {report['daemon']['pid']}"})
        checks.extend(report["checks"])
    except BskError as e:
        checks.append({"check": "daemon", "ok": False, "detail": e.message,
                       "fix": "read the log above; `bsk daemon start --foreground` shows errors"})
        checks.extend(_policy_file_check())
        exe = launcher.find_browser()
        version = launcher.browser_version(exe) if exe else None
        checks.append({"check": "browser", "ok": bool(version),
                       "detail": f"{exe}: {version}" if exe else "no browser found",
                       "fix": "" if version else launcher.INSTALL_HINT})
    return {"ok": all(c["ok"] for c in checks), "checks": checks}


def _policy_file_check() -> list[dict[str, Any]]:
    """With no daemon to ask: whether the policy file BSK_POLICY names can be used (a
    daemon started with one that can't is refused: docs/safety.md)."""
    import os

    path = os.environ.get("BSK_POLICY")
    if not path:
        return []
    from browserskill.base.catalog import tool_names
    from browserskill.base.policy import PolicyError, load

    try:
        load(path, tool_names())
    except PolicyError as e:
        return [{"check": "policy", "ok": False, "detail": str(e),
                 "fix": "fix the file BSK_POLICY names; the daemon does not start with it"}]
    return [{"check": "policy", "ok": True, "detail": f"{path} (BSK_POLICY) can be used"}]
