"""Analyses over FTDC and log frames: findings that explain an incident.

    analysis.analyze("diagnostic.data", logs="mongod.log") -> Analysis

Layout: `metrics` (the alias table) -> `series` (derived quantities) with
`thresholds` (the node's own configuration) and `checkpoints` -> `detectors/`
(one module per kind of finding) -> `culprits` (slow operations behind each
window, `indexes` for what to build) -> `findings` (the one `Finding` shape);
`nodes` for several nodes at once; `tables` (findings as Arrow) and `fleet`
(many nodes on a loop, a spawn pool or Spark); `report` for the incident report.
`analyze` is imported at once (its name is also its module's, which a lazy
attribute would lose to the module as soon as anyone imports `analysis.analyze`);
the other names when first used (`ftdc.lazy`), so Arrow tables and the fleet's
engines cost nothing until asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ftdc.lazy import lazy_exports

from analysis.analyze import Analysis, analyze

_EXPORTS = {
    "Culprit": "findings.finding",
    "Finding": "findings.finding",
    "NodesAnalysis": "nodes",
    "analyze_nodes": "nodes",
    "findings_table": "outputs.tables",
    "incidents_table": "outputs.tables",
}

__all__ = ["Analysis", "analyze", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from analysis.findings.finding import Culprit, Finding
    from analysis.nodes import NodesAnalysis, analyze_nodes
    from analysis.outputs.tables import findings_table, incidents_table
