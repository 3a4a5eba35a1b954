"""The metric explorer's data: a node's series at one minimum and one maximum per pixel column.

The time axis from the first to the last sample is cut into at most COLUMNS equal columns (at
least one sampling period wide), and every series keeps its smallest and largest value in each,
so a one-second spike in a week is still drawn. Counters are shown as per-second rates over the
intervals `series` can rate (none across a gap, a restart or a reset). Values are stored as
16-bit levels between the series' own minimum and maximum (1/65534 of its range: far below a
pixel), which keeps a week of the default set a few MB.

Two sources, one shape: `derived` takes the analysis's derived series (what the detectors
reasoned on, already rates and percentages); `recorded` the FTDC metrics as mongod wrote them,
which the analysis' own pass over the files kept as delta bytes (`ftdc.kept`), each reduced by the
native core. `explorer_data` puts them on one axis with the node's incidents and checkpoints;
`explorer_page` renders it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from analysis.observe import Analysis, Evidence
from analysis.series import aggregates
from analysis.series import derived as series_module
from analysis.series.metrics import COUNTER, Resolved, candidates
from analysis.series.metrics import resolve as resolve_metrics
from analysis.series.windows import between
from ftdc import _native
from ftdc.frames import IN_PLACE, TIME_COLUMN, arrow_chunks
from ftdc.kept import Kept, Levels
from ftdc.paths import PathArg, resolve
from ftdc.reader import read_with_catalog
from ftdc.select import select_names, warn_unmatched
from ftdc.timeutil import TimeArg, time_range, to_ms, to_utc

# Pixel columns of the widest view (a panel across a 2560 px screen): one minimum and one maximum each.
COLUMNS = 2400
# Level meaning "no sample in this column"; samples take 0..EMPTY-1.
EMPTY = 0xFFFF
# Bookkeeping flags of the derived frame: what they say is drawn as the overlays and gaps.
NOT_DRAWN = ("restart", "gap", "valid")
# Panels shown when the page opens, those the node has.
OPENING = ("writes_latency_ms", "reads_latency_ms", "ops_per_s", "cache_dirty_pct", "cache_fill_pct", "write_tickets_out")
# Panels `explore --metrics` opens beside them, at most.
ASKED = 24
BUCKET = "__column"


@dataclass(frozen=True)
class Axis:
    """`columns` columns of `column_ms` each, the first starting at `first_ms` (epoch ms)."""

    first_ms: int
    column_ms: int
    columns: int

    @classmethod
    def spanning(cls, first_ms: int, last_ms: int, period_ms: int = 1000, columns: int = COLUMNS) -> Axis:
        """At most `columns` columns from `first_ms` to `last_ms`, none narrower than a sampling period."""
        width = max(period_ms, 1, math.ceil((last_ms - first_ms + 1) / columns))
        return cls(first_ms, width, max(1, math.ceil((last_ms - first_ms + 1) / width)))

    def column(self) -> pl.Expr:
        """The column each sample falls in."""
        offset = pl.col(TIME_COLUMN).dt.epoch("ms") - self.first_ms
        return (offset // self.column_ms).clip(0, self.columns - 1).cast(pl.Int32).alias(BUCKET)


@dataclass(frozen=True)
class Series:
    name: str
    source: str  # "derived" (the analysis's series) or "ftdc" (as recorded)
    unit: str  # "/s" for a counter shown as a rate
    meaning: str
    low: float  # the smallest and largest value drawn
    high: float
    levels: bytes  # little-endian uint16, minimum and maximum of each column in turn; EMPTY where no sample


@dataclass(frozen=True)
class Span:
    label: str
    start_ms: int
    end_ms: int
    severity: str = ""
    title: str = ""


@dataclass(frozen=True)
class Explorer:
    node: str
    axis: Axis
    series: tuple[Series, ...]
    incidents: tuple[Span, ...] = ()
    checkpoints: tuple[tuple[int, int], ...] = ()  # (start, end) epoch ms
    others: tuple[str, ...] = ()  # the node's metrics not embedded: `--metrics` adds them
    opening: tuple[str, ...] = field(default=())  # panels shown first
    period_ms: int = 1000  # the node's usual sampling period


def _extremes(frame: pl.DataFrame, values: list[pl.Expr], axis: Axis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The columns of `axis` that hold rows of `frame`, and the minimum and
    the maximum of each of `values` in each (rows: those columns; one column per value; NaN where it holds none,
    infinities ignored). `frame` is in time order, so each column's rows are one run: the native core reduces the
    runs of every value in parallel, each read where polars holds it, floats and integers as they are (numpy's
    `reduceat` needed every value cast to a float and copied into one matrix first)."""
    computed = frame.select(axis.column(), *[v.alias(f"v{i}") for i, v in enumerate(values)])
    cast = [name for name, dtype in computed.schema.items() if name != BUCKET and dtype not in IN_PLACE]
    computed = computed.with_columns(pl.col(cast).cast(pl.Float64))
    columns = computed[BUCKET].to_numpy()
    starts = np.flatnonzero(np.r_[True, columns[1:] != columns[:-1]]) if len(columns) else np.empty(0, dtype=np.int64)
    if not len(starts) or not values:
        return columns[starts], np.empty((len(starts), len(values))), np.empty((len(starts), len(values)))
    chunks = arrow_chunks(computed.drop(BUCKET))
    lows, highs = _native.run_extremes(
        [[chunk for chunk in chunks[f"v{i}"] if len(chunk)] for i in range(len(values))],
        computed.height,
        starts.astype("<u8").tobytes(),
    )
    shape = (len(starts), len(values))
    return columns[starts], np.frombuffer(lows, dtype="<f8").reshape(shape), np.frombuffer(highs, dtype="<f8").reshape(shape)


@dataclass(frozen=True)
class Reduced:
    """Series at one (minimum, maximum) per column of `axis`: what the explorer stores as levels and the
    report's figures draw."""

    axis: Axis
    pairs: dict[str, np.ndarray]  # series -> (axis.columns, 2), NaN where the column holds no value
    sampled: np.ndarray  # per column: whether it holds a sample at all (one without continues the step before it)

    def coarser(self, most: int, names: Iterable[str]) -> Reduced:
        """Series `names` (those held) at most `most` columns, each `k` of these merged (the extremes of extremes are exact)."""
        k = math.ceil(self.axis.columns / most)
        names = [n for n in names if n in self.pairs]
        if k <= 1:
            return Reduced(self.axis, {n: self.pairs[n] for n in names}, self.sampled)
        n = math.ceil(self.axis.columns / k)

        def grouped(values: np.ndarray, fill) -> np.ndarray:
            padded = np.full((n * k, *values.shape[1:]), fill, dtype=values.dtype)
            padded[: len(values)] = values
            return padded.reshape(n, k, *values.shape[1:])

        pairs = {
            name: np.stack([np.fmin.reduce(g[:, :, 0], axis=1), np.fmax.reduce(g[:, :, 1], axis=1)], axis=1)
            for name, g in ((name, grouped(self.pairs[name], np.nan)) for name in names)
        }
        sampled = np.asarray(grouped(self.sampled, False).any(axis=1))  # numpy types `any` as maybe one bool
        return Reduced(Axis(self.axis.first_ms, self.axis.column_ms * k, n), pairs, sampled)


def reduce(frame: pl.DataFrame, names: list[str], axis: Axis) -> Reduced:
    """`names` of `frame` (in time order) at one minimum and maximum per column of `axis`."""
    # The rows whose epoch milliseconds fall on the axis, by bisection (a filter copied every column).
    rows = between(frame, to_utc(axis.first_ms), to_utc(axis.first_ms + axis.column_ms * axis.columns), closed="left")
    at, lows, highs = _extremes(rows, [pl.col(n) for n in names], axis)
    # One array for all: a series' pairs are a view of it.
    every = np.full((len(names), axis.columns, 2), np.nan)
    every[:, at, 0], every[:, at, 1] = lows.T, highs.T
    pairs = dict(zip(names, every))
    sampled = np.zeros(axis.columns, dtype=bool)
    sampled[at] = True
    return Reduced(axis, pairs, sampled)


def _levels_of(stack: np.ndarray) -> list[Levels | None]:
    """(low, high, levels) of each series' column pairs in `stack` (series, columns, 2), or None for one that holds
    no value: by the native core, as it levels the recorded metrics it reduces (`Kept.reduce`)."""
    if not len(stack):
        return []
    return _native.levels(np.ascontiguousarray(stack, dtype="<f8").tobytes(), len(stack))


def drawn_columns(evidence: Evidence) -> list[str]:
    """The derived series that can be drawn: numbers and flags, not the bookkeeping ones."""
    return [
        c
        for c, dtype in evidence.series.schema.items()
        if c != TIME_COLUMN and c not in NOT_DRAWN and (dtype.is_numeric() or dtype == pl.Boolean)
    ]


def derived(evidence: Evidence, axis: Axis, reduced: Reduced | None = None) -> list[Series]:
    """The node's derived series (rates, latencies, percentages, thresholds in effect); `reduced`, when given,
    holds them on `axis` already (`reduce(evidence.series, drawn_columns(evidence), axis)`)."""
    names = drawn_columns(evidence)
    if not names or evidence.series.height == 0:
        return []
    reduced = reduced or reduce(evidence.series, names, axis)
    out = []
    for name, kept in zip(names, _levels_of(np.stack([reduced.pairs[name] for name in names]))):
        if kept is not None:
            unit, meaning = evidence.columns.get(name, ("", ""))
            out.append(Series(name, "derived", unit, meaning, *kept))
    return out


def identity_paths(resolved: Resolved) -> list[str]:
    """The paths that tell a restart (the process id, its uptime)."""
    return [p for name in ("pid", "uptime_ms", "uptime_s") for p in resolved.paths.get(name, ())]


def recorded(kept: Kept, book: pl.DataFrame, metrics: list[str], axis: Axis, resolved: Resolved) -> list[Series]:
    """The recorded FTDC `metrics` (numeric and boolean ones) that a read kept (`kept`), counters as per-second rates:
    each decoded alone from the bytes the read's delta walk found and reduced to its extremes per column of `axis` by
    the native core, never as a frame. `book`: the read's frame's time and bookkeeping (`interval_s`, `valid`, as
    `series.derived.prepare` gives them), one row per row of that frame."""
    kinds = {p: resolved.kinds[name] for name, paths in resolved.paths.items() for p in paths}
    held = kept.kinds()
    # As the alias table says (a counter as rates, anything else as recorded); a metric it does not know is cumulative
    # if it rose and never fell over an interval that can be rated (restarts and gaps excepted).
    shown = [(n, kinds[n] == COUNTER if n in kinds else None) for n in metrics if n in held]
    rows = book.select(axis.column(), pl.col("valid").fill_null(False), pl.col("interval_s").fill_null(float("nan")))
    out = []
    reduced = kept.reduce(shown, axis.columns, rows[BUCKET].to_numpy(), rows["valid"].to_numpy(), rows["interval_s"].to_numpy())
    for (name, _), (levels, is_rate) in zip(shown, reduced):
        if levels is not None:
            meaning = "cumulative counter, shown as a per-second rate" if is_rate else "as recorded"
            out.append(Series(name, "ftdc", "/s" if is_rate else "", meaning, *levels))
    return out


def _name_unit(part: str) -> str:
    """The unit one part of a metric's name says, or ""."""
    lower = part.lower()
    if "micros" in lower:
        return "µs"
    if "millis" in lower or lower.endswith("_ms") or part.endswith("Ms"):
        return "ms"
    if "nanos" in lower:
        return "ns"
    if "bytes" in lower:
        return "bytes"
    if "secs" in lower or "seconds" in lower or lower.endswith("_s"):
        return "s"
    return ""


def axis_unit(name: str, unit: str) -> str:
    """The unit a panel's y-axis says: the series' own, or for a recorded metric (FTDC carries none) the one its
    name says in its last two parts (`...timeAcquiringMicros.w`, `..._ms`, `...bytes...`; `opLatencies` in µs),
    else a count; a counter drawn as a rate is that unit per second."""
    if unit and unit != "/s":
        return unit
    parts = name.split(".")
    base = next(filter(None, map(_name_unit, reversed(parts[-2:]))), "")
    if not base:
        base = "µs" if "opLatencies" in parts and parts[-1] == "latency" else "count"
    return f"{base}/s" if unit == "/s" else base


def drawable(schema: dict[str, pl.DataType]) -> list[str]:
    """Metrics that can be drawn: numbers and flags (a BSON date is a time, not a level)."""
    return [n for n, dtype in schema.items() if n != TIME_COLUMN and (dtype.is_numeric() or dtype == pl.Boolean)]


def period_ms(analysis: Analysis) -> int:
    """The node's usual sampling period (the overview's most common): no column is narrower."""
    usual = next(iter(analysis.result.overview.periods_ms), None)
    return usual if usual and usual > 0 else 1000


def axis_of(analysis: Analysis) -> Axis:
    times = analysis.evidence.series[TIME_COLUMN]
    first, last = aggregates.known_time(aggregates.earliest(times)), aggregates.known_time(aggregates.latest(times))
    return Axis.spanning(int(first.timestamp() * 1000), int(last.timestamp() * 1000), period_ms(analysis))


def full_range(analysis: Analysis) -> Reduced:
    """Every drawable derived series over the node's whole range at the explorer's columns: reduced once for the
    explorer and the report's whole-range figures (`Reduced.coarser`)."""
    return reduce(analysis.evidence.series, drawn_columns(analysis.evidence), axis_of(analysis))


def _ms(t) -> int:
    return int(t.timestamp() * 1000)


def explorer_data(
    analysis: Analysis,
    node: str,
    recorded_series: Iterable[Series] = (),
    others: Iterable[str] = (),
    reduced: Reduced | None = None,
    asked: Iterable[str] = (),
) -> Explorer:
    """The explorer of one analysed node: its derived series (`reduced` when given: `full_range(analysis)`), any
    `recorded` ones (on `axis_of(analysis)`), its incidents and checkpoints; it opens with the usual panels and
    the first ASKED of `asked` that it draws."""
    axis = axis_of(analysis)
    series = derived(analysis.evidence, axis, reduced) + list(recorded_series)
    incidents = tuple(
        Span(i.id, _ms(i.start), _ms(i.end), i.severity, i.title) for i in analysis.result.incidents if i.start and i.end
    )
    checkpoints = tuple((_ms(c.start), _ms(c.end)) for c in analysis.evidence.checkpoints)
    drawn = {s.name for s in series}
    return Explorer(
        node,
        axis,
        tuple(series),
        incidents,
        checkpoints,
        tuple(n for n in others if n not in drawn),
        tuple(n for n in OPENING if n in drawn) + tuple(n for n in asked if n in drawn)[:ASKED],
        period_ms(analysis),
    )


def explore(
    analysis: Analysis, path: PathArg, node: str, patterns: list[str] | None = None, start: TimeArg = None, end: TimeArg = None
) -> Explorer:
    """The explorer of a node's FTDC at `path`, analysed as `analysis`: the derived series and every metric recorded
    (numbers and flags), opening with those `patterns` select beside the usual panels; those that hold no value
    are named. A pattern that selects nothing drawable is an `UnmatchedMetric` warning, as in `read_ftdc`."""
    files = resolve(path)
    lower, upper = (to_ms(t) for t in time_range(start, end))
    evidence = analysis.evidence
    if evidence.kept is not None and evidence.kept.covers(files, lower, upper):
        # Every metric kept by the analysis' own pass over these files: no chunk is inflated again.
        catalog, kept, book, resolved = evidence.catalog, evidence.kept, evidence.derived.analysed, evidence.resolved
    else:
        # An analysis that kept no metric, or of other files or another range: one pass of the explorer's own, every
        # metric kept and the few that tell a restart decoded for the same bookkeeping as the analysis'.
        catalog, frame, read = read_with_catalog(files, candidates(series_module.IDENTITY), lower, upper, keep=True)
        assert read is not None, "read_with_catalog(keep=True) keeps the metrics"
        resolved = resolve_metrics(catalog.schema())
        kept, book = read, series_module.prepare(frame, resolved)
    names = drawable(catalog.schema())
    warn_unmatched(patterns, names)
    series = recorded(kept, book, names, axis_of(analysis), resolved)
    return explorer_data(analysis, node, series, names, asked=select_names(patterns or [], names))
