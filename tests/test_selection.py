"""Metric selection and time ranges give exactly the filtered full read."""

import datetime as dt

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ftdc


@pytest.fixture(scope="module")
def directory(ftdc_samples):
    return ftdc_samples / "mongod-4.2.1" / "diagnostic.data"


@pytest.fixture(scope="module")
def full(directory):
    return ftdc.read_ftdc(directory)


def test_exact_names_and_globs(directory, full):
    frame = ftdc.read_ftdc(directory, metrics=["serverStatus.uptime", "serverStatus.wiredTiger.cache.*"])
    cache = [c for c in full.columns if c.startswith("serverStatus.wiredTiger.cache.")]
    assert frame.columns == ["start", "serverStatus.uptime", *cache]
    assert frame.equals(full.select(frame.columns))


def test_unknown_metric_gives_only_time(directory, full):
    frame = ftdc.read_ftdc(directory, metrics=["no.such.metric"])
    assert frame.columns == ["start"]
    assert frame.height == full.height


def test_single_string_is_one_metric(directory, full):
    assert ftdc.read_ftdc(directory, "serverStatus.uptime").columns == ["start", "serverStatus.uptime"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.floats(0, 1), b=st.floats(0, 1))
def test_time_range_equals_filter(directory, full, a, b):
    lo, hi = sorted((a, b))
    first, last = full["start"].min(), full["start"].max()
    start = first + (last - first) * lo
    end = first + (last - first) * hi
    frame = ftdc.read_ftdc(directory, metrics=["serverStatus.uptime", "serverStatus.opcounters.*"], start=start, end=end)
    want = full.filter(pl.col("start").is_between(start, end)).select(frame.columns)
    assert frame.equals(want)


def test_time_bounds_accept_strings_and_epoch_ms(directory, full):
    t0 = dt.datetime(2021, 7, 13, 3, 0, tzinfo=dt.timezone.utc)
    by_string = ftdc.read_ftdc(directory, "serverStatus.uptime", start="2021-07-13T03:00:00Z", end="2021-07-13T03:10:00")
    by_ms = ftdc.read_ftdc(
        directory, "serverStatus.uptime", start=int(t0.timestamp() * 1000), end=int(t0.timestamp() * 1000) + 600_000
    )
    assert by_string.equals(by_ms) and by_string.height > 500
    with pytest.raises(ValueError):
        ftdc.read_ftdc(directory, start="yesterday")


def test_range_skips_chunks_before_inflating(directory):
    from ftdc import _native

    before = _native.counters()[0]
    ftdc.read_ftdc(directory, "serverStatus.uptime")
    everything = _native.counters()[0] - before
    before = _native.counters()[0]
    ftdc.read_ftdc(directory, "serverStatus.uptime", start="2021-07-13T16:05:00Z")
    narrow = _native.counters()[0] - before
    assert narrow < everything / 10
