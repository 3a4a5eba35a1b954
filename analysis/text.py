"""Numbers as people read them in titles and explanations."""

from __future__ import annotations

import datetime as dt

from ftdc.timeutil import format_duration as duration  # noqa: F401  (the analyses' short name)


def pct(share: float) -> str:
    """A share (0..1) as a percentage with sensible precision."""
    value = 100 * share
    return f"{value:.1f} %" if value < 10 else f"{value:.0f} %"


def span(start: dt.datetime, end: dt.datetime, joiner: str = "to") -> str:
    """`10:00:05 to 10:03:00`, with both dates when the two ends fall on different days
    (a bare `15:58:49` after `2024-04-16 16:51:29` reads as the same day, and earlier)."""
    if start.date() == end.date():
        return f"{start:%H:%M:%S} {joiner} {end:%H:%M:%S}"
    return f"{start:%Y-%m-%d %H:%M:%S} {joiner} {end:%Y-%m-%d %H:%M:%S}"


def dated_span(start: dt.datetime, end: dt.datetime, joiner: str = "to") -> str:
    """`span` with the day always written once, for context with no other date near it."""
    if start.date() == end.date():
        return f"{start:%Y-%m-%d %H:%M:%S} {joiner} {end:%H:%M:%S}"
    return span(start, end, joiner)
