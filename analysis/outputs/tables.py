"""Analyses as Arrow tables of one published schema, for engines (Spark, DuckDB, polars, Dask, Ray).

    findings_table(path, logs=None) -> pyarrow.Table   one row per finding (FINDINGS_SCHEMA)
    incidents_table(path, logs=None) -> pyarrow.Table  one row per incident (INCIDENTS_SCHEMA), naming findings by id
    series_table(analysis)          -> pyarrow.Table   the derived series, one schema for every version

The schemas and rows are `analysis.outputs.schema`'s (one per table). A node that cannot be read gives
one row with `error` set and no finding, instead of raising, so one bad node does not end a
fleet's job.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from analysis.findings.detectors.ticket_exhaustion import exhausted
from analysis.nodes import analyze
from analysis.observe import Analysis, LogsArg
from analysis.outputs.schema import (  # noqa: F401  (the published names: fleet jobs and users import them from here)
    CULPRIT,
    FINDINGS_DDL,
    FINDINGS_SCHEMA,
    INCIDENTS_DDL,
    INCIDENTS_SCHEMA,
    RECOMMENDATION,
    TIME,
    finding_of,
    finding_rows,
    incident_rows,
    spark_ddl,
    to_table,
)
from analysis.series.derived import BOOKKEEPING, COLUMNS
from analysis.settings import CACHE_PERCENTAGES
from ftdc.dataset import node_key
from ftdc.errors import FTDCError
from ftdc.frames import TIME_COLUMN
from ftdc.paths import PathArg, resolve
from ftdc.timeutil import TimeArg


def error_table(path: PathArg, error: BaseException, schema: pa.Schema = FINDINGS_SCHEMA) -> pa.Table:
    """One row: the node that could not be read, and why."""
    return to_table([{"scope": "node", "error": str(error) if str(path) in str(error) else f"{path}: {error}"}], schema)


def analysis_key(analysis: Analysis, path: PathArg) -> str:
    return node_key(analysis.result.node, resolve(path))


def findings_table(path: PathArg, logs: LogsArg = None, *, start: TimeArg = None, end: TimeArg = None) -> pa.Table:
    """One node's findings (`analyze`) in FINDINGS_SCHEMA; a node that cannot be read is one `error` row."""
    try:
        analysis = analyze(path, logs, start=start, end=end)
    except (FTDCError, OSError, ValueError) as e:
        return error_table(path, e)
    return to_table(finding_rows(analysis.result.findings, analysis.result.node, analysis_key(analysis, path)))


def incidents_table(path: PathArg, logs: LogsArg = None, *, start: TimeArg = None, end: TimeArg = None) -> pa.Table:
    """One node's incidents (`Result.incidents`) in INCIDENTS_SCHEMA; a node that cannot be read is one `error` row."""
    try:
        analysis = analyze(path, logs, start=start, end=end)
    except (FTDCError, OSError, ValueError) as e:
        return error_table(path, e, INCIDENTS_SCHEMA)
    return to_table(
        incident_rows(analysis.result.incidents, analysis.result.node, analysis_key(analysis, path)), INCIDENTS_SCHEMA
    )


# The derived series in one schema for every version: what a version lacks is null.
# Per-device and per-member columns vary by node: they are in the findings' evidence.
# `<rw>_tickets_exhausted`: the ticket_exhaustion detector's test at each sample (no ticket
# available, and from 7.0 work queued for one).
SERIES_FLAGS = ("restart", "gap", "valid", "read_tickets_exhausted", "write_tickets_exhausted")
SERIES_SCHEMA = pa.schema(
    [(TIME_COLUMN, TIME)]
    + [(name, pa.bool_() if name in SERIES_FLAGS else pa.float64()) for name in BOOKKEEPING]
    + [(c.name, pa.float64()) for c in COLUMNS]
    + [(f"{name}_pct", pa.float64()) for name in CACHE_PERCENTAGES]
    + [(f"{rw}_tickets_exhausted", pa.bool_()) for rw in ("read", "write")]
)


def findings_frame(analysis: Analysis) -> pl.DataFrame:
    """An analysis' findings as a frame of `FINDINGS_SCHEMA` (the fleet's and Spark's table, node key unset)."""
    return pl.DataFrame(to_table(finding_rows(analysis.result.findings, analysis.result.node, None), FINDINGS_SCHEMA))


def incidents_frame(analysis: Analysis) -> pl.DataFrame:
    """An analysis' incidents as a frame of `INCIDENTS_SCHEMA`."""
    return pl.DataFrame(to_table(incident_rows(analysis.result.incidents, analysis.result.node, None), INCIDENTS_SCHEMA))


def series_table(analysis: Analysis) -> pa.Table:
    """`analysis.series.derived` in SERIES_SCHEMA (sorted by time)."""
    frame = analysis.evidence.series
    version = analysis.result.node.version
    flags = {f"{rw}_tickets_exhausted": exhausted(frame.columns, version, rw) for rw in ("read", "write")}
    frame = frame.with_columns(
        (e.fill_null(False) if e is not None else pl.lit(None, pl.Boolean)).alias(n) for n, e in flags.items()
    )
    dtype = lambda f: pl.Boolean if pa.types.is_boolean(f.type) else pl.Float64  # noqa: E731
    exprs = [
        pl.col(f.name).cast(dtype(f)) if f.name in frame.columns else pl.lit(None, dtype(f)).alias(f.name)
        for f in SERIES_SCHEMA
        if f.name != TIME_COLUMN
    ]
    out = frame.sort(TIME_COLUMN).select(pl.col(TIME_COLUMN).dt.cast_time_unit("us"), *exprs)
    return out.to_arrow().cast(SERIES_SCHEMA)
