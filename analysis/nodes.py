"""`analyze_nodes`: several nodes at once, and what involves more than one of them; `compose`: a run's findings
told as incidents, once.

Each node is observed on its own (`analyze.observe`), with the log rows of its own
host. Elections and lagging secondaries are seen by every member that
records `replSetGetStatus`; across nodes they become one finding each per
replica set, the members named by address (a node's `self` flag says which
member index it is; an index means something only within its replica set),
warning-level when they happened during another node's incident. Then `compose`
numbers every node's findings and tells them as incidents, in one pass over the run:
`analyze` (one node), `analyze_nodes` and the fleet's replica sets all end in it.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import polars as pl

from analysis.findings.context import Context
from analysis.findings.detectors import MOMENTS, RECORDS, REPLICA_SET_WIDE
from analysis.findings.detectors.replication import READ_ITS_FTDC, named
from analysis.findings.finding import Finding
from analysis.incidents import grouping
from analysis.incidents.incident import Incident
from analysis.incidents.vetting import NodeFacts, vetted, vetted_against_member
from analysis.members import Member, member_addresses, self_members
from analysis.observe import Analysis, LogsArg, observe, read_compact_logs
from analysis.text import counted
from ftdc.decoding import Decoding
from ftdc.errors import FTDCError, FTDCWarning
from ftdc.logs import LogFrames
from ftdc.paths import PathArg
from ftdc.timeutil import TimeArg

# One election seen by several nodes: their samples fall this close together.
SAME_EVENT = dt.timedelta(seconds=30)


def node_name(analysis: Analysis, index: int) -> str:
    """How reports and tables name a node: its address, else its place in the list."""
    return analysis.result.node.address or f"node {index + 1}"


@dataclass(frozen=True)
class NodesAnalysis:
    nodes: list[Analysis]
    cross_node: list[Finding] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    """Cross-node findings no member's incident folds in (ids C1, C2...): each node's own are in `nodes[i].incidents`."""
    no_log: str | None = None  # where the search for a log looked when it found none (`words.no_log_note`), every format's

    @property
    def names(self) -> list[str]:
        return [node_name(a, i) for i, a in enumerate(self.nodes)]


def set_wide(finding: Finding) -> bool:
    """An election or a lag the replica set's findings merge; a member's record that it could not check them stays its own."""
    return finding.kind in REPLICA_SET_WIDE and not finding.not_checked


def _named(finding: Finding, replica_set: str | None, addresses: dict[Member, str]) -> Finding:
    """The finding again, its members named by the addresses of the nodes of its replica set that are them."""
    return named(finding, lambda member: addresses.get((replica_set, member), f"member {member}"))


Window = tuple[dt.datetime, dt.datetime]


def _window(finding: Finding) -> Window | None:
    """A finding's [start, end]; None for context about a node with no sample (no election or lag is one)."""
    return None if finding.start is None or finding.end is None else (finding.start, finding.end)


def _same(a: Finding, b: Finding) -> bool:
    """The same event seen by two members of one replica set (callers compare the set)."""
    if a.kind != b.kind or a.evidence.get("member", a.evidence.get("to_member")) != b.evidence.get(
        "member", b.evidence.get("to_member")
    ):
        return False
    return _overlap(_window(a), _window(b), SAME_EVENT)


def _overlap(a: Window | None, b: Window | None, slack: dt.timedelta = dt.timedelta(0)) -> bool:
    """Two windows within `slack` of each other (a missing one meets nothing)."""
    return a is not None and b is not None and a[0] - slack <= b[1] and b[0] - slack <= a[1]


def cross_node_findings(nodes: Sequence[Analysis], names: list[str], members: Sequence[list[str]] | None = None) -> list[Finding]:
    """Elections and lag seen by any node, once each, named by address, related to every node's incidents.
    `nodes` need only their results' `node` and `findings` when `members` (each node's `self_members`) is given."""
    addresses = member_addresses(nodes, members if members is not None else [self_members(a) for a in nodes])
    merged: list[tuple[Finding, list[str], str | None]] = []
    for analysis, name in zip(nodes, names):
        replica_set = analysis.result.node.replica_set
        for finding in analysis.result.findings:
            if not set_wide(finding):
                continue
            twin = next((i for i, m in enumerate(merged) if m[2] == replica_set and _same(m[0], finding)), None)
            if twin is None:
                merged.append((finding, [name], replica_set))
                continue
            # The same event seen by another node, or its other side (lag across an election): one window.
            first, seen_by, _ = merged[twin]
            merged[twin] = (_widened(first, finding), seen_by if name in seen_by else [*seen_by, name], replica_set)
    problems = [(f, n) for a, n in zip(nodes, names) for f in a.result.findings if f.severity != "info" and not set_wide(f)]
    out = sorted(
        (_seen(first, seen_by, replica_set, addresses, problems) for first, seen_by, replica_set in merged), key=Finding.rank
    )
    return [replace(_vetted(_without_own_files(f, nodes), nodes), id=f"X{number}") for number, f in enumerate(out, 1)]


def _vetted(finding: Finding, nodes: Sequence[Analysis]) -> Finding:
    """The finding with its advice vetted against the member it is about, where that member is among `nodes`."""
    member = subject(finding, nodes)
    return finding if member is None else vetted_against_member(finding, member.result.findings)


def _without_own_files(finding: Finding, nodes: Sequence[Analysis]) -> Finding:
    """A finding without the advice to read the lagging member's files when they are among `nodes` (the member it is
    about is one of them): the report already tells them."""
    if subject(finding, nodes) is None:
        return finding
    return replace(finding, recommendations=[r for r in finding.recommendations if r != READ_ITS_FTDC])


def _widened(first: Finding, other: Finding) -> Finding:
    """One event from two members' findings (`_same` met them, so both have windows): the window covering both,
    the greater of each peak its record names (a lag's)."""
    peaks = [key for key in RECORDS[first.kind].peaks if key in first.evidence and key in other.evidence]
    evidence = {**first.evidence, **{key: max(first.evidence[key], other.evidence[key]) for key in peaks}}
    # A role change one member's log says was asked for (the member stepped down, or took the primary by priority).
    if "planned" in other.evidence and "planned" not in evidence:
        evidence["planned"] = other.evidence["planned"]
    windows = [w for w in (_window(first), _window(other)) if w is not None]
    return replace(first, start=min(w[0] for w in windows), end=max(w[1] for w in windows), evidence=evidence)


def _seen(
    first: Finding, seen_by: list[str], replica_set: str | None, addresses: dict[Member, str], problems: list[tuple[Finding, str]]
) -> Finding:
    """The replica set's finding of one event: its members by address, who saw it; an election during
    another node's problem is a warning that says which."""
    finding = _named(first, replica_set, addresses)
    evidence = {**finding.evidence, "seen_by": seen_by}
    for key in ("member", "from_member", "to_member"):
        if (replica_set, first.evidence.get(key)) in addresses:
            evidence[key.replace("member", "address")] = addresses[(replica_set, first.evidence[key])]
    finding = replace(finding, evidence=evidence)
    if finding.kind not in MOMENTS:
        return finding
    during = [(p, n) for p, n in problems if _overlap(_window(p), _window(finding))]
    if not during:
        return replace(finding, severity="info")
    # A change asked for is the operator's or the set's plan: noted beside the problem, still context.
    return replace(finding, severity="info" if "planned" in finding.evidence else "warning").noted(
        "It happened during: " + "; ".join(f"{n}: {p.title}" for p, n in during) + "."
    )


def analyze(
    diagnostic_data: PathArg,
    logs: LogsArg = None,
    *,
    start: TimeArg = None,
    end: TimeArg = None,
    progress: Callable[[str], None] = lambda stage: None,
    keep_metrics: bool = False,
) -> Analysis:
    """Findings and incidents for one node: `diagnostic_data` (a directory, files) and optionally its logs (paths as
    `ftdc.read_logs` takes them, or `LogFrames`), within [start, end]. `progress(stage)` is called as each of
    `observe.STAGES` completes. `keep_metrics`: every metric kept for the explorer from the same pass
    (`Evidence.kept`)."""
    return compose([observe(diagnostic_data, logs, start=start, end=end, progress=progress, keep_metrics=keep_metrics)]).nodes[0]


def analyze_nodes(
    diagnostic_data: Sequence[PathArg],
    logs: LogsArg = None,
    *,
    start: TimeArg = None,
    end: TimeArg = None,
    progress: Callable[[str], None] = lambda stage: None,
    keep_metrics: bool = False,
    started: Decoding | None = None,
) -> NodesAnalysis:
    """One `Analysis` per node (each a diagnostic.data directory) plus the findings that involve several.

    `logs` are read once; each node keeps the rows of its own host (found in the
    logs' start-up lines). With several nodes, rows whose host is unknown are
    left out with a warning rather than blamed on the wrong node. `keep_metrics`: each
    node's read keeps every metric for the explorer (`Evidence.kept`). `started`: one node's read started already
    (`ftdc.decoding.decode_ahead`), which that node's `observe` takes."""
    frames = read_compact_logs(logs, start, end)
    nodes = []
    for path in diagnostic_data:
        try:
            nodes.append(
                observe(path, frames, start=start, end=end, progress=progress, keep_metrics=keep_metrics, started=started)
            )
        except FTDCError as exc:
            # One unreadable node must not cost the others their analysis; alone, it is the error.
            if len(diagnostic_data) == 1:
                raise
            warnings.warn(f"{exc}: this node is left out", FTDCWarning, stacklevel=2)
    if not nodes:
        raise FTDCError(f"none of the {len(diagnostic_data)} nodes could be read")
    if len(nodes) > 1 and frames is not None:
        _warn_unmatched(frames, nodes)
    return compose(nodes)


def subject(finding: Finding, nodes: Sequence[Analysis]) -> Analysis | None:
    """The node a cross-node finding is about: the lagging member, or the member that lost the primary."""
    address = finding.evidence.get("address", finding.evidence.get("from_address"))
    return next((a for a in nodes if a.result.node.address and a.result.node.address == address), None)


def told(
    findings: Sequence[Finding],
    ctx: Context,
    related: Sequence[Finding] = (),
    numbered_from: tuple[int, int] = (1, 1),
    prefix: str = "I",
) -> tuple[list[Finding], list[Incident], list[Finding]]:
    """The findings numbered in rank order (F1, F2..., or from `numbered_from`'s first number), the incidents they
    make with `related` (cross-node findings, numbered already) folded in (I1, I2..., or `prefix` and from its second),
    and `related` again: every finding of an incident judged against one latency baseline per class, every
    recommendation vetted against the node `ctx` describes (a cross-node finding's advice answers the incidents it is
    in as the node's own findings' do)."""
    first_finding, first_incident = numbered_from
    numbered = [
        replace(f, id=f"F{n}", recommendations=[replace(r, findings=(f"F{n}",)) for r in f.recommendations])
        for n, f in enumerate(findings, first_finding)
    ]
    judged = grouping.one_baseline(numbered + list(related), ctx)  # one latency baseline per class in an incident's card
    numbered, related = judged[: len(numbered)], judged[len(numbered) :]
    built = grouping.build(numbered + related, ctx, prefix=prefix, first=first_incident)
    incidents, kept = vetted(built, numbered + related, NodeFacts.of(ctx))
    return kept[: len(numbered)], incidents, kept[len(numbered) :]


def compose(nodes: Sequence[Analysis]) -> NodesAnalysis:
    """A run's findings told as incidents, once: the one place a run composes them (`tests/test_compose.py` counts it).

    `nodes` as `observe` leaves them (findings in rank order, no incidents). Of several nodes, their elections and lag
    are merged into the replica sets' findings first (`cross_node_findings`); then each node's own findings are
    numbered on from the node before it (one document, one count) and told as incidents with the set's findings about
    it folded in (a member's slow disk and its lag are one incident); the set's findings no member's incident took
    are incidents of their own (C1, C2...), told with the context of the first node of their replica set. Every
    incident is judged against one baseline and its advice vetted, alike (`told`)."""
    several = len(nodes) > 1
    cross = cross_node_findings(nodes, NodesAnalysis(list(nodes)).names) if several else []
    composed: list[Analysis] = []
    # The set's findings as the member they are about told them: their advice vetted against that member's own
    # incidents, as its findings' is (a lag's network suspect is withheld where the member's own disk fell behind).
    as_told: dict[str, Finding] = {}
    numbered_from = (1, 1)  # one document, one count: each node's findings and incidents number on from the last's
    for a in nodes:
        own = [f for f in a.result.findings if not (several and set_wide(f))]
        findings, incidents, related = told(own, a.evidence.context, [f for f in cross if subject(f, nodes) is a], numbered_from)
        composed.append(replace(a, result=replace(a.result, findings=findings, incidents=incidents)))
        as_told.update((f.id, f) for f in related)
        numbered_from = (numbered_from[0] + len(findings), numbered_from[1] + len(incidents))
    folded_in = {i for a in composed for incident in a.result.incidents for i in incident.finding_ids}
    rest = [as_told.get(f.id, f) for f in cross if f.id not in folded_in]
    cross_incidents: list[Incident] = []
    for ctx, theirs in _by_replica_set(rest, composed):
        _, incidents, kept = told((), ctx, theirs, (1, len(cross_incidents) + 1), prefix="C")
        cross_incidents += incidents
        as_told.update((f.id, f) for f in kept)
    return NodesAnalysis(composed, [as_told.get(f.id, f) for f in cross], cross_incidents)


def _by_replica_set(findings: Sequence[Finding], nodes: Sequence[Analysis]) -> list[tuple[Context, list[Finding]]]:
    """Cross-node findings by the replica set of the node that saw each first, with the context of that set's first
    node (in order of the nodes)."""
    names = NodesAnalysis(list(nodes)).names
    groups: dict[str | None, list[Finding]] = {}
    for f in findings:
        seen_by = f.evidence.get("seen_by") or names[:1]
        groups.setdefault(nodes[names.index(seen_by[0])].result.node.replica_set, []).append(f)
    first: dict[str | None, Analysis] = {}
    for a in nodes:
        first.setdefault(a.result.node.replica_set, a)
    return [(first[replica_set].evidence.context, theirs) for replica_set, theirs in groups.items()]


def _warn_unmatched(frames: LogFrames, nodes: list[Analysis]) -> None:
    hosts = {a.result.node.host.lower() for a in nodes if a.result.node.host}
    node = pl.col("node").cast(pl.String).str.split(":").list.first().str.to_lowercase()
    unmatched = frames.slow_ops.filter(node.is_null() | ~node.is_in(list(hosts))).height
    if unmatched:
        warnings.warn(
            f"{counted(unmatched, 'slow operation')} in the logs name no host of these nodes (no start-up line in their file): left out",
            FTDCWarning,
            stacklevel=3,
        )
