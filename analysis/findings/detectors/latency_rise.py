"""`latency_rise`: operations slower than usual for a long stretch, whatever the mechanism.

The other detectors each follow one mechanism (a full cache, held tickets, a slow disk, long checkpoints). A node can
also run at several times its usual latency for an hour with none of them matching: a shard donating chunks, a
neighbour on the host, a change in the queries. This one says so, and says what moved beside it.

Each operation class's latency (opLatencies: Δmicros / Δops of each sample's interval, reads, writes and commands apart)
is taken per minute (six sampling periods when longer) as the median of the minute's samples, so that a handful of slow
operations in a few samples do not move it; a minute counts only when the class finished at least MIN_OPS_PER_S
operations a second (an idle node's few operations say nothing of its latency). A rise is a run of minutes at RISE times
or more of the class's baseline, lasting MIN_DURATION: the baseline is the median minute of the hour before the run began
(all of that process's minutes when fewer), from MIN_BASELINE_MINUTES at least; it stays the one the rise began from (a
rolling baseline would follow a long rise up and end it early).

Beside it, the same stretch against the same baseline: the load (operations and documents), the disks, the cache and a
shard's chunk migrations (shardingStatistics, and the log's migration lines). Where none moved, the finding says so.
A rise that another detector's finding already explains (its window covering most of the rise) is that finding's, and
is not told twice (`relate`).
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import BASELINE, Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.spikes import ADJECTIVE
from analysis.series.windows import between
from analysis.text import duration, ms, span
from ftdc.frames import TIME_COLUMN

KIND = "latency_rise"
CLASSES = ("reads", "writes", "commands")
BUCKET_S = 60  # a minute, or six sampling periods when longer
RISE = 2.0  # the minute's median latency against the class's baseline
MIN_DURATION = dt.timedelta(minutes=10)
MIN_BASELINE_MINUTES = 10
MIN_OPS_PER_S = 10.0  # a class finishing fewer operations a second has no latency worth a finding
# Another finding's window covering this share of the rise explains it.
EXPLAINED_SHARE = 0.5
# What counts as having moved beside it, each against the same baseline (the hour before).
LOAD_CHANGE = 1.5  # operations or documents per second this many times the usual, or as far below it
DISK_POINTS = 20.0  # a device's busy time this many points of the time above the usual, to 50 % or more
DISK_AWAIT = 2.0  # a device's time per request this many times the usual, to 5 ms or more
CACHE_POINTS = 5.0  # the cache's fill or dirty share this many points above the usual
CACHE_READS = 2.0  # pages read into the cache this many times the usual, 1 MB/s or more
MIGRATION_COMPONENTS = ("MIGRATE", "SHARDING")  # the log's components of chunk migrations and range deletions

METHOD = (
    "Each operation class's latency (reads, writes, commands: the mean of each sample's interval) is taken per minute "
    "(six sampling periods when longer) as the median of the minute's samples, so that a few slow operations do not move "
    f"it, and only when the class finished {MIN_OPS_PER_S:g} operations/s or more. A rise is a run of minutes at "
    f"{RISE:g}× or more the class's baseline for {MIN_DURATION.total_seconds() / 60:g} minutes or more; the baseline is the "
    f"median minute of the hour before the run began, of the same process, from {MIN_BASELINE_MINUTES} minutes at least, "
    "and stays the one the rise began from. Beside it the report gives what moved against the same hour: the operations and "
    f"documents per second ({LOAD_CHANGE:g}× or 1/{LOAD_CHANGE:g}), the disks (busy {DISK_POINTS:g} points more, to 50 %, or "
    f"{DISK_AWAIT:g}× the time per request, to 5 ms), the cache ({CACHE_POINTS:g} points fuller or dirtier, or {CACHE_READS:g}× "
    "the pages read into it), a shard's chunk migrations and range deletions, and says so when none did. A rise another "
    f"finding's window covers for {EXPLAINED_SHARE:.0%} or more is told as that finding."
)
DETECTOR = Detector(
    order=120,
    kinds=(KIND,),
    names=("sustained latency rise",),
    method=METHOD,
    reads=(
        "reads_latency_ms",
        "writes_latency_ms",
        "commands_latency_ms",
        "reads_per_s",
        "writes_per_s",
        "commands_per_s",
        "finished_per_s",
        "documents_per_s",
        "cache_fill_pct",
        "cache_dirty_pct",
        "cache_read_mb_per_s",
        "disk_util_pct.",
        "disk_await_ms.",
        "chunk_migrations",
        "range_deleted_per_s",
    ),
    sets_off=(),  # an effect: what it tells beside it is what may have caused it
    panels=(("latency (ms)", ("reads_latency_ms", "writes_latency_ms"), True),),
    explained_by=("chunk_migration",),
)


@dataclass(frozen=True)
class Rise:
    """One run of slower minutes: each risen class's usual and typical latency, and what its baseline rests on."""

    start: dt.datetime
    end: dt.datetime
    usual_ms: dict[str, float]  # the classes that rose: the median minute of the baseline
    typical_ms: dict[str, float]  # their median minute over the rise
    baseline_start: dt.datetime
    baseline_end: dt.datetime
    baseline_minutes: int
    baseline_samples: int

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    def factor(self, op: str) -> float:
        return self.typical_ms[op] / self.usual_ms[op]

    def told(self) -> str:
        """`Read and write latency at about 3.1× usual for 1 h 2 min`."""
        ops = sorted(self.usual_ms, key=CLASSES.index)
        names = " and ".join(ADJECTIVE[op] for op in ops)
        top = max(self.factor(op) for op in ops)
        return f"{names[0].upper()}{names[1:]} latency at about {top:.1f}× usual for {duration(self.seconds)}"

    def figures(self) -> str:
        """`reads 0.62 ms against 0.20 ms usually; writes ...`"""
        return "; ".join(
            f"{op} {ms(self.typical_ms[op])} against {ms(self.usual_ms[op])} usually ({self.factor(op):.1f}×)"
            for op in sorted(self.usual_ms, key=CLASSES.index)
        )


def _width(ctx: Context) -> dt.timedelta:
    return dt.timedelta(seconds=max(BUCKET_S, 6 * round(float(aggregates.median(ctx.series["period_s"]) or 1))))


def _minutes(ctx: Context, classes: list[str], width: dt.timedelta) -> pl.DataFrame:
    """Per bucket: each class's median sample latency (samples in which it finished operations) and its operations per
    second, the samples counted, and the process it belongs to (a restart begins another)."""
    series = ctx.series.select(
        TIME_COLUMN,
        process=pl.col("restart").fill_null(False).cum_sum() if ctx.has("restart") else pl.lit(0),
        **{f"ms:{op}": pl.col(f"{op}_latency_ms") for op in classes},
        **{f"ops:{op}": pl.col(f"{op}_per_s") for op in classes},
    )
    return series.group_by_dynamic(TIME_COLUMN, every=width).agg(
        pl.len().alias("samples"),
        pl.col("process").max(),
        *(pl.col(f"ms:{op}").filter(pl.col(f"ops:{op}") > 0).median() for op in classes),
        *(pl.col(f"ops:{op}").mean() for op in classes),
    )


@dataclass(frozen=True)
class Buckets:
    """The buckets as arrays, read once: a week's candidates each cost microseconds, not a query."""

    times: np.ndarray  # microseconds since the epoch
    process: np.ndarray
    samples: np.ndarray
    ms: dict[str, np.ndarray]  # NaN where the class finished nothing
    busy: dict[str, np.ndarray]  # the class finished MIN_OPS_PER_S or more
    joined: np.ndarray  # the bucket follows the one before it with none missing between, in the same process

    @classmethod
    def of(cls, minutes: pl.DataFrame, classes: list[str], width: dt.timedelta) -> Buckets:
        times = minutes[TIME_COLUMN].dt.epoch("us").to_numpy()
        process = minutes["process"].to_numpy()
        step = width // dt.timedelta(microseconds=1)
        return cls(
            times=times,
            process=process,
            samples=minutes["samples"].to_numpy(),
            ms={op: minutes[f"ms:{op}"].cast(pl.Float64).fill_null(np.nan).to_numpy() for op in classes},
            busy={op: minutes[f"ops:{op}"].cast(pl.Float64).fill_null(0.0).to_numpy() >= MIN_OPS_PER_S for op in classes},
            joined=np.concatenate(([False], (np.diff(times) <= step) & (process[1:] == process[:-1]))),
        )

    def baseline(self, row: int) -> tuple[np.ndarray, dict[str, float]]:
        """The rows of the hour before `row` of its process, and each class's median busy minute over them (from
        MIN_BASELINE_MINUTES of them)."""
        first = int(np.searchsorted(self.times, self.times[row] - BASELINE // dt.timedelta(microseconds=1), "left"))
        rows = np.arange(first, row)[self.process[first:row] == self.process[row]]
        usual = {}
        for op, minutes in self.ms.items():
            values = minutes[rows][self.busy[op][rows] & ~np.isnan(minutes[rows])]
            if values.size >= MIN_BASELINE_MINUTES:
                # statistics' median: numpy's imports numpy.ma (10 ms of a small run) to look for a mask.
                usual[op] = float(statistics.median(values.tolist()))
        return rows, usual

    def risen_from(self, row: int, usual: dict[str, float]) -> dict[str, np.ndarray]:
        """Whether each class is risen (RISE times its usual, busy) in each bucket of the run starting at `row`: a bucket
        continues it when some class is still risen in it, joined to the one before. Read in growing pieces, so that a
        minute of noise costs a few buckets, not the rest of the week's."""
        size = MIN_BASELINE_MINUTES
        while True:
            piece = slice(row, row + size)
            with np.errstate(invalid="ignore"):
                risen = {
                    op: self.busy[op][piece] & (ms[piece] >= RISE * usual[op]) if op in usual else np.zeros(len(ms[piece]), bool)
                    for op, ms in self.ms.items()
                }
            going = np.logical_or.reduce(list(risen.values())) & self.joined[piece]
            stops = np.flatnonzero(~going[1:])
            if stops.size or row + size >= len(self.times):
                length = int(stops[0]) + 1 if stops.size else len(going)
                return {op: values[:length] for op, values in risen.items()}
            size *= 2


def _candidates(minutes: pl.DataFrame, classes: list[str]) -> list[int]:
    """Buckets at RISE times the rolling median of the hour before them, for any class: where a rise may begin."""
    rolling = minutes.select(
        *(
            (
                (pl.col(f"ops:{op}") >= MIN_OPS_PER_S)
                & (
                    pl.col(f"ms:{op}")
                    >= RISE * pl.col(f"ms:{op}").rolling_median_by(TIME_COLUMN, window_size=BASELINE, closed="left")
                )
            )
            .fill_null(False)
            .alias(op)
            for op in classes
        )
    )
    return rolling.with_row_index("row").filter(pl.any_horizontal(classes))["row"].to_list()


def _rises(ctx: Context, minutes: pl.DataFrame, classes: list[str], width: dt.timedelta) -> list[Rise]:
    rises: list[Rise] = []
    reached = -1
    buckets = Buckets.of(minutes, classes, width)
    times = minutes[TIME_COLUMN]
    for row in _candidates(minutes, classes):
        if row <= reached:
            continue
        before, usual = buckets.baseline(row)
        risen = buckets.risen_from(row, usual)
        if not any(values[0] for values in risen.values()):
            continue
        last = reached = row + len(risen[classes[0]]) - 1
        start, end = times[row], times[last] + width
        if end - start < MIN_DURATION:
            continue
        # The classes risen in half its minutes or more: those it is told by.
        rose = [op for op in classes if op in usual and risen[op].sum() * 2 >= last - row + 1]
        if not rose:
            continue
        start, end = _edges(ctx, start, end, width, {op: usual[op] for op in rose})
        rises.append(
            Rise(
                start=start,
                end=end,
                usual_ms={op: usual[op] for op in rose},
                typical_ms={op: float(np.nanmedian(buckets.ms[op][row : last + 1])) for op in rose},
                baseline_start=times[int(before[0])],
                baseline_end=times[row],
                baseline_minutes=len(before),
                baseline_samples=int(buckets.samples[before].sum()),
            )
        )
    return rises


def _edges(
    ctx: Context, start: dt.datetime, end: dt.datetime, width: dt.timedelta, usual: dict[str, float]
) -> tuple[dt.datetime, dt.datetime]:
    """The rise's window to the sample: from the first sample (in the bucket before its first, or that one) that begins a
    run of three slow ones, to the last sample (in its last bucket, or the one after) that ends one. A sample's latency is
    its interval's: the window starts where the first slow interval began."""
    slow = pl.any_horizontal(
        [(pl.col(f"{op}_latency_ms") >= RISE * ms) & (pl.col(f"{op}_per_s") > 0) for op, ms in usual.items()]
    ).fill_null(False)
    rows = between(ctx.series, start - width, end + width).select(
        TIME_COLUMN,
        began=pl.col(TIME_COLUMN) - pl.duration(milliseconds=(pl.col("interval_s").fill_null(0) * 1000).round().cast(pl.Int64)),
        slow=slow,
    )
    runs = rows.with_columns(three=pl.col("slow") & pl.col("slow").shift(-1) & pl.col("slow").shift(-2)).with_columns(
        ended=pl.col("slow") & pl.col("slow").shift(1) & pl.col("slow").shift(2)
    )
    first = runs.filter(pl.col("three").fill_null(False), pl.col(TIME_COLUMN) < start + width)
    last = runs.filter(pl.col("ended").fill_null(False), pl.col(TIME_COLUMN) >= end - width)
    return (
        first["began"][0] if first.height else start,
        last[TIME_COLUMN][-1] if last.height else end,
    )


# -- what moved beside it


def _median(frame: pl.DataFrame, column: str) -> float | None:
    if column not in frame.columns:
        return None
    middle = aggregates.median(frame[column])  # None: no value of it
    return None if middle is None else float(middle)


def _load(during: pl.DataFrame, before: pl.DataFrame) -> list[tuple[str, str, float, float]]:
    """(what, words, now, usual) of each load measure that moved."""
    out = []
    for column, what in (("finished_per_s", "operations"), ("documents_per_s", "documents")):
        now, usual = _median(during, column), _median(before, column)
        if now is None or not usual:
            continue
        if now >= LOAD_CHANGE * usual or now * LOAD_CHANGE <= usual:
            way = "rose" if now > usual else "fell"
            out.append((column, f"the {what} per second {way} to {now:,.0f}/s from {usual:,.0f}/s", now, usual))
    return out


def _disks(during: pl.DataFrame, before: pl.DataFrame) -> list[tuple[str, str, float, float]]:
    out = []
    for column in sorted(c for c in during.columns if c.startswith(("disk_util_pct.", "disk_await_ms."))):
        now, usual = _median(during, column), _median(before, column)
        if now is None or usual is None:
            continue
        device = column.split(".", 1)[1]
        if column.startswith("disk_util_pct.") and now >= 50 and now - usual >= DISK_POINTS:
            out.append((column, f"disk {device} busy {now:.0f} % of the time against {usual:.0f} %", now, usual))
        elif column.startswith("disk_await_ms.") and now >= 5 and now >= DISK_AWAIT * usual:
            out.append((column, f"disk {device} taking {ms(now)} a request against {ms(usual)}", now, usual))
    return out


def _cache(during: pl.DataFrame, before: pl.DataFrame) -> list[tuple[str, str, float, float]]:
    out = []
    for column, what in (("cache_fill_pct", "full"), ("cache_dirty_pct", "dirty")):
        now, usual = _median(during, column), _median(before, column)
        if now is not None and usual is not None and now - usual >= CACHE_POINTS:
            out.append((column, f"the cache {now:.1f} % {what} against {usual:.1f} %", now, usual))
    now, usual = _median(during, "cache_read_mb_per_s"), _median(before, "cache_read_mb_per_s")
    if now is not None and usual is not None and now >= 1 and now >= CACHE_READS * max(usual, 0.01):
        out.append(("cache_read_mb_per_s", f"{now:,.1f} MB/s read into the cache against {usual:,.1f} MB/s", now, usual))
    return out


def _migrations(ctx: Context, during: pl.DataFrame, start: dt.datetime, end: dt.datetime) -> dict[str, Any] | None:
    """A shard's chunk migrations begun in the window, the documents its range deleter removed, and the log's migration
    lines: None when none of them happened (or the node records none)."""
    begun = int(during["chunk_migrations"].sum()) if "chunk_migrations" in during.columns else 0
    deleted = 0
    if "range_deleted_per_s" in during.columns:
        deleted = int(during.select((pl.col("range_deleted_per_s") * pl.col("interval_s")).sum()).item() or 0)
    lines = 0
    events = ctx.logs.events if ctx.logs is not None else None
    if events is not None and events.height:
        lines = events.filter(pl.col("ts").is_between(start, end), pl.col("component").is_in(MIGRATION_COMPONENTS)).height
    if not (begun or deleted or lines):
        return None
    return {"chunk_migrations": begun, "range_deleted_documents": deleted, "log_lines": lines}


def _migration_words(moved: dict[str, Any]) -> list[str]:
    parts = []
    if moved["chunk_migrations"]:
        n = moved["chunk_migrations"]
        parts.append(f"{n:,} chunk migration{'s' if n != 1 else ''} began on this shard")
    if moved["range_deleted_documents"]:
        parts.append(f"its range deleter removed {moved['range_deleted_documents']:,} documents of donated chunks")
    if moved["log_lines"]:
        parts.append(f"the log holds {moved['log_lines']:,} lines of migrations and range deletions in the window")
    return parts


def _finding(ctx: Context, rise: Rise) -> Finding:
    during = ctx.window(rise.start, rise.end)
    before = between(ctx.series, rise.baseline_start, rise.baseline_end, closed="left")
    moved = _load(during, before) + _disks(during, before) + _cache(during, before)
    migrations = _migrations(ctx, during, rise.start, rise.end)
    beside = (_migration_words(migrations) if migrations else []) + [words for _, words, _, _ in moved]
    nothing = not beside
    rests_on = (
        f"the median minute of {span(rise.baseline_start, rise.baseline_end)} UTC before it "
        f"({rise.baseline_minutes} minutes, {rise.baseline_samples:,} samples, this process's)"
    )
    reasoning = f"From {span(rise.start, rise.end)} UTC the median minute's latency was {rise.figures()}, against {rests_on}."
    if nothing:
        statement = "nothing the node records moved with it"
        reasoning += (
            " Nothing the node records moved with it: the operations and documents per second, the disks, the cache "
            "and chunk migrations were as in the hour before. The cause is outside what these files show (the queries' "
            "plans, the host, the network or the clients)."
        )
    else:
        statement = beside[0]
        reasoning += " Beside it: " + "; ".join(beside) + "."
    evidence = {
        "metrics": ctx.paths(
            *(f"{op}_latency_ms" for op in rise.usual_ms),
            "finished_per_s",
            "documents_per_s",
            "cache_fill_pct",
            "cache_read_mb_per_s",
            "chunk_migrations",
            "range_deleted_per_s",
        ),
        "baseline": {
            "latency_ms": {op: round(ms, 3) for op, ms in rise.usual_ms.items()},
            "start": rise.baseline_start,
            "end": rise.baseline_end,
            "minutes": rise.baseline_minutes,
            "samples": rise.baseline_samples,
        },
        "latency_ms": {op: round(ms, 3) for op, ms in rise.typical_ms.items()},
        "factor": {op: round(rise.factor(op), 2) for op in rise.usual_ms},
        "moved": {column: {"now": round(now, 2), "usual": round(usual, 2)} for column, _, now, usual in moved},
        "migrations": migrations,
        "nothing_moved": nothing,
        "thresholds": {
            "rise": f"≥ {RISE:g}× the median minute of the hour before, for {MIN_DURATION.total_seconds() / 60:g} minutes or more",
            "floor": f"≥ {MIN_OPS_PER_S:g} operations/s of the class; a baseline of {MIN_BASELINE_MINUTES} minutes or more",
        },
    }
    return Finding(
        kind=KIND,
        severity="warning",
        start=rise.start,
        end=rise.end,
        subject=rise.told(),
        statement=statement,
        reasoning=reasoning,
        evidence=evidence,
        recommendations=[
            advise(
                "investigate",
                "Compare the slow operations of this window with those of the hour before (their plans and the documents "
                "each examined): the node's own resources did not change",
            )
        ]
        if nothing
        else [],
    )


def detect(ctx: Context) -> list[Finding]:
    classes = [op for op in CLASSES if ctx.has(f"{op}_latency_ms", f"{op}_per_s")]
    if not classes:
        return [ctx.not_checked(KIND, "Sustained latency rises", ["opLatencies"])]
    width = _width(ctx)
    minutes = _minutes(ctx, classes, width)
    return [_finding(ctx, rise) for rise in _rises(ctx, minutes, classes, width)]


def relate(findings: list[Finding]) -> list[Finding]:
    """The findings again, less each rise whose window another warning's covers for EXPLAINED_SHARE or more: that finding
    explains it. A rise the others only touch keeps its own finding, noting them."""
    others = [f for f in findings if f.kind != KIND and f.severity != "info" and f.start is not None and f.end is not None]
    out = []
    for f in findings:
        if f.kind != KIND or f.severity == "info":
            out.append(f)
            continue
        touching = [o for o in others if o.window[0] < f.window[1] and o.window[1] > f.window[0]]
        covered = _covered_s(f, touching)
        if covered >= EXPLAINED_SHARE * f.seconds:
            continue
        out.append(f.noted("Part of it overlaps: " + "; ".join(o.title for o in touching) + ".") if touching else f)
    return out


def _covered_s(rise: Finding, others: list[Finding]) -> float:
    """Seconds of the rise's window inside any of `others`' windows (overlaps counted once)."""
    if not others:
        return 0.0
    start, end = rise.window
    spans = sorted((max(a, start), min(b, end)) for a, b in (o.window for o in others))
    total, reached = 0.0, start
    for a, b in spans:
        a = max(a, reached)
        if b > a:
            total += (b - a).total_seconds()
            reached = b
    return total
