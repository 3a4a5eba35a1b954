"""A node's workbench as one value (`Workbench`): what a report shows beside its answer, for the support engineer who
would otherwise open other tools. Built once per run from the node's evidence (`of`), as the figures are: the log's
tables over the whole span (slow operations by shape, the clients, the log's warnings and errors) and the system
panels, each series summarised at most once and only when a format shows it. The JSON document, the HTML and the
Markdown report read this one value; none reads the logs or the series for it again. Redaction has mapped the
evidence it is built from (`outputs.redact`), so it holds pseudonyms where the result does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analysis.observe import Analysis
from analysis.outputs import system
from analysis.workbench.audit import AuditItem

if TYPE_CHECKING:
    from analysis.workbench.log_overview import Workload

# The JSON document's log tables of a node read without a log: each named, and null.
NO_LOG = {"shapes": None, "slow_operations": None, "slow_operations_over_time": None, "connections": None, "log_messages": None}


@dataclass(frozen=True)
class Workbench:
    workload: Workload | None
    """The log's slow operations, clients and messages over the whole span; None without a log."""
    system: system.SystemView
    """The system panels the node recorded (their series summarised when first asked)."""
    audit: list[AuditItem]
    """The configuration audit, as the result holds it."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON document's part of a node beside its answer."""
        return {
            **(self.workload.to_dict() if self.workload else NO_LOG),
            "system": self.system.to_dict(),
            "audit": [item.to_dict() for item in self.audit],
        }


def of(analysis: Analysis, analyses: Sequence[Analysis]) -> Workbench:
    """`analysis`'s workbench; `analyses` are the run's nodes, which name its replica set's members."""
    from analysis.workbench.log_overview import workload  # the log's tables: not for the terminal's summary

    members = system.member_names(analyses, analysis)
    return Workbench(workload(analysis.evidence.logs), system.view(analysis, members), analysis.result.audit)


def of_run(analyses: Sequence[Analysis]) -> list[Workbench]:
    """Each node's workbench, in order: once per run, for every format to read."""
    return [of(a, analyses) for a in analyses]
