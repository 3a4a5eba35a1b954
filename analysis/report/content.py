"""What a report says, independent of its format: built once, rendered as HTML, Markdown or JSON.

Order (issue 7 §1): a headline (what happened, when, why, what to do), the
findings ranked by severity with their plots and culprits, the timeline, the
node facts, data coverage, and how each detector decides (its docstring).
"""

from __future__ import annotations

import datetime as dt
import inspect
from dataclasses import dataclass, field
from typing import Any, Optional

from ftdc.timeutil import format_time

from .. import detectors
from ..analyze import Analysis
from ..findings import Finding
from ..text import duration
from . import plots

SCHEMA_VERSION = 1
# Findings shown as full cards with their plot; the rest of a long week's are listed in a
# table (and all are in the JSON): a report is read in two minutes, not forty cards.
MAX_CARDS = 12


@dataclass
class Figure:
    name: str  # file name in a Markdown report's folder
    caption: str
    png: bytes


@dataclass
class NodeSection:
    name: str
    analysis: Analysis
    headline: str
    facts: list[tuple[str, str]]
    coverage: list[tuple[str, str]]
    timeline: Optional[Figure]
    evidence: dict[int, Figure] = field(default_factory=dict)  # finding index -> its plot
    carded: list[int] = field(default_factory=list)  # findings shown as full cards (the most severe)

    @property
    def findings(self) -> list[Finding]:
        return self.analysis.findings

    @property
    def listed(self) -> list[Finding]:
        """Warning and critical findings beyond the cards: a table row each."""
        shown = set(self.carded)
        return [f for i, f in enumerate(self.findings) if f.severity != "info" and i not in shown]


@dataclass
class Report:
    title: str
    generated: dt.datetime
    headline: str
    nodes: list[NodeSection]
    cross_node: list[Finding] = field(default_factory=list)
    methods: list[tuple[str, str]] = field(default_factory=list)
    redacted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (schema in the README): every node's analysis, the cross-node findings."""
        return {
            "schema_version": SCHEMA_VERSION,
            "generated": format_time(self.generated),
            "title": self.title,
            "headline": self.headline,
            "redacted": self.redacted,
            "nodes": [{"name": n.name, "headline": n.headline, **n.analysis.to_dict()} for n in self.nodes],
            "cross_node_findings": [f.to_dict() for f in self.cross_node],
        }


def headline(analysis: Analysis, name: str) -> str:
    """Two or three sentences: what happened and when, why, what to do."""
    first, last = analysis.overview.first, analysis.overview.last
    span = f"{format_time(first)} – {format_time(last)}" if first else "the data"
    problems = analysis.problems
    if not problems:
        return f"{name}: no problems found in {span}. No checkpoint stall, cache pressure, ticket exhaustion or other incident crossed its threshold."
    top = problems[0]
    others = [f.kind.replace("_", " ") for f in problems[1:] if f.end >= top.start and f.start <= top.end]
    what = f"{name}: {top.title[0].lower()}{top.title[1:]} from {format_time(top.start)} ({duration(top.seconds)})"
    if others:
        what += ", together with " + ", ".join(dict.fromkeys(others))
    why = ""
    if top.causes:
        c = top.causes[0]
        why = f" The cause: a collection scan of {c.ns} ({c.command or 'query'}) held {c.overlap_s:,.0f} s of the window."
    elif top.culprits:
        why = f" The longest slow operations in the window were on {top.culprits[0].ns}; no collection scan carried a real share."
    todo = f" First fix: {top.recommendations[0]}" if top.recommendations else ""
    return f"{what}.{why}{todo}".strip()


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


def node_section(analysis: Analysis, name: str) -> NodeSection:
    timeline = plots.timeline(analysis)
    section = NodeSection(
        name=name,
        analysis=analysis,
        headline=headline(analysis, name),
        facts=_facts(analysis, name),
        coverage=_coverage(analysis),
        timeline=Figure(f"{_slug(name)}-timeline.png", f"{name}: timeline", timeline) if timeline else None,
    )
    carded = [i for i, f in enumerate(analysis.findings) if f.severity != "info"][:MAX_CARDS]
    position = {id(analysis.findings[i]): i for i in carded}
    # Findings of one incident (overlapping windows) share one figure with all their evidence.
    for number, group in enumerate(plots.incidents([analysis.findings[i] for i in carded]), 1):
        png = plots.evidence(analysis, group)
        if png:
            figure = Figure(f"{_slug(name)}-incident-{number}.png", "; ".join(f.title for f in group), png)
            section.evidence.update({position[id(f)]: figure for f in group})
    section.carded = carded
    return section


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower() or "node"


def build(sections: list[NodeSection], cross_node: list[Finding] = (), *, redacted: bool = False) -> Report:
    nodes = ", ".join(s.name for s in sections)
    lead = sections[0].headline if len(sections) == 1 else (
        " ".join(s.headline for s in sections if s.analysis.problems) or f"No problems found on {nodes}.")
    if cross_node:
        lead = f"{cross_node[0].title}. " + lead
    return Report(
        title=f"ftdc-analyze report: {nodes}",
        generated=dt.datetime.now(dt.timezone.utc).replace(microsecond=0),
        headline=lead,
        nodes=sections,
        cross_node=list(cross_node),
        methods=methods(),
        redacted=redacted,
    )
