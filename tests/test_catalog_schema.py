"""`Catalog.schema`: the columns a read of every chunk returns, told from the layouts alone. A metric's type is
its kind's while every layout holding it agrees, int64 once two disagree (what the decoder yields), and the
columns come in the order their names were first seen, the time first."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ftdc import _native
from ftdc.catalog import TIME_DTYPE, Catalog
from ftdc.frames import TIME_COLUMN

NAMES = st.sampled_from(["a", "b", "c.d", "e", TIME_COLUMN])
LAYOUT = st.lists(st.tuples(NAMES, st.sampled_from([0, 1, 2])), unique_by=lambda pair: pair[0], max_size=5)
DTYPES = {0: pl.Int64, 1: pl.Boolean, 2: TIME_DTYPE}


@given(st.lists(LAYOUT, min_size=1, max_size=4), st.data())
def test_a_metric_takes_its_kind_or_int64_where_layouts_disagree(layouts, data):
    order = data.draw(st.lists(st.integers(0, len(layouts) - 1), min_size=1, max_size=8))
    catalog = Catalog(
        files=[],
        documents=pl.DataFrame(),
        chunks=pl.DataFrame({"layout": order}, schema={"layout": pl.Int64}),
        layouts=_native.Layouts([([name for name, _ in layout], bytes(kind for _, kind in layout)) for layout in layouts]),
        problems=[],
    )
    seen = list(dict.fromkeys(order))
    held = [pair for layout_index in seen for pair in layouts[layout_index] if pair[0] != TIME_COLUMN]
    names = list(dict.fromkeys(name for name, _ in held))
    kinds = {name: {kind for other, kind in held if other == name} for name in names}
    expected = {TIME_COLUMN: TIME_DTYPE} | {
        name: DTYPES[next(iter(kinds[name]))] if len(kinds[name]) == 1 else pl.Int64 for name in names
    }
    schema = catalog.schema()
    assert list(schema) == list(expected)
    assert all(schema[name] == dtype for name, dtype in expected.items())


def test_layouts_read_as_a_sequence_of_names_and_kinds_and_refuse_what_they_do_not_hold():
    pairs = [(["start", "a"], bytes([2, 0])), (["start", "b", "a"], bytes([2, 1, 1]))]
    layouts = _native.Layouts(pairs)
    assert len(layouts) == 2 and list(layouts) == pairs and layouts[-1] == pairs[1]
    assert layouts == _native.Layouts(pairs) and layouts != _native.Layouts(pairs[:1])
    assert layouts.union([1, 0], TIME_COLUMN) == (["start", "b", "a"], [2, 1, -1])
    with pytest.raises(IndexError):
        layouts[2]
    with pytest.raises(IndexError, match="layout 2 of 2"):
        layouts.union([0, 2], TIME_COLUMN)
