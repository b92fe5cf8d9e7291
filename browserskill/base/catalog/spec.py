"""`Param` and `ToolSpec`: a tool's definition, with what every surface asks of it.

The fields are `fields.py`'s; the methods hand them to the schema emitter (`schema.py`)
and the validator (`validate.py`). Stdlib only.
"""

from __future__ import annotations

from browserskill.base.catalog import schema, validate
from browserskill.base.catalog.fields import Effect, ParamFields, ToolFields

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any


class Param(ParamFields):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return schema.param_schema(self)


class ToolSpec(ToolFields):
    __slots__ = ()

    @property
    def on_pages(self) -> bool:
        """It works on the session's pages (so they are recovered and shown first, and
        its browser must be there); False for what ends the session itself."""
        return self.effect is not Effect.SESSION

    def input_schema(self) -> dict[str, Any]:
        return schema.input_schema(self)

    def validate(self, raw: Any) -> dict[str, Any]:
        """Check a params object; return it with defaults filled in, or raise invalid_params."""
        return validate.validate(self, raw)
