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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from analysis.advice.recommendation import Recommendation
from analysis.findings.context import Context
from analysis.findings.culprits import at_once, concurrency
from analysis.findings.culprits import describe as describe_culprit
from analysis.findings.detectors import LINKS, RECORDS, disk_saturation, explained_by
from analysis.findings.detectors.connection_storm import KIND as STORM
from analysis.findings.finding import Culprit, Finding
from analysis.incidents import configuration, held_resources, limits, sharding, stalls, workload
from analysis.incidents.incident import RootCause
from analysis.series import aggregates
from analysis.series.checkpoints import InWindow, in_window
from analysis.series.windows import between
from analysis.settings import SETTINGS
from analysis.text import clock, counted, duration, mb_per_s, ms, pct, plural, span
from ftdc.frames import TIME_COLUMN

# Kinds whose chain the write load drives when nothing else explains it: dirty data outrunning eviction and checkpoints.
WRITE_LOAD_KINDS = explained_by("write_load")
# What a root cause cannot see without the log, said where it would have named it.
NO_LOG = (
    "no mongod log was read, and without one the operations, their clients, index builds and transactions behind it "
    "cannot be seen"
)
NO_LOG_LOAD = "no mongod log was read, so the clients and namespaces carrying it are not named"
# How much later than its effect a one-way cause may be first seen and still lead the chain.
LEAD = dt.timedelta(seconds=30)
# Checkpoints this many times their usual length ran long.
LONGER = 2.0
# Checkpoints starting this share of the interval sooner or later than it: their cadence is a fact of its own.
CADENCE_DEPARTS = 0.1
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


UNTIMED = dt.datetime.max.replace(tzinfo=dt.timezone.utc)


def order(kinds: dict[str, list[Finding]]) -> list[str]:
    """Kinds in causal order: each kind after the present kinds that can cause it and began no later (or up to
    LEAD later, when it cannot cause them back: detectors see a cause and its effect a few samples apart);
    ties (and cycles such as dirty cache ↔ long checkpoints) by when each began."""
    # A finding without a start (context about a node with no sample, an incident of its own) comes last.
    first = {k: min(f.start or UNTIMED for f in fs) for k, fs in kinds.items()}

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


def _operations(findings: list[Finding]) -> list[RootCause]:
    """The COLLSCANs attribution named as causes, one candidate per culprit, ranked by the time they held in the
    finding where they held the most (findings of one incident overlap: their times are not added), each told in that
    finding's window: the numbers its culprit table shows, not recomputed over another window."""
    held: dict[tuple, tuple[Culprit, list[str], Finding]] = {}
    for f in findings:
        for c in f.causes:
            key = (c.ns, c.command, c.shape or c.query_hash, c.collscan)
            culprit, ids, where = held.get(key, (c, [], f))
            held[key] = (culprit, ids + [f.id], where) if culprit.held_s >= c.held_s else (c, ids + [f.id], f)
    out = []
    for culprit, ids, where in sorted(held.values(), key=lambda v: -v[0].held_s):
        total, recs = culprit.held_s, culprit.recommendations
        runs = counted(culprit.count, "run")
        out.append(
            RootCause(
                kind="operation",
                summary=(
                    f"{plural(culprit.count, 'COLLSCAN')} of {culprit.ns or 'an unknown namespace'} ({culprit.command or 'query'}: {runs}, "
                    f"longest {duration(culprit.max_ms / 1000)}, {at_once(culprit, where.seconds)} in {where.id}'s "
                    f"{duration(where.seconds)})"
                ),
                evidence={
                    "mechanism": "collscan",
                    "culprit": f"in {where.id}'s window: {describe_culprit(culprit, where.seconds)}",
                    "ns": culprit.ns,
                    "command": culprit.command,
                    "plan_summary": culprit.plan_summary,
                    "shape": culprit.shape,
                    "query_hash": culprit.query_hash,
                    "held_s": round(total, 1),
                    "concurrency": round(concurrency(culprit, where.seconds), 2),
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
                # What set it off where its detector says it, else its own account: the title is the headline already.
                summary=top.cause or top.reasoning,
                evidence={"finding": top.id, **_figures(top)},
                recommendations=list(top.recommendations),
                findings=[f.id for f in kinds[kind]],
                headline=top.title,
            )
        )
    return out


def _figures(finding: Finding) -> dict[str, Any]:
    """A finding's evidence without its long per-spike rows, its metric paths and its detector's thresholds (the
    finding's own evidence keeps them, beside the text that explains them)."""
    return {k: v for k, v in finding.evidence.items() if k not in ("aligned_spikes", "metrics", "thresholds")}


def _write_load(
    ctx: Context, kinds: dict[str, list[Finding]], load: workload.LoadChange | None, start: dt.datetime, end: dt.datetime
) -> list[RootCause]:
    """Dirty data outrunning eviction and checkpoints: the write load against its usual (operations and documents), dirty
    data and the checkpoints the file holds. A load that fell, or with nothing before it to measure against, is no cause."""
    present = [k for k in WRITE_LOAD_KINDS if k in kinds]
    if not present or load is None or load.direction in (None, "fell"):
        return []
    series = ctx.series
    during = between(series, start, end)
    evidence: dict[str, Any] = load.evidence()
    told = load.told()
    # Operations as clients count them: each request finished (opLatencies), not opcounters' mix of units.
    finished = [c for c in ("reads_per_s", "writes_per_s", "commands_per_s") if c in during.columns]
    total = float(during.select(pl.sum_horizontal(finished).mean()).item() or 0)
    if total > load.writes:
        evidence["operations_per_s_all"] = round(total)
    rates, docs = workload.mix(during), workload.documents(during)
    carried = workload.carriers(ctx.logs.slow_ops if ctx.logs is not None else None, start, end, writes=True)
    evidence.update(
        mechanism="write_load",
        ns=carried[0]["ns"] if carried else None,
        operations_per_s={op: round(rate) for op, rate in rates},
        documents_per_s={done: round(rate) for done, rate in docs},
        carried_by=carried,
    )
    in_all = f", {evidence['operations_per_s_all']:,} operations/s in all" if "operations_per_s_all" in evidence else ""
    unchanged = load.direction == "unchanged"
    over = ""  # dirty data past its target, as each sentence quotes it (the evidence's one value)
    dirty_peak: float | None = None
    most_dirty = aggregates.greatest(during["cache_dirty_pct"]) if "cache_dirty_pct" in during.columns else None
    if most_dirty is not None:
        dirty = dirty_peak = round(float(most_dirty), 1)
        target = ctx.thresholds.value("eviction_dirty_target")
        evidence["dirty_pct_peak"] = dirty
        evidence["eviction_dirty_target"] = ctx.thresholds.describe("eviction_dirty_target")
        if target is not None and dirty > target:
            over = f"up to {dirty:.1f} % of the cache against the {target:g} % target"
    counted, where = _counted_checkpoints(ctx, kinds.get("checkpoint_stall", []), start, end)
    behaviour = _checkpoint_behaviour(ctx, counted, where, evidence) if counted is not None else None
    # Checkpoints are what the load outran when the chain holds a long one, or they ran far longer than usual; checkpoints
    # of their usual length are told, never named the mechanism (eviction is, for a cache chain).
    usual_s = evidence.get("checkpoint_usual_s")
    checkpoints = counted is not None and (
        "checkpoint_stall" in kinds or usual_s is None or counted.longest_s >= LONGER * max(usual_s, 1.0)
    )
    mix = workload.told(rates, docs, carried) if rates or docs or carried else None
    unseen = [NO_LOG_LOAD] if ctx.logs is None else []
    if unchanged and not checkpoints and not over:
        # Eviction falling behind a steady load is said by dirty data past its target: without it (a cache full of
        # clean pages) this candidate does not hold, and is not offered.
        return []
    fixes: list[Recommendation] = []
    if unchanged:
        # A load that did not change is not what changed: the cause is what its numbers show, dirty data the node wrote out
        # too slowly under that steady load: built up between checkpoints (so each started with more to write), or while
        # they ran, or outrunning eviction.
        steady = f"a steady write load ({told}{in_all})"
        target = ctx.thresholds.value("eviction_dirty_target")
        built = _dirty_at_longest(ctx, start, end) if checkpoints else None
        if built is not None:
            evidence["dirty_pct_at_longest_checkpoint"] = built
        if built is not None and target is not None and built > target:
            lead = (
                f"dirty data built up past the eviction dirty target between checkpoints under {steady}, {built:.1f} % of "
                f"the cache when the longest started against the {target:g} % target, so the checkpoints had far more to "
                f"write than usual: {behaviour}"
            )
        elif checkpoints and counted is not None and built is not None and dirty_peak is not None and dirty_peak > built:
            # Dirty data below the target when the longest began: it built up while the checkpoints ran, not before.
            evidence["checkpoints_slower"] = True  # what its heading says: the checkpoints, not the load, changed
            ran = "checkpoints ran" if counted.count > 1 else "one checkpoint ran"
            disk = _disk_at_longest(ctx, start, end)
            lead = (
                f"{ran} far longer than usual under {steady}, with no more dirty data to write than usual: {behaviour}; "
                f"dirty data rose while {'they' if counted.count > 1 else 'it'} ran, from {built:.1f} % of the cache when the longest "
                f"started to {dirty_peak:.1f} %{_past_dirty_limits(ctx, during, dirty_peak)}; "
            )
            if disk is not None:  # the device slowed: what made the checkpoint write slowly, and what to check
                lead += disk.said
                evidence.update(disk.evidence)
                fixes = [disk.fix]
            else:
                lead += (
                    "what slowed the checkpoint is not in what the node records (its disks were no slower than in its "
                    "other checkpoints)"
                )
        elif checkpoints:
            lead = f"checkpoints ran far longer than usual under {steady}: {behaviour}"
            lead += f"; dirty data built up while they ran, {over}" if over else ""
        else:
            lead = f"eviction fell behind {steady}" + (f": dirty data {over}" if over else "")
            lead += f"; {behaviour}" if behaviour else ""
        parts = [lead, *([f"the load: {mix}"] if mix else []), *unseen]
    else:
        parts = [f"write load ({told}{in_all})", *([mix] if mix else []), *unseen]
        parts += [f"dirty data {over}"] if over else []
        parts += [behaviour] if behaviour else []
    outran = "checkpoints" if checkpoints else "eviction"
    headline = f"Write load ({told}) outran {outran}"
    if unchanged:  # then what did: the checkpoints against their usual length, or eviction
        headline = (
            (
                (
                    f"Checkpoints up to {duration(counted.longest_s)}"
                    if counted.count > 1
                    else f"A {duration(counted.longest_s)} checkpoint"
                )
                + (f" (usually {duration(usual_s)})" if usual_s is not None else "")
                + f" under an unchanged write load ({load.writes:,.0f} write operations/s{in_all})"
            )
            + (
                f", dirty data rising from {built:.1f} % to {dirty_peak:.1f} % of the cache while "
                + ("they" if counted.count > 1 else "it")
                + " ran"
                if built is not None and dirty_peak is not None and dirty_peak > built and built <= (target or 0)
                else ""
            )
            if checkpoints and counted is not None
            else f"Eviction fell behind an unchanged write load ({load.writes:,.0f} write operations/s{in_all})"
        )
        if checkpoints and counted is not None:
            # The findings whose subject is the checkpoints' length, which this headline already tells: the incident's
            # title does not say it again after its arrow.
            evidence["told_in_headline"] = [
                f.id for f in kinds.get("checkpoint_stall", []) if isinstance(f.evidence.get("checkpoints"), list)
            ]
    return [
        RootCause(
            kind="workload",
            summary="; ".join(parts),
            evidence=evidence,
            recommendations=fixes,
            headline=headline,
            findings=[f.id for k in present for f in kinds[k]],
        )
    ]


@dataclass(frozen=True)
class SlowedDisk:
    """A device slower per request at its usual throughput over the longest checkpoint: the sentence, its figures, its fix."""

    said: str
    evidence: dict[str, Any]
    fix: Recommendation


def _disk_at_longest(ctx: Context, start: dt.datetime, end: dt.datetime) -> SlowedDisk | None:
    """The device that slowed over the window's longest checkpoint: busy all the time (the disk saturation detector's
    bar) with requests taking its factor times their usual time, at no more than its usual throughput times the factor
    at which that detector says the device itself slowed (usual: the device's median outside the checkpoint); None where
    no device did, or the disks are not recorded."""
    ran = ctx.checkpoint_spans.overlapping(start, end)
    if not ran:
        return None
    longest = max(ran, key=lambda c: c.seconds)
    rows = between(ctx.series, longest.start, longest.end)
    for dev in (c.split(".", 1)[1] for c in ctx.series.columns if c.startswith("disk_util_pct.")):
        util, wait, mb = (f"{c}.{dev}" for c in ("disk_util_pct", "disk_await_ms", "disk_mb_per_s"))
        if wait not in rows.columns or mb not in rows.columns or not rows.height:
            continue
        now = {c: float(aggregates.mean(rows[c]) or 0) for c in (util, wait, mb)}
        was_util, was_wait, was_mb = (_usual_in_checkpoints(ctx, c, longest) for c in (util, wait, mb))
        if was_util is None or was_wait is None or was_mb is None:
            continue
        if now[util] < disk_saturation.UTIL_PCT or now[mb] > disk_saturation.SLOWED * was_mb:
            continue
        if now[wait] < disk_saturation.AWAIT_FACTOR * max(was_wait, 0.1):
            continue
        figures = (
            f"{now[util]:.0f} % busy at {ms(now[wait])} per request against {was_util:.0f} % and {ms(was_wait)} "
            f"in its other checkpoints, at their {mb_per_s(was_mb)}"
        )
        return SlowedDisk(
            said=f"the disk {dev} slowed while the longest ran: {figures}, so the checkpoint wrote slowly",
            evidence={
                "device": dev,
                "util_pct_mean": round(now[util], 1),
                "usual_util_pct": round(was_util, 1),
                "await_ms_mean": round(now[wait], 1),
                "usual_await_ms": round(was_wait, 2),
                "device_mb_per_s": round(now[mb], 1),
                "device_usual_mb_per_s": round(was_mb, 1),
            },
            fix=disk_saturation.check_volume(
                f"from {span(longest.start, longest.end)}", f"the disk {dev} was {figures} while the longest checkpoint ran"
            ),
        )
    return None


def _usual_in_checkpoints(ctx: Context, column: str, longest: Any) -> float | None:
    """A disk column's median over the capture's other checkpoints: a device busy while checkpoints write is their
    usual (docs/metrics.md), so a slow checkpoint's disk is judged against the checkpoints before and after it, not
    against the quiet time between them; None where the capture holds no other checkpoint's sample."""

    def naive(t: dt.datetime) -> dt.datetime:  # numpy's datetime64 holds UTC without a zone
        return t.astimezone(dt.timezone.utc).replace(tzinfo=None) if t.tzinfo else t

    others = sorted((naive(c.start), naive(c.end)) for c in ctx.checkpoints if c is not longest)
    if column not in ctx.series.columns or not others:
        return None
    times = ctx.series[TIME_COLUMN].to_numpy()
    starts = np.array([s for s, _ in others], dtype="datetime64[us]")
    ends = np.array([e for _, e in others], dtype="datetime64[us]")
    at = np.searchsorted(starts, times.astype("datetime64[us]"), side="right") - 1
    inside = (at >= 0) & (times.astype("datetime64[us]") <= ends[np.clip(at, 0, None)])
    values = ctx.series[column].filter(pl.Series(inside)).drop_nulls()
    return float(values.median()) if values.len() else None


def _past_dirty_limits(ctx: Context, during: pl.DataFrame, peak: float) -> str:
    """Where dirty data at its peak stood against the dirty trigger (past it, application threads evict: how many were
    busy evicting at most), else against the dirty target; empty below both."""
    trigger, target = ctx.thresholds.value("eviction_dirty_trigger"), ctx.thresholds.value("eviction_dirty_target")
    if trigger is not None and peak > trigger:
        said = f", past the {trigger:g} % eviction dirty trigger"
        evicting = aggregates.greatest(during["app_evict_threads"]) if "app_evict_threads" in during.columns else None
        if evicting is not None and float(evicting) >= 0.05:
            said += f", where application threads evict (up to {float(evicting):.1f} threads busy evicting at once)"
        return said
    return f", past the {target:g} % target" if target is not None and peak > target else ""


def _dirty_at_longest(ctx: Context, start: dt.datetime, end: dt.datetime) -> float | None:
    """The dirty data (% of the cache) the window's longest checkpoint started from (the last sample at or before its
    start): above the target, it built up before the checkpoint; below, while checkpoints ran. None where not recorded."""
    ran = ctx.checkpoint_spans.overlapping(start, end)
    if "cache_dirty_pct" not in ctx.series.columns or not ran:
        return None
    longest = max(ran, key=lambda c: c.seconds)
    at = between(ctx.series.select(TIME_COLUMN, "cache_dirty_pct"), end=longest.start).tail(1)["cache_dirty_pct"]
    return round(float(at[0]), 1) if len(at) and at[0] is not None else None


def _counted_checkpoints(
    ctx: Context, stalls: list[Finding], start: dt.datetime, end: dt.datetime
) -> tuple[InWindow | None, str]:
    """The checkpoints the root cause quotes, and whose window they were counted in: those the one checkpoint finding
    counted in its own window (the value it carries, not counted again), else those of the incident's window."""
    if len(stalls) == 1 and isinstance(counted := stalls[0].evidence.get("checkpoints_in_window"), InWindow):
        return counted, f"{stalls[0].id}'s"
    return in_window(ctx.checkpoint_spans, start, end, ctx.since(start)), "the incident's"


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
    # Back to back takes two; one checkpoint is told by its length, its whole run (past the window where it ran on).
    several = counted.count > 1
    text = (
        f"{counted.count} checkpoint{'s' if several else ''}{' back to back' if several and counted.time_share >= BACK_TO_BACK else ''} in {where} "
        f"{duration((end - start).total_seconds())} (checkpointing {pct(counted.time_share)} of the time), "
        f"{'' if several else 'lasting '}{counted.against_usual()}"
    )
    if counted.usual_s is not None:
        evidence.update(checkpoint_usual_s=counted.usual_s, checkpoints_before=counted.usual_of)
    starts = sorted(c.start for c in ctx.checkpoint_spans.overlapping(start, end))
    if len(starts) >= 3:
        every = statistics.median((b - a).total_seconds() for a, b in zip(starts, starts[1:]))
        if not interval.value or abs(every - interval.value) > CADENCE_DEPARTS * interval.value:
            evidence["checkpoint_every_s"] = round(every, 1)  # the interval in effect says it otherwise
        if interval.value and every < interval.value / 3:
            assumed = " assumed" if interval.source == SETTINGS["checkpoint_interval"].default_source else ""
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


def _undetermined(ctx: Context, findings: list[Finding], load: workload.LoadChange | None) -> RootCause:
    """No candidate: what was ruled out (a write load that fell) and what would tell (the log, a longer capture)."""
    missing, said = [], ["cause not determined"]
    evidence: dict[str, Any] = {}
    if load is not None and load.direction == "fell" and set(WRITE_LOAD_KINDS) & {f.kind for f in findings}:
        evidence.update(load.evidence())
        said.append(f"the write load fell ({load.told()}), so it is not what outran the node")
    if ctx.logs is None:
        missing.append("the mongod log of this window (names the operations that held the resource)")
        said.append(NO_LOG)
    stall = stalls.server_stall(ctx, findings)
    # A longer capture tells only where the capture holds less than the hour before the episode, and of a change that
    # led to it: not of a stall below the operations, which the host's own record of those seconds tells.
    starts = [f.start for f in findings if f.start is not None]
    since = ctx.since(min(starts)) if starts else None
    if stall is None and (since is None or min(starts) - since < dt.timedelta(minutes=59)):
        missing.append("a longer capture (the hour before shows what changed)")
    # What is known in place of a cause replaces the words "cause not determined", which the cause's heading says.
    if stall is not None:
        said[0] = stall.told()
        evidence.update(stall.evidence())
        missing += evidence.pop("would_tell")
    # A rise in latency with nothing the node records beside it says so in its own words, not "not determined" alone.
    if any(f.evidence.get("nothing_moved") for f in findings):
        said[0] = ("" if stall is None else said[0] + "; ") + (
            "nothing the node records moved with the latency (the load, the disks, the cache, chunk migrations)"
        )
    if missing:
        evidence["would_tell"] = missing
    return RootCause(
        kind="undetermined",
        summary="; ".join(said),
        evidence=evidence,
        findings=[f.id for f in findings],
        headline="cause not determined" + (" (no mongod log was read)" if ctx.logs is None else ""),
        recommendations=stall.recommendations() if stall is not None else [],
    )


def rank_causes(ctx: Context, findings: list[Finding]) -> list[RootCause]:
    """Every candidate for one group's root cause, the best first; the last resort is "not determined"."""
    if any(f.start is None or f.end is None for f in findings):
        return [_undetermined(ctx, findings, None)]  # no window to read the series or the log in
    start, end = min(f.window[0] for f in findings), max(f.window[1] for f in findings)
    kinds = by_kind(findings)
    chain = order(kinds)
    starters = _starters(chain, kinds)
    moved = workload.change(ctx.series, start, end, ctx.since(start))
    load = _write_load(ctx, kinds, moved, start, end)
    risen = [c for c in load if c.evidence.get("load_change") == "rose"]
    candidates = (
        _operations(findings)
        + held_resources.index_builds(ctx, kinds, start, end)
        + held_resources.pinned_history(ctx, kinds, start, end)
        + sharding.chunk_migrations(ctx, kinds, start, end)
        + [c for c in starters if c.kind == "restart"]
        + _restarted(ctx, chain, kinds, start)
        + [c for c in starters if c.kind == "resource"]
        + limits.cache_too_small(ctx, kinds, start, end)
        + [_storm_load(ctx, c, kinds, start, end) for c in starters if c.kind == "workload"]
        # A load that rose is what changed: it leads the settings that were there before it (which it is told beside).
        + risen
        + [_under_load(c, load) for c in configuration.outliers(ctx.thresholds, ctx.node, set(kinds), start, end)]
        + [c for c in load if c not in risen]
    )
    return candidates or [_undetermined(ctx, findings, moved)]


def _storm_load(
    ctx: Context, cause: RootCause, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime
) -> RootCause:
    """A connection storm told with its load: the operations its clients began as they connected, through the incident's
    window (the tickets they queued for, the dip they made), as the log shows them."""
    storms = kinds.get(STORM, [])
    if not storms or cause.evidence.get("finding") not in {f.id for f in storms}:
        return cause
    evidence = {**cause.evidence, "mechanism": "connection_storm"}
    if ctx.logs is None:
        return replace(
            cause, summary=f"{cause.summary}; {NO_LOG_LOAD}", evidence=evidence, headline=cause.headline or cause.summary
        )
    began = (min(f.window[0] for f in storms), max(f.window[1] for f in storms))
    carried = workload.carriers(ctx.logs.slow_ops, start, end, began=began)
    if not carried:
        return replace(cause, evidence=evidence)
    return replace(
        cause,
        summary=f"{cause.summary}; its load, the operations its clients began as they connected: {workload.carried_told(carried)}",
        headline=cause.headline or cause.summary,
        evidence={**evidence, "carried_by": carried, "ns": carried[0]["ns"]},
    )


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
