"""The report's figures, each a stack of `plots` panels: one per incident (its chain over its
window, cause above effect), one per finding (its own window), each node's timeline and the
replica set's (member states, lag, elections). Which series show a kind is its detector
record's `panels` (the registry); nothing here is keyed by kind.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from analysis.findings.detectors import LINKS, MOMENTS, RECORDS, cpu_saturation, disk_saturation
from analysis.findings.finding import Finding
from analysis.incidents.incident import Incident
from analysis.observe import Analysis
from analysis.outputs.report.explorer import Reduced
from analysis.outputs.report.plots import Mark, Panel, Span, figure
from analysis.outputs.system import MEMBER_COLUMNS, SystemView, matching, member_names, series_label  # noqa: F401  (member_names: the report names members by it)
from analysis.series.derived import WAITERS
from analysis.settings import SETTINGS

DETAIL_PANEL = 108  # pixels, a finding's plot: the detail below the incidents, kept short
# An incident's figure draws this many panels at most: its cause's and effects' first.
MAX_PANELS = 7
COLORS = {"reads": "#1f77b4", "writes": "#d62728", "commands": "#2ca02c"}


# The threshold each cache series is held against (series column, threshold name).
_THRESHOLDS = {r.level: (f"{r.name}_pct", r.name) for r in SETTINGS.values() if r.level}


COLLSCAN_RUNS = Panel("COLLSCAN operations in the log (bar = run time)", runs=True)


def _panels(analysis: Analysis) -> list[Panel]:
    have = set(analysis.evidence.series.columns)
    panels = []
    latency = [(f"{op}_latency_ms", op, COLORS[op]) for op in ("reads", "writes", "commands") if f"{op}_latency_ms" in have]
    if latency:
        panels.append(Panel("latency, ms (interval mean)", latency, log_scale=True))
    cache = [
        (c, label, color)
        for c, label, color in (
            ("cache_fill_pct", "fill", "#9467bd"),
            ("cache_dirty_pct", "dirty", "#ff7f0e"),
            ("cache_updates_pct", "updates", "#8c564b"),
        )
        if c in have
    ]
    if cache:
        panels.append(Panel("cache, % of maximum", cache, thresholds=[_THRESHOLDS[c] for c, _, _ in cache]))
    # Tickets in use as a share of the pool (128 free tickets drawn as counts are flat lines at the top), and the
    # queues, those at zero throughout named in the panel instead of drawn (plots._telling): two lines, not eight.
    tickets = [(f"{rw}_tickets_used_pct", f"{rw} in use", None) for rw in ("read", "write") if f"{rw}_tickets_used_pct" in have]
    tickets += [
        (c, label, None)
        for rw in ("read", "write")
        for c, label in ((f"{rw}_queued", f"{WAITERS[rw]} queued"), (f"{rw}_ticket_queue", f"{rw} ticket queue"))
        if c in have
    ]
    if tickets:
        panels.append(Panel("tickets in use, % of the pool; operations queued (when any)", tickets))
    return panels + ([COLLSCAN_RUNS] if analysis.evidence.logs is not None else [])


SYSTEM_PANEL = 99
# The detectors' fixed bars on the system panels, by panel title: where a reading becomes a finding.
REFERENCES = {
    "CPU, % of all cores": ((cpu_saturation.BUSY_PCT, f"CPU saturation: busy {cpu_saturation.BUSY_PCT:g} % and more"),),
    "runnable threads per core": ((cpu_saturation.RUNNABLE_PER_CORE, "more runnable threads than cores"),),
    "disk busy, %": ((disk_saturation.UTIL_PCT, f"disk saturation: busy {disk_saturation.UTIL_PCT:g} % and more"),),
    "disk await, ms per request": (
        (disk_saturation.CRITICAL_AWAIT_MS, f"saturation critical: {disk_saturation.CRITICAL_AWAIT_MS:g} ms per request"),
    ),
}


def windows(analysis: Analysis) -> list[Span]:
    """The windows a whole-range figure shades: each incident's (by its id), and each warning or critical finding no
    incident holds (by its own): a noisy week's forty findings are a handful of incidents."""
    held = {f for i in analysis.result.incidents for f in i.finding_ids}
    # An incident's start and end are its findings' (a finding with a window has both).
    spans = [
        Span(i.start, i.end, i.severity, i.id) for i in analysis.result.incidents if i.start is not None and i.end is not None
    ]
    return spans + [
        Span(*f.window, f.severity, f.id or str(n))
        for n, f in enumerate(analysis.result.problems, 1)
        if f.start is not None and f.id not in held
    ]


def system(analysis: Analysis, view: SystemView, series: Reduced | None = None) -> str | None:
    """The system panels (`analysis.outputs.system.SystemView`, which names the members) over the node's whole range,
    the findings marked; `series`: that range already reduced (`explorer.full_range`)."""
    window = analysis.result.overview.window
    if window is None or not view.panels:
        return None
    panels = [
        Panel(title, [(c, view.label(c), None) for c in columns], references=REFERENCES.get(title, ()))
        for title, columns in view.panels
    ]
    return figure(
        panels,
        analysis,
        *window,
        windows(analysis),
        title="System: what the node recorded, incidents and findings by id",
        panel_px=SYSTEM_PANEL,
        series=series,
    )


def _around(analysis: Analysis, first: dt.datetime, last: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """[first, last] with context either side (half its length, at least a minute), within the data."""
    margin = max(dt.timedelta(seconds=60), (last - first) * 0.5)
    return max(first - margin, analysis.result.overview.first or first), min(last + margin, analysis.result.overview.last or last)


def timeline(analysis: Analysis, series: Reduced | None = None) -> str | None:
    """Latency, cache with its thresholds, tickets and COLLSCAN runs over the whole range, the findings numbered;
    `series`: that range already reduced (`explorer.full_range`)."""
    window = analysis.result.overview.window
    if window is None:
        return None
    spans = [
        Span(*f.window, f.severity, f.id or str(n)) for n, f in enumerate(analysis.result.problems, 1) if f.start is not None
    ]
    return figure(
        _panels(analysis), analysis, *window, spans, title="Timeline: checkpoints shaded grey, findings by id", series=series
    )


STATES_TITLE = "member state (solid green primary, striped blue secondary, cross-hatched red any other)"


def _kind_panels(
    analysis: Analysis,
    kind: str,
    label: str = "",
    window: tuple[dt.datetime, dt.datetime] | None = None,
    severity: str = "warning",
    members: dict[str, str] | None = None,
) -> list[Panel]:
    """The evidence panels the kind's detector record declares, with the columns this node has."""
    panels = []
    record = RECORDS.get(kind)
    for title, wanted, log_scale in record.panels if record else ():
        columns = matching(analysis.evidence.series.columns, wanted)
        if columns and all(c.startswith("member_state.") for c in columns):
            panels.append(
                Panel(
                    f"{label}{STATES_TITLE}",
                    [(c, series_label(c, members or {}), None) for c in columns],
                    states=True,
                    window=window,
                    severity=severity,
                )
            )
        elif columns:
            panels.append(
                Panel(
                    f"{label}{title}",
                    [(c, series_label(c, members or {}), None) for c in columns],
                    thresholds=[_THRESHOLDS[c] for c in columns if c in _THRESHOLDS],
                    log_scale=log_scale,
                    window=window,
                    severity=severity,
                )
            )
    return panels


def _new(panels: list[Panel], drawn: set[str]) -> list[Panel]:
    """The panels that add a series not in `drawn` yet, which they join (a chain's steps share metrics: dirty cache, write latency)."""
    out = []
    for panel in panels:
        columns = {c for c, _, _ in panel.columns}
        if not columns <= drawn:
            drawn |= columns
            out.append(panel)
    return out


def finding(analysis: Analysis, f: Finding) -> str | None:
    """The metrics one finding rests on, around its own window; None when none can be drawn."""
    panels = _new(_kind_panels(analysis, f.kind), set())
    if not panels or f.start is None:
        return None
    if analysis.evidence.logs is not None and RECORDS[f.kind].attributed:  # _kind_panels found its record
        panels.append(COLLSCAN_RUNS)
    start, end = _around(analysis, *f.window)
    return figure(panels, analysis, start, end, [Span(*f.window, f.severity, f.id)], panel_px=DETAIL_PANEL)


def _cause_context(kind: str) -> list[str]:
    """For a replica set's kind (a member's lag, its loss of the primary), the kinds the registry says can set it
    off: that member's own disk, cache and checkpoints in the same window show whether it could keep up."""
    if not RECORDS[kind].replica_set_wide:
        return []
    return [k for k, effects in LINKS.items() if kind in effects and not RECORDS[k].replica_set_wide]


def incident(analysis: Analysis, inc: Incident, members: dict[str, str] | None = None) -> str | None:
    """The incident's chain on one time axis: the root cause's operations first, then each step's
    evidence in chain order (cause above effect), each marked with its own window, the incident's shaded.
    `members`: replica-set member index -> address (`member_names`), for the lag and state legends."""
    if inc.start is None or inc.end is None:  # its findings' windows: one has both or neither
        return None
    panels: list[Panel] = []
    drawn: set[str] = set()
    for number, step in enumerate(inc.chain, 1):
        label = f"{number}. {step.kind.replace('_', ' ')}"
        for kind in _cause_context(step.kind):
            panels += _new(_kind_panels(analysis, kind, f"{label}, this member's own ")[:1], drawn)
        window = (step.start, step.end) if step.start is not None and step.end is not None else None
        panels += _new(_kind_panels(analysis, step.kind, f"{label}: ", window, inc.severity, members), drawn)
    if not panels:
        return None
    if (
        inc.root_cause.kind == "operation" and "culprit" in inc.root_cause.evidence and analysis.evidence.logs is not None
    ):  # a COLLSCAN's runs (not an index build's)
        panels.insert(0, Panel(f"root cause: {COLLSCAN_RUNS.title}", runs=True))
    start, end = _around(analysis, inc.start, inc.end)
    return figure(panels[:MAX_PANELS], analysis, start, end, [Span(inc.start, inc.end, inc.severity, inc.id)])


def members(analyses: Sequence[Analysis], cross_node: Sequence[Finding]) -> str | None:
    """The replica set across its nodes: each member's state as a coloured bar, each member's lag,
    elections marked by a line and the member that took over; lag findings shaded."""
    seen = next((a for a in analyses if any(c.startswith("member_state.") for c in a.evidence.series.columns)), None)
    if seen is None or (window := seen.result.overview.window) is None:
        return None
    names = member_names(analyses, seen)
    states = sorted(c for c in seen.evidence.series.columns if c.startswith("member_state."))
    lags = [(c, series_label(c, names), None) for c in sorted(seen.evidence.series.columns) if c.startswith("member_lag_s.")]
    panels = [Panel(STATES_TITLE, [(c, series_label(c, names), None) for c in states], states=True)] + (
        [Panel("lag behind the primary, s", lags)] if lags else []
    )
    spans = [Span(*f.window, f.severity, f.id) for f in cross_node if f.kind not in MOMENTS and f.start is not None]
    elections = [
        # A primary change names the member that took over (`replication.change_finding`, its one maker).
        Mark(f.end, f"election: {names.get(f.evidence['to_member'], 'a new member')} primary")
        for f in cross_node
        if f.kind in MOMENTS and f.end is not None
    ]
    return figure(
        panels,
        seen,
        *window,
        spans,
        title="Replica set: member states and lag as each node's FTDC saw them, elections marked",
        marks=elections,
    )
