"""Root causes that are operations other than a COLLSCAN: an index build, and a transaction or cursor pinning history.

An index build (6.0+ FTDC: `indexBuilds.total` registered, `phases.commit` committed; the log's createIndexes
command, which returns when its build commits) scans its whole collection through the cache, filling it, and
bulk-loads the new index, dirty data checkpoints must write: a candidate for cache and checkpoint incidents when
one ran in the window. A transaction left open (or a cursor) keeps its snapshot: WiredTiger pins every
transaction ID since its start (`transaction range of IDs currently pinned`), so updates it may still read cannot
be evicted: dirty and update bytes climb and the history store grows while the load is unchanged. It is a
candidate for cache and checkpoint incidents when the pinned range in the window was PINNED_FACTOR times its
median of the hour before and at least MIN_PINNED IDs.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Optional

import polars as pl

from ftdc.frames import TIME_COLUMN

from analysis.findings.finding import Finding
from analysis.incidents.incident import RootCause
from analysis.series.metrics import BY_NAME
from analysis.text import duration
from analysis.advice.recommendation import advise

if TYPE_CHECKING:
    from analysis.analyze import Analysis

# The kinds an index build's scan and bulk load, or history kept in the cache, set off.
CACHE_KINDS = ("cache_pressure", "checkpoint_stall")
PINNED_FACTOR = 10.0
MIN_PINNED = 10_000
BEFORE = dt.timedelta(hours=1)


def _during(analysis: "Analysis", column: str, start: dt.datetime, end: dt.datetime) -> pl.Series:
    if column not in analysis.series.columns:
        return pl.Series(column, [], pl.Float64)
    return analysis.series.filter(pl.col(TIME_COLUMN).is_between(start, end))[column].drop_nulls()


def _paths(*names: str) -> list[str]:
    """The metric paths behind canonical names (the newest layout's, as evidence)."""
    return [BY_NAME[n].paths[0] for n in names]


def _index_key(command_json: Optional[str]) -> Optional[str]:
    """The first index's key of a logged createIndexes command, as the shell writes it."""
    try:
        indexes = json.loads(command_json or "").get("indexes") or []
        key = indexes[0].get("key") if indexes else None
    except (ValueError, AttributeError, TypeError):
        return None
    return json.dumps(key, separators=(", ", ": ")) if isinstance(key, dict) else None


def index_builds(analysis: "Analysis", kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """An index build running in the window, from FTDC's build counters and the log's createIndexes."""
    present = [k for k in CACHE_KINDS if k in kinds]
    if not present:
        return []
    running = _during(analysis, "index_builds_running", start, end)
    builds = pl.DataFrame()
    if analysis.logs is not None and "command" in analysis.logs.slow_ops.columns:
        builds = analysis.logs.slow_ops.filter(pl.col("command") == "createIndexes", pl.col("started") <= end, pl.col("ts") >= start)
    if builds.is_empty() and not (running.len() and running.max() > 0):
        return []
    evidence: dict[str, Any] = {"mechanism": "index_build", "metrics": _paths("index.builds_started", "index.builds_committed")}
    if running.len():
        evidence["index_builds_running_peak"] = int(running.max())
    what = "An index build"
    if not builds.is_empty():
        longest = builds.sort("duration_ms", descending=True).row(0, named=True)
        key = _index_key(longest.get("command_json"))
        evidence.update(ns=longest["ns"], index=key, started=longest["started"], ended=longest["ts"], duration_s=round(longest["duration_ms"] / 1000, 1))
        what = f"An index build on {longest['ns'] or 'an unknown namespace'}" + (f" {key}" if key else "")
        when = f" ran from {longest['started']:%H:%M:%S} for {duration(longest['duration_ms'] / 1000)} (its createIndexes command)"
    else:
        when = " ran through the window (indexBuilds: registered and not yet committed)"
    ns = evidence.get("ns")
    return [RootCause(
        kind="operation",
        summary=f"{what}{when}: its collection scan reads every document through the cache and its bulk load writes the whole index, dirty data checkpoints must write",
        evidence=evidence,
        recommendations=[advise("change_workload", f"Build indexes{' on ' + ns if ns else ''} outside the busy hours, or one member at a time "
                                                   "(on each secondary in turn, then on the primary after stepping it down)",
                                "so its scan and bulk load do not meet the workload", target=ns)],
        findings=[f.id for k in present for f in kinds[k]],
        headline=what,
    )]


def pinned_history(analysis: "Analysis", kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """A transaction or cursor kept open: WiredTiger's pinned range far above its usual, with the transactions open."""
    present = [k for k in CACHE_KINDS if k in kinds]
    pinned = _during(analysis, "pinned_txn_ids", start, end)
    if not present or not pinned.len():
        return []
    usual = _during(analysis, "pinned_txn_ids", start - BEFORE, start - dt.timedelta(microseconds=1))
    usual_ids = float(usual.median()) if usual.len() else 0.0
    peak = float(pinned.max())
    if peak < MIN_PINNED or peak < PINNED_FACTOR * usual_ids:
        return []
    evidence: dict[str, Any] = {"mechanism": "pinned_history", "pinned_txn_ids_peak": int(peak), "pinned_txn_ids_before": int(usual_ids),
                                "thresholds": {"pinned": f"≥ {PINNED_FACTOR:g}× the median of the hour before and ≥ {MIN_PINNED:,} IDs"},
                                "metrics": _paths("txn.pinned_ids", "txn.open", "txn.inactive", "cache.history_store_bytes")}
    held = ""
    open_ = _during(analysis, "transactions_open", start, end)
    if open_.len() and open_.max() > 0:
        idle = _during(analysis, "transactions_inactive", start, end)
        evidence.update(transactions_open=int(open_.max()), transactions_inactive=int(idle.max()) if idle.len() else None)
        held = f" with {int(open_.max())} transaction(s) open" + (f", {int(idle.max())} idle between statements" if idle.len() and idle.max() > 0 else "")
    grew = ""
    store = _during(analysis, "history_store_mb", start, end)
    if store.len() >= 2 and store[-1] > store[0]:
        evidence["history_store_growth_mb"] = round(float(store[-1] - store[0]), 1)
        grew = f"; the history store grew by {store[-1] - store[0]:,.0f} MB"
    return [RootCause(
        kind="operation",
        summary=(f"A long-running transaction or cursor pinned history: WiredTiger kept {peak:,.0f} transaction IDs pinned "
                 f"(usually {usual_ids:,.0f}){held}{grew}: updates it may still read cannot be evicted, so dirty and update bytes climb under an unchanged load"),
        evidence=evidence,
        recommendations=[advise("change_workload", "Find the open transaction or cursor ($currentOp with idleSessions and idleCursors) and end it; "
                                                   "commit transactions promptly (transactionLifetimeLimitSeconds, 60 s by default, aborts an idle one) "
                                                   "and exhaust or kill long-lived cursors")],
        findings=[f.id for k in present for f in kinds[k]],
        headline="A long-running transaction or cursor pinning history",
    )]
