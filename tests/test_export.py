"""Parquet and CSV exports stream window by window and equal read_ftdc."""

import re

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
    back = pl.read_csv(out, try_parse_dates=True).with_columns(
        pl.col("start").dt.convert_time_zone("UTC").dt.cast_time_unit("ms")
    )
    assert rows == frame.height and back.equals(frame)


def test_an_interrupted_export_leaves_the_previous_file(directory, tmp_path):
    out = tmp_path / "x.parquet"
    ftdc.to_parquet(directory, out, ["serverStatus.uptime"])
    before = out.read_bytes()

    def interrupt(done, total):
        raise KeyboardInterrupt  # Ctrl-C after the first window

    with pytest.raises(KeyboardInterrupt):
        ftdc.to_parquet(directory, out, budget=1_000_000, progress=interrupt)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["x.parquet"]  # no temporary file left


def test_an_unwritable_place_is_one_plain_error(directory, tmp_path):
    with pytest.raises(OSError, match=r"nowhere/x.parquet: cannot write there \(No such file or directory\)"):
        ftdc.to_parquet(directory, tmp_path / "nowhere" / "x.parquet", ["serverStatus.uptime"])


def test_a_metric_that_matches_nothing_warns_with_the_closest(directory, tmp_path):
    with pytest.warns(
        ftdc.FTDCWarning, match=r"'serverStatus.conection.current' matches no metric \(closest: serverStatus.connections.current"
    ):
        frame = ftdc.read_ftdc(directory, ["serverStatus.uptime", "serverStatus.conection.current"])
    assert frame.columns == ["start", "serverStatus.uptime"]
    with pytest.warns(
        ftdc.FTDCWarning, match=r"'serverStatus.wiredTiger.cach.\*' matches no metric \(closest: serverStatus.wiredTiger.cache.\*"
    ):
        ftdc.to_parquet(directory, tmp_path / "x.parquet", ["serverStatus.wiredTiger.cach.*"])


@pytest.mark.parametrize(
    "read",
    [
        lambda d, tmp: ftdc.read_ftdc(d, ["serverStatus.uptime"], "2025-07-10T18:00:00Z", "2025-07-10T17:00:00Z"),
        lambda d, tmp: ftdc.to_csv(d, tmp / "x.csv", ["serverStatus.uptime"], "2025-07-10T18:00:00Z", "2025-07-10T17:00:00Z"),
        lambda d, tmp: ftdc.to_dataset([d], tmp / "ds", ["serverStatus.uptime"], "2025-07-10T18:00:00Z", "2025-07-10T17:00:00Z"),
    ],
    ids=["read_ftdc", "to_csv", "to_dataset"],
)
def test_start_after_end_is_an_error(directory, tmp_path, read):
    with pytest.raises(ValueError, match="start 2025-07-10T18:00:00Z is after end 2025-07-10T17:00:00Z"):
        read(directory, tmp_path)
    assert not list(tmp_path.iterdir())


def test_csv_times_are_iso_utc_with_z(directory, tmp_path):
    out = tmp_path / "x.csv"
    ftdc.to_csv(directory, out, ["serverStatus.uptime"], "2025-07-10T16:00:00Z", "2025-07-10T16:00:05Z")
    times = [line.split(",")[0] for line in out.read_text().splitlines()[1:]]
    assert times and all(re.fullmatch(r"2025-07-10T16:00:0\dZ|2025-07-10T16:00:0\d\.\d\d\dZ", t) for t in times), times
