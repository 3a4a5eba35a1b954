"""Vectorised finishing of decoded blocks: timestamps, start times, names, shapes."""

import polars as pl

from .schema import EVENTS, SLOW_OPS, UTC_MS
from .shapes import shape_of_command_json

# `%#z` accepts `Z`, `+00:00` and `-0400` alike: every form mongod has written.
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S%.f%#z"
# Columns that need every file (node, client) are added by the reader; the
# start-up line's `host` is what it derives `node` from.
SLOW_OPS_BEFORE_JOINS = [c for c in SLOW_OPS if c not in ("node", "client")]
EVENTS_BEFORE_JOINS = [c for c in EVENTS if c != "node"] + ["host"]
_SHAPE_CACHE_LIMIT = 200_000
_shape_cache: dict[str, str | None] = {}


def parse_ts(column: str = "t") -> pl.Expr:
    return pl.col(column).str.to_datetime(_TS_FORMAT, time_unit="ms", time_zone="UTC", strict=False).cast(UTC_MS)


def _started() -> pl.Expr:
    return pl.col("ts") - pl.duration(milliseconds=pl.col("duration_ms").fill_null(0))


def shapes_for(commands: pl.Series, originating: pl.Series) -> pl.Series:
    """Shape of each command, computed once per distinct command text.

    Commands repeat (the same application query), so parsing the distinct texts,
    with a cache shared by the blocks a process decodes, keeps this step small.
    """
    keys = pl.select(
        key=pl.concat_str([commands.fill_null(""), originating.fill_null("")], separator="\0")
    )["key"]
    distinct = keys.unique().to_list()
    if len(_shape_cache) > _SHAPE_CACHE_LIMIT:
        _shape_cache.clear()
    for key in distinct:
        if key not in _shape_cache:
            command, _, origin = key.partition("\0")
            _shape_cache[key] = shape_of_command_json(command, origin or None)
    mapping = pl.DataFrame(
        {"key": distinct, "shape": [_shape_cache[k] for k in distinct]},
        schema={"key": pl.String, "shape": pl.String},
    )
    return keys.to_frame().join(mapping, on="key", how="left", maintain_order="left")["shape"]


def finish_slow_ops(raw: pl.DataFrame, file: str) -> pl.DataFrame:
    """Derived columns of slow ops; `node` and `client` are added across files later."""
    shapes = shapes_for(raw["command_json"], raw["originating_command_json"])
    is_statement = pl.col("component") == "WRITE"
    namespace = pl.col("ns").str.splitn(".", 2)
    return raw.with_columns(
        ts=parse_ts(),
        write_statement=is_statement.fill_null(False),
        command=pl.coalesce(
            pl.col("command_name"),
            pl.when(is_statement).then(pl.col("op_type")),
            pl.col("command_json").str.extract(r'^\{\s*"([^"]+)"'),
        ),
        db=namespace.struct.field("field_0"),
        coll=namespace.struct.field("field_1"),
        plan_kind=pl.col("plan_summary").str.extract(r"^([A-Z_]+)"),
        shape=pl.coalesce(pl.col("legacy_shape"), shapes),
        file=pl.lit(file, pl.String),
    ).with_columns(started=_started()).select(SLOW_OPS_BEFORE_JOINS)


def finish_events(raw: pl.DataFrame, file: str) -> pl.DataFrame:
    return (
        raw.with_columns(ts=parse_ts(), file=pl.lit(file, pl.String))
        .with_columns(started=_started())
        .select(EVENTS_BEFORE_JOINS)
    )


def raw_frame(columns: dict, schema: dict) -> pl.DataFrame:
    """A frame from column lists; scalar None stands for an all-null column."""
    height = len(columns["line"])
    return pl.DataFrame(
        {name: (columns[name] if columns.get(name) is not None else [None] * height) for name in schema},
        schema=schema,
        strict=False,
    )

