"""The derived series as one lazy plan (issue 22): every column as its documented meaning says,
on crafted frames with restarts, gaps, counters going backwards, changes of sampling period and
thresholds changing over time; the plan gives each column what its expression gives alone; and the
columns only shown, derived later (`Derived`), are what one plan of every column gives, and are
read by no analysis."""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import analysis.findings.detectors as detectors
import ftdc
from analysis.series.derived import (
    BOOKKEEPING,
    COLUMNS,
    GAP_PERIODS,
    PERIOD_WINDOW,
    SHOWN_ONLY,
    Derived,
    columns_for,
    derive,
    increases,
    prepare,
    shown_only,
)
from analysis.series.metrics import BY_NAME, resolve
from analysis.series.thresholds import Setting, Thresholds
from analysis.settings import CACHE_PERCENTAGES
from ftdc.frames import TIME_COLUMN

ROOT = Path(__file__).resolve().parents[1]

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
COUNTERS = (
    "conn.created",
    "conn.rejected",
    "latency.writes.micros",
    "latency.writes.ops",
    "working.writes.micros",
    "opcounters.insert",
    "opcounters.query",
    "disk.io_time_ms.sda",
    "cpu.user_ms",
    "cpu.system_ms",
    "cpu.idle_ms",
)
GAUGES = ("cache.bytes", "cache.max_bytes", "conn.current")


def path(canonical: str) -> str:
    """The first FTDC path of a canonical name (a device's name stands in for `{key}`)."""
    if canonical in BY_NAME:
        return BY_NAME[canonical].paths[0]
    head, key = canonical.rsplit(".", 1)
    return BY_NAME[head + ".{key}"].paths[0].replace("{key}", key)


@st.composite
def nodes(draw):
    """Sample times (ms steps: a period of 1 s, jitter, repeats, changes of period, gaps), a pid that changes
    at restarts, counters that mostly rise but sometimes go back, and gauges."""
    n = draw(st.integers(2, 40))
    steps = draw(
        st.lists(st.sampled_from([1000, 1000, 1000, 999, 1001, 0, 10_000, 10_000, 45_000]), min_size=n - 1, max_size=n - 1)
    )
    restarts = draw(st.lists(st.booleans().map(lambda b: b and draw(st.integers(0, 5)) == 0), min_size=n, max_size=n))
    ms = [0]
    for s in steps:
        ms.append(ms[-1] + s)
    pid, pids = 7, []
    for r in restarts:
        pid += r
        pids.append(pid)
    columns = {
        TIME_COLUMN: pl.Series([T0 + dt.timedelta(milliseconds=m) for m in ms], dtype=pl.Datetime("ms", "UTC")),
        path("pid"): pids,
    }
    for name in COUNTERS:
        moves = draw(st.lists(st.integers(-30, 5000), min_size=n, max_size=n))
        value, values = 1_000_000, []
        for m in moves:
            value += m
            values.append(value)
        columns[path(name)] = values
    for name in GAUGES:
        columns[path(name)] = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n))
    return pl.DataFrame(columns)


@st.composite
def timelines(draw, times: list[dt.datetime]):
    """A threshold's settings over time: the first from the start of the data, later ones anywhere (before,
    inside and after the samples, and at a sample), values as %, as bytes (above 100) or unknown."""
    value = st.one_of(st.none(), st.floats(1, 99).map(round), st.integers(101, 50_000).map(float))
    anywhere = st.integers(-5000, int((times[-1] - times[0]).total_seconds() * 1000) + 5000).map(
        lambda ms: times[0] + dt.timedelta(milliseconds=ms)
    )
    since = sorted(draw(st.lists(st.one_of(st.sampled_from(times), anywhere), max_size=4)))
    return [Setting(draw(value), "first", None)] + [Setting(draw(value), f"since {t}", t) for t in since]


def median_of(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def valid_rows(raw: pl.DataFrame) -> list[bool]:
    """Whether the interval ending at each sample can be rated (docs/metrics.md §1): time moved on, the pid stayed,
    and the step is no gap: at most GAP_PERIODS periods, the period being the larger of the medians of the
    PERIOD_WINDOW steps before and after it (a period of 0, samples timed by their chunk, says nothing)."""
    times, pids = raw[TIME_COLUMN].to_list(), raw[path("pid")].to_list()
    steps = [None] + [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    out = []
    for i, step in enumerate(steps):
        before = median_of(steps[max(0, i - PERIOD_WINDOW) : i])
        after = median_of(steps[i + 1 : i + 1 + PERIOD_WINDOW])
        period = max((p for p in (before, after) if p is not None), default=None)
        gap = None if step is None or period is None else period > 0 and step > GAP_PERIODS * period
        if period == 0:
            gap = False
        out.append(step is not None and step > 0 and pids[i] == pids[i - 1] and gap is False)
    return out


def deltas(raw: pl.DataFrame, name: str) -> list[float | None]:
    """A counter's increase over each interval that can be rated; none where it went back."""
    values, valid = raw[path(name)].to_list(), valid_rows(raw)
    return [values[i] - values[i - 1] if valid[i] and values[i] >= values[i - 1] else None for i in range(len(values))]


def intervals(raw: pl.DataFrame) -> list[float | None]:
    times = raw[TIME_COLUMN].to_list()
    return [None] + [(b - a).total_seconds() for a, b in zip(times, times[1:])]


def series(raw: pl.DataFrame, thresholds: Thresholds) -> pl.DataFrame:
    resolved = resolve(raw.columns)
    return derive(prepare(raw, resolved), resolved, thresholds)


def close(actual: list, expected: list) -> bool:
    """Equal, floats to the last bits (polars divides by a constant through its reciprocal)."""
    return len(actual) == len(expected) and all(
        (a is None) == (e is None) and (a is None or a == pytest.approx(e, rel=1e-12, abs=1e-12))
        for a, e in zip(actual, expected)
    )


def no_thresholds() -> Thresholds:
    return Thresholds({name: [Setting(None, "none")] for name in CACHE_PERCENTAGES})


@settings(max_examples=50, deadline=None)
@given(nodes())
def test_rates_and_deltas_only_over_intervals_that_can_be_rated(raw):
    s = series(raw, no_thresholds())
    valid, interval = valid_rows(raw), intervals(raw)
    assert s["valid"].fill_null(False).to_list() == valid
    assert s["restart"].to_list()[1:] == [a != b for a, b in zip(raw[path("pid")], raw[path("pid")][1:])]
    created = deltas(raw, "conn.created")
    assert close(s["connections_created_per_s"].to_list(), [d / t if d is not None else None for d, t in zip(created, interval)])
    assert s["connections_rejected"].to_list() == deltas(raw, "conn.rejected")
    busy = deltas(raw, "disk.io_time_ms.sda")
    assert close(
        s["disk_util_pct.sda"].to_list(),
        [min(100.0, 100 * d / t / 1000) if d is not None else None for d, t in zip(busy, interval)],
    )


@settings(max_examples=50, deadline=None)
@given(nodes())
def test_latency_is_the_interval_mean_and_shares_need_a_denominator(raw):
    s = series(raw, no_thresholds())
    latency, ops, working = (deltas(raw, n) for n in ("latency.writes.micros", "latency.writes.ops", "working.writes.micros"))
    assert close(
        s["writes_latency_ms"].to_list(), [lat / o / 1000 if lat is not None and o else None for lat, o in zip(latency, ops)]
    )
    assert close(
        s["writes_waiting_pct"].to_list(),
        [100 * (1 - w / lat) if w is not None and lat else None for w, lat in zip(working, latency)],
    )
    cache, maximum = raw[path("cache.bytes")].to_list(), raw[path("cache.max_bytes")].to_list()
    assert close(s["cache_fill_pct"].to_list(), [100 * c / m if m else None for c, m in zip(cache, maximum)])
    states = [deltas(raw, f"cpu.{x}_ms") for x in ("user", "system", "idle")]
    totals = [sum(d for d in ds if d is not None) for ds in zip(*states)]
    assert close(s["cpu_user_pct"].to_list(), [100 * u / t if u is not None and t else None for u, t in zip(states[0], totals)])


@settings(max_examples=40, deadline=None)
@given(st.data(), nodes())
def test_thresholds_in_effect_at_each_sample(data, raw):
    timeline = {name: data.draw(timelines(raw[TIME_COLUMN].to_list())) for name in CACHE_PERCENTAGES}
    s = series(raw, Thresholds(timeline))
    maximum = raw[path("cache.max_bytes")].to_list()
    for name, steps in timeline.items():
        expected = []
        for t, m in zip(raw[TIME_COLUMN].to_list(), maximum):
            since = [step for step in steps if step.since is None or step.since <= t]
            value = (since[-1] if since else steps[0]).value
            value = steps[0].value if value is None else value
            # Bytes are made % of the cache's maximum (infinite when it reads 0, as polars divides).
            expected.append(None if value is None else value if value <= 100 else 100 * value / m if m else math.inf)
        assert close(s[f"{name}_pct"].to_list(), expected), name


@settings(max_examples=40, deadline=None)
@given(nodes())
def test_the_plan_gives_each_column_what_its_expression_gives_alone(raw):
    """Computed together (common subexpressions once), each column is what it is evaluated on its own."""
    resolved = resolve(raw.columns)
    prepared = prepare(raw, resolved)
    together = derive(prepared, resolved, no_thresholds())
    canonical = prepared.select(
        TIME_COLUMN, *BOOKKEEPING, *(pl.col(paths[0]).alias(name) for name, paths in resolved.paths.items())
    ).with_columns(increases(resolved, resolved.paths))  # each counter's increase, which the columns read
    columns = columns_for(resolved)
    assert together.columns == [TIME_COLUMN, *BOOKKEEPING, *(c.name for c in columns), *(f"{n}_pct" for n in CACHE_PERCENTAGES)]
    for column in columns:
        alone = canonical.select(column.build().alias(column.name)).to_series()
        assert close(together[column.name].to_list(), alone.to_list()), column.name


def later_is_at_once(prepared: pl.DataFrame, resolved, thresholds: Thresholds) -> None:
    """`Derived`: its analysed columns lack exactly the SHOWN_ONLY ones, and in full it is, to the bit and in order,
    what one plan of every column gives; derived once."""
    whole = derive(prepared, resolved, thresholds)
    later = Derived(prepared, resolved, thresholds)
    assert later.analysed.columns == [c for c in whole.columns if not shown_only(c)]
    assert later.full() is later.full()
    assert_frame_equal(later.full(), whole, check_exact=True)


@settings(max_examples=40, deadline=None)
@given(nodes())
def test_the_columns_only_shown_derived_later_are_those_of_one_plan(raw):
    resolved = resolve(raw.columns)
    assert any(shown_only(c.name) for c in columns_for(resolved))  # CPU states and a disk's requests
    later_is_at_once(prepare(raw, resolved), resolved, no_thresholds())


@pytest.mark.parametrize(
    "node",
    [
        "mongod-4.2.1/diagnostic.data",
        "mongod-7.0/diagnostic.data",
        "mongod-8.0-chunk/metric-2025-03-12_15-58-06.0_+00-00-00.bson",
    ],
)
def test_the_columns_only_shown_of_real_nodes_derived_later(ftdc_samples, node):
    directory = ftdc_samples / node
    resolved = resolve(ftdc.read_catalog(directory).schema())
    prepared = prepare(ftdc.read_ftdc(directory, resolved.wanted), resolved)
    assert any(shown_only(c.name) for c in columns_for(resolved)), node
    later_is_at_once(prepared, resolved, no_thresholds())


def test_no_analysis_reads_a_column_only_shown():
    """What `analyze` derives only when its series are shown is named nowhere the analyses run (detectors, root causes,
    incidents, advice): only where series are shown. No detector declares it among what it reads."""
    names = {c.name for c in COLUMNS} | {"cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct"}
    assert all(s in names or s.endswith(".") for s in SHOWN_ONLY)  # each a column (or a family) derive makes
    shown_where = ("analysis/outputs/", "analysis/workbench/", "analysis/series/derived.py")
    for source in sorted((ROOT / "analysis").rglob("*.py")):
        where = source.relative_to(ROOT).as_posix()
        if not where.startswith(shown_where):
            text = source.read_text()
            # A name standing alone ("mem.resident_mb" is a recorded metric's canonical name, not the column).
            assert not [s for s in SHOWN_ONLY if re.search(rf"(?<![\w.]){re.escape(s)}(?!\w)", text)], where
    for module in detectors.MODULES:
        assert not [c for c in module.DETECTOR.reads if shown_only(c) or c in SHOWN_ONLY], module.__name__
