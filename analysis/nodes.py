"""`analyze_nodes`: several nodes at once, and what involves more than one of them.

Each node is analysed on its own (`analyze`), with the log rows of its own
host. Elections and lagging secondaries are seen by every member that
records `replSetGetStatus`; across nodes they become one finding each per
replica set, the members named by address (a node's `self` flag says which
member index it is; an index means something only within its replica set),
warning-level when they happened during another node's incident.
"""

from __future__ import annotations

import datetime as dt
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import polars as pl

from ftdc.errors import FTDCError, FTDCWarning
from ftdc.logs import LogFrames
from ftdc.paths import PathArg
from ftdc.timeutil import TimeArg

from analysis.analyze import Analysis, LogsArg, analyze, read_compact_logs
from analysis.incidents import grouping
from analysis.findings.detectors import CROSS_KINDS
from analysis.findings.detectors.replication import change_finding, lag_finding
from analysis.findings.finding import Finding
from analysis.outputs.document import document
from analysis.incidents.incident import Incident

# One election seen by several nodes: their samples fall this close together.
SAME_EVENT = dt.timedelta(seconds=30)


def node_name(analysis: Analysis, index: int) -> str:
    """How reports and tables name a node: its address, else its place in the list."""
    return analysis.node.address or f"node {index + 1}"


@dataclass
class NodesAnalysis:
    nodes: list[Analysis]
    cross_node: list[Finding] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    """Cross-node findings no member's incident folds in (ids C1, C2...): each node's own are in `nodes[i].incidents`."""

    @property
    def names(self) -> list[str]:
        return [node_name(a, i) for i, a in enumerate(self.nodes)]

    def to_dict(self, *, redacted: bool = False, generated: Optional[dt.datetime] = None) -> dict[str, Any]:
        """The JSON report of these nodes (`analysis.outputs.document`): the same document `--report x.json` writes."""
        return document(self.nodes, self.names, self.cross_node, self.incidents, redacted=redacted, generated=generated)


Member = tuple[Optional[str], str]
"""(replica set, member index): an index means something only within its replica set."""


def self_members(analysis: Analysis) -> list[str]:
    """The replica-set member indices this node recorded as itself."""
    return [c.removeprefix("member_self.") for c in analysis.series.columns
            if c.startswith("member_self.") and (analysis.series[c].max() or 0) > 0]


def member_addresses(nodes: Sequence[Analysis], members: Sequence[list[str]]) -> dict[Member, str]:
    """(replica set, member index) -> the address of the node that is that member (`members`: each node's `self_members`)."""
    return {(a.node.replica_set, member): a.node.address for a, mine in zip(nodes, members) if a.node.address for member in mine}


def _named(finding: Finding, replica_set: Optional[str], addresses: dict[Member, str]) -> Finding:
    """The finding again, its members named by the addresses of the nodes of its replica set that are them."""
    name = lambda member: addresses.get((replica_set, member), f"member {member}")  # noqa: E731
    e = finding.evidence
    if finding.kind == "replication_lag":
        return lag_finding(name(e["member"]), e["member"], finding.start, finding.end, e["lag_s_peak"])
    return change_finding(name(e["from_member"]), name(e["to_member"]), e["from_member"], e["to_member"], finding.start, finding.end)


def _same(a: Finding, b: Finding) -> bool:
    """The same event seen by two members of one replica set (callers compare the set)."""
    if a.kind != b.kind or a.evidence.get("member", a.evidence.get("to_member")) != b.evidence.get("member", b.evidence.get("to_member")):
        return False
    return a.start - SAME_EVENT <= b.end and b.start - SAME_EVENT <= a.end


def cross_node_findings(nodes: Sequence[Analysis], names: list[str], members: Optional[Sequence[list[str]]] = None) -> list[Finding]:
    """Elections and lag seen by any node, once each, named by address, related to every node's incidents.
    `nodes` need only `node` and `findings` (a fleet's workers send those and `members`, each node's `self_members`)."""
    addresses = member_addresses(nodes, members if members is not None else [self_members(a) for a in nodes])
    merged: list[tuple[Finding, list[str], Optional[str]]] = []
    for analysis, name in zip(nodes, names):
        replica_set = analysis.node.replica_set
        for finding in analysis.findings:
            if finding.kind not in CROSS_KINDS:
                continue
            twin = next((m for m in merged if m[2] == replica_set and _same(m[0], finding)), None)
            if twin is None:
                merged.append((finding, [name], replica_set))
                continue
            # The same event seen by another node, or its other side (lag across an election): one window.
            first = twin[0]
            first.start, first.end = min(first.start, finding.start), max(first.end, finding.end)
            if finding.kind == "replication_lag":
                first.evidence["lag_s_peak"] = max(first.evidence["lag_s_peak"], finding.evidence["lag_s_peak"])
            if name not in twin[1]:
                twin[1].append(name)
    problems = [(f, n) for a, n in zip(nodes, names) for f in a.findings if f.severity != "info" and f.kind not in CROSS_KINDS]
    out = []
    for first, seen_by, replica_set in merged:
        finding = _named(first, replica_set, addresses)
        finding.evidence["seen_by"] = seen_by
        for key in ("member", "from_member"):
            if (replica_set, first.evidence.get(key)) in addresses:
                finding.evidence[key.replace("member", "address")] = addresses[(replica_set, first.evidence[key])]
        during = [(p, n) for p, n in problems if p.start <= finding.end and p.end >= finding.start]
        if finding.kind == "primary_change":
            finding.severity = "warning" if during else "info"
            if during:
                finding.explanation += " It happened during: " + "; ".join(f"{n}: {p.title}" for p, n in during) + "."
        out.append(finding)
    out.sort(key=Finding.rank)
    for number, finding in enumerate(out, 1):
        finding.id = f"X{number}"
    return out


def analyze_nodes(
    diagnostic_data: list[PathArg],
    logs: LogsArg = None,
    *,
    start: TimeArg = None,
    end: TimeArg = None,
    progress: Callable[[str], None] = lambda stage: None,
) -> NodesAnalysis:
    """One `Analysis` per node (each a diagnostic.data directory) plus the findings that involve several.

    `logs` are read once; each node keeps the rows of its own host (found in the
    logs' start-up lines). With several nodes, rows whose host is unknown are
    left out with a warning rather than blamed on the wrong node."""
    frames = read_compact_logs(logs, start, end)
    nodes = []
    for path in diagnostic_data:
        try:
            nodes.append(analyze(path, frames, start=start, end=end, progress=progress))
        except FTDCError as exc:
            # One unreadable node must not cost the others their analysis; alone, it is the error.
            if len(diagnostic_data) == 1:
                raise
            warnings.warn(f"{exc}: this node is left out", FTDCWarning, stacklevel=2)
    if not nodes:
        raise FTDCError(f"none of the {len(diagnostic_data)} nodes could be read")
    if len(nodes) > 1 and frames is not None:
        _warn_unmatched(frames, nodes)
    if len(nodes) < 2:
        return NodesAnalysis(nodes)
    cross = cross_node_findings(nodes, NodesAnalysis(nodes).names)
    for analysis in nodes:
        analysis.findings = [f for f in analysis.findings if f.kind not in CROSS_KINDS]
    return NodesAnalysis(nodes, cross, fold_cross_node(nodes, cross))


def subject(finding: Finding, nodes: list[Analysis]) -> Analysis | None:
    """The node a cross-node finding is about: the lagging member, or the member that lost the primary."""
    address = finding.evidence.get("address", finding.evidence.get("from_address"))
    return next((a for a in nodes if a.node.address and a.node.address == address), None)


def fold_cross_node(nodes: list[Analysis], cross: list[Finding]) -> list[Incident]:
    """Each node's incidents told again with the cross-node findings about it (a member's slow disk and its
    lag are one incident); the cross-node findings no node's incident took are incidents of their own."""
    for analysis in nodes:
        analysis.related = [f for f in cross if subject(f, nodes) is analysis]
        analysis.refresh_incidents()
    return unfolded(nodes, cross)


def unfolded(nodes: list[Analysis], cross: list[Finding]) -> list[Incident]:
    """The incidents (ids C1, C2...) of the cross-node findings no node's incident folded in."""
    folded = {i for a in nodes for incident in a.incidents for i in incident.finding_ids}
    rest = [f for f in cross if f.id not in folded]
    return grouping.build(nodes[0], rest, prefix="C") if rest else []


def leave_to_the_replica_set(analysis: Analysis) -> list[Finding]:
    """Takes the elections and lag out of a node's analysis (the replica set's findings merge them),
    numbering its findings and incidents again; returns what it took."""
    taken = [f for f in analysis.findings if f.kind in CROSS_KINDS]
    analysis.findings = [f for f in analysis.findings if f.kind not in CROSS_KINDS]
    analysis.refresh_incidents()
    return taken


def _warn_unmatched(frames: LogFrames, nodes: list[Analysis]) -> None:
    hosts = {a.node.host.lower() for a in nodes if a.node.host}
    node = pl.col("node").str.split(":").list.first().str.to_lowercase()
    unmatched = frames.slow_ops.filter(node.is_null() | ~node.is_in(list(hosts))).height
    if unmatched:
        warnings.warn(f"{unmatched} slow operation(s) in the logs name no host of these nodes (no start-up line in their file): left out",
                      FTDCWarning, stacklevel=3)

