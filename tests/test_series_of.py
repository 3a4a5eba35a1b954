"""`ftdc.frames.series_of`: a numpy array of numbers as a polars Series through Arrow is the Series polars makes of it
(its type, its nulls, its values to the bit), without polars' numpy path and the numpy.ma it imports."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ftdc.frames import series_of

ARRAYS = st.one_of(
    hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(allow_nan=True, allow_infinity=True, width=64)),
    hnp.arrays(np.int64, st.integers(0, 40)),
    hnp.arrays(np.uint32, st.integers(0, 40)),
)


@given(ARRAYS, st.integers(1, 3), st.booleans())
def test_a_series_of_an_array_is_polars_own_to_the_bit(values, step, nan_to_null):
    values = values[::step]  # strided views too
    got, want = series_of(values, "x", nan_to_null=nan_to_null), pl.Series("x", values, nan_to_null=nan_to_null)
    assert got.name == want.name and got.dtype == want.dtype and got.len() == want.len()
    assert got.is_null().to_list() == want.is_null().to_list()
    # Bits, not values: NaN's and -0.0's own.
    assert got.drop_nulls().to_numpy().tobytes() == want.drop_nulls().to_numpy().tobytes()


@pytest.mark.parametrize("values", [np.zeros((2, 2)), np.array([True, False]), np.array([1.0], dtype=">f8"), np.array(["a"])])
def test_what_it_cannot_share_is_refused(values):
    with pytest.raises(ValueError, match="not a one-dimensional array of numbers"):
        series_of(values)
