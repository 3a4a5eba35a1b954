"""How the report draws (matplotlib, no display): panels stacked on one UTC time axis, as a PNG.

Long ranges are cut into one bucket per pixel and drawn as each bucket's
min-max band, so a one-second spike in a week still shows. Thresholds are
drawn as they were in effect at each time and labelled in full with their
source; checkpoints are shaded on every panel, with a solid strip along its
foot that a finding's shading cannot hide. Times are UTC and say so.
`figures` decides what each of the report's figures shows.
"""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass
from typing import Optional, Sequence

import matplotlib.dates as mdates
import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
from PIL import Image

from ftdc.frames import TIME_COLUMN

from analysis.analyze import Analysis

# 1080 px: a card's width at 1400 px, drawn 1:1 there; at 800 px shrunk to about 0.67, where 9 pt labels (11 px) are still 7.5 px.
WIDTH_IN, DPI = 12.0, 90
PIXELS = int(WIDTH_IN * DPI)
PANEL_IN = 1.4  # an incident's panels and its card leave the findings within three screens at 1400 px
# Fixed margins (inches): tight_layout measures every label twice and costs as much as drawing.
LEFT_IN, RIGHT_IN, TOP_IN, BOTTOM_IN, GAP_IN = 1.0, 0.15, 0.45, 0.6, 0.5
SEVERITY_COLORS = {"critical": "#d62728", "warning": "#ff9f1c"}
SHADE = "#999999"
# Plots are a few flat colours: a palette of this many keeps them legible at a quarter of the bytes
# (a report is attached to tickets). The re-encoding also writes no text chunk, so no PNG carries
# metadata ("Software" or other) that a redacted report could leak.
PALETTE = 64


def downsample(frame: pl.DataFrame, columns: list[str], start: dt.datetime, end: dt.datetime, pixels: int = PIXELS) -> pl.DataFrame:
    """`columns` of `frame` within [start, end] as min/max per pixel-wide bucket (`<col>_min`, `<col>_max`, `start`)."""
    rows = frame.filter(pl.col(TIME_COLUMN).is_between(start, end)).select(TIME_COLUMN, *columns)
    if rows.height <= 2 * pixels:
        return rows.with_columns(*(pl.col(c).alias(f"{c}_min") for c in columns), *(pl.col(c).alias(f"{c}_max") for c in columns))
    every_ms = max(1, int((end - start).total_seconds() * 1000 / pixels))
    return rows.group_by_dynamic(TIME_COLUMN, every=f"{every_ms}ms").agg(
        *(pl.col(c).min().alias(f"{c}_min") for c in columns), *(pl.col(c).max().alias(f"{c}_max") for c in columns)
    )


def _times(frame: pl.DataFrame) -> np.ndarray:
    """The frame's times as numpy datetime64 in UTC: matplotlib converts those in bulk, Python datetimes one by one."""
    return frame[TIME_COLUMN].dt.replace_time_zone(None).to_numpy()


def _band(ax, frame: pl.DataFrame, column: str, label: str, color: Optional[str] = None) -> None:
    if f"{column}_min" not in frame.columns:
        return
    t = _times(frame)
    lo, hi = frame[f"{column}_min"].to_numpy(), frame[f"{column}_max"].to_numpy()
    ax.fill_between(t, lo, hi, color=color, alpha=0.35, linewidth=0, step="post")
    ax.plot(t, hi, color=color, linewidth=0.8, label=label, drawstyle="steps-post")


def checkpoint_share(analysis: Analysis, start: dt.datetime, end: dt.datetime, pixels: int = PIXELS) -> np.ndarray:
    """The share of each pixel's time spent in checkpoints: a week holds ten thousand of them,
    so each is a fraction of a pixel; an hour shows each one whole. Covered time up to x is
    sum(x - start) over checkpoints started before x minus sum(x - end) over those ended before
    it; each pixel's share is its difference across the pixel."""
    if not analysis.checkpoints or end <= start:
        return np.zeros(pixels)
    starts = np.sort([c.start.timestamp() for c in analysis.checkpoints])
    ends = np.sort([c.end.timestamp() for c in analysis.checkpoints])
    edges = np.linspace(start.timestamp(), end.timestamp(), pixels + 1)

    def covered(times: np.ndarray) -> np.ndarray:
        n = np.searchsorted(times, edges)
        before = np.concatenate([[0.0], np.cumsum(times)])[n]
        return n * edges - before

    share = np.diff(covered(starts) - covered(ends)) / (edges[1] - edges[0])
    return np.clip(share, 0, 1)


# Grey whose opacity is the share of time checkpointing.
_CHECKPOINT_SHADE = ListedColormap([(0.55, 0.55, 0.55, 0.3 * a) for a in np.linspace(0, 1, 64)])


_CHECKPOINT_STRIP = ListedColormap([(0.35, 0.35, 0.35, a) for a in np.linspace(0, 1, 64)])
STRIP = 0.05  # the share of a panel's height the checkpoint strip along its foot takes


def _below_the_data(ax) -> None:
    """Extends the y range down by the strip's height (in the panel's own scale, linear or symlog),
    so no series drawn at zero covers the checkpoint strip."""
    scale = ax.yaxis.get_transform()
    low, high = scale.transform(ax.get_ylim())
    ax.set_ylim(bottom=scale.inverted().transform(low - (high - low) * STRIP / (1 - STRIP)))


def _shade_checkpoints(ax, share: np.ndarray, start: dt.datetime, end: dt.datetime) -> None:
    if share.any():
        _below_the_data(ax)
        edges = mdates.date2num([start, end])
        limits = ax.get_ylim()  # the data's own; the shade must not rescale the panel
        for cmap, top in ((_CHECKPOINT_SHADE, 1), (_CHECKPOINT_STRIP, STRIP)):
            ax.imshow(share[np.newaxis, :], extent=(edges[0], edges[1], 0, top), transform=ax.get_xaxis_transform(), aspect="auto",
                      cmap=cmap, vmin=0, vmax=1, interpolation="nearest", zorder=0)
        ax.set_ylim(limits)


def _thresholds(ax, analysis: Analysis, frame: pl.DataFrame, names: Sequence[tuple[str, str]]) -> None:
    """Each threshold as the step line it was, labelled in full with its value and source inside the
    panel: the y range gets room above the highest. Labels sit at the right end (a window's label is
    at its start, a quarter in); one close in height to the one before goes to the left end."""
    top, previous = ax.get_ylim()[1], None
    for column, name in names:
        values = frame[f"{column}_max"].drop_nulls() if f"{column}_max" in frame.columns else []
        if not len(values):
            continue
        ax.plot(_times(frame), frame[f"{column}_max"].to_numpy(), color="black", linestyle=":", linewidth=0.9, drawstyle="steps-post")
        top, last = max(top, float(values.max()) * 1.18), float(values[-1])
        right = previous is None or not previous[1] or abs(last - previous[0]) >= 0.1 * top
        previous = (last, right)
        ax.annotate(f"{name} {last:g} % ({analysis.thresholds.source(name)})", xy=(1.0 if right else 0.0, last),
                    xycoords=("axes fraction", "data"), xytext=(-4 if right else 4, 2), textcoords="offset points",
                    ha="right" if right else "left", va="bottom", fontsize=9,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.75, "linewidth": 0})
    ax.set_ylim(top=top)


@dataclass(frozen=True)
class Panel:
    title: str
    columns: Sequence[tuple[str, str, Optional[str]]] = ()  # (series column, label, colour)
    thresholds: Sequence[tuple[str, str]] = ()  # (series column, threshold name)
    log_scale: bool = False
    runs: bool = False  # the log's COLLSCAN runs as bars instead of series
    states: bool = False  # each column a replica-set member's state, drawn as coloured bands (a state is not a quantity)
    window: Optional[tuple[dt.datetime, dt.datetime]] = None  # the chain step it shows, marked along its top
    severity: str = "warning"


@dataclass(frozen=True)
class Span:
    """A window shaded on every panel and labelled above the first (a finding's number, an incident's id)."""

    start: dt.datetime
    end: dt.datetime
    severity: str
    label: str


def _format_axes(axes, start: dt.datetime, end: dt.datetime) -> None:
    """Date ticks chosen once for the figure; only the bottom panel has tick marks and labels (in UTC),
    every panel the same grid lines drawn as one collection (a tick costs matplotlib a few objects to make)."""
    locator = mdates.AutoDateLocator(tz=dt.timezone.utc)
    ticks = locator.tick_values(start, end)
    for ax in axes:
        ax.set_xlim(start, end)
        ax.xaxis.set_major_locator(NullLocator())
        ax.vlines(ticks, 0, 1, transform=ax.get_xaxis_transform(), linewidth=0.3, color="#b0b0b0", zorder=0.5)
        ax.grid(True, axis="y", linewidth=0.3, alpha=0.5)
    axes[-1].xaxis.set_major_locator(FixedLocator(ticks))
    axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=dt.timezone.utc))
    axes[-1].set_xlabel("time (UTC)", fontsize=9, loc="left")


def _title(ax, text: str) -> None:
    # Placed text, not set_title, which measures the whole axes to position itself on every draw.
    ax.text(0, 1.03, text, transform=ax.transAxes, fontsize=11, ha="left", va="bottom")


def _legend(ax, count: int) -> None:
    """Above the panel's right end, beside its title: never over the data."""
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=9, ncols=min(8, count), frameon=False,
              borderaxespad=0.1, handlelength=1.5, columnspacing=1.0)


def _collscans(ax, analysis: Analysis, start: dt.datetime, end: dt.datetime) -> None:
    """COLLSCAN operations from the log as bars over [start, end] of each run."""
    scans = analysis.logs.slow_ops.filter(pl.col("plan_kind") == "COLLSCAN", pl.col("started") <= end, pl.col("ts") >= start,
                                          ~pl.col("write_statement").fill_null(False)).sort("started")
    if scans.is_empty():
        ax.text(0.5, 0.5, "no COLLSCAN in the log", transform=ax.transAxes, ha="center", va="center", fontsize=9, color="#666")
        ax.set_yticks([])
        return
    namespaces = list(dict.fromkeys(scans["ns"].fill_null("?").to_list()))
    # At least two pixels wide, so a 300 ms scan still shows in a week.
    least = (end - start) * 2 / PIXELS
    for row in scans.select("started", "ts", "ns").iter_rows():
        y = namespaces.index(row[2] or "?")
        ax.plot([row[0], max(row[1], row[0] + least)], [y, y], linewidth=6, solid_capstyle="butt", color="#d62728", alpha=0.7)
    rows(ax, namespaces)


def _telling(frame: pl.DataFrame, columns: list[tuple[str, str, Optional[str]]]) -> tuple[list, list[str]]:
    """The series worth a line, and the names of those at zero throughout the range (six queues of an idle pool
    are six flat lines on the axis: named in the title instead). A panel keeps one line at least."""
    def flat(column: str) -> bool:
        ends = [frame[f"{column}_{end}"] for end in ("min", "max") if f"{column}_{end}" in frame.columns]
        return bool(ends) and all(e.fill_null(0).abs().max() == 0 for e in ends)

    zero = [c for c in columns if flat(c[0])]
    if len(zero) == len(columns):
        return columns, []
    return [c for c in columns if c not in zero], [name for _, name, _ in zero]


def _union(spans: list[Span]) -> list[tuple[dt.datetime, dt.datetime, str]]:
    """Overlapping spans as one shaded stretch each (the worst severity): stacked shades would hide the checkpoints beneath."""
    out: list[list] = []
    for s in sorted(spans, key=lambda s: s.start):
        if out and s.start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], s.end)
            out[-1][2] = "critical" if "critical" in (out[-1][2], s.severity) else s.severity
        else:
            out.append([s.start, s.end, s.severity])
    return [tuple(x) for x in out]


def _labels(spans: list[Span], start: dt.datetime, end: dt.datetime, width_px: float = 24) -> list[tuple[dt.datetime, str]]:
    """Span labels, those starting within `width_px` pixels of each other joined ("1, 2") instead of printed over each other."""
    near = (end - start) * width_px / PIXELS
    out: list[tuple[dt.datetime, list[str]]] = []
    for s in sorted(spans, key=lambda s: s.start):
        if out and s.start - out[-1][0] < near:
            out[-1][1].append(s.label)
        else:
            out.append((s.start, [s.label]))
    return [(t, ", ".join(labels)) for t, labels in out]


def figure(panels: list[Panel], analysis: Analysis, start: dt.datetime, end: dt.datetime, spans: list[Span], title: str = "",
           panel_in: float = PANEL_IN) -> Figure:
    """`panels` stacked on one UTC time axis over [start, end], each `panel_in` inches tall, `spans` shaded and labelled."""
    rows = max(len(panels), 1)
    top_in = TOP_IN + (0.3 if title else 0)  # a figure's title above the first panel's
    height = top_in + BOTTOM_IN + rows * panel_in + (rows - 1) * GAP_IN
    # A Figure of its own, not pyplot's: no backend is chosen or changed (a notebook's
    # inline plots keep working) and nothing stays registered after the PNG is saved.
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI)
    axes = fig.subplots(rows, 1, squeeze=False)[:, 0]  # one x range set on each (shared axes would share the bottom's ticks)
    fig.subplots_adjust(left=LEFT_IN / WIDTH_IN, right=1 - RIGHT_IN / WIDTH_IN, top=1 - top_in / height, bottom=BOTTOM_IN / height,
                        hspace=GAP_IN / panel_in)
    columns = sorted({c for p in panels for c, _, _ in p.columns} | {c for p in panels for c, _ in p.thresholds})
    frame = downsample(analysis.series, columns, start, end)
    share = checkpoint_share(analysis, start, end)
    spans = [s for s in spans if s.end >= start and s.start <= end]
    for ax, panel in zip(axes, panels):
        if panel.runs:
            _collscans(ax, analysis, start, end)
        if panel.states:
            state_bands(ax, analysis, [c for c, _, _ in panel.columns], [name for _, name, _ in panel.columns], start, end)
        drawn, zero = _telling(frame, [] if panel.states else list(panel.columns))
        for column, name, color in drawn:
            _band(ax, frame, column, name, color)
        if panel.log_scale:
            # Up to 10 at least: below one decade symlog labels its one tick with an offset the margin cuts.
            ax.set_yscale("symlog", linthresh=1)
            ax.set_ylim(bottom=0, top=max(10, ax.get_ylim()[1]))
            # Plain numbers (1, 10, 100), not mathtext powers: as readable, a tenth of the drawing time.
            ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            ax.yaxis.set_minor_locator(NullLocator())
        _thresholds(ax, analysis, frame, panel.thresholds)
        _shade_checkpoints(ax, share, start, end)
        _title(ax, panel.title)
        if zero:  # inside the panel's top left: the title's line holds the legend
            ax.text(0.003, 0.96, f"zero throughout: {', '.join(zero)}", transform=ax.transAxes, fontsize=9, color="#555", ha="left", va="top",
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.8, "linewidth": 0})
        if drawn:
            _legend(ax, len(drawn))
        if panel.window is not None:
            ax.axvspan(*panel.window, ymin=0.97, ymax=1.0, color=SEVERITY_COLORS.get(panel.severity, SHADE), alpha=0.9, linewidth=0)
    for ax in axes:
        for first, last, severity in _union(spans):
            # Tinted and edged in its severity's colour: told apart from the checkpoints' grey beneath.
            color = SEVERITY_COLORS.get(severity, SHADE)
            ax.axvspan(first, last, color=color, alpha=0.12, linewidth=0, zorder=-1)
            for edge in (first, last):
                ax.axvline(edge, color=color, linewidth=0.9, alpha=0.9, zorder=1)
    _format_axes(axes, start, end)
    fig.text(0.5, 0.1 / height, KEY, ha="center", va="bottom", fontsize=8, color="#444")
    for at, label in _labels(spans, start, end):
        axes[0].annotate(label, xy=(at, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -6), textcoords="offset points",
                         fontsize=9, color="#a00", ha="left", va="top",
                         bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.8, "linewidth": 0})
    if title:
        fig.suptitle(title, x=0.01, y=1 - 0.08 / height, ha="left", va="top", fontsize=11)
    return fig


KEY = "grey: checkpoints (dark strip: share of time checkpointing) · tinted between coloured lines: the finding's or incident's window"
STATE_COLORS = {1: "#2ca02c", 2: "#1f77b4"}  # primary, secondary; any other state (recovering, down...) red


def state_bands(ax, analysis: Analysis, columns: list[str], names: list[str], start: dt.datetime, end: dt.datetime) -> None:
    """Each member's state as runs of one colour over [start, end] (a state holds for minutes; a bar per run, not per sample)."""
    series = analysis.series.filter(pl.col(TIME_COLUMN).is_between(start, end))
    for y, column in enumerate(columns):
        runs = (series.select(TIME_COLUMN, state=pl.col(column))
                .with_columns(run=(pl.col("state") != pl.col("state").shift(1)).fill_null(True).cum_sum())
                .group_by("run", maintain_order=True).agg(pl.col(TIME_COLUMN).first().alias("from"), pl.col(TIME_COLUMN).last().alias("to"),
                                                          pl.col("state").first()))
        for row in runs.iter_rows(named=True):
            if row["state"] is not None:
                ax.plot([row["from"], row["to"]], [y, y], linewidth=8, solid_capstyle="butt", color=STATE_COLORS.get(int(row["state"]), "#d62728"))
    rows(ax, names)


def png(fig: Figure) -> bytes:
    """The figure drawn once and encoded once, as a palette PNG."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=PALETTE, method=Image.Quantize.FASTOCTREE).save(out, format="PNG")
    return out.getvalue()


def rows(ax, names: list[str]) -> None:
    """One bar row per name, the name written inside the panel above its row (the left margin cannot hold an address)."""
    for y, name in enumerate(names):
        ax.text(0.003, y + 0.22, name, transform=ax.get_yaxis_transform(), fontsize=9, ha="left", va="bottom",
                bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.8, "linewidth": 0})
    ax.set_yticks([])
    ax.set_ylim(-0.6, len(names) - 0.2)
