"""Findings for a terminal: one table, then what to read and do for each problem."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ftdc.timeutil import format_time

from .analyze import Analysis
from .findings import Finding, top_culprit
from .text import duration

STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}
# Recommendations shown per problem; --json and the report carry all of them.
SHOWN_RECOMMENDATIONS = 3
# Consoles at least this wide get kind, title and culprit in columns of their own.
WIDE = 140


def _window(finding: Finding) -> str:
    return f"{format_time(finding.start)}\n+{duration(finding.seconds)}"


def findings_table(findings: list[Finding], width: int, title: str = "Findings") -> Table:
    """Severity, window, kind, title, top culprit: five columns on a wide console;
    below WIDE, kind, title and culprit share one column so titles stay readable."""
    table = Table(title=title, title_justify="left", expand=True)
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
        kind = f.kind + (f" ({f.resource})" if f.resource else "")
        culprit = top_culprit(f)
        cells = [kind, escape(f.title), escape(culprit or "")] if wide else [
            f"[bold]{kind}[/bold]\n{escape(f.title)}" + (f"\n[dim]culprit: {escape(culprit)}[/dim]" if culprit else "")
        ]
        table.add_row(Text(f.severity, STYLE[f.severity]), _window(f), *cells)
    return table


def problem_details(findings: list[Finding]) -> list[RenderableType]:
    out: list[RenderableType] = []
    for n, f in enumerate((f for f in findings if f.severity != "info"), 1):
        out.append(Text(f"\n{n}. {f.title}", style=STYLE[f.severity]))
        out.append(Text(f.explanation))
        for rec in f.recommendations[:SHOWN_RECOMMENDATIONS]:
            out.append(Text(f"  → {rec}"))
    return out


def render_findings(analysis: Analysis, width: int = 80) -> RenderableType:
    """The table, then each warning or critical finding's explanation and first recommendations."""
    first, last = analysis.overview.first, analysis.overview.last
    span = f"{format_time(first)} to {format_time(last)}" if first else "the data"
    if not analysis.findings:
        return Text(f"No findings: nothing unusual from {span}.")
    parts: list[RenderableType] = []
    if not analysis.problems:
        parts.append(Text(f"No problems found from {span}: no warning or critical finding; context below.", style="green"))
    parts.append(findings_table(analysis.findings, width))
    parts.extend(problem_details(analysis.findings))
    return Group(*parts)
