"""What FTDC files hold, without decoding metric values: documents, chunks,
metric names with their types and the time span each was seen in."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property

import polars as pl

from . import _native
from .errors import FTDCWarning, Problem, require_documents
from .frames import TIME_COLUMN, Dtype
from .paths import FtdcFile, PathArg, resolve
from .timeutil import outside_python_range

TIME_DTYPE = pl.Datetime("ms", "UTC")
# A metric's kind in the native layouts (one byte each), and a name whose kinds disagree between chunks: the
# decoder yields int64.
KIND_DTYPES: dict[int, pl.DataType] = {0: pl.Int64(), 1: pl.Boolean(), 2: TIME_DTYPE, -1: pl.Int64()}

_DOCUMENT_SCHEMA: dict[str, Dtype] = {
    "file": pl.String,
    "offset": pl.Int64,
    "type": pl.Int64,
    "_id": TIME_DTYPE,
    "count": pl.Int64,
    "doc": pl.Binary,
}
_CHUNK_SCHEMA: dict[str, Dtype] = {
    "file": pl.String,
    "offset": pl.Int64,
    "_id": TIME_DTYPE,
    "samples": pl.Int64,
    "metrics": pl.Int64,
    "layout": pl.Int64,
    "first": TIME_DTYPE,
    "last": TIME_DTYPE,
}


@dataclass(frozen=True)
class Catalog:
    files: list[FtdcFile]
    documents: pl.DataFrame
    """One row per BSON document: file, offset, type, _id, count, and the raw `doc` of types 0 and 2."""
    chunks: pl.DataFrame
    """One row per readable metric chunk: samples, metric count, layout id, first/last sample time."""
    layouts: _native.Layouts
    """Metric names and their kinds (one byte each) of each distinct chunk structure, in first-seen order: a sequence
    of `(names, kinds)`, held in the native core until one is asked for."""
    problems: list[Problem]
    """What was damaged and skipped, each once."""

    def schema(self) -> dict[str, pl.DataType]:
        """Columns `read_ftdc` would return for all chunks: `start`, then metrics in first-seen order."""
        return dict(self._schema)

    @cached_property
    def _schema(self) -> dict[str, pl.DataType]:
        # Worked out once a catalog (an analysis asks three times: whether time can split the chunks, which metrics
        # stand for what, how many the overview names), from the layouts the chunks hold, in the native core
        # (`Layouts.union`): their tens of thousands of names are never made Python strings.
        names, kinds = self.layouts.union(self.chunks["layout"].unique(maintain_order=True).to_list(), TIME_COLUMN)
        return {name: KIND_DTYPES[kind] for name, kind in zip(names, kinds)}


def catalog_files(files: list[FtdcFile], time_field: str = TIME_COLUMN) -> Catalog:
    raw = _native.catalog([str(f.path) for f in files], [f.interim for f in files], time_field)
    catalog = catalog_of(files, raw)
    require_documents(files, len(raw["documents"]), catalog.problems)
    for problem in catalog.problems:
        warnings.warn(str(problem), FTDCWarning, stacklevel=3)
    return catalog


def catalog_of(files: list[FtdcFile], raw: _native.CatalogDict) -> Catalog:
    """The `Catalog` of the native catalog's lists (`_native.catalog`, or a read's `DecodedFrame.catalog()`);
    its problems are the caller's to report."""
    return Catalog(
        files=files,
        documents=_without_impossible_times(pl.DataFrame(raw["documents"], schema=_DOCUMENT_SCHEMA, orient="row"), ["_id"]),
        chunks=_without_impossible_times(
            pl.DataFrame(raw["chunks"], schema=_CHUNK_SCHEMA, orient="row"), ["_id", "first", "last"]
        ),
        layouts=raw["layouts"],
        problems=[Problem.from_native(p) for p in raw["problems"]],
    )


def _without_impossible_times(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """`frame` with times outside years 1-9999 (damage) made null, each document named in a warning."""
    bad = pl.any_horizontal(outside_python_range(pl.col(c)) for c in columns)
    damaged = frame.filter(bad).select("file", "offset")
    for file, offset in damaged.iter_rows():
        warnings.warn(f"{file}: offset {offset}: a date outside years 1-9999: ignored", FTDCWarning, stacklevel=4)
    if damaged.is_empty():
        return frame
    return frame.with_columns(pl.when(~outside_python_range(pl.col(c))).then(pl.col(c)).alias(c) for c in columns)


def read_catalog(path: PathArg, *, time_field: str = TIME_COLUMN) -> Catalog:
    """Documents, chunks and metric layouts of `path`, inflating only reference documents."""
    return catalog_files(resolve(path), time_field)


def list_metrics(path: PathArg, *, time_field: str = TIME_COLUMN) -> pl.DataFrame:
    """Every metric name with its dtype and the first/last sample time it was seen in."""
    cat = read_catalog(path, time_field=time_field)
    spans = cat.chunks.group_by("layout").agg(pl.col("first").min(), pl.col("last").max())
    rows = [(layout, position, name) for layout, (names, _) in enumerate(cat.layouts) for position, name in enumerate(names)]
    names = pl.DataFrame(rows, schema={"layout": pl.Int64, "position": pl.Int64, "name": pl.String}, orient="row")
    schema = cat.schema()
    return (
        names.join(spans, on="layout")
        .join(cat.chunks.select("layout").unique(maintain_order=True).with_row_index("seen"), on="layout")
        .sort("seen", "position")
        .group_by("name", maintain_order=True)
        .agg(first_seen=pl.col("first").min(), last_seen=pl.col("last").max())
        .with_columns(dtype=pl.col("name").replace_strict({n: str(d) for n, d in schema.items()}, default="Int64"))
        .select("name", "dtype", "first_seen", "last_seen")
    )
