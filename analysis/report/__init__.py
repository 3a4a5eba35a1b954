"""Incident reports: one file a colleague opens and understands in two minutes.

    write_report(build_report([analysis]), "incident.html")   # .html, .md (+ PNG folder) or .json
    write_explorer(explore(analysis, "diagnostic.data", "node"), "node.html")  # every metric on one time axis

`content` decides what the report says (once); `figures` chooses its pictures and `plots` draws them; `html`,
`markdown` and the JSON of `Report.to_dict` render it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from ftdc.atomic import replacing

from ..analyze import Analysis
from ..findings import Finding
from ..nodes import node_name, unfolded
from . import content, explorer_page, figures, html, markdown
from .explorer import Explorer, explore
from .redact import Redactor, redact_all

__all__ = ["FORMATS", "Explorer", "Redactor", "build_report", "explore", "redact_all", "write_explorer", "write_key", "write_report"]

FORMATS = (".html", ".md", ".json")


def build_report(analyses: Iterable[Analysis], cross_node: Iterable[Finding] = (), *, redacted: bool = False) -> content.Report:
    """The report of these nodes. For an attachment, pass analyses from `redact_all` and `redacted=True`.
    The cross-node incidents are told here from the findings given, so a redacted report tells them redacted."""
    analyses, cross_node = list(analyses), list(cross_node)
    names = [node_name(a, i) for i, a in enumerate(analyses)]
    cross_incidents = unfolded(analyses, cross_node) if analyses and cross_node else []
    sections = [content.node_section(a, n, figures.member_names(analyses, a)) for a, n in zip(analyses, names)]
    return content.build(sections, cross_node, cross_incidents, redacted=redacted)


def write_key(redactor: Redactor, path: str | os.PathLike) -> None:
    """The pseudonym -> original map, for the sender to keep."""
    _atomic_write(Path(path), (json.dumps(redactor.key(), indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def _atomic_write(path: Path, data: bytes) -> None:
    with replacing(path) as out:
        out.write(data)


def write_explorer(explorer: Explorer, path: str | os.PathLike) -> Path:
    """Writes the explorer as one self-contained HTML page."""
    path = Path(path)
    _atomic_write(path, explorer_page.page(explorer).encode("utf-8"))
    return path


def write_report(report: content.Report, path: str | os.PathLike) -> list[Path]:
    """Writes `report` in the format the suffix names; returns the files written."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: unsupported report type (use {', '.join(FORMATS)})")
    if suffix == ".html":
        _atomic_write(path, html.render(report).encode("utf-8"))
        return [path]
    if suffix == ".json":
        _atomic_write(path, (json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
        return [path]
    return markdown.write(report, path)
