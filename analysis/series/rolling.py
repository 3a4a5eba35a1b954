"""Quantiles of the time window before each sample: the latency spikes' baselines (a latency's median and
quartiles over the 10 minutes before); and medians of the few rows before each (the sampling period in effect).

polars' `rolling_median_by` and `rolling_quantile_by` cost 50-65 ms a column for a day at 1 s, each quantile a
pass of its own. The native core keeps each window's values in order in one vector and reads every quantile at
its rank, one pass for all, the classes in parallel. The answers are polars' (`closed="left"`, `linear` and
`nearest` interpolation) to the bit: tests/test_rolling.py checks them against it.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import polars as pl

from ftdc import _native
from ftdc.frames import IN_PLACE, arrow_chunks, series_of

Method = Literal["linear", "nearest"]


@dataclass(frozen=True)
class Rolling:
    """One column's quantiles: `count` of the values in each row's window, each quantile of it by name (NaN where the
    window is empty), and `overall`, each quantile of all its values (None when it has none); of every row, or with
    `rows` (ascending) of those rows alone."""

    count: np.ndarray
    before: dict[str, np.ndarray]
    overall: dict[str, float | None]
    rows: np.ndarray | None = None

    def frame(self) -> pl.DataFrame:
        """`count` and each quantile as polars' rolling functions give them: null where the window is empty (and
        where a quantile is NaN, which only NaN values make)."""
        return pl.DataFrame({"count": self.count, **{name: pl.Series(v, nan_to_null=True) for name, v in self.before.items()}})


@dataclass(frozen=True)
class SpikeRule:
    """The test a row's own value must be able to pass for its window's median, q1 and q3 to be wanted:
    `value - median >= resolution`, `value >= factor * median`, `value >= median + iqrs * (q3 - q1)`, over a
    window of at least `min_count` values (`analysis.series.spikes`)."""

    factor: float
    iqrs: float
    resolution: float
    min_count: int


def quantiles_before(
    times: pl.Series,
    columns: list[pl.Series],
    window: dt.timedelta,
    quantiles: dict[str, tuple[float, Method]],
    where: SpikeRule | None = None,
) -> list[Rolling]:
    """For each of `columns` (beside ascending `times`; the native core takes them in parallel), for each row, over the
    rows whose time is in [t - window, t) and whose value is not null: their `count`, and each of `quantiles`
    (name -> (q, method)); and each quantile of the column's values. With `where`, `quantiles` are the median, q1 and
    q3 in that order, and only the rows (`Rolling.rows`) whose own value is not null and can pass the rule against
    them are given, or whose window holds fewer than `min_count` values (their quantiles NaN): the native core bounds
    each window's quantiles by counting its values in bins, and orders only the windows the bounds cannot settle, so
    the rows that are no spike cost a few steps, not a window kept in order, and no memory (a week's three classes'
    quantiles of every row were 51 MB)."""
    # The times as the column holds them (its unit's ticks; dates as microseconds), the window in whole ticks: a
    # time t is in it when t >= t_i - window, which for whole ticks is t >= t_i - floor(window), polars' windows.
    if not isinstance(times.dtype, pl.Datetime):
        times = times.cast(pl.Datetime("us"))
    micros = window // dt.timedelta(microseconds=1)
    ticks = {"ms": micros // 1000, "us": micros, "ns": micros * 1000}[cast(pl.Datetime, times.dtype).time_unit]
    return _native_quantiles(times.to_physical(), columns, ticks, quantiles, where)


def medians_of_rows_before(column: pl.Series, rows: int) -> pl.Series:
    """`column.shift(1).rolling_median(rows, min_samples=1)`'s values (a zero's sign aside: polars ties -0.0 with
    0.0), by the native core (a row's number its time, the window that many): the median of the values of the
    `rows` rows before each row, null where those hold none. The sampling period's five-row medians of a day at
    1 s take 1.1 ms against polars' 2.8 (polars keeps each window in a tree)."""
    (rolling,) = _native_quantiles(pl.int_range(len(column), eager=True), [column], rows, {"median": (0.5, "linear")}, None)
    return series_of(rolling.before["median"], column.name).scatter(series_of(np.flatnonzero(rolling.count == 0)), None)


def _native_quantiles(
    times: pl.Series,
    columns: list[pl.Series],
    window: int,
    quantiles: dict[str, tuple[float, Method]],
    where: SpikeRule | None,
) -> list[Rolling]:
    """`quantiles_before` in the native core's terms: `times` in ticks (integers, ascending), `window` in ticks. The
    core reads the times and the columns where polars holds them (Int64 and Float64 columns; others are cast to
    Float64 first), not copies of them."""
    frame = pl.DataFrame(
        [times.cast(pl.Int64).alias("times")]
        + [(c if c.dtype in IN_PLACE else c.cast(pl.Float64)).alias(f"c{i}") for i, c in enumerate(columns)]
    )
    chunks = arrow_chunks(frame)  # held through the call: the core reads their memory
    answers = _native.rolling_quantiles(
        [a for a in chunks["times"] if len(a)],
        [[a for a in chunks[f"c{i}"] if len(a)] for i in range(len(columns))],
        window,
        list(quantiles.values()),
        None if where is None else (where.factor, where.iqrs, where.resolution, where.min_count),
    )
    return [
        Rolling(
            np.frombuffer(count, dtype="<u4"),
            {name: np.frombuffer(column, dtype="<f8") for name, column in zip(quantiles, before)},
            {name: None if math.isnan(v) else v for name, v in zip(quantiles, overall)},
            None if rows is None else np.frombuffer(rows, dtype="<u8"),
        )
        for rows, count, before, overall in answers
    ]


def medians_before(times: pl.Series, columns: list[pl.Series], window: dt.timedelta) -> list[pl.Series]:
    """Each of `columns`' `rolling_median_by(times, window, closed="left")`, polars' to the bit, by the native core
    (`quantiles_before`): the median of the values in [t - window, t) before each row, null where there are none."""
    return [
        series_of(rolling.before["median"], nan_to_null=True)
        for rolling in quantiles_before(times, columns, window, {"median": (0.5, "linear")})
    ]
