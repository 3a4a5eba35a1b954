"""`summarize_queries`: slow operations grouped by query shape and namespace.

What `mloginfo --queries` prints, plus percentiles and plan columns. Per-statement
WRITE lines are left out: their batch's COMMAND line already counts the time
(docs/log-format.md §4). A truncated command's filter cannot be trusted, so such
rows group by the server's hash instead (queryShapeHash, else queryHash).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from ..frames import Dtype
from .narrow import Longest, Narrowing

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)

SORT_KEYS = {"total": "total_ms", "p95": "p95_ms", "count": "count"}

SUMMARY: dict[str, Dtype] = {
    "ns": pl.String,
    "command": pl.String,
    "shape": pl.String,
    "query_hash": pl.String,
    "count": pl.UInt32,
    "total_ms": pl.Int64,
    "mean_ms": pl.Float64,
    "p50_ms": pl.Float64,
    "p95_ms": pl.Float64,
    "p99_ms": pl.Float64,
    "max_ms": pl.Int64,
    "docs_examined_per_returned": pl.Float64,
    "keys_examined": pl.Int64,
    "docs_examined": pl.Int64,
    "nreturned": pl.Int64,
    "collscan_share": pl.Float64,
    "plan_kinds": pl.String,
    "first_seen": pl.Datetime("ms", "UTC"),
    "last_seen": pl.Datetime("ms", "UTC"),
    "example_command": pl.String,
}


# The slow-op columns a summary reads.
READ = [
    "ns",
    "command",
    "shape",
    "query_shape_hash",
    "query_hash",
    "truncated",
    "duration_ms",
    "keys_examined",
    "docs_examined",
    "nreturned",
    "plan_kind",
    "started",
    "ts",
    "command_json",
    "write_statement",
    "op_type",
]


def _text(name: str) -> pl.Expr:
    """The column `name` as text, whether the frames hold it as text or as categories (an analysis' frames)."""
    return pl.col(name).cast(pl.String)


def _server_hash() -> pl.Expr:
    """The server's hash of a run's query: 8.0's queryShapeHash, else the planner's queryHash."""
    return pl.coalesce(_text("query_shape_hash"), _text("query_hash"))


def distinct_text(name: str, separator: str) -> pl.Expr:
    """In a group, the column `name`'s distinct values as text, in order, joined by `separator` (each value cast once,
    not each row's)."""
    return pl.col(name).drop_nulls().unique().cast(pl.String).sort().str.join(separator)


def _group_key() -> pl.Expr:
    hashed = _server_hash()
    return (
        pl.when(pl.col("truncated").is_not_null() & hashed.is_not_null())
        .then(pl.lit("hash:") + hashed)
        .otherwise(_text("shape"))
        .alias("group_key")
    )


def _is_query(index_builds: bool = False) -> pl.Expr:
    once = ~pl.col("write_statement")
    return once if index_builds else once & (pl.col("op_type").fill_null("") != "none")


def queries(slow_ops: Frame, *, index_builds: bool = False) -> Frame:
    """The slow operations that are queries, each counted once: per-statement WRITE lines
    that repeat their command's line and, unless `index_builds`, index builds (STORAGE lines
    of type "none") left out. A filter copies every column it keeps: give it the columns you
    need, or a LazyFrame."""
    return slow_ops.filter(_is_query(index_builds))


def narrowing(*columns: str) -> Narrowing:
    """What a summary needs of a log (`read_logs(narrowing=...)`), and `columns` beside:
    the columns it reads, and only the commands that may be a group's example (its longest run)."""
    key = (pl.col("node"), pl.col("ns"), pl.col("command"), _group_key())
    return Narrowing(tuple(dict.fromkeys([*READ, "node", *columns])), Longest(key, _is_query()))


@dataclass(frozen=True)
class Gathered:
    """An aggregation of each group's rows that no reduction makes (distinct values, a list, the longest runs), taken
    beside the summary's grouping from the few rows it needs, and joined to it: made in the grouping, it gathers every
    group's rows by several keys, 70 - 90 MB of a 1 GB log's 1.2 M runs, and holds what it reads of them beside.
    `frame(rows, keys, name)`: the summary's rows (its `row`, the log's order, among them) -> the keys and `name`."""

    columns: tuple[str, ...]
    frame: Callable[[pl.LazyFrame, list[str], str], pl.LazyFrame]


def distinct(column: str, separator: str) -> Gathered:
    """A group's distinct values of `column` as text, in order, joined by `separator` (`distinct_text`), from each
    value the group holds taken once."""
    return Gathered(
        (column,),
        lambda rows, by, name: rows.group_by(*by, column).agg().group_by(*by).agg(distinct_text(column, separator).alias(name)),
    )


def tally(column: str, count: str) -> Gathered:
    """A group's values of `column` as text, nulls left out, each with how many of its rows hold it (`count`): a list
    of structs, in no order."""
    held = pl.col(column).is_not_null()
    return Gathered(
        (column,),
        lambda rows, by, name: (
            rows.group_by(*by, column)
            .agg(pl.len().alias(count))
            .group_by(*by)
            .agg(pl.struct(pl.col(column).cast(pl.String), count).filter(held).alias(name))
        ),
    )


def longest(runs: int, **fields: pl.Expr) -> Gathered:
    """A group's `runs` longest runs (of runs equally long, the first logged), each a struct of `fields`, longest
    first; a run that logged no duration is none of them. Read from the rows at or above each group's `runs`-th
    longest duration, found from its durations counted."""
    d = pl.col("duration_ms")
    columns = {"duration_ms", "row", *(c for e in fields.values() for c in e.meta.root_names())}

    def frame(rows: pl.LazyFrame, by: list[str], name: str) -> pl.LazyFrame:
        # A group's durations ascending: the runs longer than each are those counted after it.
        longer = pl.col("rows").sum() - pl.col("rows").cum_sum()
        floors = _counted(rows, by, "duration_ms").filter(d.is_not_null()).group_by(*by).agg(floor=d.filter(longer < runs).min())
        kept = rows.join(floors, on=by, how="inner", nulls_equal=True).filter(d >= pl.col("floor"))
        return kept.group_by(*by).agg(
            pl.struct(*(e.alias(k) for k, e in fields.items()))
            .sort_by(d, pl.col("row"), descending=[True, False])
            .head(runs)
            .alias(name)
        )

    return Gathered(tuple(sorted(columns)), frame)


def summarize_queries(
    slow_ops: pl.DataFrame,
    sort: str = "total",
    *,
    by_node: bool = False,
    extra: dict[str, pl.Expr | Gathered] | None = None,
    index_builds: bool = False,
) -> pl.DataFrame:
    """One row per (namespace, command, shape), sorted by `sort` (total, p95, count);
    with `by_node`, per node too (a `node` column first: a replica set's logs).
    Only `queries(slow_ops, index_builds=index_builds)` count (index builds with
    `index_builds`: a report's whole-period table); the rest stays in `slow_ops`. `extra` adds
    aggregations of one group each, as columns after the summary's own (the report's
    slow-operation table: clients, 8.0 working and queued time): an expression that reduces the
    group's rows is made in the summary's grouping, a `Gathered` beside it. A group none of whose
    rows a `Gathered` list counts gets an empty list."""
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}")
    extra = extra or {}
    # Only the columns the summary reads: grouping the wide frame by several keys
    # copies every column of it into one chunk (1.4 GB on 2.5 M slow queries).
    wanted = READ + ["node"] * by_node
    reduced = {name: e for name, e in extra.items() if isinstance(e, pl.Expr)}
    gathered = {name: e for name, e in extra.items() if isinstance(e, Gathered)}
    read = {c for e in reduced.values() for c in e.meta.root_names()} | {c for g in gathered.values() for c in g.columns}
    needed = sorted(read - {"row"} - set(wanted))
    # Text keys grouped as categories (a number a row): grouping by the text encodes each
    # row's keys anew (250 MB on a 1 GB log). The rows that are not queries are grouped
    # apart and their groups dropped, rather than filtered out first (a copy of every column).
    keys = ["node"] * by_node + ["ns", "command", "group_key"]
    ops = slow_ops.lazy().select(wanted + needed).with_row_index("row").with_columns(_group_key(), query=_is_query(index_builds))
    ops = ops.with_columns(pl.col(keys).cast(pl.Categorical))
    duration = pl.col("duration_ms")
    # Each aggregation here reduces a group's rows as they come; the percentiles and the plans, which would gather
    # every group's rows (180 MB of a 1 GB log's 1.2 M runs), come from counts of their values beside it (`Gathered`).
    by = [*keys, "query"]
    summary = ops.group_by(*by).agg(
        shape=pl.col("shape").drop_nulls().first(),
        query_hash=_server_hash().drop_nulls().first(),
        count=pl.len(),
        total_ms=duration.sum(),
        mean_ms=duration.mean(),
        max_ms=duration.max(),
        keys_examined=pl.col("keys_examined").sum(),
        docs_examined=pl.col("docs_examined").sum(),
        nreturned=pl.col("nreturned").sum(),
        collscan_share=(pl.col("plan_kind") == "COLLSCAN").fill_null(False).mean(),
        first_seen=pl.col("started").min(),
        last_seen=pl.col("ts").max(),
        # The longest run's command; of runs equally long, the first logged (the streaming engine meets a group's
        # rows in no fixed order).
        example_command=pl.col("command_json")
        .sort_by(duration, pl.col("row"), descending=[True, False], nulls_last=True)
        .first(),
        # The group's first line in the log: equal totals in the order they were first logged, as `slowest_runs`
        # ranks them (a grouping's order is its threads' and would change from run to run).
        first_row=pl.col("row").min(),
        **reduced,
    )
    summary = summary.join(quantiles(ops, by, "duration_ms", PERCENTILES), on=by, how="left", nulls_equal=True)
    for name, g in {"plan_kinds": distinct("plan_kind", ","), **gathered}.items():
        part = g.frame(ops, by, name)
        summary = summary.join(part, on=by, how="left", nulls_equal=True)
        if isinstance(dtype := part.collect_schema()[name], pl.List):
            summary = summary.with_columns(pl.col(name).fill_null(pl.lit([], dtype)))
    summary = summary.filter(pl.col("query")).with_columns(
        docs_examined_per_returned=pl.when(pl.col("nreturned") > 0).then(pl.col("docs_examined") / pl.col("nreturned")),
        plan_kinds=pl.when(pl.col("plan_kinds") != "").then(pl.col("plan_kinds")),
    )
    schema = pl.Schema({"node": pl.String, **SUMMARY} if by_node else SUMMARY)
    return (
        summary.sort([SORT_KEYS[sort], "total_ms", "first_row"], descending=[True, True, False])
        .select(*schema, *extra)
        .cast(schema)
        .collect(engine="streaming", optimizations=SEPARATE_SCANS)
    )


# The summary's groupings each read the slow operations where they lie: polars would otherwise hold what they share
# (the selected columns, the group keys) materialised for all of them, 90 MB of a 1 GB log's.
SEPARATE_SCANS = pl.QueryOptFlags(comm_subplan_elim=False)

# The percentiles of a group's durations a summary gives.
PERCENTILES = {"p50_ms": 0.50, "p95_ms": 0.95, "p99_ms": 0.99}


def quantiles(rows: pl.LazyFrame, by: list[str], value: str, named: dict[str, float]) -> pl.LazyFrame:
    """Per group of `rows` by `by`: each of `named`'s quantiles (name -> q) of its integer column `value`, as polars'
    `quantile(q, "linear")` gives it to the bit, from how many rows hold each value (a reduction, not a gather of each
    group's rows). As polars takes it (`quantile_idx`, `linear_interpol`), of a group's n values and z nulls sorted
    nulls first: i = (n - 1) q + z, its value at floor(i) where i is whole or the two values about it are equal, else
    (i - floor(i)) (upper - lower) + lower."""
    v = pl.col(value)
    counts = _counted(rows, by, value)
    # The rank each value's rows end at among the group's values is a running total.
    end = pl.col("rows").cum_sum()
    nulls = pl.col("rows").filter(v.is_null()).sum()
    exprs = {}
    for name, q in named.items():
        at = (pl.col("rows").filter(v.is_not_null()).sum().cast(pl.Float64) - 1.0) * q + nulls
        low, high = at.floor(), at.ceil()
        lower, upper = (v.filter(v.is_not_null() & (end > rank - nulls)).first().cast(pl.Float64) for rank in (low, low + 1))
        exprs[name] = pl.when((low == high) | (lower == upper)).then(lower).otherwise((at - low) * (upper - lower) + lower)
    return counts.group_by(*by).agg(**exprs)


def _counted(rows: pl.LazyFrame, by: list[str], value: str) -> pl.LazyFrame:
    """How many of each group's `rows` hold each value of `value` (`rows`), in order of group and value, nulls last:
    a reduction of the rows as they come, whose groups (rows of a group keep their order) hold their values
    ascending."""
    return rows.group_by(*by, value).agg(rows=pl.len()).sort(*by, value, nulls_last=True)


def slowest_runs(slow_ops: pl.DataFrame, runs: int, *, index_builds: bool = False, groups: int | None = None) -> pl.Series:
    """Which rows of `slow_ops` are among the `runs` longest of their group, each node's groups as
    `summarize_queries` makes them (ties broken by order in the log): the lines a report quotes. With
    `groups`, only in each node's `groups` groups of most total time (a table's rows): a log of a
    million shapes asks for no more lines than the table shows."""
    keys = ["node", "ns", "command", "group_key"]
    ranked = slow_ops.select(*keys[:3], _group_key(), "duration_ms", query=_is_query(index_builds).fill_null(False)).with_columns(
        pl.col(keys).cast(pl.Categorical)
    )
    # Longest first; a null duration last. Ordinal ranks over the whole frame order ties by position in the log.
    order = pl.col("duration_ms").fill_null(-1).rank("ordinal", descending=True)
    place = order.rank("ordinal").over(*keys, "query")
    chosen = pl.col("query") & pl.col("duration_ms").is_not_null() & (place <= runs)
    if groups is not None:
        # Each group's rank among its node's by total time, ties by the group's first row: one rank a group.
        totals = ranked.with_row_index("row").group_by(*keys, "query").agg(pl.col("duration_ms").sum(), pl.col("row").min())
        totals = totals.filter("query").with_columns(
            top=pl.struct((-pl.col("duration_ms")).fill_null(0), "row").rank("ordinal").over("node") <= groups
        )
        kept = ranked.join(totals.select(*keys, "top"), on=keys, how="left", nulls_equal=True, maintain_order="left")
        return kept.select(chosen & pl.col("top").fill_null(False)).to_series()
    return ranked.select(chosen).to_series()
