"""`scan_ftdc`: FTDC as a polars LazyFrame with projection and time pushdown."""

from __future__ import annotations

from typing import Iterator, Optional

import polars as pl
from polars.io.plugins import register_io_source

from .batches import time_windows
from .catalog import Catalog, catalog_files
from .frames import TIME_COLUMN
from .paths import PathArg, resolve
from .predicates import time_bounds
from .reader import decode_files


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


def scan_ftdc(path: PathArg, *, time_field: str = TIME_COLUMN) -> pl.LazyFrame:
    """A lazy view of `read_ftdc(path)`.

    Selecting columns decodes only those metrics; filtering on `start`
    skips, before inflating, every chunk that cannot match. The schema is
    read from reference documents when polars first asks for it.
    """
    files = resolve(path)
    catalog_cache: list[Catalog] = []

    def catalog() -> Catalog:
        if not catalog_cache:
            catalog_cache.append(catalog_files(files, time_field))
        return catalog_cache[0]

    def schema() -> pl.Schema:
        return pl.Schema(catalog().schema())

    def source(
        with_columns: Optional[list[str]],
        predicate: Optional[pl.Expr],
        n_rows: Optional[int],
        batch_size: Optional[int],
    ) -> Iterator[pl.DataFrame]:
        full = catalog().schema()
        wanted = list(full) if with_columns is None else list(with_columns)
        if predicate is not None:
            wanted += [c for c in predicate.meta.root_names() if c not in wanted]
        projected = {name: full[name] for name in wanted}
        metrics = None if len(projected) == len(full) else [n for n in projected if n != TIME_COLUMN]
        lower, upper = time_bounds(predicate, TIME_COLUMN)
        remaining = n_rows
        for window in time_windows(catalog(), len(projected), lower, upper):
            frame = conform(decode_files(window.files, metrics, window.start, window.end, time_field), projected)
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

    return register_io_source(source, schema=schema)
