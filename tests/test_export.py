"""Parquet and CSV exports stream window by window and equal read_ftdc."""

import polars as pl
import pyarrow.parquet as pq
import pytest

import ftdc


@pytest.fixture(scope="module")
def directory(ftdc_samples):
    return ftdc_samples / "mongod-7.0" / "diagnostic.data"


def test_parquet_equals_read_in_bounded_row_groups(directory, tmp_path):
    out = tmp_path / "all.parquet"
    progress = []
    rows = ftdc.to_parquet(directory, out, budget=10_000_000, progress=lambda done, total: progress.append((done, total)))
    frame = ftdc.read_ftdc(directory)
    assert rows == frame.height
    assert pl.read_parquet(out).equals(frame)
    meta = pq.ParquetFile(out).metadata
    assert meta.num_row_groups == len(progress) > 3
    assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) * (frame.width) <= 2 * 10_000_000
    assert meta.row_group(0).column(1).compression == "ZSTD"
    assert progress[-1][0] == progress[-1][1]


def test_parquet_selection_and_range(directory, tmp_path):
    out = tmp_path / "cache.parquet"
    start, end = "2025-07-10T17:00:00Z", "2025-07-10T18:00:00Z"
    metrics = ["serverStatus.wiredTiger.cache.*"]
    ftdc.to_parquet(directory, out, metrics, start, end)
    assert pl.read_parquet(out).equals(ftdc.read_ftdc(directory, metrics, start, end))


def test_csv_round_trip(directory, tmp_path):
    out = tmp_path / "x.csv"
    metrics = ["serverStatus.uptime", "serverStatus.connections.current"]
    rows = ftdc.to_csv(directory, out, metrics, budget=100_000)
    frame = ftdc.read_ftdc(directory, metrics)
    back = pl.read_csv(out, try_parse_dates=True).with_columns(pl.col("start").dt.convert_time_zone("UTC").dt.cast_time_unit("ms"))
    assert rows == frame.height and back.equals(frame)
