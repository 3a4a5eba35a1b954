"""What a report says, independent of its format: built once, rendered as HTML, Markdown or JSON.

Order (issue 12 §2): one headline per incident (root cause first, its first
fix), or "No incident" with what was checked; one card per incident (its
window, root cause with evidence, chain, recommendations and one plot of its
chain); then each node's findings as the detail, its timeline, its facts,
data coverage, and how each detector decides (its docstring).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.findings import detectors
from analysis.findings.context import major_minor
from analysis.findings.detectors import kind_name
from analysis.findings.finding import Finding
from analysis.incidents.incident import Incident
from analysis.observe import Analysis
from analysis.outputs import document as documents
from analysis.outputs import system
from analysis.outputs.document import (  # noqa: F401
    SCHEMA_VERSION,
    document,
    headlines,
    incident_headline,
    node_headlines,
    replica_set_name,
    window,
    worst_incidents,
)
from analysis.outputs.report import figures
from analysis.outputs.report.explorer import Explorer, explorer_data, full_range
from analysis.outputs.words import setting_name
from analysis.outputs.workbench import Workbench
from analysis.series import aggregates
from analysis.settings import SETTINGS
from analysis.text import counted, duration, first_and_last, ram
from analysis.workbench.log_overview import Workload
from ftdc.timeutil import Offset, say_time, say_window


@dataclass
class Figure:
    name: str  # file name in a Markdown report's folder
    caption: str
    svg: str  # the picture as an SVG document: inline in the HTML report, a file beside the Markdown one


def _figure(svg: str | None, name: str, caption: str) -> Figure | None:
    return Figure(name, caption, svg) if svg is not None else None


@dataclass
class IncidentCard:
    incident: Incident
    node: str  # the node it happened on; the replica set's name for a cross-node incident
    headline: str
    figure: Figure | None
    offset: Offset = None  # the offset the node's log writes its times in (reports give both)


@dataclass
class NodeSection:
    name: str
    analysis: Analysis
    headlines: list[str]  # one per incident, or "No incident" with what was checked
    incidents: list[IncidentCard]
    facts: list[tuple[str, str]]
    coverage: list[tuple[str, str]]
    timeline: Figure | None
    workbench: Workbench  # the log's tables over the whole span and the system panels (`outputs.workbench`)
    more_incidents: list[Incident] = field(default_factory=list)  # beyond the cards: a table row each
    evidence: dict[int, Figure] = field(default_factory=dict)  # finding index -> the plot of its own window
    carded: list[int] = field(default_factory=list)  # findings shown as full cards (the most severe)
    system_figure: Figure | None = None
    explorer: Explorer | None = None  # the derived series on one zoomable time axis (the HTML report's explorer)

    @property
    def findings(self) -> list[Finding]:
        return self.analysis.result.findings

    @property
    def workload(self) -> Workload | None:
        """The log's slow operations, clients and messages over the whole span."""
        return self.workbench.workload

    @property
    def system(self) -> system.SystemView:
        """The system panels' series, summarised."""
        return self.workbench.system

    @property
    def offset(self) -> Offset:
        """The offset the node's log writes its times in: its times are given in it too."""
        return self.analysis.result.log_offset

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
    cross_incidents: list[IncidentCard] = field(default_factory=list)  # cards of the replica set's incidents no node's took
    cross_all: list[Incident] = field(default_factory=list)  # every one of those incidents, carded or not
    members: Figure | None = None  # the replica set's timeline: member states, lag, elections
    methods: list[tuple[str, str]] = field(default_factory=list)
    redacted: bool = False
    no_log: str | None = None  # where the search for a log looked when it found none

    @property
    def incidents(self) -> list[IncidentCard]:
        """Every incident card in report order: each node's, then the replica set's."""
        return [card for section in self.nodes for card in section.incidents] + self.cross_incidents

    @property
    def more_incidents(self) -> list[tuple[str, Incident]]:
        """(node, incident) for each incident beyond the cards."""
        return [(section.name, i) for section in self.nodes for i in section.more_incidents]

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: the one document `analysis.outputs.document` builds from the data model (every incident), the one
        `--json` prints."""
        return document(
            [n.analysis for n in self.nodes],
            [n.name for n in self.nodes],
            self.cross_node,
            self.cross_all,
            redacted=self.redacted,
            generated=self.generated,
            no_log=self.no_log,
            workbenches=[n.workbench for n in self.nodes],
        )


def _facts(analysis: Analysis, name: str) -> list[tuple[str, str]]:
    node, t = analysis.result.node, analysis.result.thresholds
    series = analysis.evidence.series
    cache = aggregates.greatest(series["cache_max_bytes"]) if "cache_max_bytes" in series.columns else None
    tickets = []
    for rw in ("read", "write"):
        column = f"{rw}_tickets_total"
        most = aggregates.greatest(series[column]) if column in series.columns else None  # None: no value of it
        if most is not None:
            low, high = int(aggregates.known(aggregates.least(series[column]))), int(most)
            tickets.append(f"{rw} {low}" if low == high else f"{rw} {low}–{high}")
    facts = [
        ("node", name),
        ("version", node.version or "unknown"),
        ("replica set", node.replica_set or "-"),
        (
            "host",
            ", ".join(
                x
                for x in (
                    node.os,
                    f"{node.cpus} cores" if node.cpus else None,
                    f"{ram(node.memory_mb)} RAM" if node.memory_mb else None,
                )
                if x
            )
            or "-",
        ),
        ("WiredTiger cache", f"{cache / 2**30:.1f} GB" if cache else "-"),
        ("tickets (pool size seen)", ", ".join(tickets) or "-"),
    ]
    for key in (
        "eviction_trigger",
        "eviction_dirty_trigger",
        "eviction_updates_trigger",
        "eviction_target",
        "eviction_dirty_target",
        "eviction_threads_max",
        "checkpoint_interval",
    ):
        if SETTINGS[key].exists_on(major_minor(node.version)):  # not a row for a setting this version lacks
            facts.append((setting_name(key), t.describe(key)))
    return facts


def _coverage(analysis: Analysis) -> list[tuple[str, str]]:
    view = analysis.result.overview
    offset = analysis.result.log_offset
    periods = ", ".join(f"{p / 1000:g} s ({n:,})" for p, n in list(view.periods_ms.items())[:3]) or "-"
    return [
        ("time range", say_window(*sampled, offset) if (sampled := view.window) else "-"),
        ("samples", f"{view.samples:,} in {counted(view.files, 'file')}, {counted(view.chunks, 'chunk')}"),
        ("sampling periods", periods),
        ("gaps", f"{len(view.gaps)}" + (f", longest {duration(max(g.seconds for g in view.gaps))}" if view.gaps else "")),
        ("restarts", first_and_last(view.restarts, lambda r: say_time(r, offset))),
        ("damaged input", counted(len(view.problems), "problem") if view.problems else "none"),
        (
            "log",
            "none given"
            if analysis.evidence.logs is None
            else f"{counted(analysis.evidence.logs.slow_ops.height, 'slow operation')}, {counted(analysis.evidence.logs.events.height, 'other line')}"
            + (f", {analysis.evidence.logs.problems.height:,} unreadable" if analysis.evidence.logs.problems.height else ""),
        ),
    ]


def methods() -> list[tuple[str, str]]:
    """How each detector decides, as its record says it for the report's readers: (its kinds' names, the method)."""
    return [(", ".join(kind_name(k) for k in m.DETECTOR.kinds), m.DETECTOR.method) for m in detectors.MODULES]


def incident_cards(
    analysis: Analysis, incidents: list[Incident], node: str, slug: str, members: dict[str, str]
) -> list[IncidentCard]:
    """A card per incident (the MAX_CARDS most severe; all are in the JSON), each with the plot of its own chain and window;
    `members` names the replica set's members by address (`figures.member_names`)."""
    return [
        IncidentCard(
            i,
            node,
            incident_headline(i, node, analysis.result.log_offset),
            _figure(figures.incident(analysis, i, members), f"{slug}-{i.id.lower()}.svg", f"{node} {i.id}: {i.title}"),
            analysis.result.log_offset,
        )
        for i in worst_incidents(incidents)
    ]


def node_section(
    analysis: Analysis, name: str, members: dict[str, str], bench: Workbench, cross: Sequence[Finding] = ()
) -> NodeSection:
    """The node's part of a report; `bench`, its workbench as the run built it (`outputs.workbench.of_run`)."""
    key = node_slug(name)
    cards = incident_cards(analysis, analysis.result.incidents, name, key, members)
    carded = [i for i, f in enumerate(analysis.result.findings) if f.severity != "info"][
        : documents.MAX_CARDS
    ]  # the cards' one limit
    # A finding folded into a carded incident is drawn in its plot (every step's window marked): not twice.
    drawn = {f for c in cards if c.figure is not None for f in c.incident.finding_ids}
    series = full_range(analysis)  # reduced once: the explorer's and the whole-range figures' series
    return NodeSection(
        name=name,
        analysis=analysis,
        headlines=node_headlines(analysis.result, name, cross),
        incidents=cards,
        more_incidents=[i for i in analysis.result.incidents if not any(i is c.incident for c in cards)],
        facts=_facts(analysis, name),
        coverage=_coverage(analysis),
        timeline=_figure(figures.timeline(analysis, series), f"{key}-timeline.svg", f"{name}: timeline"),
        evidence={
            i: fig
            for i in carded
            if analysis.result.findings[i].id not in drawn
            and (
                fig := _figure(
                    figures.finding(analysis, analysis.result.findings[i]),
                    f"{key}-finding-{i + 1}.svg",
                    f"{name} {analysis.result.findings[i].id}: {analysis.result.findings[i].title}",
                )
            )
        },
        carded=carded,
        workbench=bench,
        system_figure=_figure(figures.system(analysis, bench.system, series), f"{key}-system.svg", f"{name}: system panels"),
        explorer=explorer_data(analysis, name, reduced=series),
    )


def node_slug(text: str) -> str:
    """`text` as a file name and an HTML anchor: letters and digits, the rest dashes."""
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower() or "node"


def build(
    sections: list[NodeSection],
    cross_node: Sequence[Finding] = (),
    cross_incidents: Sequence[Incident] = (),
    *,
    redacted: bool = False,
    generated: dt.datetime | None = None,
    no_log: str | None = None,
) -> Report:
    """The report of these nodes; `cross_incidents` are the replica set's incidents no node's took (`nodes.compose`)."""
    analyses, names = [s.analysis for s in sections], [s.name for s in sections]
    cross_cards = (
        incident_cards(
            analyses[0],
            list(cross_incidents),
            replica_set_name([a.result for a in analyses]),
            "replica-set",
            figures.member_names(analyses, analyses[0]),
        )
        if sections
        else []
    )
    return Report(
        title=f"ftdc-analyze report: {', '.join(names)}",
        generated=generated or dt.datetime.now(dt.timezone.utc).replace(microsecond=0),
        headlines=headlines([a.result for a in analyses], names, cross_incidents),
        nodes=sections,
        cross_node=list(cross_node),
        cross_incidents=cross_cards,
        cross_all=list(cross_incidents),
        members=_figure(
            figures.members(analyses, cross_node), "replica-set-timeline.svg", "replica set: member states, lag and elections"
        )
        if len(sections) > 1
        else None,
        methods=methods(),
        redacted=redacted,
        no_log=no_log,
    )
