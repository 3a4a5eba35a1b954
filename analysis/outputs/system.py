"""The system panels of a node's report: what a metric viewer opens first (CPU, memory, disks,
network, connections, operations and documents per second, replication lag, the oplog window),
drawn only from the series the node recorded, each series summarised (min, median, p95, max) for
the Markdown and JSON reports. Each series is one derived column (`analysis.series.derived`), its meaning
naming the FTDC metric it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import polars as pl

from analysis.members import member_addresses, self_members
from analysis.observe import Analysis, Evidence
from analysis.series.derived import COUNTED, DOCUMENTS, OPCOUNTERS, in_family


def matching(have: list[str], wanted: Sequence[str]) -> list[str]:
    """The wanted columns present; a name ending in "." stands for every device's or member's column."""
    return [c for w in wanted for c in have if in_family(c, w)]


MEMBER_COLUMNS = ("member_lag_s.", "member_state.")


def series_label(column: str, members: dict[str, str]) -> str:
    """A series' legend: a replica-set member's column by the member's address when known."""
    prefix = next((p for p in MEMBER_COLUMNS if column.startswith(p)), None)
    if prefix is None:
        return column.replace("_", " ")
    member = column.removeprefix(prefix)
    return members.get(member, f"member {member}")


def member_names(analyses: Sequence[Analysis], seen: Analysis) -> dict[str, str]:
    """Member index (as `seen` numbers its replica set) -> the address of the node that is that member."""
    addresses = member_addresses(analyses, [self_members(a) for a in analyses])
    return {m: address for (replica_set, m), address in addresses.items() if replica_set == seen.result.node.replica_set}


# Panels, each (title, its columns; a name ending in "." every device's or member's column).
# Panels a Windows node records in Windows' own layout, which this version does not read.
WINDOWS_UNREAD = ("CPU, % of all cores", "runnable threads per core")
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "CPU, % of all cores",
        ("cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct", "cpu_busy_pct", "mongod_cpu_pct"),
    ),
    ("runnable threads per core", ("runnable_per_core",)),
    ("memory, MB (mongod resident, host swap used)", ("resident_mb", "swap_used_mb")),
    ("page faults per second", ("page_faults_per_s",)),
    ("disk busy, %", ("disk_util_pct.",)),
    ("disk await, ms per request", ("disk_await_ms.",)),
    ("disk requests per second (IOPS)", ("disk_iops.",)),
    ("disk throughput, MB/s", ("disk_mb_per_s.",)),
    ("network, MB/s", ("network_in_mb_per_s", "network_out_mb_per_s")),
    ("connections open", ("connections",)),
    ("connections opened per second", ("connections_created_per_s",)),
    ("operations per second (opcounters)", tuple(f"{op}_ops_per_s" for op in OPCOUNTERS)),
    ("documents per second", tuple(DOCUMENTS.values())),
    ("replication lag behind the primary, s", ("member_lag_s.",)),
    ("oplog window, hours", ("oplog_window_h",)),
)
# Short legends: the column's distinguishing part.
_LABELS = {
    "cpu_user_pct": "user",
    "cpu_system_pct": "system",
    "cpu_iowait_pct": "iowait",
    "cpu_steal_pct": "steal",
    "cpu_busy_pct": "busy (not idle or iowait)",
    "mongod_cpu_pct": "mongod",
    "runnable_per_core": "runnable per core",
    "resident_mb": "resident",
    "swap_used_mb": "swap used",
    "network_in_mb_per_s": "in",
    "network_out_mb_per_s": "out",
    **{f"{op}_ops_per_s": COUNTED[op] for op in OPCOUNTERS},
    **{column: done for done, column in DOCUMENTS.items()},
}


def label(column: str, members: dict[str, str]) -> str:
    """A series' legend: its short name, a device's name, a member's address."""
    if column in _LABELS:
        return _LABELS[column]
    return column.rpartition(".")[2] if column.startswith("disk_") else series_label(column, members)


@dataclass(frozen=True)
class SystemSeries:
    panel: str
    column: str
    label: str
    unit: str
    meaning: str
    min: float | None
    median: float | None
    p95: float | None
    max: float | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class SystemView:
    panels: list[tuple[str, list[str]]]  # (title, columns) the node recorded
    missing: list[str]  # panel titles the node recorded nothing for
    evidence: Evidence = field(repr=False, compare=False)  # whose series `series` summarises
    members: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # member index -> address
    unread: list[str] = field(default_factory=list)  # panel titles recorded in a layout this version does not read

    def label(self, column: str) -> str:
        return label(column, self.members)

    @property
    def missing_said(self) -> str:
        """The panels the node recorded nothing for, as a sentence lists them: each by what it shows, without its unit
        ("memory (mongod resident, host swap used); network; oplog window"), since a unit read in a list is an item."""
        return "; ".join(re.sub(r", [^,()]+?(?= \(|$)", "", title) for title in self.missing)

    @cached_property
    def series(self) -> list[SystemSeries]:
        """Each series' summary over the analysis's span, computed when a format shows it (the HTML report draws
        the panels and shows no summary: a median and a p95 of every series cost a third of its report)."""
        shown = [c for _, found in self.panels for c in found]
        # Each series sorted once: a sorted column's median and quantile are read, not found again.
        ordered = self.evidence.series.select(pl.col(c).cast(pl.Float64).sort() for c in shown)
        stats = (
            ordered.select(
                *(pl.col(c).min().alias(f"{c}\0min") for c in shown),
                *(pl.col(c).median().alias(f"{c}\0median") for c in shown),
                *(pl.col(c).quantile(0.95, "linear").alias(f"{c}\0p95") for c in shown),
                *(pl.col(c).max().alias(f"{c}\0max") for c in shown),
            ).row(0, named=True)
            if shown
            else {}
        )
        series = []
        for title, found in self.panels:
            for c in found:
                unit, meaning = self.evidence.columns.get(c, ("", ""))
                series.append(
                    SystemSeries(
                        title,
                        c,
                        self.label(c),
                        unit,
                        meaning,
                        *(_number(stats[f"{c}\0{k}"]) for k in ("min", "median", "p95", "max")),
                    )
                )
        return series

    def to_dict(self) -> dict[str, Any]:
        return {"series": [s.to_dict() for s in self.series], "not_recorded": self.missing, "not_read": self.unread}


def _number(value: Any) -> float | None:
    return None if value is None else round(float(value), 3)


def view(analysis: Analysis, members: dict[str, str]) -> SystemView:
    """The panels this node recorded; each series' summary over the analysis's span when asked (`SystemView.series`)."""
    columns = analysis.evidence.series.columns
    panels = [(title, found) for title, wanted in PANELS if (found := matching(columns, wanted))]
    missing = [title for title, wanted in PANELS if not matching(columns, wanted)]
    # Windows records its CPU as Processor performance counters (ftdc_system_stats_windows.cpp), a layout not
    # read here: saying the node "did not record" them would be false (its disks' counters are read).
    windows = "windows" in (analysis.result.overview.node.os or "").lower() or bool(
        analysis.evidence.resolved.matching("disk.windows_")
    )
    unread = [title for title in missing if windows and title in WINDOWS_UNREAD]
    return SystemView(panels, [t for t in missing if t not in unread], analysis.evidence, members, unread=unread)
