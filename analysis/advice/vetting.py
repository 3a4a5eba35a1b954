"""The one validator every recommendation passes before a report makes it.

A change of setting is checked against the node (its configuration over time and
the levels it usually runs at) and against what the setting means (its record, `analysis.settings`):
- `current` is a value the node had during the window the advice answers;
- a value the server reads specially is never proposed (syncdelay 0 turns checkpoints
  off), and a ticket pool of 0 on 7.0+ is throughput probing, not a pool to raise;
- the proposal lies within WiredTiger's bounds and the host's memory, and changes something;
- a target stays below its trigger (WiredTiger refuses the configuration otherwise);
- a trigger is never moved to where the node already runs most of the time: application
  threads would evict all day;
- one setting gets one proposed value per node, across the whole report (the first made:
  incidents in time order, the root cause's fix first);
- maxTimeMS on a write says what an interrupted multi-document write leaves behind;
- a setting that is only ever lowered (transactionLifetimeLimitSeconds) is not raised, and a
  change that has a cost (aborting the transactions that run longer) says so.
What breaks a rule is not made; it is kept, with the reason, as `Withheld` evidence.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import polars as pl

from analysis.advice.recommendation import WRITE_COMMANDS, Recommendation, Withheld
from analysis.findings.context import major_minor
from analysis.series.thresholds import Thresholds
from analysis.settings import SETTINGS, max_cache_bytes

if TYPE_CHECKING:
    from analysis.findings.context import Context
    from analysis.findings.finding import Culprit, Finding
    from analysis.incidents.incident import Incident

# First version whose ticket pools are sized by throughput probing unless set.
PROBING_VERSION = (7, 0)


def probing(version: str | None) -> bool:
    """On this version an unset ticket pool (0) is sized by throughput probing."""
    known = major_minor(version)
    return known is not None and known >= PROBING_VERSION


@dataclass(frozen=True)
class NodeFacts:
    """What the rules read about one node."""

    thresholds: Thresholds
    version: str | None
    memory_mb: int | None
    usual: dict[str, float]  # a level's median over the capture (cache fill, dirty, updates: % of the cache)

    @classmethod
    def of(cls, ctx: Context) -> NodeFacts:
        levels = {m.level for m in SETTINGS.values() if m.level and m.level in ctx.series.columns}
        usual = {c: float(v) for c in levels if (v := ctx.series.select(pl.col(c).median()).item()) is not None}
        return cls(ctx.thresholds, ctx.node.version, ctx.node.memory_mb, usual)


def broken_rule(rec: Recommendation, facts: NodeFacts, start: dt.datetime | None, end: dt.datetime | None) -> str | None:
    """Why `rec`, answering the window [start, end], must not be made; None when it passes every rule."""
    if rec.action == "add_max_time_ms" and rec.operation in WRITE_COMMANDS and not rec.caveat:
        return "maxTimeMS on a write must say that an interrupted multi-document write stays partly applied"
    if rec.setting is None:
        return None
    name, now, proposed = rec.setting, rec.current, rec.proposed
    meaning = SETTINGS[name]
    had = [s.value for s in facts.thresholds.in_effect(name, start, end)]
    measured = name == "cache_size" and all(v is None for v in had)  # the cache's size read from serverStatus instead
    if now.value not in had and not measured:
        return f"{name} is quoted as {now.value}, but the node had {', '.join(map(str, had)) or 'no value'} in that window"
    if proposed in meaning.never:
        return f"{meaning.never[proposed]}: never proposed"
    if name.endswith("_tickets") and now.value == 0 and probing(facts.version):
        return f"on {facts.version} a {meaning.label} of 0 means throughput probing sizes it, not an empty pool"
    if proposed == now.value:
        return f"{name} is already {proposed:g}"
    if meaning.only_lower and now.value is not None and proposed > now.value:
        return f"{name}={proposed:g} is above its {now.value:g}: {meaning.only_lower}"
    if meaning.caveat and not rec.caveat:
        return f"a change of {meaning.label} must say {meaning.caveat}"
    if meaning.minimum is not None and proposed < meaning.minimum:
        return f"{name}={proposed:g} is below the least sensible value, {meaning.minimum:g}"
    if meaning.maximum is not None and proposed > meaning.maximum:
        return f"{name}={proposed:g} is above the most sensible value, {meaning.maximum:g}"
    if name == "cache_size" and (limit := max_cache_bytes(facts.memory_mb)) and proposed > limit:
        return f"a {proposed / 2**30:.1f} GB cache leaves the host's other memory users too little of its {facts.memory_mb / 1024:.0f} GB"
    return _levels(name, proposed, facts, start, end)


def _levels(name: str, proposed: float, facts: NodeFacts, start: dt.datetime | None, end: dt.datetime | None) -> str | None:
    """A trigger above where the node usually runs and above its target; a target below its trigger."""
    meaning = SETTINGS[name]
    window = facts.thresholds.within(start, end)
    usual = facts.usual.get(meaning.level) if meaning.level else None
    if usual is not None and proposed <= usual:
        return (
            f"{name}={proposed:g} is at or below the {usual:.1f} % the node runs at most of the time: application threads would evict all day; "
            "a node without that headroom needs a larger cache or a smaller working set"
        )
    if meaning.below and (trigger := window.value(meaning.below)) is not None and trigger <= 100 and proposed >= trigger:
        return f"{name}={proposed:g} is not below {meaning.below}={trigger:g}"
    for target, other in SETTINGS.items():
        if other.below == name and (value := window.value(target)) is not None and value <= 100 and proposed <= value:
            return f"{name}={proposed:g} is not above {target}={value:g}"
    return None


class Vetting:
    """The rules over one node's whole report: one proposed value per setting, the first made."""

    def __init__(self, facts: NodeFacts) -> None:
        self.facts = facts
        self.proposed: dict[str, float] = {}

    def vet(
        self, recs: list[Recommendation], start: dt.datetime | None, end: dt.datetime | None
    ) -> tuple[list[Recommendation], list[Withheld]]:
        kept, withheld = [], []
        for rec in recs:
            reason = broken_rule(rec, self.facts, start, end)
            if reason is None and rec.setting is not None and self.proposed.setdefault(rec.setting, rec.proposed) != rec.proposed:
                reason = f"{rec.setting}={self.proposed[rec.setting]:g} is proposed for this node already: one value per setting"
            if reason is None:
                kept.append(rec)
            else:
                withheld.append(Withheld(rec, reason))
        return kept, withheld


def vetted(incidents: list[Incident], findings: list[Finding], facts: NodeFacts) -> tuple[list[Incident], list[Finding]]:
    """One node's incidents and findings again, every recommendation through the rules in report order: incidents
    (root cause first), then findings and their culprits. What breaks a rule moves to the evidence (`withheld`)."""
    vetting = Vetting(facts)
    told = [_incident(incident, vetting) for incident in incidents]
    kept = [_finding(finding, vetting) for finding in findings]
    # An incident holds the findings it folds in as the report shows them: vetted.
    by_id = {id(old): new for old, new in zip(findings, kept)}
    return [replace(i, findings=[by_id.get(id(f), f) for f in i.findings]) for i in told], kept


def _incident(incident: Incident, vetting: Vetting) -> Incident:
    causes, withheld = [], []
    for cause in [incident.root_cause, *incident.candidates]:
        recs, held = vetting.vet(cause.recommendations, incident.start, incident.end)
        causes.append(replace(cause, recommendations=recs))
        withheld += held
    recs, held = vetting.vet(incident.recommendations, incident.start, incident.end)
    return replace(
        incident,
        root_cause=causes[0],
        candidates=causes[1:],
        recommendations=recs,
        withheld=list(dict.fromkeys(incident.withheld + withheld + held)),
    )


def _finding(finding: Finding, vetting: Vetting) -> Finding:
    recs, withheld = vetting.vet(finding.recommendations, finding.start, finding.end)
    # A culprit named as a cause is listed twice (culprits and causes): vetted as often, as one value.
    culprits: dict[int, Culprit] = {}
    for culprit in finding.culprits + finding.causes:
        now = culprits.get(id(culprit), culprit)
        kept, more = vetting.vet(now.recommendations, finding.start, finding.end)
        culprits[id(culprit)] = replace(now, recommendations=kept)
        withheld += more
    return replace(
        finding,
        recommendations=recs,
        culprits=[culprits[id(c)] for c in finding.culprits],
        causes=[culprits[id(c)] for c in finding.causes],
        withheld=list(dict.fromkeys(finding.withheld + withheld)) if withheld else finding.withheld,
    )
