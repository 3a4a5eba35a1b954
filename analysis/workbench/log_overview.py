"""What the log says about the whole period, beyond any finding's window: every query
shape's cost (`summarize_queries` with the clients that ran it and 8.0's split of its time
into working and queued for a ticket), the connections by application and driver, and the
log's warnings and errors by message. A support engineer's first look at a ticket's logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.series import aggregates
from analysis.text import counted
from ftdc.logs import LogFrames, summarize_queries
from ftdc.logs.shapes import shape_of_other_command
from ftdc.logs.summary import Gathered, distinct, longest, tally
from ftdc.logs.summary import queries as ftdc_queries
from ftdc.timeutil import format_time

# The slow-operation table keeps this many shapes (most total time first); the JSON and the
# page hold them all up to here, the page shows the first TOP_SHAPES.
MAX_SHAPES = 500
TOP_SHAPES = 20
# What a report says of a log that holds no slow operation (not an empty table under "0 query shape(s)").
NO_SLOW_OPERATIONS = "No slow operations were logged."
# Warning, error and fatal lines (JSON `s`; legacy text's severity letter).
MESSAGE_SEVERITIES = ("F", "E", "W")
MAX_MESSAGES = 200

# The durations the table gives of each shape, in milliseconds.
LATENCIES = ("min_ms", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")
# The log lines the table quotes of each shape: its longest runs, as mongod wrote them; of the QUOTED_SHAPES shapes of
# most total time, so that a page of 500 shapes stays a few MB (at most 100 x 3 lines of 16 KiB).
SLOWEST_LINES = 3
QUOTED_SHAPES = 100

# Columns the report's table adds to `summarize_queries`: who ran each shape, and on 8.0
# (`workingMillis`, `queues.execution.totalTimeQueuedMicros`) what share of its time was work.
QUERY_EXTRAS: dict[str, pl.Expr | Gathered] = {
    "min_ms": pl.col("duration_ms").min(),
    # The response sizes (reslen) logged, in bytes; null where no run logged one (an index build).
    "reslen_bytes": pl.when(pl.col("reslen").is_not_null().any()).then(pl.col("reslen").sum()),
    # Each planSummary as mongod wrote it ("IXSCAN { email: 1 }": the index by its key pattern), with its runs.
    "plans": tally("plan_summary", "runs"),
    # The longest runs: when each was logged, where (the file's name, not where it lay on this machine) and its line as
    # mongod wrote it, where the analysis read it again (`line_text`; not in a redacted report).
    "slowest": longest(
        SLOWEST_LINES,
        at=pl.col("ts"),
        duration_ms=pl.col("duration_ms"),
        file=pl.col("file").cast(pl.String).str.replace(r"^.*[/\\!]", ""),
        line=pl.col("line"),
        log_line=pl.col("line_text"),
    ),
    "apps": distinct("app_name", ", "),
    "working_ms": pl.col("working_ms").sum(),
    "working_runs": pl.col("working_ms").is_not_null().sum(),
    "queued_ms": (pl.col("execution_queued_micros").fill_null(0).sum() / 1000).round(1),
    # Runs that failed (interrupted, a client that disconnected) and how: a shape of failures has no plan to show.
    "failed": (pl.col("ok") == False).sum(),  # noqa: E712 (a null `ok` is not a failure)
    "errors": distinct("err_name", ", "),
}


@dataclass(frozen=True)
class Workload:
    queries: pl.DataFrame  # summarize_queries' columns + QUERY_EXTRAS, most total time first
    shapes: int  # shapes in the log, before MAX_SHAPES
    connections: pl.DataFrame  # app, driver, connections, first, last
    messages: pl.DataFrame  # severity, id, msg, count, first, last
    over_time: pl.DataFrame  # start, operations, collscans, total_ms: the slow operations logged in each interval
    interval_s: int  # the length of over_time's intervals

    def to_dict(self) -> dict[str, Any]:
        return {
            "shapes": self.shapes,
            "slow_operations": [
                {**row, "slowest": [{k: format_time(v) if k == "at" else v for k, v in s.items()} for s in row["slowest"]]}
                for row in _rows(self.queries.drop("example_command"))
            ],
            "slow_operations_over_time": {"interval_s": self.interval_s, "intervals": _rows(self.over_time)},
            "connections": _rows(self.connections),
            "log_messages": _rows(self.messages),
        }


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [{k: format_time(v) if hasattr(v, "tzinfo") else v for k, v in row.items()} for row in frame.iter_rows(named=True)]


# Commands the query planner plans: a slow one's line gives its plan and its filter's shape. The others (an insert, an
# index build) have neither, and a table says so rather than leave a blank.
PLANNED = frozenset(
    {"find", "aggregate", "count", "distinct", "update", "delete", "findAndModify", "findandmodify", "getMore", "bulkWrite"}
)


# What a table says of a value a damaged slow-query line did not give (its command, its plan).
NOT_LOGGED = "not logged"


def no_plan(command: str | None) -> str:
    """The plan of an operation whose log line names none, in words."""
    if command is None or command in PLANNED:
        return NOT_LOGGED
    return f"none: {'an' if command[0] in 'aeiou' else 'a'} {command} has no plan"


def no_shape(command: str | None) -> str:
    """The query shape of an operation whose log line gives none (nor its hash), in words."""
    if command is None or command in PLANNED:
        return "not logged"
    return f"none: {'an' if command[0] in 'aeiou' else 'a'} {command} has no filter"


def apps_text(apps: str | None) -> str:
    """The application names that ran a shape, or why there are none: a client names itself (appName) only when it
    chooses to, and the log's line of an operation then carries the name, in every format mongod writes."""
    return apps or "not named in the log"


def shape_text(shape: str | None, query_hash: str | None, command: str | None) -> tuple[str, bool]:
    """A shape's cell and whether it is the log's own text (a code span): its shape, else its hash, else why neither."""
    if shape:
        return shape, True
    if query_hash:
        return f"hash {query_hash}", True
    return no_shape(command), False


def with_failures(plans: str, failed: int, count: int, error: str | None) -> str:
    """Plans as the tables say them with the runs that failed beside them: a run that failed may have logged no plan, and
    its failure says why (one wording for the whole-span table and the culprit tables)."""
    said = f"failed {failed} of {counted(count, 'run')}" + (f": {error}" if error else "")
    return f"{plans} ({said})" if plans else said


def plans_text(row: dict) -> str:
    """The plans a shape ran with as mongod summarised them ("IXSCAN { email: 1 }": the index by its key pattern), each
    with its runs unless one plan served them all; `no_plan` when the log names none; its failed runs beside, as the
    culprit table says them."""
    plans = row["plans"] or []
    alone = len(plans) == 1 and plans[0]["runs"] == row["count"]
    said = "; ".join(p["plan"] if alone else f"{p['plan']} ({counted(p['runs'], 'run')})" for p in plans)
    if row["failed"]:
        return with_failures(said, row["failed"], row["count"], row["errors"])
    return said or no_plan(row["command"])


def ratios_text(row: dict) -> str | None:
    """Index keys and documents examined per document returned, in words; None when the shape returned nothing."""
    keys, docs = row["keys_examined_per_returned"], row["docs_examined_per_returned"]
    if keys is None and docs is None:
        return None
    return ", ".join(f"{name} {value:,.1f}" for name, value in (("keys", keys), ("documents", docs)) if value is not None)


def size_text(value: float | None) -> str:
    """A response size in bytes as the tables say it: `512 B`, `457.6 kB`, `8.8 MB`."""
    if value is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f} B"


# A slowest run whose line the report does not quote: a redacted report quotes no line of the log, and frames given to
# the analysis (not files it read) have none to quote.
NOT_QUOTED = "its line is not quoted (a redacted report quotes no line of the log, nor one of a shape past the first 100)"


# Most runs first, then by the plan's text: one order however the grouping met them.
_PLANS_ORDER = pl.element().sort_by(
    pl.element().struct.field("runs"), pl.element().struct.field("plan"), descending=[True, False]
)


def _command_shapes(table: pl.DataFrame) -> pl.Series:
    """The shape of each row's slowest command where the log gives the row no query shape nor hash (an index build,
    collStats, an insert): what the command asks for, its values replaced (`shape_of_other_command`)."""
    shapeless = table["shape"].is_null() & table["query_hash"].is_null()
    return pl.Series(
        "command_shape",
        [shape_of_other_command(c) if n else None for c, n in zip(table["example_command"], shapeless)],
        dtype=pl.String,
    )


def queries(logs: LogFrames) -> pl.DataFrame:
    """Every slow operation of the log by shape, index builds too: `summarize_queries` (by total time) with
    QUERY_EXTRAS, what was examined, returned and sent back per run, and the shape of the commands that have no filter."""
    slow = logs.slow_ops
    if "line_text" not in slow.columns:  # frames given, not read by the analysis: no line was read again
        slow = slow.with_columns(line_text=pl.lit(None, pl.String))
    table = summarize_queries(slow, "total", extra=QUERY_EXTRAS, index_builds=True)
    runs = pl.col("count")
    return table.with_columns(
        keys_examined_per_returned=pl.when(pl.col("nreturned") > 0).then(pl.col("keys_examined") / pl.col("nreturned")),
        keys_examined_per_run=pl.col("keys_examined") / runs,
        docs_examined_per_run=pl.col("docs_examined") / runs,
        nreturned_per_run=pl.col("nreturned") / runs,
        reslen_bytes_per_run=pl.col("reslen_bytes") / runs,
        plans=pl.col("plans").list.eval(pl.element().struct.rename_fields(["plan", "runs"])).list.eval(_PLANS_ORDER),
        command_shape=_command_shapes(table),
    )


# Interval lengths for the operations-over-time chart, in seconds: the shortest that cuts the span into at most
# MAX_INTERVALS.
INTERVALS_S = (1, 5, 10, 30, 60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400)
MAX_INTERVALS = 120


def over_time(slow_ops: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The slow operations of the table (each counted once, index builds too) by the interval they were logged in:
    how many, how many scanned a whole collection, their summed duration; and the interval's length in seconds."""
    runs = (
        ftdc_queries(slow_ops.lazy().select("ts", "duration_ms", "plan_kind", "write_statement", "op_type"), index_builds=True)
        .filter(pl.col("ts").is_not_null())
        .collect()
    )
    if runs.is_empty():
        return pl.DataFrame(
            schema={"start": pl.Datetime("ms", "UTC"), "operations": pl.UInt32, "collscans": pl.UInt32, "total_ms": pl.Int64}
        ), 60
    span_s = (
        aggregates.known_time(aggregates.latest(runs["ts"])) - aggregates.known_time(aggregates.earliest(runs["ts"]))
    ).total_seconds()
    interval = next((s for s in INTERVALS_S if span_s / s <= MAX_INTERVALS), INTERVALS_S[-1])
    table = (
        runs.group_by(start=pl.col("ts").dt.truncate(f"{interval}s"))
        .agg(
            operations=pl.len(),
            collscans=(pl.col("plan_kind") == "COLLSCAN").fill_null(False).sum().cast(pl.UInt32),
            total_ms=pl.col("duration_ms").fill_null(0).sum(),
        )
        .sort("start")
    )
    return table, interval


def connections(events: pl.DataFrame) -> pl.DataFrame:
    """Client metadata lines (one per connection that sent it) by application and driver."""
    meta = events.filter(pl.col("kind") == "client_metadata")
    return (
        meta.group_by(app=pl.col("app_name").fill_null("(none)"), driver=pl.col("driver").fill_null("(none)"))
        .agg(connections=pl.len(), first=pl.col("ts").min(), last=pl.col("ts").max())
        .sort("connections", "app", "driver", descending=[True, False, False])
    )


def messages(events: pl.DataFrame) -> pl.DataFrame:
    """Warning, error and fatal lines by message (its id and text as mongod wrote it), most frequent first."""
    lines = events.filter(pl.col("severity").is_in(MESSAGE_SEVERITIES))
    return (
        lines.group_by("severity", "id", msg=pl.col("msg").fill_null(""))
        .agg(count=pl.len(), first=pl.col("ts").min(), last=pl.col("ts").max())
        .sort(
            pl.col("severity").replace_strict({s: i for i, s in enumerate(MESSAGE_SEVERITIES)}, return_dtype=pl.Int8),
            pl.col("count"),
            "msg",
            descending=[False, True, False],
        )
        .head(MAX_MESSAGES)
    )


def workload(logs: LogFrames | None) -> Workload | None:
    """The log's workload over the analysis's span; None without a log."""
    if logs is None:
        return None
    table = queries(logs)
    times, interval = over_time(logs.slow_ops)
    return Workload(table.head(MAX_SHAPES), table.height, connections(logs.events), messages(logs.events), times, interval)
