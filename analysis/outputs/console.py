"""Incidents (or, with --findings, findings) for a terminal: one table, then what to read and do for each."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from analysis.advice import wording
from analysis.advice.recommendation import Recommendation
from analysis.findings.finding import Finding, top_culprit
from analysis.incidents.incident import Incident
from analysis.observe import Result
from analysis.outputs import words
from analysis.outputs.document import quiet
from analysis.series.derived import GAP_PERIODS
from analysis.text import counted, duration, first_and_last, plural, ram
from analysis.workbench.overview import Overview
from ftdc.timeutil import Offset, say_time, say_window

STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}
# Consoles at least this wide get kind, title and culprit in columns of their own.
WIDE = 140


def _window(finding: Finding) -> str:
    return f"{say_time(finding.start)}\n+{duration(finding.seconds)}"


def findings_table(findings: list[Finding], width: int, title: str = "Findings") -> Group:
    """Severity, window, kind, title, top culprit: five columns on a wide console;
    below WIDE, kind, title and culprit share one column so titles stay readable.
    The title is a line of its own (a table's title is padded to the table's width)."""
    table = Table(expand=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("window", no_wrap=True)
    wide = width >= WIDE
    if wide:
        table.add_column("kind", no_wrap=True)
        table.add_column("what happened", ratio=3, overflow="fold")
        table.add_column("top culprit", ratio=2, overflow="fold")
    else:
        table.add_column("finding", overflow="fold")
    for f in findings:
        kind = words.kind(f.kind, f.resource)
        culprit = top_culprit(f)
        cells = (
            [kind, escape(f.title), escape(culprit or "")]
            if wide
            else [f"[bold]{kind}[/bold]\n{escape(f.title)}" + (f"\n[dim]culprit: {escape(culprit)}[/dim]" if culprit else "")]
        )
        table.add_row(Text(f.severity, STYLE[f.severity]), _window(f), *cells)
    return Group(Text(title, style="italic"), table)


def _incident_window(incident: Incident) -> str:
    return f"{say_time(incident.start)}\n+{duration(incident.seconds)}"


def incidents_table(incidents: list[Incident], width: int, title: str = "Incidents") -> Group:
    """Severity, window, title, root cause, the findings folded into each; below WIDE, title and
    root cause share one column."""
    table = Table(expand=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("window", no_wrap=True)
    wide = width >= WIDE
    if wide:
        table.add_column("incident", ratio=3, overflow="fold")
        table.add_column("root cause", ratio=2, overflow="fold")
        table.add_column("findings", overflow="fold")
    else:
        table.add_column("incident", overflow="fold")
    for i in incidents:
        cause = f"{words.cause_kind(i.root_cause)}: {i.root_cause.summary}"
        folded = f"{len(i.finding_ids)}: {', '.join(i.finding_ids)}"
        cells = (
            [f"{i.id}. {escape(i.title)}", escape(cause), folded]
            if wide
            else [f"[bold]{i.id}. {escape(i.title)}[/bold]\n[dim]root cause {escape(cause)}; findings {folded}[/dim]"]
        )
        table.add_row(Text(i.severity, STYLE[i.severity]), _incident_window(i), *cells)
    return Group(Text(title, style="italic"), table)


def advice_lines(recommendations: list[Recommendation], fill: Callable[[str, str, str], str]) -> list[RenderableType]:
    """The first fixes (a handful, `wording.handful`), then how many more there are where the list is cut (the JSON
    carries all of them)."""
    shown, folded = wording.handful(recommendations)
    out: list[RenderableType] = [Text(fill(wording.text(rec), "  → ", "    ")) for rec in shown]
    if folded:
        out.append(Text(fill(f"+{len(folded)} more (all in the JSON report)", "  ", "    "), style="dim"))
    return out


def incident_details(incidents: list[Incident], width: int = 80, offset: Offset = None) -> list[RenderableType]:
    """Each incident's window (in UTC and in the log's offset), root cause, the other causes weighed, chain of steps and
    first recommendations, wrapped between words."""

    def fill(text: str, first: str = "", rest: str = "") -> str:
        return textwrap.fill(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)

    out: list[RenderableType] = []
    for i in incidents:
        out.append(Text("\n" + fill(f"{i.id}. {i.title}", rest="   "), style=STYLE[i.severity]))
        out.append(Text(fill(words.window(i.start, i.end, offset), "   ", "   "), style="dim"))
        out.append(Text(fill(f"Root cause ({words.cause_kind(i.root_cause)}): {i.root_cause.summary}")))
        out.extend(Text(fill(f"{heading}: {cause}", "  ", "    "), style="dim") for heading, cause in words.considered(i))
        for step in i.chain:
            out.append(Text(fill(f"{step.text} [{', '.join(step.findings)}]", "  • ", "    ")))
        out += advice_lines(i.recommendations, fill)
    return out


def problem_details(findings: list[Finding], width: int = 80) -> list[RenderableType]:
    """Each problem's explanation and first recommendations, wrapped here between words
    (rich would leave a space at the end of each wrapped line)."""

    def fill(text: str, first: str = "", rest: str = "") -> str:
        return textwrap.fill(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)

    out: list[RenderableType] = []
    for n, f in enumerate((f for f in findings if f.severity != "info"), 1):
        out.append(Text("\n" + fill(f"{n}. {f.title}", rest="   "), style=STYLE[f.severity]))
        out.append(Text(fill(f.explanation)))
        out += advice_lines(f.recommendations, fill)
    return out


KEY_WIDTH = 18
MAX_GAPS_SHOWN = 10


def _periods(periods: dict[int, int]) -> str:
    """Sampling periods seen, most common first; samples sharing their chunk's time (files
    written without a per-sample Date field) have no period of their own to show."""
    total = sum(periods.values()) or 1
    shown = [(p, n) for p, n in periods.items() if p > 0 and n / total >= 0.01][:4]
    text = ", ".join(f"{p / 1000:g} s ({100 * n / total:.0f} %)" for p, n in shown)
    if periods.get(0, 0) / total >= 0.5:
        return (text + "; " if text else "") + "most samples carry no time of their own (each is timed by its chunk's _id)"
    return text or "-"


def _host(view: Overview) -> str:
    """`Ubuntu, 8 cores, 31.2 GB RAM`, and the container's memory limit beside it where one is below the host's RAM (the
    memory mongod may use, which its cache is to be sized against)."""
    node = view.node
    memory = None
    if node.memory_mb:
        memory = f"{ram(node.memory_mb)} RAM"
        if node.memory_limit_mb and node.memory_limit_mb < node.memory_mb:
            memory += f" (container limit {ram(node.memory_limit_mb)})"
    return ", ".join(x for x in (node.os, f"{node.cpus} cores" if node.cpus else None, memory) if x)


def _rows(view: Overview) -> list[tuple[str, str]]:
    """What is known, without placeholders for what is not."""
    node = view.node
    cache = f"cacheSizeGB {node.cache_size_gb:g}" if node.cache_size_gb is not None else "cache size not set (mongod's default)"
    rows = [
        ("node", node.address or "unknown: no metadata document in these files"),
        ("version", node.version),
        ("replica set", node.replica_set),
        ("host", _host(view)),
        ("storage", f"{node.storage_engine}, {cache}" if node.storage_engine else None),
        (
            "time range",
            f"{say_window(*window)} ({_whole(duration((window[1] - window[0]).total_seconds()))})"
            if (window := view.window)
            else "no samples",
        ),
        ("samples", f"{view.samples:,} in {counted(view.files, 'file')}"),
        ("sampling period", _periods(view.periods_ms)),
        ("metrics", f"{view.metrics:,}"),
        ("chunks", f"{view.chunks:,}, {counted(view.schema_changes, 'schema change')}"),
        ("gaps", f"{len(view.gaps)} (steps over {GAP_PERIODS} sampling periods)"),
        ("restarts", first_and_last(view.restarts) + (" (each in --json)" if len(view.restarts) > 2 else "")),
    ]
    rows += [("  gap", f"{say_window(g.start, g.end)} ({_whole(duration(g.seconds))})") for g in view.gaps[:MAX_GAPS_SHOWN]]
    if len(view.gaps) > MAX_GAPS_SHOWN:
        rows.append(("", f"... and {len(view.gaps) - MAX_GAPS_SHOWN} more"))
    return [(k, v) for k, v in rows if v]


def _whole(text: str) -> str:
    """`1 min 30 s` with no-break spaces: wrapping keeps a duration on one line."""
    return text.replace(" ", "\u00a0")


def render_overview(view: Overview, width: int = 80) -> str:
    """`key  value` lines that fit `width`: long values wrap between words (never inside a
    timestamp or a duration) under their first line; no line ends in spaces."""
    room = max(20, width - KEY_WIDTH)
    lines = []
    for key, value in _rows(view):
        parts = textwrap.wrap(value, room, break_long_words=False, break_on_hyphens=False) or [""]
        lines.append(f"{key:<{KEY_WIDTH}}{parts[0]}".rstrip())
        lines += [" " * KEY_WIDTH + part for part in parts[1:]]
    return "\n".join(lines)


def render_incidents(result: Result, width: int = 80, cross: Sequence[Finding] = ()) -> RenderableType:
    """The incidents table, then each incident's chain and first recommendations; one line when there is none (saying
    which of the replica set's findings `cross` concern the node)."""
    window = result.overview.window
    span = f"from {say_window(*window, result.log_offset)}" if window else "in the data"
    if not result.incidents:
        found = len(result.findings)
        hint = f"; {counted(found, 'context finding')}, --findings lists {plural(found, 'it', 'them')}" if found else ""
        # One line however narrow the console (print it with soft_wrap: the terminal wraps it, not rich).
        return Text(f"No incident {span}: {quiet(result, cross)}{hint}.", style="green")
    return Group(
        incidents_table(result.incidents, width),
        *incident_details(result.incidents, width, result.log_offset),
    )


def render_findings(result: Result, width: int = 80) -> RenderableType:
    """The table, then each warning or critical finding's explanation and first recommendations."""
    window = result.overview.window
    span = f"from {say_window(*window, result.log_offset)}" if window else "in the data"
    if not result.findings:
        return Text(f"No findings: nothing unusual {span}.")
    parts: list[RenderableType] = []
    if not result.problems:
        parts.append(Text(f"No problems found {span}: no warning or critical finding; context below.", style="green"))
    parts.append(findings_table(result.findings, width))
    parts.extend(problem_details(result.findings, width))
    return Group(*parts)
