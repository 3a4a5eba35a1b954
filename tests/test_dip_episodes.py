"""The throughput dip's episodes (`throughput_dip._episodes`, found with numpy runs) against what its docstring says an
episode is, on random buckets: missing buckets, buckets with no rate, buckets with no baseline yet."""

import datetime as dt

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.findings.detectors.throughput_dip import DIP_SHARE, LOW_SHARE, MIN_BASELINE_OPS, _episodes
from ftdc.frames import TIME_COLUMN

WIDTH = dt.timedelta(seconds=5)
T0 = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc)
rate = st.one_of(st.none(), st.sampled_from([0.0, 40.0, 60.0, 90.0, 140.0, 200.0, 260.0]), st.floats(0, 400))
bucket = st.tuples(st.integers(1, 3), rate, st.one_of(st.none(), st.sampled_from([80.0, 100.0, 200.0, 300.0])))


@settings(max_examples=300, deadline=None)
@given(st.lists(bucket, min_size=1, max_size=60))
def test_each_episode_is_the_whole_run_of_low_buckets_around_a_dip(rows):
    steps, ops, baselines = zip(*rows)
    times = [T0 + WIDTH * sum(steps[: i + 1]) for i in range(len(rows))]  # a step of 2 or 3: buckets missing between
    buckets = pl.DataFrame({TIME_COLUMN: times, "ops": ops, "baseline": baselines}, schema_overrides={"ops": pl.Float64})
    joined = [False] + [times[i] - times[i - 1] <= WIDTH for i in range(1, len(times))]

    def below(i: int, share: float, baseline: float | None) -> bool:
        return baseline is not None and (ops[i] is None or ops[i] < share * baseline)

    dips = [
        i
        for i, (o, b) in enumerate(zip(ops, baselines))
        if b is not None and b >= MIN_BASELINE_OPS and o is not None and o < DIP_SHARE * b
    ]
    episodes = _episodes(buckets, WIDTH)
    # Every dip lies in an episode, and each episode begins from one.
    assert all(any(e["first"] <= d <= e["last"] for e in episodes) for d in dips)
    for e in episodes:
        first, last, baseline = e["first"], e["last"], e["baseline"]
        dip = next(d for d in dips if first <= d <= last)
        assert all(joined[i] for i in range(first + 1, last + 1))
        # Before its dip each bucket is low on its own baseline; from the dip on, on the one the episode began from.
        assert all(below(i, LOW_SHARE, baselines[i]) for i in range(first, dip))
        assert baseline == (baselines[first] if baselines[first] is not None else baselines[dip])
        assert all(below(i, LOW_SHARE, baseline) for i in range(dip + 1, last + 1))
        # Nothing joined and low is left out at either end.
        assert first == 0 or not joined[first] or not below(first - 1, LOW_SHARE, baselines[first - 1])
        assert last == len(ops) - 1 or not joined[last + 1] or not below(last + 1, LOW_SHARE, baseline)
        rated = [i for i in range(first, last + 1) if ops[i] is not None]
        assert e["lowest"] == (min(rated, key=lambda i: ops[i]) if rated else dip)
        # The worst part: the whole run of joined dip buckets inside the episode holding the lowest (or the dip itself).
        a, b = e["worst_first"], e["worst_last"]
        if below(e["lowest"], DIP_SHARE, baseline):
            assert first <= a <= e["lowest"] <= b <= last
            assert all(below(i, DIP_SHARE, baseline) for i in range(a, b + 1)) and all(joined[i] for i in range(a + 1, b + 1))
            assert a == first or not joined[a] or not below(a - 1, DIP_SHARE, baseline)
            assert b == last or not joined[b + 1] or not below(b + 1, DIP_SHARE, baseline)
        else:
            assert (a, b) == (dip, dip)
