"""The one record each detector declares about itself; the registries read it.

A detector module states, in one `DETECTOR = Detector(...)` block near its
top: the kinds of finding it emits, the evidence panels that show them, whether
the log's operations can explain its windows, whether members' copies merge
into one cross-node finding, its method (for the report's readers: values, not
constant names; the module docstring is for developers), and its causal
links: the kinds its mechanism can set off. Incidents group findings along
those links (`analysis.incidents.incident`); what a kind is caused by is the inverse.
"""

from __future__ import annotations

from dataclasses import dataclass
# What a chain that starts at a finding of this detector has as its root cause
# when no operation or configuration explains it better (see `analysis.incidents.incident`).
ROOTS = ("workload", "resource", "restart", "undetermined")

# (title, derived columns, log scale); a column ending in "." stands for every device's or member's.
Panel = tuple[str, tuple[str, ...], bool]


@dataclass(frozen=True)
class Detector:
    kinds: tuple[str, ...]
    method: str  # how it decides, in words for the report's readers (the values its constants stand for)
    causes: tuple[str, ...] = ()  # kinds its mechanism can set off
    panels: tuple[Panel, ...] = ()  # two at most: each panel costs a figure as much as drawing it
    attributed: bool = True  # the log's slow operations can explain its windows (culprits)
    cross_node: bool = False  # every member sees it: merged into one finding across nodes
    root: str = "undetermined"  # the root cause a chain starting here has, failing a better one

    def __post_init__(self) -> None:
        if self.root not in ROOTS:
            raise ValueError(f"root must be one of {ROOTS}, not {self.root!r}")
