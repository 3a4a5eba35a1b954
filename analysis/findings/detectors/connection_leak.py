"""`connection_leak`: a client leaking connections: the open count climbing slowly and steadily while the work stays flat.

A leaked connection is opened and never closed (a client or pool created per request and never closed, a pool
without an idle timeout): the open count climbs for as long as the client runs and never falls back, while the
operations stay flat, since the new connections do no work. A storm (`connection_storm`) is the other mechanism:
many connections a second at once. The count is read as minute medians within one process (a restart closes
every connection); a climb is a run of minutes none of which falls more than FALLBACK_SHARE below the run's peak
so far, lasting MIN_MINUTES, rising by MIN_RISE and at least doubling, no one minute holding more than
STEP_SHARE of the rise (a step is a burst of connections, not a leak), while the operations at its end are no more
than FLAT_GROWTH times those at its start.

It is a warning only when the count approaches the node's limit: connections.available is that limit less the open
count (maxIncomingConnections, capped by the process's open-files limit), and at the limit mongod refuses every new
connection, the members' heartbeats and the drivers' monitoring included. Short of LIMIT_SHARE of it, a leak costs
memory (a thread and its buffers each) and is told as context, with the time left to the limit at its rate.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.text import duration, pct, span
from ftdc.frames import TIME_COLUMN

KIND = "connection_leak"
MINUTE = dt.timedelta(minutes=1)
MIN_MINUTES = 30
MIN_RISE = 500.0
FALLBACK_SHARE = 0.05  # leaked connections stay open: the count never falls back more than this below its peak so far
STEP_SHARE = 0.25
EDGE_SHARE = 0.02
FLAT_GROWTH = 1.5
LIMIT_SHARE = 0.8
TOP_CLIENTS = 3
METHOD = (
    f"Open connections climbing for at least {MIN_MINUTES} minutes (minute medians, within one process) by at least "
    f"{MIN_RISE:g} and to at least twice the count they began from, never falling more than {FALLBACK_SHARE * 100:g} % "
    f"below their peak so far and no one minute holding more than {STEP_SHARE * 100:g} % of the rise, while the "
    f"operations finished at its end are at most {FLAT_GROWTH:g} times those at its start: connections opened and "
    "never closed, doing no work. The log's accepted and ended connections and client metadata name the clients "
    f"still holding them. A warning when the open count reaches {LIMIT_SHARE * 100:g} % of the node's connection "
    "limit (the open count plus those available: maxIncomingConnections, capped by the open-files limit), where new "
    "connections would soon be refused; context otherwise, with the time left to the limit at the climb's rate."
)
DETECTOR = Detector(
    order=85,
    kinds=(KIND,),
    names=("connection leak",),
    method=METHOD,
    root="workload",  # the client that opens them
    attributed=False,  # held by idle clients: no operation's time explains it
    reads=("connections", "connections_available", "finished_per_s"),
    panels=(("connections", ("connections",), False), ("operations/s", ("finished_per_s",), False)),
)


def _minutes(ctx: Context) -> pl.DataFrame:
    """Minute medians of the open count, the operations finished and the connections available, each minute with the
    process it belongs to (a restart starts another)."""
    work = pl.col("finished_per_s") if ctx.has("finished_per_s") else pl.lit(None, pl.Float64)
    available = pl.col("connections_available") if ctx.has("connections_available") else pl.lit(None, pl.Float64)
    return (
        ctx.series.select(
            TIME_COLUMN,
            connections=pl.col("connections").cast(pl.Float64),
            ops=work.cast(pl.Float64),
            available=available.cast(pl.Float64),
            process=pl.col("restart").fill_null(False).cum_sum(),
        )
        .group_by_dynamic(TIME_COLUMN, every=MINUTE, group_by="process")
        .agg(pl.median("connections"), pl.median("ops"), pl.median("available"))
        .drop_nulls("connections")
        .sort(TIME_COLUMN)
    )


def _climbs(minutes: pl.DataFrame) -> list[tuple[int, int]]:
    """(first, last) rows of each run of minutes in one process whose count never falls FALLBACK_SHARE below the
    run's peak so far, from its lowest minute to its peak."""
    counts, processes = minutes["connections"].to_list(), minutes["process"].to_list()
    runs, first, peak = [], 0, counts[0] if counts else 0.0
    for i in range(1, len(counts)):
        if processes[i] != processes[first] or counts[i] < (1 - FALLBACK_SHARE) * peak:
            runs.append((first, i - 1))
            first, peak = i, counts[i]
        else:
            peak = max(peak, counts[i])
    if counts:
        runs.append((first, len(counts) - 1))
    out = []
    for a, b in runs:
        top = max(range(a, b + 1), key=lambda i: counts[i])
        low = min(range(a, top + 1), key=lambda i: counts[i])
        # The climb runs from the last minute still at its low to the first at its peak, give or take EDGE_SHARE of the
        # rise: the count's own noise before and after it is no part of it.
        edge = EDGE_SHARE * (counts[top] - counts[low])
        first = max(i for i in range(low, top + 1) if counts[i] <= counts[low] + edge)
        last = min(i for i in range(first, top + 1) if counts[i] >= counts[top] - edge)
        out.append((first, last))
    return out


def _is_leak(rows: pl.DataFrame) -> bool:
    counts = rows["connections"]
    start, peak = float(counts[0]), aggregates.known(aggregates.greatest(counts))
    rise = peak - start
    if rows.height < MIN_MINUTES or rise < MIN_RISE or peak < 2 * max(start, 1.0):
        return False
    if float(aggregates.greatest(counts.diff()) or 0.0) > STEP_SHARE * rise:
        return False  # a step: a burst of connections at once
    ops = rows["ops"].drop_nulls()
    if ops.len() < 20:
        return True  # no operation counters: the count alone
    edge = max(5, ops.len() // 6)
    before, after = aggregates.known(aggregates.median(ops.head(edge))), aggregates.known(aggregates.median(ops.tail(edge)))
    return after <= FLAT_GROWTH * max(before, 1.0)


def _clients(ctx: Context, start: dt.datetime, end: dt.datetime) -> list[dict[str, Any]]:
    """The clients that opened connections from `start` to `end` and had not closed them by the log's end, most first:
    their address (without its port), application name and driver (from the client metadata lines)."""
    if ctx.logs is None:
        return []
    events = ctx.logs.events
    accepted = events.filter(pl.col("kind") == "connection_accepted", pl.col("ts").is_between(start, end)).select("remote")
    if accepted.is_empty():
        return []
    ended = events.filter(pl.col("kind") == "connection_ended", pl.col("ts") >= start)["remote"].drop_nulls()
    metadata = (
        events.filter(pl.col("kind") == "client_metadata")
        .select("remote", "app_name", "driver")
        .drop_nulls("remote")
        .unique("remote", keep="last")
    )
    held = (
        accepted.drop_nulls()
        .join(metadata, on="remote", how="left")
        .with_columns(host=pl.col("remote").str.replace(r":\d+$", ""), open=~pl.col("remote").is_in(ended.implode()))
        .group_by("host", "app_name", "driver")
        .agg(opened=pl.len(), still_open=pl.col("open").sum())
        .filter(pl.col("still_open") > 0)
        .sort("still_open", "host", descending=[True, False])
    )
    return held.head(TOP_CLIENTS).to_dicts()


def _client_name(client: dict[str, Any]) -> str:
    """`"reports-worker" (pymongo 4.6.1) from 10.0.4.12`."""
    who = f'"{client["app_name"]}"' if client["app_name"] else "a client without an application name"
    driver = f" ({client['driver']})" if client["driver"] else ""
    return f"{who}{driver} from {client['host']}"


def _client_words(client: dict[str, Any]) -> str:
    """`"reports-worker" (pymongo 4.6.1) from 10.0.4.12 opened 1,930, none of them closed`."""
    closed = client["opened"] - client["still_open"]
    return f"{_client_name(client)} opened {client['opened']:,}, {f'{closed:,}' if closed else 'none'} of them closed"


def _finding(ctx: Context, rows: pl.DataFrame) -> Finding:
    start, end = rows[TIME_COLUMN][0], rows[TIME_COLUMN][-1] + MINUTE
    first, peak = float(rows["connections"][0]), aggregates.known(aggregates.greatest(rows["connections"]))
    hours = (end - start).total_seconds() / 3600
    per_hour = (peak - first) / hours
    ops = rows["ops"].drop_nulls()
    ops_median = aggregates.known(aggregates.median(ops)) if ops.len() else None
    available = rows["available"].drop_nulls()
    limit = peak + float(available.tail(1)[0]) if available.len() else None
    near = limit is not None and peak >= LIMIT_SHARE * limit
    clients = _clients(ctx, start, end)
    work = f" while the operations stayed flat at about {ops_median:,.0f}/s" if ops_median is not None else ""
    limit_words = ""
    if limit is not None:
        left = (limit - peak) / per_hour if per_hour > 0 else None
        limit_words = f" The node's limit is {limit:,.0f} connections ({pct(peak / limit)} used)" + (
            f"; at this rate it is {duration(left * 3600)} away." if left is not None else "."
        )
    client_words = (
        " The log names who opened them and still held them at its end: " + "; ".join(_client_words(c) for c in clients) + "."
        if clients
        else (" The log does not record the connections opened then." if ctx.logs is not None else "")
    )
    return Finding(
        kind=KIND,
        severity="warning" if near else "info",
        start=start,
        end=end,
        subject=f"A client leaking connections: {first:,.0f} → {peak:,.0f} open over {duration(hours * 3600)}",
        statement=f"{per_hour:,.0f} more an hour{work}",
        reasoning=(
            f"From {span(start, end)} the open connections climbed steadily from {first:,.0f} to {peak:,.0f} "
            f"({per_hour:,.0f} an hour) and never fell back{work}: connections opened and never closed, doing no work "
            "(a client or pool created per request and not closed, or a pool with no idle timeout)." + limit_words + client_words
        ),
        evidence={
            "metrics": ctx.paths("connections", "connections_available", "finished_per_s"),
            "open_start": first,
            "open_peak": peak,
            "per_hour": per_hour,
            "ops_per_s_median": ops_median,
            "limit": limit,
            "clients": clients,
            "thresholds": {
                "leak": f"≥ {MIN_MINUTES} min climbing by ≥ {MIN_RISE:g} and ×2, never {FALLBACK_SHARE:.0%} below its peak, operations ≤ {FLAT_GROWTH:g}× their start",
                "warning": f"≥ {LIMIT_SHARE:.0%} of the node's connection limit",
            },
        },
        recommendations=[
            advise(
                "limit_clients",
                f"Find where {_client_name(clients[0]) if clients else 'the client'} opens connections "
                "without closing them: one client (MongoClient) per process, reused; cursors and sessions closed; "
                "maxIdleTimeMS set on its pool",
            )
        ],
    )


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("connections"):
        return [ctx.not_checked(KIND, "Connection leaks", ["connections.current"])]
    minutes = _minutes(ctx)
    if minutes.height < MIN_MINUTES:
        return []
    return [_finding(ctx, rows) for first, last in _climbs(minutes) if _is_leak(rows := minutes.slice(first, last - first + 1))]
