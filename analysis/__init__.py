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
beside the incidents. `observe` runs the stages for one node, `nodes` composes one node's
or several's incidents, `entry` runs what the command line does, `fleet` many nodes on a loop,
a spawn pool or Spark.
Every name is imported when first used (`ftdc.lazy`): `import analysis` loads none of the
stages, so that `run` can start a small node's decode before they load (`entry`), and Arrow
tables and the fleet's engines cost nothing until asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ftdc.lazy import lazy_exports

_EXPORTS = {
    "Analysis": "observe",
    "Evidence": "observe",
    "Result": "observe",
    "analyze": "nodes",
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

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from analysis.entry import Run, run
    from analysis.findings.finding import Culprit, Finding
    from analysis.nodes import NodesAnalysis, analyze, analyze_nodes
    from analysis.observe import Analysis, Evidence, Result
    from analysis.outputs.tables import findings_frame, findings_table, incidents_frame, incidents_table
