"""Analyses as Arrow tables of one published schema, for engines (Spark, DuckDB, polars, Dask, Ray).

    findings_table(path, logs=None) -> pyarrow.Table   one row per finding (FINDINGS_SCHEMA)
    incidents_table(path, logs=None) -> pyarrow.Table  one row per incident (INCIDENTS_SCHEMA), naming findings by id
    series_table(analysis)          -> pyarrow.Table   the derived series, one schema for every version

Types are the ones every engine takes: plain strings and lists (not large ones),
microsecond UTC timestamps, evidence as JSON text (its keys differ by kind),
culprits as a list of structs; an incident's chain and candidate causes as JSON. A node that cannot be read gives one row with
`error` set and no finding, instead of raising, so one bad node does not end a
fleet's job. `finding_of` turns a row back into a `Finding`.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import fields
from typing import Any, Iterable, Optional

import polars as pl
import pyarrow as pa

from ftdc.dataset import node_key
from ftdc.errors import FTDCError
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import NodeInfo
from ftdc.paths import PathArg, resolve
from ftdc.timeutil import TimeArg

from .analyze import Analysis, LogsArg, analyze
from .detectors.ticket_exhaustion import exhausted
from . import advice_text
from .findings import Culprit, Finding, jsonable
from .recommendation import Current, Recommendation
from .incidents import Incident
from .series import BOOKKEEPING, COLUMNS
from .thresholds import CACHE_PERCENTAGES

TIME = pa.timestamp("us", tz="UTC")
# A recommendation: its words and the structure they are rendered from (`analysis.recommendation`).
RECOMMENDATION = pa.struct([
    ("text", pa.string()), ("action", pa.string()), ("what", pa.string()), ("setting", pa.string()),
    ("current", pa.struct([("value", pa.float64()), ("unit", pa.string()), ("source", pa.string()), ("origin", pa.string())])),
    ("proposed", pa.float64()), ("why", pa.string()), ("target", pa.string()), ("operation", pa.string()), ("command", pa.string()),
    ("caveat", pa.string()), ("findings", pa.list_(pa.string())),
])
CULPRIT = pa.struct([
    ("ns", pa.string()), ("plan_summary", pa.string()), ("shape", pa.string()), ("query_hash", pa.string()), ("count", pa.int64()),
    ("overlap_s", pa.float64()), ("share", pa.float64()), ("max_ms", pa.int64()), ("example", pa.string()), ("collscan", pa.bool_()),
    ("command", pa.string()), ("held_s", pa.float64()), ("first_started", TIME), ("last_ended", TIME),
    ("recommendations", pa.list_(RECOMMENDATION)), ("failed", pa.int64()), ("error", pa.string()),
])
FINDINGS_SCHEMA = pa.schema([
    ("node", pa.string()),  # the node's stable key (ftdc.dataset.node_key); null for a replica set's finding
    ("address", pa.string()),
    ("replica_set", pa.string()),
    ("version", pa.string()),
    ("scope", pa.string()),  # "node" | "replica_set" (elections and lag, merged across members)
    ("id", pa.string()),  # unique within the node's (or the replica set's) findings; incidents name findings by it
    ("kind", pa.string()),
    ("severity", pa.string()),
    ("resource", pa.string()),
    ("start", TIME),
    ("end", TIME),
    ("title", pa.string()),
    ("explanation", pa.string()),
    ("evidence", pa.string()),  # JSON object
    ("culprits", pa.list_(CULPRIT)),
    ("causes", pa.list_(CULPRIT)),  # the culprits attribution names as the cause
    ("recommendations", pa.list_(RECOMMENDATION)),
    ("error", pa.string()),  # why the node could not be analysed; every finding field null then
])
INCIDENTS_SCHEMA = pa.schema([
    ("node", pa.string()), ("address", pa.string()), ("replica_set", pa.string()), ("version", pa.string()),
    ("id", pa.string()),
    ("severity", pa.string()),
    ("start", TIME),
    ("end", TIME),
    ("title", pa.string()),  # cause -> effect
    ("root_cause_kind", pa.string()),
    ("root_cause", pa.string()),
    ("root_cause_evidence", pa.string()),  # JSON object
    ("chain", pa.string()),  # JSON list of steps: kind, text, findings (ids), start, end, metrics, thresholds
    ("candidates", pa.string()),  # JSON list of the other root causes considered, in rank order
    ("findings", pa.list_(pa.string())),  # ids of the findings folded in (FINDINGS_SCHEMA.id of the same node)
    ("recommendations", pa.list_(RECOMMENDATION)),
    ("error", pa.string()),
])


def spark_ddl(schema: pa.Schema) -> str:
    """The schema as a Spark DDL string (for mapInArrow, applyInArrow, spark.read.schema)."""
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in schema)


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"`{f.name}`: {_spark_type(f.type)}" for f in t) + ">"
    if pa.types.is_list(t):
        return f"array<{_spark_type(t.value_type)}>"
    simple = {pa.string(): "string", pa.int64(): "bigint", pa.float64(): "double", pa.bool_(): "boolean", TIME: "timestamp",
              pa.binary(): "binary", pa.date32(): "date"}
    return simple[t]


FINDINGS_DDL = spark_ddl(FINDINGS_SCHEMA)
INCIDENTS_DDL = spark_ddl(INCIDENTS_SCHEMA)


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"not JSON: {type(value).__name__}")


def _json(value: Any) -> str:
    return json.dumps(value, default=_json_default, sort_keys=True)


def _advice(recommendations: list[Recommendation]) -> list[dict[str, Any]]:
    return [advice_text.as_dict(r) for r in recommendations]


def _culprits(culprits: list[Culprit]) -> list[dict[str, Any]]:
    return [{**{c.name: getattr(culprit, c.name) for c in fields(Culprit)}, "recommendations": _advice(culprit.recommendations)} for culprit in culprits]


def _node_columns(info: NodeInfo, key: Optional[str]) -> dict[str, Any]:
    return {"node": key, "address": info.address, "replica_set": info.replica_set, "version": info.version}


def finding_rows(findings: Iterable[Finding], info: NodeInfo, key: Optional[str], scope: str = "node") -> list[dict[str, Any]]:
    return [{
        **_node_columns(info, key), "scope": scope, "id": f.id,
        "kind": f.kind, "severity": f.severity, "resource": f.resource, "start": f.start, "end": f.end, "title": f.title,
        "explanation": f.explanation, "evidence": _json(f.evidence), "culprits": _culprits(f.culprits), "causes": _culprits(f.causes),
        "recommendations": _advice(f.recommendations), "error": None,
    } for f in findings]


def incident_rows(incidents: Iterable[Incident], info: NodeInfo, key: Optional[str]) -> list[dict[str, Any]]:
    return [{
        **_node_columns(info, key), "id": i.id, "severity": i.severity, "start": i.start, "end": i.end, "title": i.title,
        "root_cause_kind": i.root_cause.kind, "root_cause": i.root_cause.summary, "root_cause_evidence": _json(i.root_cause.evidence),
        "chain": _json(jsonable(i.chain)), "candidates": _json(jsonable(i.candidates)),
        "findings": list(i.finding_ids), "recommendations": _advice(i.recommendations), "error": None,
    } for i in incidents]


def to_table(rows: list[dict[str, Any]], schema: pa.Schema = FINDINGS_SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def error_table(path: PathArg, error: BaseException, schema: pa.Schema = FINDINGS_SCHEMA) -> pa.Table:
    """One row: the node that could not be read, and why."""
    return to_table([{"scope": "node", "error": str(error) if str(path) in str(error) else f"{path}: {error}"}], schema)


def analysis_key(analysis: Analysis, path: PathArg) -> str:
    return node_key(analysis.node, resolve(path))


def findings_table(path: PathArg, logs: LogsArg = None, *, start: TimeArg = None, end: TimeArg = None) -> pa.Table:
    """One node's findings (`analyze`) in FINDINGS_SCHEMA; a node that cannot be read is one `error` row."""
    try:
        analysis = analyze(path, logs, start=start, end=end)
    except (FTDCError, OSError, ValueError) as e:
        return error_table(path, e)
    return to_table(finding_rows(analysis.findings, analysis.node, analysis_key(analysis, path)))


def incidents_table(path: PathArg, logs: LogsArg = None, *, start: TimeArg = None, end: TimeArg = None) -> pa.Table:
    """One node's incidents (`Analysis.incidents`) in INCIDENTS_SCHEMA; a node that cannot be read is one `error` row."""
    try:
        analysis = analyze(path, logs, start=start, end=end)
    except (FTDCError, OSError, ValueError) as e:
        return error_table(path, e, INCIDENTS_SCHEMA)
    return to_table(incident_rows(analysis.incidents, analysis.node, analysis_key(analysis, path)), INCIDENTS_SCHEMA)


def _time(value: Any) -> Optional[dt.datetime]:
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(value)


def _recommendations(rows: Optional[list[dict[str, Any]]]) -> list[Recommendation]:
    """RECOMMENDATION rows as `Recommendation`s again (the text is rendered from them, so it is left)."""
    out = []
    for row in rows or []:
        fields_ = {k: v for k, v in row.items() if k not in ("text", "current", "findings")}
        current = Current(**row["current"]) if row.get("current") else None
        out.append(Recommendation(**{**fields_, "why": fields_.get("why") or ""}, current=current, findings=tuple(row.get("findings") or ())))
    return out


def finding_of(row: dict[str, Any]) -> Finding:
    """A FINDINGS_SCHEMA row (as `to_pylist` gives it) as a `Finding` again."""
    def culprits(column: str) -> list[Culprit]:
        return [Culprit(**{**c, "first_started": _time(c["first_started"]), "last_ended": _time(c["last_ended"]),
                           "recommendations": _recommendations(c["recommendations"])}) for c in row[column] or []]

    return Finding(kind=row["kind"], severity=row["severity"], start=row["start"], end=row["end"], title=row["title"],
                   explanation=row["explanation"], evidence=json.loads(row["evidence"]), culprits=culprits("culprits"),
                   recommendations=_recommendations(row["recommendations"]), resource=row["resource"], causes=culprits("causes"), id=row["id"] or "")


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


def series_table(analysis: Analysis) -> pa.Table:
    """`analysis.series` in SERIES_SCHEMA (sorted by time)."""
    frame = analysis.series
    version = analysis.node.version
    flags = {f"{rw}_tickets_exhausted": exhausted(frame.columns, version, rw) for rw in ("read", "write")}
    frame = frame.with_columns((e.fill_null(False) if e is not None else pl.lit(None, pl.Boolean)).alias(n) for n, e in flags.items())
    dtype = lambda f: pl.Boolean if pa.types.is_boolean(f.type) else pl.Float64  # noqa: E731
    exprs = [pl.col(f.name).cast(dtype(f)) if f.name in frame.columns else pl.lit(None, dtype(f)).alias(f.name)
             for f in SERIES_SCHEMA if f.name != TIME_COLUMN]
    out = frame.sort(TIME_COLUMN).select(pl.col(TIME_COLUMN).dt.cast_time_unit("us"), *exprs)
    return out.to_arrow().cast(SERIES_SCHEMA)
