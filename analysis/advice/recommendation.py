"""A recommendation as data: what to do, to which setting or query, from what value to what, and why.

Detectors, culprits and root causes make `Recommendation`s; `analysis.incidents.vetting` checks every one
against the node before it is kept; the words are rendered once, at the output
(`analysis.advice.wording`). A change of setting carries the setting, the value the node had in the
window (`Current`: where it came from, or that it was assumed or inferred) and the proposed value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# What a recommendation asks for.
ACTIONS = (
    "set_setting",  # change a mongod or WiredTiger setting (`setting`, `current`, `proposed`)
    "resize",  # more cache, memory, IOPS or nodes (`setting` when it is the cache size)
    "create_index",  # `command` creates it
    "add_max_time_ms",  # bound an operation (`proposed`: the limit in ms)
    "read_from_secondaries",
    "batch_writes",  # spread or batch writes and deletes
    "limit_clients",  # connection pools, reconnects
    "change_workload",  # restrict, reschedule or move an operation
    "investigate",  # look at something these files cannot show
)
# Where a setting's current value came from.
ORIGINS = (
    "configured",  # the node's configuration: configString, command line, setParameter, getParameter
    "default",  # the published default, the node's configuration being recorded and not setting it
    "assumed",  # the published default, these files recording none of the node's configuration
    "inferred",  # read from the node's behaviour (the checkpoints' cadence)
)
# Where a piece of advice can be followed at all (`Recommendation.topology`).
TOPOLOGIES = (
    "member",  # a replica set's member: other members to build on one at a time
    "primary",  # the primary of a replica set: secondaries to read from, a primary to step down
)
# What a piece of advice takes for granted, which the incident it answers may contradict (`Recommendation.assumes`).
ASSUMPTIONS = (
    "no_scan",  # no collection scan or index build is behind the cache's fill (a larger cache would only feed it)
    "engine_not_bottleneck",  # the storage engine kept up: tickets, not the cache, checkpoints or the disk, held the work back
    "operations_held",  # the log shows operations that held the resource in the window (not only ones that waited for it)
    "operations_unnamed",  # as `operations_held`, and none of them is named a cause (advice to find them)
)
# Commands that change documents: interrupted by maxTimeMS, a multi-document one stays partly applied.
WRITE_COMMANDS = frozenset({"update", "delete", "findAndModify", "findandmodify", "bulkWrite"})


@dataclass(frozen=True)
class Current:
    """A setting's value on the node during the window it is quoted for."""

    value: float | None
    unit: str  # "%" (of the cache), "s", "count", "bytes"
    source: str  # where the value was read, in words
    origin: str  # one of ORIGINS

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {ORIGINS}, not {self.origin!r}")


@dataclass(frozen=True)
class Runs:
    """The logged runs of one query shape a maxTimeMS limit is set against, and how many of them it stops."""

    count: int
    median_ms: float
    longest_ms: float
    stopped: int  # runs longer than the limit


@dataclass(frozen=True)
class Recommendation:
    action: str  # one of ACTIONS
    what: str  # the change in words, without its numbers ("Checkpoint more often so each one writes less")
    why: str = ""  # the evidence it answers, in words
    setting: str | None = None  # a setting's name (`analysis.settings.SETTINGS`) for a change of setting
    current: Current | None = None
    proposed: float | None = None  # the setting's new value (its unit), or a maxTimeMS limit in ms
    target: str | None = None  # the namespace it acts on
    operation: str | None = None  # the command it is about (find, update...)
    command: str | None = None  # how to apply it, as typed (a createIndex call)
    caveat: str | None = None
    findings: tuple[str, ...] = ()  # ids of the findings it answers
    topology: str | None = None  # one of TOPOLOGIES: the node it needs; None: any node
    assumes: str | None = None  # one of ASSUMPTIONS: what its incident must not contradict
    runs: Runs | None = None  # for add_max_time_ms: the runs of the shape the limit is set against

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, not {self.action!r}")
        if self.topology not in (None, *TOPOLOGIES):
            raise ValueError(f"topology must be one of {TOPOLOGIES}, not {self.topology!r}")
        if self.assumes not in (None, *ASSUMPTIONS):
            raise ValueError(f"assumes must be one of {ASSUMPTIONS}, not {self.assumes!r}")
        if self.setting is not None and (self.current is None or self.proposed is None):
            raise ValueError(f"a change of {self.setting} needs its current and proposed values")

    @property
    def setting_change(self) -> tuple[str, Current, float] | None:
        """The setting it changes, its current value and the value proposed (a change of setting has all three, as
        `__post_init__` checks), or None for advice of another kind."""
        if self.setting is None or self.current is None or self.proposed is None:
            return None
        return self.setting, self.current, self.proposed

    @property
    def key(self) -> tuple:
        """What makes two recommendations the same advice: one setting (whatever value), or one action on one target."""
        if self.setting is not None:
            return ("setting", self.setting)
        return (self.action, self.target, self.operation, self.command, self.what)

    def answering(self, ids: tuple[str, ...] | list[str]) -> Recommendation:
        """The same advice, also answering the findings `ids`."""
        return replace(self, findings=tuple(dict.fromkeys((*self.findings, *ids))))


@dataclass(frozen=True)
class Withheld:
    """Advice the validator did not let a report make, and the rule it broke."""

    recommendation: Recommendation
    reason: str


def advise(action: str, what: str, why: str = "", **fields) -> Recommendation:
    """A recommendation without a setting (the words are the advice)."""
    return Recommendation(action=action, what=what, why=why, **fields)


def merged(recommendations: list[Recommendation]) -> list[Recommendation]:
    """Each piece of advice once, in order: a later one with the same key adds its findings to the first."""
    out: dict[tuple, Recommendation] = {}
    for rec in recommendations:
        out[rec.key] = out[rec.key].answering(rec.findings) if rec.key in out else rec
    return list(out.values())
