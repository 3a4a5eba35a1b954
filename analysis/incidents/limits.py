"""A node living at its limits: a cache too small for the working set.

WiredTiger evicts towards eviction_target and makes application threads evict past
eviction_trigger (docs/metrics.md §3). A cache whose fill sits within NEAR points of its
trigger in MOST of the capture's samples, with the bytes read into it in the window
RISING times their usual (when recorded), holds less than the node works on: each
page read in evicts another, and any burst tips it past the trigger. It is a
resource root cause of cache incidents; the fix is memory, not a setting.
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
from analysis.series.metrics import BY_NAME
from analysis.series.windows import between
from analysis.text import pct

# The kinds a cache too small for the working set sets off (cache pressure: its detector's record says).
KINDS = explained_by("cache_too_small")
NEAR = 2.0  # points of the cache
MOST = 0.8
RISING = 1.5


def _near_trigger(series: pl.DataFrame) -> tuple[float, float] | None:
    """The share of the samples whose cache fill sat within NEAR points of the eviction trigger in effect, and the
    fill's median (None without samples holding both)."""
    fill = series.select("cache_fill_pct", "eviction_trigger_pct").drop_nulls()
    if not fill.height:
        return None
    return float((fill["cache_fill_pct"] >= fill["eviction_trigger_pct"] - NEAR).mean()), float(fill["cache_fill_pct"].median())


def cache_too_small(ctx: Context, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    series = ctx.series
    present = [k for k in KINDS if k in kinds]
    if not present or not {"cache_fill_pct", "eviction_trigger_pct"} <= set(series.columns):
        return []
    whole = ctx.once("cache_fill_near_trigger", lambda: _near_trigger(series))
    if whole is None or whole[0] < MOST:
        return []
    near, fill_median = whole
    trigger = ctx.thresholds.describe("eviction_trigger")
    evidence: dict[str, Any] = {
        "mechanism": "cache_too_small",
        "share_near_trigger": round(near, 3),
        "eviction_trigger": trigger,
        "fill_pct_median": round(fill_median, 1),
        "thresholds": {
            "near": f"within {NEAR:g} points of eviction_trigger in ≥ {MOST:.0%} of the samples",
            "reads": f"bytes read into the cache ≥ {RISING:g}× their median before the window",
        },
        "metrics": [BY_NAME["cache.bytes"].paths[0], BY_NAME["cache.bytes_read_into"].paths[0]],
    }
    reads = ""
    if "cache_read_mb_per_s" in series.columns:
        during = between(series, start, end)["cache_read_mb_per_s"].drop_nulls()
        before = between(series, end=start, closed="left")["cache_read_mb_per_s"].drop_nulls()
        if not during.len() or not before.len():
            return []
        now, usual = float(during.mean()), float(before.median())
        if now < RISING * usual:
            return []  # the working set did not grow past the cache: what else pushed it over decides
        evidence.update(read_mb_per_s=round(now, 1), read_mb_per_s_before=round(usual, 1))
        reads = f", and it read {now:,.1f} MB/s into the cache against {usual:,.1f} MB/s before"
    return [
        RootCause(
            kind="resource",
            summary=(
                f"The cache is too small for the working set: its fill sat within {NEAR:g} points of the eviction trigger ({trigger}) in "
                f"{pct(near)} of the samples (median {evidence['fill_pct_median']:g} %){reads}"
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
