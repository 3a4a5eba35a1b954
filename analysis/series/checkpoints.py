"""Checkpoint windows from the counters, the running flag and the log (docs/metrics.md §2).

End: the first sample where the total checkpoint time (8.0: succeeded or
failed count) increases, or the running flag falls; the true end lies in
(previous sample, this sample]. Start: end minus the most recent duration,
plus the scrub time that duration excludes up to 7.2 (WT-11999); a rising
edge of the running flag, when a sample caught it, bounds it. A checkpoint
still running at the last sample is open. Log lines 22430 with "Checkpoint
ran for N seconds" give exact ends and durations; they corroborate, and fill
in where FTDC saw nothing.
"""

from __future__ import annotations

import bisect
import datetime as dt
import statistics
from dataclasses import dataclass, replace
from typing import cast

import polars as pl

from analysis.series.spans import Spans
from analysis.series.thresholds import Setting, Thresholds
from analysis.text import span_before
from ftdc.frames import TIME_COLUMN
from ftdc.timeutil import format_duration as duration

# Two ends this close describe the same checkpoint.
SAME_END = dt.timedelta(seconds=3)
# Fewer checkpoints than this show no cadence.
MIN_CADENCE = 4
# The usual checkpoint is that of the checkpoints of this long before a window.
USUAL_BEFORE = dt.timedelta(hours=1)


# Where a checkpoint was seen (`Checkpoint.source`), as a sentence says it.
SEEN_IN = {"ftdc": "seen in FTDC", "log": "seen in the log", "ftdc+log": "seen in both FTDC and the log"}


@dataclass(frozen=True)
class Checkpoint:
    start: dt.datetime
    end: dt.datetime
    source: str  # "ftdc", "log" or "ftdc+log" (SEEN_IN)
    open: bool = False  # still running at the last sample
    corroborated: bool = False  # FTDC and the log agree

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @property
    def seen_in(self) -> str:
        return SEEN_IN[self.source]


@dataclass(frozen=True)
class InWindow:
    """The checkpoints that ran in a window, counted once: a finding carries those of its window and the root cause
    that quotes them quotes that value, so one card never says two counts or two longest durations for one window."""

    start: dt.datetime
    end: dt.datetime
    count: int
    longest_s: float
    time_share: float  # of the window spent checkpointing
    # The usual checkpoint these are told against: the median length of those that ran in the hour before the window
    # (and ended before it), how many that is, and the earliest sample that hour rests on (the capture may hold less);
    # None, 0 and None when none did or the capture holds too little before the window.
    usual_s: float | None = None
    usual_of: int = 0
    usual_since: dt.datetime | None = None

    @property
    def longest(self) -> str:
        """`up to 48 s` of several, `48 s` of one: the longest's whole run, past the window's edges where it ran on."""
        return f"up to {duration(self.longest_s)}" if self.count > 1 else duration(self.longest_s)

    def against_usual(self) -> str:
        """`up to 48 s against a usual 2.1 s (the median of the 58 in the hour before 10:00:05)`, or `up to 48 s` with
        none before (`48 s` for one checkpoint)."""
        text = self.longest
        if self.usual_s is not None and self.usual_since is not None:
            text += (
                f" against a usual {duration(self.usual_s)} "
                f"(the median of the {self.usual_of} in {span_before(self.usual_since, self.start)})"
            )
        return text


def by_window(checkpoints: list[Checkpoint], pad: dt.timedelta = dt.timedelta(0)) -> Spans[Checkpoint]:
    """`checkpoints` (in order of start) found by their windows, each ending `pad` later, by bisection."""
    return Spans.of(checkpoints, lambda c: (c.start, c.end + pad))


def in_window(checkpoints: Spans[Checkpoint], start: dt.datetime, end: dt.datetime, since: dt.datetime | None) -> InWindow | None:
    """The checkpoints that ran some of [start, end] (found by bisection), the longest measured whole, told against those
    of the hour before whose earliest sample is `since` (`Context.since`: None when the capture holds too little
    before); None when none ran."""
    # One that only touches the window's edge (begun as it ended, ended as it began) ran none of it.
    inside = [c for c in checkpoints.overlapping(start, end) if start == end or (c.end > start and c.start < end)]
    if not inside:
        return None
    busy = sum((min(c.end, end) - max(c.start, start)).total_seconds() for c in inside)
    share = min(busy / max((end - start).total_seconds(), 1.0), 1.0)
    earlier = [c.seconds for c in checkpoints.starting(start - USUAL_BEFORE, start) if c.end < start] if since else []
    usual = round(statistics.median(earlier), 1) if earlier else None
    return InWindow(
        start, end, len(inside), round(max(c.seconds for c in inside), 1), round(share, 3), usual, len(earlier), since
    )


def _scrub_before_duration(version: str | None) -> bool:
    """Up to 7.2 "most recent time" starts after scrub; from 7.3 at API entry."""
    if not version:
        return True
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return True
    return (major, minor) < (7, 3)


def from_ftdc(series: pl.DataFrame, version: str | None) -> list[Checkpoint]:
    cols = series.columns
    if "checkpoint_last_ms" not in cols or not (
        {"checkpoint_time_ms", "checkpoints_succeeded", "checkpoint_running"} & set(cols)
    ):
        return []
    zero = pl.lit(0)
    ended = pl.lit(False)
    if "checkpoint_time_ms" in cols:
        ended = ended | (pl.col("checkpoint_time_ms").fill_null(0) > 0)
    for counter in ("checkpoints_succeeded", "checkpoints_failed"):
        if counter in cols:
            ended = ended | (pl.col(counter).fill_null(0) > 0)
    running = pl.col("checkpoint_running").fill_null(0) if "checkpoint_running" in cols else zero
    falls = (running.shift(1) > 0) & (running == 0) & pl.col("valid")
    rises = (running > 0) & ((running.shift(1) == 0) | ~pl.col("valid"))
    scrub = (
        pl.col("checkpoint_scrub_ms").fill_null(0) if "checkpoint_scrub_ms" in cols and _scrub_before_duration(version) else zero
    )
    # The rows that end or start one, their times as epoch ms (the series' resolution), in order.
    epoch = pl.col(TIME_COLUMN).dt.epoch("ms")
    # A test the first sample cannot answer (no sample before it, an unknown validity) is no mark.
    marks = series.select(
        time=epoch,
        previous=epoch.shift(1),
        counted=(ended & pl.col("valid")).fill_null(False),
        falls=falls.fill_null(False),
        rises=rises.fill_null(False),
        running=running > 0,
        duration_ms=pl.col("checkpoint_last_ms") + scrub,
    )
    rows = marks.filter(pl.col("counted") | pl.col("falls") | pl.col("rises")).with_row_index("row")
    # A rise of the flag opens a stretch of rows; the rows up to a rise (itself included) belong to the stretch before
    # it. In a stretch, the first row that counts a checkpoint or sees the flag fall, its duration known, ends one;
    # after it only the counters do: serverStatus can catch the counter updated while the flag is still set, and the
    # flag's fall one sample later is the same checkpoint's end.
    stretch = pl.col("rises").cum_sum() - pl.col("rises")
    may_end = pl.col("duration_ms").is_not_null() & (pl.col("counted") | pl.col("falls"))
    first = may_end & (may_end.cum_sum().over(stretch) == 1)
    # The stretch's rise (its previous sample and its own): the flag says the first checkpoint to end in it was
    # already running at the rise and not at the sample before.
    rise = pl.when("rises").then("row").shift(1).forward_fill()
    rise_previous, rise_time = pl.col("previous").gather(rise), pl.col("time").gather(rise)
    estimate = pl.col("time") - pl.col("duration_ms").round().clip(lower_bound=0).cast(pl.Int64)
    start = (
        pl.when(first & rise.is_not_null())
        .then(pl.min_horizontal(pl.max_horizontal(estimate, pl.coalesce(rise_previous, estimate)), rise_time))
        .otherwise(estimate)
        .alias("start")
    )
    spans = rows.select(
        start, end=pl.col("time"), open=pl.lit(False), stretch=stretch, ends=may_end & (pl.col("counted") | first)
    )
    spans = spans.filter("ends")
    # The last rise, no checkpoint ended in the stretch it opened and the flag still up at the last sample: one running.
    last_rise, stretches = rows.filter("rises").tail(1), rows["rises"].sum()
    if not last_rise.is_empty() and marks["running"][-1] and spans.filter(pl.col("stretch") == stretches).is_empty():
        running_one = pl.DataFrame({"start": last_rise["time"], "end": marks["time"].tail(1), "open": [True]})
        spans = pl.concat([spans.select("start", "end", "open"), running_one])
    times = spans.select(pl.col("start", "end").cast(series.schema[TIME_COLUMN]), "open")
    return [Checkpoint(s, e, "ftdc", o) for s, e, o in zip(*(times[c].to_list() for c in ("start", "end", "open")))]


def from_log(events: pl.DataFrame | None) -> list[Checkpoint]:
    """Completed checkpoints whose line states the duration (id 22430, "Checkpoint ran for N seconds")."""
    if events is None or events.is_empty():
        return []
    done = events.filter(pl.col("kind") == "checkpoint", pl.col("duration_ms").is_not_null())
    return [Checkpoint(t - dt.timedelta(milliseconds=ms), t, "log") for t, ms in done.select("ts", "duration_ms").iter_rows()]


def checkpoint_windows(series: pl.DataFrame, version: str | None, events: pl.DataFrame | None = None) -> list[Checkpoint]:
    """Every checkpoint seen, by start time; a log line that states its duration wins over the estimate."""
    # The time column's least and greatest are datetimes.
    first = cast("dt.datetime | None", series[TIME_COLUMN].min() if series.height else None)
    last = cast("dt.datetime | None", series[TIME_COLUMN].max() if series.height else None)
    return serial(merged(from_ftdc(series, version), from_log(events), first, last))


def merged(
    ftdc: list[Checkpoint], log: list[Checkpoint], first: dt.datetime | None, last: dt.datetime | None
) -> list[Checkpoint]:
    """FTDC's checkpoints (in time order), each one a log line states (its end as near as SAME_END and a sample) taken
    from the line, and the log's others within [first, last], by start time."""
    log = sorted(log, key=lambda c: c.end)
    ends, twinned = [c.end for c in log], [False] * len(log)
    near = SAME_END + dt.timedelta(seconds=1)
    out = []
    for checkpoint in ftdc:
        # The first log checkpoint not yet twinned that ended as near as this one, found by bisection (a week's log
        # can state ten thousand).
        at = bisect.bisect_left(ends, checkpoint.end - near)
        while at < len(log) and twinned[at]:
            at += 1
        if at < len(log) and log[at].end <= checkpoint.end + near:
            twin, twinned[at] = log[at], True
            out.append(Checkpoint(twin.start, twin.end, "ftdc+log", checkpoint.open, corroborated=True))
        else:
            out.append(checkpoint)
    # Log checkpoints FTDC did not see (a gap, a missing metric), within the data's span.
    out += [
        c for c, taken in zip(log, twinned) if not taken and first is not None and last is not None and first <= c.end <= last
    ]
    return sorted(out, key=lambda c: c.start)


def serial(checkpoints: list[Checkpoint]) -> list[Checkpoint]:
    """`checkpoints` (by start) one after another, as mongod's checkpoint thread runs them: taken in the order they
    ended, a start FTDC estimated (the sample that counted it less the duration it reports, up to a sampling period
    late) that falls before the previous one's end is that end, where the checkpoint due while the previous ran began."""
    out = list(checkpoints)
    reach = None
    for i in sorted(range(len(out)), key=lambda i: out[i].end):
        c = out[i]
        if reach is not None and c.source == "ftdc" and c.start < reach:
            out[i] = replace(c, start=reach)
        reach = c.end
    return sorted(out, key=lambda c: c.start)


def infer_interval(thresholds: Thresholds, checkpoints: list[Checkpoint], period_s: float) -> Thresholds:
    """`thresholds` with the checkpoint interval the counters show, when no file recorded the
    node's configuration and the cadence contradicts the assumed default.

    mongod's checkpointer sleeps syncdelay between one checkpoint's end and the next one's
    start, or starts at once when a checkpoint was due while the last one ran (a start-to-start
    cadence): an interval between the median pause (end to next start) and the median
    start-to-start time, within the sampling period's uncertainty, fits what was seen; else the
    median pause, in whole seconds, is what the node was set to.
    """
    done = [c for c in checkpoints if not c.open]
    if not thresholds.assumed("checkpoint_interval") or len(done) < MIN_CADENCE:
        return thresholds
    pauses = sorted((b.start - a.end).total_seconds() for a, b in zip(done, done[1:]))
    every = sorted((b.start - a.start).total_seconds() for a, b in zip(done, done[1:]))
    pause, cadence = pauses[len(pauses) // 2], every[len(every) // 2]
    assumed = thresholds.value("checkpoint_interval") or 0
    slack = max(2 * period_s, 0.1 * assumed)
    if pause - slack <= assumed <= cadence + slack:
        return thresholds
    inferred = max(1, round(pause))
    source = (
        f"inferred from the checkpoint cadence: {len(done)} checkpoints, a median {pause:.1f} s from one's end to the next's start; "
        f"these files do not record the node's configuration, and mongod's default of {assumed:g} s does not fit"
    )
    return Thresholds({**thresholds.timeline, "checkpoint_interval": [Setting(float(inferred), source)]}, thresholds.configured)
