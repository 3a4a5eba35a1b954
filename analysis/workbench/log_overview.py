"""What the log says about the whole period, beyond any finding's window: every query
shape's cost (`summarize_queries` with the clients that ran it and 8.0's split of its time
into working and queued for a ticket), the connections by application and driver, and the
log's warnings and errors by message. A support engineer's first look at a ticket's logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.text import counted
from ftdc.logs import LogFrames, summarize_queries
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

# Columns the report's table adds to `summarize_queries`: who ran each shape, and on 8.0
# (`workingMillis`, `queues.execution.totalTimeQueuedMicros`) what share of its time was work.
QUERY_EXTRAS = {
    "apps": pl.col("app_name").drop_nulls().unique().sort().str.join(", "),
    "working_ms": pl.col("working_ms").sum(),
    "working_runs": pl.col("working_ms").is_not_null().sum(),
    "queued_ms": (pl.col("execution_queued_micros").fill_null(0).sum() / 1000).round(1),
    # Runs that failed (interrupted, a client that disconnected) and how: a shape of failures has no plan to show.
    "failed": (pl.col("ok") == False).sum(),  # noqa: E712 (a null `ok` is not a failure)
    "errors": pl.col("err_name").drop_nulls().unique().sort().str.join(", "),
}


@dataclass(frozen=True)
class Workload:
    queries: pl.DataFrame  # summarize_queries' columns + QUERY_EXTRAS, most total time first
    shapes: int  # shapes in the log, before MAX_SHAPES
    connections: pl.DataFrame  # app, driver, connections, first, last
    messages: pl.DataFrame  # severity, id, msg, count, first, last

    def to_dict(self) -> dict[str, Any]:
        return {
            "shapes": self.shapes,
            "slow_operations": _rows(self.queries.drop("example_command")),
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


def no_plan(command: str | None) -> str:
    """The plan of an operation whose log line names none, in words."""
    if command is None or command in PLANNED:
        return "not logged"
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


def plan_text(row: dict) -> str:
    """The plans a shape ran with (COLLSCAN marked apart; `no_plan` when the log names none and it scanned nothing),
    and its failed runs as the culprit table says them."""
    plans = ", ".join(p for p in (row["plan_kinds"] or "").split(",") if p and p != "COLLSCAN")
    if row["failed"]:
        return with_failures(plans, row["failed"], row["count"], row["errors"])
    return plans if plans or (row["collscan_share"] or 0) > 0 else no_plan(row["command"])


def queries(logs: LogFrames) -> pl.DataFrame:
    """Every query shape of the log: `summarize_queries` (by total time) with QUERY_EXTRAS."""
    table = summarize_queries(logs.slow_ops, "total", extra=QUERY_EXTRAS)
    return table.with_columns(
        keys_examined_per_returned=pl.when(pl.col("nreturned") > 0).then(pl.col("keys_examined") / pl.col("nreturned"))
    )


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
    return Workload(table.head(MAX_SHAPES), table.height, connections(logs.events), messages(logs.events))
