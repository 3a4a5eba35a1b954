"""Numbers as people read them in titles and explanations."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable

from ftdc.timeutil import format_duration as duration  # noqa: F401  (the analyses' short name)


def pct(share: float) -> str:
    """A share (0..1) as a percentage with sensible precision."""
    value = 100 * share
    return f"{value:.1f} %" if value < 10 else f"{value:.0f} %"


def milliseconds(value: float) -> str:
    """A number of milliseconds as `ms` says it, without the unit (a table's column or an evidence label carries it)."""
    if value >= 10 or value <= 0:
        return f"{value:,.0f}"
    decimals = max(1, 1 - math.floor(math.log10(value)))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


def ms(value: float) -> str:
    """A time in milliseconds (a latency, a request's wait) as every sentence says it: `1,250 ms`, `26 ms`, `2.1 ms`,
    `0.34 ms`; two significant figures under 10 ms, so that a sub-millisecond mean never reads `0 ms` beside its usual
    `0.3 ms`."""
    return f"{milliseconds(value)} ms"


def ram(megabytes: float) -> str:
    """An amount of memory (a host's RAM, a container's limit) as every format says it: `31.2 GB`, one unit and one
    decimal (hostInfo gives MB; "32,000 MB RAM" beside "8.0 GB of 31.2 GB RAM" was one quantity in two units)."""
    return f"{megabytes / 1024:,.1f} GB"


def _clock(t: dt.datetime, dated: bool, precise: bool) -> str:
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    text = t.strftime("%Y-%m-%d %H:%M:%S" if dated else "%H:%M:%S")
    return f"{text}.{t.microsecond // 1000:03d}" if precise else text


def clock(t: dt.datetime, *, dated: bool = False) -> str:
    """`10:00:05 UTC` (`2024-04-16 10:00:05 UTC` when `dated`): every time a sentence gives carries its zone."""
    return f"{_clock(t, dated, False)} UTC"


def span(start: dt.datetime, end: dt.datetime, joiner: str = "to", *, date_start: bool = False) -> str:
    """`10:00:05 to 10:03:00 UTC`, with both dates when the two ends fall on different days
    (a bare `15:58:49` after `2024-04-16 16:51:29` reads as the same day, and earlier), and
    milliseconds when the ends fall in the same second. `date_start`: the first end dated anyway."""
    dated = start.date() != end.date()
    precise = start.replace(microsecond=0) == end.replace(microsecond=0) and start != end
    return f"{_clock(start, dated or date_start, precise)} {joiner} {_clock(end, dated, precise)} UTC"


def dated_span(start: dt.datetime, end: dt.datetime, joiner: str = "to") -> str:
    """`span` with the day always written once, for context with no other date near it."""
    return span(start, end, joiner, date_start=True)


def span_before(since: dt.datetime, until: dt.datetime, reach: dt.timedelta = dt.timedelta(hours=1)) -> str:
    """What a baseline reaching `reach` back from `until` rests on, from `since` (its earliest sample): `the hour
    before 10:00:05` (`the 10 min before 10:00:05`), or, when the capture holds less, `the 1 min 28 s before 10:00:05,
    all the capture holds`. A sampling period or two short of the reach is the whole of it."""
    if until - since >= reach * 59 / 60:
        return f"the {'hour' if reach == dt.timedelta(hours=1) else duration(reach.total_seconds())} before {clock(until)}"
    return f"the {duration((until - since).total_seconds())} before {clock(until)}, all the capture holds"


def first_and_last(moments: list[dt.datetime], say: Callable[[dt.datetime], str] | None = None) -> str:
    """How many `moments` there were, and when the first and the last were (a node's restarts may run to hundreds:
    the whole list is in the JSON): `none`, `1, at …`, `2, at … and …`, `282, the first at …, the last at …`; each time
    by `say` (dated, with its zone, by default)."""
    said = say or (lambda m: clock(m, dated=True))
    if not moments:
        return "none"
    if len(moments) <= 2:
        return f"{len(moments)}, at {' and '.join(said(m) for m in moments)}"
    return f"{len(moments)}, the first at {said(moments[0])}, the last at {said(moments[-1])}"


def mb_per_s(value: float) -> str:
    """MB/s as the sentences say them: whole numbers from 10, one decimal under, and `under 0.1 MB/s` below that (never
    `0 MB/s` of a real trickle)."""
    if value >= 10:
        return f"{value:,.0f} MB/s"
    return f"{value:.1f} MB/s" if value >= 0.1 else "under 0.1 MB/s"


def plural(count: float, noun: str, many: str | None = None) -> str:
    """`noun` as a count of it reads: `run` for 1, `runs` otherwise (`many` where the plural is not the noun and s)."""
    return noun if count == 1 else many or f"{noun}s"


def counted(count: int, noun: str, many: str | None = None) -> str:
    """`1 run`, `2 runs`, `1,200 runs`: a count and its noun as they read, never `run(s)`."""
    return f"{count:,} {plural(count, noun, many)}"
