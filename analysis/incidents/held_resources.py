"""Root causes that are operations other than a COLLSCAN: an index build, and a transaction or cursor pinning history.

An index build (6.0+ FTDC: `indexBuilds.total` registered, `phases.commit` committed; the log's createIndexes
command, which returns when its build commits) scans its whole collection through the cache, filling it, and
bulk-loads the new index, dirty data checkpoints must write: a candidate for cache and checkpoint incidents when
one ran in the window. A transaction left open (or a cursor) keeps its snapshot: WiredTiger pins every
transaction ID since its start (`transaction range of IDs currently pinned`), so updates it may still read cannot
be evicted: dirty and update bytes climb and the history store grows while the load is unchanged. It is a
candidate for cache and checkpoint incidents when the pinned range in the window was PINNED_FACTOR times its
median of the hour before and at least MIN_PINNED IDs. A multi-document transaction lives at most the node's
transactionLifetimeLimitSeconds (and one period of the reaper that aborts it, log id 20707): the reaper's aborts
and the limit are its evidence; a limit raised above mongod's default was raised on purpose (for long batch
transactions) and is never advised back: the root cause says what it trades, and the fix, ending the transaction,
is in the client; a cursor or a snapshot read is not bounded by it, and is told apart by no transaction open.
Transactions a client leaves idle one after another, each aborted by the reaper and the next opened at once, are one
pinning (`held_throughout`, `_pinning`): its usual range is that of the hour before it began, every abort of it is
counted, and its holders are named from the reaper's lines (session, transaction numbers) and the slow operations of
those sessions (their clients).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors import explained_by
from analysis.findings.finding import Finding
from analysis.incidents.incident import RootCause
from analysis.series import aggregates
from analysis.series.metrics import BY_NAME
from analysis.series.windows import between
from analysis.settings import SETTINGS
from analysis.text import clock, counted, duration, span, span_before
from ftdc.frames import TIME_COLUMN

# The kinds an index build's scan and bulk load, and history kept in the cache, set off (their detectors' records say).
INDEX_BUILD_KINDS = explained_by("index_build")
PINNED_HISTORY_KINDS = explained_by("pinned_history")
PINNED_FACTOR = 10.0
MIN_PINNED = 10_000
BEFORE = dt.timedelta(hours=1)
# A range this small is the ordinary churn of short transactions, whatever the median before (which may be 0).
USUAL_FLOOR = 100


def _during(ctx: Context, column: str, start: dt.datetime, end: dt.datetime) -> pl.Series:
    if column not in ctx.series.columns:
        return pl.Series(column, [], pl.Float64)
    return between(ctx.series, start, end)[column].drop_nulls()


def _paths(*names: str) -> list[str]:
    """The metric paths behind canonical names (the newest layout's, as evidence)."""
    return [BY_NAME[n].paths[0] for n in names]


def _index_key(command_json: str | None) -> str | None:
    """The first index's key of a logged createIndexes command, as the shell writes it."""
    try:
        indexes = json.loads(command_json or "").get("indexes") or []
        key = indexes[0].get("key") if indexes else None
    except (ValueError, AttributeError, TypeError):
        return None
    return json.dumps(key, separators=(", ", ": ")) if isinstance(key, dict) else None


def index_builds(ctx: Context, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """An index build running in the window, from FTDC's build counters and the log's createIndexes."""
    present = [k for k in INDEX_BUILD_KINDS if k in kinds]
    if not present:
        return []
    running = _during(ctx, "index_builds_running", start, end)
    builds = pl.DataFrame()
    if ctx.logs is not None and "command" in ctx.logs.slow_ops.columns:
        builds = ctx.logs.slow_ops.filter(pl.col("command") == "createIndexes", pl.col("started") <= end, pl.col("ts") >= start)
    if builds.is_empty() and not (aggregates.greatest(running) or 0) > 0:
        return []
    evidence: dict[str, Any] = {"mechanism": "index_build", "metrics": _paths("index.builds_started", "index.builds_committed")}
    if running.len():
        evidence["index_builds_running_peak"] = int(aggregates.known(aggregates.greatest(running)))
    what = "An index build"
    if not builds.is_empty():
        longest = builds.sort("duration_ms", descending=True).row(0, named=True)
        key = _index_key(longest.get("command_json"))
        evidence.update(
            ns=longest["ns"],
            index=key,
            started=longest["started"],
            ended=longest["ts"],
            duration_s=round(longest["duration_ms"] / 1000, 1),
        )
        what = f"An index build on {longest['ns'] or 'an unknown namespace'}" + (f" {key}" if key else "")
        when = f" ran from {clock(longest['started'])} for {duration(longest['duration_ms'] / 1000)} (its createIndexes command)"
    else:
        when = " ran through the window (indexBuilds: registered and not yet committed)"
    ns = evidence.get("ns")
    return [
        RootCause(
            kind="operation",
            summary=f"{what}{when}: its collection scan reads every document through the cache and its bulk load writes the whole index, dirty data checkpoints must write",
            evidence=evidence,
            recommendations=[
                advise(
                    "change_workload",
                    f"Build indexes{' on ' + ns if ns else ''} outside the busy hours",
                    "so its scan and bulk load do not meet the workload",
                    target=ns,
                ),
                advise(
                    "change_workload",
                    f"On a replica set, build indexes{' on ' + ns if ns else ''} one member at a time: on each secondary in turn, "
                    "then on the primary after stepping it down",
                    "so only one member at a time carries the scan and bulk load",
                    target=ns,
                    topology="member",
                ),
            ],
            findings=[f.id for k in present for f in kinds[k]],
            headline=what,
        )
    ]


# The reaper aborting expired transactions wakes every half of transactionLifetimeLimitSeconds, 1 to 60 s
# (periodic_runner_job_abort_expired_transactions.cpp): a transaction lives at most the limit and one period.
REAPER_PERIOD_S = (1.0, 60.0)


def reaper_period_s(limit_s: float) -> float:
    low, high = REAPER_PERIOD_S
    return min(high, max(low, limit_s / 2))


def _pin_span(
    ctx: Context, start: dt.datetime, end: dt.datetime, usual_ids: float
) -> tuple[dt.datetime | None, dt.datetime | None]:
    """When the pinned range began to climb above its usual (the pin's start, looking back up to BEFORE) and when it fell back
    (the pin released, looking up to BEFORE past the window): the range resets when the oldest transaction or cursor ends."""
    if "pinned_txn_ids" not in ctx.series.columns:
        return None, None
    near = between(ctx.series, start - BEFORE, end + BEFORE).select(TIME_COLUMN, "pinned_txn_ids").drop_nulls()
    low = near.filter(pl.col("pinned_txn_ids") <= max(2 * usual_ids, USUAL_FLOOR))
    before, after = low.filter(pl.col(TIME_COLUMN) < start), low.filter(pl.col(TIME_COLUMN) > start)
    return aggregates.latest(before[TIME_COLUMN]), aggregates.earliest(after[TIME_COLUMN])


def _reaped(ctx: Context, start: dt.datetime, end: dt.datetime) -> pl.DataFrame:
    """The log's reaper aborts (id 20707) from the window's start to one reaper period past its end."""
    if ctx.logs is None or ctx.logs.events.is_empty():
        return pl.DataFrame()
    until = end + dt.timedelta(seconds=REAPER_PERIOD_S[1])
    return ctx.logs.events.filter(pl.col("kind") == "transaction_expired", pl.col("ts").is_between(start, until))


def _holders(ctx: Context, reaped: pl.DataFrame) -> list[dict[str, Any]]:
    """Who held the transactions the reaper aborted, from its lines: each session with its transaction numbers, and the
    clients (application names) of the slow operations the log shows that session running; in order of first abort."""
    from ftdc.logs.events import expired_holder  # the log's decoders (msgspec) only where a log was read

    sessions: dict[str, dict[str, Any]] = {}
    for ts, text in reaped.select("ts", "text").iter_rows():
        holder = expired_holder(text)
        if holder is None:
            continue
        session, number = holder
        one = sessions.setdefault(session, {"session": session, "transactions": [], "aborted": []})
        one["transactions"].append(number)
        one["aborted"].append(ts)
    slow = ctx.logs.slow_ops if ctx.logs is not None else None
    for one in sessions.values():
        ran = (
            slow.filter(pl.col("command_json").str.contains(one["session"], literal=True))["app_name"].drop_nulls().unique()
            if slow is not None and "command_json" in slow.columns and "app_name" in slow.columns
            else pl.Series([], dtype=pl.String)
        )
        one["clients"] = sorted(ran.to_list())
    return list(sessions.values())


def _holders_told(holders: list[dict[str, Any]]) -> str:
    """`session 3f2a… (transactions 17 to 28, aborted every 61-90 s; client batch-importer)` for each holder."""
    told = []
    for one in holders:
        numbers, aborted = sorted(one["transactions"]), sorted(one["aborted"])
        which = f"transaction {numbers[0]}" if len(numbers) == 1 else f"transactions {numbers[0]} to {numbers[-1]}"
        gaps = [(b - a).total_seconds() for a, b in zip(aborted, aborted[1:])]
        every = f", one aborted every {min(gaps):.0f}-{max(gaps):.0f} s" if gaps else ""
        client = f"; client {', '.join(one['clients'])}" if one["clients"] else "; no slow operation in the log names its client"
        told.append(f"session {one['session']} ({which}{every}{client})")
    return "; ".join(told)


def _releases(ctx: Context, start: dt.datetime, end: dt.datetime) -> pl.DataFrame | None:
    """The stretches of [start, end] in which the pinned range was back at the ordinary churn of short transactions (no
    holder): `first`, `last` and `seconds` of each; None when the node records no pinned range or nothing was pinned."""
    if "pinned_txn_ids" not in ctx.series.columns or end <= start:
        return None
    rows = between(ctx.series, start, end).select(TIME_COLUMN, "pinned_txn_ids").drop_nulls()
    if rows.is_empty() or aggregates.known(aggregates.greatest(rows["pinned_txn_ids"])) < MIN_PINNED:
        return None
    low = pl.col("pinned_txn_ids") <= USUAL_FLOOR
    return (
        rows.with_columns(low=low, run=(low != low.shift(1)).fill_null(True).cum_sum())
        .filter(pl.col("low"))
        .group_by("run")
        .agg(first=pl.col(TIME_COLUMN).min(), last=pl.col(TIME_COLUMN).max())
        .with_columns(seconds=(pl.col("last") - pl.col("first")).dt.total_seconds())
        .sort("first")
    )


def held_throughout(ctx: Context, start: dt.datetime, end: dt.datetime) -> bool:
    """Whether history stayed pinned from `start` to `end`, one holder after another: the pinned range never back at the
    ordinary churn of short transactions for longer than the reaper's longest period (its aborts, and a client opening
    the next transaction at once, release it only for moments)."""
    releases = _releases(ctx, start, end)
    return releases is not None and not releases.filter(pl.col("seconds") > REAPER_PERIOD_S[1]).height


def _pinning(ctx: Context, start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The stretch around [start, end], up to BEFORE either side, in which history stayed pinned one holder after another
    (`held_throughout`): from the end of the last long release before it to the start of the first one after."""
    releases = _releases(ctx, start - BEFORE, end + BEFORE)
    if releases is None:
        return start, end
    long = releases.filter(pl.col("seconds") > REAPER_PERIOD_S[1])
    before, after = long.filter(pl.col("last") <= start), long.filter(pl.col("first") >= end)
    return (
        min(start, aggregates.known_time(aggregates.latest(before["last"]))) if before.height else start,
        max(end, aggregates.known_time(aggregates.earliest(after["first"]))) if after.height else end,
    )


def pinned_history(ctx: Context, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """A transaction or cursor kept open: WiredTiger's pinned range far above its usual, with the transactions open,
    the reaper's aborts and the node's transaction lifetime."""
    present = [k for k in PINNED_HISTORY_KINDS if k in kinds]
    pinned = _during(ctx, "pinned_txn_ids", start, end)
    if not present or not pinned.len():
        return []
    # The usual range: the hour before the pinning began (transactions held one after another for an hour are not
    # their own usual), or what the capture holds of it; none below a minute (then the peak alone).
    pinning = _pinning(ctx, start, end)
    found = ctx.before("pinned_txn_ids", pinning[0])
    usual_ids = found[0] if found is not None else 0.0
    usually = (
        f"usually {usual_ids:,.0f}, the median of {span_before(found[1], pinning[0])}"
        if found is not None
        else f"no baseline: the capture holds too little before {clock(pinning[0])}"
    )
    peak = aggregates.known(aggregates.greatest(pinned))
    if peak < MIN_PINNED or peak < PINNED_FACTOR * usual_ids:
        return []
    limit = ctx.thresholds.within(start, end).current("transaction_lifetime_limit")
    evidence: dict[str, Any] = {
        "mechanism": "pinned_history",
        "pinned_txn_ids_peak": int(peak),
        "pinned_txn_ids_before": round(usual_ids),
        "pinning_began": pinning[0],  # where its usual range is measured back from
        "thresholds": {"pinned": f"≥ {PINNED_FACTOR:g}× the median of the hour before and ≥ {MIN_PINNED:,} IDs"},
        "transaction_lifetime_limit_s": limit.value,
        "transaction_lifetime_limit_source": limit.source,
        "metrics": _paths("txn.pinned_ids", "txn.open", "txn.inactive", "cache.history_store_bytes"),
    }
    began, released = _pin_span(ctx, start, end, usual_ids)
    pinned_s = ((released or end) - began).total_seconds() if began else None
    if pinned_s is not None:
        evidence["pinned_s"] = round(pinned_s)
    held = ""
    open_ = _during(ctx, "transactions_open", start, end)
    most_open = aggregates.greatest(open_) or 0  # 0: none open, or none recorded in the window
    transaction = most_open > 0
    if transaction:
        idle = _during(ctx, "transactions_inactive", start, end)
        most_idle = aggregates.greatest(idle)  # None: not recorded in the window
        evidence.update(transactions_open=int(most_open), transactions_inactive=None if most_idle is None else int(most_idle))
        held = f" with {counted(int(most_open), 'transaction')} open" + (
            f", {int(most_idle)} idle between statements" if most_idle is not None and most_idle > 0 else ""
        )
    elif open_.len():
        held = " with no multi-document transaction open (a cursor or a long read's snapshot, which transactionLifetimeLimitSeconds does not bound)"
    evidence["holder"] = "transaction" if transaction else ("not a transaction" if open_.len() else None)
    grew = ""
    store = _during(ctx, "history_store_mb", start, end)
    if store.len() >= 2 and store[-1] > store[0]:
        evidence["history_store_growth_mb"] = round(float(store[-1] - store[0]), 1)
        grew = f"; the history store grew by {store[-1] - store[0]:,.0f} MB"
    # The reaper's aborts of the whole pinning, however many transactions held it one after another.
    reaped = _reaped(ctx, *pinning)
    aborts = ""
    if not reaped.is_empty():
        holders = _holders(ctx, reaped)
        first = aggregates.known_time(aggregates.earliest(reaped["ts"]))
        last = aggregates.known_time(aggregates.latest(reaped["ts"]))
        evidence.update(
            reaper_aborts=reaped.height,
            reaper_abort_first=first,
            reaper_abort_last=last,
            holders=holders,
        )
        when = span(first, last) if reaped.height > 1 else clock(first)
        aborts = (
            f"; the server's reaper aborted {counted(reaped.height, 'transaction')} for outliving transactionLifetimeLimitSeconds "
            f"({limit.value:g} s, {limit.source}) from {when}"
            + (f", each idle past it: {_holders_told(holders)}" if holders else "")
        )
    elif transaction and limit.value is not None:
        aborts = f"; transactions may live {limit.value:g} s here ({limit.source})"
    record = SETTINGS["transaction_lifetime_limit"]
    if transaction and limit.value is not None and record.default is not None and limit.value > record.default:
        # Raised on purpose (for long batch transactions): never lowered by advice, but what it trades is part of the story.
        aborts += f", raised from mongod's {record.default:g} s: {record.trades['higher']}"
    # The fix for a client that leaves a transaction or cursor open is in the client, not in the server's limits.
    recommendations = [
        advise(
            "change_workload",
            "Find the open transaction or cursor ($currentOp with idleSessions and idleCursors) and end it; "
            "in the application, commit or abort each transaction promptly and exhaust or close long-lived cursors",
            f"while it is open WiredTiger keeps every update since its snapshot{' (' + duration(pinned_s) + ' here)' if pinned_s else ''}",
        )
    ]
    # Transactions aborted one after another are told as what they were: idle ones, a client's, not one long-running.
    held_by = (
        f"Idle transactions, {reaped.height} aborted one after another by the server's reaper,"
        if reaped.height > 1
        else "A long-running transaction or cursor"
    )
    return [
        RootCause(
            kind="operation",
            summary=(
                f"{held_by} pinned history: WiredTiger kept {peak:,.0f} transaction IDs pinned "
                f"({usually}){held}{grew}{aborts}: updates it may still read cannot be evicted, so dirty and update bytes climb under an unchanged load"
            ),
            evidence=evidence,
            recommendations=recommendations,
            findings=[f.id for k in present for f in kinds[k]],
            headline=(
                f"Idle transactions pinning history ({reaped.height} aborted by the server's reaper)"
                if reaped.height > 1
                else "A long-running transaction or cursor pinning history"
            ),
        )
    ]
