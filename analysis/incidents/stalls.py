"""A stall of the whole server: what an incident with no cause in these files still says, and where to look next.

FTDC runs serverStatus once a sampling period; it reads counters the server keeps and waits for no ticket. When it takes
a second or more to answer while every read and every write ticket is held, and the log names no operation that held
the rest back, the operations did not stop each other: what stopped was below them, in the process or the host under it
(a paused or migrated virtual machine, CPU taken by another guest, memory reclaim or swapping, the file system not
answering the storage engine). These files record the server, not the host: what would tell is the host's own record of
those seconds. Stalls that come back at a fixed interval point at a job on that schedule.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.advice.recommendation import Recommendation, advise
from analysis.findings.context import Context
from analysis.findings.detectors.throughput_dip import KIND as DIP
from analysis.findings.detectors.throughput_dip import STALLED_COLLECT_MS
from analysis.findings.detectors.ticket_exhaustion import KIND as TICKETS
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.windows import sustained
from analysis.text import clock, duration, ms

# Stalls this regular are one schedule's: each gap within this share of their median (or REGULAR_S, when larger).
REGULAR_SHARE = 0.05
REGULAR_S = 5.0
MIN_REPEATS = 3  # two stalls make one interval, which any two events have


@dataclass(frozen=True)
class Stall:
    start: dt.datetime
    end: dt.datetime
    collect_ms: float  # the longest serverStatus took to answer in the window
    period_s: float  # the node's usual sampling period
    longest_s: float  # the longest interval between two samples in the window
    every: dt.timedelta | None  # the interval the server's stalls recur at, when they recur regularly
    stalls: tuple[dt.datetime, ...]  # when each of them began

    def told(self) -> str:
        missed = (
            f" (FTDC sampled every {duration(self.longest_s)} instead of every {duration(self.period_s)})"
            if self.longest_s >= 2 * self.period_s
            else ""
        )
        return (
            f"a stall of the whole server: serverStatus itself took {ms(self.collect_ms)} to answer{missed}, every read "
            "and write ticket was held, and the log names no operation that held the rest back: what stopped was below "
            "the operations, in the host (a paused or migrated virtual machine, CPU taken by another guest, memory "
            "reclaim or swapping) or the file system under the storage engine"
        )

    def evidence(self) -> dict[str, Any]:
        return {
            "server_stall": {
                "serverstatus_ms": self.collect_ms,
                "sampling_period_s": self.period_s,
                "longest_interval_s": self.longest_s,
                **({"recurring_stalls_began": list(self.stalls)} if self.every else {}),
            },
            "would_tell": ["the host's own record of those seconds: its kernel log, its hypervisor's or cloud provider's events"],
        }

    def recommendations(self) -> list[Recommendation]:
        around = f"{clock(self.start - dt.timedelta(seconds=30))} and {clock(self.end + dt.timedelta(seconds=30))}"
        recs = [
            advise(
                "investigate",
                f"Read the host's kernel log (journalctl -k, dmesg -T) and its hypervisor's or cloud provider's events "
                f"between {around} for what held the whole host: a virtual machine paused or migrated, CPU steal, memory "
                "reclaim or swapping, hung tasks or I/O errors on the data volume",
                f"every read and write ticket was held and no operation was to blame while serverStatus took {ms(self.collect_ms)} "
                "to answer",
            )
        ]
        if self.every is not None:
            recs.append(
                advise(
                    "investigate",
                    f"Look for a job that runs every {duration(self.every.total_seconds())} on the host or its platform (a "
                    "backup or volume snapshot, a cron job, a scan): move it to a quiet hour, or change how it runs so that "
                    "it does not hold the host",
                    f"stalls this regular keep a schedule: serverStatus took {STALLED_COLLECT_MS / 1000:g} s or more to "
                    f"answer from {_listed([clock(t) for t in self.stalls])}",
                )
            )
        return recs


def _listed(items: list[str]) -> str:
    """`a, b and c`."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _stalls(ctx: Context) -> list[dt.datetime]:
    """When each stall of serverStatus in the capture began (it took STALLED_COLLECT_MS or more to answer)."""
    slow = pl.col("collect_ms").fill_null(0) >= STALLED_COLLECT_MS
    return [
        w.start
        for w in sustained(
            ctx.series, slow, min_s=0, merge_s=2 * float(aggregates.greatest(ctx.series["period_s"]) or 1), interval=True
        )
    ]


def _every(starts: list[dt.datetime]) -> dt.timedelta | None:
    """The interval `starts` recur at, when there are MIN_REPEATS or more and each gap is the same within REGULAR_SHARE."""
    if len(starts) < MIN_REPEATS:
        return None
    gaps = [(b - a).total_seconds() for a, b in zip(starts, starts[1:])]
    middle = sorted(gaps)[len(gaps) // 2]
    tolerance = max(REGULAR_S, REGULAR_SHARE * middle)
    return dt.timedelta(seconds=round(middle)) if all(abs(g - middle) <= tolerance for g in gaps) else None


def server_stall(ctx: Context, findings: list[Finding]) -> Stall | None:
    """The stall of the whole server `findings` show, or None: every read and write ticket held, serverStatus itself
    slow to answer, and a log read that names no operation behind them."""
    exhausted = {f.resource for f in findings if f.kind == TICKETS and f.severity != "info"}
    timed = [f.window for f in findings if f.start is not None and f.end is not None]
    if exhausted != {"read", "write"} or ctx.logs is None or any(f.causes for f in findings) or not timed:
        return None
    if not ctx.has("collect_ms", "interval_s", "period_s"):
        return None
    start, end = min(a for a, _ in timed), max(b for _, b in timed)
    rows = ctx.window(start, end)
    # The time serverStatus took as the dip quotes it, computed once; the window's own longest without one.
    quoted = [f.evidence["serverstatus_ms"] for f in findings if f.kind == DIP and f.evidence.get("serverstatus_ms") is not None]
    collect = max(quoted) if quoted else aggregates.greatest(rows["collect_ms"])
    if collect is None or collect < STALLED_COLLECT_MS:
        return None
    starts = _stalls(ctx)
    every = _every(starts)
    return Stall(
        start=start,
        end=end,
        collect_ms=float(collect),
        period_s=float(aggregates.median(ctx.series["period_s"]) or 1),
        longest_s=float(aggregates.greatest(rows["interval_s"]) or 0),
        every=every,
        stalls=tuple(starts) if every else (),
    )
