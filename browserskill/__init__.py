"""BrowserSkill: a real browser for AI agents, with honest outcomes.

This module stays import-light: the `bsk` CLI imports it once per agent action. The
Python client (`from browserskill import Client, AsyncClient`) is loaded on first use.
"""

__version__ = "0.1.0"

_LAZY = ("Client", "AsyncClient", "BrowserSkillError", "Result")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from browserskill import client

        return getattr(client, name)
    raise AttributeError(f"module 'browserskill' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
