"""BrowserSkill: a real browser for AI agents, with honest outcomes.

This module stays import-light: the `bsk` CLI imports it once per agent action.
"""

__version__ = "0.1.0"
