"""The one schema of each table of analyses (findings, incidents), its rows, and its Spark DDL.

Types every engine takes: plain strings and lists (not large ones), microsecond UTC
timestamps, evidence as JSON text (its keys differ by kind), culprits and recommendations
as lists of structs; an incident's chain and candidate causes as JSON. `analysis.findings_frame`,
`findings_table`, the fleet's Parquet and Spark all use these; `finding_of` turns a row back
into a `Finding`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import fields
from typing import Any

import pyarrow as pa

from analysis.advice import wording
from analysis.advice.recommendation import Current, Recommendation
from analysis.findings.finding import Culprit, Finding, jsonable, top_culprit
from analysis.incidents.incident import Incident
from ftdc.metadata import NodeInfo

TIME = pa.timestamp("us", tz="UTC")
# A recommendation: its words and the structure they are rendered from (`analysis.advice.recommendation`).
RECOMMENDATION = pa.struct(
    [
        ("text", pa.string()),
        ("action", pa.string()),
        ("what", pa.string()),
        ("setting", pa.string()),
        (
            "current",
            pa.struct([("value", pa.float64()), ("unit", pa.string()), ("source", pa.string()), ("origin", pa.string())]),
        ),
        ("proposed", pa.float64()),
        ("why", pa.string()),
        ("target", pa.string()),
        ("operation", pa.string()),
        ("command", pa.string()),
        ("caveat", pa.string()),
        ("findings", pa.list_(pa.string())),
    ]
)
CULPRIT = pa.struct(
    [
        ("ns", pa.string()),
        ("plan_summary", pa.string()),
        ("shape", pa.string()),
        ("query_hash", pa.string()),
        ("count", pa.int64()),
        ("overlap_s", pa.float64()),
        ("share", pa.float64()),
        ("max_ms", pa.int64()),
        ("example", pa.string()),
        ("collscan", pa.bool_()),
        ("command", pa.string()),
        ("held_s", pa.float64()),
        ("first_started", TIME),
        ("last_ended", TIME),
        ("recommendations", pa.list_(RECOMMENDATION)),
        ("failed", pa.int64()),
        ("error", pa.string()),
    ]
)
FINDINGS_SCHEMA = pa.schema(
    [
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
        ("top_culprit", pa.string()),  # the first culprit in one phrase
        ("evidence", pa.string()),  # JSON object
        ("culprits", pa.list_(CULPRIT)),
        ("causes", pa.list_(CULPRIT)),  # the culprits attribution names as the cause
        ("recommendations", pa.list_(RECOMMENDATION)),
        ("withheld", pa.string()),  # JSON list of the advice the validator refused, each with its reason
        ("error", pa.string()),  # why the node could not be analysed; every finding field null then
    ]
)
INCIDENTS_SCHEMA = pa.schema(
    [
        ("node", pa.string()),
        ("address", pa.string()),
        ("replica_set", pa.string()),
        ("version", pa.string()),
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
        ("withheld", pa.string()),  # JSON list of the advice the validator refused, each with its reason
        ("error", pa.string()),
    ]
)


def spark_ddl(schema: pa.Schema) -> str:
    """The schema as a Spark DDL string (for mapInArrow, applyInArrow, spark.read.schema)."""
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in schema)


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"`{f.name}`: {_spark_type(f.type)}" for f in t) + ">"
    if pa.types.is_list(t):
        return f"array<{_spark_type(t.value_type)}>"
    simple = {
        pa.string(): "string",
        pa.int64(): "bigint",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        TIME: "timestamp",
        pa.binary(): "binary",
        pa.date32(): "date",
    }
    return simple[t]


FINDINGS_DDL = spark_ddl(FINDINGS_SCHEMA)
INCIDENTS_DDL = spark_ddl(INCIDENTS_SCHEMA)


def _json(value: Any) -> str:
    return json.dumps(jsonable(value), sort_keys=True)


def _advice(recommendations: list[Recommendation]) -> list[dict[str, Any]]:
    return [wording.as_dict(r) for r in recommendations]


def _culprits(culprits: list[Culprit]) -> list[dict[str, Any]]:
    return [
        {**{c.name: getattr(culprit, c.name) for c in fields(Culprit)}, "recommendations": _advice(culprit.recommendations)}
        for culprit in culprits
    ]


def _node_columns(info: NodeInfo, key: str | None) -> dict[str, Any]:
    return {"node": key, "address": info.address, "replica_set": info.replica_set, "version": info.version}


def finding_rows(findings: Iterable[Finding], info: NodeInfo, key: str | None, scope: str = "node") -> list[dict[str, Any]]:
    return [
        {
            **_node_columns(info, key),
            "scope": scope,
            "id": f.id,
            "kind": f.kind,
            "severity": f.severity,
            "resource": f.resource,
            "start": f.start,
            "end": f.end,
            "title": f.title,
            "explanation": f.explanation,
            "top_culprit": top_culprit(f),
            "evidence": _json(f.evidence),
            "culprits": _culprits(f.culprits),
            "causes": _culprits(f.causes),
            "recommendations": _advice(f.recommendations),
            "withheld": _json(f.withheld),
            "error": None,
        }
        for f in findings
    ]


def incident_rows(incidents: Iterable[Incident], info: NodeInfo, key: str | None) -> list[dict[str, Any]]:
    return [
        {
            **_node_columns(info, key),
            "id": i.id,
            "severity": i.severity,
            "start": i.start,
            "end": i.end,
            "title": i.title,
            "root_cause_kind": i.root_cause.kind,
            "root_cause": i.root_cause.summary,
            "root_cause_evidence": _json(i.root_cause.evidence),
            "chain": _json(jsonable(i.chain)),
            "candidates": _json(jsonable(i.candidates)),
            "findings": list(i.finding_ids),
            "recommendations": _advice(i.recommendations),
            "withheld": _json(i.withheld),
            "error": None,
        }
        for i in incidents
    ]


def to_table(rows: list[dict[str, Any]], schema: pa.Schema = FINDINGS_SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def _time(value: Any) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(value)


def _recommendations(rows: list[dict[str, Any]] | None) -> list[Recommendation]:
    """RECOMMENDATION rows as `Recommendation`s again (the text is rendered from them, so it is left)."""
    out = []
    for row in rows or []:
        fields_ = {k: v for k, v in row.items() if k not in ("text", "current", "findings")}
        current = Current(**row["current"]) if row.get("current") else None
        out.append(
            Recommendation(
                **{**fields_, "why": fields_.get("why") or ""}, current=current, findings=tuple(row.get("findings") or ())
            )
        )
    return out


def finding_of(row: dict[str, Any]) -> Finding:
    """A FINDINGS_SCHEMA row (as `to_pylist` gives it) as a `Finding` again. A row holds the title and explanation
    as told: they come back whole, the title as the subject (nothing is parsed back into its parts)."""

    def culprits(column: str) -> list[Culprit]:
        return [
            Culprit(
                **{
                    **c,
                    "first_started": _time(c["first_started"]),
                    "last_ended": _time(c["last_ended"]),
                    "recommendations": _recommendations(c["recommendations"]),
                }
            )
            for c in row[column] or []
        ]

    return Finding(
        kind=row["kind"],
        severity=row["severity"],
        start=row["start"],
        end=row["end"],
        subject=row["title"],
        reasoning=row["explanation"],
        evidence=json.loads(row["evidence"]),
        culprits=culprits("culprits"),
        recommendations=_recommendations(row["recommendations"]),
        resource=row["resource"],
        causes=culprits("causes"),
        id=row["id"] or "",
    )
