"""The native core's Parquet writer (the dataset's files): what it writes reads back as it was given."""

import datetime as dt
import errno

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import require_module
from hypothesis import given, settings
from hypothesis import strategies as st

from ftdc import _native

INT64 = st.integers(-(2**63), 2**63 - 1)
# Runs of one value (constant columns, counters that step), and any values at all (deltas that wrap).
COLUMN = st.one_of(
    st.lists(st.one_of(st.none(), st.just(7)), max_size=300),
    st.lists(st.one_of(st.none(), INT64), max_size=300),
    st.lists(st.integers(0, 5), max_size=300).map(lambda steps: [sum(steps[: i + 1]) for i in range(len(steps))]),
)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_what_is_written_reads_back(tmp_path_factory, data):
    rows = data.draw(st.integers(0, 300))
    ints = [data.draw(COLUMN) for _ in range(3)]
    ints = [(column * (rows // max(1, len(column)) + 1))[:rows] if column else [None] * rows for column in ints]
    flags = data.draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=rows, max_size=rows))
    ms = data.draw(st.lists(st.integers(0, 2**40), min_size=rows, max_size=rows))
    arrays = {
        "start": pa.array(ms, pa.timestamp("ms", "UTC")),
        "a": pa.array(ints[0], pa.int64()),
        "b": pa.array(ints[1], pa.int64()),
        "c": pa.array(ints[2], pa.int64()),
        "bits": pa.array(flags, pa.bool_()),
        "flags": pa.array([None if f is None else int(f) for f in flags], pa.int64()),  # booleans as the decoder holds them
        "absent": None,
    }
    kinds = ["timestamp", "int64", "int64", "int64", "boolean", "boolean", "int64"]
    # Row groups cut anywhere (a window's days): bitmaps read from an offset that is no multiple of 8.
    cuts = sorted(data.draw(st.lists(st.integers(0, rows), max_size=3)))
    path = tmp_path_factory.mktemp("parquet") / "x.parquet"
    writer = _native.ParquetWriter(path, list(arrays), kinds, ["start"])
    for lo, hi in zip([0, *cuts], [*cuts, rows]):
        writer.write(list(arrays.values()), lo, hi)
    writer.close()
    table = pq.read_table(path)
    want = pa.table(
        {
            "start": arrays["start"].cast(pa.timestamp("us", "UTC")),
            "a": arrays["a"],
            "b": arrays["b"],
            "c": arrays["c"],
            "bits": arrays["bits"],
            "flags": arrays["bits"],
            "absent": pa.nulls(rows, pa.int64()),
        }
    )
    assert table.schema == want.schema
    assert table.equals(want)
    assert pl.read_parquet(path).equals(pl.from_arrow(want))
    if rows:  # readers prune on the times' statistics
        statistics = [pq.ParquetFile(path).metadata.row_group(g).column(0).statistics for g in range(len(cuts) + 1)]
        assert all(s.has_min_max for s in statistics if s.num_values)


def test_a_constant_column_costs_the_same_bytes_whatever_its_rows(tmp_path):
    sizes = []
    for rows in (1_000, 100_000):
        path = tmp_path / f"{rows}.parquet"
        writer = _native.ParquetWriter(path, ["a"], ["int64"], [])
        writer.write([pa.array([42] * rows)], 0, rows)
        writer.close()
        column = pq.ParquetFile(path).metadata.row_group(0).column(0)
        assert "RLE_DICTIONARY" in column.encodings
        sizes.append(column.total_compressed_size)
    assert sizes[1] - sizes[0] <= 4  # the run's length: one more varint byte or two


def test_moving_columns_are_lz4_raw_pages_that_read_back(tmp_path):
    # Rows for three pages (131,072 rows each): a counter that steps and flags that flip, each page compressed.
    rows = 300_000
    counter = pa.array([i // 3 * 5 + (i % 3) for i in range(rows)], pa.int64())
    flags = pa.array([i % 1000 < 10 for i in range(rows)], pa.bool_())
    path = tmp_path / "x.parquet"
    writer = _native.ParquetWriter(path, ["counter", "flags"], ["int64", "boolean"], [])
    writer.write([counter, flags], 0, rows)
    writer.close()
    group = pq.ParquetFile(path).metadata.row_group(0)
    for i in range(2):
        # pyarrow's name for LZ4_RAW (the framed codec of Hadoop is LZ4_HADOOP); pure Rust, so the core builds anywhere.
        assert group.column(i).compression == "LZ4"
        assert group.column(i).total_compressed_size < group.column(i).total_uncompressed_size
    assert pq.read_table(path).equals(pa.table({"counter": counter, "flags": flags}))


def test_duckdb_reads_it_too(tmp_path):
    duckdb = require_module("duckdb")
    path = tmp_path / "x.parquet"
    start = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc)
    times = pa.array([start + dt.timedelta(seconds=i) for i in range(1000)], pa.timestamp("ms", "UTC"))
    values = pa.array([i * i if i % 7 else None for i in range(1000)], pa.int64())
    writer = _native.ParquetWriter(path, ["start", "v", "k"], ["timestamp", "int64", "int64"], ["start"])
    writer.write([times, values, pa.array([5] * 1000)], 0, 1000)
    writer.close()
    [got] = duckdb.sql(f"select count(*), count(v), sum(v), min(start), max(k) from read_parquet('{path}')").fetchall()
    assert got == (1000, 857, sum(i * i for i in range(1000) if i % 7), start, 5)


def test_a_column_of_another_type_is_refused(tmp_path):
    writer = _native.ParquetWriter(tmp_path / "x.parquet", ["a"], ["timestamp"], [])
    with pytest.raises(ValueError, match="a: not a column the Parquet writer takes"):
        writer.write([pa.array([1.5])], 0, 1)
    with pytest.raises(ValueError, match="holding the rows written"):
        writer.write([pa.array([1], pa.timestamp("ms", "UTC"))], 0, 2)
    # Taken as every Arrow array the core reads is (`python_arrow::capsules`): an object that is none is said so.
    with pytest.raises(TypeError, match="expected an Arrow array .* not list"):
        writer.write([[1]], 0, 1)


def test_an_error_of_the_file_says_its_errno_and_path(tmp_path):
    path = tmp_path / "no such folder" / "x.parquet"
    with pytest.raises(FileNotFoundError) as raised:
        _native.ParquetWriter(path, ["a"], ["int64"], [])
    assert raised.value.errno == errno.ENOENT and raised.value.filename == str(path)
