"""Rows come out sorted by time, and time ranges lose nothing, whatever order
or overlap the chunks' clocks have."""

import datetime as dt

import polars as pl

import ftdc
from ftdc.writer import FTDCWriter

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def write(directory, seconds, samples_per_chunk=2):
    with FTDCWriter(directory, metadata={"start": T0}, samples_per_chunk=samples_per_chunk) as writer:
        for i, s in enumerate(seconds):
            writer.add_sample({"start": T0 + dt.timedelta(seconds=s), "n": i})
    return writer.files


def test_clock_stepping_back_inside_a_chunk_is_still_sorted(tmp_path):
    write(tmp_path, [100, 110, 150, 160, 300, 105])
    frame = ftdc.read_ftdc(tmp_path)
    assert frame["start"].is_sorted()
    assert frame["n"].to_list() == [0, 5, 1, 2, 3, 4]


def test_overlapping_files_interleave_in_file_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    files = write(a, range(0, 20, 2), 3) + write(b, range(0, 20, 2), 4)
    frame = ftdc.read_ftdc(files)
    assert frame.height == 20 and frame["start"].is_sorted()
    assert frame["n"].to_list() == [n for n in range(10) for _ in (0, 1)]


def test_start_bound_keeps_rows_of_chunks_that_overlap_later_ones(ftdc_samples):
    # The Go writer's chunks overlap in `ts`, so `_id` cannot rule chunks out.
    path = ftdc_samples / "go-writer-synthetic" / "perf_metrics_small.ftdc"
    full = ftdc.read_ftdc(path, time_field="ts")
    cut = full["start"].sort()[full.height // 3]
    assert ftdc.read_ftdc(path, time_field="ts", start=cut).equals(full.filter(pl.col("start") >= cut))
