"""The report's pictures (matplotlib, no display): the shared timeline and one plot per finding.

Long ranges are cut into one bucket per pixel and drawn as each bucket's
min-max band, so a one-second spike in a week still shows. Thresholds are
drawn as they were in effect at each time and labelled with their source;
checkpoints are shaded on every panel.
"""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass
from typing import Optional

import matplotlib.dates as mdates
import numpy as np
import polars as pl
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator

from ftdc.frames import TIME_COLUMN

from ..analyze import Analysis
from ..detectors import RECORDS
from ..findings import Finding

WIDTH_IN, DPI = 11.0, 90
PIXELS = int(WIDTH_IN * DPI)
PANEL_IN = 1.9
# Fixed margins (inches): tight_layout measures every label twice and costs as much as drawing.
LEFT_IN, RIGHT_IN, TOP_IN, BOTTOM_IN, GAP_IN = 1.0, 0.15, 0.45, 0.45, 0.45
COLORS = {"reads": "#1f77b4", "writes": "#d62728", "commands": "#2ca02c"}
SHADE = "#999999"
# No "Software" or other text chunks: a redacted report must not carry anything in its PNGs' metadata.
PNG_METADATA = {"Software": None}


def downsample(frame: pl.DataFrame, columns: list[str], start: dt.datetime, end: dt.datetime, pixels: int = PIXELS) -> pl.DataFrame:
    """`columns` of `frame` within [start, end] as min/max per pixel-wide bucket (`<col>_min`, `<col>_max`, `start`)."""
    rows = frame.filter(pl.col(TIME_COLUMN).is_between(start, end)).select(TIME_COLUMN, *columns)
    if rows.height <= 2 * pixels:
        return rows.with_columns(*(pl.col(c).alias(f"{c}_min") for c in columns), *(pl.col(c).alias(f"{c}_max") for c in columns))
    every_ms = max(1, int((end - start).total_seconds() * 1000 / pixels))
    return rows.group_by_dynamic(TIME_COLUMN, every=f"{every_ms}ms").agg(
        *(pl.col(c).min().alias(f"{c}_min") for c in columns), *(pl.col(c).max().alias(f"{c}_max") for c in columns)
    )


def _band(ax, frame: pl.DataFrame, column: str, label: str, color: Optional[str] = None) -> None:
    if f"{column}_min" not in frame.columns:
        return
    t = frame[TIME_COLUMN].to_list()
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


def _shade_checkpoints(ax, share: np.ndarray, start: dt.datetime, end: dt.datetime) -> None:
    if share.any():
        edges = mdates.date2num([start, end])
        limits = ax.get_ylim()  # the data's own; the shade must not rescale the panel
        ax.imshow(share[np.newaxis, :], extent=(edges[0], edges[1], 0, 1), transform=ax.get_xaxis_transform(), aspect="auto",
                  cmap=_CHECKPOINT_SHADE, vmin=0, vmax=1, interpolation="nearest", zorder=0)
        ax.set_ylim(limits)


def _thresholds(ax, analysis: Analysis, frame: pl.DataFrame, names: list[tuple[str, str]]) -> None:
    """Each threshold as the step line it was, labelled with its value and source."""
    for column, name in names:
        if f"{column}_max" not in frame.columns:
            continue
        t = frame[TIME_COLUMN].to_list()
        ax.plot(t, frame[f"{column}_max"].to_numpy(), color="black", linestyle=":", linewidth=0.9, drawstyle="steps-post")
        source = analysis.thresholds.source(name)
        value = frame[f"{column}_max"].drop_nulls()
        if len(value):
            ax.annotate(f"{name} {value[-1]:g} % ({_short(source)})", xy=(t[-1], value[-1]), xytext=(-4, 2), textcoords="offset points",
                        ha="right", va="bottom", fontsize=7)


def _short(source: str) -> str:
    return source if len(source) <= 60 else source[:57] + "…"


@dataclass(frozen=True)
class Panel:
    title: str
    columns: list[tuple[str, str, Optional[str]]]  # (series column, label, colour)
    thresholds: list[tuple[str, str]] = ()  # (series column, threshold name)
    log_scale: bool = False


def _panels(analysis: Analysis) -> list[Panel]:
    have = set(analysis.series.columns)
    panels = []
    latency = [(f"{op}_latency_ms", op, COLORS[op]) for op in ("reads", "writes", "commands") if f"{op}_latency_ms" in have]
    if latency:
        panels.append(Panel("latency, ms (interval mean)", latency, log_scale=True))
    cache = [(c, label, color) for c, label, color in (("cache_fill_pct", "fill", "#9467bd"), ("cache_dirty_pct", "dirty", "#ff7f0e"),
                                                     ("cache_updates_pct", "updates", "#8c564b")) if c in have]
    if cache:
        panels.append(Panel("cache, % of maximum", cache, thresholds=[
            ("eviction_trigger_pct", "eviction_trigger"), ("eviction_dirty_trigger_pct", "eviction_dirty_trigger"),
        ] + ([("eviction_updates_trigger_pct", "eviction_updates_trigger")] if "cache_updates_pct" in have else [])))
    tickets = []
    for rw in ("read", "write"):
        tickets += [(c, label, None) for c, label in ((f"{rw}_tickets_out", f"{rw} out"), (f"{rw}_tickets_available", f"{rw} available"),
                                                     (f"{rw}_queued", f"{rw}ers queued"), (f"{rw}_ticket_queue", f"{rw} ticket queue")) if c in have]
    if tickets:
        panels.append(Panel("tickets and queues", tickets))
    return panels


def _format_axes(axes, start: dt.datetime, end: dt.datetime) -> None:
    """Date ticks chosen once for the figure (every panel shares them; the bottom one labels them)."""
    locator = mdates.AutoDateLocator(tz=dt.timezone.utc)
    ticks = locator.tick_values(start, end)
    for ax in axes:
        ax.set_xlim(start, end)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.grid(True, linewidth=0.3, alpha=0.5)
    axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=dt.timezone.utc))


def _title(ax, text: str) -> None:
    # Placed text, not set_title, which measures the whole axes to position itself on every draw.
    ax.text(0, 1.03, text, transform=ax.transAxes, fontsize=9, ha="left", va="bottom")


def _collscans(ax, analysis: Analysis, start: dt.datetime, end: dt.datetime) -> bool:
    """COLLSCAN operations from the log as bars over [start, end] of each run."""
    if analysis.logs is None:
        return False
    scans = analysis.logs.slow_ops.filter(pl.col("plan_kind") == "COLLSCAN", pl.col("started") <= end, pl.col("ts") >= start,
                                          ~pl.col("write_statement").fill_null(False)).sort("started")
    if scans.is_empty():
        ax.text(0.5, 0.5, "no COLLSCAN in the log", transform=ax.transAxes, ha="center", va="center", fontsize=8, color="#666")
        ax.set_yticks([])
        return True
    namespaces = list(dict.fromkeys(scans["ns"].fill_null("?").to_list()))
    # At least two pixels wide, so a 300 ms scan still shows in a week.
    least = (end - start) * 2 / PIXELS
    for row in scans.select("started", "ts", "ns").iter_rows():
        y = namespaces.index(row[2] or "?")
        ax.plot([row[0], max(row[1], row[0] + least)], [y, y], linewidth=6, solid_capstyle="butt", color="#d62728", alpha=0.7)
    ax.set_yticks(range(len(namespaces)), namespaces, fontsize=7)
    ax.set_ylim(-0.7, len(namespaces) - 0.3)
    return True


def _draw(panels: list[Panel], analysis: Analysis, start: dt.datetime, end: dt.datetime, *, findings: list[Finding],
          extra_collscans: bool, title: str) -> bytes:
    rows = max(len(panels) + int(extra_collscans), 1)
    height = TOP_IN + BOTTOM_IN + rows * PANEL_IN + (rows - 1) * GAP_IN
    # A Figure of its own, not pyplot's: no backend is chosen or changed (a notebook's
    # inline plots keep working) and nothing stays registered after the PNG is saved.
    fig = Figure(figsize=(WIDTH_IN, height))
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)
    fig.subplots_adjust(left=LEFT_IN / WIDTH_IN, right=1 - RIGHT_IN / WIDTH_IN, top=1 - TOP_IN / height, bottom=BOTTOM_IN / height,
                        hspace=GAP_IN / PANEL_IN)
    axes = axes[:, 0]
    columns = sorted({c for p in panels for c, _, _ in p.columns} | {c for p in panels for c, _ in p.thresholds})
    frame = downsample(analysis.series, columns, start, end)
    share = checkpoint_share(analysis, start, end)
    for ax, panel in zip(axes, panels):
        for column, name, color in panel.columns:
            _band(ax, frame, column, name, color)
        _thresholds(ax, analysis, frame, list(panel.thresholds))
        _shade_checkpoints(ax, share, start, end)
        if panel.log_scale:
            ax.set_yscale("symlog", linthresh=1)
            ax.set_ylim(bottom=0)
        _title(ax, panel.title)
        if panel.columns:
            ax.legend(loc="upper left", fontsize=7, ncols=min(4, len(panel.columns)), frameon=False)
    if extra_collscans:
        ax = axes[len(panels)]
        _collscans(ax, analysis, start, end)
        _title(ax, "COLLSCAN operations in the log (bar = run time)")
    for ax in axes:
        for f in findings:
            if f.end >= start and f.start <= end and f.severity != "info":
                ax.axvspan(f.start, f.end, color="#d62728" if f.severity == "critical" else "#ff9f1c", alpha=0.08, linewidth=0)
    _format_axes(axes, start, end)
    for n, f in enumerate(findings, 1):
        if f.severity != "info" and f.end >= start and f.start <= end:
            axes[0].annotate(str(n), xy=(f.start, 1.0), xycoords=("data", "axes fraction"), fontsize=7, color="#a00", ha="left", va="bottom")
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata=PNG_METADATA)
    return buffer.getvalue()


def timeline(analysis: Analysis) -> Optional[bytes]:
    """Latency, cache with its thresholds, tickets and COLLSCAN runs on one time axis (PNG)."""
    first, last = analysis.overview.first, analysis.overview.last
    if first is None:
        return None
    panels = _panels(analysis)
    return _draw(panels, analysis, first, last, findings=analysis.problems, extra_collscans=analysis.logs is not None,
                 title="Timeline (UTC): checkpoints shaded grey, findings numbered")


# Per kind: the panels (title, series columns, log scale) its detector declares (`detectors.record`).
EVIDENCE = {kind: [(title, list(columns), log_scale) for title, columns, log_scale in record.panels] for kind, record in RECORDS.items()}
_THRESHOLDS = {"cache_fill_pct": ("eviction_trigger_pct", "eviction_trigger"), "cache_dirty_pct": ("eviction_dirty_trigger_pct", "eviction_dirty_trigger"),
               "cache_updates_pct": ("eviction_updates_trigger_pct", "eviction_updates_trigger")}
# Kinds whose window the log's operations can explain: their figure shows the COLLSCAN runs.
WITH_COLLSCANS = ("cache_pressure", "ticket_exhaustion", "checkpoint_stall", "disk_saturation")


def _matching(have: list[str], wanted: list[str]) -> list[str]:
    """The wanted columns present; a name ending in "." stands for every device's or member's column."""
    out = []
    for w in wanted:
        out += [c for c in have if c.startswith(w)] if w.endswith(".") else [w] if w in have else []
    return out


def _evidence_panels(analysis: Analysis, kinds: list[str]) -> list[Panel]:
    panels, seen = [], set()
    for kind in kinds:
        for title, wanted, log_scale in EVIDENCE.get(kind, []):
            columns = _matching(analysis.series.columns, wanted)
            if columns and title not in seen:
                seen.add(title)
                thresholds = [_THRESHOLDS[c] for c in columns if c in _THRESHOLDS]
                panels.append(Panel(title, [(c, c.replace("_", " "), None) for c in columns], thresholds=thresholds, log_scale=log_scale))
    return panels


def incidents(findings: list[Finding]) -> list[list[Finding]]:
    """Findings whose windows overlap (one incident seen by several detectors), in time order."""
    groups: list[list[Finding]] = []
    for f in sorted(findings, key=lambda f: f.start):
        if groups and f.start <= max(g.end for g in groups[-1]):
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups


def evidence(analysis: Analysis, findings: list[Finding]) -> Optional[bytes]:
    """The metrics one incident's findings rest on, around their windows (PNG); None when none can be drawn."""
    kinds = list(dict.fromkeys(f.kind for f in findings))
    panels = _evidence_panels(analysis, kinds)
    if not panels:
        return None
    first, last = min(f.start for f in findings), max(f.end for f in findings)
    margin = max(dt.timedelta(seconds=60), (last - first) * 0.5)
    start = max(first - margin, analysis.overview.first or first)
    end = min(last + margin, analysis.overview.last or last)
    culprits = analysis.logs is not None and any(k in WITH_COLLSCANS for k in kinds)
    # The report prints each finding's title beside the picture.
    return _draw(panels, analysis, start, end, findings=findings, extra_collscans=culprits, title="")
