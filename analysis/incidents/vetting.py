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
- the checkpoint interval is never proposed below mongod's default (its record's `minimum`: MongoDB's guidance keeps
  syncPeriodSecs at its default, and SERVER-75162 reports that a shorter syncdelay set at runtime changes nothing on
  recent versions); an interval the node raised above it is proposed back to it;
- the checkpoint interval is not shortened where the window's checkpoints already took most of it (they ran back
  to back: WiredTiger waits the interval after a checkpoint ends before starting the next, so a shorter one starts
  none sooner and makes none write less; MongoDB's guidance keeps syncPeriodSecs at its default);
- one setting gets one proposed value per node, across the whole report (the first made:
  incidents in time order, the root cause's fix first);
- maxTimeMS on a write says what an interrupted multi-document write leaves behind;
- a setting that is only ever lowered (transactionLifetimeLimitSeconds) is not raised, and a
  change that has a cost (aborting the transactions that run longer) says so.
- advice fits the node's topology: a standalone is never told to read from a secondary, to build an
  index one member at a time or to step down; advice for a primary is not made to a node that was a
  secondary at any time in the window (through it, or from a role change in it), nor to a member whose
  state was not recorded there (it may be a secondary already);
- on 7.0+, where throughput probing sizes a ticket pool left unset, a fixed pool is proposed only where
  nothing in its incident shows the storage engine (cache, checkpoints, disk) or a collection scan
  behind the wait, and says what it costs;
- a value the node set on purpose away from its default (for its version) is never moved the way its
  record calls harmful (a lowered eviction target raised back, a raised transaction lifetime lowered);
- maxTimeMS is never below the median run of the shape it bounds, stops at least one logged run, and
  says what becomes of the runs it stops;
- no advice contradicts its own incident: what assumes no scan is behind the fill is not made where the
  root cause is a collection scan or an index build; advice about the operations that held a resource is
  made only where the log shows operations that held it (not only ones that waited for it);
- one recommendation per action: a general one (no namespace, no setting) is not made beside one aimed at a
  namespace for the same change (`ONE_CHANGE`) (a find run on a secondary makes "move analytics reads to a secondary" a copy).
What breaks a rule is not made; it is kept, with the reason, as `Withheld` evidence.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import polars as pl

from analysis.advice.recommendation import WRITE_COMMANDS, Current, Recommendation, Withheld
from analysis.advice.wording import amount
from analysis.findings.context import major_minor
from analysis.findings.culprits import victim
from analysis.series.checkpoints import Checkpoint, in_window
from analysis.series.spans import Spans
from analysis.series.thresholds import Thresholds
from analysis.settings import PROBING_VERSION, SETTINGS, TICKET_POOLS, max_cache_bytes
from analysis.text import ram
from ftdc.frames import TIME_COLUMN

if TYPE_CHECKING:
    from analysis.findings.context import Context
    from analysis.findings.finding import Culprit, Finding
    from analysis.incidents.incident import Incident

# Findings whose mechanism is the storage engine not keeping up: a wait behind them is not the ticket pool's doing.
STORAGE_ENGINE_KINDS = frozenset({"cache_pressure", "checkpoint_stall", "disk_saturation"})
# Root causes whose scan reads the working set through the cache: more cache only feeds them.
SCANS = {"collscan": "a collection scan", "index_build": "an index build"}
# Actions whose general form and a form aimed at a namespace are one change (reads moved to a secondary); others
# (`change_workload`, `investigate`) name kinds of action, under which different changes stand side by side.
ONE_CHANGE = frozenset({"read_from_secondaries"})
# Checkpoints taking at least this share of a window ran back to back: the wait between them is next to nothing of
# each cycle, so shortening the interval moves no checkpoint sooner.
BACK_TO_BACK = 0.5
# replSetGetStatus' member state of a secondary (`repl_state`).
SECONDARY = 2


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
    member: bool = True  # a replica set's member (its configuration names the set, or it records a member state)
    states: pl.DataFrame | None = None  # time and member state (1 primary, 2 secondary) where recorded
    checkpoints: Spans[Checkpoint] | None = None  # the node's checkpoints by their windows

    @classmethod
    def of(cls, ctx: Context) -> NodeFacts:
        levels = {m.level for m in SETTINGS.values() if m.level and m.level in ctx.series.columns}
        usual = {c: float(v) for c in levels if (v := ctx.series.select(pl.col(c).median()).item()) is not None}
        states = ctx.series.select(TIME_COLUMN, "repl_state").drop_nulls() if "repl_state" in ctx.series.columns else None
        member = ctx.node.replica_set is not None or (states is not None and states.height > 0)
        return cls(ctx.thresholds, ctx.node.version, ctx.node.memory_mb, usual, member, states, ctx.checkpoint_spans)

    def secondary_throughout(self, start: dt.datetime | None, end: dt.datetime | None) -> bool:
        """The node recorded itself a secondary at every sample of [start, end]."""
        if self.states is None or start is None or end is None:
            return False
        states = self.states.filter(pl.col(TIME_COLUMN).is_between(start, end))["repl_state"]
        return states.len() > 0 and bool((states == SECONDARY).all())

    def role_recorded(self, start: dt.datetime | None, end: dt.datetime | None) -> bool:
        """The node recorded its member state at some sample of [start, end] (of the capture, without a window)."""
        if self.states is None:
            return False
        if start is None or end is None:
            return self.states.height > 0
        return self.states.filter(pl.col(TIME_COLUMN).is_between(start, end)).height > 0

    def secondary_within(self, start: dt.datetime | None, end: dt.datetime | None) -> bool:
        """The node recorded itself a secondary at some sample of [start, end]."""
        if self.states is None or start is None or end is None:
            return False
        return bool((self.states.filter(pl.col(TIME_COLUMN).is_between(start, end))["repl_state"] == SECONDARY).any())


@dataclass(frozen=True)
class Answering:
    """What a recommendation answers: its window, the kinds of finding there, and its incident's root cause."""

    start: dt.datetime | None
    end: dt.datetime | None
    kinds: frozenset[str] = frozenset()
    mechanism: str | None = None  # the root cause's mechanism (`collscan`, `index_build`...), where it names one
    held: bool = True  # the log shows operations that held the resource there (not only victims that waited)
    named: bool = False  # and names some of them causes (their own advice aims at them)


def broken_rule(rec: Recommendation, facts: NodeFacts, answering: Answering) -> str | None:
    """Why `rec`, answering `answering` (its window, its incident), must not be made; None when it passes every rule."""
    start, end = answering.start, answering.end
    reason = _topology(rec, facts, start, end) or _max_time(rec) or _contradiction(rec, answering)
    change = rec.setting_change
    if reason or change is None:
        return reason
    name, now, proposed = change
    record = SETTINGS[name]
    if record.since is not None and not record.exists_on(major_minor(facts.version)):
        return f"{record.label} exists from {record.since[0]}.{record.since[1]} on; this node runs {facts.version}"
    had = [s.value for s in facts.thresholds.in_effect(name, start, end)]
    measured = name == "cache_size" and all(v is None for v in had)  # the cache's size read from serverStatus instead
    if now.value not in had and not measured:
        return f"{name} is quoted as {now.value}, but the node had {', '.join(map(str, had)) or 'no value'} in that window"
    if proposed in record.never:
        return f"{record.never[proposed]}: never proposed"
    if name in TICKET_POOLS and now.value == 0 and probing(facts.version):
        return f"on {facts.version} a {record.label} of 0 means throughput probing sizes it, not an empty pool"
    if proposed == now.value:
        return f"{name} is already {proposed:g}"
    # Where the node runs decides first (a trigger at its usual level), then its own deliberate values, then probing.
    if reason := (
        _levels(name, proposed, facts, start, end)
        or _deliberate(change, facts)
        or _probed_pool(rec, now, facts)
        or _back_to_back(change, facts, start, end)
    ):
        return reason
    if record.only_lower and now.value is not None and proposed > now.value:
        return f"{name}={proposed:g} is above its {now.value:g}: {record.only_lower}"
    if record.caveat and not rec.caveat:
        return f"a change of {record.label} must say {record.caveat}"
    if record.minimum is not None and proposed < record.minimum:
        return f"{name}={proposed:g} is below " + (
            f"{record.minimum:g}: {record.minimum_why}" if record.minimum_why else f"the least sensible value, {record.minimum:g}"
        )
    if record.maximum is not None and proposed > record.maximum:
        return f"{name}={proposed:g} is above the most sensible value, {record.maximum:g}"
    if name == "cache_size" and facts.memory_mb and (limit := max_cache_bytes(facts.memory_mb)) and proposed > limit:
        return f"a {proposed / 2**30:.1f} GB cache leaves the host's other memory users too little of its {ram(facts.memory_mb)}"
    return None


def _topology(rec: Recommendation, facts: NodeFacts, start: dt.datetime | None, end: dt.datetime | None) -> str | None:
    """Advice for a replica set's member or primary, made to a standalone or to a node that was a secondary."""
    if rec.topology is None:
        return None
    if not facts.member:
        lacks = (
            "no secondary to read from"
            if rec.topology == "primary"
            else "no other member to build on first and no primary to step down"
        )
        return f"this node is a standalone: it has {lacks}"
    if rec.topology == "primary" and facts.secondary_throughout(start, end):
        return "this node was a secondary throughout that window: what it ran already ran on a secondary"
    if rec.topology == "primary" and facts.secondary_within(start, end):
        return (
            "this node became a secondary during that window: the members left to read from are the ones that took "
            "the primary's role and its load"
        )
    if rec.topology == "primary" and not facts.role_recorded(start, end):
        # A member whose state was not recorded may be the secondary (an analytics or reporting member) already.
        return (
            "this node did not record its replica set state, so whether it was the primary is not known: it may "
            "already be a secondary, whose reads a secondary read preference would not move"
        )
    return None


def _max_time(rec: Recommendation) -> str | None:
    """maxTimeMS set from the runs it would stop: not below their median, stopping one at least, saying what becomes of them."""
    if rec.action != "add_max_time_ms":
        return None
    runs, limit = rec.runs, rec.proposed
    if runs is None:
        return "maxTimeMS must be set from the logged runs of the query it bounds"
    if limit is None:
        return "maxTimeMS must propose its limit"
    if limit < runs.median_ms:
        return (
            f"a {limit / 1000:g} s limit is below the median run of this query ({runs.median_ms / 1000:,.1f} s over {runs.count} "
            "logged runs): it would stop most of its ordinary runs"
        )
    if runs.stopped == 0:
        return f"a {limit / 1000:g} s limit stops none of the {runs.count} logged runs (the longest took {runs.longest_ms / 1000:,.1f} s)"
    if not rec.caveat:
        return "maxTimeMS must say what becomes of the runs it stops"
    if rec.operation in WRITE_COMMANDS and "stay" not in rec.caveat:
        return "maxTimeMS on a write must say that an interrupted multi-document write stays partly applied"
    return None


def _contradiction(rec: Recommendation, answering: Answering) -> str | None:
    """Advice whose assumption the incident it answers contradicts."""
    if rec.assumes in ("operations_held", "operations_unnamed") and not answering.held:
        return "it is about the operations that held the resource, and the log shows none that did in this window"
    if rec.assumes == "operations_unnamed" and answering.named:
        return "the log names the operations that held the resource: the advice aimed at them says what to do"
    if rec.assumes == "no_scan" and answering.mechanism in SCANS:
        return (
            f"it holds only if no scan is behind the cache's fill, and this incident's root cause is {SCANS[answering.mechanism]}"
        )
    if rec.assumes == "engine_not_bottleneck":
        if answering.mechanism in SCANS:
            return f"it holds only if the storage engine kept up, and this incident's root cause is {SCANS[answering.mechanism]}"
        if answering.kinds & STORAGE_ENGINE_KINDS:
            return "it holds only if the storage engine kept up, and this incident shows the cache, checkpoints or the disk behind the wait"
    return None


def _deliberate(change: tuple[str, Current, float], facts: NodeFacts) -> str | None:
    """A value the node set on purpose away from its version's default, moved the way its record calls harmful."""
    setting, now, proposed = change
    record = SETTINGS[setting]
    if record.harmful is None or now.origin != "configured" or now.value is None:
        return None
    default = record.default_on(major_minor(facts.version))
    direction = "higher" if proposed > now.value else "lower"
    if (default is not None and now.value == default) or direction != record.harmful:
        return None
    was = "" if default is None else f" (default {amount(default, now.unit)})"
    move = "raising" if direction == "higher" else "lowering"
    return f"this node sets {record.label} to {amount(now.value, now.unit)}{was} on purpose: {move} it, {record.harm}"


def _probed_pool(rec: Recommendation, now: Current, facts: NodeFacts) -> str | None:
    """On 7.0+ an unset pool is sized by throughput probing: fixing it needs evidence that probing held the node back."""
    if rec.setting not in TICKET_POOLS or now.value is not None or not probing(facts.version):
        return None
    if rec.assumes != "engine_not_bottleneck":
        return (
            f"on {facts.version} throughput probing sizes the {SETTINGS[rec.setting].label}: a fixed pool is proposed only with "
            "evidence that probing itself held the node back"
        )
    return None


def _back_to_back(
    change: tuple[str, Current, float], facts: NodeFacts, start: dt.datetime | None, end: dt.datetime | None
) -> str | None:
    """A shorter checkpoint interval where the window's checkpoints already ran most of the time."""
    setting, now, proposed = change
    if setting != "checkpoint_interval" or now.value is None or proposed >= now.value:
        return None
    if facts.checkpoints is None or start is None or end is None:
        return None
    ran = in_window(facts.checkpoints, start, end, None)
    if ran is None or ran.time_share < BACK_TO_BACK:
        return None
    return (
        f"the window's checkpoints already ran {ran.time_share * 100:.0f} % of it: WiredTiger waits the interval after one "
        "checkpoint ends before it starts the next, so a shorter interval starts none sooner and makes none write less "
        "(MongoDB's guidance is to keep syncPeriodSecs at its default)"
    )


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

    def vet(self, recs: list[Recommendation], answering: Answering) -> tuple[list[Recommendation], list[Withheld]]:
        kept, withheld = [], []
        for rec in recs:
            reason = broken_rule(rec, self.facts, answering) or _copy(rec, recs, self.facts, answering)
            change = rec.setting_change
            if reason is None and change is not None and self.proposed.setdefault(change[0], change[2]) != change[2]:
                reason = f"{change[0]}={self.proposed[change[0]]:g} is proposed for this node already: one value per setting"
            if reason is None:
                kept.append(rec)
            else:
                withheld.append(Withheld(rec, reason))
        return kept, withheld


def _copy(rec: Recommendation, recs: list[Recommendation], facts: NodeFacts, about: Answering) -> str | None:
    """A general recommendation (no namespace, no setting) beside one made aimed at a namespace for the same action."""
    if rec.target is not None or rec.setting is not None or rec.action not in ONE_CHANGE:
        return None
    aimed = next(
        (r for r in recs if r.action == rec.action and r.target is not None and broken_rule(r, facts, about) is None), None
    )
    return None if aimed is None else f"the same is recommended for {aimed.target}: one recommendation per action"


def _held(findings: list[Finding]) -> bool:
    """The log shows an operation that held the findings' resource (worked there, not only waited)."""
    return any(not victim(c) for f in findings for c in f.culprits + f.causes)


def answering(incident: Incident) -> Answering:
    """An incident's window, the kinds of its findings, its root cause's mechanism and whether operations held it."""
    kinds = frozenset(f.kind for f in incident.findings)
    return Answering(
        incident.start,
        incident.end,
        kinds,
        incident.root_cause.evidence.get("mechanism"),
        _held(incident.findings),
        any(f.causes for f in incident.findings),
    )


def vetted_against_member(finding: Finding, member: Sequence[Finding]) -> Finding:
    """A replica set's finding about one member (its lag) again, its advice vetted against what that member's own
    findings show over its window, as an incident holding them all would vet it: advice that holds only if the
    member's storage kept up (the network as a lag's suspect) is withheld where its cache, checkpoints or disk did
    not. Needs only findings, so a fleet's replica-set step (which has no member's incidents) vets alike."""
    if finding.start is None or finding.end is None:
        return finding
    during = [
        f
        for f in member
        if f.severity != "info"
        and f.start is not None
        and f.end is not None
        and f.start <= finding.end
        and finding.start <= f.end
    ]
    about = Answering(finding.start, finding.end, frozenset({finding.kind, *(f.kind for f in during)}))
    kept, withheld = [], []
    for rec in finding.recommendations:
        reason = _contradiction(rec, about)
        if reason is None:
            kept.append(rec)
        else:
            withheld.append(Withheld(rec, reason))
    if not withheld:
        return finding
    return replace(finding, recommendations=kept, withheld=list(dict.fromkeys(finding.withheld + withheld)))


def vetted(incidents: list[Incident], findings: list[Finding], facts: NodeFacts) -> tuple[list[Incident], list[Finding]]:
    """One node's incidents and findings again, every recommendation through the rules in report order: incidents
    (root cause first), then findings and their culprits, each against the incident it belongs to. What breaks a
    rule moves to the evidence (`withheld`)."""
    vetting = Vetting(facts)
    told = [_incident(incident, vetting) for incident in incidents]
    within = {f_id: answering(incident) for incident in incidents for f_id in incident.finding_ids}
    said = {f_id: {r.key: r for r in incident.recommendations} for incident in told for f_id in incident.finding_ids}
    kept = [
        _finding(
            _worded_as(finding, said[finding.id]), vetting, replace(within[finding.id], start=finding.start, end=finding.end)
        )
        if finding.id in within
        else _finding(
            finding,
            vetting,
            Answering(finding.start, finding.end, frozenset({finding.kind}), held=_held([finding]), named=bool(finding.causes)),
        )
        for finding in findings
    ]
    # An incident holds the findings it folds in as the report shows them: vetted.
    by_id = {id(old): new for old, new in zip(findings, kept)}
    return [replace(i, findings=[by_id.get(id(f), f) for f in i.findings]) for i in told], kept


def _worded_as(finding: Finding, said: dict[tuple, Recommendation]) -> Finding:
    """`finding` quoting its incident's recommendation where both make the same one (a change of one setting, which two
    detectors word differently): one fix, one wording, under the incident and under each of its findings."""
    return replace(finding, recommendations=[said.get(r.key, r) for r in finding.recommendations])


def _incident(incident: Incident, vetting: Vetting) -> Incident:
    causes, withheld = [], []
    about = answering(incident)
    for cause in [incident.root_cause, *incident.candidates]:
        recs, held = vetting.vet(cause.recommendations, about)
        causes.append(replace(cause, recommendations=recs))
        withheld += held
    recs, held = vetting.vet(incident.recommendations, about)
    return replace(
        incident,
        root_cause=causes[0],
        candidates=causes[1:],
        recommendations=recs,
        withheld=list(dict.fromkeys(incident.withheld + withheld + held)),
    )


def _finding(finding: Finding, vetting: Vetting, about: Answering) -> Finding:
    recs, withheld = vetting.vet(finding.recommendations, about)
    # A culprit named as a cause is listed twice (culprits and causes): vetted as often, as one value.
    culprits: dict[int, Culprit] = {}
    for culprit in finding.culprits + finding.causes:
        now = culprits.get(id(culprit), culprit)
        kept, more = vetting.vet(now.recommendations, about)
        culprits[id(culprit)] = replace(now, recommendations=kept)
        withheld += more
    return replace(
        finding,
        recommendations=recs,
        culprits=[culprits[id(c)] for c in finding.culprits],
        causes=[culprits[id(c)] for c in finding.causes],
        withheld=list(dict.fromkeys(finding.withheld + withheld)) if withheld else finding.withheld,
    )
