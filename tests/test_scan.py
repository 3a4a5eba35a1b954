"""scan_ftdc is read_ftdc made lazy, with projection and time pushdown."""

import datetime as dt

import polars as pl
import pytest

import ftdc
from ftdc import _native
from ftdc.predicates import time_bounds

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def directory(ftdc_samples):
    return ftdc_samples / "mongod-7.0" / "diagnostic.data"


def inflated(action):
    before = _native.counters()[0]
    result = action()
    return result, _native.counters()[0] - before


def test_collect_equals_read(directory):
    assert ftdc.scan_ftdc(directory).collect().equals(ftdc.read_ftdc(directory))


def test_projection_and_predicate_pushdown(directory):
    t = dt.datetime(2025, 7, 10, 20, 0, tzinfo=UTC)
    lazy = ftdc.scan_ftdc(directory)
    lazy.collect_schema()  # reading the schema inflates reference documents once
    scanned, pushed = inflated(lambda: lazy.filter(pl.col("start") > t).select("start", "serverStatus.uptime").collect())
    _, everything = inflated(lambda: ftdc.read_ftdc(directory, ["serverStatus.uptime"]))
    want = ftdc.read_ftdc(directory, ["serverStatus.uptime"]).filter(pl.col("start") > t)
    assert scanned.equals(want)
    assert 0 < pushed < everything / 5


def test_projection_decodes_only_asked_metrics(directory, monkeypatch):
    asked = []
    real = _native.read

    def spy(paths, interim, metrics, *rest):
        asked.append(metrics)
        return real(paths, interim, metrics, *rest)

    monkeypatch.setattr(_native, "read", spy)
    frame = ftdc.scan_ftdc(directory).select("serverStatus.mem.resident").collect()
    assert frame.columns == ["serverStatus.mem.resident"]
    assert asked and all(m == ["serverStatus.mem.resident"] for m in asked)


def test_head_and_aggregates(directory):
    lazy = ftdc.scan_ftdc(directory)
    assert lazy.head(7).collect().height == 7
    full = ftdc.read_ftdc(directory, ["serverStatus.connections.current"])
    total = lazy.select(pl.col("serverStatus.connections.current").sum()).collect().item()
    assert total == full["serverStatus.connections.current"].sum()


@pytest.mark.parametrize(
    "predicate, bounds",
    [
        (pl.col("start") > dt.datetime(2024, 1, 1, tzinfo=UTC), (1704067200000, None)),
        (pl.col("start") <= dt.datetime(2024, 1, 1), (None, 1704067200000)),
        (pl.lit(dt.datetime(2024, 1, 1, tzinfo=UTC)) < pl.col("start"), (1704067200000, None)),
        (
            (pl.col("start") >= dt.datetime(2024, 1, 1, tzinfo=UTC))
            & (pl.col("start") < pl.lit(dt.datetime(2024, 1, 1, tzinfo=UTC)) + pl.duration(hours=1)),
            (1704067200000, 1704070800000),
        ),
        (
            pl.col("start").is_between(dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 2, tzinfo=UTC)),
            (1704067200000, 1704153600000),
        ),
        ((pl.col("start") > dt.datetime(2024, 1, 1, tzinfo=UTC)) | (pl.col("x") > 1), (None, None)),
        (pl.col("x") > 5, (None, None)),
        (None, (None, None)),
    ],
)
def test_time_bounds_from_predicates(predicate, bounds):
    assert time_bounds(predicate, "start") == bounds


def test_scan_of_non_ftdc_fails_at_once_with_ftdc_error(tmp_path):
    import pytest

    junk = tmp_path / "metrics.junk"
    junk.write_bytes(b"definitely not bson")
    with pytest.raises(ftdc.FTDCError):
        ftdc.scan_ftdc(junk)
