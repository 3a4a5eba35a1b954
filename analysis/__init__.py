"""Analyses over FTDC and log frames: findings that explain an incident.

    analysis.analyze("diagnostic.data", logs="mongod.log") -> Analysis

Layout: `metrics` (the alias table) -> `series` (derived quantities) with
`thresholds` (the node's own configuration) and `checkpoints` -> `detectors/`
(one module per kind of finding) -> `culprits` (slow operations behind each
window, `indexes` for what to build) -> `findings` (the one `Finding` shape);
`nodes` for several nodes at once; `tables` (findings as Arrow) and `fleet`
(many nodes on a loop, a spawn pool or Spark); `report` for the incident report.
"""

from .analyze import Analysis, analyze
from .findings import Culprit, Finding
from .nodes import NodesAnalysis, analyze_nodes
from .tables import findings_table, incidents_table

__all__ = ["Analysis", "Culprit", "Finding", "NodesAnalysis", "analyze", "analyze_nodes", "findings_table", "incidents_table"]
