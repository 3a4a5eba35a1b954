"""A decoded log block's columns cross into Python as Arrow arrays (the PyCapsule interface), never as addresses:
each owns its buffers, so it outlives the block and a column nobody asked for is freed with its object."""

import gc
import json

import polars as pl
import pyarrow as pa
import pytest

from ftdc import _native
from ftdc.logs.json_lines import native_frame


def _lines(n: int) -> bytes:
    def line(i: int) -> str:
        attr = {"type": "command", "ns": "db.c", "command": {"find": "c", "filter": {"n": i}}, "durationMillis": 100 + i}
        envelope = {"t": {"$date": "2024-01-02T03:04:05.000Z"}, "s": "I", "c": "COMMAND", "id": 51803, "ctx": "conn7"}
        return json.dumps({**envelope, "msg": "Slow query", "attr": attr | ({"appName": "app é" * i} if i % 2 else {})})

    return ("\n".join(line(i) for i in range(n)) + "\n").encode()


def test_a_blocks_columns_are_arrow_arrays_that_outlive_it():
    data = _lines(50)
    block = _native.decode_log_block(data, len(data), 1, [])
    [(rows, columns)] = block.slow_ops()
    assert rows == 50 and block.slow_ops() == []  # handed over once
    arrays = {name: pa.array(column) for name, column in columns}
    del block, columns
    gc.collect()
    assert arrays["duration_ms"].to_pylist() == [100 + i for i in range(50)]
    assert arrays["line"].to_pylist() == list(range(1, 51))
    assert arrays["app_name"].type == pa.string_view()
    assert arrays["app_name"].to_pylist() == [("app é" * i if i % 2 else None) for i in range(50)]  # inline and in buffers
    assert arrays["write_statement"].to_pylist() == [False] * 50
    # Columns null in every row share one buffer of zeros, in place of their own.
    empty = [a for name, a in arrays.items() if a.null_count == 50]
    assert len(empty) > 10 and len({a.buffers()[1].address for a in empty if a.type != pa.bool_()}) == 1


def test_a_frame_of_the_columns_keeps_them_after_the_block_and_its_objects_are_gone():
    data = _lines(2000)
    block = _native.decode_log_block(data, len(data), 1, [])
    frame = native_frame(
        [(rows, [(n, c) for n, c in columns if n in ("ns", "duration_ms", "shape")]) for rows, columns in block.slow_ops()]
    )
    del block
    gc.collect()
    assert sorted(frame.columns) == ["duration_ms", "ns", "shape"] and frame.height == 2000
    assert frame["duration_ms"].sum() == sum(100 + i for i in range(2000))
    assert frame["shape"].unique().to_list() == ['{"filter":{"n":1}}']
    assert frame.schema["ns"] == pl.String


@pytest.mark.parametrize("method", ["slow_ops", "events"])
def test_no_address_crosses(method):
    data = _lines(3)
    block = _native.decode_log_block(data, len(data), 1, [])
    for _, columns in getattr(block, method)():
        for name, column in columns:
            assert isinstance(name, str) and not isinstance(column, int) and hasattr(column, "__arrow_c_array__")
