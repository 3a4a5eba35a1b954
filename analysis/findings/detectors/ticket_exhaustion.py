"""`ticket_exhaustion`: operations waiting for a storage-engine ticket, per resource.

Up to 6.x the pools are fixed (128 by default): none available
(`available`, which is `totalTickets - out`) for MIN_S is exhaustion, and `globalLock.currentQueue` shows who waits. From 7.0
throughput probing shrinks the pool on purpose, so `available == 0` alone is
not overload (7.0-concurrent-transactions.rst): work must be queued — the
ticket queue length, time queued, or the global lock queue (docs/metrics.md §4).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import polars as pl

from analysis.advice import changes
from analysis.advice.recommendation import Recommendation, advise
from analysis.findings.context import Context, major_minor
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.derived import WAITERS
from analysis.series.windows import sustained
from analysis.text import duration, ms, span

KIND = "ticket_exhaustion"
MIN_S = 5.0
# Reliefs this short (a few tickets freed between waves) stay inside one episode.
MERGE_S = 15.0
CRITICAL_S = 60.0
OP_OF = {"read": "reads", "write": "writes"}
# The fixed pool size before 7.0: what "stop probing" advises, only to a pool smaller than it.
FIXED_POOL = 128
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    f"Up to 6.x the ticket pools are fixed (128 by default): none available for {MIN_S:g} s or more is exhaustion, "
    "and the global lock queue shows who waits. From 7.0 throughput probing shrinks the pools on purpose, so no "
    "ticket available is not overload by itself: work must also be queued (the ticket queue, time queued, or the "
    f"global lock queue). Windows less than {MERGE_S:g} s apart are one. Critical: {CRITICAL_S:g} s or more, or as "
    "many operations queued as the pool holds at every sample while none was free (demand at least twice what the pool "
    "serves, held: a sampled queue moves by dozens from one second to the next, so its busiest sample alone says little)."
)
DETECTOR = Detector(
    order=30,
    kinds=(KIND,),
    names=("ticket exhaustion",),
    method=METHOD,
    reads=(
        *(
            f"{rw}_{c}"
            for rw in ("read", "write")
            for c in ("tickets_available", "tickets_out", "tickets_total", "ticket_queue", "queued", "ticket_waiters")
        ),
        "reads_latency_ms",
        "writes_latency_ms",
    ),
    sets_off=("throughput_dip", "connection_storm"),  # work queues, clients time out and reconnect
    panels=(
        ("tickets available", ("read_tickets_available", "write_tickets_available"), False),
        (
            "queued",
            (
                "read_queued",
                "write_queued",
                "read_ticket_queue",
                "write_ticket_queue",
                "read_ticket_waiters",
                "write_ticket_waiters",
            ),
            False,
        ),
    ),
    settings=("read_tickets", "write_tickets"),  # a pool fixed below its default
)


def _queued(columns: Collection[str], rw: str) -> list[pl.Expr]:
    """Every measure of queued work the series has for `rw`: someone in the ticket
    queue or the global lock queue, or on average at least one operation waiting
    through the interval (Δ totalTimeQueuedMicros / Δt; microseconds of waiting are not a queue)."""
    gauges = [pl.col(c).fill_null(0) > 0 for c in (f"{rw}_ticket_queue", f"{rw}_queued") if c in columns]
    waiting = [pl.col(f"{rw}_ticket_waiters").fill_null(0) >= 1] if f"{rw}_ticket_waiters" in columns else []
    return gauges + waiting


def _needs_queue(columns: Collection[str], version: str | None, rw: str) -> bool:
    """7.0+: no ticket available is not overload by itself (throughput probing)."""
    known = major_minor(version)
    return known >= (7, 0) if known else f"{rw}_ticket_waiters" in columns


def _probing(ctx: Context, rw: str) -> bool:
    """7.0+ sizes the pool dynamically unless a fixed size was set."""
    return _needs_queue(ctx.series.columns, ctx.node.version, rw) and ctx.thresholds.value(f"{rw}_tickets") is None


def exhausted(columns: Collection[str], version: str | None, rw: str) -> pl.Expr | None:
    """Per sample of a derived series with `columns`: no `rw` ticket available, and from 7.0 work
    queued for one; None when the series cannot tell."""
    if f"{rw}_tickets_available" not in columns:
        return None
    none_left = pl.col(f"{rw}_tickets_available") <= 0
    if not _needs_queue(columns, version, rw):
        return none_left
    queued = _queued(columns, rw)
    return none_left & pl.any_horizontal(queued) if queued else None


def exhausted_for(held_s: float, window_s: float) -> str:
    """How long no ticket was free, said once for the title and the reasoning: the window only where it differs."""
    held, window = duration(held_s), duration(window_s)
    return held if held == window else f"{held} of {window}"


def _recommendations(ctx: Context, window, rw: str, total: int) -> list[Recommendation]:
    recs = []
    if rw == "read":
        # Advice about the reads that held the tickets: the validator keeps it only where the log shows such reads.
        recs += [
            advise(
                "change_workload",
                "Find what holds read tickets for long: bound long reads with maxTimeMS and give them an index",
                assumes="operations_unnamed",
            ),
            advise(
                "read_from_secondaries",
                'Move analytics reads to a secondary (readPreference "secondaryPreferred", or an analytics node by tag) '
                "so they do not hold the primary's read tickets",
                topology="primary",
                assumes="operations_held",
            ),
        ]
    # A larger pool is no fix where nothing shows the pool, not the storage engine, was the limit: the only pool change
    # made is probing's own shrinking undone, which the validator checks against the incident.
    if _probing(ctx, rw) and total < FIXED_POOL:
        # Evidence that probing itself held the node back: it shrank the pool, and (the validator checks) nothing in the
        # incident shows the storage engine or a collection scan behind the wait.
        cores = ctx.node.cpus
        now = changes.current(ctx.thresholds.within(window.start, window.end), f"{rw}_tickets")
        fixed = changes.change(
            f"{rw}_tickets",
            now,
            FIXED_POOL,
            f"Fix the {rw} pool: throughput probing held it below what the storage engine could take",
            f"probing sized it down to {total}"
            + (f" (it starts from 2 × {cores} cores)" if cores else "")
            + " while the cache, checkpoints and disk kept up",
        )
        if fixed is not None:  # None: the node's pool is already the fixed one
            recs.append(
                replace(
                    fixed,
                    caveat=(
                        f"a fixed pool turns throughput probing off: {FIXED_POOL} {rw}s enter the storage engine however slow it gets, "
                        "where probing would have shrunk the pool; set it back to 0 when the load changes"
                    ),
                    assumes="engine_not_bottleneck",
                )
            )
    return recs


def detect(ctx: Context) -> list[Finding]:
    findings = []
    for rw in ("read", "write"):
        needed = [f"{rw}_tickets_available", f"{rw}_tickets_out", f"{rw}_tickets_total"]
        if not ctx.has(*needed):
            findings.append(ctx.not_checked(KIND, f"{rw.capitalize()} tickets", [f"{rw} ticket statistics"]))
            continue
        condition = exhausted(ctx.series.columns, ctx.node.version, rw)
        if condition is None:
            findings.append(ctx.not_checked(KIND, f"{rw.capitalize()} ticket queueing", [f"{rw} ticket queue statistics"]))
            continue
        op = OP_OF[rw]
        for window in sustained(ctx.series, condition, min_s=MIN_S, merge_s=MERGE_S, interval=True):
            rows = window.rows(ctx.series)
            # One column filtered, not the window's every column.
            held = float(rows.select(pl.col("interval_s").filter(condition).sum()).item() or 0)
            total = int(aggregates.greatest(rows[f"{rw}_tickets_total"]) or 0)
            available = int(aggregates.least(rows[f"{rw}_tickets_available"]) or 0)
            queue_cols = [c for c in (f"{rw}_ticket_queue", f"{rw}_queued", f"{rw}_ticket_waiters") if ctx.has(c)]
            peaks = {c: float(aggregates.greatest(rows[c]) or 0) for c in queue_cols}
            # The queue's own gauges when the node has them: the mean waiters (from time queued) run
            # higher than any sampled queue length, and the title must match the plotted queue.
            gauges = [peaks[c] for c in queue_cols if not c.endswith("_waiters")]
            queued_peak = max(gauges or peaks.values(), default=0.0)
            latency = f"{op}_latency_ms"
            lat_max = aggregates.greatest(rows[latency]) if ctx.has(latency) else None
            lat_peak = None if lat_max is None else float(lat_max)
            usual = ctx.usual_latency(op, window.start) if lat_peak is not None else None
            # A queue as long as the pool is demand at least twice what the pool serves, when it lasts: judged at every
            # sample while none was free, not at the busiest one. A sampled queue moves by dozens from one second to
            # the next, and its peak alone rated like stalls one critical, the next a warning.
            gauge_cols = [c for c in queue_cols if not c.endswith("_waiters")] or queue_cols
            least = (
                rows.select(pl.max_horizontal([pl.col(c).fill_null(0) for c in gauge_cols]).filter(condition).min()).item()
                if gauge_cols
                else None
            )
            held_full = bool(total and least is not None and least >= total)
            severity = "critical" if window.seconds >= CRITICAL_S or held_full else "warning"
            waiters = peaks.get(f"{rw}_ticket_waiters", 0.0)
            if queued_peak < 1 <= waiters:
                # Queued between samples only (a short queue at 10 s sampling): the mean from time queued says it.
                queue_text = f"; {waiters:,.0f} {WAITERS[rw]} waiting on average over the worst sampling interval"
            else:
                queue_text = f"; {queued_peak:,.0f} {WAITERS[rw]} queued at peak" if queue_cols else ""
            held_text = f", never fewer than the pool's {total} while none was free" if held_full else ""
            latency_text = f" Mean {rw} latency reached {ms(lat_peak)}." if lat_peak is not None else ""
            findings.append(
                Finding(
                    kind=KIND,
                    severity=severity,
                    resource=rw,
                    start=window.start,
                    end=window.end,
                    # The time none was free (`held`) is the one duration quoted: the window adds the samples around it.
                    subject=f"{rw.capitalize()} tickets exhausted for {exhausted_for(held, window.seconds)}",
                    statement=f"{available} of {total} available{queue_text}",
                    reasoning=(
                        f"{rw.capitalize()} tickets {available} of {total} available from {span(window.start, window.end)} "
                        f"(none free for {exhausted_for(held, window.seconds)}){queue_text}{held_text}.{latency_text}"
                    ),
                    evidence={
                        "metrics": ctx.paths(*needed, *queue_cols, latency),
                        "tickets_total": total,
                        "seconds_exhausted": round(held, 1),
                        "tickets_available_min": available,
                        "queued_peak": peaks,
                        "latency_ms_peak": lat_peak,
                        "baseline": {"latency_ms": None if usual is None else round(usual.latency_ms, 3)},
                        "thresholds": {
                            "exhausted": "no ticket available"
                            + (" with work queued (7.0+)" if _needs_queue(ctx.series.columns, ctx.node.version, rw) else ""),
                            "sustained_s": MIN_S,
                            f"{rw}_tickets": ctx.thresholds.describe(f"{rw}_tickets"),
                        },
                    },
                    recommendations=_recommendations(ctx, window, rw, total),
                    usual=usual,
                )
            )
    return findings
