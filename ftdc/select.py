"""Metric selection on names already known, with the decoder's own rules."""

from __future__ import annotations

from typing import Optional

import polars as pl

from . import _native
from .frames import TIME_COLUMN


def select_names(patterns: list[str], names: list[str]) -> list[str]:
    """The names among `names` that `patterns` (exact names and globs) select."""
    return _native.select_names(patterns, names)


def select_schema(schema: dict[str, pl.DataType], patterns: Optional[list[str]]) -> dict[str, pl.DataType]:
    """`schema` restricted to `start` and the metrics `patterns` select (all when None)."""
    if patterns is None:
        return dict(schema)
    keep = set(select_names(patterns, list(schema)))
    return {name: dtype for name, dtype in schema.items() if name == TIME_COLUMN or name in keep}
