"""Query shapes: a command's filter, sort and projection with the values replaced.

Two operations that differ only in their literal values get the same shape, as
mtools' `json2pattern` and hatchet group them. The rules live in one place, the
native decoder (native/src/logs/shape.rs), which shapes JSON and legacy text log
lines as it reads them; `shape_of_command` and `shape_of_command_json` give the
shape of one command by the same rules (the tests' reference decoder of text
lines, and anyone who wants the shape of a command of their own).

A sort's direction is not a literal: `{ts: -1}` needs another index order than
`{ts: 1}` on a compound index and reads as another query to whoever tunes it. The
native decoder writes every value as 1, directions too, so a descending key is put
back here (`with_sort_directions`), for the shapes of both kinds of log.
"""

import re

import orjson
import polars as pl

from .. import _native

# A sort document with a descending key, as mongod writes it in a JSON log line (or as a legacy line's
# shell text becomes JSON, its numbers kept as text): the only commands whose shape needs its directions
# back (most have none, and keep the native shape).
_DESCENDING = r'"\$?sort":\s*\{[^{}]*:\s*"?-'


def shape_of_command_json(command_json: str | None, originating_json: str | None = None) -> str | None:
    """Shape of a command given as JSON text (and of the command a getMore
    continues); None when it has no query or is not JSON."""
    return restore_sort(_native.query_shape(command_json, originating_json), command_json, originating_json)


def shape_of_command(command: dict) -> str | None:
    """Shape of a parsed command document (keys, nesting and literal texts)."""
    text = orjson.dumps(command).decode()
    return restore_sort(_native.query_shape(text), text)


def _direction(value) -> int | None:
    """-1 for a descending key, 1 for an ascending one (a legacy line's numbers are text: "-1.0"); None for anything
    else (`{$meta: ...}`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return -1 if number < 0 else 1


def _sorted_like(shape_sort, sort):
    """The shape's sort document with each key's direction from the command's own sort."""
    if not isinstance(shape_sort, dict) or not isinstance(sort, dict):
        return shape_sort
    return {k: (d if (d := _direction(sort.get(k))) is not None else v) for k, v in shape_sort.items()}


def _restored(shape: dict, command: dict) -> dict:
    if "sort" in shape:
        shape["sort"] = _sorted_like(shape["sort"], command.get("sort"))
    pipeline = command.get("pipeline")
    if isinstance(shape.get("pipeline"), list) and isinstance(pipeline, list):
        for stage, given in zip(shape["pipeline"], pipeline):
            if isinstance(stage, dict) and isinstance(given, dict) and "$sort" in stage:
                stage["$sort"] = _sorted_like(stage["$sort"], given.get("$sort"))
    return shape


def restore_sort(shape: str | None, command_json: str | None, originating_json: str | None = None) -> str | None:
    """`shape` with its sort keys' directions as the command (or, for a getMore, the command it continues) gave them;
    unchanged when the command cannot be read (a truncated line) or has no descending key."""
    if (
        shape is None
        or not command_json
        or re.search(_DESCENDING, command_json) is None
        and not (originating_json and re.search(_DESCENDING, originating_json))
    ):
        return shape
    try:
        command = orjson.loads(command_json)
        if isinstance(command, dict) and next(iter(command), None) == "getMore" and originating_json:
            command = orjson.loads(originating_json)
        parsed = orjson.loads(shape)
    except orjson.JSONDecodeError:
        return shape
    if not isinstance(command, dict) or not isinstance(parsed, dict):
        return shape
    return orjson.dumps(_restored(parsed, command)).decode()


def with_sort_directions(slow_ops: pl.DataFrame) -> pl.DataFrame:
    """Slow operations whose shapes keep their sorts' descending keys: only the rows whose command has one are
    read again (in Python), the rest keep the native decoder's shape (the frame's other columns are not copied)."""
    descending = pl.col("command_json").str.contains(_DESCENDING) | pl.col("originating_command_json").str.contains(_DESCENDING)
    rows = slow_ops.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "shape", "command_json", "originating_command_json"
    ).filter(descending.fill_null(False) & pl.col("shape").is_not_null())
    if rows.is_empty():
        return slow_ops
    shapes = [
        restore_sort(shape, command, origin)
        for shape, command, origin in rows.select("shape", "command_json", "originating_command_json").iter_rows()
    ]
    restored = pl.int_range(pl.len(), dtype=pl.UInt32).replace_strict(
        rows["row"], pl.Series(shapes, dtype=pl.String), default=pl.col("shape"), return_dtype=pl.String
    )
    return slow_ops.with_columns(shape=restored)


# What a driver or the server adds to every command: sessions, transactions, routing, concerns. None of it is what the
# command asks for, so none of it is in its shape.
_ENVELOPE = frozenset(
    {
        "lsid",
        "$db",
        "$clusterTime",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "stmtId",
        "$readPreference",
        "readConcern",
        "writeConcern",
        "maxTimeMS",
        "comment",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "$audit",
        "$client",
        "$configTime",
        "$topologyTime",
        "shardVersion",
        "databaseVersion",
        "mayBypassWriteBlocking",
        "$configServerState",
    }
)
# Elements of a list kept in a shape: a command's list says its kind of elements, not each.
_LIST_KEPT = 3


def _values_replaced(value):
    """`value` with every literal replaced by 1, as a query shape writes its values."""
    if isinstance(value, dict):
        return {k: _values_replaced(v) for k, v in value.items()}
    if isinstance(value, list):
        kept: list = []
        for element in map(_values_replaced, value):
            if element not in kept and len(kept) < _LIST_KEPT:
                kept.append(element)
        return kept
    return 1


def shape_of_other_command(command_json: str | None) -> str | None:
    """The shape of a command that has no query shape (collStats, an insert; an index build has one, the indexes it
    builds): what it asks for, with its arguments' values replaced by 1 and what every command carries (session,
    concerns) left out. None when the text is not a JSON document (a truncated line)."""
    if not command_json:
        return None
    try:
        command = orjson.loads(command_json)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(command, dict) or not command:
        return None
    shape = {k: _values_replaced(v) for k, v in command.items() if k not in _ENVELOPE}
    return orjson.dumps(shape).decode()
