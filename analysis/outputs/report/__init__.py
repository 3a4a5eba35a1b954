"""Incident reports: one file a colleague opens and understands in two minutes.

    write_report(build_report([analysis]), "incident.html")   # .html, .md (+ SVG folder) or .json
    write_explorer(explore(analysis, "diagnostic.data", "node"), "node.html")  # every metric on one time axis

`content` decides what the report says (once); `figures` chooses its pictures and `plots` draws them; `html`,
`markdown` and the JSON of `Report.to_dict` render it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Optional

from analysis.analyze import Analysis
from analysis.nodes import NodesAnalysis
from analysis.outputs import workbench
from analysis.outputs.redact import Redactor, redact_result
from analysis.outputs.report import content, explorer_page, figures, html, markdown
from analysis.outputs.report.explorer import Explorer, explore
from ftdc.atomic import replacing
from ftdc.untrusted import json_embeddable

__all__ = [
    "FORMATS",
    "Explorer",
    "Redactor",
    "build_report",
    "explore",
    "redact_result",
    "write_explorer",
    "write_key",
    "write_report",
]


def build_report(
    nodes: NodesAnalysis | Iterable[Analysis], *, redacted: bool = False, generated: dt.datetime | None = None
) -> content.Report:
    """The report of a result as composed (`analyze_nodes`), or of analyses each of one node alone (`analyze`): it
    renders what it is given and composes nothing. For an attachment, pass what `redact_result` returns and
    `redacted=True`."""
    result = nodes if isinstance(nodes, NodesAnalysis) else NodesAnalysis(list(nodes))
    sections = [
        content.node_section(a, n, figures.member_names(result.nodes, a), bench, result.cross_node)
        for a, n, bench in zip(result.nodes, result.names, workbench.of_run(result.nodes))
    ]
    return content.build(
        sections, result.cross_node, result.incidents, redacted=redacted, generated=generated, no_log=result.no_log
    )


def write_key(redactor: Redactor, path: str | os.PathLike) -> None:
    """The pseudonym -> original map, for the sender to keep."""
    _atomic_write(Path(path), (json.dumps(redactor.key(), indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def _atomic_write(path: Path, data: bytes) -> None:
    with replacing(path) as out:
        out.write(data)


def write_explorer(explorer: Explorer | Sequence[Explorer], path: str | os.PathLike) -> Path:
    """Writes the explorer of a node, or of several nodes, as one self-contained HTML page."""
    path = Path(path)
    _atomic_write(path, explorer_page.page(explorer).encode("utf-8"))
    return path


def _write_html(report: content.Report, path: Path) -> list[Path]:
    _atomic_write(path, html.render(report).encode("utf-8"))
    return [path]


def _write_json(report: content.Report, path: Path) -> list[Path]:
    # The log's own lines are quoted: markup in them is escaped, so a page embedding the document stays whole.
    text = json_embeddable(json.dumps(report.to_dict(), indent=1, ensure_ascii=False))
    _atomic_write(path, (text + "\n").encode("utf-8"))
    return [path]


# Each report format's writer, by the file's suffix: `report` to `path`, returning every file written.
WRITERS: dict[str, Callable[[content.Report, Path], list[Path]]] = {
    ".html": _write_html,
    ".md": markdown.write,
    ".json": _write_json,
}
FORMATS = tuple(WRITERS)


def write_report(report: content.Report, path: str | os.PathLike) -> list[Path]:
    """Writes `report` in the format the suffix names; returns the files written."""
    path = Path(path)
    writer = WRITERS.get(path.suffix.lower())
    if writer is None:
        raise ValueError(f"{path}: unsupported report type (use {', '.join(FORMATS)})")
    return writer(report, path)
