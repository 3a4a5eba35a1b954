"""`read_ftdc`: FTDC files to one polars frame, one row per sample."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection

import polars as pl

from . import _native
from .catalog import Catalog, catalog_files, catalog_of
from .decoding import Decoding, Metrics, metric_list, read_arguments
from .errors import FTDCError, FTDCWarning, Problem, require_documents
from .frames import TIME_COLUMN, problems_of, report_problems, to_polars
from .kept import Kept
from .paths import FtdcFile, PathArg, resolve
from .select import unmatched, warn_unmatched
from .timeutil import TimeArg, outside_python_range, time_range


def decode_files(
    files: list[FtdcFile],
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    time_field: str = TIME_COLUMN,
    max_values: int | None = None,
    reported: Collection[Problem] = (),
) -> pl.DataFrame:
    """Decodes already-resolved files; the building block of every reader. Problems in
    `reported` (the files' catalog has warned of them) are not warned of again."""
    return frame_of(files, decode_native(files, metrics, start, end, time_field, max_values, reported))


def decode_native(
    files: list[FtdcFile],
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    time_field: str = TIME_COLUMN,
    max_values: int | None = None,
    reported: Collection[Problem] = (),
) -> _native.DecodedFrame:
    """`decode_files` up to its frame (`frame_of`): the decoder's columns, its problems reported and a refusal raised."""
    decoded = _native.read(*read_arguments(files, metrics, start, end, time_field, max_values))
    require_documents(files, decoded.documents, problems_of(decoded))
    _raise_refusal(files, decoded)
    report_problems(decoded, time_field, reported)
    return decoded


def read_with_catalog(
    files: list[FtdcFile],
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    *,
    vet: Callable[[Catalog], None] = lambda catalog: None,
    keep: bool = False,
    started: Decoding | None = None,
) -> tuple[Catalog, pl.DataFrame, Kept | None]:
    """`catalog_files` and `decode_files` in one pass over the files: the catalog comes from
    the chunks decoded (those the time range skips are only peeked), so each chunk is
    inflated once. `vet(catalog)` runs before the values are looked at, so that a refusal
    of what the files hold comes first, as it does when the catalog is read first. With
    `keep`, every other metric of the range is kept too, as its delta bytes, not as columns
    (`Kept`: the explorer reduces them on its axis after the analysis). `started`: this read started already
    (`decoding.decode_ahead`), whose answer is taken if it is this read's; otherwise the files are decoded now."""
    arguments = read_arguments(files, metrics, start, end, TIME_COLUMN, None)
    if started is not None and started.answers(arguments, keep):
        decoded = started.result()
    else:
        decoded = _native.read(*arguments, catalog=True, keep=keep)
    require_documents(files, decoded.documents, problems_of(decoded))
    report_problems(decoded, TIME_COLUMN)  # damage first, then any refusal: the last line says why it stopped
    raw_catalog = decoded.catalog()
    assert raw_catalog is not None, "read(catalog=True) returns the catalog"
    catalog = catalog_of(files, raw_catalog)
    vet(catalog)
    _raise_refusal(files, decoded)
    frame, dropped = _frame(files, decoded)
    values = decoded.take_kept()
    kept = None if values is None else Kept(values, tuple(files), arguments[3], arguments[4], dropped)
    return catalog, frame, kept


def _where(files: list[FtdcFile]) -> str:
    """The files of a read, as a message names them."""
    if not files:
        return "no file"
    return f"{files[0].path}{' and others' if len(files) > 1 else ''}"


def _raise_refusal(files: list[FtdcFile], decoded: _native.DecodedFrame) -> None:
    if decoded.error:
        raise FTDCError(f"{_where(files)}: {decoded.error}")


def frame_of(files: list[FtdcFile], decoded: _native.DecodedFrame) -> pl.DataFrame:
    """The frame of a native read that was not refused, without impossible times."""
    return _frame(files, decoded)[0]


def _frame(files: list[FtdcFile], decoded: _native.DecodedFrame) -> tuple[pl.DataFrame, tuple[int, ...]]:
    """`frame_of`, and the rows left out for their impossible times (what the explorer's kept metrics leave out too)."""
    frame = to_polars(decoded)
    where = _where(files)
    impossible = frame.select(outside_python_range(pl.col(TIME_COLUMN))).to_series()
    dropped: tuple[int, ...] = ()
    if impossible.any():
        dropped = tuple(impossible.arg_true().to_list())
        warnings.warn(
            f"{where}: {impossible.sum():,} sample(s) dated outside years 1-9999 (damaged times): dropped",
            FTDCWarning,
            stacklevel=3,
        )
        frame = frame.filter(~impossible)
    # The decoder's rows are in time order (ties in chunk order): said, so that sorting is free.
    return _without_impossible_dates(frame, where).with_columns(pl.col(TIME_COLUMN).set_sorted()), dropped


def _without_impossible_dates(frame: pl.DataFrame, where: str) -> pl.DataFrame:
    """`frame` with every Date metric outside years 1-9999 made null, one warning per metric.
    No calendar holds such a value (flipped bits in a reference document), and every writer
    of times (CSV, Arrow's microseconds, Python) refuses it: the sample is kept, the value not."""
    dates = [name for name, dtype in frame.schema.items() if name != TIME_COLUMN and isinstance(dtype, pl.Datetime)]
    if not dates:
        return frame
    counts = frame.select(outside_python_range(pl.col(name)).sum() for name in dates).row(0)
    damaged = [name for name, count in zip(dates, counts) if count]
    for name, count in zip(dates, counts):
        if count:
            warnings.warn(
                f"{where}: {count:,} value(s) of {name} dated outside years 1-9999 (damaged): read as null",
                FTDCWarning,
                stacklevel=4,
            )
    return (
        frame.with_columns(pl.when(~outside_python_range(pl.col(name))).then(pl.col(name)).alias(name) for name in damaged)
        if damaged
        else frame
    )


def read_ftdc(
    path: PathArg,
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    *,
    time_field: str = TIME_COLUMN,
    max_values: int | None = None,
) -> pl.DataFrame:
    """Read FTDC samples as a frame sorted by the root `start` time.

    `path` is a diagnostic.data directory, one file, or a list of them.
    `metrics` takes exact names and glob patterns (`serverStatus.wiredTiger.cache.*`);
    `start`/`end` (inclusive) take datetimes, ISO strings or epoch ms.
    Samples of metrics.interim that an archive file also holds are dropped.
    A name or glob that matches no metric is an `FTDCWarning` naming the closest;
    a start after the end is a ValueError.
    Damaged chunks are skipped with an `FTDCWarning` naming file and offset.
    `max_values` caps rows x columns (default: 128 per input byte, at least
    64 M; real files hold 4 to 18) so that crafted chunk counts cannot exhaust
    memory; over it, the read raises `FTDCError` (stream with `scan_ftdc` or
    `to_parquet` instead, or pass a larger `max_values`).
    """
    lower, upper = time_range(start, end)
    files = resolve(path)
    frame = decode_files(files, metrics, lower, upper, time_field, max_values)
    wanted = metric_list(metrics)
    if wanted and unmatched(wanted, frame.columns):
        # Name the closest metrics of the whole input, not just of what was read.
        warn_unmatched(wanted, list(catalog_files(files, time_field).schema()))
    return frame
