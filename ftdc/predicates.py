"""Time bounds implied by a polars predicate, for skipping chunks.

Only conjunctions of comparisons between `start` and column-free
expressions are understood; anything else yields no bound. Bounds only
narrow what is decoded: the full predicate is still applied to the rows.
"""

from __future__ import annotations

import io
import json
from typing import Any

import polars as pl

Bounds = tuple[int | None, int | None]

_FLIP = {"Gt": "Lt", "GtEq": "LtEq", "Lt": "Gt", "LtEq": "GtEq", "Eq": "Eq"}


def _is_column(node: Any, column: str) -> bool:
    return isinstance(node, dict) and node.get("Column") == column


def _mentions_column(node: Any) -> bool:
    if isinstance(node, dict):
        return "Column" in node or "Columns" in node or any(_mentions_column(v) for v in node.values())
    if isinstance(node, list):
        return any(_mentions_column(v) for v in node)
    return False


def _evaluate_ms(node: Any) -> int | None:
    """Value of a column-free expression as epoch milliseconds (naive times are UTC)."""
    if _mentions_column(node):
        return None
    try:
        expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
        value = pl.select(expr.cast(pl.Datetime("ms")).cast(pl.Int64)).item()
    except Exception:  # an expression polars cannot evaluate alone gives no bound
        return None
    return None if value is None else int(value)


def _tighten(bounds: Bounds, lower: int | None, upper: int | None) -> Bounds:
    lo, hi = bounds
    if lower is not None:
        lo = lower if lo is None else max(lo, lower)
    if upper is not None:
        hi = upper if hi is None else min(hi, upper)
    return lo, hi


def _bounds(node: Any, column: str) -> Bounds:
    if not isinstance(node, dict):
        return None, None
    binary = node.get("BinaryExpr")
    if binary:
        op = binary["op"]
        if op in ("And", "LogicalAnd"):
            left = _bounds(binary["left"], column)
            return _tighten(left, *_bounds(binary["right"], column))
        if _is_column(binary["right"], column):
            op, other = _FLIP.get(op), binary["left"]
        elif _is_column(binary["left"], column):
            other = binary["right"]
        else:
            return None, None
        if op not in _FLIP:
            return None, None
        value = _evaluate_ms(other)
        if value is None:
            return None, None
        lower = value if op in ("Gt", "GtEq", "Eq") else None
        upper = value if op in ("Lt", "LtEq", "Eq") else None
        return lower, upper
    function = node.get("Function")
    if function and "IsBetween" in json.dumps(function.get("function")):
        inputs = function.get("input", [])
        if len(inputs) == 3 and _is_column(inputs[0], column):
            return _evaluate_ms(inputs[1]), _evaluate_ms(inputs[2])
    return None, None


def time_bounds(predicate: pl.Expr | None, column: str) -> Bounds:
    """Inclusive (lower, upper) epoch-ms bounds on `column` that `predicate` implies."""
    if predicate is None:
        return None, None
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # unserialisable predicates (Python UDFs) give no bound
        return None, None
    return _bounds(tree, column)
