"""Time windows that split a streaming read into bounded pieces.

Each window holds about `budget` values (rows x selected columns) and
names only the files whose chunks overlap it, so a window reads a few
files and the decoder's own time range keeps rows from being repeated.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import polars as pl

from . import _native
from .catalog import Catalog
from .errors import FTDCError
from .frames import DATE_KIND, TIME_COLUMN
from .paths import FtdcFile
from .reader import decode_native, frame_of
from .timeutil import format_time, outside_python_range, to_utc

DEFAULT_BUDGET = 32_000_000  # values per streaming window: 256 MB of int64
T = TypeVar("T")


@dataclass(frozen=True)
class Window:
    files: list[FtdcFile]
    start: int | None  # inclusive epoch ms; None = unbounded
    end: int | None


def _ms(column: str) -> pl.Expr:
    return pl.col(column).dt.epoch("ms")


def time_windows(
    catalog: Catalog,
    columns: int,
    start: int | None = None,
    end: int | None = None,
    budget: int = DEFAULT_BUDGET,
) -> Iterator[Window]:
    """Windows covering [start, end] in time order, each about `budget` values."""
    chunks = catalog.chunks.with_columns(first=_ms("first"), last=_ms("last"))
    # A chunk whose first or last time is no date (damage: outside years 1-9999) may still hold samples with real
    # times: it belongs to every window, whose own time range keeps its rows from being read twice.
    undated = pl.col("first").is_null() | pl.col("last").is_null()
    if start is not None:
        chunks = chunks.filter((pl.col("last") >= start) | undated)
    if end is not None:
        chunks = chunks.filter((pl.col("first") <= end) | undated)
    chunks = chunks.sort("first", nulls_last=True)
    if chunks.is_empty():
        return
    target_rows = max(1, budget // max(1, columns))
    firsts = chunks["first"].to_list()
    samples = chunks["samples"].to_list()
    cuts = [0]
    rows = 0
    for i, n in enumerate(samples):
        if rows >= target_rows and firsts[i] is not None and firsts[i] > firsts[cuts[-1]]:
            cuts.append(i)
            rows = 0
        rows += n
    limit = window_limit(budget)
    for k, cut in enumerate(cuts):
        lo = start if k == 0 else firsts[cut]
        hi = end if k == len(cuts) - 1 else firsts[cuts[k + 1]] - 1
        overlapping = chunks.filter(
            (pl.col("last") >= (lo if lo is not None else -(2**63))) & (pl.col("first") <= (hi if hi is not None else 2**63 - 1))
            | undated
        )
        if overlapping.is_empty():
            continue  # no chunk can hold a sample of this window
        # The decoder holds every overlapping chunk whole while it cuts out the window's rows.
        cost = int((overlapping["samples"] * (overlapping["metrics"].clip(upper_bound=columns) + 1)).sum())
        if cost > limit:
            first = overlapping.row(0, named=True)
            raise FTDCError(
                f"{first['file']}: offset {first['offset']}: {overlapping.height} chunk(s) from {format_time(to_utc(first['first']))} claim "
                f"{cost:,} values that time cannot split, more than the {limit:,} a streaming window may hold "
                "(crafted or corrupt chunk counts? mongod's chunks hold about a million)"
            )
        names = set(overlapping["file"].to_list())
        yield Window([f for f in catalog.files if str(f.path) in names], lo, hi)


def require_splittable(catalog: Catalog, start: int | None = None, end: int | None = None) -> None:
    """Raise, as an export of every metric would, when chunks claim more values at one
    instant than a streaming window may hold: a file is refused by every command or none."""
    for _ in time_windows(catalog, len(catalog.schema()), start, end):
        pass


def window_limit(budget: int) -> int:
    """Most values a window's chunks may claim: a window is cut once it reaches `budget`,
    and the chunks overlapping its edges add at most a few real chunks (about a million
    values each), so only chunks that claim far more at one instant reach twice that."""
    return 2 * budget


def conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """`frame` with exactly `schema`'s columns, in order; absent ones are null."""
    have = frame.schema
    fixes = [
        pl.lit(None, dtype).alias(name) if name not in have else pl.col(name).cast(dtype)
        for name, dtype in schema.items()
        if have.get(name) != dtype
    ]
    if fixes:
        frame = frame.with_columns(fixes)
    return frame if frame.columns == list(schema) else frame.select(list(schema))


def decode_windows(
    catalog: Catalog,
    schema: dict[str, pl.DataType],
    windows: Iterable[Window],
    time_field: str = TIME_COLUMN,
    budget: int = DEFAULT_BUDGET,
) -> Iterator[pl.DataFrame]:
    """Frames of exactly `schema`, one per window of `time_windows`."""
    for window, decoded in _decoded(catalog, schema, windows, time_field, budget):
        yield conform(frame_of(window.files, decoded), schema)


def _decoded(
    catalog: Catalog, schema: dict[str, pl.DataType], windows: Iterable[Window], time_field: str, budget: int
) -> Iterator[tuple[Window, _native.DecodedFrame]]:
    whole = len(schema) == len(catalog.schema())
    metrics = None if whole else [n for n in schema if n != TIME_COLUMN]
    for window in windows:
        yield (
            window,
            decode_native(
                window.files,
                metrics,
                window.start,
                window.end,
                time_field,
                max_values=window_limit(budget),
                reported=catalog.problems,
            ),
        )


# A window's columns as the decoder holds them (Arrow arrays, by the PyCapsule interface), in a schema's order, None
# where the window holds no such metric; with the window's times.
Columns = tuple[pl.Series, list[Any]]


def decode_columns(
    catalog: Catalog,
    schema: dict[str, pl.DataType],
    windows: Iterable[Window],
    time_field: str = TIME_COLUMN,
    budget: int = DEFAULT_BUDGET,
) -> Iterator[Columns]:
    """What `decode_windows` gives, without the frame: a writer that reads Arrow arrays takes the decoder's own and
    converts a column's type as `conform` would (booleans are 0 and 1, times milliseconds), so the per-column work of
    a polars frame (about 0.1 s a window of 2,300 columns) is not done. A window with a time outside years 1-9999
    (damage) goes through the frame, which drops or nulls those."""
    import pyarrow as pa

    for window, decoded in _decoded(catalog, schema, windows, time_field, budget):
        listed = decoded.columns()
        held = {name: column for name, _, column in listed if name != TIME_COLUMN}
        dates = [pa.array(column) for name, kind, column in listed if kind == DATE_KIND and name in schema]
        # As a table, as `to_polars` hands columns over: polars takes a lone array through pyarrow.compute, whose
        # import costs a whole process 0.13 s.
        table = pa.table([pa.array(decoded.time()), *dates], names=[TIME_COLUMN, *map(str, range(len(dates)))])
        times = cast(pl.DataFrame, pl.from_arrow(table, rechunk=False))  # a table: a frame
        if not times.select(pl.any_horizontal(outside_python_range(pl.all()).any())).item():
            yield times.get_column(TIME_COLUMN), [decoded.time() if name == TIME_COLUMN else held.get(name) for name in schema]
            continue
        frame = conform(frame_of(window.files, decoded), schema)
        yield frame.get_column(TIME_COLUMN), [column.combine_chunks() for column in frame.to_arrow().columns]


def ahead(items: Iterator[T]) -> Generator[T, None, None]:
    """`items`, the next one made in a worker thread while the caller works on this one: a
    window is decoded (native, without the GIL) while the one before is written (Arrow's
    writer, without the GIL too), so the two take a core each. One item waits at most, so
    memory holds two windows. `items` is only ever advanced by one thread at a time; an
    error it raises is raised here, and leaving early waits for the item under way."""
    done = object()
    with ThreadPoolExecutor(1, thread_name_prefix="ftdc-ahead") as worker:
        coming = worker.submit(next, items, done)
        while (item := coming.result()) is not done:
            coming = worker.submit(next, items, done)
            yield item  # type: ignore[misc]  # not `done`, the loop's test says
            del item  # the caller's reference is the only one while the next is made
