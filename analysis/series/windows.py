"""Sustained conditions as time windows.

A condition holds at a sample; a window is a run of such samples, merged
across dips shorter than `merge_s`, never across a gap in the data, and kept
when it lasts at least `min_s`.
A window starts at the first sample where the condition held (for interval
quantities such as rates, the interval began one sample earlier: the
caller passes `interval=True`) and ends at the last.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import polars as pl

from ftdc.frames import TIME_COLUMN


@dataclass(frozen=True)
class Window:
    start: dt.datetime
    end: dt.datetime
    first: int  # row of the first sample in the window
    last: int  # row of the last sample

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    def rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame.slice(self.first, self.last - self.first + 1)


def sustained(frame: pl.DataFrame, condition: pl.Expr, *, min_s: float, merge_s: float, interval: bool = False) -> list[Window]:
    """Windows where `condition` (an expression over `frame`) holds."""
    period = pl.col("period_s") if "period_s" in frame.columns else pl.lit(0.0)
    gap = pl.col("gap").fill_null(False) if "gap" in frame.columns else pl.lit(False)
    held = (
        frame.select(
            pl.col(TIME_COLUMN),
            held=condition.fill_null(False),
            previous=pl.col(TIME_COLUMN).shift(1),
            period=period.fill_null(0.0),
            after_gap=gap,
        )
        .with_row_index("row")
        .filter(pl.col("held"))
    )
    if held.is_empty():
        return []
    # A new run starts where samples stop being consecutive and the dip is longer than
    # merge_s, and after a gap in the data: what happened during it is not known.
    dip_s = pl.col(TIME_COLUMN).diff().dt.total_milliseconds() / 1000
    starts = ((pl.col("row").diff() != 1) & (dip_s > merge_s)) | pl.col("after_gap")
    runs = (
        held.with_columns(run=starts.fill_null(True).cum_sum())
        .group_by("run", maintain_order=True)
        .agg(
            first=pl.col("row").first(),
            last=pl.col("row").last(),
            start=(pl.coalesce("previous", TIME_COLUMN) if interval else pl.col(TIME_COLUMN)).first(),
            end=pl.col(TIME_COLUMN).last(),
            period=pl.col("period").last(),
        )
        # A single sample stands for one sampling period.
        .filter((pl.col("end") - pl.col("start")).dt.total_milliseconds() / 1000 + pl.col("period") >= min_s)
    )
    return [Window(r["start"], r["end"], r["first"], r["last"]) for r in runs.iter_rows(named=True)]


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _ticks(when: dt.datetime, unit: str) -> int:
    """`when` in ticks of the time column's `unit` since the epoch, cut to whole ticks as polars casts a bound
    to the column's type."""
    micros = (when - _EPOCH) // dt.timedelta(microseconds=1)
    return micros // 1000 if unit == "ms" else micros * 1000 if unit == "ns" else micros


def between(
    frame: pl.DataFrame,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    *,
    closed: Literal["both", "left", "right", "none"] = "both",
    on: str = TIME_COLUMN,
) -> pl.DataFrame:
    """The rows of a `frame` ordered by its time column `on`, with no nulls (a derived series, slow operations by end)
    that `pl.col(on).is_between(start, end, closed)` keeps, no bound where None: found by bisecting the time column, not by testing every row and copying every
    column of those kept (a derived frame holds a hundred), so a window of a week costs what one of a minute does."""
    column = frame[on]
    # numpy's bisection on the column's own buffer (a view: the time column has no nulls; `to_physical` would cost a
    # query); polars' search_sorted runs a query per call, a hundred times the cost, and windows are cut many times
    # per analysis.
    times, unit = column.to_numpy().view(np.int64), cast(pl.Datetime, column.dtype).time_unit
    first, last = 0, frame.height
    if start is not None:
        first = int(np.searchsorted(times, _ticks(start, unit), "left" if closed in ("both", "left") else "right"))
    if end is not None:
        last = int(np.searchsorted(times, _ticks(end, unit), "right" if closed in ("both", "right") else "left"))
    return frame.slice(first, max(0, last - first))


def overlap_s(a_start: dt.datetime, a_end: dt.datetime, b_start: dt.datetime, b_end: dt.datetime) -> float:
    """Seconds two intervals share (0 when apart)."""
    return max(0.0, (min(a_end, b_end) - max(a_start, b_start)).total_seconds())
