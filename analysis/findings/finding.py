"""The one shape every analysis reports in: `Finding`, with its ranked `Culprit`s.

Both are frozen: a stage that has more to say about a finding (the operations the log names, the
incident an election happened during) makes a new one (`dataclasses.replace`). Its text is kept in
parts and rendered from them (`title`, `explanation`), so nothing downstream parses a sentence back."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from analysis import display
from analysis.advice import wording
from analysis.advice.recommendation import Recommendation, Withheld
from analysis.text import clock, ms, span_before
from ftdc.timeutil import format_time

SEVERITIES = ("critical", "warning", "info")
RESOURCES = ("read", "write")


@dataclass(frozen=True)
class Culprit:
    """Slow operations of one shape that overlapped a finding's window."""

    ns: str | None
    plan_summary: str | None
    shape: str | None
    query_hash: str | None
    count: int
    overlap_s: float  # operation-seconds inside the window
    share: float  # of the time all slow operations held inside the window (see held_s)
    max_ms: int
    example: str | None  # the longest run's command, as logged
    collscan: bool = False
    command: str | None = None
    held_s: float = 0.0  # overlap_s less what the log says its runs waited (cache, locks, tickets): what ranks it
    first_started: dt.datetime | None = None  # when its earliest run began
    last_ended: dt.datetime | None = None  # when its last run ended
    recommendations: list[Recommendation] = field(
        default_factory=list
    )  # when named as a cause: computed once per culprit from its own runs
    failed: int = 0  # runs the log says failed (ok: 0, an error code: interrupted, a client that disconnected)
    error: str | None = None  # the commonest error name of those runs


@dataclass(frozen=True)
class Usual:
    """The usual mean latency of one operation class a finding quotes its peak against: the median of the hour before
    `before` (the finding's start, then its incident's, so one card quotes one baseline per class), or of what the
    capture holds of it."""

    op: str  # "reads" | "writes" | "commands"
    latency_ms: float
    before: dt.datetime
    in_title: bool = False  # the title's statement ends with the peak this is compared with ("up to 900 ms")
    # The earliest sample the median rests on; None when the capture holds too little before `before` and the value
    # is the worst spike's own rolling median.
    since: dt.datetime | None = None

    def sentence(self) -> str:
        if self.since is None:
            return (
                f"Usual {self.op[:-1]} latency: {ms(self.latency_ms)}, the median just before the worst spike "
                f"(the capture holds too little before {clock(self.before)} for a longer baseline)."
            )
        return f"Usual {self.op[:-1]} latency: {ms(self.latency_ms)}, the median of {span_before(self.since, self.before)}."


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str
    start: dt.datetime | None  # None only for context about a node with no sample
    end: dt.datetime | None
    subject: str  # what happened, as an incident's title names it ("Connection storm"); the whole title when `statement` is empty
    reasoning: str  # the detector's explanation: its evidence and the mechanism
    evidence: dict[str, Any] = field(default_factory=dict)
    culprits: list[Culprit] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)
    resource: str | None = None  # "read" | "write" for tickets
    causes: list[Culprit] = field(default_factory=list)  # the culprits attribution names as the cause (typed, not prose)
    id: str = ""  # "F1", "F2"...: unique within its analysis, set once findings are ranked
    withheld: list[Withheld] = field(
        default_factory=list
    )  # advice the validator did not make, with why (`analysis.incidents.vetting`)
    statement: str = field(default="", kw_only=True)  # the title's figures after its subject ("700 connections opened in 40 s")
    notes: tuple[str, ...] = field(
        default=(), kw_only=True
    )  # sentences later stages add: the operations the log names, an election's incident
    # What set it off, where the detector can say it (the handles the node came to hold, the TTL pass and its
    # collection): the root cause's words when this finding starts its incident's chain, not its title again.
    cause: str = field(default="", kw_only=True)
    usual: Usual | None = field(
        default=None, kw_only=True, repr=False
    )  # the latency baseline its text quotes (evidence's baseline.latency_ms)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")
        if self.resource is not None and self.resource not in RESOURCES:
            raise ValueError(f"resource must be one of {RESOURCES} or None, not {self.resource!r}")

    @property
    def title(self) -> str:
        """Subject: statement (against the usual latency when the statement ends with a peak)."""
        against = f" against {ms(self.usual.latency_ms)}" if self.usual is not None and self.usual.in_title else ""
        return f"{self.subject}: {self.statement}{against}" if self.statement else self.subject

    @property
    def explanation(self) -> str:
        """The detector's reasoning, the usual latency it is judged against, then each later stage's note."""
        usual = f" {self.usual.sentence()}" if self.usual is not None else ""
        return self.reasoning + usual + "".join(f" {note}" for note in self.notes)

    def usually(self, usual: Usual) -> Finding:
        """This finding judged against another latency baseline: its text and its evidence quote `usual`."""
        baseline = {**self.evidence.get("baseline", {}), "latency_ms": round(usual.latency_ms, 3)}
        return replace(self, usual=usual, evidence={**self.evidence, "baseline": baseline})

    def noted(self, note: str) -> Finding:
        """This finding with one more sentence of explanation."""
        return replace(self, notes=(*self.notes, note))

    @property
    def not_checked(self) -> bool:
        """Its detector could not run on this node's data (`Context.not_checked`): what it lacked is its evidence's
        "missing", and no report may count it among the checks that passed."""
        return self.severity == "info" and "missing" in self.evidence

    @property
    def window(self) -> tuple[dt.datetime, dt.datetime]:
        """Its start and end, for a finding that has them: every one a detector reports about samples (a finding
        without is context about a node with no sample, and has no window to look into)."""
        if self.start is None or self.end is None:
            raise ValueError(f"a {self.kind} finding without a start or end has no window")
        return self.start, self.end

    @property
    def seconds(self) -> float:
        if self.start is None or self.end is None:
            return 0.0
        return (self.end - self.start).total_seconds()

    def rank(self) -> tuple:
        """Most severe first, then the longest, then the earliest; context (`info`) in time order."""
        return (
            SEVERITIES.index(self.severity),
            0 if self.severity == "info" else -self.seconds,
            self.start or dt.datetime.min.replace(tzinfo=dt.timezone.utc),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times ISO-8601 with Z, advice as its words and its structure."""
        return jsonable(self)

    def _repr_html_(self) -> str:
        return display.html(self)


def jsonable(value: Any) -> Any:
    """Dicts and lists of plain values for JSON: times ISO-8601 with Z, floats to 3 places, advice with its words
    (the one converter: findings, incidents and reports all go through it)."""
    if isinstance(value, Recommendation):
        return jsonable(wording.as_dict(value))
    if isinstance(value, Withheld):
        return jsonable(wording.withheld_dict(value))
    if isinstance(value, Finding):
        return jsonable(_told(value))
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in fields(value) if f.repr}
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return format_time(value)
    if isinstance(value, float):
        return json_number(round(value, 3))
    return value


def _told(finding: Finding) -> dict[str, Any]:
    """A finding's fields as a reader gets them: its title and explanation rendered from their parts, where those stand."""
    rendered = {"subject": ("title", finding.title), "reasoning": ("explanation", finding.explanation)}
    out = {}
    for f in fields(finding):
        if f.repr and f.name not in ("statement", "notes"):
            name, value = rendered.get(f.name, (f.name, getattr(finding, f.name)))
            out[name] = value
    return out


def json_number(value: float) -> float | int:
    """A whole float as an int (counts, bytes, settings: `4`, not `4.0`); others as they are."""
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def top_culprit(finding: Finding) -> str | None:
    if not finding.culprits:
        return None
    c = finding.culprits[0]
    plan = f" {c.plan_summary}" if c.plan_summary else ""
    return f"{c.ns or '?'} {c.command or ''}{plan} ({c.share:.0%}, {c.overlap_s:.0f} s)".replace("  ", " ")
