"""`throughput_dip`: five seconds in which the node did far less work, for a server-side reason.

Operations per second (opcounters) in 5-second buckets (one sampling period
when longer) are compared with the median bucket of the 10 minutes before. A dip is below DIP_SHARE of that
while the baseline is busy enough to mean something. Clients pausing also
make dips, so a dip counts only when the server shows why: operations queued
for tickets or the global lock, serverStatus itself stalling, a latency
spike, or a sample missing.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from ftdc.frames import TIME_COLUMN

from analysis.findings.context import Context
from analysis.findings.finding import Finding
from analysis.advice.recommendation import advise
from analysis.findings.detectors.record import Detector
from analysis.series.spikes import ADJECTIVE
from analysis.text import duration, pct

KIND = "throughput_dip"
BUCKET_S = 5  # or one sampling period, when longer: a bucket without a sample is no bucket
DIP_SHARE = 0.5
MIN_BASELINE_OPS = 100.0
STALLED_COLLECT_MS = 1000.0  # serverStatus taking a second to answer
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    f"Operations per second in {BUCKET_S}-second buckets (one sampling period when longer) compared with the "
    f"median bucket of the 10 minutes before: a dip is below {DIP_SHARE * 100:g} % of it while that baseline is at least "
    f"{MIN_BASELINE_OPS:g} operations/s. Clients pausing make dips too, so a dip counts only when the server shows "
    "why: operations queued for tickets or the global lock, serverStatus itself taking "
    f"{STALLED_COLLECT_MS / 1000:g} s or more to answer, a latency spike, or a sample missing."
)
DETECTOR = Detector(
    kinds=(KIND,), method=METHOD,
    causes=(),  # an effect only: it names the queue, stall or latency behind it
    panels=(("operations/s", ("ops_per_s",), False), ("queued", ("read_queued", "write_queued"), False)),
)


def _bucket(ctx: Context) -> dt.timedelta:
    return dt.timedelta(seconds=max(BUCKET_S, round(float(ctx.series["period_s"].median() or 1))))


def _buckets(ctx: Context, width: dt.timedelta) -> pl.DataFrame:
    queued = [c for c in ("read_queued", "write_queued", "read_ticket_queue", "write_ticket_queue") if ctx.has(c)]
    # A sample's rate is that of the interval before it (longer when samples were missed): bucket it by
    # when that interval began. A sample after a gap says nothing of a period's work (nor, across a
    # restart, its counters): it stays where it is and its rate is not counted.
    after_gap = pl.col("gap").fill_null(False)
    interval_ms = (pl.when(after_gap).then(0).otherwise(pl.col("interval_s").fill_null(0)) * 1000).round().cast(pl.Int64)
    frame = ctx.series.select(
        pl.col(TIME_COLUMN) - pl.duration(milliseconds=interval_ms), "ops_per_s", gap=after_gap,
        queued=pl.max_horizontal([pl.col(c).fill_null(0) for c in queued]) if queued else pl.lit(0),
        collect_ms=pl.col("collect_ms") if ctx.has("collect_ms") else pl.lit(None, pl.Float64),
        connections=pl.col("connections") if ctx.has("connections") else pl.lit(None, pl.Float64),
    )
    buckets = frame.group_by_dynamic(TIME_COLUMN, every=width).agg(
        ops=pl.col("ops_per_s").filter(~pl.col("gap")).mean(), queued=pl.col("queued").max(), collect_ms=pl.col("collect_ms").max(), gap=pl.col("gap").any(),
        connections=pl.col("connections").cast(pl.Float64).mean(),
    )
    return buckets.with_columns(baseline=pl.col("ops").rolling_median_by(TIME_COLUMN, "10m", closed="left"),
                                usual_connections=pl.col("connections").rolling_median_by(TIME_COLUMN, "10m", closed="left"))


def _last_low(ctx: Context, end: dt.datetime, baseline: float, width: dt.timedelta) -> dt.datetime:
    """`end`, or later: the time of the last sample from the episode's last bucket on whose own interval the rate was
    still a dip. Stalled operations are credited when they finish, so a bucket that holds a stall's release averages
    the dip away, while the samples before the release measured it."""
    after = ctx.series.filter(pl.col(TIME_COLUMN) > end - width).select(TIME_COLUMN, "ops_per_s", pl.col("gap").fill_null(False))
    last = end
    for time, ops, gap in after.iter_rows():
        if gap or ops is None or ops >= DIP_SHARE * baseline:
            break
        last = max(last, time)
    return last


def _clients_left(episode: dict) -> bool:
    """The open connections fell below DIP_SHARE of their usual count: the clients asking for the work went."""
    now, usual = episode["connections"], episode["usual_connections"]
    return now is not None and bool(usual) and now < DIP_SHARE * usual


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("ops_per_s"):
        return [ctx.not_checked(KIND, "Throughput dips", ["opcounters"])]
    width = _bucket(ctx)
    buckets = _buckets(ctx, width)
    dips = buckets.filter(pl.col("baseline") >= MIN_BASELINE_OPS, pl.col("ops") < DIP_SHARE * pl.col("baseline"))
    if dips.is_empty():
        return []
    spikes = ctx.spikes
    # Adjacent dip buckets are one episode.
    episodes = dips.with_columns(episode=(pl.col(TIME_COLUMN).diff() > width).fill_null(True).cum_sum()).group_by("episode", maintain_order=True).agg(
        start=pl.col(TIME_COLUMN).first(), end=pl.col(TIME_COLUMN).last() + width, ops=pl.col("ops").min(), baseline=pl.col("baseline").median(),
        queued=pl.col("queued").max(), collect_ms=pl.col("collect_ms").max(), gap=pl.col("gap").any(),
        connections=pl.col("connections").min(), usual_connections=pl.col("usual_connections").first(),
    )
    findings = []
    for e in episodes.iter_rows(named=True):
        reasons = []
        if e["queued"]:
            reasons.append(f"{e['queued']:,.0f} operations queued")
        if e["collect_ms"] is not None and e["collect_ms"] >= STALLED_COLLECT_MS:
            reasons.append(f"serverStatus took {e['collect_ms']:,.0f} ms to answer")
        if e["gap"]:
            reasons.append("FTDC missed samples")
        inside = [s for s in spikes if s.start < e["end"] and s.end > e["start"]]
        if inside:
            peak = max(inside, key=lambda s: s.peak_ms)
            reasons.append(f"{ADJECTIVE[peak.op]} latency {peak.peak_ms:,.0f} ms")
        if not reasons or (_clients_left(e) and not (e["queued"] or inside or (e["collect_ms"] or 0) >= STALLED_COLLECT_MS)):
            continue  # clients sent less, or left: not the server's doing
        e["end"] = _last_low(ctx, e["end"], e["baseline"], width)
        seconds = (e["end"] - e["start"]).total_seconds()
        findings.append(Finding(
            kind=KIND,
            severity="warning",
            start=e["start"],
            end=e["end"],
            title=f"Throughput fell to {pct(e['ops'] / e['baseline'])} of normal for {duration(seconds)}: {reasons[0]}",
            explanation=(f"Operations fell to {e['ops']:,.0f}/s against {e['baseline']:,.0f}/s in the 10 minutes before, "
                         f"from {e['start']:%H:%M:%S} for {duration(seconds)}, while " + "; ".join(reasons) + "."),
            evidence={
                "metrics": ctx.paths("ops_per_s", "read_queued", "write_queued", "collect_ms"),
                "ops_per_s_min": e["ops"], "baseline": {"ops_per_s": e["baseline"]},
                "thresholds": {"dip": f"< {DIP_SHARE:.0%} of the 10-minute median of {duration(width.total_seconds())} buckets, baseline ≥ {MIN_BASELINE_OPS:g} ops/s"},
                "reasons": reasons,
            },
            recommendations=[advise("investigate", "Read this dip with the findings that overlap it: the queue, stall or latency named here is their effect on throughput")],
        ))
    return findings
