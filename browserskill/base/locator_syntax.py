"""A locator's syntax (`css=…`, `text=…`, `text="…"` (the whole text, exactly, as
Playwright reads it), `role=ROLE[name="…"]`, chained with ` >> `),
read without a page: every surface's params are checked with it before an operation
exists (`catalog.validate`), so a malformed locator in line 5 of a `replay` or a `batch`
sends nothing; tools/locators.py resolves the parts in the page. Stdlib only.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

from browserskill.base.errors import BskError, Dispatched

KINDS = ("css=", "text=", "role=")
# ROLE, optionally [name="NAME"] or [name='NAME'] (backslash escapes inside the quotes),
# or [name=NAME] unquoted (no quote or `]` in it: a shell or `batch` line drops quotes)
_ROLE = re.compile(r"""^([A-Za-z][\w-]*)\s*(?:\[\s*name\s*=\s*
                       (?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^"'\]]*[^"'\]\s]))
                       \s*\])?$""", re.X)
SYNTAX = ('css=SELECTOR, text=TEXT or role=ROLE[name="NAME"], optionally chained into an '
          'iframe with " >> " (css=iframe#pay >> role=button[name="Pay"])')


class Part(namedtuple("Part", ["kind", "value", "name"], defaults=(None,))):
    """One link of a chain: kind css | text | text_exact | role, its value, and a role's
    name."""

    __slots__ = ()

    def __str__(self) -> str:
        if self.kind == "role" and self.name is not None:
            return f"role={self.value}[name={json.dumps(self.name)}]"
        if self.kind == "text_exact":
            return f"text={json.dumps(self.value)}"
        return f"{self.kind}={self.value}"


def is_locator(value: object) -> bool:
    return isinstance(value, str) and value.lstrip().startswith(KINDS)


def parse(field: str, locator: str) -> list[Part]:
    """The chain of parts, or invalid_params naming the field and the syntax."""
    parts = []
    for raw in re.split(r"\s+>>\s+", locator.strip()):
        kind, sep, body = raw.partition("=")
        if not sep or kind not in ("css", "text", "role") or not body.strip():
            raise invalid_locator(field, f"{raw!r} is not a locator")
        if kind == "role":
            match = _ROLE.match(body.strip())
            if not match:
                raise invalid_locator(field, f"{raw!r}: a role locator is role=ROLE or "
                               'role=ROLE[name="NAME"]')
            quoted = match.group(2) if match.group(2) is not None else match.group(3)
            name = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else match.group(4)
            parts.append(Part("role", match.group(1), name))
        elif kind == "text" and re.fullmatch(r'"(?:[^"\\]|\\.)+"', body.strip()):
            # text="…": the element whose whole text this is, case and all (Playwright's)
            parts.append(Part("text_exact", re.sub(r"\\(.)", r"\1", body.strip()[1:-1])))
        else:
            parts.append(Part(kind, body.strip() if kind == "css" else body))
    return parts


def invalid_locator(field: str, why: str) -> BskError:
    return BskError("invalid_params", f"{field}: {why}", hint=f"a locator is {SYNTAX}",
                    details={"field": field}, dispatched=Dispatched.NO)
