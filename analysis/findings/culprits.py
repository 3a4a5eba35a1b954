"""Which operations were behind a finding's window, and what to change about them.

A slow operation ran during [ts - duration, ts] (the log line is written at
completion, docs/log-format.md §2). Culprits are the operations overlapping a
window, grouped by namespace, command, shape and plan, ranked by the time they
held there: their operation-seconds inside it less the share of their run they
spent waiting as the log records it (for cache, locks, the ticket queue, flow
control, disk reads; docs/log-format.md §3). Operations that mostly waited are the
incident's victims, never its cause. A ticket finding's culprits are the
operations that take that kind of ticket. A COLLSCAN is named as the cause only when it
overlapped and held a real share of that time; without a log, FTDC's
collection-scan counters are reported instead, and nothing is named.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import numpy as np
import polars as pl

from analysis.advice.indexes import recommend_index
from analysis.advice.recommendation import WRITE_COMMANDS, Recommendation, Runs, advise
from analysis.findings.finding import Culprit, Finding
from analysis.series.aggregates import greatest, mean, median
from analysis.series.operations import COUNTED, WRITES
from analysis.series.windows import between
from analysis.text import counted, duration
from ftdc.frames import TIME_COLUMN, series_of

# A COLLSCAN is a cause when it holds at least this share of the time slow operations
# held inside the window...
CAUSE_SHARE = 0.25
# ...and at least this share of the window itself (a 200 ms scan does not
# explain five minutes of exhausted tickets).
CAUSE_COVERAGE = 0.10
# The slow operations of a window are a connection storm's load when those that began during it held this share of their time.
STORM_LOAD = 0.5
TOP = 5
# Collection scans are counted when they finish (docs/metrics.md §1), so a scan
# that ran in the window may be counted up to this long after it.
COMPLETION_GRACE = dt.timedelta(minutes=5)


# What a slow-query line says an operation waited for (microseconds): docs/log-format.md §3. Lock
# acquisition, the ticket queue, flow control, cache space, WiredTiger's schema and handle locks, and
# disk reads: the device's time, which a checkpoint or another scan may hold.
WAITS = (
    "cache_wait_micros",
    "lock_wait_micros",
    "execution_queued_micros",
    "flow_control_micros",
    "schema_lock_wait_micros",
    "handle_lock_wait_micros",
    "read_micros",
)
# Where a scan's reading is the time it held the resource (cache pressure: the pages read fill the cache),
# its detector's record says (`Detector.reading_holds`); everywhere else reading from disk is a wait.
# A COLLSCAN reads the collection it scans: its disk reads are its work, not a wait, except the part of its
# run a checkpoint overlapped (the checkpoint's writes hold the device then; `checkpoint_share`).
SCAN_READS = "read_micros"
# A run queued for a ticket waited for the operations holding the pool: the part of the pool its own shape's
# runs held is its own work (a shape queueing behind itself is no victim), the rest a wait.
QUEUE = "execution_queued_micros"
# The pool a ticket queue waits on when the series does not record it: mongod's fixed default before 7.0.
DEFAULT_POOL = 128


def during_checkpoints(slow_ops: pl.DataFrame, checkpoints: list) -> pl.DataFrame:
    """`slow_ops` with `checkpoint_share`: the share of each run ([started, ts]) a checkpoint overlapped."""
    spans = sorted((c.start, c.end) for c in checkpoints)
    merged: list[list] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if not merged or slow_ops.is_empty():
        return slow_ops.with_columns(checkpoint_share=pl.lit(0.0))
    # Checkpoint-seconds before each instant, piecewise linear: a run's overlap is its value at ts less at started.
    points = np.array([t.timestamp() for span in merged for t in span])
    cumulative = np.concatenate([[0.0], np.cumsum([(b - a).total_seconds() for a, b in merged])])
    levels = np.repeat(cumulative, 2)[1:-1]
    started = slow_ops["started"].dt.epoch("ms").to_numpy().astype(float) / 1000
    ended = slow_ops["ts"].dt.epoch("ms").to_numpy().astype(float) / 1000
    inside = np.interp(ended, points, levels) - np.interp(started, points, levels)
    length = np.maximum(ended - started, 1e-3)
    # Through Arrow (`series_of`): polars' own path from numpy imports numpy.ma to look for a mask.
    return slow_ops.with_columns(checkpoint_share=series_of(np.nan_to_num(np.clip(inside / length, 0.0, 1.0))))  # no times: 0


def overlapping(slow_ops: pl.DataFrame, start: dt.datetime, end: dt.datetime, waits: tuple[str, ...] = WAITS) -> pl.DataFrame:
    """Slow operations that ran during [start, end], with `overlap_s` inside it, `held_s`, the part of it not
    spent in `waits` (each run's waits taken as spread evenly over it; a COLLSCAN's reads outside checkpoints
    are its work), and `queued_s`, the part spent in the ticket queue (whose it was is decided per shape, `rank`)."""
    lo = pl.max_horizontal(pl.col("started"), pl.lit(start, pl.Datetime("ms", "UTC")))
    hi = pl.min_horizontal(pl.col("ts"), pl.lit(end, pl.Datetime("ms", "UTC")))
    ms = pl.col("duration_ms").clip(lower_bound=1)

    def share(column: str) -> pl.Expr:
        return pl.col(column).fill_null(0) / 1000 / ms if column in waits and column in slow_ops.columns else pl.lit(0.0)

    others = [share(c) for c in waits if c not in (SCAN_READS, QUEUE)]
    in_checkpoint = pl.col("checkpoint_share").fill_null(0.0) if "checkpoint_share" in slow_ops.columns else pl.lit(0.0)
    reading = pl.when(pl.col("plan_kind") == "COLLSCAN").then(share(SCAN_READS) * in_checkpoint).otherwise(share(SCAN_READS))
    waited, queued = "\0waited", "\0queued"  # each share once, in steps, dropped before the frame is returned
    # The work as one expression held the waits three times over, and polars took longer planning it than computing
    # it: 2.5 ms a window against 1.9 ms in steps, side by side, for the demo node's 27 slow operations (a run ranks
    # several).
    return (
        slow_ops.lazy()
        .filter(COUNTED, pl.col("started") <= end, pl.col("ts") >= start)
        .with_columns(
            overlap_s=(hi - lo).dt.total_milliseconds().clip(lower_bound=0) / 1000,
            **{waited: (pl.sum_horizontal(others) if others else pl.lit(0.0)) + reading},
        )
        .with_columns(pl.min_horizontal(share(QUEUE), (1 - pl.col(waited)).clip(lower_bound=0)).alias(queued))
        .with_columns(
            held_s=pl.col("overlap_s") * (1 - pl.col(waited) - pl.col(queued)).clip(0, 1),
            queued_s=pl.col("overlap_s") * pl.col(queued),
        )
        .drop(waited, queued)
        .collect()
    )


def culprit_key() -> list[pl.Expr]:
    """What makes operations one culprit: namespace, command, shape (or the server's hash), COLLSCAN or not."""
    return [
        pl.col("ns"),
        pl.col("command"),
        pl.coalesce("shape", pl.lit("hash:") + pl.coalesce("query_shape_hash", "query_hash")),
        pl.col("plan_kind") == "COLLSCAN",
    ]


def rank(
    slow_ops: pl.DataFrame,
    start: dt.datetime,
    end: dt.datetime,
    limit: int = TOP,
    *,
    resource: str | None = None,
    waits: tuple[str, ...] = WAITS,
    pools: dict[str, float] | None = None,
) -> list[Culprit]:
    """The culprits of [start, end]; for a ticket `resource` ("read" | "write"), only the operations that take such a ticket.
    `pools` gives the read and write ticket pools in the window (DEFAULT_POOL for one not given)."""
    ops = overlapping(slow_ops, start, end, waits)
    # A run failed when the log says ok: 0 or names an error (ErrorCodes: ClientDisconnect, MaxTimeMSExpired...).
    failed = ~pl.col("ok").fill_null(True) if "ok" in ops.columns else pl.lit(False)
    if "err_name" in ops.columns:
        failed = failed | pl.col("err_name").is_not_null()
    ops = ops.with_columns(failed=failed, writes=WRITES.fill_null(False))
    if resource is not None:
        ops = ops.filter(pl.col("writes") if resource == "write" else ~pl.col("writes"))
    if ops.is_empty():
        return []
    pools = pools or {}
    window_s = max((end - start).total_seconds(), 1.0)
    *_, shape, collscan = culprit_key()
    groups = (
        ops.with_columns(group_shape=shape, collscan=collscan)
        .group_by("ns", "command", "group_shape", "collscan")
        .agg(
            shape=pl.col("shape").drop_nulls().first(),
            query_hash=pl.coalesce("query_shape_hash", "query_hash").drop_nulls().first(),
            plan_summary=pl.col("plan_summary").sort_by("duration_ms", descending=True).first(),
            count=pl.len(),
            overlap_s=pl.col("overlap_s").sum(),
            held_s=pl.col("held_s").sum(),
            queued_s=pl.col("queued_s").sum(),
            writes=pl.col("writes").any(),
            max_ms=pl.col("duration_ms").max(),
            failed=pl.col("failed").sum(),
            error=(pl.col("err_name").drop_nulls().mode().first() if "err_name" in ops.columns else pl.lit(None, pl.String)),
            # The longest run's command as logged; a log read by analyze keeps only each shape's
            # longest command, which may lie outside this window: then the shape stands for it.
            example=pl.coalesce(
                pl.col("command_json").sort_by("duration_ms", descending=True).drop_nulls().first(), pl.col("shape").first()
            ),
            first_started=pl.col("started").min(),
            last_ended=pl.col("ts").max(),
        )
        # The pool was full while runs queued: the share of it this shape's working runs held is the share of its queueing spent behind itself.
        .with_columns(
            pool=pl.when(pl.col("writes"))
            .then(pl.lit(float(pools.get("write") or DEFAULT_POOL)))
            .otherwise(pl.lit(float(pools.get("read") or DEFAULT_POOL)))
        )
        .with_columns(held_s=pl.col("held_s") + pl.col("queued_s") * (pl.col("held_s") / window_s / pl.col("pool")).clip(0, 1))
    )
    total = groups["held_s"].sum()
    if not total:
        return []
    groups = groups.sort("held_s", "overlap_s", descending=True).head(limit)
    return [
        Culprit(
            ns=r["ns"],
            plan_summary=r["plan_summary"],
            shape=r["shape"],
            query_hash=r["query_hash"],
            count=r["count"],
            overlap_s=r["overlap_s"],
            held_s=r["held_s"],
            share=r["held_s"] / total,
            max_ms=r["max_ms"],
            example=r["example"],
            collscan=bool(r["collscan"]),
            command=r["command"],
            first_started=r["first_started"],
            last_ended=r["last_ended"],
            failed=r["failed"],
            error=r["error"],
        )
        for r in groups.iter_rows(named=True)
    ]


def pools_in(series: pl.DataFrame, start: dt.datetime, end: dt.datetime) -> dict[str, float]:
    """The read and write ticket pools in the window (their median size; 7.0+ resizes them), those the series records."""
    if TIME_COLUMN not in series.columns:
        return {}
    during = between(series, start, end)
    out = {}
    for rw in ("read", "write"):
        column = f"{rw}_tickets_total"
        size = median(during[column]) if column in during.columns else None  # None: no sample of it in the window
        if size is not None:
            out[rw] = float(size)
    return out


def victim(culprit: Culprit) -> bool:
    """It spent most of its time in the window waiting (for cache, a lock, a ticket others held, the device)."""
    return culprit.held_s < culprit.overlap_s / 2


def causes(culprits: list[Culprit], window_s: float) -> list[Culprit]:
    """The COLLSCANs that overlapped and held a real share of the window; one that spent most of
    its time there waiting is a victim, however few other operations the log shows."""
    return [
        c
        for c in culprits
        if c.collscan and c.share >= CAUSE_SHARE and c.held_s >= CAUSE_COVERAGE * max(window_s, 1.0) and not victim(c)
    ]


def scan_counters(series: pl.DataFrame, start: dt.datetime, end: dt.datetime) -> dict | None:
    """FTDC's collection-scan evidence for a window: scans finished in it or just after, documents examined against before."""
    if "collscans_per_s" not in series.columns:
        return None
    inside = between(series, start, end + COMPLETION_GRACE)
    before = between(series, end=start, closed="left").tail(600)
    scans = float((inside["collscans_per_s"] * inside["interval_s"]).sum() or 0)
    seconds = float(inside["interval_s"].sum() or 0)
    out: dict[str, float | None] = {"collscans": int(round(scans)), "collscans_per_s": scans / seconds if seconds else 0.0}
    if "scanned_objects_per_s" in series.columns:
        during = between(series, start, end)["scanned_objects_per_s"]
        out["scanned_objects_per_s"] = float(mean(during) or 0)
        out["scanned_objects_per_s_before"] = float(median(before["scanned_objects_per_s"]) or 0) if before.height else None
    return out


def operation_seconds(value: float) -> str:
    """Operation-seconds as every format says them: whole from 10 on (`1,529`, never `1,528.8` beside it)."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def concurrency(culprit: Culprit, window_s: float) -> float:
    """How many of the culprit's runs ran at once on average over a `window_s` window: its operation-seconds inside
    the window over the window. One definition, which its table row and a root cause naming it both quote."""
    return culprit.overlap_s / max(window_s, 1.0)


def at_once(culprit: Culprit, window_s: float) -> str:
    """`concurrency` in words."""
    return f"{concurrency(culprit, window_s):,.1f} running at once on average"


def describe(culprit: Culprit, window_s: float) -> str:
    """The culprit in one phrase. Its time is operation-seconds (runs overlapping each other add up, so
    it can exceed the window): said so, with the concurrency it means over the `window_s` window."""
    plan = f" ({culprit.plan_summary})" if culprit.plan_summary else ""
    waited = culprit.overlap_s - culprit.held_s
    waiting = f", {operation_seconds(waited)} of them waiting" if waited >= 0.5 else ""
    failed = f", {culprit.failed} failed" + (f" ({culprit.error})" if culprit.error else "") if culprit.failed else ""
    return (
        f"{culprit.ns or 'unknown namespace'} {culprit.command or 'operation'}{plan}: {counted(culprit.count, 'run')}{failed}, "
        f"{operation_seconds(culprit.overlap_s)} operation-seconds inside the window ({at_once(culprit, window_s)}){waiting} "
        f"({culprit.share:.0%} of the time slow operations worked there), longest {duration(culprit.max_ms / 1000)}"
    )


def runs_of(slow_ops: pl.DataFrame, culprit: Culprit) -> pl.DataFrame:
    """Every logged run of the culprit's shape (namespace, command, shape or hash, COLLSCAN or not), in or out of any window."""
    ns, command, shape, collscan = culprit_key()
    group = culprit.shape if culprit.shape is not None else f"hash:{culprit.query_hash}"
    return slow_ops.filter(
        COUNTED, ns.eq_missing(culprit.ns), command.eq_missing(culprit.command), shape == group, collscan == culprit.collscan
    )


# A limit at this many times the shape's median run leaves its ordinary runs alone and stops the runaway ones.
MEDIAN_MULTIPLE = 2


def max_time_ms(durations_ms: pl.Series) -> int:
    """Twice the shape's median run, in whole seconds rounded up, at least one: never below the median, so it stops
    only the runs far longer than usual; from all its runs, so one query gets one limit in every window it shows up in."""
    middle = float(median(durations_ms) or 0)
    return max(1, -(-int(MEDIAN_MULTIPLE * middle) // 1000)) * 1000


def runs_stopped(durations_ms: pl.Series, limit_ms: int) -> Runs:
    """The shape's logged runs against a limit: how many, their median and longest, and how many ran past it."""
    return Runs(
        count=durations_ms.len(),
        median_ms=float(median(durations_ms) or 0),
        longest_ms=float(greatest(durations_ms) or 0),
        stopped=int((durations_ms > limit_ms).sum()),
    )


# What becomes of a run maxTimeMS stops: a read fails, an interrupted write keeps what it did (only a transaction rolls back).
STOPPED_READ = "each run it stops fails with MaxTimeMSExpired instead of returning: the application must handle that error"
PARTIAL_WRITE = (
    "maxTimeMS stops a multi-document update or delete part-way: the documents it already changed stay changed "
    "(run it in a transaction, or make it idempotent, to retry it safely)"
)


def recommendations(culprit: Culprit, slow_ops: pl.DataFrame, replica_set: bool) -> list[Recommendation]:
    """What to change about a COLLSCAN named as a cause, from all of its runs in the log."""
    recs = []
    index = recommend_index(culprit.ns, culprit.example)
    if index:
        recs.append(
            advise(
                "create_index",
                f"Give {culprit.ns} an index for this query (equality, sort, range order)",
                target=culprit.ns,
                operation=culprit.command,
                command=index,
            )
        )
    else:
        recs.append(
            advise(
                "change_workload",
                f"The {culprit.ns} {culprit.command or 'query'} has no filter or sort an index could serve: "
                "restrict it, or move it off this node",
                target=culprit.ns,
                operation=culprit.command,
            )
        )
    durations = runs_of(slow_ops, culprit)["duration_ms"]
    limit = max_time_ms(durations)
    runs = runs_stopped(durations, limit)
    if runs.stopped:
        recs.append(
            advise(
                "add_max_time_ms",
                "Bound its run time",
                f"of its {runs.count} logged runs (median {duration(runs.median_ms / 1000)}, longest {duration(runs.longest_ms / 1000)}), "
                f"a {limit // 1000} s limit ({MEDIAN_MULTIPLE}× the median) stops the {runs.stopped} that ran longer "
                "before they hold tickets and cache through an incident",
                proposed=float(limit),
                target=culprit.ns,
                operation=culprit.command,
                command=f"maxTimeMS: {limit}",
                caveat=PARTIAL_WRITE if culprit.command in WRITE_COMMANDS else STOPPED_READ,
                runs=runs,
            )
        )
    if replica_set and (culprit.command or "") in ("find", "aggregate", "count", "distinct"):
        recs.append(
            advise(
                "read_from_secondaries",
                f'Run this {culprit.command} on a secondary (readPreference "secondaryPreferred", '
                "or an analytics node by tag) so it does not compete with the primary's workload",
                target=culprit.ns,
                operation=culprit.command,
                topology="primary",
            )
        )
    return recs


def attribute(
    finding: Finding,
    slow_ops: pl.DataFrame | None,
    series: pl.DataFrame,
    replica_set: bool,
    advice: dict[tuple, list[Recommendation]] | None = None,
    *,
    reading_holds: bool,
    storms: tuple[tuple[dt.datetime, dt.datetime], ...] = (),
) -> Finding:
    """The finding again with its `culprits` and `causes`, its explanation saying what the operations were, or what
    FTDC can tell without a log. `advice` keeps each culprit's recommendations, computed once per analysis;
    `reading_holds`: the finding's resource is held by reading from disk (its record's `reading_holds`); `storms`: the
    windows of connection storms, whose clients' first operations are the storm's load, not its victims."""
    if finding.start is None or finding.end is None:
        return finding  # no window to find its operations or scans in
    advice = {} if advice is None else advice
    if slow_ops is None:
        return _without_log(finding, series)
    start, end = finding.window
    waits = tuple(w for w in WAITS if w != "read_micros") if reading_holds else WAITS
    ranked = rank(slow_ops, start, end, resource=finding.resource, waits=waits, pools=pools_in(series, start, end))
    named = causes(ranked, finding.seconds)
    if not named:
        storm = _storm_over(finding, storms)
        brought = storm is not None and ranked and victim(ranked[0]) and storm_share(slow_ops, finding, storm) >= STORM_LOAD
        return replace(finding, culprits=ranked, causes=[]).noted(
            _storm_load(ranked, finding.seconds) if brought else _no_cause(ranked, finding.seconds)
        )
    for culprit in named:
        key = (culprit.ns, culprit.command, culprit.shape, culprit.query_hash, culprit.collscan)
        if key not in advice:
            advice[key] = recommendations(culprit, slow_ops, replica_set)
    # A culprit named as a cause carries its advice wherever it is listed (the culprits and the causes alike).
    advised = {id(c): replace(c, recommendations=advice[(c.ns, c.command, c.shape, c.query_hash, c.collscan)]) for c in named}
    causing = [advised[id(c)] for c in named]
    return replace(
        finding,
        culprits=[advised.get(id(c), c) for c in ranked],
        causes=causing,
        # Each cause's advice before the finding's own, the last named first.
        recommendations=[r for c in reversed(causing) for r in c.recommendations] + finding.recommendations,
    ).noted(
        # A cause is a COLLSCAN (`causes`): said once, not again as its plan in brackets.
        "Cause: " + "; ".join(f"COLLSCAN of {describe(replace(c, plan_summary=None), finding.seconds)}" for c in causing) + "."
    )


def _storm_over(finding: Finding, storms: tuple[tuple[dt.datetime, dt.datetime], ...]) -> tuple[dt.datetime, dt.datetime] | None:
    """The connection storm whose window overlaps the finding's, if any."""
    start, end = finding.window
    return next(((a, b) for a, b in storms if a <= end and b >= start), None)


def storm_share(slow_ops: pl.DataFrame, finding: Finding, storm: tuple[dt.datetime, dt.datetime]) -> float:
    """The share of the slow operations' time in the finding's window held by operations that began during the storm:
    the reconnecting clients' first requests (a connection opened then has nothing older to run)."""
    ops = overlapping(slow_ops, *finding.window, waits=())
    total = float(ops["overlap_s"].sum() or 0)
    if not total:
        return 0.0
    began = ops.filter(pl.col("started").is_between(storm[0], storm[1]))
    return float(began["overlap_s"].sum() or 0) / total


def _storm_load(culprits: list[Culprit], seconds: float) -> str:
    """What the log shows in a window the operations of a connection storm's clients filled: the storm's load."""
    return (
        "The slow operations the log shows there began during the connection storm: the reconnecting clients' requests, "
        f"the storm's load, queued behind each other; most of that time {describe(culprits[0], seconds)}."
    )


def _no_cause(culprits: list[Culprit], seconds: float) -> str:
    """What the log shows in a window where no operation carried a real share of it."""
    if culprits and not victim(culprits[0]):
        return f"No collection scan carried a real share of the window; the longest slow operations there: {describe(culprits[0], seconds)}."
    if culprits:
        # What the log shows there only waited: naming it as what worked there would blame a victim.
        return (
            "The slow operations the log shows there spent most of their time waiting (victims of the window, not its cause), "
            f"most of that time {describe(culprits[0], seconds)}."
        )
    return "The log has no slow operation in this window."


def _without_log(finding: Finding, series: pl.DataFrame) -> Finding:
    """Without a log: the collection scans FTDC counted in the window, when there were any."""
    counters = scan_counters(series, *finding.window)
    if not counters or counters["collscans"] <= 0:
        return finding
    before = counters.get("scanned_objects_per_s_before")
    examined = ""
    if counters.get("scanned_objects_per_s") is not None and before is not None:
        examined = f", {counters['scanned_objects_per_s']:,.0f} documents examined/s against {before:,.0f}/s before"
    return replace(finding, evidence={**finding.evidence, "collection_scans": counters}).noted(
        f"{counted(counters['collscans'], 'collection scan')} finished in or just after the window ({counters['collscans_per_s']:.2f}/s{examined}); "
        "give the log to name them."
    )
