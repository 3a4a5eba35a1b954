"""The metric explorer's data and page (issue 20 §4): extremes per pixel column, counters as rates,
the same result whatever the streaming windows, input strings that cannot leave their JSON, the CLI.
The browser half (search, add, zoom, no request, both widths) is tests/test_explorer_browser.py."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_damage import flip_reference_date

import analysis
from analysis.outputs.report import explorer as ex
from analysis.outputs.report import explorer_page
from analysis.series import derived as series_module
from analysis.series.metrics import COUNTER
from analysis.series.metrics import resolve as resolve_metrics
from ftdc import FTDCWarning, _native
from ftdc import read_ftdc as ftdc_read
from ftdc.catalog import read_catalog
from ftdc.writer import FTDCWriter

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples" / "diagnostic.data"
START = dt.datetime(2024, 5, 14, 9, 0, tzinfo=dt.timezone.utc)
CRAFTED = '</script><script>alert("name")</script><!--'


def decoded(series: ex.Series) -> tuple[np.ndarray, np.ndarray]:
    """(minima, maxima) per column, NaN where no sample: what explorer.js draws."""
    q = np.frombuffer(series.levels, dtype="<u2").reshape(-1, 2).astype(float)
    values = series.low + q * ((series.high - series.low) / (ex.EMPTY - 1))
    values[q == ex.EMPTY] = np.nan
    return values[:, 0], values[:, 1]


def frame_of(values: np.ndarray, period_s: int = 1) -> SimpleNamespace:
    """What `derived` reads of the evidence: a series frame and its columns' descriptions."""
    times = pl.datetime_range(
        START, START + dt.timedelta(seconds=period_s * (len(values) - 1)), f"{period_s}s", eager=True, time_zone="UTC"
    )
    return SimpleNamespace(
        series=pl.DataFrame({"start": times.dt.cast_time_unit("ms"), "level": values}), columns={"level": ("%", "a level")}
    )


def test_a_one_second_spike_in_a_week_is_drawn():
    values = np.full(7 * 86_400, 10.0)
    values[123_457] = 97.5
    node = frame_of(values)
    axis = ex.Axis.spanning(int(START.timestamp() * 1000), int(START.timestamp() * 1000) + 1000 * (len(values) - 1))
    assert axis.columns <= ex.COLUMNS and axis.column_ms == 252_000
    (series,) = ex.derived(node, axis)
    low, high = decoded(series)
    assert np.nanmax(high) == 97.5 and int(np.nanargmax(high)) == 123_457 // 252
    assert np.nanmin(low) == 10.0 and np.count_nonzero(high > 10) == 1


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.floats(-1e12, 1e12), st.sampled_from([math.inf, -math.inf])), min_size=1, max_size=3000),
    st.integers(1, 30),
)
def test_each_column_keeps_its_minimum_and_maximum(values, period_s):
    # Infinities (a ratio over 0) are left out: a column's extremes are its finite values'.
    node = frame_of(np.array([np.nan if v is None else v for v in values]), period_s)
    first = int(START.timestamp() * 1000)
    axis = ex.Axis.spanning(first, first + 1000 * period_s * (len(values) - 1), 1000 * period_s)
    found = ex.derived(node, axis)
    values = [v if v is not None and math.isfinite(v) else None for v in values]
    present = [v for v in values if v is not None]
    if not present:
        assert found == []
        return
    (series,) = found
    low, high = decoded(series)
    column = (np.arange(len(values)) * 1000 * period_s) // axis.column_ms
    tolerance = (series.high - series.low) / (ex.EMPTY - 1) / 2 + 1e-9 * max(1.0, abs(series.high), abs(series.low))
    for c in range(axis.columns):
        inside = [v for v, k in zip(values, column) if k == c and v is not None]
        if inside:
            assert abs(low[c] - min(inside)) <= tolerance and abs(high[c] - max(inside)) <= tolerance
        else:
            assert np.isnan(low[c]) and np.isnan(high[c])
    assert series.low == min(present) and series.high == max(present)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.0])),
        min_size=1,
        max_size=400,
    ),
    st.integers(1, 40),
    st.integers(1, 4),
)
def test_the_native_runs_give_what_polars_gives(values, rows_per_column, chunks):
    # Nulls, NaN and infinities left out, a frame of several chunks (offsets into the arrays and their validity
    # bitmaps), an integer and a flag column cast to Float64 on the way: each run's extremes are the
    # group's finite minimum and maximum as polars takes them.
    n = len(values)
    first = int(START.timestamp() * 1000)
    level = pl.Series("level", values, dtype=pl.Float64, strict=False)
    frame = pl.DataFrame(
        {
            "start": pl.Series([first + 1000 * i for i in range(n)]).cast(pl.Datetime("ms", "UTC")),
            "level": level,
            "count": pl.Series([None if v is None or not math.isfinite(v) else int(v) % 1000 for v in values], dtype=pl.Int64),
            "flag": pl.Series([None if v is None else v > 0 for v in values], dtype=pl.Boolean),
        }
    )
    cut = [frame[i * n // chunks : (i + 1) * n // chunks] for i in range(chunks)]
    frame = pl.concat(cut, rechunk=False)
    axis = ex.Axis(first, 1000 * rows_per_column, math.ceil(n / rows_per_column))
    names = ["level", "count", "flag"]
    at, lows, highs = ex._extremes(frame, [pl.col(c) for c in names], axis)
    finite = [pl.when(pl.col(c).cast(pl.Float64).is_finite()).then(pl.col(c).cast(pl.Float64)).alias(c) for c in names]
    want = (
        frame.select(axis.column(), *finite)
        .group_by(ex.BUCKET, maintain_order=True)
        .agg(*(pl.col(c).min().alias(f"lo{c}") for c in names), *(pl.col(c).max().alias(f"hi{c}") for c in names))
    )
    np.testing.assert_array_equal(at, want[ex.BUCKET].to_numpy())
    for i, c in enumerate(names):
        np.testing.assert_array_equal(lows[:, i], want[f"lo{c}"].to_numpy().astype(float))
        np.testing.assert_array_equal(highs[:, i], want[f"hi{c}"].to_numpy().astype(float))


def write_node(directory: Path, seconds: int = 600, restart_at: int | None = None) -> Path:
    """A node with a counter the alias table does not know, a gauge, a flag and a crafted name."""
    with FTDCWriter(directory, samples_per_chunk=50) as writer:
        count = 0
        for i in range(seconds):
            restarted = restart_at is not None and i >= restart_at
            count = (i - restart_at) * 5 if restarted else count + 5
            writer.add_sample(
                {
                    "start": START + dt.timedelta(seconds=i),
                    "serverStatus": {
                        "pid": 2 if restarted else 1,
                        "uptime": i - restart_at if restarted else 1000 + i,
                        "made up": {"operations": count, "level": (i * 7) % 13, "busy": i % 2 == 0},
                        CRAFTED: i,
                    },
                }
            )
    return directory


@pytest.fixture(scope="module")
def node(tmp_path_factory) -> Path:
    return write_node(tmp_path_factory.mktemp("explorer") / "diagnostic.data")


def recorded(path: Path, names: list[str]) -> dict[str, ex.Series]:
    """`names` as the explorer draws them from what the analysis' own pass kept."""
    result = analysis.analyze(path, keep_metrics=True)
    evidence = result.evidence
    return {
        s.name: s for s in ex.recorded(evidence.kept, evidence.derived.analysed, names, ex.axis_of(result), evidence.resolved)
    }


def test_counters_are_shown_as_rates_and_gauges_as_recorded(node):
    names = ["serverStatus.made up.operations", "serverStatus.made up.level", "serverStatus.made up.busy", "serverStatus.uptime"]
    found = recorded(node, names)
    counter, level, busy = (found[n] for n in names[:3])
    assert counter.unit == "/s" and np.nanmin(decoded(counter)[0]) == 5 == np.nanmax(decoded(counter)[1])
    assert level.unit == "" and (level.low, level.high) == (0, 12)
    assert busy.unit == "" and (busy.low, busy.high) == (0, 1)
    # The alias table says uptime is a gauge, though it only rises.
    assert found["serverStatus.uptime"].unit == "" and found["serverStatus.uptime"].high == 1599


def test_a_restart_is_not_a_rate_and_does_not_make_a_counter_a_gauge(tmp_path):
    path = write_node(tmp_path / "diagnostic.data", restart_at=300)
    counter = recorded(path, ["serverStatus.made up.operations"])["serverStatus.made up.operations"]
    assert counter.unit == "/s" and (counter.low, counter.high) == (5, 5)


def write_changing_node(directory: Path, seconds: int = 600) -> Path:
    """A node whose metrics the alias table does not know change character between windows: one holds one number
    throughout, one holds one then counts, one appears midway (nulls before it) and counts, one holds one then falls
    once, one counts and resets at a restart."""
    with FTDCWriter(directory, samples_per_chunk=50) as writer:
        for i in range(seconds):
            restarted = i >= 450
            made_up = {
                "flat": 7,
                "late": 0 if i < 300 else 3 * (i - 300),
                "dips": 40 if i < 250 else 39,
                "resets": 2 * (i - 450) if restarted else 10 + 2 * i,
            }
            if i >= 200:
                made_up["appears"] = 11 * (i - 200)
            writer.add_sample(
                {
                    "start": START + dt.timedelta(seconds=i),
                    "serverStatus": {
                        "pid": 2 if restarted else 1,
                        "uptime": i - 450 if restarted else 1000 + i,
                        "made up": made_up,
                    },
                }
            )
    return directory


def whole_range_series(path: Path, names: list[str], axis: ex.Axis) -> dict[str, ex.Series]:
    """What the explorer must draw of `names`, taken the plain way: the whole range as one frame, each metric's kind
    from its every step, its values or rates grouped by column of the axis in polars."""
    resolved = resolve_metrics(read_catalog(path).schema())
    kinds = {p: resolved.kinds[name] for name, paths in resolved.paths.items() for p in paths}
    # Flags as 0 and 1, as the explorer has always drawn them.
    frame = ftdc_read(path, [*names, *ex.identity_paths(resolved)]).with_columns(pl.col(pl.Boolean).cast(pl.Int8))
    frame = frame.with_columns(series_module.prepare(frame, resolved).select("interval_s", "valid"))
    out = {}
    for name in names:
        steps = pl.col(name).diff()
        rose, fell = frame.select((steps > 0).any(), (pl.col("valid") & (steps < 0)).any()).row(0)
        rated = kinds[name] == COUNTER if name in kinds else bool(rose) and not bool(fell)
        value = (series_module.recorded_rate(name) if rated else pl.col(name)).cast(pl.Float64)
        grouped = (
            frame.select(axis.column(), value.alias("v"))
            .filter(pl.col("v").is_finite())
            .group_by(ex.BUCKET)
            .agg(pl.col("v").min().alias("lo"), pl.col("v").max().alias("hi"))
        )
        pairs = np.full((axis.columns, 2), np.nan)
        pairs[grouped[ex.BUCKET].to_numpy(), 0] = grouped["lo"].to_numpy()
        pairs[grouped[ex.BUCKET].to_numpy(), 1] = grouped["hi"].to_numpy()
        meaning = "cumulative counter, shown as a per-second rate" if rated else "as recorded"
        out[name] = ex.Series(name, "ftdc", "/s" if rated else "", meaning, *ex._levels_of(pairs[None])[0])
    return out


def test_metrics_that_change_character_are_drawn_as_over_the_whole_range(tmp_path):
    # A metric flat for a while and counting later, one absent from the first chunks, one that falls once, one reset
    # by a restart: each drawn as the whole range taken at once in polars says (values or rates, every column's
    # extremes), from the bytes the analysis' pass kept.
    path = write_changing_node(tmp_path / "diagnostic.data")
    names = [f"serverStatus.made up.{n}" for n in ("flat", "late", "appears", "dips", "resets")]
    found = recorded(path, names)
    assert found == whole_range_series(path, names, ex.axis_of(analysis.analyze(path)))
    assert [found[n].unit for n in names] == ["", "/s", "/s", "", "/s"]


def recorded_apart(path: Path, names: list[str], axis: ex.Axis) -> dict[str, ex.Series]:
    """`names` as the explorer draws them after an analysis that kept no metric: from a pass of its own."""
    return {s.name: s for s in ex.explore(analysis.analyze(path), path, "node").series if s.name in names and s.source == "ftdc"}


@pytest.mark.parametrize("sample", ["mongod-7.0", "mongod-4.2.1"])
def test_real_nodes_draw_from_the_single_pass_what_separate_reads_give(ftdc_samples, sample):
    # Real layouts (thousands of metrics, chunks of 300 samples, metrics that come and go): what the explorer draws
    # from the analysis' own pass is what its pass of its own draws, every metric, and what reading the metrics apart
    # and reducing them in polars gives (every 40th metric: that oracle takes a query per metric).
    path = ftdc_samples / sample / "diagnostic.data"
    result = analysis.analyze(path, keep_metrics=True)
    axis = ex.axis_of(result)
    single = {s.name: s for s in ex.explore(result, path, "node").series if s.source == "ftdc"}
    assert len(single) > 1000 and single == recorded_apart(path, list(single), axis)
    some = sorted(single)[::40]
    assert {n: single[n] for n in some} == whole_range_series(path, some, axis)


def test_samples_dropped_for_impossible_times_are_stepped_over(tmp_path):
    # A chunk whose time reference is damaged dates its samples past year 9999: the frame drops them, and the explorer
    # draws the others as reading them apart does (a rate steps from the sample before the dropped ones).
    path = write_node(tmp_path / "diagnostic.data")
    flip_reference_date(next(path.glob("metrics.*")), 4, key=b"\x09start\x00")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FTDCWarning)
        result = analysis.analyze(path, keep_metrics=True)
        assert result.evidence.kept is not None and len(result.evidence.kept.dropped) == 50
        names = ["serverStatus.made up.operations", "serverStatus.made up.level", "serverStatus.made up.busy"]
        found = {s.name: s for s in ex.explore(result, path, "node").series if s.name in names}
        assert found == whole_range_series(path, names, ex.axis_of(result)) == recorded_apart(path, names, ex.axis_of(result))
    assert found["serverStatus.made up.operations"].unit == "/s"


def inflations(action) -> tuple[int, object]:
    """Chunks `action` inflated, and what it returned."""
    before = _native.counters()[0]
    out = action()
    return _native.counters()[0] - before, out


def test_the_explorer_inflates_no_chunk_again_after_an_analysis_that_kept_the_metrics(node, tmp_path):
    # The analysis' one pass kept every metric: the explorer reads no file. An analysis that kept none, or of the
    # node at another path, leaves the explorer one pass of its own (each chunk inflated once); all draw the same.
    chunks = read_catalog(node).chunks.height
    kept_pass, kept = inflations(lambda: analysis.analyze(node, keep_metrics=True))
    again, explorer = inflations(lambda: ex.explore(kept, node, "node"))
    assert (kept_pass, again) == (chunks, 0) and len(explorer.series) > len(ex.drawn_columns(kept.evidence))
    assert kept.evidence.kept is not None and kept.evidence.derived.analysed.width < 100  # no frame of every metric
    own, plain = inflations(lambda: ex.explore(analysis.analyze(node), node, "node"))
    copy = tmp_path / "copy"
    shutil.copytree(node, copy)
    other, moved = inflations(lambda: ex.explore(kept, copy, "node"))
    assert plain == explorer == moved and own == 2 * chunks and other == chunks


def test_input_strings_cannot_leave_the_data_block(node):
    result = analysis.analyze(node)
    name = "serverStatus." + CRAFTED
    explorer = ex.explore(result, node, CRAFTED)
    assert name in {s.name for s in explorer.series} and name not in explorer.others
    page = explorer_page.page(explorer)
    # Our own scripts close three times (data, uPlot, explorer.js); the name never closes one or opens a comment.
    assert len(re.findall(r"</script", page, re.I)) == 3 and "<!--" not in page
    block = re.search(r'<script type="application/json" class="explorer-data">(.*?)</script>', page, re.S).group(1)
    data = json.loads(block)
    assert data["node"] == CRAFTED and name in [s["name"] for s in data["series"]]
    assert "&lt;/script&gt;" in page.split("<script", 1)[0]  # the title and heading: escaped HTML


def payload_of(page: str) -> dict:
    return json.loads(re.search(r'class="explorer-data">(.*?)</script>', page, re.S).group(1))


def test_every_metric_of_the_node_has_data_and_a_constant_costs_next_to_nothing(node):
    result = analysis.analyze(node)
    explorer = ex.explore(result, node, "node")
    recorded_names = {s.name for s in explorer.series if s.source == "ftdc"}
    assert recorded_names == set(ex.drawable(result.catalog.schema())) and explorer.others == ()
    data = payload_of(explorer_page.page(explorer))
    encoded = {s["name"]: s for s in data["series"]}
    # The pid holds 1 throughout (600 columns of one level each): a few bytes, not 2,400.
    pid = encoded["serverStatus.pid"]
    assert "levels" not in pid and len(pid["runs"]) <= 8
    # Every series decodes to its levels, whichever way it is written.
    for series in explorer.series:
        assert decoded_levels(encoded[series.name]) == series.levels


def decoded_levels(encoded: dict) -> bytes:
    """The levels of a series as the page holds it: as they are, or as (level, count) runs."""
    if "levels" in encoded:
        return base64.b64decode(encoded["levels"])
    runs = np.frombuffer(base64.b64decode(encoded["runs"]), dtype="<u2").reshape(-1, 2)
    return np.repeat(runs[:, 0], runs[:, 1]).astype("<u2").tobytes()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, ex.EMPTY), min_size=2, max_size=9600).filter(lambda q: len(q) % 2 == 0),
            st.integers(1, 40),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_levels_are_written_in_their_shorter_form(series):
    # Series of one length and of several, side by side: each written alone, the shorter way.
    raw = [np.repeat(np.array(levels, dtype="<u2"), repeat)[: max(2, len(levels))].tobytes() for levels, repeat in series]
    for levels, encoded in zip(raw, explorer_page.encoded_levels(raw + raw[:1])):
        assert len(encoded) == 1 and decoded_levels(encoded) == levels
        assert len(next(iter(encoded.values()))) <= len(base64.b64encode(levels))


def test_many_series_are_written_as_each_alone():
    # More series of one length than are encoded at once, runs and not, a constant last: each as it is written alone.
    rng = np.random.default_rng(3)
    count = 2 * explorer_page.ENCODED_AT_ONCE + 7
    sizes = rng.integers(1, 4800, size=count - 1)  # the levels of a series: its runs, of equal lengths
    raw = [np.repeat(rng.integers(0, ex.EMPTY, size=size), -(-4800 // size))[:4800] for size in sizes]
    many = [levels.astype("<u2").tobytes() for levels in raw] + [np.zeros(4800, dtype="<u2").tobytes()]
    encoded = explorer_page.encoded_levels(many)
    assert encoded == [explorer_page.encoded_levels([levels])[0] for levels in many]
    assert [decoded_levels(e) for e in encoded] == many and {"runs", "levels"} == {k for e in encoded for k in e}


def levels_one_by_one(pairs: np.ndarray) -> tuple[float, float, bytes] | None:
    """A series' (low, high, levels) taken alone, the plain way: its values' least and greatest, each value's level
    between them, EMPTY where a column holds none."""
    present = ~np.isnan(pairs)
    if not present.any():
        return None
    low, high = pairs[present].min(), pairs[present].max()
    scale = (ex.EMPTY - 1) / (high - low) if high > low else 0.0
    levels = np.full(pairs.shape, ex.EMPTY, dtype="<u2")
    levels[present] = np.rint((pairs[present] - low) * scale).astype("<u2")
    return float(low), float(high), levels.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda columns: st.lists(
            st.lists(
                st.one_of(st.just(math.nan), st.floats(-1e15, 1e15), st.sampled_from([0.0, 1.0, 7.5])),
                min_size=2 * columns,
                max_size=2 * columns,
            ),
            min_size=1,
            max_size=8,
        )
    )
)
def test_a_batch_of_series_is_levelled_as_each_alone(batch):
    # Constant series, series with no value, and columns without one, among others of one batch.
    stack = np.array(batch, dtype=float).reshape(len(batch), -1, 2)
    assert ex._levels_of(stack) == [levels_one_by_one(pairs) for pairs in stack]


def test_series_without_a_column_hold_no_value_and_pairs_of_another_shape_are_refused():
    assert ex._levels_of(np.empty((3, 0, 2))) == [None, None, None]
    with pytest.raises(ValueError, match="each of the series"):
        _native.levels(np.zeros(5).tobytes(), 2)


def test_vendored_scripts_cannot_close_their_element():
    assets = explorer_page.assets()
    assert assets.lower().count("</script") == 2 and "uPlot" in assets
    assert (explorer_page.UPLOT / "LICENSE").read_text().startswith("The MIT License")


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_explore_writes_one_page_with_the_metrics_asked_for(tmp_path):
    out = tmp_path / "node.html"
    result = run_cli("explore", DEMO, "-o", out, "--metrics", "serverStatus.connections.act*")
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"read the log found beside the FTDC: .*\nwrote .*node\.html \(\d+ series, [\d.]+ MB\)\n", result.stderr)
    data = payload_of(out.read_text())
    names = {s["name"] for s in data["series"]}
    # The derived series and every metric recorded; what --metrics asked for opens as panels after the usual ones.
    assert {"writes_latency_ms", "serverStatus.opLatencies.writes.latency", "systemMetrics.cpu.user_ms"} <= names
    assert names >= set(ex.drawable(read_catalog(DEMO).schema())) and data["others"] == []
    assert data["opening"] == [*ex.OPENING, "serverStatus.connections.active"]
    assert [i["label"] for i in data["incidents"]] == ["I1"] and len(data["checkpoints"]) > 10


@pytest.mark.parametrize(
    "args, message",
    [
        (["-o", "{tmp}/node.txt"], "node.txt: the explorer is an .html page"),
        (["-o", "{tmp}/node.html", "--metrics", "nothing.like.this*"], "'nothing.like.this*' matches no metric"),
    ],
)
def test_explore_refuses_with_one_line(tmp_path, args, message):
    result = run_cli("explore", DEMO, *[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "node.html").exists()


@pytest.mark.parametrize(
    "name, unit, axis",
    [
        ("writes_latency_ms", "ms", "ms"),  # a derived series says its own
        ("serverStatus.opLatencies.writes.latency", "/s", "µs/s"),
        ("serverStatus.opLatencies.writes.ops", "/s", "count/s"),
        ("serverStatus.wiredTiger.cache.tracked dirty bytes in the cache", "", "bytes"),
        ("serverStatus.network.bytesIn", "/s", "bytes/s"),
        ("systemMetrics.cpu.user_ms", "/s", "ms/s"),
        ("serverStatus.locks.Global.timeAcquiringMicros.w", "/s", "µs/s"),  # the part before the last names it
        ("serverStatus.globalLock.totalTimeMicros", "/s", "µs/s"),
        ("serverStatus.uptimeMillis", "", "ms"),
        ("serverStatus.connections.current", "", "count"),
    ],
)
def test_every_axis_says_a_unit(name, unit, axis):
    assert ex.axis_unit(name, unit) == axis


def test_a_page_of_several_nodes_holds_a_section_each(node, tmp_path):
    result = analysis.analyze(node)
    one = ex.explore(result, node, "node-a")
    two = ex.explore(result, node, CRAFTED)
    page = explorer_page.page([one, two])
    sections = re.findall(r'<section class="explorer" id="([^"]+)" data-node="([^"]*)"', page)
    assert sections == [
        ("explorer-1", "node-a"),
        ("explorer-2", "&lt;/script&gt;&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;&lt;!--"),
    ]
    assert len(re.findall(r"</script", page, re.I)) == 4 and "<!--" not in page  # two data blocks, uPlot, explorer.js
    assert explorer_page.page(one) == explorer_page.page([one])


def test_explore_writes_one_page_for_several_nodes(tmp_path):
    for name in ("a", "b"):
        write_node(tmp_path / name / "diagnostic.data")
    out = tmp_path / "rs.html"
    result = run_cli(
        "explore",
        tmp_path / "a" / "diagnostic.data",
        tmp_path / "b" / "diagnostic.data",
        "-o",
        out,
        "--metrics",
        "serverStatus.made up.*",
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"wrote .*rs\.html \(\d+ series of 2 nodes, [\d.]+ MB\)", result.stderr), result.stderr
    blocks = re.findall(r'class="explorer-data">(.*?)</script>', out.read_text(), re.S)
    assert len(blocks) == 2 and all("serverStatus.made up.level" in {s["name"] for s in json.loads(b)["series"]} for b in blocks)


def test_a_page_past_its_budget_writes_recorded_metrics_at_8_bits(monkeypatch):
    # Twelve series that move in every column (none can be runs), two of them derived: with room for about eight,
    # the last recorded ones drop to 8 bits until the page fits (eight of them); the derived ones keep their 16 bits.
    rng = np.random.default_rng(3)
    levels = [rng.integers(0, ex.EMPTY, size=2 * 600, dtype="<u2") for _ in range(12)]
    for q in levels:
        q[::7] = ex.EMPTY  # columns without a sample
    series = tuple(
        ex.Series(f"m{i}", "derived" if i in (0, 11) else "ftdc", "", "", -5.0, 250.0, q.tobytes()) for i, q in enumerate(levels)
    )
    explorer = ex.Explorer("node", ex.Axis(0, 1000, 600), series)
    raw = len(base64.b64encode(levels[0].tobytes()))
    monkeypatch.setattr(explorer_page, "LEVELS_BUDGET", 8 * raw)
    written = payload_of(explorer_page.page(explorer))["series"]
    assert sum(len(s.get("levels", s.get("levels8", ""))) for s in written) <= 8 * raw
    assert ["levels8" in s for s in written] == [False] * 3 + [True] * 8 + [False]  # each saves half its size
    for s, q in zip(written, levels):
        if "levels8" in s:
            coarse = np.frombuffer(base64.b64decode(s["levels8"]), dtype="u1")
            assert np.array_equal(coarse == explorer_page.EMPTY8, q == ex.EMPTY)
            # Within half an 8-bit step of the 16-bit level: 1/508 of the range.
            assert np.all(np.abs(coarse[q != ex.EMPTY] / 254 - q[q != ex.EMPTY] / 65534) <= 0.5 / 254 + 1e-9)


def test_the_key_writes_every_count_with_its_thousands_separated():
    # A node of thousands of metrics: the total, the derived and the recorded counts read alike.
    axis = ex.Axis.spanning(0, 599_000)
    one = ex.Series("m", "ftdc", "", "as recorded", 0.0, 1.0, bytes(4 * axis.columns))
    series = tuple(dataclasses.replace(one, name=f"m{i}", source="ftdc" if i >= 1_108 else "derived") for i in range(3_420))
    key = re.search(r'class="explorer-key">(.*?) counters', explorer_page.section(ex.Explorer("node", axis, series))).group(1)
    assert key.startswith("3,420 series of node (1,108 derived, 2,312 as recorded,")
