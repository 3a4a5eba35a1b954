"""The JSON document's shape, declared once: what `summary --json` prints and `--report x.json`
writes (`analysis.outputs.document` builds it), as msgspec structs. A consumer reads the document
against `schema()` (JSON Schema, published as docs/report-schema.json); the tests hold every
scenario, sample and family draw's document to `DOCUMENT` (`check`), so a key added, dropped or
retyped anywhere shows here first.

Times are ISO-8601 in UTC with a `Z`; evidence and a step's thresholds are objects whose keys
depend on the kind of finding (docs/analyses.md names them); a number is an int when whole.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

Time = Annotated[str, Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$", description="ISO-8601, UTC")]
Number = float  # an int when whole (`4`, not `4.0`)


class _Shape(Struct, forbid_unknown_fields=True):
    # Each struct's docstring is its schema's description: one line each, as msgspec 0.22 and 0.23 carry a
    # docstring's continuation lines into the schema differently (docs/report-schema.json must not depend on it).
    pass


class Current(_Shape):
    """A setting's value on the node, and where it came from."""

    value: Number | None
    unit: str
    source: str
    origin: str


class Advice(_Shape):
    """A recommendation: its words (`text`) and the structure they are rendered from."""

    text: str
    action: str
    what: str
    setting: str | None
    current: Current | None
    proposed: Number | None
    why: str | None
    target: str | None
    operation: str | None
    command: str | None
    caveat: str | None
    findings: list[str]


class Withheld(_Shape):
    """Advice the validator did not give, with why."""

    advice: Advice
    reason: str


class Culprit(_Shape):
    """A query shape whose runs held the resource in a finding's window."""

    ns: str | None
    plan_summary: str | None
    shape: str | None
    query_hash: str | None
    count: int
    overlap_s: Number
    share: Number
    max_ms: int
    example: str | None
    collscan: bool
    command: str | None
    held_s: Number
    first_started: Time | None
    last_ended: Time | None
    recommendations: list[Advice]
    failed: int
    error: str | None


class Finding(_Shape):
    kind: str
    severity: str
    start: Time | None
    end: Time | None
    title: str
    explanation: str
    evidence: dict[str, Any]
    culprits: list[Culprit]
    recommendations: list[Advice]
    resource: str | None
    causes: list[Culprit]
    id: str
    withheld: list[Withheld]
    cause: str


class Step(_Shape):
    """One link of an incident's causal chain."""

    kind: str
    text: str
    findings: list[str]
    start: Time | None
    end: Time | None
    metrics: list[str]
    thresholds: dict[str, Any]


class RootCause(_Shape):
    kind: str
    summary: str
    evidence: dict[str, Any]
    recommendations: list[Advice]
    findings: list[str]
    headline: str


class Incident(_Shape):
    id: str
    start: Time | None
    end: Time | None
    severity: str
    title: str
    chain: list[Step]
    root_cause: RootCause
    finding_ids: list[str]
    recommendations: list[Advice]
    candidates: list[RootCause]
    withheld: list[Withheld]


class Node(_Shape):
    """What the node's metadata says it is."""

    host: str | None
    port: int | None
    version: str | None
    replica_set: str | None
    storage_engine: str | None
    cache_size_gb: Number | None
    os: str | None
    cpus: int | None
    memory_mb: int | None
    memory_limit_mb: int | None
    address: str | None


class Gap(_Shape):
    start: Time
    end: Time
    seconds: Number


class Summary(_Shape):
    """What the FTDC holds."""

    files: int
    first: Time | None
    last: Time | None
    samples: int
    periods_ms: dict[str, int]  # sampling period (ms) -> samples taken at it
    metrics: int
    chunks: int
    schema_changes: int
    gaps: list[Gap]
    restarts: list[Time]
    problems: list[str]


class Change(_Shape):
    since: Time | None
    value: Number | None
    source: str


class Threshold(_Shape):
    """A setting the analyses compare with, its value over the capture and where each came from."""

    value: Number | None
    unit: str
    source: str
    assumed: bool
    changes: list[Change]


class PlanUsed(_Shape):
    """A planSummary as mongod logged it (the index by its key pattern) and how many runs used it."""

    plan: str
    runs: int


class SlowRun(_Shape):
    """One of a shape's longest runs: when and where the log holds it, and its line (null where not quoted: redacted)."""

    at: Time
    duration_ms: int
    file: str | None
    line: int | None
    log_line: str | None


class SlowInterval(_Shape):
    """The slow operations logged in one interval: how many, how many scanned a whole collection, their summed time."""

    start: Time
    operations: int
    collscans: int
    total_ms: int


class SlowOverTime(_Shape):
    """The slow operations of the table by the interval they were logged in (empty intervals left out)."""

    interval_s: int
    intervals: list[SlowInterval]


class SlowOperation(_Shape):
    """A shape of the log's whole period, index builds included (the `logs` command's columns and the report's)."""

    ns: str | None
    command: str | None
    shape: str | None
    query_hash: str | None
    count: int
    total_ms: int
    # null for a shape whose runs logged no duration a number can hold (a damaged or hand-edited line)
    mean_ms: Number | None
    p50_ms: Number | None
    p95_ms: Number | None
    p99_ms: Number | None
    max_ms: int | None
    docs_examined_per_returned: Number | None
    keys_examined: int
    docs_examined: int
    nreturned: int
    collscan_share: Number
    plan_kinds: str | None
    first_seen: Time
    last_seen: Time
    apps: str | None
    working_ms: int
    working_runs: int
    queued_ms: Number  # tenths of a millisecond kept (the log counts microseconds)
    failed: int
    errors: str | None
    keys_examined_per_returned: Number | None
    min_ms: int | None
    reslen_bytes: int | None
    plans: list[PlanUsed]
    slowest: list[SlowRun]
    keys_examined_per_run: Number
    docs_examined_per_run: Number
    nreturned_per_run: Number
    reslen_bytes_per_run: Number | None
    # what a command without a filter asked for (its slowest run's, values left out), where the log gives no shape
    command_shape: str | None


class Connection(_Shape):
    """Client metadata lines by application and driver."""

    app: str
    driver: str
    connections: int
    first: Time
    last: Time


class LogMessage(_Shape):
    """Warning, error and fatal lines by message."""

    severity: str
    id: int | None
    msg: str
    count: int
    first: Time
    last: Time


class SystemSeries(_Shape):
    panel: str
    column: str
    label: str
    unit: str
    meaning: str
    min: Number | None
    median: Number | None
    p95: Number | None
    max: Number | None


class System(_Shape):
    series: list[SystemSeries]
    not_recorded: list[str]
    not_read: list[str]


class AuditItem(_Shape):
    key: str
    title: str
    severity: str
    has: str
    why: str
    change: str
    source: str
    recommended: str
    recorded: bool


class NodeReport(_Shape):
    """One node: what it is and holds, its incidents, findings and workbench (no log: its tables null)."""

    name: str
    headlines: list[str]
    node: Node
    summary: Summary
    thresholds: dict[str, Threshold]
    incidents: list[Incident]
    findings: list[Finding]
    shapes: int | None
    slow_operations: list[SlowOperation] | None
    slow_operations_over_time: SlowOverTime | None
    connections: list[Connection] | None
    log_messages: list[LogMessage] | None
    system: System
    audit: list[AuditItem]


class Document(_Shape):
    schema_version: int
    generated: Time
    title: str
    headlines: list[str]
    redacted: bool
    nodes: list[NodeReport]
    cross_node_findings: list[Finding]
    cross_node_incidents: list[Incident]
    no_log: str | msgspec.UnsetType = msgspec.UNSET  # where the search for a log looked, when it found none


DOCUMENT = Document


def check(document: Any) -> Document:
    """`document` (as `json.loads` gives it) read against the declared shape; raises
    `msgspec.ValidationError` naming the first key that differs."""
    return msgspec.convert(document, DOCUMENT, strict=True)


def schema() -> dict[str, Any]:
    """The shape as JSON Schema (2020-12)."""
    return msgspec.json.schema(DOCUMENT)


if __name__ == "__main__":  # docs/report-schema.json
    print(msgspec.json.format(msgspec.json.encode(schema()), indent=1).decode())
