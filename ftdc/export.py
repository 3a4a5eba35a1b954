"""Stream FTDC to Parquet (zstd) or CSV with bounded memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl
import pyarrow.parquet as pq

from .atomic import replacing
from .batches import DEFAULT_BUDGET, decode_windows, time_windows
from .catalog import Catalog, catalog_files
from .decoding import Metrics, metric_list
from .errors import no_samples
from .frames import TIME_COLUMN
from .paths import PathArg, resolve
from .select import select_schema
from .timeutil import TimeArg, time_range, times_as_text, to_ms
from .untrusted import csv_header

Progress = Callable[[int, int], None]


def _frames(
    path: PathArg, metrics: Metrics, start: TimeArg, end: TimeArg, time_field: str, budget: int, progress: Progress | None
) -> tuple[Catalog, dict[str, pl.DataType], Iterator[pl.DataFrame]]:
    catalog = catalog_files(resolve(path), time_field)
    schema = select_schema(catalog.schema(), metric_list(metrics), str(path))
    lower, upper = map(to_ms, time_range(start, end))
    windows = list(time_windows(catalog, len(schema), lower, upper, budget))

    def frames() -> Iterator[pl.DataFrame]:
        for done, frame in enumerate(decode_windows(catalog, schema, windows, time_field, budget), 1):
            yield frame
            if progress:
                progress(done, len(windows))

    return catalog, schema, frames()


def _export(write: Callable[[BinaryIO, dict[str, pl.DataType], Iterator[pl.DataFrame]], int]) -> Callable[..., int]:
    """An exporter with the common signature, around a `write(sink, schema, frames) -> rows`;
    `out` is replaced only when the whole export is written (an interrupted one leaves it as it was)."""

    def export(
        path: PathArg,
        out: str | Path,
        metrics: Metrics = None,
        start: TimeArg = None,
        end: TimeArg = None,
        *,
        time_field: str = TIME_COLUMN,
        budget: int = DEFAULT_BUDGET,
        progress: Progress | None = None,
    ) -> int:
        catalog, schema, frames = _frames(path, metrics, start, end, time_field, budget, progress)
        with replacing(out) as sink:
            rows = write(sink, schema, frames)
            if rows == 0:  # raised inside, so the file `out` named before stays as it was
                raise no_samples(str(path), catalog.chunks, *time_range(start, end))
        return rows

    export.__name__ = write.__name__.lstrip("_")
    export.__doc__ = write.__doc__
    return export


def _to_parquet(sink: BinaryIO, schema: dict[str, pl.DataType], frames: Iterator[pl.DataFrame]) -> int:
    """Write the samples of `path` to `out` (zstd Parquet), one row group per
    time window, so memory stays near `budget` int64 values whatever the
    directory size. Returns the number of rows; `progress(done, total)` is
    called after each window."""
    rows = 0
    with pq.ParquetWriter(sink, pl.DataFrame(schema=schema).to_arrow().schema, compression="zstd") as writer:
        for frame in frames:
            writer.write_table(frame.to_arrow())
            rows += frame.height
    return rows


def _to_csv(sink: BinaryIO, schema: dict[str, pl.DataType], frames: Iterator[pl.DataFrame]) -> int:
    """As `to_parquet`, to CSV with a header row (metric names, none read as a formula by a
    spreadsheet); times as ISO-8601 UTC with Z."""
    as_text = times_as_text(schema)
    rows = 0
    sink.write(csv_header(schema).encode())
    for frame in frames:
        frame.with_columns(as_text).write_csv(sink, include_header=False)
        rows += frame.height
    return rows


to_parquet = _export(_to_parquet)
to_csv = _export(_to_csv)
