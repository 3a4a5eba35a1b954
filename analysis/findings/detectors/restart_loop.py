"""`restart_loop`: mongod restarting over and over, each process living minutes.

A restart is a new process (series.py: its pid changed or its uptime went
back). LOOP_RESTARTS or more in a row, each process before the next restart
having lived less than SHORT_LIFE, are one loop: one finding over the loop's
span with the count and the processes' median lifetime, instead of one
`restart` context finding per restart (the context detector leaves those
inside a loop, and the FTDC gaps between them, to this finding). Why a process
ended is in the log's last lines before each restart (a fatal assertion, the
host's out-of-memory killer, a service manager), not in FTDC.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.text import dated_span, duration
from ftdc.frames import TIME_COLUMN

KIND = "restart_loop"
LOOP_RESTARTS = 3
SHORT_LIFE = dt.timedelta(minutes=15)
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    f"A restart is a new process (its pid changed or its uptime went back). {LOOP_RESTARTS} or more restarts in a row, each process "
    f"living less than {SHORT_LIFE.total_seconds() / 60:g} minutes before the next, are one restart loop: one finding with the count "
    "and the processes' median lifetime. Why a process ended is in the log's last lines before each restart (a fatal assertion, "
    "the host's out-of-memory killer, a service manager), not in FTDC."
)
DETECTOR = Detector(
    order=100,
    kinds=(KIND,),
    names=("restart loop",),
    method=METHOD,
    attributed=False,
    root="restart",
    sets_off=("throughput_dip", "connection_storm"),  # each restart drops the work and reconnects the clients
    panels=(("operations/s", ("ops_per_s",), False),),
)


@dataclass(frozen=True)
class Loop:
    start: dt.datetime  # the last sample of the process before the first restart
    end: dt.datetime  # the first sample of the last process
    restarts: list[tuple[dt.datetime, dt.datetime]]  # (last sample before, first sample after) each restart
    lives_s: list[float]  # how long each process between two restarts of the loop was sampled

    def holds(self, when: dt.datetime) -> bool:
        return self.start <= when <= self.end


def loops(series: pl.DataFrame) -> list[Loop]:
    """Runs of LOOP_RESTARTS or more restarts, each process between two of them living less than SHORT_LIFE."""
    marks = series.select(TIME_COLUMN, "restart", previous=pl.col(TIME_COLUMN).shift(1)).filter(pl.col("restart"))
    restarts = [(r["previous"], r[TIME_COLUMN]) for r in marks.iter_rows(named=True) if r["previous"] is not None]
    runs: list[list[tuple[dt.datetime, dt.datetime]]] = []
    for restart in restarts:
        if runs and restart[0] - runs[-1][-1][1] < SHORT_LIFE:
            runs[-1].append(restart)
        else:
            runs.append([restart])
    return [
        Loop(run[0][0], run[-1][1], run, [(b[0] - a[1]).total_seconds() for a, b in zip(run, run[1:])])
        for run in runs
        if len(run) >= LOOP_RESTARTS
    ]


def detect(ctx: Context) -> list[Finding]:
    findings = []
    for loop in loops(ctx.series):
        life = statistics.median(loop.lives_s)
        down = [(b - a).total_seconds() for a, b in loop.restarts]
        findings.append(
            Finding(
                kind=KIND,
                severity="warning",
                start=loop.start,
                end=loop.end,
                subject=f"mongod restarted {len(loop.restarts)} times in {duration((loop.end - loop.start).total_seconds())}",
                statement=f"each process lived a median {duration(life)}",
                reasoning=(
                    f"{len(loop.restarts)} new processes (the pid changed or the uptime went back) from {dated_span(loop.start, loop.end)}, "
                    f"each living {duration(min(loop.lives_s))} to {duration(max(loop.lives_s))} (median {duration(life)}), "
                    f"down for up to {duration(max(down))} between them: a restart loop, not {len(loop.restarts)} separate restarts. "
                    "Counters restart from zero each time, so no rate is taken across a restart."
                ),
                evidence={
                    "metrics": [
                        p
                        for p in (ctx.resolved.path("pid"), ctx.resolved.path("uptime_ms") or ctx.resolved.path("uptime_s"))
                        if p
                    ],
                    "restarts": len(loop.restarts),
                    "median_life_s": round(life, 1),
                    "shortest_life_s": round(min(loop.lives_s), 1),
                    "longest_down_s": round(max(down), 1),
                    "thresholds": {
                        "loop": f"≥ {LOOP_RESTARTS} restarts in a row, each process living < {duration(SHORT_LIFE.total_seconds())}"
                    },
                },
                recommendations=[
                    advise(
                        "investigate",
                        'Read the mongod log\'s last lines before each restart (a fatal assertion, "out of memory", a signal '
                        "from the service manager) and the host's journal for the out-of-memory killer",
                        "the loop ends when what ends each process is fixed",
                    )
                ],
            )
        )
    return findings
