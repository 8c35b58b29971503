"""What every settings model is built from: a frozen, strict pydantic base and the ``Field``
factory that carries a setting's meaning and unit (the generated configuration reference reads
them, so it cannot drift from the code)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    """A settings section: immutable, unknown keys refused, no inf/nan."""

    # hide_input_in_errors: a pydantic error printed anywhere must not carry a secret it was given
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, hide_input_in_errors=True)


def setting(default: Any, meaning: str, unit: str | None = None, **constraints: Any) -> Any:
    """A setting's ``Field``: its one-line meaning and its unit, with pydantic's constraints.

    >>> setting(50, "time to wait for a batch", "ms", ge=0).json_schema_extra
    {'unit': 'ms'}
    """
    return Field(default, description=meaning, json_schema_extra={"unit": unit} if unit else None, **constraints)
