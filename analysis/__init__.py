"""Analyses over FTDC and log frames: findings that explain an incident.

    analysis.analyze("diagnostic.data", logs="mongod.log") -> Analysis

Layout: `metrics` (the alias table) -> `series` (derived quantities) with
`thresholds` (the node's own configuration) and `checkpoints` -> `detectors/`
(one module per kind of finding) -> `culprits` (slow operations behind each
window, `indexes` for what to build) -> `findings` (the one `Finding` shape).
"""

from .analyze import Analysis, analyze
from .findings import Culprit, Finding

__all__ = ["Analysis", "Culprit", "Finding", "analyze"]
