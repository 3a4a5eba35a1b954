"""`dhandle_pressure`: data handles (one per open collection and index file) that grow and block.

Each collection and index is a WiredTiger file with a data handle; sweeps
close handles idle for `close_idle_time` once more than
`close_handle_minimum` are open (docs/metrics.md §10). Pressure shows as
application threads waiting for the dhandle or schema lock while more
handles are open than sweeps leave alone (with few handles, those waits
come from schema operations, not handles), and as checkpoints spending long
gathering handles (SERVER-19954: 50 k tables
stalled inserts for minutes). Growth alone is `info`.
"""

from __future__ import annotations

import polars as pl

from analysis.advice import changes
from analysis.advice.recommendation import Recommendation, advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.windows import sustained
from analysis.text import clock, duration, ms

KIND = "dhandle_pressure"
LOCK_WAIT_THREADS = 0.1  # a tenth of a thread waiting, on average, for the lock
MIN_S = 30.0
MERGE_S = 30.0
GATHER_MS = 1000.0  # a checkpoint spending a second just gathering handles
GROWTH = 0.5
MIN_GROWTH = 1000
# Below this many handles sweeps do not run and handles are not what threads wait for
# (WiredTiger's close_handle_minimum default; mongod 6.0+ sets 2000).
CLOSE_HANDLE_MINIMUM = 250
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "Each collection and index is a WiredTiger file with a data handle; the sweep closes handles idle for "
    "close_idle_time once more than close_handle_minimum are open. Pressure is application threads waiting for "
    f"the data-handle or schema lock ({LOCK_WAIT_THREADS:g} threads on average) while more handles are open than "
    f"the sweep leaves alone, or checkpoints spending {GATHER_MS / 1000:g} s or more gathering handles, for at "
    f"least {MIN_S:g} s. Handles growing by {GROWTH * 100:g} % and at least {MIN_GROWTH:,} alone is informational."
)
DETECTOR = Detector(
    order=60,
    kinds=(KIND,),
    names=("data-handle pressure",),
    method=METHOD,
    root="workload",
    reads=("dhandles", "dhandles_swept", "dhandle_lock_wait_threads", "schema_lock_wait_threads", "checkpoint_gather_handles_ms"),
    sets_off=("checkpoint_stall", "ticket_exhaustion", "throughput_dip"),  # checkpoints gather handles; threads wait for the lock
    panels=(
        ("data handles", ("dhandles",), False),
        ("lock waits (threads)", ("dhandle_lock_wait_threads", "schema_lock_wait_threads"), False),
    ),
)


def _recommendations(ctx: Context, handles: float | None, start, end) -> list[Recommendation]:
    recs = []
    if handles:
        recs.append(
            advise(
                "change_workload",
                "Drop unused collections and indexes, and avoid a collection per tenant or day at this scale",
                # Checkpoints gather every handle and the sweep walks them all, holding the locks the waiting threads
                # need (WiredTiger's checkpoint and sweep servers): fewer handles, shorter holds.
                f"{handles:,.0f} data handles are open, one for each collection and index in use: every checkpoint and "
                "every sweep walks them all while holding the handle lock the waiting threads need, so each one dropped "
                "shortens that wait",
            )
        )
    sweep = changes.sooner_sweep(ctx.thresholds.within(start, end))
    return recs + ([sweep] if sweep else [])


def _first(ctx: Context) -> tuple[float | None, object]:
    """The data handles open at the capture's first sample that records them, and when."""
    counts = ctx.series.select("start", "dhandles").drop_nulls()
    return (float(counts["dhandles"][0]), counts["start"][0]) if counts.height else (None, None)


def _grew(first: float | None, handles: float) -> bool:
    return first is not None and handles - first >= MIN_GROWTH and handles >= (1 + GROWTH) * max(first, 1)


def _cause(ctx: Context, first: float | None, since, handles: float) -> str:
    """What the handles blocking comes from, as its incident's root cause says it: the collections and indexes the node
    holds (one handle each), grown since the capture's first sample (`first` at `since`) where they grew, more than the
    sweep leaves open."""
    grew = _grew(first, handles)
    held = (
        f"the collections and indexes the node holds open (one data handle each) grew from {first:,.0f} at "
        f"{clock(since, dated=True)} to {handles:,.0f}"
        if grew
        else f"the node holds {handles:,.0f} collections and indexes open (one data handle each)"
    )
    minimum = ctx.thresholds.value("close_handle_minimum") or CLOSE_HANDLE_MINIMUM
    return f"{held}, past the {minimum:,.0f} above which the sweep starts closing idle handles"


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("dhandles"):
        return [ctx.not_checked(KIND, "Data-handle pressure", ["data-handle statistics"])]
    findings = []
    waits = [c for c in ("dhandle_lock_wait_threads", "schema_lock_wait_threads") if ctx.has(c)]
    many = pl.col("dhandles") >= (ctx.thresholds.value("close_handle_minimum") or CLOSE_HANDLE_MINIMUM)
    pressure = [(pl.col(c) >= LOCK_WAIT_THREADS) & many for c in waits]
    if ctx.has("checkpoint_gather_handles_ms"):
        pressure.append(pl.col("checkpoint_gather_handles_ms") >= GATHER_MS)
    first, since = _first(ctx)
    for window in sustained(ctx.series, pl.any_horizontal(pressure), min_s=MIN_S, merge_s=MERGE_S) if pressure else []:
        rows = window.rows(ctx.series)
        handles = float(aggregates.greatest(rows["dhandles"]) or 0)
        parts = [
            f"{c.split('_lock')[0].replace('_', ' ')} lock: {aggregates.known(aggregates.mean(rows[c])):.2f} threads waiting on average"
            for c in waits
        ]
        if ctx.has("checkpoint_gather_handles_ms"):
            parts.append(
                f"checkpoints spent up to {ms(float(aggregates.greatest(rows['checkpoint_gather_handles_ms']) or 0))} gathering handles"
            )
        findings.append(
            Finding(
                kind=KIND,
                severity="warning",
                start=window.start,
                end=window.end,
                subject=f"Threads waited on the data-handle locks for {duration(window.seconds)} with {handles:,.0f} handles open",
                reasoning=f"With {handles:,.0f} data handles open, " + "; ".join(parts) + ".",
                cause=_cause(ctx, first, since, handles),
                evidence={
                    "metrics": ctx.paths("dhandles", *waits, "checkpoint_gather_handles_ms", "dhandles_swept"),
                    "dhandles_peak": handles,
                    **({"dhandles_first": first} if _grew(first, handles) else {}),
                    "thresholds": {
                        "lock_wait_threads": LOCK_WAIT_THREADS,
                        "gather_ms": GATHER_MS,
                        "sustained_s": MIN_S,
                        "close_idle_time": ctx.thresholds.describe("close_idle_time"),
                        "close_handle_minimum": ctx.thresholds.describe("close_handle_minimum"),
                    },
                },
                recommendations=_recommendations(ctx, handles, window.start, window.end),
            )
        )
    counts = ctx.series.select("start", "dhandles").drop_nulls()
    # The growth is context only where no window of waits tells it already, as its cause.
    if counts.height >= 2 and not any("dhandles_first" in f.evidence for f in findings):
        first, peak = float(counts["dhandles"][0]), aggregates.known(aggregates.greatest(counts["dhandles"]))
        if _grew(first, peak):
            at = counts.filter(pl.col("dhandles") == peak)["start"][0]
            swept = float(ctx.series["dhandles_swept"].sum() or 0) if ctx.has("dhandles_swept") else None
            findings.append(
                Finding(
                    kind=KIND,
                    severity="info",
                    start=counts["start"][0],
                    end=at,
                    subject=f"Data handles grew from {first:,.0f} to {peak:,.0f}",
                    reasoning=f"Open data handles grew from {first:,.0f} to {peak:,.0f} by {clock(at, dated=True)}"
                    + (f"; sweeps closed {swept:,.0f} in that time." if swept is not None else "."),
                    evidence={"metrics": ctx.paths("dhandles", "dhandles_swept"), "first": first, "peak": peak, "swept": swept},
                    recommendations=_recommendations(ctx, peak, counts["start"][0], at),
                )
            )
    return findings
