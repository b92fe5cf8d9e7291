"""Which page field takes a secret, and what a tool does once it knows (docs/outcomes.md,
"Passwords").

Invariant: text typed into a password field is shown and stored nowhere — the journal,
`op show`/`op list`, the dashboard and the tool's own answer read `contract.SECRET_MASK`,
and a recording writes `${BSK_SECRET_N}` (tools/recording.py). The rule of what is a
password field lives here once (`IS_SECRET_FIELD`, in the page) and so does what a tool
does with the answer (`settle`).
"""

from __future__ import annotations

from typing import Any

from browserskill.contract import SECRET_MASK
from browserskill.tools.context import ToolContext

# A JavaScript function of an element: does it take a secret?
IS_SECRET_FIELD = '((el) => el.localName === "input" && el.type === "password")'


def settle(ctx: ToolContext, secret: bool) -> None:
    """The target is known: mask the call's maybe-secret params for good, or show them."""
    if secret:
        ctx.op.conceal()
    else:
        ctx.op.reveal()


def masked(result: dict[str, Any], secret: bool, *fields: str) -> dict[str, Any]:
    """A tool's answer with the fields that echo a secret masked."""
    if secret:
        result.update({f: SECRET_MASK for f in fields if f in result})
    return result
