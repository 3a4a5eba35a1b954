"""`throughput_dip`: a stretch in which the node did far less work, for a server-side reason.

Operations finished per second (opLatencies: each request once, where opcounters count an insert
batch's documents one by one and a getMore batch as one) in 5-second buckets (one sampling period
when longer) are compared with the median bucket of the 10 minutes before. A dip is below DIP_SHARE of that
while the baseline is a load worth losing (MIN_BASELINE_OPS: well above the chatter of an idle node) and rests on
the same process's recording: the 10 minutes before hold no restart and no FTDC gap (a new process, or a machine
that slept, is measured against nothing before it). Clients pausing also make dips, so a dip counts only when the
server shows why: operations queued for tickets or the global lock, serverStatus itself stalling, a sample
missing, or a latency spike long enough to have held the work back (SPIKE_HELD_OPS).

A dip that begins as this node gives up the primary on purpose (the log's `replSetStepDown`, or another member
taking it over by priority or to catch up) is the role change's expected effect: context, told as the role change.

A dip is told as its episode: the buckets around it still below LOW_SHARE of the baseline the episode
began from (a rolling baseline would follow a long depression down and cut it short), with its typical
depth, then its worst part, the run of dip buckets holding the lowest one. A node at half its work for
six minutes whose worst ten seconds fell to 47 % is one finding saying both, its window the six minutes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.detectors.replication import ROLE_CHANGE_LEAD, planned_role_change, recorded
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.rolling import medians_before
from analysis.series.spikes import ADJECTIVE
from analysis.series.windows import between
from analysis.text import clock, duration, ms, pct, span_before
from ftdc.frames import TIME_COLUMN

KIND = "throughput_dip"
BASELINE = dt.timedelta(minutes=10)
BUCKET_S = 5  # or one sampling period, when longer: a bucket without a sample is no bucket
DIP_SHARE = 0.5
# The episode around a dip: buckets still this far below the baseline. A steady load varies well inside a
# quarter of its median from one bucket to the next, so a bucket below three quarters of it is still the dip's.
LOW_SHARE = 0.75
# A load worth losing. An idle node still answers its own chatter: each driver's monitor sends hello every 10 s per
# client, members exchange heartbeats every 2 s, a secondary's oplog fetcher waits in getMores, and the TTL monitor
# wakes every minute; a laptop or a quiet container adds up to a handful of operations a second. A baseline a good
# order of magnitude above that is clients' work; below it, a fall is the clients pausing.
MIN_BASELINE_OPS = 100.0
# A latency explains a dip only when it could have held the work back. By Little's law, N clients sending requests
# back to back at latency L finish N / L a second: to halve a baseline of B a second, the latency must reach at least
# N / B >= 1 / B seconds. A spike whose peak times the baseline rate is under one operation was no wait for anyone.
SPIKE_HELD_OPS = 1.0
STALLED_COLLECT_MS = 1000.0  # serverStatus taking a second to answer
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    f"Operations finished per second (each request once, however many documents it carried) in {BUCKET_S}-second buckets (one sampling period when longer) compared with the "
    f"median bucket of the 10 minutes before: a dip is below {DIP_SHARE * 100:g} % of it while that baseline is at least "
    f"{MIN_BASELINE_OPS:g} operations/s (an idle node's own chatter, drivers' monitoring, heartbeats, the oplog fetcher, "
    "is a handful a second) and those 10 minutes hold no restart and no FTDC gap (a baseline comes from the same process). "
    f"Its episode runs on while the buckets stay below {LOW_SHARE * 100:g} % of the "
    "baseline before it began, and is told with its typical depth, then its worst part. Clients pausing make dips too, so a dip counts only when the server shows "
    "why: operations queued for tickets or the global lock, serverStatus itself taking "
    f"{STALLED_COLLECT_MS / 1000:g} s or more to answer, a sample missing, or a latency spike long enough to hold work back "
    "(its peak at least one second divided by the baseline rate: a shorter one leaves even a client sending requests back to "
    "back its usual rate). A dip that begins as this node gives up the primary on purpose (a replSetStepDown command, a "
    "priority or catch-up takeover in its log) is the role change's expected effect and is context."
)
DETECTOR = Detector(
    reads_spikes=True,
    order=70,
    kinds=(KIND,),
    names=("throughput dip",),
    method=METHOD,
    reads=(
        "finished_per_s",
        "documents_per_s",
        "collect_ms",
        "connections",
        "read_queued",
        "write_queued",
        "read_ticket_queue",
        "write_ticket_queue",
    ),
    sets_off=(),  # an effect only: it names the queue, stall or latency behind it
    panels=(("operations/s", ("finished_per_s",), False), ("queued", ("read_queued", "write_queued"), False)),
    explained_by=("restart",),  # a new process: the work drops while clients reconnect
)


@dataclass(frozen=True)
class Episode:
    """A dip as people read it: the whole stretch of lower work with its typical rate, then its worst part."""

    start: dt.datetime
    end: dt.datetime
    baseline: float  # operations/s in the 10 minutes before it began
    since: dt.datetime  # the earliest sample the baseline rests on: 10 minutes back, or where the capture begins
    typical: float  # the median bucket's operations/s over the episode
    worst_start: dt.datetime
    worst_end: dt.datetime
    lowest: float  # the lowest bucket's operations/s

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @property
    def worst_seconds(self) -> float:
        return (self.worst_end - self.worst_start).total_seconds()

    @property
    def one_part(self) -> bool:
        """The worst part is (nearly) all of it: one depth and one length say it."""
        return self.worst_seconds >= 0.8 * self.seconds

    def told(self) -> str:
        """`Throughput at about 52 % of normal for 6 min, at worst 47 % for 10 s`."""
        if self.one_part:
            return f"Throughput fell to {pct(self.lowest / self.baseline)} of normal for {duration(self.seconds)}"
        return (
            f"Throughput at about {pct(self.typical / self.baseline)} of normal for {duration(self.seconds)}, "
            f"at worst {pct(self.lowest / self.baseline)} for {duration(self.worst_seconds)}"
        )

    def explained(self) -> str:
        before = (
            f"against {self.baseline:,.0f}/s in {span_before(self.since, self.start, BASELINE)}, "
            f"from {clock(self.start)} for {duration(self.seconds)}"
        )
        if self.one_part:
            return f"Operations finished fell to {self.lowest:,.0f}/s {before}"
        return (
            f"Operations finished fell to {self.typical:,.0f}/s (the median 5-second bucket) {before}; at worst "
            f"{self.lowest:,.0f}/s from {clock(self.worst_start)} for {duration(self.worst_seconds)}"
        )

    def evidence(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "ops_per_s_median": self.typical,
            "share_median": self.typical / self.baseline,
            "worst": {
                "start": self.worst_start,
                "end": self.worst_end,
                "ops_per_s_min": self.lowest,
                "share_min": self.lowest / self.baseline,
            },
        }


def _role_change_dip(ctx: Context, episode: Episode, role_change: dict, reasons: list[str], documents: str) -> Finding:
    """A dip that is the expected effect of a planned role change: context, told as the role change. While a primary
    steps down it takes the replication state transition lock, kills the writes in progress and refuses new ones;
    then the clients' writes (and primary reads) go to the new primary."""
    at, how = role_change["at"], role_change["how"]
    return Finding(
        kind=KIND,
        severity="info",
        start=episode.start,
        end=episode.end,
        subject=f"{episode.told()} as the primary moved on purpose",
        statement=f"{how} at {clock(at)}",
        reasoning=(
            f"A planned role change: {recorded(role_change)}. {episode.explained()}"
            f" ({'; '.join(reasons)}). A primary stepping down holds back its writes while it changes role, then its "
            "clients' writes and primary reads go to the new primary: the expected dip of a role change, not a fault." + documents
        ),
        evidence={
            "metrics": ctx.paths("finished_per_s", "documents_per_s", "read_queued", "write_queued", "collect_ms"),
            "baseline": {"finished_per_s": episode.baseline},
            "episode": episode.evidence(),
            "ops_per_s_min": episode.lowest,
            "role_change": role_change,
            "reasons": reasons,
        },
    )


def _bucket(ctx: Context) -> dt.timedelta:
    return dt.timedelta(seconds=max(BUCKET_S, round(float(aggregates.median(ctx.series["period_s"]) or 1))))


def _samples(ctx: Context) -> pl.DataFrame:
    """Each sample placed at the start of the interval its rate covers (longer when samples were missed), with
    what the server shows of waiting work then. A sample after a gap says nothing of a period's work (nor, across
    a restart, its counters): it stays where it is and its rate is not counted."""
    # Who waits for each kind of ticket, as the ticket findings count them: the ticket queue and the global lock's queue
    # are two gauges of one queue (the larger is kept), readers and writers two queues (added up at each sample).
    queues = {
        rw: [pl.col(c).fill_null(0) for c in (f"{rw}_queued", f"{rw}_ticket_queue") if ctx.has(c)] for rw in ("read", "write")
    }
    queued = {rw: pl.max_horizontal(gauges) if gauges else pl.lit(0) for rw, gauges in queues.items()}
    after_gap = pl.col("gap").fill_null(False)
    interval_ms = (pl.when(after_gap).then(0).otherwise(pl.col("interval_s").fill_null(0)) * 1000).round().cast(pl.Int64)
    return ctx.series.select(
        pl.col(TIME_COLUMN) - pl.duration(milliseconds=interval_ms),
        "finished_per_s",
        gap=after_gap,
        read_queued=queued["read"],
        write_queued=queued["write"],
        collect_ms=pl.col("collect_ms") if ctx.has("collect_ms") else pl.lit(None, pl.Float64),
        connections=pl.col("connections") if ctx.has("connections") else pl.lit(None, pl.Float64),
        # Where this stretch of one process's recording began: its first sample, or the last restart or gap before.
        since=pl.when(pl.col("restart").fill_null(False) | after_gap | (pl.int_range(pl.len()) == 0))
        .then(pl.col(TIME_COLUMN))
        .forward_fill(),
    )


def _buckets(samples: pl.DataFrame, width: dt.timedelta) -> pl.DataFrame:
    buckets = samples.group_by_dynamic(TIME_COLUMN, every=width).agg(
        ops=pl.col("finished_per_s").filter(~pl.col("gap")).mean(),
        connections=pl.col("connections").cast(pl.Float64).mean(),
        since=pl.col("since").max(),
    )
    # The medians of the 10 minutes before each bucket, none where those minutes reach before a restart or a gap: work
    # measured against another process, or against the hours before a machine slept, is no dip of this one.
    ops, connections = medians_before(buckets[TIME_COLUMN], [buckets["ops"], buckets["connections"]], BASELINE)
    clean = pl.col(TIME_COLUMN) - BASELINE >= pl.col("since")
    return buckets.with_columns(baseline=pl.when(clean).then(ops), usual_connections=pl.when(clean).then(connections)).drop(
        "since"
    )


def _while_low(samples: pl.DataFrame, start: dt.datetime, end: dt.datetime, below: float) -> dict[str, Any]:
    """What the server showed while the work was low: the samples of [start, end) whose own rate was under `below`
    (or not measured). A sample at either edge that already finished the normal work is not the dip's: the queue
    of the burst that ended before it, or of the next that begins, says nothing of why the work fell."""
    low = between(samples, start, end, closed="left").filter(
        pl.col("finished_per_s").is_null() | (pl.col("finished_per_s") < below)
    )
    # The longest queue at one sample, readers and writers together: each kind's own peak is its ticket finding's.
    total = low["read_queued"] + low["write_queued"]
    peak = low.row(int(total.arg_max()), named=True) if total.len() and total.max() else {"read_queued": 0, "write_queued": 0}
    return {
        "queued": {"readers": peak["read_queued"], "writers": peak["write_queued"]},
        "collect_ms": low["collect_ms"].max(),
        "gap": bool(low["gap"].any()),
    }


def _queue_said(queued: dict[str, float]) -> str:
    """`254 readers and writers queued`: the total at one sample, named by who was in it, so that it is not read as
    either kind's own peak."""
    who = " and ".join(name for name, count in queued.items() if count)
    return f"{sum(queued.values()):,.0f} {who} queued"


def _last_low(ctx: Context, end: dt.datetime, below: float, width: dt.timedelta) -> dt.datetime:
    """`end`, or later: the time of the last sample from the last bucket on whose own interval the rate was still
    below `below` operations/s. Stalled operations are credited when they finish, so a bucket that holds a stall's
    release averages the dip away, while the samples before the release measured it."""
    after = between(ctx.series, end - width, closed="right").select(TIME_COLUMN, "finished_per_s", pl.col("gap").fill_null(False))
    last = end
    for time, ops, gap in after.iter_rows():
        if gap or ops is None or ops >= below:
            break
        last = max(last, time)
    return last


def _documents(ctx: Context, episode: Episode) -> dict[str, float] | None:
    """The documents per second (returned, inserted, updated, deleted) over the episode and in the 10 minutes before it,
    beside the operations: what users count of the work, where the node records it."""
    if not ctx.has("documents_per_s"):
        return None
    during = ctx.window(episode.start, episode.end)["documents_per_s"].drop_nulls()
    before = between(ctx.series, episode.start - BASELINE, episode.start, closed="left")["documents_per_s"].drop_nulls()
    if not (during.len() and before.len()):
        return None
    return {
        "episode": round(aggregates.known(aggregates.median(during))),
        "before": round(aggregates.known(aggregates.median(before))),
    }


def _clients_left(episode: dict) -> bool:
    """The open connections fell below DIP_SHARE of their usual count: the clients asking for the work went."""
    now, usual = episode["connections"], episode["usual_connections"]
    return now is not None and bool(usual) and now < DIP_SHARE * usual


def _run_end(inside: np.ndarray, joined: np.ndarray, at: int, step: int, bound: int) -> int:
    """The last row, walking from `at` by `step` (1 or -1) no further than `bound`, of the run of adjacent `inside`
    rows holding `at`."""
    # A row continues the run when it is inside and joined to the row before it (walking forwards: itself joined
    # to its predecessor; backwards: its successor joined to it). Looked at in growing chunks, so an episode costs
    # its own length, not the rest of the week's buckets.
    reached, size = at, 16
    while reached != bound:
        if step == 1:
            lo, hi = reached + 1, min(bound, reached + size)
            ok = inside[lo : hi + 1] & joined[lo : hi + 1]
        else:
            lo, hi = max(bound, reached - size), reached - 1
            ok = (inside[lo : hi + 1] & joined[lo + 1 : hi + 2])[::-1]
        breaks = np.flatnonzero(~ok)
        if breaks.size:
            return reached + step * int(breaks[0])
        reached, size = reached + step * ok.size, size * 2
    return reached


def _episodes(buckets: pl.DataFrame, width: dt.timedelta) -> list[dict[str, Any]]:
    """Each dip's episode, as bucket rows: `first`, `last`, the `baseline` it began from, and its worst part
    (`worst_first`, `worst_last`: the run of dip buckets holding the lowest). A bucket with no rate (its samples all
    came after a gap) is inside a dip: the node did not answer."""
    times = buckets[TIME_COLUMN].dt.epoch("us").to_numpy()
    ops = buckets["ops"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    baselines = buckets["baseline"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    # joined[i]: bucket i follows bucket i - 1 with no empty bucket between (never for the first).
    joined = np.concatenate(([False], np.diff(times) <= width // dt.timedelta(microseconds=1)))
    unrated = np.isnan(ops)
    with np.errstate(invalid="ignore"):
        # Each bucket judged against its own baseline, untouched by the episode (no baseline: never low).
        low_on_own = ~np.isnan(baselines) & (unrated | (ops < LOW_SHARE * baselines))
        dips = np.flatnonzero((baselines >= MIN_BASELINE_OPS) & (ops < DIP_SHARE * baselines))
    out: list[dict[str, Any]] = []
    for dip in dips.tolist():
        if out and dip <= out[-1]["last"]:
            continue  # inside the episode found from an earlier dip
        first = _run_end(low_on_own, joined, dip, -1, 0)
        baseline = float(baselines[first] if not np.isnan(baselines[first]) else baselines[dip])
        with np.errstate(invalid="ignore"):
            low, dipped = unrated | (ops < LOW_SHARE * baseline), unrated | (ops < DIP_SHARE * baseline)
        last = _run_end(low, joined, dip, 1, len(times) - 1)
        rated = np.flatnonzero(~unrated[first : last + 1])
        lowest = first + int(rated[np.argmin(ops[first : last + 1][rated])]) if rated.size else dip
        worst = (
            (_run_end(dipped, joined, lowest, -1, first), _run_end(dipped, joined, lowest, 1, last))
            if dipped[lowest]
            else (dip, dip)
        )
        out.append(
            {
                "first": first,
                "last": last,
                "baseline": baseline,
                "lowest": lowest,
                "worst_first": worst[0],
                "worst_last": worst[1],
            }
        )
    return out


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("finished_per_s"):
        return [ctx.not_checked(KIND, "Throughput dips", ["opLatencies"])]
    width = _bucket(ctx)
    samples = _samples(ctx)
    buckets = _buckets(samples, width)
    spikes = ctx.spikes
    findings = []
    for found in _episodes(buckets, width):
        rows = buckets.slice(found["first"], found["last"] - found["first"] + 1)
        baseline = found["baseline"]
        start, end = rows[TIME_COLUMN][0], rows[TIME_COLUMN][-1] + width
        # What the server showed is read over the whole episode as it is told (to its last low sample), so that the
        # queue it quotes is the one of the window it gives.
        told_end = _last_low(ctx, end, LOW_SHARE * baseline, width)
        e = {
            "start": start,
            "end": end,
            **_while_low(samples, start, told_end, LOW_SHARE * baseline),
            "connections": rows["connections"].min(),
            "usual_connections": rows["usual_connections"][0],
        }
        reasons = []
        if any(e["queued"].values()):
            reasons.append(_queue_said(e["queued"]))
        if e["collect_ms"] is not None and e["collect_ms"] >= STALLED_COLLECT_MS:
            reasons.append(f"serverStatus took {ms(e['collect_ms'])} to answer")
        if e["gap"]:
            reasons.append("FTDC missed samples")
        # Only a spike that could have held the work back (SPIKE_HELD_OPS) says why the work fell.
        inside = [
            s for s in spikes if s.start < e["end"] and s.end > e["start"] and s.peak_ms / 1000 * baseline >= SPIKE_HELD_OPS
        ]
        if inside:
            peak = max(inside, key=lambda s: s.peak_ms)
            reasons.append(f"{ADJECTIVE[peak.op]} latency {ms(peak.peak_ms)}")
        if not reasons or (
            _clients_left(e) and not (any(e["queued"].values()) or inside or (e["collect_ms"] or 0) >= STALLED_COLLECT_MS)
        ):
            continue  # clients sent less, or left: not the server's doing
        end = told_end
        worst_start = buckets[TIME_COLUMN][found["worst_first"]]
        worst_end = min(_last_low(ctx, buckets[TIME_COLUMN][found["worst_last"]] + width, DIP_SHARE * baseline, width), end)
        low = buckets["ops"][found["lowest"]]
        episode = Episode(
            start=e["start"],
            end=end,
            baseline=baseline,
            since=ctx.earliest_before(e["start"], BASELINE) or e["start"],
            typical=float(aggregates.median(rows["ops"]) or 0.0),
            worst_start=worst_start,
            worst_end=worst_end,
            lowest=float(low) if low is not None else 0.0,
        )
        documents = _documents(ctx, episode)
        said = f" Documents: {documents['episode']:,}/s against {documents['before']:,}/s before." if documents else ""
        # A role change as the dip began (not one inside a long depression that had begun before it).
        role_change = planned_role_change(ctx, episode.start, episode.start + ROLE_CHANGE_LEAD)
        if role_change is not None:
            findings.append(_role_change_dip(ctx, episode, role_change, reasons, said))
            continue
        findings.append(
            Finding(
                kind=KIND,
                severity="warning",
                start=episode.start,
                end=episode.end,
                subject=episode.told(),
                statement=reasons[0],
                reasoning=f"{episode.explained()}, while " + "; ".join(reasons) + "." + said,
                evidence={
                    "metrics": ctx.paths("finished_per_s", "documents_per_s", "read_queued", "write_queued", "collect_ms"),
                    "baseline": {"finished_per_s": baseline},
                    "episode": episode.evidence(),
                    "documents_per_s": documents,
                    "ops_per_s_min": episode.lowest,
                    "queued_at_peak": e["queued"],
                    "serverstatus_ms": e["collect_ms"],
                    "thresholds": {
                        "dip": f"< {DIP_SHARE:.0%} of the 10-minute median of {duration(width.total_seconds())} buckets, baseline ≥ {MIN_BASELINE_OPS:g} operations finished/s",
                        "episode": f"< {LOW_SHARE:.0%} of the baseline before it began",
                    },
                    "reasons": reasons,
                },
            )
        )
    return findings
