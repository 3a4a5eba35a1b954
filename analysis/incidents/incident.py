"""The one shape incidents report in: `Incident`, its causal chain of `Step`s and its `RootCause`.

An incident is the findings of one episode on a node told as one story: a
window, the worst severity, a title stating cause → effect, the chain of
steps each pointing at the findings and metrics it rests on, the root cause
(ranked among candidates, each with its evidence), the findings folded into
it (by id) and one list of recommendations, the root cause's fix first.
`analysis.incidents.grouping` builds them (`build`, the one place incidents are made); like the findings
they fold in, they are frozen values.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields
from typing import Any

from analysis import display
from analysis.advice.recommendation import Recommendation, Withheld
from analysis.findings.finding import Finding, jsonable

ROOT_KINDS = ("operation", "configuration", "resource", "workload", "restart", "undetermined")
# What held the resource, as a root cause's evidence names it (`mechanism`), and as a report says it.
MECHANISMS = {
    "collscan": "a collection scan (COLLSCAN)",
    "index_build": "an index build",
    "pinned_history": "history pinned by an open transaction or cursor",
    "write_load": "the write load",
    "cache_too_small": "a cache too small for the working set",
    "another_process": "another process's I/O on the same disk",
    "chunk_migration": "a shard's chunk migrations",
    "connection_storm": "a storm of new connections",
}


@dataclass(frozen=True)
class Step:
    """One link of the causal chain: what happened, and the evidence it rests on."""

    kind: str
    text: str
    findings: list[str] = field(default_factory=list)  # ids of the findings folded into this step
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    metrics: list[str] = field(default_factory=list)  # the node's metric paths
    thresholds: dict[str, Any] = field(default_factory=dict)  # name -> value with its source


@dataclass(frozen=True)
class RootCause:
    kind: str  # one of ROOT_KINDS
    summary: str  # what it was, with its numbers
    evidence: dict[str, Any] = field(default_factory=dict)
    recommendations: list[Recommendation] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # the findings whose evidence names it
    headline: str = ""  # the phrase that opens an incident's title (the summary when empty)

    def __post_init__(self) -> None:
        if self.kind not in ROOT_KINDS:
            raise ValueError(f"root cause kind must be one of {ROOT_KINDS}, not {self.kind!r}")


@dataclass(frozen=True)
class Incident:
    id: str
    start: dt.datetime | None  # None only for a finding that has no window
    end: dt.datetime | None
    severity: str
    title: str  # cause → effect
    chain: list[Step]
    root_cause: RootCause
    finding_ids: list[str]
    recommendations: list[Recommendation]  # the root cause's fix first, each once
    candidates: list[RootCause] = field(default_factory=list)  # the other causes considered, in rank order
    withheld: list[Withheld] = field(
        default_factory=list
    )  # advice the validator did not make, with why (`analysis.incidents.vetting`)
    findings: list[Finding] = field(default_factory=list, repr=False)

    @property
    def seconds(self) -> float:
        return 0.0 if self.start is None or self.end is None else (self.end - self.start).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times ISO-8601 with Z; findings by id (they are listed beside incidents)."""
        return jsonable({f.name: getattr(self, f.name) for f in fields(self) if f.name != "findings"})

    def _repr_html_(self) -> str:
        return display.html(self)
