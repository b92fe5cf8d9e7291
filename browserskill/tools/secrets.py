"""Which page field takes a secret, and what a tool does once it knows (docs/outcomes.md,
"Passwords").

Invariant: text typed into a password field is shown and stored nowhere — the journal,
`op show`/`op list`, the dashboard and the tool's own answer read `contract.SECRET_MASK`,
and a recording writes `${BSK_SECRET_N}` (tools/recording.py). The rule of what is a
password field lives here once (`IS_SECRET_FIELD`, in the page) and so does what a tool
does with the answer (`settle`).

A stored secret (`--secret NAME`, browserskill/base/vault.py) goes further: its value is never
in the call's params at all, only its name; `wanted` reads it from the vault in the
daemon and `check_origin` refuses it, before anything is sent, on a frame of an origin it
is not bound to (docs/safety.md, "Secrets").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from browserskill.base import vault
from browserskill.base.contract import SECRET_MASK
from browserskill.base.errors import invalid
from browserskill.tools.context import ToolContext

# A JavaScript function of an element: does it take a secret?
IS_SECRET_FIELD = '((el) => el.localName === "input" && el.type === "password")'

# A JavaScript function of the field a stored secret goes into: the browser's form
# history (autocomplete) saves a submitted text field's value in its profile unless the
# field says autocomplete=off (docs/safety.md, "Secrets").
NO_AUTOCOMPLETE = '((el) => el.setAttribute && el.setAttribute("autocomplete", "off"))'


def settle(ctx: ToolContext, secret: bool) -> None:
    """The target is known: mask the call's maybe-secret params for good, or show them."""
    ctx.params_secret(secret)


def masked(result: dict[str, Any], secret: bool, *fields: str) -> dict[str, Any]:
    """A tool's answer with the fields that echo a secret masked."""
    if secret:
        result.update({f: SECRET_MASK for f in fields if f in result})
    return result


class Stored:
    """A stored secret a call names: its name, value and the origins it may be used on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.value, self.origins = vault.lookup(name)

    def check_origin(self, origin: str | None) -> None:
        """Refuse (nothing sent) unless the field's own frame is of one of its origins."""
        if origin is None or origin not in self.origins:
            raise vault.mismatch(self.name, origin or "a frame of another site",
                                 self.origins)


def wanted(ctx: ToolContext, params: Mapping[str, Any]) -> tuple[str, Stored | None]:
    """The text a fill or type enters: TEXT, or a stored secret's value (read here, in the
    daemon; the call's params name it only, so they are shown as given)."""
    text, name = params.get("text"), params.get("secret")
    if (text is None) == (name is None):
        raise invalid("text", "give TEXT or --secret NAME (one of them)")
    if name is None:
        return str(text), None
    stored = Stored(name)
    ctx.params_secret(False)
    return stored.value, stored
