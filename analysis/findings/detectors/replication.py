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
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "Every member's state and last applied operation come with each node's replica set status. A secondary lags "
    f"when it trails the primary by {LAG_S:g} s or more without a break for {MIN_S:g} s: heartbeats (every 2 s) and "
    "an idle primary's no-op writes (every 10 s) make a member that keeps up show a 10-12 s sawtooth that drops "
    "back to 0, so only lag that never drops below the bar counts. A primary change is another member becoming "
    "primary; it is context unless it happened during another finding's window. Critical: "
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
    reads=("member_state.", "member_lag_s.", "member_self."),
    # The primary keeps history for a lagging majority (dirty cache); drivers reconnect after an election.
    sets_off=("cache_pressure", "connection_storm", "throughput_dip"),
    panels=(
        ("lag behind the primary, s", ("member_lag_s.",), False),
        ("member state (1 primary, 2 secondary)", ("member_state.",), False),
    ),
)


def planned_role_change(ctx: Context, start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, str] | None:
    """When and how this node's log says it gave up or took the primary on purpose from ROLE_CHANGE_LEAD before
    `start` to `end` (the first such line): a replSetStepDown command, a replSetStepUp request, a priority or
    catch-up takeover. None without a log, or when none is there (a failover is no plan)."""
    if ctx.logs is None:
        return None
    lines = ctx.logs.events.filter(
        pl.col("kind").is_in(list(PLANNED)), pl.col("ts").is_between(start - ROLE_CHANGE_LEAD, end)
    ).sort("ts")
    if lines.is_empty():
        return None
    return lines["ts"][0], PLANNED[lines["kind"][0]]


def members(ctx: Context) -> list[str]:
    return [c.removeprefix("member_state.") for c in ctx.series.columns if c.startswith("member_state.")]


def member_name(ctx: Context, member: str) -> str:
    """`member 1`, or `member 1 (this node, host:port)`."""
    column = f"member_self.{member}"
    if column in ctx.series.columns and (ctx.series[column].max() or 0) > 0:
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
        lag_finding(member_name(ctx, member), member, w.start, w.end, float(w.rows(ctx.series)[column].max()))
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
        planned = planned_role_change(ctx, row["since"], row[TIME_COLUMN])
        found.append(
            change_finding(
                member_name(ctx, row["before"]),
                member_name(ctx, row["primary"]),
                row["before"],
                row["primary"],
                row["since"],
                row[TIME_COLUMN],
                {"at": planned[0], "how": planned[1]} if planned else None,
            )
        )
    return found


def change_finding(old: str, new: str, from_member: str, to_member: str, since, at, planned: dict | None = None) -> Finding:
    """The primary moving from member `old` to member `new` (names: this node's view, or addresses); `planned`: when and
    how the log says it was asked for (`planned_role_change`), None for a failover or when no log says."""
    seen = (
        f"{_opening(old)} was primary at {clock(since)}; {new} was at {clock(at)}"
        f" ({duration((at - since).total_seconds())} without a primary seen in between)."
    )
    told = (
        f" A planned role change: the log records {planned['how']} at {clock(planned['at'])}. Writes paused while the "
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
        return []  # not a replica-set member (or its FTDC has no replSetGetStatus): nothing to say
    findings = [f for m in names if ctx.has(f"member_lag_s.{m}") for f in _lag(ctx, m)]
    return findings + _primary_changes(ctx, names)


def relate(findings: list[Finding]) -> list[Finding]:
    """The findings again, a primary change during another finding's window made part of that incident: a warning."""
    problems = [f for f in findings if f.severity != "info" and f.kind != "primary_change"]
    return [
        _during(f, [p for p in problems if p.start <= f.end and p.end >= f.start]) if f.kind == "primary_change" else f
        for f in findings
    ]


def _during(change: Finding, during: list[Finding]) -> Finding:
    if not during:
        return change
    # A change asked for (a stepdown, a takeover by priority) is the operator's or the set's plan: noted, still context.
    severity = change.severity if change.evidence.get("planned") else "warning"
    return replace(change, severity=severity).noted("It happened during: " + "; ".join(p.title for p in during) + ".")
