"""`checkpoint_stall`: latency spikes that keep landing inside checkpoints.

A spike is aligned when it overlaps [checkpoint start, end + one period]
(docs/metrics.md §5). Spikes land in checkpoints by chance too, in proportion to
the time checkpoints take, so a finding needs aligned spikes far more often
than chance: for each spike, the chance is the share of the episode's time
where a spike of its length would touch a checkpoint; the count of aligned
spikes is tested against those chances (Poisson-binomial tail) and must be
MIN_LIFT times what chance gives, or, when checkpoints leave no room for
that, every spike of the episode with one in nearly every checkpoint. Aligned
spikes closer than EPISODE_GAP checkpoint intervals (MIN_EPISODE_GAP at
least) form one episode, one finding. A checkpoint that outlasts the
checkpoint interval leaves no headroom (docs/metrics.md §11): with a spike inside
it, that is a finding even when it happened once; such checkpoints as close
as aligned spikes form one episode, one finding.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from analysis.advice import changes
from analysis.advice.recommendation import Recommendation
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series import spikes as spikes_module
from analysis.series.checkpoints import Checkpoint, InWindow, by_window, in_window
from analysis.series.spans import Spans
from analysis.series.spikes import ADJECTIVE, Spike
from analysis.series.stats import at_least
from analysis.series.windows import between
from analysis.text import clock, duration, ms, pct, span

KIND = "checkpoint_stall"
MIN_ALIGNED = 3
MAX_P_VALUE = 1e-3
MIN_LIFT = 2.0  # aligned spikes at least this many times what chance gives...
# ...or, where checkpoints take half the time or more (SERVER-21652's 25 s in 60 s, or coarse sampling) and
# leave no room for twice chance, every spike aligned and a spike in nearly every checkpoint of the episode
# (a run of chance alignments among random spikes, picked out as an episode, has the first, not the second).
MOST_CHECKPOINTS = 0.9
EPISODE_GAP = 5  # checkpoint intervals...
# ...or this, when longer: a node set to checkpoint every second is in one episode
# until it has had a minute (mongod's default interval) without a stall.
MIN_EPISODE_GAP = dt.timedelta(seconds=60)
CRITICAL_MS = 1000.0
CRITICAL_OVERRUN = 2  # ...or a checkpoint this many checkpoint intervals long: the next one waited a whole interval
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "A latency spike is aligned with a checkpoint when it overlaps the checkpoint or the sampling period after it. "
    "Spikes land in checkpoints by chance too, in proportion to the time checkpoints take, so a finding needs "
    f"at least {MIN_ALIGNED} aligned spikes, {MIN_LIFT:g} times what chance gives and unlikely by chance "
    f"(p < {MAX_P_VALUE:g}), or, when checkpoints take so much of the time that this is impossible, every spike "
    f"aligned with one in at least {MOST_CHECKPOINTS * 100:g} % of the checkpoints. Aligned spikes less than "
    f"{EPISODE_GAP} checkpoint intervals apart (at least {MIN_EPISODE_GAP.total_seconds():g} s) are one episode and "
    "one finding. A checkpoint that outlasts the checkpoint interval leaves no headroom: with a latency spike "
    f"inside it, it is a finding even once. Critical: a spike of {CRITICAL_MS / 1000:g} s or more, or a checkpoint "
    f"lasting at least {CRITICAL_OVERRUN:g} times the checkpoint interval."
)
DETECTOR = Detector(
    reads_spikes=True,
    order=10,
    kinds=(KIND,),
    names=("checkpoint stall",),
    method=METHOD,
    reads=(
        "reads_latency_ms",
        "writes_latency_ms",
        "commands_latency_ms",
        "checkpoint_running",
        "checkpoint_time_ms",
        "checkpoint_last_ms",
        "cache_dirty_pct",
    ),
    # Writes stall behind the checkpoint: tickets held, throughput down, clients time out and reconnect;
    # dirty data left behind pushes the cache past its triggers; secondaries fall behind; a primary too stalled to answer heartbeats loses its role.
    sets_off=("cache_pressure", "ticket_exhaustion", "throughput_dip", "connection_storm", "replication_lag", "primary_change"),
    panels=(
        ("latency, ms", ("reads_latency_ms", "writes_latency_ms", "commands_latency_ms"), True),
        ("dirty, %", ("cache_dirty_pct",), False),
    ),
    # A chain of long checkpoints: the write load, an index build or pinned history behind it. The interval bears on it; the
    # cache size does not: the dirty data a checkpoint writes is bounded by a share of the cache, so a small cache shortens them.
    explained_by=("write_load", "index_build", "pinned_history"),
    settings=("checkpoint_interval",),
)


@dataclass
class _Aligned:
    spike: Spike
    checkpoint: Checkpoint


def _union_s(spans: list[tuple[dt.datetime, dt.datetime]], lo: dt.datetime, hi: dt.datetime) -> float:
    total, cursor = 0.0, lo
    for a, b in sorted(spans):
        a, b = max(a, cursor), min(b, hi)
        if b > a:
            total += (b - a).total_seconds()
            cursor = b
    return total


def _chance(
    spike: Spike, windows: list[tuple[dt.datetime, dt.datetime]], lo: dt.datetime, hi: dt.datetime, period: dt.timedelta
) -> float:
    """Share of [lo, hi] where a spike as long as this one would start and touch a checkpoint. Spikes
    start on sample times and touching counts, so the starts from a - length to b, both included,
    are one period more than the span between them."""
    length = spike.end - spike.start
    span = (hi - lo).total_seconds()
    return min(1.0, _union_s([(a - length - period, b) for a, b in windows], lo, hi) / span) if span > 0 else 1.0


def _aligned(spike: Spike, checkpoints: Spans[Checkpoint]) -> Checkpoint | None:
    """The first checkpoint whose window (padded by a period) the spike meets."""
    return next(iter(checkpoints.overlapping(spike.start, spike.end)), None)


def _dirty_at(ctx: Context, when: dt.datetime) -> float | None:
    if not ctx.has("cache_dirty_pct"):
        return None
    before = between(ctx.series, end=when).tail(1)["cache_dirty_pct"]
    return float(before[0]) if len(before) and before[0] is not None else None


def _spike_row(ctx: Context, aligned: _Aligned, previous_end: dt.datetime | None) -> dict:
    """One aligned spike, with the dirty data its checkpoint started from."""
    c, s = aligned.checkpoint, aligned.spike
    at_start = _dirty_at(ctx, c.start)
    after_previous = _dirty_at(ctx, previous_end) if previous_end else None
    target = ctx.thresholds.value("eviction_dirty_target")
    return {
        "op": s.op,
        "spike_start": s.start,
        "spike_end": s.end,
        "peak_ms": round(s.peak_ms, 1),
        "baseline_ms": round(s.baseline_ms, 2),
        "checkpoint_start": c.start,
        "checkpoint_end": c.end,
        "checkpoint_s": round(c.seconds, 1),
        "checkpoint_source": c.source,
        "dirty_pct_at_checkpoint_start": None if at_start is None else round(at_start, 2),
        "dirty_pct_after_previous_checkpoint": None if after_previous is None else round(after_previous, 2),
        # Dirty data built up when the checkpoint started above the dirty target eviction works towards.
        "dirty_built_up": None if at_start is None or target is None else at_start > target,
    }


def _episodes(aligned: list[_Aligned], gap: dt.timedelta) -> list[list[_Aligned]]:
    episodes: list[list[_Aligned]] = []
    for a in sorted(aligned, key=lambda a: a.spike.start):
        if episodes and a.spike.start - episodes[-1][-1].spike.end <= gap:
            episodes[-1].append(a)
        else:
            episodes.append([a])
    return episodes


def _recommendations(ctx: Context, rows: list[dict], start: dt.datetime, end: dt.datetime) -> list[Recommendation]:
    t = ctx.thresholds.within(start, end)
    more_often = changes.checkpoint_more_often(t, "Checkpoint more often so each one writes less")
    # An interval that is itself the problem comes first.
    unusual = more_often is not None and changes.unusual_interval(t) is not None
    recs = [more_often] if unusual else []
    checkpoints = {r["checkpoint_start"]: r for r in rows}
    built = [r for r in checkpoints.values() if r["dirty_built_up"]]
    if built:
        peak = max(r["dirty_pct_at_checkpoint_start"] for r in built)
        # The dirty target and its source: the change's own words say them.
        n = len(checkpoints)
        which = (
            "the checkpoint"
            if n == 1
            else f"each of the {n} checkpoints"
            if len(built) == n
            else f"{len(built)} of the {n} checkpoints"
        )
        why = f"dirty data built up to {peak:.1f} % of the cache before {which}"
        recs += [
            changes.more_eviction_threads(t, "Let eviction write dirty data out between checkpoints with more worker threads"),
            changes.earlier_dirty_eviction(
                t, "Let eviction write dirty data out between checkpoints from a lower dirty target", why
            ),
        ]
    if more_often and not unusual:
        recs.append(more_often)
    # No "check the disk": a saturated device is a finding of its own, which says so with its numbers.
    return [r for r in recs if r is not None]


def _stalled_share(episode: list[_Aligned], checkpoints: list[Checkpoint]) -> float:
    """The share of the checkpoints from the episode's first to its last with an aligned spike; one
    checkpoint seen twice (FTDC and its log lines) counts once."""
    first, last = episode[0].checkpoint.start, episode[-1].checkpoint.start
    runs: list[list[Checkpoint]] = []
    for c in sorted((c for c in checkpoints if first <= c.start <= last), key=lambda c: c.start):
        if runs and c.start <= max(r.end for r in runs[-1]):
            runs[-1].append(c)
        else:
            runs.append([c])
    hit = {id(a.checkpoint) for a in episode}
    return sum(any(id(c) in hit for c in run) for run in runs) / max(1, len(runs))


@dataclass
class _Verdict:
    """One operation class's test over its own part of an episode."""

    aligned: list[_Aligned]
    spikes: int  # of that class in the episode's span
    k: int
    expected: float
    p_value: float
    coverage: float


def _judged(
    ctx: Context, episode: list[_Aligned], spikes: Spans[Spike], checkpoints: Spans[Checkpoint], pad: dt.timedelta
) -> _Verdict | None:
    """The episode's spikes of one operation class tested against chance on their own: another class's spikes
    (a long read's completion credited in one sample) neither dilute nor lift them."""
    lo = episode[0].spike.start - pad * 2
    hi = episode[-1].spike.end + pad * 2
    first, last = ctx.first, ctx.last
    if first is None or last is None:
        return None  # no sample: nothing to place the spikes in (an episode's spikes come from samples)
    lo, hi = max(lo, first), min(hi, last)
    op = episode[0].spike.op
    local = [s for s in spikes.overlapping(lo, hi) if s.op == op]
    local_cks = by_window(checkpoints.overlapping(lo, hi), pad)
    windows = list(zip(local_cks.starts, local_cks.ends))  # each padded by a period
    chances = [_chance(s, windows, lo, hi, pad) for s in local]
    k = sum(1 for s in local if _aligned(s, local_cks) is not None)
    expected = sum(chances)
    p_value = at_least(chances, k)
    coverage = _union_s(windows, lo, hi) / max((hi - lo).total_seconds(), 1e-9)
    lifted = k >= MIN_LIFT * expected or (k == len(local) and _stalled_share(episode, local_cks.items) >= MOST_CHECKPOINTS)
    if k < MIN_ALIGNED or p_value > MAX_P_VALUE or not lifted:
        return None
    return _Verdict(episode, len(local), k, expected, p_value, coverage)


def _episode_finding(
    ctx: Context, episode: list[_Aligned], spikes: Spans[Spike], checkpoints: Spans[Checkpoint], pad: dt.timedelta
) -> Finding | None:
    """One finding for the operation classes whose spikes in the episode each pass the test on their own."""
    verdicts = [
        v
        for op in sorted({a.spike.op for a in episode})
        if (v := _judged(ctx, [a for a in episode if a.spike.op == op], spikes, checkpoints, pad)) is not None
    ]
    if not verdicts:
        return None
    episode = sorted((a for v in verdicts for a in v.aligned), key=lambda a: a.spike.start)
    ops = {a.spike.op for a in episode}
    k, total, expected = sum(v.k for v in verdicts), sum(v.spikes for v in verdicts), sum(v.expected for v in verdicts)
    p_value, coverage = max(v.p_value for v in verdicts), max(v.coverage for v in verdicts)
    rows, previous_end = [], None
    for a in episode:
        previous = ctx.checkpoint_spans.last_ended_before(a.checkpoint.start)
        previous_end = previous.end if previous is not None else None
        rows.append(_spike_row(ctx, a, previous_end))
    peak = max(episode, key=lambda a: a.spike.peak_ms).spike
    n_ck = len({(a.checkpoint.start, a.checkpoint.end) for a in episode})
    op_names = "/".join(ADJECTIVE[o] for o in sorted(ops))
    start = min(min(a.spike.start, a.checkpoint.start) for a in episode)
    end = max(max(a.spike.end, a.checkpoint.end) for a in episode)
    usual = ctx.usual_latency(peak.op, start, peak.baseline_ms, in_title=True)
    # The checkpoints of the finding's own window, counted once: its title, and the root cause that quotes them.
    counted = in_window(ctx.checkpoint_spans, start, end, ctx.since(start))
    among = f"{n_ck} of the {counted.count}" if counted is not None and counted.count > n_ck else f"{n_ck}"
    return Finding(
        kind=KIND,
        severity="critical" if peak.peak_ms >= CRITICAL_MS else "warning",
        start=start,
        end=end,
        subject=f"{op_names} latency spiked in {among} checkpoints over {duration((end - start).total_seconds())}",
        statement=f"up to {ms(peak.peak_ms)}",
        usual=usual,
        reasoning=(
            f"{k} of {total} {op_names} latency spikes ({pct(k / total)}) fell inside a checkpoint or the sampling period after one; "
            # The chance each spike had of meeting one (`_chance`: the checkpoints with the period after each, widened by
            # the spike's own length), on average: the share the expected count is of, not the checkpoints' share of time.
            f"placed at random, a spike as long as each would have met one {pct(expected / total)} of the time on average "
            f"(chance alone: {expected:.1f} spikes; p = {p_value:.1e}). Worst: {ms(peak.peak_ms)} mean {ADJECTIVE[peak.op]} latency at "
            f"{clock(peak.peak_at)}, {peak.factor:,.0f}× the median of the 10 minutes before it."
            + (f" {_in_window(counted)} took {counted.against_usual()}." if counted is not None else "")
        ),
        evidence={
            "metrics": ctx.paths(
                *(f"{op}_latency_ms" for op in sorted(ops)),
                "checkpoint_time_ms",
                "checkpoint_last_ms",
                "checkpoint_running",
                "cache_dirty_pct",
            ),
            "aligned_spikes": rows,
            "spikes": total,
            "aligned": k,
            "expected_by_chance": round(expected, 2),
            "p_value": p_value,
            "aligned_time_share": round(coverage, 4),
            "checkpoints_in_window": counted,
            "thresholds": {"spike": spikes_module.RULE, "checkpoint_interval": changes.interval_text(ctx.thresholds)},
            "baseline": {"latency_ms": round(usual.latency_ms, 3)},
        },
        recommendations=_recommendations(ctx, rows, start, end),
    )


def _in_window(counted: InWindow) -> str:
    return "The checkpoints in the window" if counted.count > 1 else "The checkpoint in the window"


def _episode_gap(interval_s: float) -> dt.timedelta:
    return max(EPISODE_GAP * dt.timedelta(seconds=interval_s), MIN_EPISODE_GAP)


def _long_episodes(
    ctx: Context, spikes: list[Spike], pad: dt.timedelta, claimed: set, interval: float
) -> list[list[tuple[Checkpoint, list[Spike]]]]:
    """Checkpoints longer than the interval with a latency spike inside, those less than
    EPISODE_GAP intervals apart in one episode."""
    episodes: list[list[tuple[Checkpoint, list[Spike]]]] = []
    for c in ctx.checkpoints:
        if c.seconds <= interval or (c.start, c.end) in claimed:
            continue
        inside = [s for s in spikes if s.start <= c.end + pad and s.end >= c.start]
        if not inside:
            continue
        if episodes and c.start - episodes[-1][-1][0].end <= _episode_gap(interval):
            episodes[-1].append((c, inside))
        else:
            episodes.append([(c, inside)])
    return episodes


def _covered(spans: list[tuple[dt.datetime, dt.datetime]]) -> float:
    """Seconds covered by the union of `spans`."""
    total, reach = 0.0, None
    for start, end in sorted(spans):
        if reach is not None and start < reach:
            start = reach
        if end > start:
            total += (end - start).total_seconds()
            reach = end if reach is None else max(reach, end)
    return total


def _long_checkpoints(ctx: Context, spikes: list[Spike], pad: dt.timedelta, claimed: set) -> list[Finding]:
    """One finding per episode of checkpoints longer than the interval with a latency spike inside (no headroom left)."""
    interval = ctx.thresholds.value("checkpoint_interval")
    if not interval:
        return []
    out = []
    for episode in _long_episodes(ctx, spikes, pad, claimed, interval):
        checkpoints = [c for c, _ in episode]
        inside = list({id(s): s for _, found in episode for s in found}.values())
        longest = max(checkpoints, key=lambda c: c.seconds)
        start, end = checkpoints[0].start, checkpoints[-1].end
        peak = max(inside, key=lambda s: s.peak_ms)
        ops = "/".join(ADJECTIVE[o] for o in sorted({s.op for s in inside}))
        # The time latency was high inside them: the union of each spike's part inside a checkpoint (spikes of reads and
        # of writes overlap; their sum could exceed the window).
        stalled = _covered([(max(s.start, c.start), min(s.end, c.end + pad)) for c, found in episode for s in found])
        dirty = _dirty_at(ctx, longest.start)
        usual = ctx.usual_latency(peak.op, start, peak.baseline_ms)
        rows = [_spike_row(ctx, _Aligned(s, c), None) for c, found in episode for s in found]
        # The checkpoints of the window counted once: those past the interval are told as a share of them, the count the
        # root cause quotes.
        counted = in_window(ctx.checkpoint_spans, start, end, ctx.since(start))
        among = (
            f"{len(episode)} of the {counted.count}"
            if counted is not None and counted.count > len(episode)
            else f"{len(episode)}"
        )
        what = (
            f"A {duration(longest.seconds)} checkpoint"
            if len(episode) == 1
            else f"{among} checkpoints over {duration((end - start).total_seconds())}, up to {duration(longest.seconds)},"
        )
        unusual = changes.unusual_interval(ctx.thresholds)
        out.append(
            Finding(
                kind=KIND,
                severity="critical"
                if peak.peak_ms >= CRITICAL_MS or longest.seconds >= CRITICAL_OVERRUN * interval
                else "warning",
                start=start,
                end=end,
                subject=f"{what} longer than the {interval:g} s interval, with {ops} latency up to {ms(peak.peak_ms)}",
                reasoning=(
                    f"{what} ran past the {changes.interval_text(ctx.thresholds)} checkpoint interval from {span(start, end)} "
                    f"(the longest from {clock(longest.start)}, {longest.seen_in}), so each next one had no headroom. "
                    f"{ops.capitalize()} latency spiked for {duration(stalled)} inside {'it' if len(episode) == 1 else 'them'}, up to {ms(peak.peak_ms)}"
                    + (f"; dirty data was {dirty:.1f} % of the cache when the longest started." if dirty is not None else ".")
                    + (f" The interval itself is the problem: {unusual}." if unusual else "")
                    + (f" {_in_window(counted)} took {counted.against_usual()}." if counted is not None else "")
                ),
                evidence={
                    "metrics": ctx.paths(
                        *(f"{s.op}_latency_ms" for s in inside), "checkpoint_last_ms", "checkpoint_time_ms", "cache_dirty_pct"
                    ),
                    "checkpoints": [
                        {"start": c.start, "end": c.end, "seconds": round(c.seconds, 1), "source": c.source} for c in checkpoints
                    ],
                    "checkpoints_in_window": counted,
                    "aligned_spikes": rows,
                    "thresholds": {"checkpoint_interval": changes.interval_text(ctx.thresholds)},
                    "baseline": {"latency_ms": round(usual.latency_ms, 3)},
                },
                recommendations=_recommendations(ctx, rows, start, end),
                usual=usual,
            )
        )
    return out


def detect(ctx: Context) -> list[Finding]:
    if not ctx.checkpoints:
        missing = [] if ctx.has("checkpoint_last_ms") else ["checkpoint statistics"]
        return [ctx.not_checked(KIND, "Checkpoint stalls", missing)] if missing else []
    if not any(ctx.has(f"{op}_latency_ms") for op in ("reads", "writes", "commands")):
        return [ctx.not_checked(KIND, "Checkpoint stalls", ["opLatencies"])]
    period = dt.timedelta(seconds=float(aggregates.median(ctx.series["period_s"]) or 1))
    interval = ctx.thresholds.value("checkpoint_interval") or 60
    spikes = ctx.spikes
    # Both in order of start: a spike meets a checkpoint's window padded by one sampling period.
    padded, spike_spans = by_window(ctx.checkpoints, period), Spans.of(spikes, lambda s: (s.start, s.end))
    aligned = [_Aligned(s, c) for s in spikes if (c := _aligned(s, padded)) is not None]
    findings = []
    for episode in _episodes(aligned, _episode_gap(interval)):
        found = _episode_finding(ctx, episode, spike_spans, padded, period)
        if found is not None:
            findings.append(found)
    claimed = {(r["checkpoint_start"], r["checkpoint_end"]) for f in findings for r in f.evidence["aligned_spikes"]}
    return findings + _long_checkpoints(ctx, spikes, period, claimed)
