"""The rolling baselines' quantiles (`analysis.series.rolling`, the native core) are polars'
`rolling_*_by(closed="left")` to the bit, on random series: repeated times, gaps, nulls, ties."""

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.series.rolling import SpikeRule, medians_before, medians_of_rows_before, quantiles_before
from analysis.series.spikes import _flags

T0 = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc)
value = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.5, 3.0]), st.floats(-1e6, 1e6, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), value), min_size=0, max_size=80),
    st.integers(1, 15),
    st.sampled_from(["ms", "us", "ns"]),
)
def test_the_quantiles_before_each_sample_are_polars_to_the_bit(rows, window_s, unit):
    steps, values = zip(*rows) if rows else ((), ())
    times = [T0 + dt.timedelta(seconds=sum(steps[: i + 1]) * 0.5) for i in range(len(rows))]  # 0: a repeated time
    frame = pl.DataFrame({"start": pl.Series(times, dtype=pl.Datetime(unit, "UTC")), "v": pl.Series(values, dtype=pl.Float64)})
    window = dt.timedelta(seconds=window_s)
    [got, negated] = quantiles_before(
        frame["start"],
        [frame["v"], -frame["v"]],
        window,
        {"median": (0.5, "linear"), "q1": (0.25, "nearest"), "q3": (0.75, "nearest")},
    )
    w = f"{window_s}s"
    for column, answer in ((pl.col("v"), got), (-pl.col("v"), negated)):  # each column of one call is its own
        want = frame.select(
            count=column.is_not_null().cast(pl.UInt32).rolling_sum_by("start", w, closed="left").fill_null(0),
            median=column.rolling_median_by("start", w, closed="left"),
            q1=column.rolling_quantile_by("start", w, quantile=0.25, closed="left"),
            q3=column.rolling_quantile_by("start", w, quantile=0.75, closed="left"),
        )
        assert answer.frame().to_dict(as_series=False) == want.to_dict(as_series=False)
        assert answer.overall["median"] == frame.select(column.median()).item()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(value, st.sampled_from([float("nan"), float("inf"), -float("inf"), -0.0])), max_size=80),
    st.integers(1, 9),
)
def test_the_median_of_the_rows_before_each_row_is_polars_to_the_bit(values, rows):
    # The sampling period's medians (`derived._bookkeeping`): nulls left out, NaN and infinities in polars' order,
    # the first rows' shorter windows, an even count's two middle values interpolated as polars does.
    column = pl.Series("step", values, dtype=pl.Float64)
    got = medians_of_rows_before(column, rows)
    want = column.shift(1).rolling_median(rows, min_samples=1)
    assert got.name == "step"
    assert got.is_null().to_list() == want.is_null().to_list()
    # The same values, NaN where polars has NaN; a zero's sign may differ (polars' order ties -0.0 with 0.0).
    assert np.array_equal(got.fill_null(0.0).to_numpy(), want.fill_null(0.0).to_numpy(), equal_nan=True)


def test_a_long_series_taken_in_ranges_of_rows_is_polars_to_the_bit():
    # The native core cuts each column's rows into ranges taken in parallel (4,096 rows at least): three columns of
    # 30,000 samples at 1 s with gaps and nulls come back whole, each row in its place.
    import numpy as np

    rng = np.random.default_rng(22)
    steps = rng.choice([0, 1, 1, 1, 1, 2, 40], size=30_000)
    frame = pl.DataFrame(
        {
            "start": pl.Series([T0 + dt.timedelta(seconds=int(s)) for s in np.cumsum(steps)], dtype=pl.Datetime("us", "UTC")),
            **{
                c: pl.Series(rng.gamma(2, 0.3, 30_000).round(3)).scatter(np.flatnonzero(rng.random(30_000) < 0.05), None)
                for c in "abc"
            },
        }
    )
    answers = quantiles_before(
        frame["start"], [frame[c] for c in "abc"], dt.timedelta(minutes=5), {"median": (0.5, "linear"), "q3": (0.75, "nearest")}
    )
    for c, answer in zip("abc", answers):
        want = frame.select(
            count=pl.col(c).is_not_null().cast(pl.UInt32).rolling_sum_by("start", "5m", closed="left").fill_null(0),
            median=pl.col(c).rolling_median_by("start", "5m", closed="left"),
            q3=pl.col(c).rolling_quantile_by("start", "5m", quantile=0.75, closed="left"),
        )
        assert answer.frame().equals(want)
        assert answer.overall == {"median": frame[c].median(), "q3": frame[c].quantile(0.75, "nearest")}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 90), st.one_of(st.none(), st.integers(0, 10**12))), max_size=60), st.integers(1, 600))
def test_medians_before_of_counts_are_polars_rolling_median_by(rows, window_s):
    # The detectors' usual rates and counts (a minute's TTL deletes are integers): the helper's medians are
    # `rolling_median_by(closed="left")`'s, nulls where the window is empty.
    steps, values = zip(*rows) if rows else ((), ())
    times = pl.Series([T0 + dt.timedelta(seconds=sum(steps[: i + 1])) for i in range(len(rows))], dtype=pl.Datetime("ms", "UTC"))
    frame = pl.DataFrame({"start": times, "n": pl.Series(values, dtype=pl.Int64), "rate": pl.Series(values, dtype=pl.Int64) / 7})
    got = medians_before(frame["start"], [frame["n"], frame["rate"]], dt.timedelta(seconds=window_s))
    for column, answer in zip(("n", "rate"), got):
        want = frame.select(pl.col(column).rolling_median_by("start", f"{window_s}s", closed="left")).to_series()
        assert answer.to_list() == want.to_list()


SPIKE_QUANTILES = {"median": (0.5, "linear"), "q1": (0.25, "nearest"), "q3": (0.75, "nearest")}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.one_of(value, st.floats(0, 50), st.sampled_from([float("inf"), float("nan")]))),
        max_size=120,
    ),
    st.integers(1, 40),
    st.sampled_from([SpikeRule(3.0, 5.0, 0.01, 30), SpikeRule(1.5, 1.0, 0.0, 3), SpikeRule(3.0, 5.0, 0.01, 0)]),
)
def test_quantiles_where_a_spike_is_possible_decide_every_spike_as_all_quantiles_do(rows, window_s, rule):
    # The spikes' quantiles are worked out only where a row's own value can pass the rule against its window's (the
    # native core bounds them by counting values in bins), and only those rows are listed, beside the rows whose
    # windows are too short to be their baseline: `_flags` flags the same rows with the same baselines, and the count
    # of every row listed is its window's.
    steps, values = zip(*rows) if rows else ((), ())
    times = pl.Series(
        [T0 + dt.timedelta(seconds=sum(steps[: i + 1]) * 0.5) for i in range(len(rows))], dtype=pl.Datetime("ms", "UTC")
    )
    column = pl.Series(values, dtype=pl.Float64)
    window = dt.timedelta(seconds=window_s)
    [every] = quantiles_before(times, [column], window, SPIKE_QUANTILES)
    [possible] = quantiles_before(times, [column], window, SPIKE_QUANTILES, where=rule)
    assert every.rows is None and possible.rows is not None
    assert (np.diff(possible.rows.astype(np.int64)) > 0).all(), "listed in order, each once"
    assert (possible.count == every.count[possible.rows]).all() and possible.overall == every.overall
    # Every row whose value counts and whose window is too short is listed (it is compared with the whole range's).
    short = np.flatnonzero(~np.isnan(column.to_numpy()) & (every.count < rule.min_count))
    assert np.isin(short, possible.rows).all()
    latency = column.to_numpy()
    with np.errstate(invalid="ignore"):  # infinities' differences are NaN: no spike, as intended
        (want, want_baseline), (got, got_baseline) = _flags(latency, every, rule), _flags(latency, possible, rule)
        # The rule over every row, as the module states it: the window's median and IQR, the whole range's median
        # and no spread while the window holds fewer than min_count values.
        enough = every.count >= rule.min_count
        overall = np.nan if every.overall["median"] is None else every.overall["median"]
        median = np.where(enough, every.before["median"], overall)
        iqr = np.where(enough, every.before["q3"] - every.before["q1"], 0.0)
        spike = (latency - median >= rule.resolution) & (latency >= rule.factor * median) & (latency >= median + rule.iqrs * iqr)
    assert want.tolist() == got.tolist() == np.flatnonzero(spike).tolist()
    assert got_baseline.tobytes() == want_baseline.tobytes() == median[spike].tobytes()


def test_bad_arguments_are_refused_not_guessed():
    import pyarrow as pa

    from ftdc import _native

    def column(values, dtype=None):
        return [pa.array(values, dtype or pa.float64())]

    zero, one, two = column([0.0]), column([0.0, 0.0]), column([1, 2], pa.int64())
    with pytest.raises(ValueError, match="ascending"):
        _native.rolling_quantiles(column([2, 1], pa.int64()), [one], 10, [])
    with pytest.raises(ValueError, match="same number of rows"):
        _native.rolling_quantiles(two, [zero], 10, [])
    with pytest.raises(ValueError, match="without missing values"):
        _native.rolling_quantiles(column([1, None], pa.int64()), [one], 10, [])
    with pytest.raises(ValueError, match="without missing values"):
        _native.rolling_quantiles(column([1.0, 2.0]), [one], 10, [])
    # Arrays cross by the PyCapsule interface: an address is no array, and an array of another type is refused.
    with pytest.raises(TypeError, match="expected an Arrow array"):
        _native.rolling_quantiles([(True, 2, 4096, None)], [zero], 10, [])
    with pytest.raises(ValueError, match="its format is"):
        _native.rolling_quantiles(two, [column(["a", "b"], pa.string())], 10, [])
    with pytest.raises(ValueError, match="its format is"):
        _native.run_extremes([column([1, 2], pa.int32())], 2, (0).to_bytes(8, "little"))


def test_a_window_shorter_than_a_tick_and_dates_are_windowed_as_polars_windows_them():
    # Times in ms and a 0.5 ms window: every window empty. Dates and a two-day window: the days before.
    frame = pl.DataFrame(
        {
            "ms": pl.Series([T0 + dt.timedelta(milliseconds=i) for i in range(5)], dtype=pl.Datetime("ms", "UTC")),
            "day": pl.Series([(T0 + dt.timedelta(days=i)).date() for i in range(5)], dtype=pl.Date),
            "v": [1.0, 4.0, 2.0, 8.0, 16.0],
        }
    )
    for on, window, every in (("ms", dt.timedelta(microseconds=500), "500us"), ("day", dt.timedelta(days=2), "2d")):
        [got] = quantiles_before(frame[on], [frame["v"]], window, {"median": (0.5, "linear")})
        want = frame.select(pl.col("v").rolling_median_by(on, every, closed="left")).to_series()
        assert got.frame()["median"].to_list() == want.to_list()
