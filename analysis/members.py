"""A replica set's members across nodes: which member index each node recorded as itself, and the
address behind each index. The replica set's findings (`nodes`) and the report's system panels
(`outputs.system`) both name members by these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from analysis.series import aggregates

if TYPE_CHECKING:
    from analysis.observe import Analysis

Member = tuple[str | None, str]
"""(replica set, member index): an index means something only within its replica set."""


def self_members(analysis: Analysis) -> list[str]:
    """The replica-set member indices this node recorded as itself."""
    series = analysis.evidence.derived.analysed  # the replication detector's columns: no need to derive those only shown
    return [
        c.removeprefix("member_self.")
        for c in series.columns
        if c.startswith("member_self.") and (aggregates.greatest(series[c]) or 0) > 0
    ]


def member_addresses(nodes: Sequence[Analysis], members: Sequence[list[str]]) -> dict[Member, str]:
    """(replica set, member index) -> the address of the node that is that member (`members`: each node's `self_members`)."""
    return {
        (a.result.node.replica_set, member): a.result.node.address
        for a, mine in zip(nodes, members)
        if a.result.node.address
        for member in mine
    }
