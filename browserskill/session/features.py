"""Each feature's own state in a session: one typed object per feature, made on first use.

Invariant: `Session` holds what every session has (its tabs, refs, queue, placement,
policy); what one feature keeps between calls (where `hover` left the pointer, the open
request for help, the script being recorded, …) is an object of that feature's own
class, kept in `Session.features` and reached by that class: `features.get(Pointer)` is
the session's `Pointer`, made with `Pointer()` the first time. The class is the key, so a
feature reaches its own state, typed, and `Session` grows no field for it
(docs/design.md, the tool context; tests/test_tool_context.py).
"""

from __future__ import annotations

from typing import Any, TypeVar

State = TypeVar("State")


class FeatureStates:
    """A session's per-feature states, by their class."""

    def __init__(self) -> None:
        self._states: dict[type[Any], Any] = {}

    def get(self, kind: type[State]) -> State:
        """The session's `kind` state, made (`kind()`) on first use."""
        state = self._states.get(kind)
        if state is None:
            state = self._states[kind] = kind()
        return state

    def find(self, kind: type[State]) -> State | None:
        """The session's `kind` state if the feature made one (a reader that must not
        make it: the person answering a request for help that was never asked)."""
        return self._states.get(kind)
