"""What a diagnostic.data directory covers: the node, the time range, the
sampling periods, chunk and schema churn, gaps and restarts."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

import polars as pl

from ftdc.catalog import Catalog, catalog_files
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import NodeInfo, catalog_metadata
from ftdc.paths import PathArg, resolve
from ftdc.reader import decode_files

PID = "serverStatus.pid"
UPTIME = "serverStatus.uptime"
# A gap is a step longer than this many sampling periods (with 5 % for jitter).
GAP_PERIODS = 2 * 1.05
# Steps jitter by a few ms; periods are set in whole 100 ms (the minimum).
PERIOD_ROUNDING_MS = 100
# The period in effect is the median of this many steps on each side.
PERIOD_WINDOW = 5


@dataclass
class Gap:
    start: dt.datetime
    end: dt.datetime
    seconds: float


@dataclass
class Overview:
    node: NodeInfo
    files: int
    first: Optional[dt.datetime]
    last: Optional[dt.datetime]
    samples: int
    periods_ms: dict[int, int]
    """Sampling period (ms, to the nearest 100) -> steps at that period, most common first."""
    metrics: int
    chunks: int
    schema_changes: int
    gaps: list[Gap] = field(default_factory=list)
    restarts: list[dt.datetime] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["node"]["address"] = self.node.address
        return out


def sampling_periods(times: pl.Series) -> dict[int, int]:
    steps = times.diff().dt.total_milliseconds().drop_nulls()
    rounded = ((steps / PERIOD_ROUNDING_MS).round() * PERIOD_ROUNDING_MS).cast(pl.Int64).alias("period")
    counts = rounded.value_counts(sort=True)
    return dict(zip(counts["period"].to_list(), counts["count"].to_list()))


def find_gaps(times: pl.Series) -> list[Gap]:
    """Steps longer than GAP_PERIODS x the period in effect on both sides, so
    that a change of sampling period is not taken for a gap."""
    frame = pl.DataFrame({"t": times}).with_columns(step=pl.col("t").diff().dt.total_milliseconds())
    before = pl.col("step").shift(1).rolling_median(PERIOD_WINDOW, min_samples=1)
    after = pl.col("step").reverse().shift(1).rolling_median(PERIOD_WINDOW, min_samples=1).reverse()
    frame = frame.with_columns(period=pl.max_horizontal(before, after))
    # Repeated timestamps (period 0) say nothing about the sampling period.
    found = frame.filter(pl.col("period") > 0, pl.col("step") > GAP_PERIODS * pl.col("period"))
    return [
        Gap(start=row["t"] - dt.timedelta(milliseconds=row["step"]), end=row["t"], seconds=row["step"] / 1000)
        for row in found.iter_rows(named=True)
    ]


def find_restarts(frame: pl.DataFrame) -> list[dt.datetime]:
    """Samples where the pid changed or uptime went backwards."""
    changed = []
    if PID in frame.columns:
        changed.append(pl.col(PID).diff().fill_null(0) != 0)
    if UPTIME in frame.columns:
        changed.append(pl.col(UPTIME).diff().fill_null(0) < 0)
    if not changed:
        return []
    return frame.filter(pl.any_horizontal(changed))[TIME_COLUMN].to_list()


def schema_changes(catalog: Catalog) -> int:
    layouts = catalog.chunks["layout"]
    return int((layouts.diff().fill_null(0) != 0).sum())


STAGES = ("chunks", "samples", "metadata")


def overview(path: PathArg, *, time_field: str = TIME_COLUMN, progress: Callable[[str], None] = lambda stage: None) -> Overview:
    """What `path` covers; `progress(stage)` is called as each of STAGES completes."""
    files = resolve(path)
    catalog = catalog_files(files, time_field)
    progress(STAGES[0])
    frame = decode_files(files, [PID, UPTIME], time_field=time_field)
    progress(STAGES[1])
    node = catalog_metadata(catalog).node
    progress(STAGES[2])
    return summarize(catalog, frame, node)


def summarize(catalog: Catalog, frame: pl.DataFrame, node: NodeInfo) -> Overview:
    """The overview from what a reader already has: the catalog, a frame with
    `start` (and `serverStatus.pid`/`uptime` where known), and the node."""
    times = frame[TIME_COLUMN]
    return Overview(
        node=node,
        files=len(catalog.files),
        first=times.min() if len(times) else None,
        last=times.max() if len(times) else None,
        samples=frame.height,
        periods_ms=sampling_periods(times),
        metrics=len(catalog.schema()) - 1,
        chunks=catalog.chunks.height,
        schema_changes=schema_changes(catalog),
        gaps=find_gaps(times),
        restarts=find_restarts(frame),
        problems=catalog.problems,
    )
