"""Whose load it is: the operation types FTDC counts, and the namespaces, commands and clients the log shows carrying it.

opcounters count every operation by type (insert, query, update, delete, getmore, command) as it is processed;
the log names the slow ones with their namespace and the client's appName. A workload root cause says both,
and whether the load changed against the hour before (`root_causes`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

import polars as pl

from analysis.findings.culprits import overlapping
from analysis.series.derived import OPCOUNTERS

TOP = 3


def mix(during: pl.DataFrame) -> list[tuple[str, float]]:
    """Operations per second by opcounters type over the window, busiest first (types with none left out)."""
    rates = [(op, float(during[f"{op}_ops_per_s"].mean() or 0)) for op in OPCOUNTERS if f"{op}_ops_per_s" in during.columns]
    return sorted(((op, rate) for op, rate in rates if rate >= 0.5), key=lambda r: -r[1])


def carriers(slow_ops: Optional[pl.DataFrame], start: dt.datetime, end: dt.datetime) -> list[dict[str, Any]]:
    """The namespaces and commands (with their clients' appName) whose slow operations ran longest in the window,
    each with its share of the slow operations' time there."""
    if slow_ops is None or slow_ops.is_empty():
        return []
    ops = overlapping(slow_ops, start, end, waits=())
    total = float(ops["overlap_s"].sum() or 0)
    if not total:
        return []
    apps = pl.col("app_name").drop_nulls().mode().first() if "app_name" in ops.columns else pl.lit(None, pl.String)
    top = (ops.group_by("ns", "command").agg(seconds=pl.col("overlap_s").sum(), runs=pl.len(), app=apps)
           .sort("seconds", "runs", descending=True).head(TOP))
    return [{"ns": r["ns"], "command": r["command"], "runs": r["runs"], "share": round(r["seconds"] / total, 3), "app": r["app"]}
            for r in top.iter_rows(named=True)]


def told(rates: list[tuple[str, float]], carried: list[dict[str, Any]]) -> str:
    """`inserts 400/s, updates 280/s; carried in the log by shop.orders update (62 %, app orders-service), ...`"""
    text = ", ".join(f"{op} {rate:,.0f}/s" for op, rate in rates[:TOP])
    if carried:
        text += ("; " if text else "") + "the log's slow operations mostly " + ", ".join(
            f"{c['ns'] or 'an unknown namespace'} {c['command'] or 'operations'} ({c['share']:.0%}" + (f", app {c['app']})" if c["app"] else ")")
            for c in carried)
    return text
