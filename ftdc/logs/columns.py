"""Vectorised finishing of decoded blocks: timestamps, start times, names.

Slow operations come back finished natively but for these, from JSON and
legacy text lines alike.
"""

import polars as pl

from ..timeutil import outside_python_range
from .problems import ProblemLog
from .schema import EVENTS, SLOW_OPS, UTC_MS

# `%#z` accepts `Z`, `+00:00` and `-0400` alike: every form mongod has written.
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S%.f%#z"
# Columns that need every file (node, client) are added by the reader; the
# start-up line's `host` is what it derives `node` from.
SLOW_OPS_BEFORE_JOINS = [c for c in SLOW_OPS if c not in ("node", "client")]
EVENTS_BEFORE_JOINS = [c for c in EVENTS if c != "node"] + ["host"]


def parse_ts(column: str = "t") -> pl.Expr:
    return pl.col(column).str.to_datetime(_TS_FORMAT, time_unit="ms", time_zone="UTC", strict=False).cast(UTC_MS)


# Python's datetime.min (0001-01-01) in ms: the earliest `started`.
_EARLIEST_MS = -62_135_596_800_000


def _started() -> pl.Expr:
    """ts - duration, saturating: a durationMillis up to int64's maximum would
    otherwise wrap around to after `ts`, and a negative one end before it began."""
    room = (pl.col("ts").cast(pl.Int64) - _EARLIEST_MS).clip(lower_bound=0)
    return pl.col("ts") - pl.duration(milliseconds=pl.col("duration_ms").fill_null(0).clip(0, room))


def drop_unreadable_ts(frame: pl.DataFrame, problems: ProblemLog) -> pl.DataFrame:
    """`frame` without the rows whose timestamp cannot be used: text `t` that does not
    read as a time ("no timestamp", as the decoders report a line without one), or a time
    (`ts` read natively, else `t`) outside years 1-9999, which no calendar a reader uses
    holds (a damaged `0000-...` stamp). A null `t` is a timestamp read already (natively)
    or none at all."""
    native = "ts" in frame.columns
    if not native and frame["t"].null_count() == frame.height:
        return frame
    parsed = parse_ts()
    stamp = pl.coalesce(pl.col("ts").cast(UTC_MS), parsed) if native else parsed
    unreadable = pl.col("t").is_not_null() & parsed.is_null() & (pl.col("ts").is_null() if native else True)
    impossible = outside_python_range(stamp)
    flags = frame.select(unreadable=unreadable, impossible=impossible)
    bad = flags["unreadable"] | flags["impossible"]
    if not bad.any():
        return frame
    for line, t, impossible_ts in frame.select("line", "t").with_columns(flags["impossible"]).filter(bad).iter_rows():
        problems.add(line, "timestamp outside years 1-9999" if impossible_ts else "no timestamp", t)
    return frame.filter(~bad)


# No operation runs for more than a year (an index build on a huge collection takes days):
# a longer durationMillis is damage, and would put the operation's start in year 1.
MAX_DURATION_MS = 366 * 24 * 3600 * 1000


def drop_implausible_durations(frame: pl.DataFrame, problems: ProblemLog) -> pl.DataFrame:
    """`frame` with negative or over-a-year `duration_ms` made null, each reported: no
    operation ends before it starts, and the number is damage, not a time to add up."""
    duration = frame["duration_ms"]
    bad = (duration < 0) | (duration > MAX_DURATION_MS)
    if not bad.any():
        return frame
    for line, value in frame.filter(bad).select("line", "duration_ms").iter_rows():
        problems.add(line, f"durationMillis {value} is {'negative' if value < 0 else 'over a year'}: dropped", None)
    return frame.with_columns(duration_ms=pl.when(~bad).then(pl.col("duration_ms")))


def _ts(frame: pl.DataFrame) -> pl.Expr:
    """`ts` read natively where the frame has it, else parsed from the text `t`; text is parsed
    only where there is some (a text log's 1.5 M events a GB, nearly all read natively)."""
    if "ts" not in frame.columns:
        return parse_ts()
    native = pl.col("ts").cast(UTC_MS)
    return pl.coalesce(native, parse_ts()) if frame["t"].null_count() < frame.height else native


def finish_slow_ops(slow: pl.DataFrame, file: str) -> pl.DataFrame:
    """Slow ops of JSON or legacy text lines, finished natively but for `started` and
    `file`; `t` holds the timestamps in forms the native reader leaves to polars. The
    columns of SLOW_OPS_BEFORE_JOINS that `slow` has, in its order."""
    finished = slow.with_columns(ts=_ts(slow), file=pl.lit(file, pl.String)).with_columns(started=_started())
    return finished.select(c for c in SLOW_OPS_BEFORE_JOINS if c in finished.columns)


def finish_events(raw: pl.DataFrame, file: str) -> pl.DataFrame:
    """Events of JSON lines (`t` text only) or legacy text lines (`ts` read natively, `t` where it was not)."""
    return (
        raw.with_columns(ts=_ts(raw), file=pl.lit(file, pl.String)).with_columns(started=_started()).select(EVENTS_BEFORE_JOINS)
    )
