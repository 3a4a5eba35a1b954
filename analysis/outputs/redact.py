"""Redaction for reports that leave the building: stable pseudonyms, shapes instead of values.

Host names become `host-1`, IP addresses `ip-1`, user names (home
directories in paths) `user-1`, replica sets `rs-1`, databases and
namespaces `db-1` and `db-1.coll-2`; the same input gives the same name
throughout one report. Culprit examples keep only the query's shape (no
literal values), file paths only their file name. A key mapping pseudonyms
back can be written for the sender to keep.

Redaction maps a finished result and computes nothing again: `redact_result`
returns a new result whose findings, incidents, culprits and tables say what the
plain one says with every name replaced, so every format (and every picture's
labels) is made from pseudonyms; one text pass over every string catches names
inside sentences and sources.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any, overload

import polars as pl

from analysis.advice.recommendation import Recommendation, Withheld
from analysis.findings.finding import Culprit, Finding
from analysis.incidents.incident import Incident, RootCause, Step
from analysis.nodes import NodesAnalysis
from analysis.observe import Analysis, Result
from ftdc.logs import LogFrames
from ftdc.logs.events import ttl_pass

IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
# IPv6 needs "::" or seven colons, so clock times (09:50:00) are never taken for one.
IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
HOME = re.compile(r"/(?:home|Users)/([^/\s\"']+)")
PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[^/\s\"'():]+)+/([^/\s\"'():]+)")


def _is_ipv6(text: str) -> bool:
    return "::" in text or text.count(":") == 7


class Redactor:
    """Pseudonyms by kind, numbered in the order names are first met."""

    def __init__(self) -> None:
        self.names: dict[str, dict[str, str]] = {kind: {} for kind in ("host", "ip", "user", "rs", "db", "ns", "app")}
        self._pattern: re.Pattern | None = None

    def _name(self, kind: str, original: str, pseudonym: str | None = None) -> str:
        table = self.names[kind]
        if original not in table:
            table[original] = pseudonym or f"{kind}-{len(table) + 1}"
            self._pattern = None
        return table[original]

    def host(self, host: str | None) -> str | None:
        if not host:
            return host
        name, sep, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        name = name if sep else host
        pseudonym = self.ip(name) if IPV4.fullmatch(name) else self._name("host", name.lower())
        return f"{pseudonym}:{port}" if sep else pseudonym

    def app(self, name: str | None) -> str | None:
        """An application's name (the driver's `appName`) is the customer's word, as a host's is."""
        return self._name("app", name) if name else name

    def ip(self, address: str) -> str:
        return self._name("ip", address)

    def replica_set(self, name: str | None) -> str | None:
        return self._name("rs", name) if name else name

    def ns(self, ns: str | None) -> str | None:
        if not ns:
            return ns
        db, dot, coll = ns.partition(".")
        if not dot:
            return self._name("db", db)
        return self._name("ns", ns, f"{self._name('db', db)}.coll-{len(self.names['ns']) + 1}")

    def _originals(self) -> list[tuple[str, str]]:
        """(original, pseudonym) pairs to replace in free text, longest first."""
        pairs = {o: p for kind in ("ns", "host", "ip", "rs", "user", "app") for o, p in self.names[kind].items()}
        for ns, pseudonym in self.names["ns"].items():
            (db, coll), (db_p, coll_p) = ns.split(".", 1), pseudonym.split(".", 1)
            # How index advice names a collection: exactly, by namespace.
            pairs[f'getSiblingDB("{db}").getCollection("{coll}")'] = f'getSiblingDB("{db_p}").getCollection("{coll_p}")'
            # A collection name alone is a common word: only where code quotes it; two
            # databases' collections of one name take the first one's pseudonym.
            pairs.setdefault(f'"{coll}"', f'"{coll_p}"')
        pairs.update({f'"{o}"': f'"{p}"' for o, p in self.names["db"].items()})
        return sorted(pairs.items(), key=lambda pair: -len(pair[0]))

    @overload
    def text(self, value: str) -> str: ...

    @overload
    def text(self, value: None) -> None: ...

    def text(self, value: str | None) -> str | None:
        """Every known name in `value` replaced; IPs, home directories and directories of paths too."""
        if not value:
            return value
        value = HOME.sub(lambda m: "/home/" + self._name("user", m.group(1)), value)
        # Known names before the path rule: a namespace may hold `/` (`acmepay.payroll/2024/q1`),
        # and shortening it as a path first leaves a name no longer known (`acmepay.payrollq1`).
        value = self._known(value)
        value = PATH.sub(lambda m: m.group(1), value)
        value = IPV4.sub(lambda m: self.ip(m.group(0)), value)
        return IPV6.sub(lambda m: self.ip(m.group(0)) if _is_ipv6(m.group(0)) else m.group(0), value)

    def _known(self, value: str) -> str:
        """Every name met so far replaced by its pseudonym, longest first."""
        pairs = self._originals()
        if not pairs:
            return value
        if self._pattern is None:
            self._pattern = re.compile("|".join(re.escape(o) for o, _ in pairs), re.IGNORECASE)
        lookup = {o.lower(): p for o, p in pairs}
        return self._pattern.sub(lambda m: lookup[m.group(0).lower()], value)

    def key(self) -> dict[str, str]:
        """pseudonym -> original, for the sender to keep (never attach it)."""
        return {p: o for kind in self.names.values() for o, p in kind.items()}

    def deep(self, value: Any) -> Any:
        """Every string inside dicts, lists and tuples passed through `text`."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.deep(k): self.deep(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.deep(v) for v in value)
        return value


def learn(redactor: Redactor, analyses: Iterable[Analysis]) -> None:
    """Meet every name the reports could show, in a stable order, before any text is redacted."""
    for analysis in analyses:
        redactor.host(analysis.result.node.host)
        redactor.replica_set(analysis.result.node.replica_set)
        logs = analysis.evidence.logs  # the tables the reports show: every other name is in the result
        if logs is None:
            continue
        passes = logs.events.filter(pl.col("kind") == "ttl")["text"].drop_nulls()
        ttl = {found[0] for text in passes if (found := ttl_pass(text)) is not None}
        for ns in sorted(set(logs.slow_ops["ns"].drop_nulls().unique()) | ttl):
            redactor.ns(ns)
        nodes = set(logs.slow_ops["node"].drop_nulls().unique()) | set(logs.events["node"].drop_nulls().unique())
        for node in sorted(nodes):
            redactor.host(node)
        for remote in sorted(logs.events["remote"].drop_nulls().unique()):
            redactor.host(remote)
        apps = [frame["app_name"].drop_nulls().unique() for frame in (logs.slow_ops, logs.events) if "app_name" in frame.columns]
        for app in sorted(set().union(*map(set, apps))):
            redactor.app(app)


def _culprit(c: Culprit, r: Redactor) -> Culprit:
    # Only the shape of the query travels: it has the field names and operators, never a value.
    return dataclasses.replace(
        c,
        ns=r.ns(c.ns),
        example=c.shape,
        plan_summary=r.text(c.plan_summary),
        recommendations=[_advice(x, r) for x in c.recommendations],
    )


def _advice(rec: Recommendation, r: Redactor) -> Recommendation:
    """Every word of a recommendation redacted; its numbers and action stay."""
    current = None if rec.current is None else dataclasses.replace(rec.current, source=r.text(rec.current.source))
    return dataclasses.replace(
        rec,
        what=r.text(rec.what),
        why=r.text(rec.why),
        current=current,
        target=r.ns(rec.target),
        command=r.text(rec.command),
        caveat=r.text(rec.caveat),
    )


def _finding(f: Finding, r: Redactor) -> Finding:
    return dataclasses.replace(
        f,
        subject=r.text(f.subject),
        statement=r.text(f.statement),
        reasoning=r.text(f.reasoning),
        cause=r.text(f.cause),
        notes=tuple(r.text(n) for n in f.notes),
        evidence=r.deep(f.evidence),
        culprits=[_culprit(c, r) for c in f.culprits],
        causes=[_culprit(c, r) for c in f.causes],
        recommendations=[_advice(x, r) for x in f.recommendations],
        withheld=[_withheld(w, r) for w in f.withheld],
    )


def _logs(logs: LogFrames | None, r: Redactor) -> LogFrames | None:
    if logs is None:
        return None
    mapped = lambda column, fn: pl.col(column).map_elements(fn, return_dtype=pl.String)  # noqa: E731
    slow = logs.slow_ops.with_columns(
        mapped("ns", r.ns),
        mapped("node", r.host),
        *(mapped(c, r.app) for c in ("app_name",) if c in logs.slow_ops.columns),
        # Culprit examples and index advice are made from shapes: no literal value leaves.
        pl.col("shape").cast(pl.String).alias("command_json"),
        # Nor the log's own lines (the slow-operation table's slowest runs); the plan and file names are words like any other.
        *(pl.lit(None, pl.String).alias(c) for c in ("line_text",) if c in logs.slow_ops.columns),
        *(mapped(c, r.text) for c in ("plan_summary", "file") if c in logs.slow_ops.columns),
    )
    text_columns = [c for c in ("text", "msg", "remote", "file", "driver") if c in logs.events.columns]
    events = logs.events.with_columns(
        mapped("node", r.host),
        *(mapped(c, r.text) for c in text_columns),
        *(mapped(c, r.app) for c in ("app_name",) if c in logs.events.columns),
    )
    problems = logs.problems.with_columns(*(mapped(c, r.text) for c in ("file", "text") if c in logs.problems.columns))
    return LogFrames(slow, events, problems, logs.utc_offset, logs.utc_offsets)


def _withheld(w: Withheld, r: Redactor) -> Withheld:
    return Withheld(_advice(w.recommendation, r), r.text(w.reason))


def _cause(c: RootCause, r: Redactor) -> RootCause:
    return dataclasses.replace(
        c,
        summary=r.text(c.summary),
        headline=r.text(c.headline),
        evidence=r.deep(c.evidence),
        recommendations=[_advice(x, r) for x in c.recommendations],
    )


def _step(s: Step, r: Redactor) -> Step:
    return dataclasses.replace(s, text=r.text(s.text), thresholds=r.deep(s.thresholds))


def _incident(i: Incident, r: Redactor, findings: dict[str, Finding]) -> Incident:
    """The incident as told, in pseudonyms: its findings are the redacted ones (`findings`, by id)."""
    return dataclasses.replace(
        i,
        title=r.text(i.title),
        chain=[_step(s, r) for s in i.chain],
        root_cause=_cause(i.root_cause, r),
        recommendations=[_advice(x, r) for x in i.recommendations],
        candidates=[_cause(c, r) for c in i.candidates],
        withheld=[_withheld(w, r) for w in i.withheld],
        findings=[findings[f.id] if f.id in findings else _finding(f, r) for f in i.findings],
    )


def redact(result: Result, r: Redactor) -> Result:
    """A new `result` with pseudonyms and shapes only: what it says, findings and incidents as told, names replaced."""
    node = dataclasses.replace(result.node, host=r.host(result.node.host), replica_set=r.replica_set(result.node.replica_set))
    overview = dataclasses.replace(result.overview, node=node, problems=[r.text(p) for p in result.overview.problems])
    thresholds = dataclasses.replace(
        result.thresholds,
        timeline={
            name: [dataclasses.replace(s, source=r.text(s.source)) for s in steps]
            for name, steps in result.thresholds.timeline.items()
        },
    )
    audit = [dataclasses.replace(i, has=r.text(i.has), change=r.text(i.change)) for i in result.audit]
    findings = [_finding(f, r) for f in result.findings]
    by_id = {f.id: f for f in findings}
    return dataclasses.replace(
        result,
        node=node,
        overview=overview,
        thresholds=thresholds,
        findings=findings,
        incidents=[_incident(i, r, by_id) for i in result.incidents],
        audit=audit,
    )


def redact_result(result: NodesAnalysis, r: Redactor) -> NodesAnalysis:
    """A new `result` with pseudonyms and shapes only, its names met first in a stable order (`learn`): each node's
    result and the log tables the reports show, the replica set's findings and their incidents as told, names replaced.
    The rest of the evidence (series, catalog, checkpoints) holds no name and is kept as it is."""
    learn(r, result.nodes)
    nodes = [Analysis(dataclasses.replace(a.evidence, logs=_logs(a.evidence.logs, r)), redact(a.result, r)) for a in result.nodes]
    cross = [_finding(f, r) for f in result.cross_node]
    by_id = {f.id: f for f in cross}
    return dataclasses.replace(
        result, nodes=nodes, cross_node=cross, incidents=[_incident(i, r, by_id) for i in result.incidents]
    )
