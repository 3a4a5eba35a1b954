"""Native column buffers to polars, and polars columns to the native core, without copying the values."""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import TYPE_CHECKING, cast

import polars as pl
from polars.datatypes import DataTypeClass

from .decoding import TIME_COLUMN
from .errors import FTDCWarning, Problem

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from . import _native

# A column's type as a schema spells it: a class (pl.String) or an instance (pl.Datetime("ms", "UTC")).
Dtype = DataTypeClass | pl.DataType
_BOOL, DATE_KIND = 1, 2  # column kinds of the decoder (0 int64, 1 bool, 2 Date)


def to_polars(decoded: _native.DecodedFrame) -> pl.DataFrame:
    """A frame with `start` first, then the metrics in first-seen order."""
    # Imported here: every module takes TIME_COLUMN from this one, and only a decode needs Arrow.
    import pyarrow as pa

    # Each column crosses as an Arrow array by the PyCapsule interface: its buffers stay the decoder's, kept alive
    # until the array is dropped.
    names = [TIME_COLUMN]
    arrays = [pa.array(decoded.time())]
    bools = []
    for name, kind, column in decoded.columns():
        if name == TIME_COLUMN:
            continue
        names.append(name)
        arrays.append(pa.array(column))
        if kind == _BOOL:
            bools.append(name)
    frame = cast(pl.DataFrame, pl.from_arrow(pa.Table.from_arrays(arrays, names=names), rechunk=False))  # a table: a frame
    if bools:
        frame = frame.with_columns(pl.col(bools).cast(pl.Boolean))
    return frame


# The column types the native core reads where polars holds them (Arrow arrays, by the PyCapsule interface); a column
# of another type is cast to Float64 first.
IN_PLACE = (pl.Int64, pl.Float64)


def arrow_chunks(frame: pl.DataFrame) -> dict[str, list[pa.Array]]:
    """Each column of `frame` as the Arrow arrays polars holds it in, without a copy. A frame goes to Arrow in one call
    (a Series' own costs 0.1 ms each), but as record batches: columns cut into chunks of other lengths (a `diff`'s
    two) would be copied into one, so the columns go by the lengths of their chunks."""
    alike: dict[tuple[int, ...], list[str]] = {}
    for name in frame.columns:
        alike.setdefault(tuple(frame[name].chunk_lengths()), []).append(name)
    chunks = {}
    for names in alike.values():
        table = frame.select(names).to_arrow()
        chunks.update({name: table.column(name).chunks for name in names})
    return chunks


def series_of(values: np.ndarray, name: str = "", *, nan_to_null: bool = False) -> pl.Series:
    """A one-dimensional numpy array of numbers as a polars Series, its memory shared through Arrow: polars' own path
    from numpy looks for a mask first, which imports numpy.ma (10 ms of a small run), and `pyarrow.array` looks for
    pandas, in a process that has no other use for either. `nan_to_null` as polars' has it."""
    import numpy as np
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iuf" or not values.dtype.isnative:
        raise ValueError(f"not a one-dimensional array of numbers: {values.dtype}, {values.ndim} dimensions")
    array = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])
    # As a table, as `to_polars` hands the decoder's columns over: polars takes a lone array through pyarrow.compute,
    # whose import (250 functions wrapped, their documentation parsed) costs more than numpy.ma.
    series = cast(pl.DataFrame, pl.from_arrow(pa.Table.from_arrays([array], names=[name]), rechunk=False)).to_series()
    return series.fill_nan(None) if nan_to_null and values.dtype.kind == "f" else series


def problems_of(decoded: _native.DecodedFrame) -> list[Problem]:
    return [Problem.from_native(p) for p in decoded.problems]


def report_problems(decoded: _native.DecodedFrame, time_field: str, reported: Collection[Problem] = ()) -> None:
    """Every damaged document becomes one warning naming its file and offset, unless
    `reported` (a catalog's problems: the catalog checks chunks as the decoder does)
    has already said so."""
    for problem in problems_of(decoded):
        if problem not in reported:
            warnings.warn(str(problem), FTDCWarning, stacklevel=3)
    if decoded.chunks_without_time:
        warnings.warn(
            f"{decoded.chunks_without_time} chunk(s) have no Date field {time_field!r} at the root; "
            "their samples are timed by the chunk _id (pass time_field= to name another Date field)",
            FTDCWarning,
            stacklevel=3,
        )
