"""Analyses over FTDC and log frames: findings that explain an incident.

    analysis.analyze("diagnostic.data", logs="mongod.log") -> Analysis (its evidence and its result)
    analysis.run(["bundle.tar.gz"]) -> Run: what the command line does (every node found, logs by its policy)

Layout, one sub-package per stage: `series/` (frames -> series: the metric alias
table, the derived quantities, the node's own thresholds, checkpoints) -> `findings/`
(series -> findings: `Finding`, the `Context` every detector gets, one module per kind
in `detectors/`, the operations behind each window in `culprits`) -> `incidents/`
(findings -> incidents: grouped by mechanism, the root cause ranked among candidates)
-> `advice/` (recommendations as data, one validator) -> `outputs/` (the JSON document,
Arrow tables, the terminal, Jupyter, the report); `workbench/` holds what a report shows
beside the incidents. `analyze` runs the stages for one node, `nodes` for several at
once, `fleet` for many on a loop, a spawn pool or Spark.
`analyze` (one node, from `nodes`) is imported at once (its name is also a module's, which a
lazy attribute would lose to the module as soon as anyone imports `analysis.analyze`);
the other names when first used (`ftdc.lazy`), so Arrow tables and the fleet's
engines cost nothing until asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.analyze import Analysis, Evidence, Result
from analysis.nodes import analyze
from ftdc.lazy import lazy_exports

_EXPORTS = {
    "Culprit": "findings.finding",
    "Finding": "findings.finding",
    "NodesAnalysis": "nodes",
    "Run": "entry",
    "analyze_nodes": "nodes",
    "findings_frame": "outputs.tables",
    "findings_table": "outputs.tables",
    "incidents_frame": "outputs.tables",
    "incidents_table": "outputs.tables",
    "run": "entry",
}

__all__ = ["Analysis", "Evidence", "Result", "analyze", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from analysis.entry import Run, run
    from analysis.findings.finding import Culprit, Finding
    from analysis.nodes import NodesAnalysis, analyze_nodes
    from analysis.outputs.tables import findings_frame, findings_table, incidents_frame, incidents_table
