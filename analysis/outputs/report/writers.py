"""A report built from a run's analyses and written in the format its file's suffix names (HTML, Markdown with its
SVG folder, JSON), and the pseudonym key of a redacted one. `content` decides what it says, `figures` its pictures,
`html` and `markdown` render it."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from analysis.nodes import NodesAnalysis
from analysis.observe import Analysis
from analysis.outputs import workbench
from analysis.outputs.redact import Redactor, redact_result
from analysis.outputs.report import content, figures, html, markdown
from ftdc.atomic import replacing
from ftdc.untrusted import json_embeddable

# `redact_result` is the package's too (`analysis.outputs.report.redact_result`): a redacted report starts with it.
__all__ = ["FORMATS", "Redactor", "build_report", "redact_result", "write_key", "write_report"]


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
