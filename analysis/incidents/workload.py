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
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.findings.culprits import overlapping
from analysis.series import aggregates
from analysis.series.derived import COUNTED, DOCUMENTS, OPCOUNTERS
from analysis.series.operations import WRITES
from analysis.series.windows import between
from analysis.text import clock, pct, span_before

TOP = 3
NAMED = 0.005
# A rate this far from its usual is a change worth naming.
CHANGED = 0.2
# How far back the load's usual reaches.
BEFORE = dt.timedelta(hours=1)
# The documents a write touches (metrics.document): a batch of many is one operation and many documents.
WRITTEN = ("inserted", "updated", "deleted")


@dataclass(frozen=True)
class LoadChange:
    """The write load in the window against its usual, in operations (opLatencies: requests finished) and in documents
    written (metrics.document inserted + updated + deleted): a bulk loader sends as many requests carrying 75 times the
    documents. `usual` values are the medians of the samples of the hour before the window, `since` the earliest of them
    (`Context.since`; None: the capture holds too little before the window for a baseline)."""

    writes: float
    writes_before: float | None
    documents: float | None
    documents_before: float | None
    start: dt.datetime
    since: dt.datetime | None

    def _moved(self, now: float | None, usual: float | None) -> int:
        """+1 risen, -1 fallen, 0 neither (or not known) by CHANGED of the usual."""
        if now is None or not usual:
            return 0
        return 1 if now >= (1 + CHANGED) * usual else -1 if now <= (1 - CHANGED) * usual else 0

    @property
    def direction(self) -> str | None:
        """ "rose" when operations or documents rose, "fell" when what was measured fell and nothing rose, "began" when
        the node wrote nothing before (an idle node's load starting is no change of a workload it had: a setting it met
        still leads), else "unchanged"; None without samples before the window."""
        if self.since is None:
            return None
        if not self.writes_before and not self.documents_before and self.writes >= 1:
            return "began"
        moves = (self._moved(self.writes, self.writes_before), self._moved(self.documents, self.documents_before))
        return "rose" if 1 in moves else "fell" if -1 in moves else "unchanged"

    @property
    def baseline(self) -> str:
        """What the usual rests on: "the hour before 10:00:05", or as much of it as the capture holds, said so."""
        if self.since is None:
            return f"nothing before {clock(self.start)} (the capture holds too little)"
        return span_before(self.since, self.start)

    def told(self) -> str:
        """`554 write operations/s against 999/s in the hour before; 37,743 documents written/s against 500/s`."""
        text = f"{self.writes:,.0f} write operations/s"
        if self.direction == "began":
            return text + f", beginning: the node wrote nothing in {self.baseline}"
        if self.writes_before is not None:
            text += f" against {self.writes_before:,.0f}/s in {self.baseline}"
        if self._moved(self.documents, self.documents_before):
            text += f"; {self.documents:,.0f} documents written/s against {self.documents_before:,.0f}/s"
        return text

    def evidence(self) -> dict[str, Any]:
        return {
            "writes_per_s": round(self.writes),
            "writes_per_s_before": None if self.writes_before is None else round(self.writes_before),
            "documents_written_per_s": None if self.documents is None else round(self.documents),
            "documents_written_per_s_before": None if self.documents_before is None else round(self.documents_before),
            "baseline": f"the median of {self.baseline}",
            "load_change": self.direction,
            "writes_changed": None if self.direction is None else self.direction != "unchanged",
        }


def change(series: pl.DataFrame, start: dt.datetime, end: dt.datetime, since: dt.datetime | None) -> LoadChange | None:
    """The write load of [start, end] against the hour before it, whose earliest sample is `since` (None: no baseline);
    None when the series holds no writes."""
    if "writes_per_s" not in series.columns:
        return None
    during = between(series, start, end)
    before = between(series, since, start, closed="left") if since is not None else series.clear()
    written = [DOCUMENTS[done] for done in WRITTEN if DOCUMENTS[done] in series.columns]

    def rate(rows: pl.DataFrame, usual: bool) -> tuple[float | None, float | None]:
        if not rows.height:
            return None, None
        agg = (lambda e: e.median()) if usual else (lambda e: e.mean())
        values = rows.select(
            agg(pl.col("writes_per_s")).alias("ops"),
            agg(pl.sum_horizontal(written)).alias("docs") if written else pl.lit(None, pl.Float64).alias("docs"),
        ).row(0)
        return (None if values[0] is None else float(values[0])), (None if values[1] is None else float(values[1]))

    writes, documents = rate(during, usual=False)
    if not writes:
        return None
    writes_before, documents_before = rate(before, usual=True)
    return LoadChange(writes, writes_before, documents, documents_before, start, since)


def _busiest(rates: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(((name, rate) for name, rate in rates if rate >= 0.5), key=lambda r: -r[1])


def mix(during: pl.DataFrame) -> list[tuple[str, float]]:
    """Each opcounter's rate over the window (its own unit: `COUNTED`), busiest first (types with none left out)."""
    return _busiest(
        [(op, float(aggregates.mean(during[f"{op}_ops_per_s"]) or 0)) for op in OPCOUNTERS if f"{op}_ops_per_s" in during.columns]
    )


def documents(during: pl.DataFrame) -> list[tuple[str, float]]:
    """Documents per second over the window by what was done to them (metrics.document), busiest first."""
    return _busiest(
        [(done, float(aggregates.mean(during[column]) or 0)) for done, column in DOCUMENTS.items() if column in during.columns]
    )


def carriers(
    slow_ops: pl.DataFrame | None,
    start: dt.datetime,
    end: dt.datetime,
    began: tuple[dt.datetime, dt.datetime] | None = None,
    writes: bool = False,
) -> list[dict[str, Any]]:
    """The namespaces and commands (with their clients' appName) whose slow operations ran longest in the window,
    each with its share of the slow operations' time there; only those that began within `began` when given; with
    `writes`, the writes (a write load's carriers: reads make no dirty data) when the log shows any."""
    if slow_ops is None or slow_ops.is_empty():
        return []
    ops = overlapping(slow_ops, start, end, waits=())
    if began is not None:
        ops = ops.filter(pl.col("started").is_between(*began))
    if writes and not (written := ops.filter(WRITES)).is_empty():
        ops = written
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
    # A carrier too small to round to 1 % of the time is none worth naming (the first is always named).
    return [
        {"ns": r["ns"], "command": r["command"], "runs": r["runs"], "share": round(r["seconds"] / total, 3), "app": r["app"]}
        for n, r in enumerate(top.iter_rows(named=True))
        if not n or r["seconds"] >= NAMED * total
    ]


def carried_told(carried: list[dict[str, Any]]) -> str:
    """`catalog.products find (340 runs, 98 %, app storefront), ...`."""
    return ", ".join(
        f"{c['ns'] or 'an unknown namespace'} {c['command'] or 'operations'} ({c['runs']:,} run{'s' if c['runs'] != 1 else ''}, "
        f"{pct(c['share'])}" + (f", app {c['app']})" if c["app"] else ")")
        for c in carried
    )


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
                f"{c['ns'] or 'an unknown namespace'} {c['command'] or 'operations'} ({pct(c['share'])}"
                + (f", app {c['app']})" if c["app"] else ")")
                for c in carried
            )
        )
    return text
