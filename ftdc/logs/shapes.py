"""Query shapes: a command's filter, sort and projection with the values replaced.

Two operations that differ only in their literal values get the same shape, as
mtools' `json2pattern` and hatchet group them: every scalar becomes 1, EJSON
wrappers (`{"$oid": ...}`) count as scalars, and lists of scalars (`$in`) collapse
to one 1, so the list length does not split a group. Key order is kept. Sort
directions are values too, so `{a: 1}` and `{a: -1}` share a shape.
"""

from typing import Any

import orjson

# Single-key objects that stand for one value in Extended JSON.
EJSON_WRAPPERS = frozenset(
    {
        "$oid", "$date", "$numberLong", "$numberInt", "$numberDouble",
        "$numberDecimal", "$binary", "$uuid", "$timestamp", "$regularExpression",
        "$regex", "$symbol", "$code", "$minKey", "$maxKey", "$undefined", "$dbPointer",
    }
)

# Where each command keeps its query: the parts that make up its shape.
QUERY_PARTS = {
    "find": ("filter", "sort", "projection"),
    "aggregate": ("pipeline",),
    "count": ("query",),
    "distinct": ("key", "query"),
    "findAndModify": ("query", "sort", "fields"),
    "findandmodify": ("query", "sort", "fields"),
    "mapReduce": ("query", "sort"),
    "mapreduce": ("query", "sort"),
    # Per-statement WRITE lines log the statement itself: {q: ..., u: ...}.
    "q": ("q",),
}

# Batched writes: the shape of the batch is the shape of its first statement.
BATCH_PARTS = {"update": ("updates", "q"), "delete": ("deletes", "q")}


def normalise(value: Any) -> Any:
    """Replace every value in a parsed document by 1, keeping keys and nesting."""
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in EJSON_WRAPPERS:
            return 1
        return {key: normalise(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [normalise(item) for item in value]
        return 1 if all(item == 1 for item in items) else items
    return 1


def query_parts(command: dict, originating: dict | None = None) -> dict | None:
    """The query-defining parts of a command document, or None if it has none."""
    if not command:
        return None
    name = next(iter(command))
    if name == "getMore" and originating:
        return query_parts(originating)
    if name in BATCH_PARTS:
        list_key, part = BATCH_PARTS[name]
        statements = command.get(list_key)
        if isinstance(statements, list) and statements and isinstance(statements[0], dict):
            return {part: statements[0].get(part)} if part in statements[0] else None
        return None
    keys = QUERY_PARTS.get(name)
    if keys is None:
        return None
    parts = {key: command[key] for key in keys if key in command}
    return parts or None


def shape_of(parts: dict | None) -> str | None:
    """The stable JSON text of normalised query parts."""
    if parts is None:
        return None
    shaped = {key: (value if key == "key" else normalise(value)) for key, value in parts.items()}
    return orjson.dumps(shaped).decode()


def shape_of_command_json(command_json: str | None, originating_json: str | None = None) -> str | None:
    """Shape of a command given as JSON text; None when it has no query or is not JSON."""
    if not command_json:
        return None
    try:
        command = orjson.loads(command_json)
        originating = orjson.loads(originating_json) if originating_json else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(command, dict):
        return None
    return shape_of(query_parts(command, originating if isinstance(originating, dict) else None))
