"""`to_parquet`: stream FTDC to a zstd-compressed Parquet file with bounded memory."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import pyarrow.parquet as pq

from .batches import DEFAULT_BUDGET, time_windows
from .catalog import catalog_files
from .frames import TIME_COLUMN
from .paths import PathArg, resolve
from .reader import Metrics, decode_files, metric_list
from .scan import conform
from .select import select_schema
from .timeutil import TimeArg, to_ms

Progress = Callable[[int, int], None]


def to_parquet(
    path: PathArg,
    out: str | Path,
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    *,
    time_field: str = TIME_COLUMN,
    budget: int = DEFAULT_BUDGET,
    progress: Optional[Progress] = None,
) -> int:
    """Write the samples of `path` to `out`, one row group per time window.

    Memory stays near `budget` int64 values whatever the directory size.
    Returns the number of rows written; `progress(done, total)` is called
    after each window.
    """
    files = resolve(path)
    catalog = catalog_files(files, time_field)
    schema = select_schema(catalog.schema(), metric_list(metrics))
    lower, upper = to_ms(start), to_ms(end)
    windows = list(time_windows(catalog, len(schema), lower, upper, budget))
    names = None if metrics is None else [n for n in schema if n != TIME_COLUMN]
    rows = 0
    writer = None
    try:
        for done, window in enumerate(windows, 1):
            frame = conform(decode_files(window.files, names, window.start, window.end, time_field), schema)
            table = frame.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(str(out), table.schema, compression="zstd")
            writer.write_table(table)
            rows += frame.height
            if progress:
                progress(done, len(windows))
        if writer is None:  # nothing in range: still write a valid, empty file
            writer = pq.ParquetWriter(str(out), conform(decode_files([], []), schema).to_arrow().schema, compression="zstd")
    finally:
        if writer is not None:
            writer.close()
    return rows
