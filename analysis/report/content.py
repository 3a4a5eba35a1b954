"""What a report says, independent of its format: built once, rendered as HTML, Markdown or JSON.

Order (issue 12 §2): one headline per incident (root cause first, its first
fix), or "No incident" with what was checked; one card per incident (its
window, root cause with evidence, chain, recommendations and one plot of its
chain); then each node's findings as the detail, its timeline, its facts,
data coverage, and how each detector decides (its docstring).
"""

from __future__ import annotations

import datetime as dt
import inspect
from dataclasses import dataclass, field
from typing import Any, Optional

from ftdc.timeutil import format_time

from .. import detectors
from ..analyze import Analysis
from ..findings import SEVERITIES, Finding
from ..incidents import Incident
from ..text import duration
from . import figures, plots
from .explorer import Explorer, explorer_data

# 2: incidents (per node and across nodes) and one headline each; findings carry ids.
SCHEMA_VERSION = 2
# Incidents and findings shown as full cards with their plot; the rest of a long week's are listed
# in a table (and all are in the JSON): a report is read in two minutes, not forty cards.
MAX_CARDS = 12


@dataclass
class Figure:
    name: str  # file name in a Markdown report's folder
    caption: str
    png: bytes


def _figure(fig, name: str, caption: str) -> Optional[Figure]:
    return Figure(name, caption, plots.png(fig)) if fig is not None else None


@dataclass
class IncidentCard:
    incident: Incident
    node: str  # the node it happened on; the replica set's name for a cross-node incident
    headline: str
    figure: Optional[Figure]


@dataclass
class NodeSection:
    name: str
    analysis: Analysis
    headlines: list[str]  # one per incident, or "No incident" with what was checked
    incidents: list[IncidentCard]
    facts: list[tuple[str, str]]
    coverage: list[tuple[str, str]]
    timeline: Optional[Figure]
    more_incidents: list[Incident] = field(default_factory=list)  # beyond the cards: a table row each
    evidence: dict[int, Figure] = field(default_factory=dict)  # finding index -> the plot of its own window
    carded: list[int] = field(default_factory=list)  # findings shown as full cards (the most severe)
    explorer: Optional[Explorer] = None  # the derived series on one zoomable time axis (the HTML report's explorer)

    @property
    def findings(self) -> list[Finding]:
        return self.analysis.findings

    @property
    def findings_heading(self) -> str:
        return "Findings (the detail of the incidents above)" if self.incidents else "Findings"

    @property
    def listed(self) -> list[Finding]:
        """Warning and critical findings beyond the cards: a table row each."""
        shown = set(self.carded)
        return [f for i, f in enumerate(self.findings) if f.severity != "info" and i not in shown]


@dataclass
class Report:
    title: str
    generated: dt.datetime
    headlines: list[str]
    nodes: list[NodeSection]
    cross_node: list[Finding] = field(default_factory=list)
    cross_incidents: list[IncidentCard] = field(default_factory=list)  # the replica set's incidents no node's took
    members: Optional[Figure] = None  # the replica set's timeline: member states, lag, elections
    methods: list[tuple[str, str]] = field(default_factory=list)
    redacted: bool = False

    @property
    def incidents(self) -> list[IncidentCard]:
        """Every incident card in report order: each node's, then the replica set's."""
        return [card for section in self.nodes for card in section.incidents] + self.cross_incidents

    @property
    def more_incidents(self) -> list[tuple[str, Incident]]:
        """(node, incident) for each incident beyond the cards."""
        return [(section.name, i) for section in self.nodes for i in section.more_incidents]

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (schema in the README): every node's analysis with its incidents, the cross-node ones."""
        return {
            "schema_version": SCHEMA_VERSION,
            "generated": format_time(self.generated),
            "title": self.title,
            "headlines": self.headlines,
            "redacted": self.redacted,
            "nodes": [{"name": n.name, "headlines": n.headlines, **n.analysis.to_dict()} for n in self.nodes],
            "cross_node_findings": [f.to_dict() for f in self.cross_node],
            "cross_node_incidents": [card.incident.to_dict() for card in self.cross_incidents],
        }


def window(start: Optional[dt.datetime], end: Optional[dt.datetime]) -> str:
    """`start – end (how long)`, as every card and headline gives a window."""
    return f"{format_time(start)} – {format_time(end)} ({duration((end - start).total_seconds())})" if start and end else "no window"


def incident_headline(incident: Incident, node: str) -> str:
    """One sentence per incident: where and when, root cause → effect (its title), the first fix."""
    fix = f" First fix: {incident.recommendations[0]}" if incident.recommendations else ""
    return f"{node}, {incident.id} ({incident.severity}), {window(incident.start, incident.end)}: {incident.title}.{fix}"


def checked(analysis: Analysis, name: str) -> str:
    """For a node without incident: "No incident", and what was checked over what span."""
    view = analysis.overview
    span = f"from {format_time(view.first)} to {format_time(view.last)} ({duration((view.last - view.first).total_seconds())}, " \
           f"{view.samples:,} samples)" if view.first else "(no sample)"
    kinds = ", ".join(k for m in detectors.MODULES for k in m.DETECTOR.kinds)
    log = "with its log's slow operations" if analysis.logs is not None else "without a log"
    notes = sum(f.severity == "info" for f in analysis.findings)
    return (f"{name}: No incident {span}. Checked, {log}: {kinds}; none reached warning or critical."
            + (f" {notes} note(s) on context and what could not be checked are below." if notes else ""))


def _facts(analysis: Analysis, name: str) -> list[tuple[str, str]]:
    node, t = analysis.node, analysis.thresholds
    series = analysis.series
    cache = series["cache_max_bytes"].max() if "cache_max_bytes" in series.columns else None
    tickets = []
    for rw in ("read", "write"):
        column = f"{rw}_tickets_total"
        if column in series.columns and series[column].max() is not None:
            low, high = int(series[column].min()), int(series[column].max())
            tickets.append(f"{rw} {low}" if low == high else f"{rw} {low}–{high}")
    facts = [
        ("node", name),
        ("version", node.version or "unknown"),
        ("replica set", node.replica_set or "-"),
        ("host", ", ".join(x for x in (node.os, f"{node.cpus} cores" if node.cpus else None, f"{node.memory_mb:,} MB RAM" if node.memory_mb else None) if x) or "-"),
        ("WiredTiger cache", f"{cache / 2**30:.1f} GB" if cache else "-"),
        ("tickets (pool size seen)", ", ".join(tickets) or "-"),
    ]
    for key in ("eviction_trigger", "eviction_dirty_trigger", "eviction_updates_trigger", "eviction_target", "eviction_dirty_target", "eviction_threads_max", "checkpoint_interval"):
        facts.append((key, t.describe(key)))
    return facts


def _coverage(analysis: Analysis) -> list[tuple[str, str]]:
    view = analysis.overview
    periods = ", ".join(f"{p / 1000:g} s ({n:,})" for p, n in list(view.periods_ms.items())[:3]) or "-"
    return [
        ("time range", f"{format_time(view.first)} – {format_time(view.last)}" if view.first else "-"),
        ("samples", f"{view.samples:,} in {view.files} file(s), {view.chunks:,} chunks"),
        ("sampling periods", periods),
        ("gaps", f"{len(view.gaps)}" + (f", longest {duration(max(g.seconds for g in view.gaps))}" if view.gaps else "")),
        ("restarts", ", ".join(format_time(r) for r in view.restarts) or "none"),
        ("damaged input", f"{len(view.problems)} problem(s)" if view.problems else "none"),
        ("log", "none given" if analysis.logs is None else
         f"{analysis.logs.slow_ops.height:,} slow operations, {analysis.logs.events.height:,} other lines"
         + (f", {analysis.logs.problems.height:,} unreadable" if analysis.logs.problems.height else "")),
    ]


def methods() -> list[tuple[str, str]]:
    """How each detector decides: the method its record declares (its module's docstring)."""
    out = []
    for module in detectors.MODULES:
        doc = inspect.cleandoc(module.DETECTOR.method or "")
        kind, _, text = doc.partition(":")
        out.append((kind.strip("` "), text.strip()))
    return out


def worst_incidents(incidents: list[Incident]) -> list[Incident]:
    """The MAX_CARDS most severe incidents (critical first, then the longest), in time order."""
    worst = sorted(incidents, key=lambda i: (SEVERITIES.index(i.severity), -i.seconds))[:MAX_CARDS]
    return [i for i in incidents if any(i is w for w in worst)]


def incident_cards(analysis: Analysis, incidents: list[Incident], node: str, slug: str, members: dict[str, str]) -> list[IncidentCard]:
    """A card per incident (the MAX_CARDS most severe; all are in the JSON), each with the plot of its own chain and window;
    `members` names the replica set's members by address (`figures.member_names`)."""
    return [IncidentCard(i, node, incident_headline(i, node),
                         _figure(figures.incident(analysis, i, members), f"{slug}-{i.id.lower()}.png", f"{node} {i.id}: {i.title}"))
            for i in worst_incidents(incidents)]


def node_section(analysis: Analysis, name: str, members: dict[str, str]) -> NodeSection:
    slug = node_slug(name)
    cards = incident_cards(analysis, analysis.incidents, name, slug, members)
    carded = [i for i, f in enumerate(analysis.findings) if f.severity != "info"][:MAX_CARDS]
    # A finding folded into a carded incident is drawn in its plot (every step's window marked): not twice.
    drawn = {f for c in cards if c.figure is not None for f in c.incident.finding_ids}
    return NodeSection(
        name=name,
        analysis=analysis,
        headlines=[c.headline for c in cards] + _more(analysis.incidents, name) or [checked(analysis, name)],
        incidents=cards,
        more_incidents=[i for i in analysis.incidents if not any(i is c.incident for c in cards)],
        facts=_facts(analysis, name),
        coverage=_coverage(analysis),
        timeline=_figure(figures.timeline(analysis), f"{slug}-timeline.png", f"{name}: timeline"),
        evidence={i: fig for i in carded if analysis.findings[i].id not in drawn and (fig := _figure(figures.finding(analysis, analysis.findings[i]), f"{slug}-finding-{i + 1}.png",
                                                             f"{name} {analysis.findings[i].id}: {analysis.findings[i].title}"))},
        carded=carded,
        explorer=explorer_data(analysis, name),
    )


def _more(incidents: list[Incident], node: str) -> list[str]:
    """Beyond the cards, one line saying how many more (a week of short incidents is not forty headlines)."""
    rest = len(incidents) - MAX_CARDS
    return [f"{node}: {rest} more, less severe incident(s), listed below the cards and in full in the JSON report."] if rest > 0 else []


def node_slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower() or "node"


def build(sections: list[NodeSection], cross_node: list[Finding] = (), cross_incidents: list[Incident] = (), *, redacted: bool = False) -> Report:
    """The report of these nodes; `cross_incidents` are the replica set's incidents no node's took (`nodes.unfolded`)."""
    nodes = ", ".join(s.name for s in sections)
    analyses = [s.analysis for s in sections]
    replica_set = next((a.node.replica_set for a in analyses if a.node.replica_set), None) or "across nodes"
    cross_cards = incident_cards(analyses[0], list(cross_incidents), replica_set, "replica-set", figures.member_names(analyses, analyses[0])) \
        if sections else []
    several = len(sections) > 1
    # Several nodes: one headline per incident; a node without any says so in one line only when every node is quiet.
    headlines = [h for s in sections for h in (s.headlines if s.incidents or not several else [])] + [c.headline for c in cross_cards]
    return Report(
        title=f"ftdc-analyze report: {nodes}",
        generated=dt.datetime.now(dt.timezone.utc).replace(microsecond=0),
        headlines=headlines or [h for s in sections for h in s.headlines],
        nodes=sections,
        cross_node=list(cross_node),
        cross_incidents=cross_cards,
        members=_figure(figures.members(analyses, cross_node), "replica-set-timeline.png", "replica set: member states, lag and elections")
        if several else None,
        methods=methods(),
        redacted=redacted,
    )
