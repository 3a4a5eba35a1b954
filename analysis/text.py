"""Numbers as people read them in titles and explanations."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`4 min 30 s`, `2 h 5 min`, `12 s`, `0.4 s`."""
    if seconds < 10:
        return f"{seconds:.1f} s" if seconds % 1 else f"{seconds:.0f} s"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def pct(share: float) -> str:
    """A share (0..1) as a percentage with sensible precision."""
    value = 100 * share
    return f"{value:.1f} %" if value < 10 else f"{value:.0f} %"
