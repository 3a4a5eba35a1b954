"""Numbers as people read them in titles and explanations."""

from __future__ import annotations

from ftdc.timeutil import format_duration as duration  # noqa: F401  (the analyses' short name)


def pct(share: float) -> str:
    """A share (0..1) as a percentage with sensible precision."""
    value = 100 * share
    return f"{value:.1f} %" if value < 10 else f"{value:.0f} %"
