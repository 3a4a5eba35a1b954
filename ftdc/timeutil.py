"""Times given by callers, and times shown to people.

One parser for every `start`/`end` the API and the CLI take (naive means
UTC), one error wording for bad times, and two display formats: ISO-8601 UTC
with `Z` for data (JSON, tables, exports), milliseconds only when they are not
zero, and for people `2024-05-14 09:30:00 UTC`, with the time in the log's own
offset beside it where that differs (`say_time`, `say_window`): the offset its
lines around that time are written in, where a log's offset changed (`LogOffsets`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard, overload

if TYPE_CHECKING:
    import polars as pl

TimeArg = int | str | dt.datetime | dt.date | None

TIME_HELP = "ISO-8601, UTC unless it has an offset, e.g. 2024-05-14T09:30:00Z"


@overload
def to_utc(value: None) -> None: ...


@overload
def to_utc(value: int | str | dt.datetime | dt.date) -> dt.datetime: ...


def to_utc(value: TimeArg) -> dt.datetime | None:
    """None, epoch milliseconds, an ISO-8601 string, a date or a datetime, as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("a time bound cannot be a bool")
    if isinstance(value, int):
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not a valid time: {value!r} ({TIME_HELP})") from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)


def to_ms(value: TimeArg) -> int | None:
    """`to_utc` as milliseconds since the epoch."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    when = to_utc(value)
    return None if when is None else int(when.timestamp() * 1000)


def time_range(start: TimeArg, end: TimeArg) -> tuple[dt.datetime | None, dt.datetime | None]:
    """Both bounds as UTC datetimes; a start after the end is an error, not an empty answer."""
    lower, upper = to_utc(start), to_utc(end)
    if lower is not None and upper is not None and lower > upper:
        raise ValueError(f"start {format_time(lower)} is after end {format_time(upper)}")
    return lower, upper


def format_time(value: dt.datetime | None) -> str:
    """`2024-05-14T09:30:00Z`, or `2024-05-14T09:30:00.250Z` when there are milliseconds; "-" for None."""
    if value is None:
        return "-"
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc)
    # ISO-8601's four-digit year, as polars writes it (glibc's %Y gives year 1 as "1").
    text = f"{value.year:04d}-" + value.strftime("%m-%dT%H:%M:%S")
    millis = value.microsecond // 1000
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"


def say_offset(offset: dt.timedelta) -> str:
    """`-03:00`, `+05:30`, `+00:00`: an offset as mongod's log writes it."""
    minutes = round(offset.total_seconds() / 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


# A window shorter than this is said to the millisecond (its ends, a second apart or less, would read as one time);
# longer ones, and single times, in whole seconds (`03:00:30 – 03:29:55 UTC`, not `03:00:30.005 – 03:29:55.005 UTC`).
PRECISE_UNDER = dt.timedelta(seconds=10)


@dataclass(frozen=True)
class LogOffsets:
    """The offsets a log's timestamps are written in over time (a host's local time changes at daylight saving): each
    span of lines written in one offset, `(first, last, offset)` with the UTC times of its first and last lines, in time
    order. A time is said in the offset of the lines around it (`at`)."""

    spans: tuple[tuple[dt.datetime, dt.datetime, dt.timedelta], ...]

    def at(self, value: dt.datetime) -> dt.timedelta:
        """The offset of the lines around `value`: the span holding it, else the nearest one (the first before all)."""
        value = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)

        def distance(span: tuple[dt.datetime, dt.datetime, dt.timedelta]) -> dt.timedelta:
            first, last, _ = span
            return max(first - value, value - last, dt.timedelta(0))

        return min(self.spans, key=distance)[2]

    @property
    def changed(self) -> bool:
        return len({offset for _, _, offset in self.spans}) > 1


Offset = dt.timedelta | LogOffsets | None


def _at(offset: Offset, value: dt.datetime) -> dt.timedelta | None:
    return offset.at(value) if isinstance(offset, LogOffsets) else offset


def _wall(value: dt.datetime, offset: dt.timedelta, dated: bool, precise: bool = False) -> str:
    """`value` (aware or naive UTC) on the clock at `offset`: `09:30:00`, `2024-05-14 09:30:00` when `dated`, with its
    milliseconds when `precise` and it has some."""
    local = value.astimezone(dt.timezone(offset)) if value.tzinfo is not None else value + offset
    text = f"{local.year:04d}-" + local.strftime("%m-%d %H:%M:%S") if dated else local.strftime("%H:%M:%S")
    millis = local.microsecond // 1000
    return f"{text}.{millis:03d}" if millis and precise else text


def _differs(offset: dt.timedelta | None) -> TypeGuard[dt.timedelta]:
    return offset is not None and round(offset.total_seconds() / 60) != 0


def _in_log(
    start: dt.datetime,
    end: dt.datetime | None,
    offset: dt.timedelta,
    end_offset: dt.timedelta | None = None,
    precise: bool = False,
) -> str:
    if end is not None and end_offset is not None and end_offset != offset:  # the log's offset changed in between
        return (
            f"{_wall(start, offset, True, precise)} in the log's {say_offset(offset)} – "
            f"{_wall(end, end_offset, True, precise)} in its {say_offset(end_offset)}"
        )
    dated = _wall(start, offset, True)[:10] != _wall(start, dt.timedelta(0), True)[:10]
    shown = _wall(start, offset, dated, precise) + ("" if end is None else f" – {_wall(end, offset, dated, precise)}")
    return f"{shown} in the log's {say_offset(offset)}"


def say_time(value: dt.datetime | None, offset: Offset = None) -> str:
    """For people, in whole seconds: `2024-05-14 09:30:00 UTC`, and where the log's `offset` differs from UTC the time in
    it too (`2024-05-14 09:30:00 UTC, 06:30:00 in the log's -03:00`, its date given when another day); "-" for None.
    `offset` may be a log's `LogOffsets`: the time is said in the offset of its lines around it."""
    if value is None:
        return "-"
    said = f"{_wall(value, dt.timedelta(0), True)} UTC"
    here = _at(offset, value)
    return f"{said}, {_in_log(value, None, here)}" if _differs(here) else said


def say_window(start: dt.datetime, end: dt.datetime, offset: Offset = None) -> str:
    """For people: `2024-05-14 09:30:00 – 09:45:10 UTC` (the end dated when on another day), and where the log's
    `offset` differs from UTC the window in it too (`, 06:30:00 – 06:45:10 in the log's -03:00`; each end in its own
    where a log's `LogOffsets` changed in between); to the millisecond only when shorter than PRECISE_UNDER."""
    dated = _wall(start, dt.timedelta(0), True)[:10] != _wall(end, dt.timedelta(0), True)[:10]
    precise = abs(end - start) < PRECISE_UNDER
    said = f"{_wall(start, dt.timedelta(0), True, precise)} – {_wall(end, dt.timedelta(0), dated, precise)} UTC"
    first, last = _at(offset, start), _at(offset, end)
    if not (_differs(first) or _differs(last)):
        return said
    return f"{said}, {_in_log(start, end, first or dt.timedelta(0), last or dt.timedelta(0), precise)}"


def format_time_expr(expr: pl.Expr) -> pl.Expr:
    """`format_time` for a polars Datetime column (as a String column)."""
    import polars as pl  # here, so that the CLI's help (TIME_HELP) starts without polars

    utc = expr.dt.convert_time_zone("UTC")
    whole = utc.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return pl.when(utc.dt.millisecond() == 0).then(whole).otherwise(utc.dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"))


def times_as_text(schema: dict[str, pl.DataType]) -> list[pl.Expr]:
    """Every datetime column of `schema` as `format_time_expr` text, under its own name."""
    import polars as pl

    return [format_time_expr(pl.col(name)).alias(name) for name, dtype in schema.items() if isinstance(dtype, pl.Datetime)]


def format_duration(seconds: float) -> str:
    """`4 min 30 s`, `2 h 5 min`, `12 s`, `0.4 s`; `3 d 4 h` from two days on. Rounded to the nearest of the smallest
    unit shown (a window of 1 h 9 min 59 s reads `1 h 10 min`, not `1 h 9 min`): a length is what its samples span
    (end less start), so a capture from 10:00:00 to 12:59:59 at 1 s is `3 h`."""
    if seconds < 10:
        return f"{seconds:.1f} s" if seconds % 1 else f"{seconds:.0f} s"
    seconds = int(round(seconds))
    # Minutes (hours from two days on) are the smallest unit shown from an hour on, once rounded as shown: a capture of
    # 07:00:00 - 07:59:59 at 1 s reads `1 h`, as one of 08:00:00 - 10:59:59 reads `3 h` (the days' bound, likewise).
    if seconds + 30 >= 3600:
        unit = 3600 if seconds + 1800 >= 48 * 3600 else 60
        seconds = (seconds + unit // 2) // unit * unit  # half up: 2 d 0 h 30 min is 2 d 1 h
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 48:
        days, hours = divmod(hours, 24)
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


# Python's datetime holds years 1 to 9999; a crafted or damaged Date outside them would
# stop any conversion to Python (polars panics), so readers drop such times with a warning.
_PYTHON_MS = (-62_135_596_800_000, 253_402_300_799_999)


def outside_python_range(expr: pl.Expr) -> pl.Expr:
    """Whether a Datetime column's values fall outside years 1-9999 (null stays false)."""
    return ~expr.dt.epoch("ms").is_between(*_PYTHON_MS).fill_null(True)
