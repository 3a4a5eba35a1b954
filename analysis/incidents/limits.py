"""A node living at its limits: a cache too small for the working set.

WiredTiger evicts towards eviction_target and makes application threads evict past
eviction_trigger (docs/metrics.md §3). A cache whose fill sits within NEAR points of its
trigger in MOST of the samples of the hour before the window (all of them a node living
at its limits, or the hour since its working set outgrew it after quiet hours), with the
bytes read into it in the window RISING times their usual (when recorded), holds less than
the node works on: each page read in evicts another, and any burst tips it past the trigger.
The usual is the quiet samples' (fill below the trigger's reach) where the capture has
enough of them, else every sample's before the window. It is a resource root cause of
cache incidents; the fix is memory, not a setting.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors import explained_by
from analysis.findings.finding import Finding
from analysis.incidents.incident import RootCause
from analysis.series import aggregates
from analysis.series.metrics import BY_NAME
from analysis.series.windows import between
from analysis.text import duration, pct
from ftdc.frames import TIME_COLUMN

# The kinds a cache too small for the working set sets off (cache pressure: its detector's record says).
KINDS = explained_by("cache_too_small")
NEAR = 2.0  # points of the cache
MOST = 0.8
RISING = 1.5
# How long the fill must have sat at the trigger before the window (or all the capture holds before it, when less).
AT_TRIGGER = dt.timedelta(hours=1)
# Quiet samples enough to be the reads' usual: ten minutes of them.
QUIET = dt.timedelta(minutes=10)


def _near() -> pl.Expr:
    return pl.col("cache_fill_pct") >= pl.col("eviction_trigger_pct") - NEAR


def _near_trigger(series: pl.DataFrame) -> tuple[float, float] | None:
    """The share of `series`' samples whose cache fill sat within NEAR points of the eviction trigger in effect, and the
    fill's median (None without samples holding both)."""
    fill = series.select("cache_fill_pct", "eviction_trigger_pct").drop_nulls()
    if not fill.height:
        return None
    return float(fill.select(_near().mean()).item()), aggregates.known(aggregates.median(fill["cache_fill_pct"]))


def _usual_reads(before: pl.DataFrame) -> tuple[float, str] | None:
    """The MB/s read into the cache before the window, and what that rests on: the median of the quiet samples (the fill
    below the trigger's reach) when they add up to QUIET, else of every sample before."""
    rows = before.select(TIME_COLUMN, "cache_read_mb_per_s", "cache_fill_pct", "eviction_trigger_pct").drop_nulls(
        "cache_read_mb_per_s"
    )
    if not rows.height:
        return None
    step = aggregates.median(rows[TIME_COLUMN].diff().dt.total_seconds()) or 1.0
    quiet = rows.filter(~_near().fill_null(True))["cache_read_mb_per_s"]
    if quiet.len() * step >= QUIET.total_seconds():
        return aggregates.known(aggregates.median(quiet)), "its quiet hours before (the cache below its trigger)"
    return aggregates.known(aggregates.median(rows["cache_read_mb_per_s"])), "before"


def cache_too_small(ctx: Context, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    series = ctx.series
    present = [k for k in KINDS if k in kinds]
    if not present or not {"cache_fill_pct", "eviction_trigger_pct"} <= set(series.columns):
        return []
    hour = between(series, start - AT_TRIGGER, start, closed="left")
    at = _near_trigger(hour)
    if at is None or at[0] < MOST:
        return []
    near, fill_median = at
    # What the share rests on: the hour before, or as much of it as the capture holds.
    held_s = (start - hour[TIME_COLUMN][0]).total_seconds()
    trigger = ctx.thresholds.describe("eviction_trigger")
    evidence: dict[str, Any] = {
        "mechanism": "cache_too_small",
        "share_near_trigger": round(near, 3),
        "share_rests_on_s": round(held_s),
        "eviction_trigger": trigger,
        "fill_pct_median": round(fill_median, 1),
        "thresholds": {
            "near": f"within {NEAR:g} points of eviction_trigger in ≥ {MOST:.0%} of the samples of the hour before the window",
            "reads": f"bytes read into the cache ≥ {RISING:g}× their median in the quiet hours before the window (else all before it)",
        },
        "metrics": [BY_NAME["cache.bytes"].paths[0], BY_NAME["cache.bytes_read_into"].paths[0]],
    }
    reads = ""
    if "cache_read_mb_per_s" in series.columns:
        during = between(series, start, end)["cache_read_mb_per_s"].drop_nulls()
        before = _usual_reads(between(series, end=start, closed="left"))
        if not during.len() or before is None:
            return []
        now, (usual, rests_on) = aggregates.known(aggregates.mean(during)), before
        if now < RISING * usual:
            return []  # the working set did not grow past the cache: what else pushed it over decides
        evidence.update(read_mb_per_s=round(now, 1), read_mb_per_s_before=round(usual, 1), reads_usual=rests_on)
        reads = f", and it read {now:,.1f} MB/s into the cache against {usual:,.1f} MB/s in {rests_on}"
    return [
        RootCause(
            kind="resource",
            summary=(
                f"The cache is too small for the working set: its fill sat within {NEAR:g} points of the eviction trigger ({trigger}) in "
                f"{pct(near)} of the samples of the {'hour' if held_s >= 0.95 * AT_TRIGGER.total_seconds() else duration(held_s)} before (median {evidence['fill_pct_median']:g} %){reads}"
            ),
            evidence=evidence,
            recommendations=[
                advise(
                    "resize",
                    "Give the node more cache for its working set (more memory, then storage.wiredTiger.engineConfig.cacheSizeGB), "
                    "or shrink the working set (indexes that fit, documents read less often, an archive of cold data)",
                    "settings alone only move where it tips over",
                )
            ],
            findings=[f.id for k in present for f in kinds[k]],
            headline="A cache too small for the working set",
        )
    ]
