"""An index for a slow query, from its filter and sort: equality, sort, range (ESR).

Equality fields first (an exact value, `$eq`, `$in`), in filter order; then
the sort keys in their order and direction; then range fields (`$gt`, `$lt`,
`$ne`, `$regex`, ...). That order lets one index serve the match, return
documents already sorted, and bound the range scan (MongoDB's "ESR rule").
"""

from __future__ import annotations

import json
import re
from typing import Any

EQUALITY_OPERATORS = {"$eq", "$in"}
# Extended JSON writes some values as one-key documents ({"$oid": ...}): a value, not an operator. A regular
# expression ({"$regularExpression": ...}) is one too, but not an equality to an index: like $regex, a range, so it is
# not here (the query shapes' list in native/src/logs/shape.rs holds it: a shape replaces every value).
EJSON_VALUES = {
    "$oid",
    "$date",
    "$numberLong",
    "$numberInt",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$timestamp",
    "$minKey",
    "$maxKey",
    "$symbol",
    "$code",
}
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def query_parts(command: dict[str, Any]) -> tuple[dict | None, dict | None]:
    """(filter, sort) of a logged command: find, aggregate, count, distinct,
    findAndModify, update/delete (the command or one logged statement)."""
    if "filter" in command:  # find
        return _dict(command.get("filter")), _dict(command.get("sort"))
    if isinstance(command.get("pipeline"), list):  # aggregate: leading $match stages, then a $sort
        match: dict = {}
        sort = None
        for stage in command["pipeline"]:
            if not isinstance(stage, dict) or len(stage) != 1:
                break
            ((name, body),) = stage.items()
            if name == "$match" and isinstance(body, dict) and sort is None:
                match = {**match, **body}
            elif name == "$sort" and isinstance(body, dict):
                sort = body
                break
            else:
                break
        return match, sort
    for key in ("query", "q"):  # count/distinct/findAndModify; a WRITE statement
        if key in command:
            return _dict(command.get(key)), _dict(command.get("sort"))
    for key in ("updates", "deletes"):  # an update/delete command: its first statement
        statements = command.get(key)
        if isinstance(statements, list) and statements and isinstance(statements[0], dict):
            return _dict(statements[0].get("q")), None
    return None, None


def _dict(value: Any) -> dict | None:
    return value if isinstance(value, dict) else None


def _predicates(filter_doc: dict) -> list[tuple[str, str]]:
    """(field, "E" or "R") for each indexable top-level condition, `$and` flattened."""
    out = []
    for field, value in filter_doc.items():
        if field == "$and" and isinstance(value, list):
            for clause in value:
                if isinstance(clause, dict):
                    out += _predicates(clause)
        elif field.startswith("$"):
            continue  # $or, $expr, $text, ...: not served by one compound index
        elif isinstance(value, dict) and len(value) == 1 and next(iter(value)) in EJSON_VALUES:
            out.append((field, "E"))
        elif isinstance(value, dict) and value and all(k.startswith("$") for k in value):
            out.append((field, "E" if set(value) <= EQUALITY_OPERATORS else "R"))
        else:
            out.append((field, "E"))
    return out


def esr_keys(filter_doc: dict | None, sort: dict | None) -> list[tuple[str, int]]:
    """The index key pattern, as (field, direction) pairs."""
    predicates = _predicates(filter_doc or {})
    keys: list[tuple[str, int]] = []
    seen = set()

    def add(field: str, direction: int) -> None:
        if field not in seen:
            seen.add(field)
            keys.append((field, direction))

    for field, kind in predicates:
        if kind == "E":
            add(field, 1)
    for field, direction in (sort or {}).items():
        if not field.startswith("$"):
            add(field, -1 if direction in (-1, "-1") else 1)
    for field, kind in predicates:
        if kind == "R":
            add(field, 1)
    return keys


def _key(field: str) -> str:
    return field if _IDENTIFIER.match(field) else json.dumps(field)


def create_index(ns: str, keys: list[tuple[str, int]]) -> str:
    """The mongosh command creating the index."""
    db, _, coll = ns.partition(".")
    pattern = ", ".join(f"{_key(f)}: {d}" for f, d in keys)
    return f"db.getSiblingDB({json.dumps(db)}).getCollection({json.dumps(coll)}).createIndex({{ {pattern} }})"


def recommend_index(ns: str | None, command_json: str | None) -> str | None:
    """A createIndex command for the query logged as `command_json`, or None when there is no filter or sort to serve."""
    if not ns or not command_json or "." not in ns:
        return None
    try:
        command = json.loads(command_json)
    except ValueError:
        return None
    if not isinstance(command, dict):
        return None
    keys = esr_keys(*query_parts(command))
    return create_index(ns, keys) if keys else None
