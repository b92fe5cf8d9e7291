"""The policy's verdict on one operation, as the dispatcher asks it (the definition is in
browserskill/tools/policy_check.py, where a locator's element is judged too once bound)."""

from __future__ import annotations

from browserskill.tools.policy_check import TARGET_PARAMS, denied, verdict_for

__all__ = ["TARGET_PARAMS", "denied", "verdict_for"]
