"""The slow operations over time, as an SVG bar chart: how many the log holds in each interval, those that scanned a
whole collection (COLLSCAN) marked in their own colour and hatching, with their name in the legend (colour is never
the only carrier). Drawn 1080 units wide like the report's other figures; its text is 16 units, about 10.5 px at
the card width of an 800 px window.
"""

from __future__ import annotations

import datetime as dt

from analysis.outputs.report.plots import time_ticks
from analysis.series import aggregates
from analysis.text import counted
from analysis.workbench.log_overview import Workload

WIDTH, HEIGHT = 1080, 230
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 34, 34
FONT = 16
ALL, COLLSCAN = "#4c78a8", "#c62828"


def _nice(top: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `top`: the scale's last tick."""
    step = 1.0
    while step * 10 <= top:
        step *= 10
    return next(n * step for n in (1, 2, 5, 10) if n * step >= top)


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def interval_words(seconds: int) -> str:
    """An interval as the chart's title says it: `5 s`, `1 min`, `3 h`, `1 day`."""
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return counted(n, "day") if unit == "day" else f"{n} {unit}"
    return f"{seconds} s"


def svg(workload: Workload) -> str | None:
    """The chart of `workload.over_time`; None when the log holds no slow operation with a time."""
    frame = workload.over_time
    if frame.is_empty():
        return None
    step = dt.timedelta(seconds=workload.interval_s)
    start = aggregates.known_time(aggregates.earliest(frame["start"]))
    end = aggregates.known_time(aggregates.latest(frame["start"])) + step
    span = (end - start).total_seconds()
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = _nice(max(aggregates.known(aggregates.greatest(frame["operations"])), 1))
    x = lambda t: LEFT + (t - start).total_seconds() / span * plot_w  # noqa: E731
    y = lambda v: TOP + plot_h - v / top * plot_h  # noqa: E731
    width = max(plot_w * workload.interval_s / span - 1, 1)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {HEIGHT}' font-family='system-ui,sans-serif' "
        f"font-size='{FONT}' role='img'>",
        "<defs><pattern id='collscan-hatch' width='6' height='6' patternUnits='userSpaceOnUse' patternTransform='rotate(45)'>"
        f"<rect width='6' height='6' fill='{COLLSCAN}'/><line x1='0' y1='0' x2='0' y2='6' stroke='#fff' stroke-width='2'/>"
        "</pattern></defs>",
        f"<text x='{LEFT}' y='{FONT + 2}'>slow operations per {interval_words(workload.interval_s)}, by the time each was logged (UTC)</text>",
    ]
    # The legend at the right of the title line: a swatch and its name each.
    legend_x = WIDTH - RIGHT - 400
    parts += [
        f"<rect x='{legend_x}' y='6' width='14' height='14' fill='{ALL}'/>"
        f"<text x='{legend_x + 20}' y='{FONT + 2}'>operations</text>",
        f"<rect x='{legend_x + 130}' y='6' width='14' height='14' fill='url(#collscan-hatch)'/>"
        f"<text x='{legend_x + 150}' y='{FONT + 2}'>COLLSCAN (whole collection)</text>",
    ]
    for value in (0, top / 2, top):
        parts.append(
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(value):.1f}' y2='{y(value):.1f}' stroke='#ddd'/>"
            f"<text x='{LEFT - 6}' y='{y(value) + 5:.1f}' text-anchor='end'>{_count(value)}</text>"
        )
    for start_at, operations, collscans in frame.select("start", "operations", "collscans").iter_rows():
        left = x(start_at)
        parts.append(
            f"<rect x='{left:.1f}' y='{y(operations):.1f}' width='{width:.1f}' height='{y(0) - y(operations):.1f}' fill='{ALL}'>"
            f"<title>{start_at:%H:%M:%S}: {operations:,} slow, {collscans:,} COLLSCAN</title></rect>"
        )
        if collscans:
            parts.append(
                f"<rect x='{left:.1f}' y='{y(collscans):.1f}' width='{width:.1f}' height='{y(0) - y(collscans):.1f}' "
                "fill='url(#collscan-hatch)'/>"
            )
    ticks, form = time_ticks(start, end, most=8)
    for tick in ticks:
        at = x(tick)
        anchor = "start" if at < LEFT + 40 else "end" if at > WIDTH - RIGHT - 40 else "middle"
        parts.append(
            f"<line x1='{at:.1f}' x2='{at:.1f}' y1='{TOP + plot_h}' y2='{TOP + plot_h + 5}' stroke='#555'/>"
            f"<text x='{at:.1f}' y='{HEIGHT - 10}' text-anchor='{anchor}'>{tick.strftime(form)}</text>"
        )
    parts.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{TOP + plot_h}' y2='{TOP + plot_h}' stroke='#555'/></svg>")
    return "".join(parts)
