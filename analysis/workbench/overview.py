"""What a diagnostic.data directory covers: the node, the time range, the
sampling periods, chunk and schema churn, gaps and restarts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl

from analysis.series import aggregates, derived
from analysis.series.metrics import Resolved
from analysis.series.metrics import resolve as resolve_metrics
from ftdc.catalog import Catalog, catalog_files
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import NodeInfo, catalog_metadata
from ftdc.paths import PathArg, resolve
from ftdc.reader import decode_files

# Steps jitter by a few ms; periods are set in whole 100 ms (the minimum).
PERIOD_ROUNDING_MS = 100


@dataclass
class Gap:
    start: dt.datetime
    end: dt.datetime
    seconds: float


@dataclass
class Overview:
    node: NodeInfo
    files: int
    first: dt.datetime | None
    last: dt.datetime | None
    samples: int
    periods_ms: dict[int, int]
    """Sampling period (ms, to the nearest 100) -> steps at that period, most common first."""
    metrics: int
    chunks: int
    schema_changes: int
    gaps: list[Gap] = field(default_factory=list)
    restarts: list[dt.datetime] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def window(self) -> tuple[dt.datetime, dt.datetime] | None:
        """The first and last sample's times; None without a sample."""
        return None if self.first is None or self.last is None else (self.first, self.last)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["node"]["address"] = self.node.address
        return out


def sampling_periods(times: pl.Series) -> dict[int, int]:
    steps = times.diff().dt.total_milliseconds().drop_nulls()
    rounded = ((steps / PERIOD_ROUNDING_MS).round() * PERIOD_ROUNDING_MS).cast(pl.Int64).alias("period")
    counts = rounded.value_counts(sort=True)
    return dict(zip(counts["period"].to_list(), counts["count"].to_list()))


def _marks(prepared: pl.DataFrame) -> pl.DataFrame:
    return prepared.select(TIME_COLUMN, "gap", "restart", previous=pl.col(TIME_COLUMN).shift(1))


def gaps_of(prepared: pl.DataFrame) -> list[Gap]:
    """FTDC gaps of a `derived.prepare`d frame (its `gap` flag, the one definition), in time order;
    a restart is not counted as a gap too."""
    found = _marks(prepared).filter(pl.col("gap") & ~pl.col("restart"))
    return [
        Gap(start=row["previous"], end=row[TIME_COLUMN], seconds=(row[TIME_COLUMN] - row["previous"]).total_seconds())
        for row in found.iter_rows(named=True)
    ]


def restarts_of(prepared: pl.DataFrame) -> list[dt.datetime]:
    """The first sample of each new process in a `derived.prepare`d frame."""
    return _marks(prepared).filter(pl.col("restart"))[TIME_COLUMN].to_list()


def find_gaps(times: pl.Series) -> list[Gap]:
    """The gaps between sample times (derived.py's definition)."""
    return gaps_of(derived.prepare(pl.DataFrame({TIME_COLUMN: times}), Resolved({}, {})))


def schema_changes(catalog: Catalog) -> int:
    layouts = catalog.chunks["layout"]
    return int((layouts.diff().fill_null(0) != 0).sum())


STAGES = ("chunks", "samples", "metadata")


def overview(path: PathArg, *, time_field: str = TIME_COLUMN, progress: Callable[[str], None] = lambda stage: None) -> Overview:
    """What `path` covers; `progress(stage)` is called as each of STAGES completes."""
    files = resolve(path)
    catalog = catalog_files(files, time_field)
    progress(STAGES[0])
    resolved = resolve_metrics(catalog.schema())
    identity = Resolved({name: resolved.paths[name] for name in derived.IDENTITY if name in resolved.paths}, resolved.kinds)
    frame = derived.prepare(decode_files(files, identity.wanted, time_field=time_field, reported=catalog.problems), identity)
    progress(STAGES[1])
    node = catalog_metadata(catalog).node
    progress(STAGES[2])
    return summarize(catalog, frame, node)


def summarize(catalog: Catalog, frame: pl.DataFrame, node: NodeInfo) -> Overview:
    """The overview from what a reader already has: the catalog, a `derived.prepare`d
    frame (sample times with their gap and restart flags), and the node."""
    times = frame[TIME_COLUMN]
    return Overview(
        node=node,
        files=len(catalog.files),
        first=aggregates.earliest(times) if len(times) else None,
        last=aggregates.latest(times) if len(times) else None,
        samples=frame.height,
        periods_ms=sampling_periods(times),
        metrics=len(catalog.schema()) - 1,
        chunks=catalog.chunks.height,
        schema_changes=schema_changes(catalog),
        gaps=gaps_of(frame),
        restarts=restarts_of(frame),
        problems=[str(p) for p in catalog.problems],
    )
