"""Incidents from findings: grouped by mechanism, told as a chain, root cause first.

Two warning or critical findings are one incident when one's kind can set off
the other's (the causal links each detector declares, `detectors.LINKS`) and
their windows lie within LINK_GAP of each other, or when they are of one kind
within REPEAT_GAP: periodic long checkpoints, dips every few seconds, ticket
windows seconds apart are one item of the chain. Findings that merely overlap,
with no mechanism between them, stay separate incidents; groups that one pinning of history
explains (idle transactions the reaper aborts one after another) are one incident. The chain orders the
kinds so that each follows the present kinds that can cause it; the root cause
comes from `root_causes`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from analysis.advice.recommendation import Recommendation, merged
from analysis.findings.context import Context
from analysis.findings.detectors import LINKS
from analysis.findings.finding import SEVERITIES, Finding
from analysis.incidents import held_resources
from analysis.incidents.incident import Incident, RootCause, Step
from analysis.incidents.root_causes import UNTIMED, by_kind, order, rank_causes, ranked, worst
from analysis.text import duration

# An effect follows its cause within this much (a queue builds, clients time out and reconnect).
LINK_GAP = dt.timedelta(seconds=60)
# Findings of one kind this close together are one episode of it.
REPEAT_GAP = dt.timedelta(seconds=120)
# A title names this many effects; the chain holds them all.
MAX_EFFECTS = 3


def _gap(a: Finding, b: Finding) -> dt.timedelta:
    """How far apart two windows are (zero when they overlap)."""
    (a_start, a_end), (b_start, b_end) = a.window, b.window
    return max(b_start - a_end, a_start - b_end, dt.timedelta(0))


def linked(a: Finding, b: Finding) -> bool:
    """One episode: the same kind close together, or a declared mechanism between the kinds (findings with windows)."""
    if a.kind == b.kind:
        return _gap(a, b) <= REPEAT_GAP
    mechanism = b.kind in LINKS.get(a.kind, ()) or a.kind in LINKS.get(b.kind, ())
    return mechanism and _gap(a, b) <= LINK_GAP


def group(findings: list[Finding]) -> list[list[Finding]]:
    """The warning and critical findings in groups connected by `linked`, each in time order, groups by start;
    a finding without a window (nothing to place it by) is a group of its own, last."""
    untimed = [[f] for f in findings if f.severity != "info" and (f.start is None or f.end is None)]
    problems = sorted(
        (f for f in findings if f.severity != "info" and f.start is not None and f.end is not None),
        key=lambda f: f.window,
    )
    parent = list(range(len(problems)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(problems):
        for j in range(i + 1, len(problems)):
            b = problems[j]
            if b.window[0] - a.window[1] > max(LINK_GAP, REPEAT_GAP):
                break  # sorted by start: no later one can be close to `a`
            if linked(a, b):
                parent[root(j)] = root(i)
    groups: dict[int, list[Finding]] = {}
    for i, f in enumerate(problems):
        groups.setdefault(root(i), []).append(f)
    return sorted(groups.values(), key=lambda g: g[0].window[0]) + untimed


def one_baseline(findings: list[Finding], ctx: Context) -> list[Finding]:
    """`findings`, those of one incident judged against one latency baseline per operation class: the hour before the
    incident's start (the earliest finding's quoted value when the data has no hour before), so one card never quotes
    two usual latencies of one class (each finding's own hour before differs when they start apart)."""
    again: dict[int, Finding] = {}
    for episode in one_pinning(group(findings), ctx):
        # An episode of several findings has their windows (`group`); a lone finding may have no start.
        starts = [f.start for f in episode if f.start is not None]
        if not starts:
            continue  # no start: no hour before it
        start = min(starts)
        quoted = [(f, f.usual) for f in episode if f.usual is not None]
        for op in {own.op for _, own in quoted}:
            quoting = sorted(((f, own) for f, own in quoted if own.op == op), key=lambda q: q[0].start or UNTIMED)
            usual = ctx.usual_latency(op, start, quoting[0][1].latency_ms)
            for f, own in quoting:
                if (own.latency_ms, own.before, own.since) != (usual.latency_ms, usual.before, usual.since):
                    again[id(f)] = f.usually(replace(usual, in_title=own.in_title))
    return [again.get(id(f), f) for f in findings]


def by_resource(findings: list[Finding]) -> list[list[Finding]]:
    """One kind's findings split by resource (read tickets and write tickets are two steps), in order of start (a
    finding without one is alone in its group: `group`)."""
    groups: dict[object, list[Finding]] = {}
    for f in sorted(findings, key=lambda f: f.start or UNTIMED):
        groups.setdefault(f.resource, []).append(f)
    return list(groups.values())


def id_order(findings: list[Finding]) -> list[str]:
    """The findings' ids as a reader counts them: F2 before F10 (the findings section lists them so)."""

    def number(finding: Finding) -> tuple[str, int]:
        prefix = finding.id.rstrip("0123456789")
        return prefix, int(finding.id[len(prefix) :] or 0)

    return [f.id for f in sorted(findings, key=number)]


def _extent(findings: list[Finding]) -> tuple[dt.datetime, dt.datetime]:
    """The earliest start and the latest end of findings that all have windows."""
    windows = [f.window for f in findings]
    return min(start for start, _ in windows), max(end for _, end in windows)


def _step(kind: str, findings: list[Finding]) -> Step:
    """One kind's findings in this episode as one link of the chain, told by the worst of them."""
    top = worst(findings)
    text = top.title
    start, end = top.start, top.end  # a lone finding's own (context about a node with no sample has none)
    if len(findings) > 1:  # several: each has its window (`group`)
        start, end = _extent(findings)
        text += f" (worst of {len(findings)} over {duration((end - start).total_seconds())})"
    metrics = list(dict.fromkeys(m for f in findings for m in f.evidence.get("metrics", [])))
    return Step(
        kind=kind,
        text=text,
        findings=id_order(findings),
        start=start,
        end=end,
        metrics=metrics,
        thresholds=dict(top.evidence.get("thresholds", {})),
    )


def _effect(findings: list[Finding], step: Step) -> str:
    """What an incident's title names of one step: its worst finding's subject, or the whole step when that title has no more to it."""
    top = worst(findings)
    return top.subject if top.statement else step.text


def _title(cause: RootCause, chain: list[tuple[Step, str]]) -> str:
    """Cause → effect: the root cause's phrase, then what the chain's steps did (the cause's own finding left out)."""
    own = {cause.evidence.get("finding"), *cause.evidence.get("told_in_headline", ())}
    effects = list(dict.fromkeys(effect for step, effect in chain if not own & set(step.findings)))
    phrase = cause.headline or cause.summary
    head = phrase[0].upper() + phrase[1:]
    if not effects:
        return head
    return f"{head} → " + "; ".join(e[0].lower() + e[1:] for e in effects[:MAX_EFFECTS])


def _recommendations(causes: list[RootCause], chain: list[str], kinds: dict[str, list[Finding]]) -> list[Recommendation]:
    """The root cause's fix first, then the other candidates', then each step's findings' (worst first): each piece of
    advice once (one setting once, whatever value a later one proposes), answering every finding that gave it."""
    recs = [r.answering(c.findings) for c in causes for r in c.recommendations]
    recs += [r.answering((f.id,)) for kind in chain for f in ranked(kinds[kind]) for r in f.recommendations]
    return merged(recs)


def incident(findings: list[Finding], ctx: Context, name: str) -> Incident:
    kinds = by_kind(findings)
    causes = rank_causes(ctx, findings)
    # The story starts where the root cause acts: the kinds of the findings it names lead, in causal order.
    named = {f.kind for f in findings if f.id in causes[0].findings}
    chain = sorted(order(kinds), key=lambda k: k not in named)
    parts = [same for k in chain for same in by_resource(kinds[k])]
    steps = [_step(same[0].kind, same) for same in parts]
    in_time = sorted(findings, key=lambda f: (f.start is None, f.start or dt.datetime.min.replace(tzinfo=dt.timezone.utc)))
    return Incident(
        id=name,
        start=in_time[0].start,
        end=max((f.end for f in findings if f.end is not None), default=None),
        severity=min((f.severity for f in findings), key=SEVERITIES.index),
        title=_title(causes[0], [(step, _effect(same, step)) for step, same in zip(steps, parts)]),
        chain=steps,
        root_cause=causes[0],
        finding_ids=id_order(findings),
        recommendations=_recommendations(causes, chain, kinds),
        candidates=causes[1:],
        findings=in_time,
    )


def _pinned(findings: list[Finding], ctx: Context) -> bool:
    """A group that history pinned in the cache can explain (its candidate holds)."""
    timed = [f for f in findings if f.start is not None and f.end is not None]
    kinds = by_kind(timed)
    if not timed or not any(k in held_resources.PINNED_HISTORY_KINDS for k in kinds):
        return False
    return bool(held_resources.pinned_history(ctx, kinds, *_extent(timed)))


def one_pinning(groups: list[list[Finding]], ctx: Context) -> list[list[Finding]]:
    """`groups` (in order of start), those that one pinning of history explains joined: transactions left idle one after
    another, each aborted by the reaper and the next opened at once, keep history pinned all along, and the cache and
    checkpoint episodes it sets off minutes apart are one incident, not one per transaction."""
    out: list[list[Finding]] = []
    for g in groups:
        previous = out[-1] if out else None
        if (
            previous is not None
            and g[0].start is not None
            and _pinned(previous, ctx)
            and _pinned(g, ctx)
            and held_resources.held_throughout(ctx, _extent(previous)[1], g[0].start)
        ):
            out[-1] = previous + g
        else:
            out.append(g)
    return out


def build(findings: list[Finding], ctx: Context, prefix: str = "I", first: int = 1) -> list[Incident]:
    """The incidents `findings` (their ids set) make on the node `ctx` describes, in time order, numbered `I1`, `I2`...
    (from `first`). The one place incidents are made: an analysis, its redacted copy and the replica set's incidents
    all come from here."""
    return [incident(g, ctx, f"{prefix}{n}") for n, g in enumerate(one_pinning(group(findings), ctx), first)]
