"""Metric selection on names already known, with the decoder's own rules."""

from __future__ import annotations

import difflib
import warnings

import polars as pl

from . import _native
from .errors import FTDCError, UnmatchedMetric
from .frames import TIME_COLUMN

GLOB_CHARS = "*?["


def select_names(patterns: list[str], names: list[str]) -> list[str]:
    """The names among `names` that `patterns` (exact names and globs) select."""
    return _native.select_names(patterns, names)


def unmatched(patterns: list[str], names: list[str]) -> list[str]:
    """The patterns that select none of `names`."""
    return [p for p in patterns if not select_names([p], names)]


def closest(pattern: str, names: list[str], n: int = 3) -> list[str]:
    """What a mistyped name or glob probably meant: the nearest names, or for a glob the
    nearest name prefixes with the glob's tail (`serverStatus.wiredTiger.cache.*`)."""
    cut = min((pattern.index(c) for c in GLOB_CHARS if c in pattern), default=None)
    if cut is None:
        return difflib.get_close_matches(pattern, names, n=n, cutoff=0.4)
    head, tail = pattern[:cut], pattern[cut:]
    if not head:
        return []
    # Compare with the names' dotted prefixes (`a.`, `a.b.`), where a glob's literal part ends.
    heads = list(dict.fromkeys(name[: i + 1] for name in names for i, c in enumerate(name) if c == "."))
    return [h + tail for h in difflib.get_close_matches(head, heads, n=n, cutoff=0.4)]


def unmatched_message(patterns: list[str], names: list[str]) -> str | None:
    """One line naming each pattern that matches nothing, with the closest existing metrics."""
    missing = unmatched(patterns, names)
    if not missing:
        return None
    said = []
    for p in missing:
        near = closest(p, names)
        said.append(f"{p!r} matches no metric" + (f" (closest: {', '.join(near)})" if near else ""))
    return "; ".join(said) + "; `ftdc-analyze metrics PATH` lists them"


def warn_unmatched(patterns: list[str] | None, names: list[str]) -> None:
    message = unmatched_message(patterns, names) if patterns else None
    if message:
        warnings.warn(message, UnmatchedMetric, stacklevel=3)


# An output (Parquet, CSV, the dataset) holds a column per metric, and each costs Arrow and
# Parquet kilobytes of their own whatever its rows: 49,000 metrics took 0.49 GB to export two
# rows and 196,000 took 1.5 GB. mongod records a few thousand (8.0: 3,479).
MAX_OUTPUT_METRICS = 50_000


def select_schema(schema: dict[str, pl.DataType], patterns: list[str] | None, where: str) -> dict[str, pl.DataType]:
    """The schema an output of `where` writes: `schema` restricted to `start` and the metrics
    `patterns` select (all when None). A pattern that selects nothing is an `FTDCWarning`
    naming the closest metrics; more than MAX_OUTPUT_METRICS is an `FTDCError`."""
    if patterns is not None:
        warn_unmatched(patterns, list(schema))
        keep = set(select_names(patterns, list(schema)))
        schema = {name: dtype for name, dtype in schema.items() if name == TIME_COLUMN or name in keep}
    if len(schema) - 1 > MAX_OUTPUT_METRICS:
        raise FTDCError(
            f"{where}: {len(schema) - 1:,} metrics, more than the {MAX_OUTPUT_METRICS:,} an export writes "
            "(mongod records a few thousand): select some (--metrics, metrics=)"
        )
    return dict(schema)
