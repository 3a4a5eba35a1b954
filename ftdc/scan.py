"""`scan_ftdc`: FTDC as a polars LazyFrame with projection and time pushdown."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
from polars.io.plugins import register_io_source

from .batches import decode_windows, time_windows
from .catalog import catalog_files
from .frames import TIME_COLUMN
from .paths import PathArg, resolve
from .predicates import time_bounds


def scan_ftdc(path: PathArg, *, time_field: str = TIME_COLUMN) -> pl.LazyFrame:
    """A lazy view of `read_ftdc(path)`.

    Selecting columns decodes only those metrics; filtering on `start`
    skips, before inflating, every chunk that cannot match; rows stream in
    bounded time windows. The schema comes from the reference documents,
    read here so that bad input fails now, with `FTDCError`, not inside a
    polars plan.
    """
    catalog = catalog_files(resolve(path), time_field)
    full = catalog.schema()

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        wanted = list(full) if with_columns is None else list(with_columns)
        if predicate is not None:
            wanted += [c for c in predicate.meta.root_names() if c not in wanted]
        projected = {name: full[name] for name in wanted}
        lower, upper = time_bounds(predicate, TIME_COLUMN)
        remaining = n_rows
        windows = time_windows(catalog, len(projected), lower, upper)
        for frame in decode_windows(catalog, projected, windows, time_field):
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            yield frame
            if remaining == 0:
                return

    return register_io_source(source, schema=pl.Schema(full))
