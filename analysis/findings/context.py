"""What every detector gets: the derived series and what it was derived from."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, overload

import polars as pl

from analysis.findings.finding import Finding, Usual
from analysis.series.aggregates import earliest, latest, median
from analysis.series.checkpoints import Checkpoint, by_window
from analysis.series.completions import stalls
from analysis.series.derived import columns_for
from analysis.series.metrics import Resolved
from analysis.series.spans import Spans
from analysis.series.spikes import Spike, all_spikes
from analysis.series.thresholds import Thresholds
from analysis.series.windows import between
from ftdc.frames import TIME_COLUMN
from ftdc.logs import LogFrames
from ftdc.metadata import NodeInfo

T = TypeVar("T")
# Baselines look back this far before a window.
BASELINE = dt.timedelta(hours=1)
# Below this much data before a window there is no baseline: a median of a few samples is not what is usual.
MIN_BEFORE = dt.timedelta(minutes=1)


def major_minor(version: str | None) -> tuple[int, int] | None:
    """(7, 0) for "7.0.12"; None when unknown."""
    try:
        major, minor = (int(x) for x in (version or "").split(".")[:2])
    except ValueError:
        return None
    return major, minor


@dataclass
class Context:
    series: pl.DataFrame
    resolved: Resolved
    thresholds: Thresholds
    checkpoints: list[Checkpoint]
    node: NodeInfo
    logs: LogFrames | None = None
    spikes_ahead: Future[list[Spike]] | None = field(default=None, repr=False, compare=False)
    """`all_spikes(series)` already under way (`analyze` starts it as soon as the series exist), or None."""
    _once: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _computing: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False, compare=False)

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """`compute()`, computed once for this context under `key`, however many detectors (which run side by side)
        or incidents ask: a figure of the whole range that several of them read."""
        with self._computing:
            if key not in self._once:
                self._once[key] = compute()
            return self._once[key]

    @property
    def spikes(self) -> list[Spike]:
        """Latency spikes of every operation class (several detectors read them), less those the log shows to be
        long operations credited at completion (`completions`): they are no stall of the node."""
        return self.once(
            "spikes",
            lambda: stalls(
                self.spikes_ahead.result() if self.spikes_ahead is not None else all_spikes(self.series),
                self.series,
                self.logs.slow_ops if self.logs is not None else None,
            ),
        )

    @cached_property
    def checkpoint_spans(self) -> Spans[Checkpoint]:
        """The checkpoints by their windows, found by bisection."""
        return by_window(self.checkpoints)

    @property
    def first(self) -> dt.datetime | None:
        return earliest(self.series[TIME_COLUMN]) if self.series.height else None

    @property
    def last(self) -> dt.datetime | None:
        return latest(self.series[TIME_COLUMN]) if self.series.height else None

    @property
    def major_minor(self) -> tuple[int, int] | None:
        return major_minor(self.node.version)

    def has(self, *columns: str) -> bool:
        return all(c in self.series.columns for c in columns)

    @cached_property
    def _needs(self) -> dict[str, tuple[str, ...]]:
        """Derived column -> the canonical metric names it is computed from."""
        return {c.name: c.needs for c in columns_for(self.resolved)}

    def paths(self, *columns: str) -> list[str]:
        """The node's metric paths behind derived columns: the evidence's metric names."""
        out: list[str] = []
        for column in columns:
            for name in self._needs.get(column, ()):
                path = self.resolved.path(name)
                if path and path not in out:
                    out.append(path)
        return out

    def window(self, start: dt.datetime, end: dt.datetime) -> pl.DataFrame:
        return between(self.series, start, end)

    def before(self, column: str, start: dt.datetime) -> tuple[float, dt.datetime] | None:
        """The median of `column` over the hour before `start` (all data before it when shorter) and the time of the
        earliest sample it rests on (`since`: a rate's first value covers the interval from that sample, so every
        baseline before `start` quotes one span); None when the capture holds less than MIN_BEFORE: no baseline."""
        since = self.since(start)
        usual = median(between(self.series, start - BASELINE, start, closed="left")[column])  # None: no value there
        return None if since is None or usual is None else (float(usual), since)

    def baseline(self, column: str, start: dt.datetime) -> float | None:
        """The median of `before`, alone."""
        found = self.before(column, start)
        return None if found is None else found[0]

    def earliest_before(self, start: dt.datetime, reach: dt.timedelta) -> dt.datetime | None:
        """The earliest sample of the `reach` before `start`: where a baseline over it begins; None when there is none."""
        rows = between(self.series.select(TIME_COLUMN), start - reach, start, closed="left")
        return rows[TIME_COLUMN][0] if rows.height else None

    def since(self, start: dt.datetime) -> dt.datetime | None:
        """The earliest sample of the hour before `start` (what a baseline of it rests on), None below MIN_BEFORE."""
        earliest = self.earliest_before(start, BASELINE)
        return earliest if earliest is not None and start - earliest >= MIN_BEFORE else None

    @overload
    def usual_latency(self, op: str, start: dt.datetime, fallback_ms: float, in_title: bool = False) -> Usual: ...

    @overload
    def usual_latency(self, op: str, start: dt.datetime, fallback_ms: None = None, in_title: bool = False) -> Usual | None: ...

    def usual_latency(
        self, op: str, start: dt.datetime, fallback_ms: float | None = None, in_title: bool = False
    ) -> Usual | None:
        """The usual latency of `op` a finding quotes beside its peak: the hour before `start`, as every detector gives a
        baseline (one definition; `analysis.incidents.grouping` moves `start` to the incident's, so one card quotes one
        value per class); `fallback_ms` (a spike's own rolling baseline) when the data has too little before."""
        found = self.before(f"{op}_latency_ms", start) if self.has(f"{op}_latency_ms") else None
        if found is not None:
            return Usual(op, found[0], start, in_title, since=found[1])
        return None if fallback_ms is None else Usual(op, fallback_ms, start, in_title)

    def not_checked(self, kind: str, what: str, missing: list[str]) -> Finding:
        """An `info` finding: this detector could not run on this node's metrics."""
        version = self.node.version or "unknown version"
        return Finding(
            kind=kind,
            severity="info",
            start=self.first,
            end=self.last,
            subject=f"{what} not checked",
            statement=f"this node ({version}) did not record {', '.join(missing)}",
            reasoning=f"The {what[:1].lower() + what[1:]} check needs {', '.join(missing)}; no file of this node holds them, so "
            "nothing can be said either way.",
            evidence={"missing": missing},
        )
