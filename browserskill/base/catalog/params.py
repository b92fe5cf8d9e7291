"""Parameters and bounds more than one tool family shares, defined once.

Stdlib only.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.fields import Effect
from browserskill.base.catalog.spec import Param
from browserskill.base.catalog.validate import MAX_SAFE_INTEGER

WAIT_UNTIL = Param(
    "wait_until",
    "string",
    "when a navigation counts as done",
    default="load",
    choices=("load", "domcontentloaded", "commit"),
)

# `batch`: how many commands one call may carry.
BATCH_MAX_STEPS = 100

# Params that name an element: a ref from a snapshot (e12, f1e7) or a locator
# (browserskill/tools/locators.py), resolved once at call time to exactly one element.
TARGET_MAX = 4096
# eval's value, cut in the page where it can be (docs/outcomes.md, "Bounded results"):
# ~25,000 tokens by default, so one answer does not fill an agent's context window.
EVAL_MAX_CHARS = 100_000
EVAL_MAX_CHARS_LIMIT = 5_000_000
LOCATOR_HELP = ('; or a locator: css=SELECTOR, text=TEXT, role=ROLE[name="NAME"], '
                'chained into an iframe with " >> "')
REF = Param("ref", "string", "element ref from the last snapshot, e.g. e12" + LOCATOR_HELP,
            required=True, positional=True, max_length=TARGET_MAX)
# A stored secret by name (browserskill/base/vault.py): the agent names it, never holds it.
SECRET = Param("secret", "string", "a stored secret to enter instead of TEXT (a person "
               "stores it: the CLI's secret set); refused on another origin's frame",
               max_length=64)
MODIFIERS = Param("modifiers", "array", "keys held during the action: Alt, Control, Meta, "
                  "Shift (repeat, or join with +)")

# Viewport coordinates for `mouse …`, in CSS pixels.
MOUSE_X = Param("x", "number", "CSS pixels from the viewport's left edge", required=True,
                positional=True, minimum=0, maximum=100_000)
MOUSE_Y = Param("y", "number", "CSS pixels from the viewport's top edge", required=True,
                positional=True, minimum=0, maximum=100_000)
MOUSE_BUTTON = Param("button", "string", "mouse button", default="left",
                     choices=("left", "right", "middle"))

# The ring buffers' cursor (console, network).
SINCE = Param("since", "integer", "cursor from an earlier call (next_since); without it, the "
              "latest entries", minimum=0, maximum=MAX_SAFE_INTEGER)
LIMIT = Param("limit", "integer", "at most this many entries", default=100, minimum=1,
              maximum=1000)

# Wheel offsets (scroll, mouse wheel): bounded, a huge one would keep the page busy.
WHEEL = (Param("dx", "integer", "pixels right (negative: left)", default=0,
               minimum=-1_000_000, maximum=1_000_000),
         Param("dy", "integer", "pixels down (negative: up)", default=0,
               minimum=-1_000_000, maximum=1_000_000))


# Tools that act on a page report what they were seen to change (`result.effects`,
# docs/outcomes.md "Effects"), watched until the page settles; --settle sets that window
# (the catalog adds it to each of `ACTING_TOOLS`).
SETTLE_DEFAULT_MS = 100  # browserskill/base/effects.py QUIET_MS; bounded there too
SETTLE = Param("settle", "integer", "quiet ms ending the effects watch; 0 off",
               minimum=0, maximum=30_000)

# Effects, short: every family's specs write them so.
R, T, M, S = Effect.READ, Effect.TRANSIENT_INPUT, Effect.MUTATION, Effect.SESSION


class NoParams(TypedDict):
    """The params of a tool that takes none (its handler's view: an empty dict)."""
