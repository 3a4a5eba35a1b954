"""Latency spikes per operation class, against the node's own robust baseline.

A sample's interval mean latency (Δlatency / Δops) is a spike when it is at
least SPIKE_FACTOR times the rolling median of the BASELINE before it and
above that median by SPIKE_IQRS interquartile ranges (the node's own noise,
robust to the spikes themselves), over at least MIN_OPS operations (fewer
are single operations, which the slow-query log reports better).
Consecutive spike samples form one event.

No absolute latency is required: the mean averages every operation of the
interval, so a node whose writes take 1 ms and rise to 15 ms has had a very
large rise in its slowest operations, and a 0.05 ms node tripling is as
real as a 50 ms one. The one floor is measurement resolution: mongod sums
each operation's latency in whole microseconds, so the mean can move by up
to 1 µs from rounding alone and a flat baseline has no interquartile range
to say so; a rise must exceed RESOLUTION_MS, ten times that.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.series.rolling import Rolling, SpikeRule, quantiles_before
from ftdc.frames import TIME_COLUMN, series_of

BASELINE = dt.timedelta(minutes=10)
MIN_BASELINE_SAMPLES = 30
SPIKE_FACTOR = 3.0
SPIKE_IQRS = 5.0
RESOLUTION_MS = 0.01
MIN_OPS = 10
OP_CLASSES = ("reads", "writes", "commands")
RULE = (
    f"≥ {SPIKE_FACTOR:g}× the {BASELINE // dt.timedelta(minutes=1)} min median before it and ≥ median + {SPIKE_IQRS:g} IQR, "
    f"at least {RESOLUTION_MS * 1000:g} µs above it, over ≥ {MIN_OPS} operations"
)
# The rule's figures as one value: `_flags` tests each sample by them, and the native core works out the quantiles of
# only the samples that can pass them.
RULE_FIGURES = SpikeRule(SPIKE_FACTOR, SPIKE_IQRS, RESOLUTION_MS, MIN_BASELINE_SAMPLES)
# "write latency", not "writes latency".
ADJECTIVE = {"reads": "read", "writes": "write", "commands": "command", "transactions": "transaction"}


@dataclass(frozen=True)
class Spike:
    op: str  # reads | writes | commands
    start: dt.datetime  # the interval before the first spike sample began here
    end: dt.datetime
    peak_ms: float
    baseline_ms: float
    peak_at: dt.datetime

    @property
    def factor(self) -> float:
        return self.peak_ms / self.baseline_ms if self.baseline_ms else float("inf")

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "start": self.start,
            "end": self.end,
            "peak_ms": self.peak_ms,
            "baseline_ms": self.baseline_ms,
            "peak_at": self.peak_at,
        }


def _flags(latency: np.ndarray, quantiles: Rolling, rule: SpikeRule = RULE_FIGURES) -> tuple[np.ndarray, np.ndarray]:
    """The rows that are spikes by `rule`, in order, and their baselines, from each row's `latency` (NaN where
    unusable) and its window's `quantiles` (`count`; `median`, `q1` and `q3`, of every row or of the rows where a
    spike is possible; the median of all). Only a row whose window's median was worked out, or whose window holds too
    few values to be its baseline, can be one: the rule is tested on those rows alone (a few hundred of a week's
    600,000 a class), not on arrays of every row."""
    listed = np.arange(len(quantiles.count)) if quantiles.rows is None else quantiles.rows
    enough = quantiles.count >= rule.min_count
    at = np.flatnonzero(~enough | ~np.isnan(quantiles.before["median"]))
    rows, enough, value = listed[at], enough[at], latency[listed[at]]
    # Early samples (little history) compare against the whole range's median instead.
    overall = quantiles.overall["median"]
    median = np.where(enough, quantiles.before["median"][at], np.nan if overall is None else overall)
    iqr = np.where(enough, quantiles.before["q3"][at] - quantiles.before["q1"][at], 0.0)
    # NaN (no value, no baseline, no spike possible) compares false: no spike.
    spike = (value - median >= rule.resolution) & (value >= rule.factor * median) & (value >= median + rule.iqrs * iqr)
    return rows[spike], median[spike]


def _events(flagged: pl.DataFrame, op: str) -> list[Spike]:
    """The spike events of `op` from its spike samples (their row, time, previous time, latency and baseline)."""
    if flagged.is_empty():
        return []
    # One event: spike samples with at most one quiet sample between them.
    event = ((pl.col("row").diff().fill_null(99)) > 2).cum_sum()
    events = (
        flagged.with_columns(event=event)
        .group_by("event", maintain_order=True)
        .agg(
            start=pl.coalesce("previous", TIME_COLUMN).first(),
            end=pl.col(TIME_COLUMN).last(),
            peak_ms=pl.col("latency").max(),
            baseline_ms=pl.col("baseline").first(),
            peak_at=pl.col(TIME_COLUMN).sort_by("latency", descending=True).first(),
        )
    )
    return [
        Spike(op, r["start"], r["end"], r["peak_ms"], r["baseline_ms"] or 0.0, r["peak_at"]) for r in events.iter_rows(named=True)
    ]


def all_spikes(series: pl.DataFrame) -> list[Spike]:
    """Every class's spikes, by start."""
    ops = [op for op in OP_CLASSES if {f"{op}_latency_ms", f"{op}_per_s"} <= set(series.columns)]
    if not ops:
        return []
    # A sample's mean latency counts over at least MIN_OPS operations.
    frame = series.select(
        TIME_COLUMN,
        *(
            pl.when(pl.col(f"{op}_per_s") * pl.col("interval_s") >= MIN_OPS).then(pl.col(f"{op}_latency_ms")).alias(op)
            for op in ops
        ),
        previous=pl.col(TIME_COLUMN).shift(1),
    ).with_row_index("row")
    where = frame.select("row", TIME_COLUMN, "previous")
    # The baseline ends before the sample (closed on the left), so a spike does not raise its own bar.
    windows = quantiles_before(
        frame[TIME_COLUMN],
        [frame[op] for op in ops],
        BASELINE,
        {"median": (0.5, "linear"), "q1": (0.25, "nearest"), "q3": (0.75, "nearest")},
        # Only the rows that can be spikes need their window's quantiles: `_flags` reads no other row's.
        where=RULE_FIGURES,
    )
    spikes = []
    for op, window in zip(ops, windows):
        latency = frame[op].cast(pl.Float64).to_numpy()
        rows, baseline = _flags(latency, window)
        spikes += _events(where[series_of(rows)].with_columns(latency=series_of(latency[rows]), baseline=series_of(baseline)), op)
    return sorted(spikes, key=lambda s: s.start)
