"""`replication_lag` and `primary_change`: the replica set as this node sees it.

Every member's state and last applied optime come with each node's
`replSetGetStatus` (members in config order, the same index on every node).
A secondary lags when its optime trails the primary's by LAG_S or more
without a break for MIN_S. The view of other members comes from heartbeats
(every 2 s) and an idle primary writes a no-op every 10 s, so a secondary
that keeps up still shows a 10-12 s sawtooth that drops back to 0 each
cycle; after an election or a pause, one sample may show hours. Only lag
that never drops below LAG_S is real (the 4.2.1 sample has both kinds of
noise and no real lag). A primary change is the member holding
state 1 changing (with or without a gap while the set elected); it is
context (`info`) unless it happened during another finding's window, which
`relate` decides once every detector has run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.derived import PRIMARY
from analysis.series.windows import sustained
from analysis.text import clock, duration, span
from ftdc.frames import TIME_COLUMN

LAG_S = 10.0
MIN_S = 30.0
CRITICAL_LAG_S = 300.0
# A role change this node's log records this long before the change FTDC saw is its start (replSetStepDown waits up to
# secondaryCatchUpPeriodSecs, 10 s by default, for a secondary to catch up before it steps down).
ROLE_CHANGE_LEAD = dt.timedelta(seconds=60)
# What each planned role change is called, by the log's event kind (ftdc.logs.events).
PLANNED = {
    "stepdown_requested": "a replSetStepDown command",
    "stepup_requested": "a replSetStepUp request",
    "priority_takeover": "a priority takeover",
    "catchup_takeover": "a catch-up takeover",
}
# The same role changes as this node's own counters record them (FTDC, 4.2+; src/mongo/db/repl/replication_metrics.idl):
# a replSetStepDown command it carried out, an election it called on a step-up request (an operator's, or the handoff of
# a primary stepping down), by its higher priority, or to take over from a primary that lagged it.
COUNTED = {
    "stepdown_commands": "a replSetStepDown command",
    "elections_step_up": "a replSetStepUp request",
    "elections_priority_takeover": "a priority takeover",
    "elections_catchup_takeover": "a catch-up takeover",
}
# An election this node called on seeing no primary for electionTimeoutMillis: a failover, never a plan.
FAILOVER = "elections_timeout"
# This node, the primary, stepping down on seeing another member elected in a new term (the log's line, or its counter).
# Members elect on timeout only after hearing nothing from the primary for electionTimeoutMillis (10 s by default): a
# primary whose samples came on time through those seconds was answering, so the member that took over did it by
# priority, to catch up or on request (the set's plan); one that stalled or went unsampled then lost it to a failover.
NEW_TERM, NEW_TERM_COUNTED = "new_term_stepdown", "stepdowns_higher_term"
TAKEN_OVER = "a takeover by another member while this node was answering"
ELECTION_TIMEOUT = dt.timedelta(seconds=10)
ANSWERED_MS = 1000.0  # a serverStatus answered within this long: the node was not stalled
# Who records a planned role change: the log's line, or this node's election and command counters in FTDC.
BY_LOG, BY_COUNTERS = "log", "FTDC"
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "Every member's state and last applied operation come with each node's replica set status. A secondary lags "
    f"when it trails the primary by {LAG_S:g} s or more without a break for {MIN_S:g} s: heartbeats (every 2 s) and "
    "an idle primary's no-op writes (every 10 s) make a member that keeps up show a 10-12 s sawtooth that drops "
    "back to 0, so only lag that never drops below the bar counts. A primary change is another member becoming "
    "primary; it is context unless it happened during another finding's window and was not planned: a planned role "
    "change (a replSetStepDown command, a replSetStepUp request, a priority or catch-up takeover) is read from the log "
    "or, without one, from the node's own election and command counters; a primary that stepped down when another "
    f"member was elected, having answered on time through the {ELECTION_TIMEOUT.total_seconds():g} s before (members "
    "elect on timeout only after hearing nothing from it that long), was taken over, not failed over. Critical: "
    f"{CRITICAL_LAG_S / 60:g} minutes of lag."
)
DETECTOR = Detector(
    order=90,
    kinds=("replication_lag", "primary_change"),
    names=("replication lag", "primary change"),
    method=METHOD,
    attributed=False,
    replica_set_wide=True,
    peaks=("lag_s_peak",),
    moments=("primary_change",),
    reads=("member_state.", "member_lag_s.", "member_self.", *COUNTED, FAILOVER, NEW_TERM_COUNTED, "collect_ms"),
    # The primary keeps history for a lagging majority (dirty cache); drivers reconnect after an election.
    sets_off=("cache_pressure", "connection_storm", "throughput_dip"),
    panels=(
        ("lag behind the primary, s", ("member_lag_s.",), False),
        ("member state (1 primary, 2 secondary)", ("member_state.",), False),
    ),
)


def planned_role_change(ctx: Context, start: dt.datetime, end: dt.datetime) -> dict | None:
    """When and how this node gave up or took the primary on purpose from ROLE_CHANGE_LEAD before `start` to `end`: a
    replSetStepDown command, a replSetStepUp request, a priority or catch-up takeover, as its log says (the first such
    line) or, without one, as its own counters in FTDC say (`COUNTED`, the first sample that counted one). None when
    neither says so, and when this node called an election on seeing no primary then (a failover is no plan).
    Returns `{"at", "how", "source"}`."""
    if ctx.logs is not None:
        lines = ctx.logs.events.filter(
            pl.col("kind").is_in([*PLANNED, NEW_TERM]), pl.col("ts").is_between(start - ROLE_CHANGE_LEAD, end)
        ).sort("ts")
        asked = lines.filter(pl.col("kind") != NEW_TERM)
        if not asked.is_empty():
            return {"at": asked["ts"][0], "how": PLANNED[asked["kind"][0]], "source": BY_LOG}
        if not lines.is_empty():
            return _taken_over(ctx, lines["ts"][0], BY_LOG)
    return _counted_role_change(ctx, start, end)


def _taken_over(ctx: Context, at: dt.datetime, source: str) -> dict | None:
    """This node stepping down at `at` on seeing another member elected: planned where its samples came on time, each
    answered within ANSWERED_MS, through the ELECTION_TIMEOUT before (it was answering: no member could have timed out
    on it), a failover otherwise (None)."""
    period = dt.timedelta(seconds=float(aggregates.median(ctx.series["period_s"]) or 1))
    rows = ctx.series.filter(pl.col(TIME_COLUMN).is_between(at - ELECTION_TIMEOUT - period, at))
    if rows.height < 2 or rows["gap"].fill_null(False).any():
        return None
    if (rows[TIME_COLUMN].diff().drop_nulls() > 2 * period).any():
        return None
    if ctx.has("collect_ms") and (rows["collect_ms"].fill_null(0) > ANSWERED_MS).any():
        return None
    return {"at": at, "how": TAKEN_OVER, "source": source}


def _counted_role_change(ctx: Context, start: dt.datetime, end: dt.datetime) -> dict | None:
    """`planned_role_change` from this node's counters: each sample's increase covers the interval ending at it, so the
    samples to one period past `end` (the count may land in the sample after the change FTDC saw)."""
    counted = [c for c in COUNTED if ctx.has(c)]
    if not counted and not ctx.has(NEW_TERM_COUNTED):
        return None
    period = dt.timedelta(seconds=float(aggregates.median(ctx.series["period_s"]) or 1))
    rows = ctx.series.filter(pl.col(TIME_COLUMN).is_between(start - ROLE_CHANGE_LEAD, end + period, closed="right"))
    if ctx.has(FAILOVER) and (rows[FAILOVER].fill_null(0) > 0).any():
        return None
    for row in rows.select(TIME_COLUMN, *counted).iter_rows(named=True):
        column = next((c for c in counted if (row[c] or 0) > 0), None)
        if column is not None:
            return {"at": row[TIME_COLUMN], "how": COUNTED[column], "source": BY_COUNTERS}
    if ctx.has(NEW_TERM_COUNTED):
        stepped = rows.filter(pl.col(NEW_TERM_COUNTED) > 0)
        if not stepped.is_empty():
            return _taken_over(ctx, stepped[TIME_COLUMN][0], BY_COUNTERS)
    return None


def recorded(planned: dict) -> str:
    """Who records a planned role change, and when: "the log records a replSetStepDown command at 09:25:03 UTC", or
    "this node's own counters record a replSetStepDown command by 09:25:05 UTC" (in the interval ending then)."""
    if planned.get("source") == BY_COUNTERS:
        return f"this node's own election and command counters record {planned['how']} by {clock(planned['at'])}"
    return f"the log records {planned['how']} at {clock(planned['at'])}"


def members(ctx: Context) -> list[str]:
    return [c.removeprefix("member_state.") for c in ctx.series.columns if c.startswith("member_state.")]


def member_name(ctx: Context, member: str) -> str:
    """`member 1`, or `member 1 (this node, host:port)`."""
    column = f"member_self.{member}"
    if column in ctx.series.columns and (aggregates.greatest(ctx.series[column]) or 0) > 0:
        return f"member {member} (this node{', ' + ctx.node.address if ctx.node.address else ''})"
    return f"member {member}"


def _opening(name: str) -> str:
    """A name starting a sentence: "Member 1", but a host name as written."""
    return "M" + name[1:] if name.startswith("member ") else name


# What to do about a lagging member seen from another node: read its own files. Left out where they are in the same
# report (`analysis.nodes`), the reader having them already.
READ_ITS_FTDC = advise(
    "investigate",
    "Look at the lagging member's own FTDC for the same window: disk, cache and CPU decide how fast it applies the oplog",
)


def lag_finding(name: str, member: str, start, end, peak: float) -> Finding:
    """A lagging member, named `name` (this node's view, or an address across nodes)."""
    return Finding(
        kind="replication_lag",
        severity="critical" if peak >= CRITICAL_LAG_S else "warning",
        start=start,
        end=end,
        subject=f"{_opening(name)} lagged the primary by up to {duration(peak)} for {duration((end - start).total_seconds())}",
        reasoning=(
            f"From {span(start, end)}, {name}'s last applied operation trailed the primary's by "
            f"{LAG_S:g} s or more (peak {duration(peak)}), as replSetGetStatus saw it. Reads from it were that stale, "
            "and majority writes waited on the members that kept up."
        ),
        evidence={
            "metrics": [f"replSetGetStatus.members.{member}.optimeDate", f"replSetGetStatus.members.{member}.state"],
            "member": member,
            "lag_s_peak": peak,
            "thresholds": {
                "lag_s": LAG_S,
                "sustained_s": MIN_S,
                "source": "support tooling: lag over 5 s is an anomaly; heartbeats and no-op writes add 10 s of noise",
            },
        },
        recommendations=[
            READ_ITS_FTDC,
            advise(
                "investigate",
                "Check the network between the members and the oplog window (replication lag beyond it needs a resync)",
                # The network is the suspect only where the lagging member's own storage kept up.
                assumes="engine_not_bottleneck",
            ),
        ],
    )


def named(finding: Finding, name: Callable[[str], str]) -> Finding:
    """One of this detector's findings told again with its members named by `name` (across nodes: addresses)."""
    e = finding.evidence
    if finding.kind == "replication_lag":
        return lag_finding(name(e["member"]), e["member"], finding.start, finding.end, e["lag_s_peak"])
    return change_finding(
        name(e["from_member"]),
        name(e["to_member"]),
        e["from_member"],
        e["to_member"],
        finding.start,
        finding.end,
        e.get("planned"),
    )


def _lag(ctx: Context, member: str) -> list[Finding]:
    column = f"member_lag_s.{member}"
    # No merging across dips: a member that keeps up touches zero every no-op cycle.
    return [
        lag_finding(
            member_name(ctx, member), member, w.start, w.end, aggregates.known(aggregates.greatest(w.rows(ctx.series)[column]))
        )
        for w in sustained(ctx.series, pl.col(column) >= LAG_S, min_s=MIN_S, merge_s=0)
    ]


def _primary_changes(ctx: Context, names: list[str]) -> list[Finding]:
    states = [f"member_state.{m}" for m in names]
    primary = pl.coalesce([pl.when(pl.col(c) == PRIMARY).then(pl.lit(m)) for c, m in zip(states, names)])
    frame = ctx.series.select(TIME_COLUMN, primary=primary).filter(pl.col("primary").is_not_null())
    changes = frame.with_columns(before=pl.col("primary").shift(1), since=pl.col(TIME_COLUMN).shift(1)).filter(
        pl.col("before").is_not_null() & (pl.col("primary") != pl.col("before"))
    )
    found = []
    for row in changes.iter_rows(named=True):
        found.append(
            change_finding(
                member_name(ctx, row["before"]),
                member_name(ctx, row["primary"]),
                row["before"],
                row["primary"],
                row["since"],
                row[TIME_COLUMN],
                planned_role_change(ctx, row["since"], row[TIME_COLUMN]),
            )
        )
    return found


def change_finding(old: str, new: str, from_member: str, to_member: str, since, at, planned: dict | None = None) -> Finding:
    """The primary moving from member `old` to member `new` (names: this node's view, or addresses); `planned`: when and
    how it was asked for (`planned_role_change`: the log, or this node's counters), None for a failover or when nothing
    says."""
    seen = (
        f"{_opening(old)} was primary at {clock(since)}; {new} was at {clock(at)}"
        f" ({duration((at - since).total_seconds())} without a primary seen in between)."
    )
    told = (
        f" A planned role change: {recorded(planned)}. Writes paused while the "
        "primary changed role; drivers sent them to the new primary."
        if planned
        else " No primary took writes in between."
    )
    return Finding(
        kind="primary_change",
        severity="info",
        start=since,
        end=at,
        subject=f"Primary changed from {old} to {new}" + (f" ({planned['how']})" if planned else ""),
        reasoning=seen + told,
        evidence={
            "metrics": [f"replSetGetStatus.members.{m}.state" for m in (from_member, to_member)],
            "from_member": from_member,
            "to_member": to_member,
            **({"planned": planned} if planned else {}),
        },
    )


def detect(ctx: Context) -> list[Finding]:
    names = members(ctx)
    if not names:
        # Not a replica-set member, or its FTDC has no replSetGetStatus: neither kind could be checked, and the
        # record says so (a report lists among its checks only the detectors that could run).
        return [ctx.not_checked("replication_lag", "Replication lag and primary changes", ["replica set status"])]
    findings = [f for m in names if ctx.has(f"member_lag_s.{m}") for f in _lag(ctx, m)]
    return findings + _primary_changes(ctx, names)


def relate(findings: list[Finding]) -> list[Finding]:
    """The findings again, a primary change during another finding's window made part of that incident: a warning."""
    problems = [f for f in findings if f.severity != "info" and f.kind != "primary_change"]
    return [_during(f, _overlapping(f, problems)) if f.kind == "primary_change" else f for f in findings]


def _overlapping(finding: Finding, others: list[Finding]) -> list[Finding]:
    return [o for o in others if o.window[0] <= finding.window[1] and o.window[1] >= finding.window[0]]


def _during(change: Finding, during: list[Finding]) -> Finding:
    if not during:
        return change
    # A change asked for (a stepdown, a takeover by priority) is the operator's or the set's plan: noted, still context.
    severity = change.severity if change.evidence.get("planned") else "warning"
    return replace(change, severity=severity).noted("It happened during: " + "; ".join(p.title for p in during) + ".")
