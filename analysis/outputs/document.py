"""The JSON report, built from the data model: every node's analysis with all its incidents, every
cross-node incident, and the headlines the HTML and Markdown reports open with.

`summary --json`, `--report x.json`, `result_document(result)` and `Report.to_dict()` are this one
document. Cards (the HTML's and Markdown's) choose what to draw; the document lists everything.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from analysis.advice import wording
from analysis.findings import detectors
from analysis.findings.detectors import kind_name
from analysis.findings.finding import SEVERITIES, Finding, jsonable
from analysis.incidents.incident import Incident
from analysis.nodes import NodesAnalysis
from analysis.observe import Analysis, Result
from analysis.outputs import workbench
from analysis.outputs.words import window
from analysis.outputs.workbench import Workbench
from analysis.text import counted, duration, plural
from ftdc.timeutil import Offset, say_window

# 2: incidents (per node and across nodes) and one headline each; findings carry ids.
# 3: recommendations are objects (text, action, setting, current, proposed...); advice withheld by the
#    validator is listed; every cross-node incident, not only those given a card; `--json` is this document.
SCHEMA_VERSION = 3
# Incidents given a headline and a card with its plot; the rest of a long week's are listed in a table
# (and all are in this document): a report is read in two minutes, not forty cards.
MAX_CARDS = 12


def incident_headline(incident: Incident, node: str, offset: Offset = None) -> str:
    """One sentence per incident: where and when, root cause → effect (its title), the first fix."""
    fix = f" First fix: {wording.text(incident.recommendations[0])}" if incident.recommendations else ""
    return f"{node}, {incident.id} ({incident.severity}), {window(incident.start, incident.end, offset)}: {incident.title}.{fix}"


def checked_kinds(findings: Sequence[Finding]) -> list[str]:
    """The names of the kinds whose detector ran on this node's data: one that recorded it could not (its not-checked
    finding, for any of its parts) passed no check."""
    unchecked = {f.kind for f in findings if f.not_checked}
    return [kind_name(k) for m in detectors.MODULES if not unchecked & set(m.DETECTOR.kinds) for k in m.DETECTOR.kinds]


def set_wide_about(result: Result, cross: Sequence[Finding]) -> list[Finding]:
    """The replica set's warnings and criticals that name this member: the one that lagged, lost or took the primary."""
    address = result.node.address
    keys = ("address", "from_address", "to_address")
    return [f for f in cross if f.severity != "info" and address and address in (f.evidence.get(k) for k in keys)]


def quiet(result: Result, cross: Sequence[Finding] = ()) -> str:
    """What a node without incident reached: nothing at warning, or nothing of its own beside the set's findings about it."""
    about = set_wide_about(result, cross)
    if not about:
        return "none reached warning or critical"
    ids = ", ".join(f"{f.id} ({f.severity})" for f in about)
    return f"none of this node's own reached warning or critical; the replica set's {ids} {'concern' if len(about) > 1 else 'concerns'} it"


def checked(result: Result, name: str, cross: Sequence[Finding] = ()) -> str:
    """For a node without incident: "No incident", and what was checked over what span."""
    view = result.overview
    span = (
        f"from {say_window(*sampled, result.log_offset)} ({duration((sampled[1] - sampled[0]).total_seconds())}, "
        f"{view.samples:,} samples)"
        if (sampled := view.window)
        else "(no sample)"
    )
    log = "with its log's slow operations" if result.logged else "without a log"
    notes = sum(f.severity == "info" for f in result.findings)
    return f"{name}: No incident {span}. Checked, {log}: {', '.join(checked_kinds(result.findings))}; {quiet(result, cross)}." + (
        f" {counted(notes, 'note')} on context and what could not be checked {plural(notes, 'is', 'are')} below." if notes else ""
    )


def worst_incidents(incidents: Sequence[Incident]) -> list[Incident]:
    """The MAX_CARDS most severe incidents (critical first, then the longest), in time order."""
    worst = sorted(incidents, key=lambda i: (SEVERITIES.index(i.severity), -i.seconds))[:MAX_CARDS]
    return [i for i in incidents if any(i is w for w in worst)]


def _more(incidents: Sequence[Incident], node: str) -> list[str]:
    """Beyond the cards, one line saying how many more (a week of short incidents is not forty headlines)."""
    rest = len(incidents) - MAX_CARDS
    return (
        [f"{node}: {rest} more, less severe {plural(rest, 'incident')}, listed below the cards and in full in the JSON report."]
        if rest > 0
        else []
    )


def node_headlines(result: Result, name: str, cross: Sequence[Finding] = ()) -> list[str]:
    """One per incident given a card, a line for the rest; or "No incident" with what was checked (and the replica
    set's findings `cross` about it)."""
    return [incident_headline(i, name, result.log_offset) for i in worst_incidents(result.incidents)] + _more(
        result.incidents, name
    ) or [checked(result, name, cross)]


def replica_set_name(results: Sequence[Result]) -> str:
    return next((r.node.replica_set for r in results if r.node.replica_set), None) or "across nodes"


def headlines(results: Sequence[Result], names: Sequence[str], cross_incidents: Sequence[Incident]) -> list[str]:
    """The report's opening lines: one per incident; a node without any says so in one line only when every node is quiet."""
    per_node = [(r, node_headlines(r, n)) for r, n in zip(results, names)]
    several = len(per_node) > 1
    offset = results[0].log_offset if results else None
    cross = [incident_headline(i, replica_set_name(results), offset) for i in worst_incidents(cross_incidents)]
    lines = [h for r, mine in per_node for h in (mine if r.incidents or not several else [])] + cross
    return lines or [h for _, mine in per_node for h in mine]


def result_document(
    result: NodesAnalysis,
    *,
    redacted: bool = False,
    generated: dt.datetime | None = None,
    workbenches: Sequence[Workbench] | None = None,
) -> dict[str, Any]:
    """The JSON report of an analysis of one node or several: the document `--report x.json` writes and `--json` prints
    (`workbenches`: the run's, when a report has built them already)."""
    return document(
        result.nodes,
        result.names,
        result.cross_node,
        result.incidents,
        redacted=redacted,
        generated=generated,
        no_log=result.no_log,
        workbenches=workbenches,
    )


def document(
    analyses: Sequence[Analysis],
    names: Sequence[str],
    cross_node: Sequence[Finding] = (),
    cross_incidents: Sequence[Incident] = (),
    *,
    redacted: bool = False,
    generated: dt.datetime | None = None,
    no_log: str | None = None,
    workbenches: Sequence[Workbench] | None = None,
) -> dict[str, Any]:
    """The JSON report of these nodes: everything, whatever the cards show; `no_log`, where the search for a log looked
    when it found none; each node's answer from its result, and what is shown beside it from its workbench (built
    here unless a report has built the run's already)."""
    generated = generated or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    benches = list(workbenches) if workbenches is not None else workbench.of_run(analyses)
    return jsonable(
        {
            "schema_version": SCHEMA_VERSION,
            "generated": generated,
            "title": f"ftdc-analyze report: {', '.join(names)}",
            "headlines": headlines([a.result for a in analyses], names, cross_incidents),
            **({"no_log": no_log} if no_log else {}),
            "redacted": redacted,
            "nodes": [
                {
                    "name": n,
                    "headlines": node_headlines(a.result, n, cross_node),
                    **a.result.to_dict(),
                    **bench.to_dict(),
                }
                for a, n, bench in zip(analyses, names, benches)
            ],
            "cross_node_findings": [f.to_dict() for f in cross_node],
            "cross_node_incidents": [i.to_dict() for i in cross_incidents],
        }
    )
