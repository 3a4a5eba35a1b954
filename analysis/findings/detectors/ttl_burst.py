"""`ttl_burst`: the TTL monitor deleting far more than usual in one pass, and what it cost.

The TTL monitor wakes every 60 s (`ttlMonitorSleepSecs`) and deletes expired
documents on primaries (docs/metrics.md §7): a pass is a run of samples with
deletes, those less than PASS_GAP apart (half its sleep) in one. A pass is a
burst when its busiest minute (any 60 s, not a calendar minute: a pass
straddling one is not split) deletes BURST_FACTOR times the usual (the
median minute of the hour before the pass, at least MIN_BASELINE) and at
least MIN_DOCS. Its cost: write latency spikes, write tickets or dirty cache
while it ran; a burst that cost nothing is `info`.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series.aggregates import greatest, least
from analysis.text import clock, duration, ms, span_before
from ftdc.frames import TIME_COLUMN

KIND = "ttl_burst"
MINUTE = "1m"
PASS_GAP = dt.timedelta(seconds=30)
BURST_FACTOR = 10.0
MIN_BASELINE = 100.0  # docs per minute
BASELINE = dt.timedelta(hours=1)  # the usual minute is the median of this long before
# One 6.1+ sub-pass deletes at most 50,000 documents per index (SERVER-56194);
# a fifth of that in a minute is a burst worth a look.
MIN_DOCS = 10_000
PEAK_QUANTILE = 0.8  # "at peak": the node's busiest fifth of the time
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "The TTL monitor wakes every 60 s and deletes expired documents on primaries; samples with TTL deletes less "
    f"than {PASS_GAP.total_seconds():g} s apart are one pass. A pass is a burst when its busiest 60 s delete "
    f"{BURST_FACTOR:g} times the usual minute (the median of the hour before, at least {MIN_BASELINE:g} documents) "
    f"and at least {MIN_DOCS:,} documents. Its cost is write latency spikes, write tickets or dirty cache while "
    "it ran; a burst that cost nothing is informational."
)
DETECTOR = Detector(
    reads_spikes=True,
    order=40,
    kinds=(KIND,),
    names=("TTL deletion burst",),
    method=METHOD,
    root="workload",
    reads=(
        "ttl_deleted",
        "finished_per_s",
        "writes_latency_ms",
        "write_tickets_available",
        "cache_dirty_pct",
        "eviction_dirty_target_pct",
    ),
    # The deletes dirty the cache, hold write tickets and write to disk like any other writes.
    sets_off=("cache_pressure", "checkpoint_stall", "ticket_exhaustion", "throughput_dip", "disk_saturation"),
    panels=(("TTL deletes per sample", ("ttl_deleted",), False), ("latency, ms", ("writes_latency_ms",), True)),
)


def _minutes(series: pl.DataFrame) -> pl.DataFrame:
    """Calendar minutes: deletes, load, and the usual deletes a minute in the hour before each."""
    frame = series.select(TIME_COLUMN, "ttl_deleted", *(["finished_per_s"] if "finished_per_s" in series.columns else []))
    aggs = [pl.col("ttl_deleted").sum().alias("deleted")]
    if "finished_per_s" in frame.columns:
        aggs.append(pl.col("finished_per_s").mean().alias("finished_per_s"))
    minutes = frame.group_by_dynamic(TIME_COLUMN, every=MINUTE).agg(aggs)
    usual = pl.col("deleted").rolling_median_by(TIME_COLUMN, BASELINE, closed="left").fill_null(0).clip(lower_bound=MIN_BASELINE)
    return minutes.with_columns(usual=usual)


def _passes(series: pl.DataFrame, minutes: pl.DataFrame) -> pl.DataFrame:
    """One row per pass: its window (from the interval before its first deletes), documents deleted,
    its busiest 60 s, mean load, and the usual minute before it (that of the minute it began in,
    which counts only minutes before)."""
    frame = series.select(
        TIME_COLUMN,
        deleted=pl.col("ttl_deleted").fill_null(0),
        previous=pl.col(TIME_COLUMN).shift(1),
        finished_per_s=pl.col("finished_per_s") if "finished_per_s" in series.columns else pl.lit(None, pl.Float64),
    ).with_columns(busiest=pl.col("deleted").rolling_sum_by(TIME_COLUMN, MINUTE))
    deleting = frame.filter(pl.col("deleted") > 0)
    passes = (
        deleting.with_columns(run=(pl.col(TIME_COLUMN).diff() > PASS_GAP).fill_null(True).cum_sum())
        .group_by("run", maintain_order=True)
        .agg(
            start=pl.coalesce("previous", TIME_COLUMN).first(),
            end=pl.col(TIME_COLUMN).last(),
            deleted=pl.col("deleted").sum(),
            busiest=pl.col("busiest").max(),
            finished_per_s=pl.col("finished_per_s").mean(),
        )
    )
    return (
        passes.sort("start")
        .join_asof(minutes.select(TIME_COLUMN, "usual"), left_on="start", right_on=TIME_COLUMN, strategy="backward")
        .with_columns(pl.col("usual").fill_null(MIN_BASELINE))
    )


def _usual_told(ctx: Context, start: dt.datetime, usual: float) -> str:
    """What a pass's busiest minute is told against, and what that rests on: the median minute of the hour before the
    minute the pass began in (`_minutes`), or the floor the usual is never taken below."""
    minute = start.replace(second=0, microsecond=0)
    since = ctx.earliest_before(minute, BASELINE)
    if usual <= MIN_BASELINE or since is None:
        return (
            f"the {MIN_BASELINE:,.0f} a minute its usual is never taken below (the minutes before {clock(minute)} deleted fewer)"
        )
    return f"its usual {usual:,.0f} per minute (the median minute of {span_before(since, minute)})"


def _cause(lines: pl.DataFrame | None, row: dict, ctx: Context, start: dt.datetime) -> str:
    """What the burst was, as its incident's root cause says it: the TTL monitor's pass on the collections and indexes its
    log lines name (what it deleted there, by the line), its busiest minute against the usual one."""
    busiest = f"{row['busiest']:,.0f} in its busiest minute, {row['busiest'] / row['usual']:,.0f}× {_usual_told(ctx, start, row['usual'])}"
    if lines is None:
        return f"the TTL monitor deleting expired documents all at once ({busiest}); no mongod log was read, so the collection and index it deleted through are not named"
    passes = _passes_logged(lines)
    if not passes:
        return f"the TTL monitor deleting expired documents all at once ({busiest}); the log names no collection for the pass"
    where = ", ".join(
        f"{ns} through its TTL index {index or '(not named)'}"
        + (f" ({deleted:,} documents by the log's line of that pass)" if deleted is not None else "")
        for ns, index, deleted in passes
    )
    return f"the TTL monitor's pass deleting expired documents of {where} all at once: {busiest}"


def _passes_logged(lines: pl.DataFrame | None) -> list[tuple[str, str | None, int | None]]:
    """(namespace, index, documents deleted) of each distinct TTL pass line in `lines`."""
    from ftdc.logs.events import ttl_pass  # the log's decoders (msgspec) only where a log was read

    return list(dict.fromkeys(p for text in lines["text"] if (p := ttl_pass(text)) is not None)) if lines is not None else []


def _jitter(lines: pl.DataFrame | None) -> str:
    """Where to add jitter: the field of the TTL index the log's pass line names, on its collection; the date field the
    TTL index reads where no line names one."""
    named = [(ns, index) for ns, index, _ in _passes_logged(lines) if index]
    if not named:
        return "add jitter to the date field the TTL index reads"
    where = " and ".join(f"index {index} on {ns}" for ns, index in dict.fromkeys(named))
    return f"add jitter to the date field the TTL {where} reads"


def _lines_told(lines: pl.DataFrame | None, deleted: float) -> str:
    """The log's TTL pass lines in the window, and what they count beside the server's own count of TTL deletes
    (`deleted`): the server counts every document its TTL monitor deleted in the window, a line only its pass on one
    index."""
    logged = _passes_logged(lines)
    if not logged:
        return ""
    numbers = [n for _, _, n in logged if n is not None]
    said = f" The log's TTL pass line{'s' if len(logged) != 1 else ''} in that time"
    if not numbers:
        return said + (" name the collections it deleted from." if len(logged) != 1 else " names the collection it deleted from.")
    total = sum(numbers)
    said += f" count{'s' if len(logged) == 1 else ''} {total:,} of them"
    if total != round(deleted):
        said += (
            f": the server counted all {deleted:,.0f} documents its TTL monitor deleted in the window, "
            f"the log's line{'s' if len(logged) != 1 else ''} only {'their passes' if len(logged) != 1 else 'its pass'} on "
            f"{'their indexes' if len(logged) != 1 else 'one index'}"
        )
    return said + "."


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("ttl_deleted"):
        return [ctx.not_checked(KIND, "TTL bursts", ["metrics.ttl.deletedDocuments"])]
    if (ctx.series["ttl_deleted"].sum() or 0) < MIN_DOCS:
        # A burst deletes at least MIN_DOCS documents in its busiest minute: a capture that deleted fewer in all had
        # none, and its minutes and passes need not be taken.
        return []
    minutes = _minutes(ctx.series)
    busy = minutes["finished_per_s"].quantile(PEAK_QUANTILE) if "finished_per_s" in minutes.columns else None
    bursts = _passes(ctx.series, minutes).filter(
        pl.col("busiest") >= BURST_FACTOR * pl.col("usual"), pl.col("busiest") >= MIN_DOCS
    )
    write_spikes = [s for s in ctx.spikes if s.op == "writes"]
    findings = []
    for row in bursts.iter_rows(named=True):
        start, end = row["start"], row["end"]
        seconds = (end - start).total_seconds()
        rows = ctx.window(start, end)
        costs = []
        spikes = [s for s in write_spikes if s.start <= end and s.end >= start]
        usual = None
        if spikes:
            peak = max(spikes, key=lambda s: s.peak_ms)
            usual = ctx.usual_latency(peak.op, start, peak.baseline_ms, in_title=True)
            costs.append(f"write latency up to {ms(peak.peak_ms)}")
        if ctx.has("write_tickets_available") and (least(rows["write_tickets_available"]) or 1) <= 0:
            costs.append("write tickets ran out")
        dirty_target = greatest(rows["eviction_dirty_target_pct"]) if "eviction_dirty_target_pct" in rows.columns else None
        dirty = greatest(rows["cache_dirty_pct"]) if ctx.has("cache_dirty_pct") else None
        if dirty is not None and dirty_target is not None and dirty > dirty_target:
            costs.append(f"dirty data {dirty:.1f} % of the cache, above the {dirty_target:g} % target")
        at_peak = busy is not None and row.get("finished_per_s") is not None and row["finished_per_s"] >= busy
        peak_text = (
            f" at peak load ({row['finished_per_s']:,.0f} operations finished/s, as busy as the busiest fifth of the capture's minutes)"
            if at_peak
            else ""
        )
        lines = None
        if ctx.logs is not None:
            # The pass's line is written as it finishes, after its last deletes were sampled.
            lines = ctx.logs.events.filter(pl.col("kind") == "ttl", pl.col("ts").is_between(start, end + PASS_GAP))
        findings.append(
            Finding(
                kind=KIND,
                severity="warning" if costs else "info",
                start=start,
                end=end,
                subject=f"TTL monitor deleted {row['deleted']:,.0f} documents in {duration(seconds)}{peak_text}",
                statement=costs[0] if costs else "",
                usual=usual,  # the latency costs[0] names
                cause=_cause(lines, row, ctx, start),
                reasoning=(
                    f"The TTL monitor deleted {row['deleted']:,.0f} documents in {duration(seconds)} from {clock(start)}, "
                    f"{row['busiest']:,.0f} in its busiest minute, {row['busiest'] / row['usual']:,.0f}× {_usual_told(ctx, start, row['usual'])}{peak_text}. "
                    + ("Cost: " + "; ".join(costs) + "." if costs else "No write latency, ticket or dirty-cache effect was seen.")
                    + _lines_told(lines, row["deleted"])
                ),
                evidence={
                    "metrics": ctx.paths("ttl_deleted", "writes_latency_ms", "write_tickets_available", "cache_dirty_pct"),
                    "deleted": row["deleted"],
                    "baseline": {
                        "deleted_per_minute": row["usual"],
                        **({"latency_ms": round(usual.latency_ms, 3)} if usual is not None else {}),
                    },
                    "thresholds": {
                        "burst": f"a pass whose busiest minute deletes ≥ {BURST_FACTOR:g}× the median minute of the hour before and ≥ {MIN_DOCS:,} documents"
                    },
                    "at_peak_load": at_peak,
                },
                recommendations=[
                    advise("batch_writes", f"Spread expiry so documents do not expire together: {_jitter(lines)}"),
                    advise(
                        "batch_writes",
                        "Move mass expiry off peak: delete in batches from a scheduled job in a quiet hour, or pause the monitor at peak "
                        "(setParameter ttlMonitorEnabled: false) and resume it after",
                    ),
                ]
                if costs
                else [],
            )
        )
    return findings
