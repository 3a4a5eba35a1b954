"""`connection_storm`: clients opening connections far faster than usual, the count climbing.

A storm is the creation rate (Δ totalCreated / Δt) at STORM_FACTOR times
its median of the hour before and at least MIN_RATE per second, sustained
for MIN_S and lasting while the rate stays over the bar it began with, with
the open count rising by RISE_SHARE (docs/metrics.md §9). It is critical when
the node refused connections (Δ rejected > 0, log id 22942) or ran out of
them (available 0).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.rolling import medians_before
from analysis.series.windows import Window, between, sustained
from analysis.text import clock, duration, span_before
from ftdc.frames import TIME_COLUMN

KIND = "connection_storm"
STORM_FACTOR = 10.0
MIN_RATE = 20.0
MIN_S = 5.0
MERGE_S = 10.0
RISE_SHARE = 0.25
USUAL = dt.timedelta(hours=1)  # the window of the median rate a storm is measured against
# Stalls of the server whose waiting requests clients time out on (each sets off a storm by its record), and how long
# after one ends a storm still follows it (a driver's timeouts are seconds to a minute).
STALLS = ("checkpoint_stall", "cache_pressure", "ticket_exhaustion")
TIMED_OUT = dt.timedelta(seconds=60)
CAP_POOLS = advise(
    "limit_clients",
    "Cap each client's pool and how fast it may open connections: driver maxPoolSize, minPoolSize and maxConnecting (default 2)",
)
LOOK_FOR_WHY = advise(
    "investigate",
    "Look for what made clients reconnect at once: an application restart or deploy, a failover, or timeouts upstream",
)
# A storm the server's stall set off: the clients' timeouts turned slow replies into new connections.
BACK_OFF = advise(
    "limit_clients",
    "Keep slow replies from costing connections: set the clients' socketTimeoutMS (or timeoutMS) above the slowest "
    "replies of a stall, or leave it unset (no timeout, the default), and retry with backoff; the stall's own fix "
    "removes what they waited on",
)
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    f"Clients opening connections at {STORM_FACTOR:g} times the median rate of the hour before and at least "
    f"{MIN_RATE:g} per second, for at least {MIN_S:g} s, while the number of open connections rises by "
    f"{RISE_SHARE * 100:g} % or more. Critical when the node refused connections or had none left."
)
DETECTOR = Detector(
    order=80,
    kinds=(KIND,),
    names=("connection storm",),
    method=METHOD,
    root="workload",
    reads=("connections", "connections_available", "connections_created_per_s", "connections_rejected"),
    sets_off=("ticket_exhaustion", "throughput_dip"),  # every new connection authenticates and competes for tickets
    panels=(("connections", ("connections",), False), ("opened/s", ("connections_created_per_s",), False)),
    explained_by=("restart",),  # a new process: its clients reconnect at once
)


def _extended(series: pl.DataFrame, window: Window) -> Window:
    """The storm lasts while clients open connections as fast against the bar when it began: the
    hour's median it is measured against would count the storm's own samples once it lasts long
    enough, and end it early. Never across a gap in the data."""
    after = series.slice(window.last + 1)
    stopped = (after["connections_created_per_s"] < series["bar"][window.first]).fill_null(True)
    if "gap" in after.columns:
        stopped = stopped | after["gap"].fill_null(False)
    more = int(stopped.arg_true()[0]) if stopped.any() else after.height
    last = window.last + more
    return Window(window.start, series[TIME_COLUMN][last], window.first, last)


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("connections", "connections_created_per_s"):
        return [ctx.not_checked(KIND, "Connection storms", ["connections.totalCreated"])]
    if not (ctx.series["connections_created_per_s"] >= MIN_RATE).any():
        # A storm opens at least MIN_RATE connections a second: a node that never did had none, and the hour's
        # medians (a window over every sample) need not be taken.
        return []
    [usual] = medians_before(ctx.series[TIME_COLUMN], [ctx.series["connections_created_per_s"]], USUAL)
    series = ctx.series.with_columns(bar=pl.max_horizontal(STORM_FACTOR * usual.fill_null(0), pl.lit(MIN_RATE)))
    findings, covered = [], None
    for found in sustained(
        series, pl.col("connections_created_per_s") >= pl.col("bar"), min_s=MIN_S, merge_s=MERGE_S, interval=True
    ):
        if covered is not None and found.last <= covered:
            continue  # inside the storm before, extended
        window = _extended(series, found)
        covered = window.last
        rows = window.rows(ctx.series)
        before = between(ctx.series, end=window.start, closed="left").tail(1)["connections"]
        start_count = float(before[0]) if len(before) and before[0] is not None else float(rows["connections"][0])
        peak = aggregates.known(aggregates.greatest(rows["connections"]))
        if peak < (1 + RISE_SHARE) * max(start_count, 1):
            continue  # churn: connections opened and closed as fast
        created = float((rows["connections_created_per_s"] * rows["interval_s"]).sum())
        rejected = float(rows["connections_rejected"].sum() or 0) if ctx.has("connections_rejected") else 0.0
        exhausted = ctx.has("connections_available") and (aggregates.least(rows["connections_available"]) or 1) <= 0
        refused_lines = elsewhere = 0
        if ctx.logs is not None:
            # The count at a sample is of the refusals since the sample before: the window's count covers the lines
            # after its start up to its last sample, and the lines past it are counted by the samples after.
            refusals = ctx.logs.events.filter(pl.col("kind") == "connection_refused")
            refused_lines = refusals.filter(pl.col("ts").is_between(window.start, window.end, closed="right")).height
            elsewhere = refusals.height - refused_lines
        refused = rejected > 0 or exhausted or refused_lines > 0
        prior = ctx.before("connections_created_per_s", window.start)
        baseline = None if prior is None else prior[0]
        against = (
            f"against {baseline:,.1f}/s in {span_before(prior[1], window.start)}"
            if prior is not None
            else f"with no baseline: the capture holds too little before {clock(window.start)}"
        )
        findings.append(
            Finding(
                kind=KIND,
                severity="critical" if refused else "warning",
                start=window.start,
                end=window.end,
                subject="Connection storm",
                statement=f"{created:,.0f} connections opened in {duration(window.seconds)}, open count {start_count:,.0f} → {peak:,.0f}"
                + (", connections refused" if refused else ""),
                reasoning=(
                    f"Clients opened {created:,.0f} connections in {duration(window.seconds)} "
                    f"({created / max(window.seconds, 1):,.0f}/s {against}); open connections rose from "
                    f"{start_count:,.0f} to {peak:,.0f}."
                    + _refusals(rejected, refused_lines, elsewhere)
                    + (" No connections were left available." if exhausted else "")
                ),
                evidence={
                    "metrics": ctx.paths(
                        "connections", "connections_created_per_s", "connections_rejected", "connections_available"
                    ),
                    "created": created,
                    "open_before": start_count,
                    "open_peak": peak,
                    "rejected": rejected,
                    "refused_log_lines": refused_lines,
                    "refused_log_lines_elsewhere": elsewhere,
                    "baseline": {"created_per_s": baseline},
                    "thresholds": {
                        "storm": f"≥ {STORM_FACTOR:g}× the hour's median creation rate and ≥ {MIN_RATE:g}/s for {MIN_S:g} s, open count up {RISE_SHARE:.0%}"
                    },
                },
                recommendations=[CAP_POOLS, LOOK_FOR_WHY],
            )
        )
    return findings


def _refusals(rejected: float, lines: int, elsewhere: int) -> str:
    """The connections refused, as the node counted them, and the log's lines beside them. mongod counts every refusal
    (serverStatus connections.rejected) and logs each one (id 22942) unless it runs quiet (systemLog.quiet): a log that
    holds fewer lines than the count lacks the rest (rotated away, cut short, or quiet), and the count is the figure.
    Both are of the storm's window; the log's refusal lines outside it (`elsewhere`) are said apart, never counted in."""
    outside = f", and {elsewhere:,} more outside it" if elsewhere else ""
    if not rejected:
        return (
            f" The log has {lines:,} line{'s' if lines != 1 else ''} of connections refused in the storm's window"
            f" (id 22942){outside}."
            if lines
            else ""
        )
    text = f" The node refused {rejected:,.0f} connection{'s' if rejected != 1 else ''}"
    if lines >= rejected:
        more = f" ({elsewhere:,} more lines of refusals lie outside the storm's window)" if elsewhere else ""
        return text + f", each with its line in the log{more}."
    if not lines:
        return (
            text + "; the log read has none of their lines in the storm's window (id 22942)"
            f"{outside}: mongod logs each refusal unless systemLog.quiet is set."
        )
    return (
        text + f"; the log read holds the lines of only {lines:,} of them in the storm's window (id 22942){outside}: "
        "mongod logs each refusal unless systemLog.quiet is set, so the log read lacks the rest."
    )


def relate(findings: list[Finding]) -> list[Finding]:
    """The findings again, each storm that began while the server stalled (STALLS) told as the stall's effect: clients
    whose requests waited on it timed out and reconnected, so the hunt for a deploy gives way to the clients' timeouts
    and the stall's own fix. A storm alone keeps its own advice."""
    stalls = [f for f in findings if f.kind in STALLS and f.severity != "info" and f.start is not None and f.end is not None]
    return [_after_stall(f, stalls) if f.kind == KIND and f.severity != "info" and f.start is not None else f for f in findings]


def _after_stall(storm: Finding, stalls: list[Finding]) -> Finding:
    began = storm.start
    if began is None:  # never: `relate` passes only storms with a start
        return storm
    during = sorted((s for s in stalls if s.window[0] <= began <= s.window[1] + TIMED_OUT), key=lambda s: s.window[0])
    if not during:
        return storm
    told = [
        f"{s.title[0].lower() + s.title[1:]} (from {clock(since)}"
        + (f", {duration((began - since).total_seconds())} before the storm began)" if since < began else ")")
        for s, since in ((s, s.window[0]) for s in during)
    ]
    note = (
        "The storm followed a stall of the server: "
        + "; ".join(told)
        + ". Requests held up by a stall time out in the clients, which drop those connections and open new ones at once."
    )
    recommendations = [BACK_OFF if r == LOOK_FOR_WHY else r for r in storm.recommendations]
    return replace(storm, recommendations=recommendations).noted(note)
