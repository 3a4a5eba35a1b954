"""`cache_pressure`: the cache past an eviction trigger, application threads made to evict.

WiredTiger makes application threads evict when the cache is fuller than
eviction_trigger, or dirty data above eviction_dirty_trigger, or update
bytes above eviction_updates_trigger (`__wt_eviction_needed`, docs/metrics.md
§3), using the node's own values (thresholds.py). A breach sustained for
MIN_S, merged across dips shorter than MERGE_S, is a window; application
-thread eviction (pages, time) and time waiting for cache corroborate it.
Uncorroborated breaches are `info`: WiredTiger tests dirty *leaf* bytes, so
the tracked dirty figure can overstate.
"""

from __future__ import annotations

from typing import TypedDict

import polars as pl

from analysis.advice import changes
from analysis.advice.recommendation import Current, Recommendation
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series.aggregates import greatest
from analysis.series.windows import sustained
from analysis.settings import SETTINGS
from analysis.text import duration, span

KIND = "cache_pressure"
MIN_S = 10.0  # "sustained" as support tooling counts it (docs/metrics.md §11: anomaly ≥ 10 s)
MERGE_S = 30.0
# Critical: the cache full, operations timing out, or at least one thread's worth of time waiting for cache.
CRITICAL_FILL_PCT = 99.0
CRITICAL_WAIT_THREADS = 1.0
CRITICAL_S = 300.0

# (label, level column, threshold column, threshold name): each trigger's record names the level it is compared with.
LEVELS = tuple(
    (r.level.removeprefix("cache_").removesuffix("_pct"), r.level, f"{r.name}_pct", r.name) for r in SETTINGS.values() if r.level
)
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "WiredTiger makes application threads evict when the cache is fuller than its eviction trigger, dirty data passes "
    "the dirty trigger, or update bytes pass the updates trigger; the node's own trigger values are used (its "
    "configuration first, WiredTiger's defaults of 95 %, 20 % and 10 % otherwise). A breach lasting at least "
    f"{MIN_S:g} s, with dips shorter than {MERGE_S:g} s bridged, is a window. Application threads evicting pages, "
    "and time spent waiting for cache, confirm it; without them the finding is informational, because WiredTiger "
    "tests dirty leaf pages and the tracked dirty figure can overstate them. Critical: the cache "
    f"{CRITICAL_FILL_PCT:g} % full, operations timing out waiting for cache, a thread's worth of waiting, or "
    f"{CRITICAL_S / 60:g} minutes or more."
)
DETECTOR = Detector(
    order=20,
    kinds=(KIND,),
    names=("cache pressure",),
    method=METHOD,
    reads=(
        "cache_fill_pct",
        "cache_dirty_pct",
        "cache_updates_pct",
        "cache_max_bytes",
        "eviction_trigger_pct",
        "eviction_dirty_trigger_pct",
        "eviction_updates_trigger_pct",
        "app_evicted_pages_per_s",
        "app_evict_threads",
        "app_wait_threads",
        "cache_timeouts",
    ),
    # Application threads evict while holding tickets; dirty data past the trigger makes checkpoints long.
    sets_off=("checkpoint_stall", "ticket_exhaustion", "throughput_dip", "connection_storm", "replication_lag", "primary_change"),
    panels=(
        ("cache, %", ("cache_fill_pct", "cache_dirty_pct", "cache_updates_pct"), False),
        ("application threads waiting for cache (threads)", ("app_wait_threads",), False),
    ),
    # Pages read from disk fill the cache: a scan's reading is time it held it.
    reading_holds=True,
    # Dirty data outrunning eviction: the write load, an index build, pinned history, or a cache too small for the working set;
    # the checkpoint interval, the cache size and the eviction targets and triggers bear on it.
    explained_by=("write_load", "index_build", "pinned_history", "cache_too_small"),
    settings=(
        "checkpoint_interval",
        "cache_size",
        "eviction_target",
        "eviction_trigger",
        "eviction_dirty_target",
        "eviction_dirty_trigger",
        "eviction_updates_trigger",
    ),
)


class Breach(TypedDict):
    """One level's time past its trigger in a window, as the evidence holds it."""

    peak_pct: float
    threshold_pct: float
    threshold_source: str
    seconds_over: float
    baseline_pct: float | None


def _sum(rows: pl.DataFrame, column: str, per_second: bool = True) -> float:
    if column not in rows.columns:
        return 0.0
    values = rows[column] * rows["interval_s"] if per_second else rows[column]
    return float(values.sum() or 0)


def _max(rows: pl.DataFrame, column: str) -> float | None:
    peak = greatest(rows[column]) if column in rows.columns else None
    return None if peak is None else float(peak)


def _cache_now(ctx: Context) -> Current | None:
    """The cache's size: the node's setting, or the largest maximum serverStatus reports when none was recorded."""
    t = ctx.thresholds
    if t.value("cache_size") is not None:
        return changes.current(t, "cache_size")
    reported = greatest(ctx.series["cache_max_bytes"]) if ctx.has("cache_max_bytes") else None
    if not reported:
        return None
    return Current(float(reported), "bytes", "the cache's maximum as serverStatus reports it", "configured")


def _recommendations(
    ctx: Context, window, breached: dict[str, Breach], app_threads_evicted: bool, cache_now: Current | None
) -> list[Recommendation]:
    """The fix for the mechanism first: dirty data outrunning eviction is answered by writing it out sooner,
    a full cache by a larger one (or a smaller working set)."""
    t = ctx.thresholds.within(window.start, window.end)
    dirty = "dirty" in breached or "updates" in breached
    writes = (
        [
            changes.checkpoint_more_often(t, "Dirty data outran eviction: checkpoint more often"),
            changes.earlier_dirty_eviction(t, "Start dirty eviction earlier"),
        ]
        if dirty
        else []
    )
    threads = [
        changes.more_eviction_threads(
            t, "Give eviction more worker threads so application threads need not evict (check the disk keeps up)"
        )
        if app_threads_evicted
        else None
    ]
    cache: list[Recommendation | None] = []
    if "fill" in breached and cache_now is not None:
        cache.append(
            changes.larger_cache(cache_now, breached["fill"]["peak_pct"], t.value("eviction_target") or 80, ctx.node.memory_mb)
        )
    ordered = writes + threads + cache if dirty else cache + threads
    return [r for r in ordered if r is not None]


def detect(ctx: Context) -> list[Finding]:
    checks = [level for level in LEVELS if ctx.has(level[1], level[2])]
    if not checks:
        return [ctx.not_checked(KIND, "Cache pressure", ["WiredTiger cache statistics"])]
    breach = pl.any_horizontal([pl.col(level) > pl.col(limit) for _, level, limit, _ in checks])
    cache_now = _cache_now(ctx)  # the whole range's: once, not per window (two passes over a week each)
    # Each level's samples past its trigger: how many, the trigger's highest value among them, their seconds.
    past = [
        (
            (over := pl.col(level) > pl.col(limit)).sum().alias(f"{label} count"),
            pl.col(limit).filter(over).max().alias(f"{label} threshold"),
            pl.col("interval_s").filter(over).sum().alias(f"{label} seconds"),
            pl.col(level).max().alias(f"{label} peak"),
        )
        for label, level, limit, _ in checks
    ]
    findings = []
    for window in sustained(ctx.series, breach, min_s=MIN_S, merge_s=MERGE_S, interval=True):
        # The window's rows of the columns read here (a filter of all the series' columns cost 1 ms a level).
        rows = window.rows(ctx.series).select(c for c in ("interval_s", *DETECTOR.reads) if c in ctx.series.columns)
        levels = rows.select(e for exprs in past for e in exprs).row(0, named=True)
        breached: dict[str, Breach] = {}
        for label, level, _, name in checks:
            if levels[f"{label} count"]:
                breached[label] = {
                    "peak_pct": round(float(levels[f"{label} peak"]), 2),
                    "threshold_pct": round(float(levels[f"{label} threshold"]), 2),
                    "threshold_source": ctx.thresholds.source(name),
                    "seconds_over": round(float(levels[f"{label} seconds"] or 0), 1),
                    "baseline_pct": None if (b := ctx.baseline(level, window.start)) is None else round(b, 2),
                }
        pages = _sum(rows, "app_evicted_pages_per_s")
        evicting_s = _sum(rows, "app_evict_threads")
        waiting_s = _sum(rows, "app_wait_threads")
        timeouts = _sum(rows, "cache_timeouts", per_second=False)
        corroborated = pages > 0 or evicting_s > 0 or waiting_s > 0
        peak_wait = _max(rows, "app_wait_threads") or 0.0
        peak_fill = breached["fill"]["peak_pct"] if "fill" in breached else 0.0
        if not corroborated:
            severity = "info"
        elif peak_fill >= CRITICAL_FILL_PCT or timeouts > 0 or peak_wait >= CRITICAL_WAIT_THREADS or window.seconds >= CRITICAL_S:
            severity = "critical"
        else:
            severity = "warning"
        what = ", ".join(f"{label} {b['peak_pct']:.1f} % > {b['threshold_pct']:g} %" for label, b in breached.items())
        thresholds = "; ".join(f"{name} {ctx.thresholds.describe(name)}" for label, _, _, name in checks if label in breached)
        if corroborated:
            effect = (
                # Thread time, summed over every application thread: it exceeds the window when many threads wait at once.
                f"Application threads evicted {pages:,.0f} pages and spent {duration(evicting_s)} evicting and {duration(waiting_s)} "
                f"waiting for cache in the window's {duration(window.seconds)}, thread time summed over all threads"
                + (f"; {timeouts:,.0f} operations timed out waiting for space" if timeouts else "")
                + "."
            )
        else:
            effect = "Application threads did not evict: eviction kept up (the tracked dirty figure counts more than the leaf pages WiredTiger tests)."
        findings.append(
            Finding(
                kind=KIND,
                severity=severity,
                start=window.start,
                end=window.end,
                subject=f"Cache past its eviction trigger for {duration(window.seconds)}",
                statement=what,
                reasoning=f"From {span(window.start, window.end)} the cache stood past its trigger ({what}). Thresholds: {thresholds}. {effect}",
                evidence={
                    "metrics": ctx.paths(
                        *(level for _, level, _, _ in checks),
                        "app_evicted_pages_per_s",
                        "app_evict_threads",
                        "app_wait_threads",
                        "cache_timeouts",
                    ),
                    "breaches": breached,
                    "app_evicted_pages": round(pages),
                    "app_evict_seconds": round(evicting_s, 2),
                    "app_wait_seconds": round(waiting_s, 2),
                    "peak_app_wait_threads": round(peak_wait, 3),
                    "timeouts": round(timeouts),
                    "thresholds": {name: ctx.thresholds.describe(name) for _, _, _, name in checks},
                },
                recommendations=_recommendations(ctx, window, breached, corroborated, cache_now),
            )
        )
    return findings
