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
        frame.select(pl.col(TIME_COLUMN), held=condition.fill_null(False), previous=pl.col(TIME_COLUMN).shift(1),
                     period=period.fill_null(0.0), after_gap=gap)
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


def overlap_s(a_start: dt.datetime, a_end: dt.datetime, b_start: dt.datetime, b_end: dt.datetime) -> float:
    """Seconds two intervals share (0 when apart)."""
    return max(0.0, (min(a_end, b_end) - max(a_start, b_start)).total_seconds())
