"""An incident's root cause, ranked among candidates, each with its evidence.

In rank order: an operation (a COLLSCAN the log shows holding a real share of
the window, `Finding.causes`: an operation that spent its time waiting is a
victim, never a candidate; an index build, or a transaction or cursor pinning
history, in a cache or checkpoint chain: `held_resources`), a restart (a loop of
them, or one just before a dip or a storm), a resource limit (the starting detector's
declared `root`: a saturated disk; or a cache too small for the working set, `limits`)
or a workload change that starts the chain (a TTL burst, a connection storm), a
configuration outlier in effect during the window
(`configuration`), the write load behind a chain of dirty cache and long
checkpoints; else "cause not determined", with what would tell.
"""

from __future__ import annotations

import datetime as dt
import statistics
from typing import Any

import polars as pl

from analysis.findings.context import Context
from analysis.findings.culprits import describe as describe_culprit
from analysis.findings.detectors import LINKS, RECORDS, explained_by
from analysis.findings.finding import Culprit, Finding
from analysis.incidents import configuration, held_resources, limits, workload
from analysis.incidents.incident import RootCause
from analysis.series.checkpoints import InWindow, in_window
from analysis.series.thresholds import SPEC
from analysis.series.windows import between
from analysis.text import clock, duration, pct
from ftdc.frames import TIME_COLUMN

# Kinds whose chain the write load drives when nothing else explains it: dirty data outrunning eviction and checkpoints.
WRITE_LOAD_KINDS = explained_by("write_load")
# A rate this far from the hour before it is a change worth naming.
CHANGED = 0.2
# How much later than its effect a one-way cause may be first seen and still lead the chain.
LEAD = dt.timedelta(seconds=30)
# How far back "before" reaches: the checkpoints' and the load's usual.
BEFORE = dt.timedelta(hours=1)
# Checkpoints running this share of the window run back to back.
BACK_TO_BACK = 0.8
# A chain that begins this soon after a new process's first sample (or a bucket before it) is the node coming back.
AFTER_RESTART = (dt.timedelta(seconds=10), dt.timedelta(seconds=60))
# The kinds a restart sets off by itself: the work drops while clients reconnect, and they reconnect at once.
RESTART_KINDS = explained_by("restart")


def by_kind(findings: list[Finding]) -> dict[str, list[Finding]]:
    kinds: dict[str, list[Finding]] = {}
    for f in findings:
        kinds.setdefault(f.kind, []).append(f)
    return kinds


def order(kinds: dict[str, list[Finding]]) -> list[str]:
    """Kinds in causal order: each kind after the present kinds that can cause it and began no later (or up to
    LEAD later, when it cannot cause them back: detectors see a cause and its effect a few samples apart);
    ties (and cycles such as dirty cache ↔ long checkpoints) by when each began."""
    first = {k: min(f.start for f in fs) for k, fs in kinds.items()}

    def precedes(c: str, k: str) -> bool:
        if k not in LINKS.get(c, ()):
            return False
        return first[c] <= first[k] or (c not in LINKS.get(k, ()) and first[c] - first[k] <= LEAD)

    placed: list[str] = []
    remaining = sorted(kinds, key=lambda k: first[k])
    while remaining:
        ready = [k for k in remaining if not any(precedes(c, k) for c in remaining if c != k)]
        chosen = (ready or remaining)[0]
        placed.append(chosen)
        remaining.remove(chosen)
    return placed


def ranked(findings: list[Finding]) -> list[Finding]:
    """Most severe first (a lone finding needs no window to rank)."""
    return list(findings) if len(findings) == 1 else sorted(findings, key=Finding.rank)


def worst(findings: list[Finding]) -> Finding:
    return ranked(findings)[0]


def _operations(findings: list[Finding], seconds: float) -> list[RootCause]:
    """The COLLSCANs attribution named as causes, one candidate per culprit, ranked by the time they held in the
    finding where they held the most (findings of one incident overlap: their times are not added)."""
    held: dict[tuple, tuple[Culprit, list[str], Finding]] = {}
    for f in findings:
        for c in f.causes:
            key = (c.ns, c.command, c.shape or c.query_hash, c.collscan)
            culprit, ids, where = held.get(key, (c, [], f))
            held[key] = (culprit, ids + [f.id], where) if culprit.held_s >= c.held_s else (c, ids + [f.id], f)
    out = []
    for culprit, ids, where in sorted(held.values(), key=lambda v: -v[0].held_s):
        total, recs = culprit.held_s, culprit.recommendations
        runs = f"{culprit.count} run{'s' if culprit.count != 1 else ''}"
        out.append(
            RootCause(
                kind="operation",
                summary=(
                    f"COLLSCANs of {culprit.ns or 'an unknown namespace'} ({culprit.command or 'query'}: {runs}, "
                    f"longest {duration(culprit.max_ms / 1000)}"
                    + (f", {total / seconds:.1f} running at once on average)" if seconds > 0 else ")")
                ),
                # Told in the window of the finding where it held the most: the numbers its culprit table shows.
                evidence={
                    "culprit": f"in {where.id}'s window: {describe_culprit(culprit, where.seconds)}",
                    "ns": culprit.ns,
                    "command": culprit.command,
                    "plan_summary": culprit.plan_summary,
                    "shape": culprit.shape,
                    "query_hash": culprit.query_hash,
                    "held_s": round(total, 1),
                    "concurrency": round(total / seconds, 2) if seconds > 0 else None,
                },
                recommendations=recs,
                findings=list(dict.fromkeys(ids)),
                headline=f"COLLSCAN {culprit.command or 'queries'} on {culprit.ns or 'an unknown namespace'} ({runs}, up to {duration(culprit.max_ms / 1000)})",
            )
        )
    return out


def _starters(chain: list[str], kinds: dict[str, list[Finding]]) -> list[RootCause]:
    """A detector whose kind starts the chain and declares a root (a TTL burst, a saturated disk...)."""
    out = []
    for kind in chain[:1]:
        record = RECORDS[kind]
        if record.root == "undetermined":
            continue
        top = worst(kinds[kind])
        out.append(
            RootCause(
                kind=record.root,
                summary=top.title,
                evidence={"finding": top.id, **_figures(top)},
                recommendations=list(top.recommendations),
                findings=[f.id for f in kinds[kind]],
            )
        )
    return out


def _figures(finding: Finding) -> dict[str, Any]:
    """A finding's evidence without its long per-spike rows."""
    return {k: v for k, v in finding.evidence.items() if k not in ("aligned_spikes", "metrics")}


def _write_load(ctx: Context, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """Dirty data outrunning eviction and checkpoints: the write rate, dirty data and checkpoint time the file holds."""
    present = [k for k in WRITE_LOAD_KINDS if k in kinds]
    series = ctx.series
    if not present or "writes_per_s" not in series.columns:
        return []
    during = between(series, start, end)
    before = between(series, end=start, closed="left").tail(3600)
    writes = float(during["writes_per_s"].mean() or 0)
    if not writes:
        return []
    usual = float(before["writes_per_s"].median() or 0) if before.height else None
    evidence: dict[str, Any] = {"writes_per_s": round(writes), "writes_per_s_before": None if usual is None else round(usual)}
    load = f"{writes:,.0f} write operations/s"
    # Operations as clients count them: each request finished (opLatencies), not opcounters' mix of units.
    finished = [c for c in ("reads_per_s", "writes_per_s", "commands_per_s") if c in during.columns]
    total = float(during.select(pl.sum_horizontal(finished).mean()).item() or 0)
    if total > writes:
        evidence["operations_per_s_all"] = round(total)
        load += f", {evidence['operations_per_s_all']:,} operations/s in all"
    changed = usual is not None and bool(usual) and abs(writes - usual) >= CHANGED * usual
    evidence["writes_changed"] = changed if usual is not None else None
    if changed:
        load += f", against {usual:,.0f} writes/s before"
    rates, docs = workload.mix(during), workload.documents(during)
    carried = workload.carriers(ctx.logs.slow_ops if ctx.logs is not None else None, start, end)
    evidence.update(
        operations_per_s={op: round(rate) for op, rate in rates},
        documents_per_s={done: round(rate) for done, rate in docs},
        carried_by=carried,
    )
    parts = [f"write load ({load})"]
    if rates or docs or carried:
        parts.append(workload.told(rates, docs, carried))
    if usual is not None and not changed:
        parts.append(f"the writes did not change against the hour before ({usual:,.0f}/s): the load is not what changed")
    if "cache_dirty_pct" in during.columns and during["cache_dirty_pct"].max() is not None:
        dirty = float(during["cache_dirty_pct"].max())
        target = ctx.thresholds.value("eviction_dirty_target")
        evidence["dirty_pct_peak"] = round(dirty, 2)
        evidence["eviction_dirty_target"] = ctx.thresholds.describe("eviction_dirty_target")
        if target is not None and dirty > target:
            parts.append(f"dirty data up to {dirty:.1f} % of the cache against the {target:g} % target")
    counted, where = _counted_checkpoints(ctx, kinds.get("checkpoint_stall", []), start, end)
    if counted is not None:
        parts.append(_checkpoint_behaviour(ctx, counted, where, evidence))
    checkpoints = counted is not None
    outran = "checkpoints" if checkpoints else "eviction"
    headline = f"Write load ({load}) outran {outran}"
    if usual is not None and not changed:  # then what did: the checkpoints against their usual length, or eviction
        usual_s = evidence.get("checkpoint_usual_s")
        headline = (
            (
                f"Checkpoints up to {duration(evidence['checkpoint_longest_s'])}"
                + (f" (usually {duration(usual_s)})" if usual_s is not None else "")
                + f" under an unchanged write load ({load})"
            )
            if checkpoints
            else f"Eviction fell behind an unchanged write load ({load})"
        )
    return [
        RootCause(
            kind="workload",
            summary="; ".join(parts),
            evidence=evidence,
            headline=headline,
            findings=[f.id for k in present for f in kinds[k]],
        )
    ]


def _counted_checkpoints(
    ctx: Context, stalls: list[Finding], start: dt.datetime, end: dt.datetime
) -> tuple[InWindow | None, str]:
    """The checkpoints the root cause quotes, and whose window they were counted in: those the one checkpoint finding
    counted in its own window (the value it carries, not counted again), else those of the incident's window."""
    if len(stalls) == 1 and isinstance(counted := stalls[0].evidence.get("checkpoints_in_window"), InWindow):
        return counted, f"{stalls[0].id}'s"
    return in_window(ctx.checkpoint_spans, start, end), "the incident's"


def _checkpoint_behaviour(ctx: Context, counted: InWindow, where: str, evidence: dict[str, Any]) -> str:
    """How the checkpoints in the window ran: how many, how long, how much of the time, how often they started
    against the interval in effect (when that is the assumed default, checkpoints starting far more often say it was set shorter)."""
    start, end = counted.start, counted.end
    interval = ctx.thresholds.current("checkpoint_interval")
    evidence.update(
        checkpoints_in_window=counted,
        checkpoints=counted.count,
        checkpoint_longest_s=counted.longest_s,
        checkpoint_time_share=counted.time_share,
        checkpoint_interval=ctx.thresholds.describe("checkpoint_interval"),
    )
    earlier = [c.seconds for c in ctx.checkpoint_spans.starting(start - BEFORE, start) if c.end < start]
    text = (
        f"{counted.count} checkpoint{'s' if counted.count != 1 else ''}{' back to back' if counted.time_share >= BACK_TO_BACK else ''} in {where} "
        f"{duration((end - start).total_seconds())}, up to {duration(counted.longest_s)} each ({pct(counted.time_share)} of the time)"
    )
    if earlier:
        evidence["checkpoint_usual_s"] = round(statistics.median(earlier), 1)
        text += f", against {duration(evidence['checkpoint_usual_s'])} usually in the hour before"
    starts = sorted(c.start for c in ctx.checkpoint_spans.overlapping(start, end))
    if len(starts) >= 3:
        every = statistics.median((b - a).total_seconds() for a, b in zip(starts, starts[1:]))
        evidence["checkpoint_every_s"] = round(every, 1)
        if interval.value and every < interval.value / 3:
            assumed = " assumed" if interval.source == SPEC["checkpoint_interval"].default_source else ""
            evidence["checkpoint_interval_note"] = (
                f"checkpoints started every {every:.0f} s against the{assumed} {interval.value:g} s interval"
                + ("; these files record no configuration, so syncdelay was likely set shorter" if assumed else "")
            )
            text += f", starting every {every:.0f} s (not every {interval.value:g} s{': the interval was likely set shorter' if assumed else ''})"
    return text


def _restarted(ctx: Context, chain: list[str], kinds: dict[str, list[Finding]], start: dt.datetime) -> list[RootCause]:
    """A restart the series shows just before the chain began, when the chain starts with what a restart does."""
    if not chain or chain[0] not in RESTART_KINDS or "restart" not in ctx.series.columns:
        return []
    before, after = AFTER_RESTART
    marks = ctx.series.select(TIME_COLUMN, "restart", previous=pl.col(TIME_COLUMN).shift(1)).filter(
        pl.col("restart"), pl.col(TIME_COLUMN).is_between(start - after, start + before)
    )
    if marks.is_empty():
        return []
    last, first = marks.row(-1)[2], marks.row(-1)[0]
    down = (first - last).total_seconds() if last is not None else None
    return [
        RootCause(
            kind="restart",
            summary=(
                f"mongod restarted at {clock(first)}"
                + (f" (down for at most {duration(down)})" if down is not None else "")
                + ": the work came back to a new process (clients reconnecting, counters from zero, a cold cache)"
            ),
            evidence={"restarted_at": first, "last_sample_before": last, "down_s": down},
            findings=[f.id for k in chain if k in RESTART_KINDS for f in kinds[k]],
            headline=f"a restart at {clock(first)}",
        )
    ]


def _undetermined(ctx: Context, findings: list[Finding]) -> RootCause:
    missing = []
    if ctx.logs is None:
        missing.append("the mongod log of this window (names the operations that held the resource)")
    missing.append("a longer capture (the hour before shows what changed)")
    return RootCause(
        kind="undetermined", summary="cause not determined", evidence={"would_tell": missing}, findings=[f.id for f in findings]
    )


def rank_causes(ctx: Context, findings: list[Finding]) -> list[RootCause]:
    """Every candidate for one group's root cause, the best first; the last resort is "not determined"."""
    if any(f.start is None or f.end is None for f in findings):
        return [_undetermined(ctx, findings)]  # no window to read the series or the log in
    start, end = min(f.start for f in findings), max(f.end for f in findings)
    kinds = by_kind(findings)
    chain = order(kinds)
    starters = _starters(chain, kinds)
    load = _write_load(ctx, kinds, start, end)
    candidates = (
        _operations(findings, (end - start).total_seconds())
        + held_resources.index_builds(ctx, kinds, start, end)
        + held_resources.pinned_history(ctx, kinds, start, end)
        + [c for c in starters if c.kind == "restart"]
        + _restarted(ctx, chain, kinds, start)
        + [c for c in starters if c.kind == "resource"]
        + limits.cache_too_small(ctx, kinds, start, end)
        + [c for c in starters if c.kind == "workload"]
        + [_under_load(c, load) for c in configuration.outliers(ctx.thresholds, ctx.node, set(kinds), start, end)]
        + load
    )
    return candidates or [_undetermined(ctx, findings)]


def _under_load(cause: RootCause, load: list[RootCause]) -> RootCause:
    """A checkpoint interval told with what it did: the write load it met and how the checkpoints ran."""
    if cause.evidence.get("setting") != "checkpoint_interval" or not load:
        return cause
    return RootCause(
        kind=cause.kind,
        summary=f"{cause.summary}, under a {load[0].summary}",
        evidence={**cause.evidence, "write_load": load[0].evidence},
        recommendations=cause.recommendations,
        findings=list(dict.fromkeys(cause.findings + load[0].findings)),
        headline=cause.summary,
    )
