"""Whose load it is: the operations and documents FTDC counts, and the namespaces, commands and clients the log
shows carrying it.

opcounters count operations by type as they are processed, each in its own unit (`derived.COUNTED`: an insert
batch counts its documents, a getMore its batch); metrics.document counts the documents returned, inserted,
updated and deleted. The log names the slow operations with their namespace and the client's appName. A
workload root cause says all three, each in its unit, and whether the load changed against the hour before
(`root_causes`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from analysis.findings.culprits import overlapping
from analysis.series.derived import COUNTED, DOCUMENTS, OPCOUNTERS

TOP = 3


def _busiest(rates: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(((name, rate) for name, rate in rates if rate >= 0.5), key=lambda r: -r[1])


def mix(during: pl.DataFrame) -> list[tuple[str, float]]:
    """Each opcounter's rate over the window (its own unit: `COUNTED`), busiest first (types with none left out)."""
    return _busiest(
        [(op, float(during[f"{op}_ops_per_s"].mean() or 0)) for op in OPCOUNTERS if f"{op}_ops_per_s" in during.columns]
    )


def documents(during: pl.DataFrame) -> list[tuple[str, float]]:
    """Documents per second over the window by what was done to them (metrics.document), busiest first."""
    return _busiest([(done, float(during[column].mean() or 0)) for done, column in DOCUMENTS.items() if column in during.columns])


def carriers(slow_ops: pl.DataFrame | None, start: dt.datetime, end: dt.datetime) -> list[dict[str, Any]]:
    """The namespaces and commands (with their clients' appName) whose slow operations ran longest in the window,
    each with its share of the slow operations' time there."""
    if slow_ops is None or slow_ops.is_empty():
        return []
    ops = overlapping(slow_ops, start, end, waits=())
    total = float(ops["overlap_s"].sum() or 0)
    if not total:
        return []
    apps = pl.col("app_name").drop_nulls().mode().first() if "app_name" in ops.columns else pl.lit(None, pl.String)
    top = (
        ops.group_by("ns", "command")
        .agg(seconds=pl.col("overlap_s").sum(), runs=pl.len(), app=apps)
        .sort("seconds", "runs", descending=True)
        .head(TOP)
    )
    return [
        {"ns": r["ns"], "command": r["command"], "runs": r["runs"], "share": round(r["seconds"] / total, 3), "app": r["app"]}
        for r in top.iter_rows(named=True)
    ]


def told(rates: list[tuple[str, float]], docs: list[tuple[str, float]], carried: list[dict[str, Any]]) -> str:
    """`2,000 queries/s, 300 commands/s, 279 update statements/s; documents 4,400 returned/s, 400 inserted/s; the log's
    slow operations mostly shop.orders update (62 %, app orders-service), ...`: operations in their counters' units
    (documents inserted among documents), then documents."""
    operations = [(op, rate) for op, rate in rates if not (op == "insert" and docs)]
    text = ", ".join(f"{rate:,.0f} {COUNTED[op]}/s" for op, rate in operations[:TOP])
    if docs:
        text += ("; " if text else "") + "documents " + ", ".join(f"{rate:,.0f} {done}/s" for done, rate in docs[:TOP])
    if carried:
        text += (
            ("; " if text else "")
            + "the log's slow operations mostly "
            + ", ".join(
                f"{c['ns'] or 'an unknown namespace'} {c['command'] or 'operations'} ({c['share']:.0%}"
                + (f", app {c['app']})" if c["app"] else ")")
                for c in carried
            )
        )
    return text
