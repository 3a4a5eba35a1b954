"""Context, not problems: restarts and FTDC gaps (`info`).

A restart is a new process (`derived._bookkeeping`); a gap is a step
over GAP_PERIODS sampling periods with no sample (mongod down, or stalled so
badly that FTDC could not collect). Both bound what the other findings can see.
Those inside a restart loop are the loop's (`restart_loop`).
"""

from __future__ import annotations

import polars as pl

from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.detectors.restart_loop import loops
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.derived import GAP_PERIODS
from analysis.text import dated_span, duration
from ftdc.frames import TIME_COLUMN

# Context for the other findings (`info`): what it bounds, nothing it causes.
METHOD = (
    "A restart is a new process (its pid changed or its uptime went back, and the process before it took no sample afterwards: "
    "files that overlap in time interleave one process's samples with another's, which is no restart); a gap is more than "
    f"{GAP_PERIODS} sampling periods "
    "without a sample (mongod down, or too stalled to collect). Both bound what the other findings can see."
)
DETECTOR = Detector(
    order=110,
    kinds=("restart", "ftdc_gap"),
    names=("restart", "gap in the diagnostic data"),
    method=METHOD,
    attributed=False,
    panels=(("operations/s", ("ops_per_s",), False),),
)

MAX_GAPS = 20  # the longest ones; the rest are counted in one more finding


def detect(ctx: Context) -> list[Finding]:
    marks = ctx.series.select(TIME_COLUMN, "restart", "gap", previous=pl.col(TIME_COLUMN).shift(1)).filter(
        pl.col("restart") | pl.col("gap")
    )
    # A restart loop's restarts, and the gaps between them, are told once by its own finding (restart_loop).
    for loop in loops(ctx.series):
        marks = marks.filter(~pl.col(TIME_COLUMN).is_between(loop.start, loop.end))
    findings = []
    for row in marks.filter(pl.col("restart")).iter_rows(named=True):
        down = (row[TIME_COLUMN] - row["previous"]).total_seconds()
        findings.append(
            Finding(
                kind="restart",
                severity="info",
                start=row["previous"],
                end=row[TIME_COLUMN],
                # Its window (the old process's last sample to the new one's first) is said beside it in every format.
                subject=f"mongod restarted, down for at most {duration(down)}",
                reasoning=(
                    f"A new process (its pid changed or its uptime went back): the old one's last sample and the new one's first are "
                    f"{duration(down)} apart. Counters restart from zero, so no rate is taken across it."
                ),
                evidence={
                    "metrics": [
                        p
                        for p in (ctx.resolved.path("pid"), ctx.resolved.path("uptime_ms") or ctx.resolved.path("uptime_s"))
                        if p
                    ]
                },
            )
        )
    gaps = marks.filter(pl.col("gap") & ~pl.col("restart")).with_columns(
        seconds=(pl.col(TIME_COLUMN) - pl.col("previous")).dt.total_milliseconds() / 1000
    )
    for row in gaps.sort("seconds", descending=True).head(MAX_GAPS).sort(TIME_COLUMN).iter_rows(named=True):
        findings.append(
            Finding(
                kind="ftdc_gap",
                severity="info",
                start=row["previous"],
                end=row[TIME_COLUMN],
                subject=f"No FTDC samples for {duration(row['seconds'])}",
                reasoning=f"No sample from {dated_span(row['previous'], row[TIME_COLUMN])}: mongod was down, or too stalled to collect.",
                evidence={"thresholds": {"gap": f"a step over {GAP_PERIODS} sampling periods"}},
            )
        )
    if gaps.height > MAX_GAPS:
        rest = gaps.sort("seconds", descending=True).slice(MAX_GAPS)
        findings.append(
            Finding(
                kind="ftdc_gap",
                severity="info",
                start=aggregates.earliest(rest[TIME_COLUMN]),
                end=aggregates.latest(rest[TIME_COLUMN]),
                subject=f"{rest.height} shorter FTDC gaps",
                reasoning=f"{rest.height} more gaps, {duration(float(rest['seconds'].sum()))} in all, the longest {duration(aggregates.known(aggregates.greatest(rest['seconds'])))}.",
                evidence={"thresholds": {"gap": f"a step over {GAP_PERIODS} sampling periods"}},
            )
        )
    return findings
