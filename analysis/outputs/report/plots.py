"""How the report draws: panels stacked on one UTC time axis, written as SVG.

Each series is first reduced to one minimum and one maximum per pixel column (the
explorer's reduction, `explorer.column_extremes`), so a one-second spike in a week
still shows and a figure's size does not grow with the days; the band between
them is drawn with the maximum as its line. The browser lays out the text (titles,
legends, tick labels), which is what made drawing with matplotlib cost more than
the analysis. Thresholds are drawn as they were in effect at each time and
labelled in full with their source; checkpoints are shaded on every panel, with a
solid strip along its foot that a finding's shading cannot hide. Times are UTC and
say so. Every string from input (namespaces, member addresses) is XML-escaped, its
control characters shown as escapes, so a figure is well-formed XML whatever the
input held. `figures` decides what each of the report's figures shows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np
import polars as pl

from analysis.observe import Analysis
from analysis.outputs.report.explorer import Axis, Reduced, period_ms, reduce
from ftdc.frames import TIME_COLUMN

# Pixels (CSS px at the card's full width, 1080 px at a 1400 px window; the page scales the whole picture).
WIDTH = 1080
LEFT, RIGHT, TOP, BOTTOM, GAP = 90, 14, 42, 84, 46
PIXELS = WIDTH - LEFT - RIGHT  # the plot area: one column of extremes per pixel at most
PANEL = 126  # an incident's panels and its card leave the findings within three screens at 1400 px
TITLE = 26  # room a figure's own title takes above its first panel
FONT, SMALL, LARGE = 12, 11, 14
# The size every text takes at narrow widths, where the page shrinks the figure (html.CSS sets it: 15 at 800 px is 10 px
# on the screen). Each layout reserves room for it, so no text runs into another at either width.
NARROW = 15
ROW = 19  # pixels a line of text along a panel's top takes at NARROW, its descenders and halo included
SEVERITY_COLORS = {"critical": "#d62728", "warning": "#ff9f1c"}
SHADE = "#999999"
# matplotlib's default colours, in its order: series without a colour of their own take these.
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
STRIP = 0.05  # the share of a panel's height the checkpoint strip along its foot takes
SHADE_LEVELS = 16  # a checkpoint share is drawn in this many opacities: runs of one are one gradient stop
# Text over data: a white halo keeps it readable without hiding the panel behind a box.
HALO = 'stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"'
KEY = (
    "grey: checkpoints (dark strip at the foot: share of time checkpointing)",
    "tinted between coloured lines: a finding's or incident's window, hatched when critical",
)
# Member states by colour and pattern (colour is never the only carrier): primary solid green, secondary striped
# blue, any other state (recovering, down...) cross-hatched red.
STATE_COLORS = {1: "#2ca02c", 2: "#1f77b4"}
STATE_PATTERNS = {1: "", 2: "stripes", None: "cross"}
# Characters XML 1.0 cannot hold, and the C1 controls a terminal would act on: shown as escapes.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def text(value: str) -> str:
    """`value` as SVG text or attribute content: escaped, its control characters written as `\\xNN` (a tab or a
    line break as a character reference: an attribute would turn it into a space)."""
    shown = escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else "\ufffd", value), quote=True)
    return shown.replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")


@dataclass(frozen=True)
class Panel:
    title: str
    columns: Sequence[tuple[str, str, str | None]] = ()  # (series column, label, colour)
    thresholds: Sequence[tuple[str, str]] = ()  # (series column, threshold name)
    references: Sequence[tuple[float, str]] = ()  # (value, what it is): a detector's fixed bar, drawn like a threshold
    log_scale: bool = False
    runs: bool = False  # the log's COLLSCAN runs as bars instead of series
    states: bool = False  # each column a replica-set member's state, drawn as coloured bands (a state is not a quantity)
    window: tuple[dt.datetime, dt.datetime] | None = None  # the chain step it shows, marked along its top
    severity: str = "warning"


@dataclass(frozen=True)
class Span:
    """A window shaded on every panel and labelled above the first (a finding's number, an incident's id)."""

    start: dt.datetime
    end: dt.datetime
    severity: str
    label: str


@dataclass(frozen=True)
class Mark:
    """An instant drawn as a dashed line across every panel, labelled on the first (an election)."""

    at: dt.datetime
    label: str


def _ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


def pixel_columns(
    frame: pl.DataFrame,
    columns: Sequence[str],
    start: dt.datetime,
    end: dt.datetime,
    pixels: int = PIXELS,
    sampling_ms: int = 1000,
) -> Reduced:
    """`columns` of `frame` within [start, end] at one minimum and maximum per pixel column (none narrower than a sample)."""
    return reduce(frame, [c for c in columns if c in frame.columns], Axis.spanning(_ms(start), _ms(end), sampling_ms, pixels))


def _checkpoint_times(analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
    """The checkpoints' starts and ends in epoch seconds, each sorted: converted once per analysis, not per figure
    (a week holds ten thousand checkpoints; the last analysis' are kept)."""
    if _CHECKPOINTS and _CHECKPOINTS[0] is analysis.evidence.checkpoints:
        return _CHECKPOINTS[1]
    times = (
        np.sort([c.start.timestamp() for c in analysis.evidence.checkpoints]),
        np.sort([c.end.timestamp() for c in analysis.evidence.checkpoints]),
    )
    _CHECKPOINTS[:] = [analysis.evidence.checkpoints, times]
    return times


_CHECKPOINTS: list = []


def checkpoint_share(analysis: Analysis, start: dt.datetime, end: dt.datetime, pixels: int = PIXELS) -> np.ndarray:
    """The share of each pixel's time spent in checkpoints: a week holds ten thousand of them,
    so each is a fraction of a pixel; an hour shows each one whole. Covered time up to x is
    sum(x - start) over checkpoints started before x minus sum(x - end) over those ended before
    it; each pixel's share is its difference across the pixel."""
    if not analysis.evidence.checkpoints or end <= start:
        return np.zeros(pixels)
    starts, ends = _checkpoint_times(analysis)
    edges = np.linspace(start.timestamp(), end.timestamp(), pixels + 1)

    def covered(times: np.ndarray) -> np.ndarray:
        n = np.searchsorted(times, edges)
        before = np.concatenate([[0.0], np.cumsum(times)])[n]
        return n * edges - before

    share = np.diff(covered(starts) - covered(ends)) / (edges[1] - edges[0])
    return np.clip(share, 0, 1)


# --- scales -------------------------------------------------------------------------------------


def _symlog(v):
    """matplotlib's symlog with linthresh 1: linear within [-1, 1], one unit per decade beyond."""
    v = np.asarray(v, dtype=float)
    a = np.abs(v)
    return np.sign(v) * np.where(a <= 1, a, 1 + np.log10(np.maximum(a, 1)))


def _unsymlog(u: float) -> float:
    """The value `_symlog` maps to `u`."""
    return float(np.sign(u) * (10 ** (abs(u) - 1)) if abs(u) > 1 else u)


@dataclass(frozen=True)
class YScale:
    low: float
    high: float
    log: bool
    top: float  # the panel's pixel rows
    height: float

    def f(self, v):
        return _symlog(v) if self.log else np.asarray(v, dtype=float)

    def y(self, v) -> np.ndarray:
        low, high = (float(x) for x in self.f([self.low, self.high]))
        return self.top + self.height * (1 - (self.f(v) - low) / (high - low))

    def ticks(self) -> list[float]:
        """Round values, as many as the panel's height holds a label apart at NARROW (a short panel takes four)."""
        most = max(2, min(5, int(self.height // (ROW + 2)) - 1))  # steps between the first and last tick
        if self.log:
            out = [0.0] + [10.0**k for k in range(0, int(math.floor(math.log10(max(self.high, 1)))) + 1)]
            while len(out) > most + 1:
                out = out[::2]
            return out
        span = self.high - self.low
        step = 10 ** math.floor(math.log10(span / 4))
        step *= next(m for m in (1, 2, 2.5, 5, 10, 20) if span / (step * m) <= most)
        first = math.ceil(self.low / step)
        return [k * step for k in range(first, int(math.floor(self.high / step)) + 1)]


def _number(v: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(v) >= size:
            return f"{v / size:g}{suffix}"
    return f"{v:g}"


def _y_range(
    values: list[np.ndarray],
    thresholds: list[np.ndarray],
    log: bool,
    strip: bool,
    note: tuple[np.ndarray, float] | None = None,
) -> tuple[float, float]:
    """The panel's range: its data from zero (or below) with a margin above, room above the highest
    threshold for its label, (when checkpoints are shaded) room below for their strip, and with a `note`
    (the pixel columns its text covers, the share of the panel's height it takes from the top) room above
    the highest value drawn in those columns: a line never runs through the note."""
    f, inverse = (_symlog, _unsymlog) if log else ((lambda x: x), float)
    finite = [v[np.isfinite(v)] for v in values]
    finite = [v for v in finite if v.size]
    low = min([0.0] + [float(v.min()) for v in finite])
    high = max([low] + [float(v.max()) for v in finite])
    if log:
        high = max(10.0, high * 1.5)
    else:
        high = high + 0.05 * (high - low) if high > low else low + 1
    for t in thresholds:
        t = t[np.isfinite(t)]
        if t.size:
            high = max(high, float(t.max()) * 1.18)
    if note is not None:
        covered, share = note
        under = [u[np.isfinite(u)] for u in (v[covered] for v in values + thresholds)]
        under = [u for u in under if u.size]
        if under:
            # The share of the final span (the strip below widens it by 1 / (1 - STRIP)) above the top value.
            k = share / (1 - STRIP) if strip else share
            top = float(f(max(float(u.max()) for u in under)))
            high = max(high, inverse((top - k * float(f(low))) / (1 - k)))
    if strip:
        below = float(f(low)) - (float(f(high)) - float(f(low))) * STRIP / (1 - STRIP)
        low = inverse(below)
    return low, high


# --- the time axis ------------------------------------------------------------------------------

_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


def time_ticks(start: dt.datetime, end: dt.datetime, most: int = 9) -> tuple[list[dt.datetime], str]:
    """Ticks at round UTC times, at most `most`, and the strftime format their spacing needs."""
    seconds = max((end - start).total_seconds(), 1)
    step = next((s for s in _STEPS if seconds / s <= most), _STEPS[-1] * math.ceil(seconds / most / _STEPS[-1]))
    first = math.ceil(start.timestamp() / step) * step
    ticks = [dt.datetime.fromtimestamp(t, dt.timezone.utc) for t in range(int(first), int(end.timestamp()) + 1, step)]
    return ticks, "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%m-%d"


# --- drawing ------------------------------------------------------------------------------------


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


class _Canvas:
    """The figure's time scale and its SVG elements, in drawing order."""

    def __init__(self, start: dt.datetime, end: dt.datetime, ident: str = "f"):
        self.start_ms, self.end_ms = _ms(start), _ms(end)
        self.ident = ident  # the figure's own prefix for its gradients' and patterns' ids (a page holds many figures)
        self.parts: list[str] = []

    def x(self, t) -> float:
        return float(self.xs(_ms(t) if isinstance(t, dt.datetime) else t))

    def xs(self, ms):
        """Epoch milliseconds (one, or an array) as pixel columns, within the plot area."""
        return LEFT + PIXELS * np.clip((ms - self.start_ms) / max(self.end_ms - self.start_ms, 1), 0.0, 1.0)

    def add(self, element: str) -> None:
        self.parts.append(element)

    def label(
        self,
        x: float,
        y: float,
        value: str,
        size: int = FONT,
        anchor: str = "start",
        color: str = "#000",
        halo: bool = True,
        cls: str = "",
    ) -> None:
        self.add(
            f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}" fill="{color}"'
            f"{' ' + HALO if halo else ''}{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>{text(value)}</text>"
        )


def _steps(xs: np.ndarray, ys: np.ndarray) -> str:
    """A step line through (xs[i], ys[i]) held to xs[i + 1] (`xs` has one more edge than `ys`): x to a tenth of a
    pixel, y to a pixel (the raster's own precision), in relative moves between the rounded points (no drift);
    a level held over several columns is one segment."""
    x, y = np.round(np.asarray(xs, dtype=float) * 10).astype(np.int64), np.round(ys).astype(np.int64)
    change = np.flatnonzero(np.diff(y)) + 1
    across = np.diff(np.r_[x[0], x[change], x[-1]]).tolist()  # before each change of level, and after the last
    up = np.diff(y[np.r_[0, change]]).tolist()
    return f"M{x[0] / 10:g} {y[0]}" + "".join([f"h{a / 10:g}v{b}" for a, b in zip(across, up)]) + f"h{across[-1] / 10:g}"


def _runs(finite: np.ndarray) -> list[tuple[int, int]]:
    """[a, b) of each run of True."""
    edges = np.flatnonzero(np.diff(np.r_[0, finite.astype(np.int8), 0]))
    return list(zip(edges[::2], edges[1::2]))


def _held(pairs: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    """A column without a sample next to one with (columns are a sampling period wide at least, so one falls
    between two samples now and then) continues the step before it; two or more in a row are a gap in the
    data and stay a break, as does a sampled column without a value (a rate across a restart)."""
    out = pairs.copy()
    for i in np.flatnonzero(~sampled):
        if i and sampled[i - 1]:
            out[i] = out[i - 1, 1]
    return out


def _band(canvas: _Canvas, edges: np.ndarray, pairs: np.ndarray, scale: YScale, color: str, column: str, label: str) -> None:
    lo, hi = scale.y(pairs[:, 0]), scale.y(pairs[:, 1])
    paths, lines = [], []
    for a, b in _runs(np.isfinite(pairs[:, 1])):
        top = _steps(edges[a : b + 1], hi[a:b])
        back = _steps(edges[a : b + 1][::-1], lo[a:b][::-1])
        paths.append(top + "L" + back[1:] + "Z")
        lines.append(top)
    if paths:
        canvas.add(
            f'<g class="series" data-column="{text(column)}" data-label="{text(label)}"><path d="{"".join(paths)}" fill="{color}" fill-opacity="0.35"/>'
            f'<path d="{"".join(lines)}" fill="none" stroke="{color}" stroke-width="1.1"/></g>'
        )


def _gradient(ident: str, share: np.ndarray, color: str, opacity: float) -> str:
    """A horizontal gradient across the plot area whose opacity is `opacity` times the share, in SHADE_LEVELS steps."""
    levels = np.rint(share * SHADE_LEVELS) / SHADE_LEVELS
    stops = []
    change = np.flatnonzero(np.diff(levels)) + 1
    bounds = np.r_[0, change, len(levels)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        o = f'stop-color="{color}" stop-opacity="{levels[a] * opacity:.3g}"'
        stops.append(f'<stop offset="{a / len(levels):.5g}" {o}/><stop offset="{b / len(levels):.5g}" {o}/>')
    return (
        f'<linearGradient id="{ident}" gradientUnits="userSpaceOnUse" x1="{LEFT}" x2="{LEFT + PIXELS}" y1="0" y2="0">'
        f"{''.join(stops)}</linearGradient>"
    )


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


def _joined(labels: Sequence[tuple[float, str]]) -> list[tuple[float, str]]:
    """Labels along one line, each (its left end, its text): one that would touch the one before it joins it ("F1, F2")
    instead of being printed over it, and the last ends within the plot area. A group too long for the plot area is
    said by its first and last label and its count ("F3 … F40, 12 windows")."""
    end = LEFT + PIXELS - 4
    out: list[tuple[float, list[str]]] = []

    def said(parts: list[str]) -> str:
        # Past 20 labels (three characters and a comma each at least) a group is too long whatever they say: not
        # joined, which would make a week's thousand labels cost a million joins.
        whole = ", ".join(parts) if len(parts) <= 20 else ""
        return whole if whole and _width(whole) < PIXELS / 2 else f"{parts[0]} … {parts[-1]}, {len(parts)} windows"

    for x, label in sorted(labels):
        parts = [label]
        x = min(x, end - _width(label))
        while out and x < out[-1][0] + _width(said(out[-1][1])) + 8:
            before, previous = out.pop()
            parts = previous + parts
            x = max(LEFT + 4, min(before, end - _width(said(parts))))
        out.append((x, parts))
    return [(x, said(parts)) for x, parts in out]


def _rows(extents: Sequence[tuple[float, float]]) -> list[int]:
    """The line along a panel's top each (left, right) extent goes on, in order: the first line on which it keeps
    8 pixels from every extent placed before it."""
    placed: list[list[tuple[float, float]]] = []
    out = []
    for a, b in extents:
        row = next((n for n, line in enumerate(placed) if all(b + 8 <= c or d + 8 <= a for c, d in line)), len(placed))
        if row == len(placed):
            placed.append([])
        placed[row].append((a, b))
        out.append(row)
    return out


def _telling(reduced: Reduced, columns: list[tuple[str, str, str | None]]) -> tuple[list, list[str], list[str]]:
    """The series worth a line; the names of those at zero throughout the range (six queues of an idle pool are six flat
    lines on the axis: named in the panel instead); the names of those the node did not record over it (no value at
    all: said so, never drawn as a flat zero under a legend, which reads as an idle disk)."""

    def values(column: str) -> np.ndarray:
        pairs = reduced.pairs.get(column)
        return np.empty(0) if pairs is None else pairs[~np.isnan(pairs)]

    unrecorded = [c for c in columns if not values(c[0]).size]
    zero = [c for c in columns if c not in unrecorded and not values(c[0]).any()]
    drawn = [c for c in columns if c not in unrecorded and c not in zero]
    return drawn, [name for _, name, _ in zero], [name for _, name, _ in unrecorded]


def _width(value: str, size: int = FONT) -> float:
    """A generous estimate of `value`'s width in a sans-serif font at the larger of `size` and NARROW: enough to keep
    two texts apart at any width of the page."""
    return 0.6 * max(size, NARROW) * len(value)


def _legend(canvas: _Canvas, top: float, drawn: list[tuple[str, str, str]], title_width: float) -> None:
    """Above the panel's right end, beside its title (above it when both do not fit): never over the data."""
    entries = "".join(
        f'<tspan fill="{color}" font-weight="bold">━━</tspan><tspan fill="#000"> {text(name)}   </tspan>'
        for _, name, color in drawn
    )
    width = sum(_width(f"━━ {name}   ", FONT) for _, name, _ in drawn)
    y = top - 5 if title_width + width + 20 < PIXELS else top - 24
    canvas.add(
        f'<text class="legend" x="{LEFT + PIXELS}" y="{y}" font-size="{FONT}" text-anchor="end" xml:space="preserve">{entries}</text>'
    )


SWATCH = 24  # pixels of a threshold's dashed line drawn before its label


def _thresholds(
    canvas: _Canvas, analysis: Analysis, reduced: Reduced, edges: np.ndarray, names: Sequence[tuple[str, str]], scale: YScale
) -> None:
    """Each threshold as the step line it was (its label, in full with its value and source, goes along the panel's
    top: `_threshold_labels`)."""
    for column, _ in names:
        pairs = reduced.pairs.get(column)
        if pairs is None or not np.isfinite(pairs[:, 1]).any():
            continue
        ys = scale.y(pairs[:, 1])
        path = "".join(_steps(edges[a : b + 1], ys[a:b]) for a, b in _runs(np.isfinite(pairs[:, 1])))
        canvas.add(f'<path d="{path}" fill="none" stroke="#000" stroke-width="1.1" stroke-dasharray="1.5 2"/>')


def _threshold_labels(analysis: Analysis, reduced: Reduced, names: Sequence[tuple[str, str]]) -> list[str]:
    """Each drawn threshold's label: its name, its last value and where that came from."""
    out = []
    for column, name in names:
        pairs = reduced.pairs.get(column)
        if pairs is not None and np.isfinite(pairs[:, 1]).any():
            last = float(pairs[np.isfinite(pairs[:, 1]), 1][-1])
            out.append(f"{name} {last:g} % ({analysis.result.thresholds.source(name)})")
    return out


def _bars(canvas: _Canvas, rows: list[list[tuple[float, float, str]]], scale: YScale, height: float) -> None:
    """Bars per row, (x0, x1, colour) each, those touching in one colour merged: a pixel holds one bar, not thousands."""
    for y, bars in enumerate(rows):
        merged: list[list] = []
        for x0, x1, color in sorted(bars):
            if merged and merged[-1][2] == color and x0 <= merged[-1][1] + 0.5:
                merged[-1][1] = max(merged[-1][1], x1)
            else:
                merged.append([x0, x1, color])
        middle = float(scale.y(y))
        canvas.add(
            "".join(
                f'<rect x="{_f(a)}" y="{_f(middle - height / 2)}" width="{_f(b - a)}" height="{_f(height)}" fill="{c}"/>'
                for a, b, c in merged
            )
        )


def _row_names(canvas: _Canvas, names: list[str], scale: YScale) -> None:
    """Each bar row's name inside the panel above its row (the left margin cannot hold an address)."""
    for y, name in enumerate(names):
        canvas.label(LEFT + 4, float(scale.y(y + 0.22)), name, cls="row")


def _collscans(canvas: _Canvas, slow_ops: pl.DataFrame, start: dt.datetime, end: dt.datetime, top: float, height: float) -> None:
    """COLLSCAN operations from the log as bars over [start, end] of each run, at least two pixels wide."""
    scans = slow_ops.filter(
        pl.col("plan_kind") == "COLLSCAN",
        pl.col("started") <= end,
        pl.col("ts") >= start,
        ~pl.col("write_statement").fill_null(False),
    ).sort("started")
    if scans.is_empty():
        canvas.label(LEFT + PIXELS / 2, top + height / 2 + 4, "no COLLSCAN in the log", anchor="middle", color="#666", halo=False)
        return
    names = list(dict.fromkeys(scans["ns"].fill_null("?").to_list()))
    scale = YScale(-0.6, len(names) - 0.2, False, top, height)
    rows: list[list] = [[] for _ in names]
    for began, ended, ns in scans.select("started", "ts", "ns").iter_rows():
        x0 = canvas.x(began)
        rows[names.index(ns or "?")].append((x0, max(canvas.x(ended), x0 + 2), "#e06666"))
    _bars(canvas, rows, scale, 7.5)
    _row_names(canvas, names, scale)


def _states(
    canvas: _Canvas,
    analysis: Analysis,
    columns: list[str],
    names: list[str],
    start: dt.datetime,
    end: dt.datetime,
    top: float,
    height: float,
) -> None:
    """Each member's state as runs of one colour over [start, end] (a state holds for minutes; a bar per run, not per sample)."""
    series = analysis.evidence.series.filter(pl.col(TIME_COLUMN).is_between(start, end))
    scale = YScale(-0.6, len(names) - 0.2, False, top, height)
    rows = []
    for column in columns:
        runs = (
            series.select(TIME_COLUMN, state=pl.col(column))
            .with_columns(run=(pl.col("state") != pl.col("state").shift(1)).fill_null(True).cum_sum())
            .group_by("run", maintain_order=True)
            .agg(pl.col(TIME_COLUMN).first().alias("from"), pl.col(TIME_COLUMN).last().alias("to"), pl.col("state").first())
        )
        rows.append(
            [
                (canvas.x(a), max(canvas.x(b), canvas.x(a) + 1), _state_fill(canvas, int(s)))
                for a, b, s in runs.select("from", "to", "state").iter_rows()
                if s is not None
            ]
        )
    _bars(canvas, rows, scale, 10)
    _row_names(canvas, names, scale)


def _open(low: float, high: float, holes: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The stretches of [low, high] outside every hole: where a grid line is drawn (never through a text)."""
    out, at = [], low
    for a, b in sorted(holes):
        if a > at:
            out.append((at, min(a, high)))
        at = max(at, b)
    if at < high:
        out.append((at, high))
    return [(a, b) for a, b in out if b > a]


def _patterns(ident: str) -> str:
    """The figure's patterns: a secondary's stripes, any other state's cross-hatching, a critical window's hatching."""

    def pattern(name: str, base: str, lines: str) -> str:
        return (
            f'<pattern id="{ident}-{name}" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">'
            f"{base}{lines}</pattern>"
        )

    return (
        pattern(
            "stripes",
            f'<rect width="6" height="6" fill="{STATE_COLORS[2]}"/>',
            '<path d="M0 0V6" stroke="#fff" stroke-width="2"/>',
        )
        + pattern(
            "cross", '<rect width="6" height="6" fill="#d62728"/>', '<path d="M0 0V6M0 0H6" stroke="#fff" stroke-width="1.5"/>'
        )
        + pattern(
            "critical", "", f'<path d="M0 0V6" stroke="{SEVERITY_COLORS["critical"]}" stroke-width="1.2" stroke-opacity="0.45"/>'
        )
    )


def _state_fill(canvas: _Canvas, state: int) -> str:
    pattern = STATE_PATTERNS.get(state, STATE_PATTERNS[None])
    return f"url(#{canvas.ident}-{pattern})" if pattern else STATE_COLORS[state]


def figure(
    panels: list[Panel],
    analysis: Analysis,
    start: dt.datetime,
    end: dt.datetime,
    spans: list[Span],
    title: str = "",
    panel_px: int = PANEL,
    marks: Sequence[Mark] = (),
    series: Reduced | None = None,
) -> str:
    """`panels` stacked on one UTC time axis over [start, end], each `panel_px` tall, `spans` shaded and labelled,
    `marks` drawn as dashed lines: the figure as an SVG document. `series`: the node's whole range already reduced
    (`explorer.full_range`), for a figure of the whole range.

    The texts along a panel's top (the span and mark labels on the first, a note naming the series at zero
    throughout or not recorded, each threshold's label) go on lines of their own, each on the first line where it
    touches no other; the panel's scale keeps every line below them."""
    rows = max(len(panels), 1)
    first_top = TOP + (TITLE if title else 0)
    height = first_top + BOTTOM + rows * panel_px + (rows - 1) * GAP
    columns = sorted({c for p in panels for c, _, _ in p.columns if not p.states} | {c for p in panels for c, _ in p.thresholds})
    reduced = (
        series.coarser(PIXELS, columns)
        if series is not None
        else pixel_columns(analysis.evidence.series, columns, start, end, sampling_ms=period_ms(analysis))
    )
    axis = reduced.axis
    share = checkpoint_share(analysis, start, end)
    spans = [s for s in spans if s.end >= start and s.start <= end]
    ticks, fmt = time_ticks(start, end)
    ident = (
        "f"
        + hashlib.sha1(f"{title}|{start}|{end}|{[p.title for p in panels]}|{spans}".encode() + share.tobytes()).hexdigest()[:10]
    )
    canvas = _Canvas(start, end, ident)
    edges = canvas.xs(axis.first_ms + axis.column_ms * np.arange(axis.columns + 1))
    shaded = bool(share.any())
    gradients = (
        f"{_gradient(ident + 's', share, '#8c8c8c', 0.3)}{_gradient(ident + 'k', share, '#595959', 1.0)}" if shaded else ""
    )
    canvas.add(f"<defs>{gradients}{_patterns(ident)}</defs>")
    if title:
        canvas.label(8, 20, title, size=LARGE, halo=False, cls="figure-title")
    tops = [first_top + n * (panel_px + GAP) for n in range(rows)]
    # The first panel's top holds the span labels, then the marks' (left end, text, class, colour).
    first_line = [(x, label, "span-label", "#a00") for x, label in _joined([(canvas.x(s.start) + 3, s.label) for s in spans])]
    first_line += [(canvas.x(m.at) + 4, m.label, "mark-label", "#000") for m in marks]
    for panel, top in zip(panels, tops):
        canvas.add(f'<g class="panel" data-title="{text(panel.title)}">')
        for first, last, severity in _union(spans):  # tinted beneath the checkpoints' grey; hatched when critical
            x0, x1 = canvas.x(first), canvas.x(last)
            box = f'x="{_f(x0)}" y="{top}" width="{_f(max(x1 - x0, 0.5))}" height="{panel_px}"'
            canvas.add(f'<rect {box} fill="{SEVERITY_COLORS.get(severity, SHADE)}" fill-opacity="0.12"/>')
            if severity == "critical":
                canvas.add(f'<rect class="critical-window" {box} fill="url(#{ident}-critical)"/>')
        if shaded:
            canvas.add(
                f'<rect x="{LEFT}" y="{top}" width="{PIXELS}" height="{panel_px}" fill="url(#{ident}s)"/>'
                f'<rect class="checkpoint-strip" x="{LEFT}" y="{_f(top + panel_px * (1 - STRIP))}" width="{PIXELS}" '
                f'height="{_f(panel_px * STRIP)}" fill="url(#{ident}k)"/>'
            )
        drawn, zero, unrecorded = _telling(reduced, [] if panel.states or panel.runs else list(panel.columns))
        drawn = [(c, name, color or CYCLE[i % len(CYCLE)]) for i, (c, name, color) in enumerate(drawn)]
        thresholds = [reduced.pairs[c][:, 1] for c, _ in panel.thresholds if c in reduced.pairs]
        thresholds += [np.full(len(edges) - 1, value, dtype=float) for value, _ in panel.references]
        note = "; ".join(
            ([f"not recorded: {', '.join(unrecorded)}"] if unrecorded else [])
            + ([f"zero throughout: {', '.join(zero)}"] if zero else [])
        )
        band = list(first_line) if top == tops[0] else []
        if note:
            band.append((LEFT + 4, note, "zero", "#555"))
        for said in _threshold_labels(analysis, reduced, panel.thresholds) + [said for _, said in panel.references]:
            band.append((LEFT + PIXELS - 4 - _width(said), said, "threshold", "#000"))
        lines = _rows([(x - (SWATCH if cls == "threshold" else 0), x + _width(said)) for x, said, cls, _ in band])
        covered = np.zeros(len(edges) - 1, dtype=bool)
        for x, said, _, _ in band:
            covered |= (edges[1:] >= x - SWATCH) & (edges[:-1] <= x + _width(said))
        reserved = (max(lines) + 1) * ROW + 2 if band else 0
        # Each text's box (left, top, right, bottom), at NARROW: the grid's lines stop short of it.
        boxes = [
            (
                x - (SWATCH if cls == "threshold" else 0) - 2,
                top + 14 + line * ROW - 15,
                x + _width(said) + 2,
                top + 19 + line * ROW,
            )
            for (x, said, cls, _), line in zip(band, lines)
        ]
        grid = "".join(
            f"M{_f(gx)} {_f(a)}V{_f(b)}"
            for gx in (canvas.x(t) for t in ticks)
            for a, b in _open(top, top + panel_px, [(y0, y1) for x0, y0, x1, y1 in boxes if x0 <= gx <= x1])
        )
        canvas.add(f'<path d="{grid}" stroke="#b0b0b0" stroke-width="0.5"/>')
        scale = YScale(
            *_y_range(
                [_held(reduced.pairs[c], reduced.sampled) for c, _, _ in drawn],
                thresholds,
                panel.log_scale,
                shaded,
                (covered, reserved / panel_px) if band else None,
            ),
            panel.log_scale,
            top,
            panel_px,
        )
        if drawn:
            ticks_y = scale.ticks()
            canvas.add(
                '<path d="'
                + "".join(
                    f"M{_f(a)} {_f(gy)}H{_f(b)}"
                    for gy in (float(scale.y(v)) for v in ticks_y)
                    for a, b in _open(LEFT, LEFT + PIXELS, [(x0, x1) for x0, y0, x1, y1 in boxes if y0 <= gy <= y1])
                )
                + '" stroke="#d8d8d8" stroke-width="0.5"/>'
            )
            for v in ticks_y:
                canvas.label(LEFT - 5, float(scale.y(v)) + 4, _number(v), anchor="end", halo=False, cls="ytick")
        for first, last, severity in _union(spans):  # edged in its severity's colour: told apart from the checkpoints
            color = SEVERITY_COLORS.get(severity, SHADE)
            edges_d = "".join(
                f"M{_f(ex)} {_f(a)}V{_f(b)}"
                for ex in (canvas.x(first), canvas.x(last))
                for a, b in _open(top, top + panel_px, [(y0, y1) for x0, y0, x1, y1 in boxes if x0 <= ex <= x1])
            )
            canvas.add(f'<path class="window-edge" d="{edges_d}" stroke="{color}" stroke-width="1.1"/>')
        if panel.runs and analysis.evidence.logs is not None:  # a panel of runs is made only with a log
            _collscans(canvas, analysis.evidence.logs.slow_ops, start, end, top, panel_px)
        if panel.states:
            _states(
                canvas,
                analysis,
                [c for c, _, _ in panel.columns],
                [name for _, name, _ in panel.columns],
                start,
                end,
                top,
                panel_px,
            )
        for column, name, color in drawn:
            _band(canvas, edges, _held(reduced.pairs[column], reduced.sampled), scale, color, column, name)
        _thresholds(canvas, analysis, reduced, edges, panel.thresholds, scale)
        for value, _ in panel.references:
            at = _f(float(scale.y(value)))
            canvas.add(
                f'<path d="M{LEFT} {at}H{LEFT + PIXELS}" fill="none" stroke="#000" stroke-width="1.1" stroke-dasharray="1.5 2"/>'
            )
        if panel.window is not None:
            x0, x1 = canvas.x(panel.window[0]), canvas.x(panel.window[1])
            canvas.add(
                f'<rect class="step-window" x="{_f(x0)}" y="{top}" width="{_f(max(x1 - x0, 1))}" height="{_f(panel_px * 0.03)}" '
                f'fill="{SEVERITY_COLORS.get(panel.severity, SHADE)}" fill-opacity="0.9"/>'
            )
        for (x, said, cls, color), line in zip(band, lines):
            y = top + 14 + line * ROW
            if cls == "threshold":
                canvas.add(
                    f'<path d="M{_f(x - SWATCH)} {y - 4}h{SWATCH - 4}" stroke="#000" stroke-width="1.1" stroke-dasharray="1.5 2"/>'
                )
            canvas.label(x, y, said, color=color, cls=cls)
        canvas.label(LEFT, top - 5, panel.title, size=LARGE, halo=False, cls="title")
        if drawn:
            _legend(canvas, top, drawn, _width(panel.title, LARGE))
        canvas.add(
            f'<rect x="{LEFT}" y="{top}" width="{PIXELS}" height="{panel_px}" fill="none" stroke="#000" stroke-width="0.8"/></g>'
        )
    for mark in marks:
        at = _f(canvas.x(mark.at))
        canvas.add(
            f'<path class="mark" data-at="{mark.at.isoformat()}" d="'
            + "".join(f"M{at} {top}v{panel_px}" for top in tops)
            + '" stroke="#000" stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
    bottom = tops[-1] + panel_px
    for t in ticks:
        said = t.strftime(fmt)
        half = _width(said) / 2
        canvas.add(f'<path d="M{_f(canvas.x(t))} {bottom}v4" stroke="#000" stroke-width="0.8"/>')
        # Centred under its tick, moved in just enough that a tick near an edge keeps its label whole ("11:0(" was cut).
        canvas.label(
            min(max(canvas.x(t), half + 2), WIDTH - half - 2), bottom + 18, said, anchor="middle", halo=False, cls="xtick"
        )
    dates = sorted({t.date() for t in ticks} | {start.astimezone(dt.timezone.utc).date()})
    canvas.label(
        LEFT,
        bottom + 38,
        f"time (UTC) · {dates[0]:%Y-%m-%d}" + (f" – {dates[-1]:%Y-%m-%d}" if len(dates) > 1 else ""),
        halo=False,
        cls="xlabel",
    )
    for n, said in enumerate(KEY, 1):  # below the axis' label, a line each
        canvas.label(LEFT, bottom + 38 + n * ROW, said, size=SMALL, color="#444", halo=False, cls="key")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        f'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" data-start="{start.isoformat()}" data-end="{end.isoformat()}">'
        f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>{"".join(canvas.parts)}</svg>'
    )
