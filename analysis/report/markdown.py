"""The report as Markdown, its PNGs in a folder beside it (`report.md` + `report_files/`)."""

from __future__ import annotations

from pathlib import Path

from ftdc.timeutil import format_time

from ..findings import Finding
from ..text import duration
from .content import Figure, Report


def _cell(text: str) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _figure(figure: Figure, folder: str) -> str:
    return f"![{_cell(figure.caption)}]({folder}/{figure.name})\n"


def _finding(f: Finding, number: int | None, figure: Figure | None, folder: str) -> str:
    head = f"### {number}. " if number is not None else "### "
    lines = [f"{head}{f.severity.upper()}: {f.title}", "",
             f"`{f.kind}`{' (' + f.resource + ')' if f.resource else ''} · {format_time(f.start)} – {format_time(f.end)} ({duration(f.seconds)})", "",
             f.explanation, ""]
    if figure:
        lines.append(_figure(figure, folder))
    if f.culprits:
        lines += ["| namespace | command | plan | runs | s in window | share | longest ms | shape |", "|---|---|---|--:|--:|--:|--:|---|"]
        lines += [f"| {_cell(c.ns)} | {_cell(c.command)} | {_cell(c.plan_summary)} | {c.count:,} | {c.overlap_s:,.1f} | {c.share:.0%} | {c.max_ms:,} | `{_cell(c.shape or c.query_hash or '')}` |"
                  for c in f.culprits]
        lines.append("")
    if f.recommendations:
        lines += ["What to do:", ""] + [f"- {r}" for r in f.recommendations] + [""]
    return "\n".join(lines)


def write(report: Report, path: Path) -> list[Path]:
    """Writes `path` and its figures; returns every file written."""
    folder = path.with_name(path.stem + "_files")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    out = [f"# {report.title}", "", f"> {report.headline}", "", f"generated {format_time(report.generated)}" + (" · redacted" if report.redacted else ""), ""]
    if report.cross_node:
        out += ["## Across nodes", ""] + [_finding(f, n, None, folder.name) for n, f in enumerate(report.cross_node, 1)]
    for section in report.nodes:
        if len(report.nodes) > 1:
            out += [f"## {section.name}", "", f"> {section.headline}", ""]
        out += ["## Findings", ""]
        if not section.carded:
            out += ["No problems found: no warning or critical finding.", ""]
        out += [_finding(section.findings[i], n, section.evidence.get(i), folder.name) for n, i in enumerate(section.carded, 1)]
        if section.listed:
            out += [f"{len(section.listed)} more finding(s), each like one above (all of them, in full, are in the JSON report):", "",
                    "| severity | start | for | kind | what happened |", "|---|---|---|---|---|"]
            out += [f"| {f.severity} | {format_time(f.start)} | {duration(f.seconds)} | {f.kind} | {_cell(f.title)} |" for f in section.listed] + [""]
        context = [(i, f) for i, f in enumerate(section.findings) if f.severity == "info"]
        if context:
            out += ["### Context and what could not be checked", ""] + [f"- {f.title}" for _, f in context] + [""]
        # A figure shared by an incident's findings is written once.
        figures = {f.name: f for f in [*section.evidence.values(), *([section.timeline] if section.timeline else [])]}
        for figure in figures.values():
            (folder / figure.name).write_bytes(figure.png)
            written.append(folder / figure.name)
        if section.timeline:
            out += ["## Timeline", "", _figure(section.timeline, folder.name)]
        out += ["## Node", "", "| | |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in section.facts] + [""]
        out += ["## Data coverage", "", "| | |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in section.coverage] + [""]
    out += ["## Methods", ""] + [f"**{k}**: {' '.join(v.split())}\n" for k, v in report.methods]
    path.write_text("\n".join(out), encoding="utf-8")
    return [path, *written]
