"""BrowserSkill: a real browser for AI agents, with honest outcomes.

This module stays import-light: the `bsk` CLI imports it once per agent action. The
Python client (`from browserskill import Client, AsyncClient`) is loaded on first use.
"""

__version__ = "0.1.0"

_LAZY = ("Client", "AsyncClient", "BrowserSkillError", "Result")

TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ hands out, as type checkers must see it
    from browserskill.client import AsyncClient as AsyncClient
    from browserskill.client import BrowserSkillError as BrowserSkillError
    from browserskill.client import Client as Client
    from browserskill.client import Result as Result
    from browserskill.client.generated import *  # noqa: F403


def __getattr__(name: str) -> object:
    # The client's exception classes too (one per error code: SessionBusyError, …).
    if name in _LAZY or name.endswith("Error"):
        from browserskill import client

        if name in client.__all__:
            return getattr(client, name)
    raise AttributeError(f"module 'browserskill' has no attribute {name!r}")


def __dir__() -> list[str]:
    from browserskill import client

    return sorted({*globals(), *_LAZY, *(n for n in client.__all__ if n.endswith("Error"))})
