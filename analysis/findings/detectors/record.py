"""The one record each detector declares about itself; the registries read it.

A detector module states, in one `DETECTOR = Detector(...)` block near its
top, everything the rest of the pipeline needs to know about it: where it runs
among the detectors, the kinds of finding it emits, how it decides (for the
report's readers: values, not constant names; the module docstring is for
developers), the derived columns it reasons about, the evidence panels that
show it, whether the log's operations can explain its windows, whether every
member of a replica set sees it (members' copies merge into one finding, keeping
the greatest of its peaks), which of its kinds are a moment rather than a condition
(an election: context unless it falls in another finding's window), the
kinds its mechanism can set off (incidents group findings along those links,
`analysis.incidents.grouping`; what a kind is caused by is the inverse), and its
part in root causes: the root a chain starting with it has, the candidates a
chain holding it is tested for, the settings whose outliers bear on it,
whether a slow operation's disk reads hold its resource (culprits), and
whether it reads the latency spikes (it starts after those that do not).
"""

from __future__ import annotations

from dataclasses import dataclass

# What a chain that starts at a finding of this detector has as its root cause
# when no operation or configuration explains it better (see `analysis.incidents.root_causes`).
ROOTS = ("workload", "resource", "restart", "undetermined")
# The root-cause candidates, beyond a COLLSCAN the log names and the record's own root, that
# a chain holding the kind is tested for, each by one function: the write load behind dirty data
# and checkpoints (`root_causes`), an index build and history pinned in the cache
# (`held_resources`), a cache too small for the working set (`limits`), a restart just
# before a chain this kind starts (`root_causes`), and a shard's chunk migrations (`sharding`).
CANDIDATES = ("write_load", "index_build", "pinned_history", "cache_too_small", "restart", "chunk_migration")

# (title, derived columns, log scale); a column ending in "." stands for every device's or member's.
Panel = tuple[str, tuple[str, ...], bool]


@dataclass(frozen=True)
class Detector:
    kinds: tuple[str, ...]
    order: int  # where it runs among the detectors (findings are produced in this order)
    method: str  # how it decides, in words for the report's readers (the values its constants stand for)
    # Each kind's name in the reports' words, in the order of `kinds` ("checkpoint stall"): a kind is an identifier
    # for code and JSON, never shown to a reader.
    names: tuple[str, ...] = ()  # every record gives them (tests/test_report_lint.py)
    reads: tuple[
        str, ...
    ] = ()  # the derived columns (`analysis.series.derived`) it reasons about, "." ending a family as in Panel
    sets_off: tuple[str, ...] = ()  # kinds its mechanism can set off (its effects; `Finding.causes` are a finding's causes)
    panels: tuple[Panel, ...] = ()  # two at most: each panel costs a figure as much as drawing it
    attributed: bool = True  # the log's slow operations can explain its windows (culprits)
    reading_holds: bool = False  # a slow operation's disk reads are time holding its resource (culprits), not a wait
    replica_set_wide: bool = False  # every member of the replica set sees it: members' copies merge into one finding
    peaks: tuple[str, ...] = ()  # evidence keys holding a peak: members' copies of one event keep the greatest
    # Kinds of its own that are a moment, not a condition (an election): context unless during another finding's
    # window (across members too, `analysis.nodes`), drawn as a line on the members' figure, not a shaded span.
    moments: tuple[str, ...] = ()
    root: str = "undetermined"  # the root cause a chain starting here has, failing a better one
    explained_by: tuple[str, ...] = ()  # CANDIDATES a chain holding it is tested for
    settings: tuple[
        str, ...
    ] = ()  # settings (`analysis.series.thresholds`) whose outliers set it off or worsen it (`configuration`)
    # It reads `Context.spikes`, which are still under way when the detectors start: it is started after those that do
    # not, so they keep the cores busy meanwhile.
    reads_spikes: bool = False

    def __post_init__(self) -> None:
        if self.names and len(self.names) != len(self.kinds):
            raise ValueError(f"names must give each of {self.kinds} a name, not {self.names}")
        if self.root not in ROOTS:
            raise ValueError(f"root must be one of {ROOTS}, not {self.root!r}")
        if unknown := set(self.explained_by) - set(CANDIDATES):
            raise ValueError(f"explained_by must name {CANDIDATES}, not {sorted(unknown)}")
        if foreign := set(self.moments) - set(self.kinds):
            raise ValueError(f"moments must name kinds of its own {self.kinds}, not {sorted(foreign)}")
