"""Latency spikes that are one long operation credited when it finished, not a stall of the node.

opLatencies adds an operation's whole latency to its class's counters in the
sample in which it ends (docs/metrics.md §1), so a five-minute aggregate shows as a
five-minute mean "latency" in one sample although every other read was as fast
as usual. A spike is such a completion when the log shows a few operations of
its class (fewer than MIN_OPS, the fewest a spike averages) that ended inside it
having begun before it, and the mean of the interval's other operations of that
class, their latency taken out (Δlatency - their durations over Δops - their
count), is no spike by the spike rule's own factor. A stall releases many
operations at once, and slows the others of the interval: it stays a stall.
"""

from __future__ import annotations

import polars as pl

from analysis.series.operations import COUNTED, WRITES
from analysis.series.spikes import MIN_OPS, SPIKE_FACTOR, Spike
from analysis.series.windows import between
from ftdc.frames import TIME_COLUMN

# The commands opLatencies counts as reads (the rest of the non-writes are commands).
READS = ("find", "aggregate", "count", "distinct", "getMore", "getmore")
# The slow operations' columns `stalls` reads: which are counted, their class, when they began, ended and took.
OPERATION_COLUMNS = ("ts", "started", "duration_ms", "command", "op_type", "write_statement")


def _class(op: str) -> pl.Expr:
    reads = pl.col("command").is_in(READS).fill_null(False)
    writes = WRITES.fill_null(False)
    return {"reads": reads & ~writes, "writes": writes}.get(op, ~reads & ~writes)


def credited(spike: Spike, samples: pl.DataFrame, ended: pl.DataFrame) -> bool:
    """Whether `spike` is operations that began before it credited at their completion (see the module): `samples`
    are the series' rows in it, `ended` the counted slow operations that ended in it."""
    ended = ended.filter(_class(spike.op), pl.col("started") < spike.start)
    if ended.is_empty() or ended.height >= MIN_OPS:
        return False
    counts = samples.select(ops=pl.col(f"{spike.op}_per_s") * pl.col("interval_s"), latency_ms=pl.col(f"{spike.op}_latency_ms"))
    ops = float((counts["ops"]).sum() or 0)
    latency_ms = float((counts["ops"] * counts["latency_ms"]).sum() or 0)
    others = ops - ended.height
    if others < 1:
        return True  # the long operations were all the interval did
    rest_ms = (latency_ms - float(ended["duration_ms"].sum())) / others
    return rest_ms < SPIKE_FACTOR * spike.baseline_ms


def stalls(spikes: list[Spike], series: pl.DataFrame, slow_ops: pl.DataFrame | None) -> list[Spike]:
    """The spikes that are not completions of long operations (all of them without a log to tell). Each spike's
    samples and slow operations are found by binary search (a week holds hundreds of spikes and millions of lines)."""
    if slow_ops is None or slow_ops.is_empty() or not spikes:
        return spikes
    # Only the columns read here are filtered and sorted: a filtered, sorted copy of a large log's slow operations
    # (every column) was the analysis's peak (a week and a 1 GB log: 660 MB more, docs/performance.md); the series'
    # sort is free while polars knows them in time order, and copies only these columns when it does not.
    ops = slow_ops.select(*OPERATION_COLUMNS).filter(COUNTED, pl.col("ts").is_not_null()).sort("ts")
    classes = sorted({s.op for s in spikes})
    series = series.select(
        TIME_COLUMN, "interval_s", *(f"{op}_{part}" for op in classes for part in ("per_s", "latency_ms"))
    ).sort(TIME_COLUMN)
    return [
        s
        for s in spikes
        if not credited(s, between(series, s.start, s.end, closed="right"), between(ops, s.start, s.end, closed="right", on="ts"))
    ]
