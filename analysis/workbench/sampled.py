"""What the configuration audit reads from a node's sampled metrics (not its metadata): the oplog's size, maximum and
window, the connections at their peak, the replica-set members as this node saw them. One frozen value made once per
node from the prepared frame (`analysis.series.derived.prepare`), so the audit's rules stay functions of facts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import polars as pl

from analysis.series.metrics import Resolved
from ftdc.frames import TIME_COLUMN

# replSetGetStatus' member states (MemberState): the ones the audit names.
ARBITER = 7


@dataclass(frozen=True)
class OplogGrowth:
    """The oplog collection's size at the first and last samples that recorded it, and the time between them."""

    first_bytes: float
    last_bytes: float
    seconds: float
    grew_throughout: bool  # never shrank between samples: nothing was truncated, so the growth is the rate of writes


@dataclass(frozen=True)
class Sampled:
    oplog_max_bytes: float | None = None  # the configured maximum (collStats maxSize), at the last sample
    oplog_bytes: float | None = None  # the collection's size at the last sample
    oplog_growth: OplogGrowth | None = None
    oplog_window_h: float | None = None  # the shortest window the optimes of serverStatus.oplog measured
    connections_peak: float | None = None  # the most connections open at once
    connections_limit: float | None = None  # current + available at that sample: the limit in effect
    connections_peak_at: dt.datetime | None = None
    members: tuple[int, ...] | None = None  # each member's state at the last sample recording replSetGetStatus
    majority_votes: float | None = None


def _column(frame: pl.DataFrame, resolved: Resolved, name: str) -> pl.Series | None:
    """The node's values of canonical `name` (its paths coalesced, as `derive` does), or None where not recorded."""
    present = [p for p in resolved.paths.get(name, ()) if p in frame.columns]
    if not present:
        return None
    values = frame.select(pl.coalesce(present).cast(pl.Float64)).to_series()
    return None if values.null_count() == values.len() else values


def _last(values: pl.Series | None) -> float | None:
    kept = values.drop_nulls() if values is not None else None
    return float(kept[-1]) if kept is not None and kept.len() else None


def _growth(times: pl.Series, sizes: pl.Series) -> OplogGrowth | None:
    kept = pl.DataFrame({"t": times, "b": sizes}).drop_nulls()
    if kept.height < 2:
        return None
    seconds = (kept["t"][-1] - kept["t"][0]).total_seconds()
    if seconds <= 0:
        return None
    return OplogGrowth(float(kept["b"][0]), float(kept["b"][-1]), seconds, bool((kept["b"].diff().drop_nulls() >= 0).all()))


def sampled(frame: pl.DataFrame, resolved: Resolved) -> Sampled:
    """The audit's sampled facts of a prepared frame (time-ordered, the node's own paths)."""
    times = frame[TIME_COLUMN]
    sizes = _column(frame, resolved, "oplog.bytes")
    first, last = _column(frame, resolved, "oplog.first"), _column(frame, resolved, "oplog.last")
    window = None
    if first is not None and last is not None:
        # As the derived oplog_window_h reads them: an empty oplog's null optime (0 s) is no window, nor is one whose
        # latest entry reads before its earliest (the 8.0 sample's latestOptime reads 0 throughout).
        hours = pl.select(pl.when((first > 0) & (last >= first)).then((last - first) / 3600.0)).to_series().drop_nulls()
        window = float(hours.min()) if hours.len() else None  # type: ignore[arg-type]
    current, available = _column(frame, resolved, "conn.current"), _column(frame, resolved, "conn.available")
    peak = peak_limit = peak_at = None
    if current is not None and current.drop_nulls().len():
        at = int(current.fill_null(-1).arg_max() or 0)
        peak, peak_at = float(current[at]), times[at]
        if available is not None and available[at] is not None:
            peak_limit = float(current[at] + available[at])
    states = [_column(frame, resolved, n) for n in resolved.matching("member.state.")]
    members = None
    if any(s is not None for s in states):
        # The last sample holding any member's state: a member removed earlier is not counted.
        stacked = pl.DataFrame(
            {str(i): s if s is not None else pl.Series([None] * frame.height, dtype=pl.Float64) for i, s in enumerate(states)}
        )
        row = stacked.filter(pl.any_horizontal(pl.all().is_not_null())).tail(1).row(0)
        members = tuple(int(v) for v in row if v is not None)
    return Sampled(
        oplog_max_bytes=_last(_column(frame, resolved, "oplog.max_bytes")),
        oplog_bytes=_last(sizes),
        oplog_growth=_growth(times, sizes) if sizes is not None else None,
        oplog_window_h=window,
        connections_peak=peak,
        connections_limit=peak_limit,
        connections_peak_at=peak_at,
        members=members,
        majority_votes=_last(_column(frame, resolved, "repl.majority_votes")),
    )
