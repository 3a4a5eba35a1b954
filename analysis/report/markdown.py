"""The report as Markdown, its PNGs in a folder beside it (`report.md` + `report_files/`)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from ftdc.atomic import PARTIAL, replacing
from ftdc.leftovers import sweep
from ftdc.timeutil import format_time

from ..findings import Finding
from ..text import duration
from .content import Figure, Report


# Characters Markdown (or the HTML it may carry) acts on: customer strings (hosts,
# namespaces, commands) are text, so each is backslash-escaped, which CommonMark renders as itself.
_ACTIVE = re.compile(r"([\\`*_\[\]<>&|#!~])")


def _text(text: str | None) -> str:
    return _ACTIVE.sub(r"\\\1", text or "")


def _cell(text: str | None) -> str:
    return _text(text).replace("\n", " ")


def _code(text: str) -> str:
    """`text` as a code span in a table cell: fenced by more backticks than it holds in a
    row, so none can close it; a pipe escaped as GFM tables need even inside code."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text.replace(chr(10), ' ').replace('|', chr(92) + '|')} {fence}"


def _figure(figure: Figure, folder: str) -> str:
    return f"![{_cell(figure.caption)}]({folder}/{figure.name})\n"


def _finding(f: Finding, number: int | None, figure: Figure | None, folder: str) -> str:
    head = f"### {number}. " if number is not None else "### "
    lines = [f"{head}{f.severity.upper()}: {_text(f.title)}", "",
             f"`{f.kind}`{' (' + f.resource + ')' if f.resource else ''} · {format_time(f.start)} – {format_time(f.end)} ({duration(f.seconds)})", "",
             _text(f.explanation), ""]
    if figure:
        lines.append(_figure(figure, folder))
    if f.culprits:
        lines += ["| namespace | command | plan | runs | s in window | share | longest ms | shape |", "|---|---|---|--:|--:|--:|--:|---|"]
        lines += [f"| {_cell(c.ns)} | {_cell(c.command)} | {_cell(c.plan_summary)} | {c.count:,} | {c.overlap_s:,.1f} | {c.share:.0%} | {c.max_ms:,} | {_code(c.shape or c.query_hash or '')} |"
                  for c in f.culprits]
        lines.append("")
    if f.recommendations:
        lines += ["What to do:", ""] + [f"- {_text(r)}" for r in f.recommendations] + [""]
    return "\n".join(lines)


def write(report: Report, path: Path) -> list[Path]:
    """Writes `path` and its figures; returns every file written. The figures go to a
    folder staged beside the target and the Markdown is replaced whole, so a full disk
    or an interrupt leaves the previous report (or none), never a truncated one."""
    folder = path.with_name(path.stem + "_files")
    stage_prefix = f".{folder.name}."
    sweep(path.parent, stage_prefix, PARTIAL)
    stage = Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{stage_prefix}{os.getpid()}-", suffix=PARTIAL))
    try:
        names = _write(report, path, folder, stage)
        _swap_in(stage, folder)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return [path, *(folder / name for name in names)]


def _swap_in(stage: Path, folder: Path) -> None:
    """`stage` becomes `folder`; an older `folder` is moved aside first and removed."""
    old = None
    if folder.exists():
        old = folder.with_name(f".{folder.name}.{os.getpid()}-old{PARTIAL}")
        folder.rename(old)
    stage.chmod(0o777 & ~_umask())
    stage.rename(folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write(report: Report, path: Path, folder: Path, stage: Path) -> list[str]:
    written = []
    out = [f"# {_text(report.title)}", "", f"> {_text(report.headline)}", "", f"generated {format_time(report.generated)}" + (" · redacted" if report.redacted else ""), ""]
    if report.cross_node:
        out += ["## Across nodes", ""] + [_finding(f, n, None, folder.name) for n, f in enumerate(report.cross_node, 1)]
    for section in report.nodes:
        if len(report.nodes) > 1:
            out += [f"## {_text(section.name)}", "", f"> {_text(section.headline)}", ""]
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
            out += ["### Context and what could not be checked", ""] + [f"- {_text(f.title)}" for _, f in context] + [""]
        # A figure shared by an incident's findings is written once.
        figures = {f.name: f for f in [*section.evidence.values(), *([section.timeline] if section.timeline else [])]}
        for figure in figures.values():
            (stage / figure.name).write_bytes(figure.png)
            written.append(figure.name)
        if section.timeline:
            out += ["## Timeline", "", _figure(section.timeline, folder.name)]
        out += ["## Node", "", "| | |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in section.facts] + [""]
        out += ["## Data coverage", "", "| | |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in section.coverage] + [""]
    out += ["## Methods", ""] + [f"**{k}**: {' '.join(v.split())}\n" for k, v in report.methods]
    with replacing(path) as sink:
        sink.write("\n".join(out).encode("utf-8"))
    return written
