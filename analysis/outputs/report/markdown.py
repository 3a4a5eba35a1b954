"""The report as Markdown, its figures (SVG) in a folder beside it (`report.md` + `report_files/`)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Set as AbstractSet
from pathlib import Path

from analysis.advice import wording
from analysis.advice.recommendation import Recommendation
from analysis.findings.finding import Finding
from analysis.outputs import words
from analysis.outputs.report import slow_chart
from analysis.outputs.report.content import Figure, IncidentCard, Report, node_slug, window
from analysis.outputs.report.culprit_table import HEADERS, NOTE, NUMERIC, cells
from analysis.text import counted, duration, ms, plural
from analysis.workbench.log_overview import (
    LATENCIES,
    NO_SLOW_OPERATIONS,
    NOT_LOGGED,
    NOT_QUOTED,
    TOP_SHAPES,
    apps_text,
    plans_text,
    ratios_text,
    shape_text,
    size_text,
)
from ftdc.atomic import PARTIAL, replacing
from ftdc.leftovers import sweep
from ftdc.timeutil import say_time, say_window
from ftdc.untrusted import printable

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


def _shape(text: str, code: bool) -> str:
    """A shape's cell: the log's text as code, the words saying why there is none as words."""
    return _code(text) if code else _cell(text)


def _figure(figure: Figure, folder: str) -> str:
    return f"![{_cell(figure.caption)}]({folder}/{figure.name})\n"


def _context(f: Finding, offset) -> str:
    """A line of context, with its window as the terminal and the page give it (a gap said without its time was none)."""
    return f"- {_text(f.title)}" + (f": {say_window(f.start, f.end, offset)}" if f.start and f.end else "")


def _finding(f: Finding, figure: Figure | None, folder: str, heading: str = "###", offset=None) -> str:
    lines = [
        f"{heading} {f.id}. {f.severity.upper()}: {_text(f.title)}",
        "",
        f"{_text(words.kind_heading(f.kind, f.resource))} · {window(f.start, f.end, offset)}",
        "",
        _text(f.explanation),
        "",
    ]
    if figure:
        lines.append(_figure(figure, folder))
    if f.culprits:
        lines += ["| " + " | ".join(HEADERS) + " |", "|" + "|".join("--:" if n else "---" for n in NUMERIC) + "|"]
        for c in f.culprits:
            texts = [text for text, _ in cells(c)][:-1]
            lines.append(
                "| " + " | ".join(_cell(t) for t in texts) + f" | {_shape(*shape_text(c.shape, c.query_hash, c.command))} |"
            )
        lines += ["", _text(NOTE), ""]
    return "\n".join(lines + _what_to_do(f.recommendations))


def _what_to_do(recommendations: list[Recommendation]) -> list[str]:
    """The first fixes in order (a handful), then the rest under how many they are."""
    shown, folded = wording.handful(recommendations)
    lines = ["What to do:", ""] + [f"- {_text(wording.text(r))}" for r in shown] + [""] if shown else []
    if folded:
        lines += [f"{len(folded)} more, if those are not enough:", ""] + [f"- {_text(wording.text(r))}" for r in folded] + [""]
    return lines


def _incident(card: IncidentCard, folder: str) -> str:
    i, root = card.incident, card.incident.root_cause
    lines = [
        f"### {i.severity.upper()}: {_text(card.node)} {i.id}. {_text(i.title)}",
        "",
        f"{window(i.start, i.end, card.offset)} · findings {', '.join(i.finding_ids)}",
        "",
        f"**Root cause ({words.cause_kind(root)})**: {_text(root.summary)}",
        "",
    ]
    lines += [f"- {_text(k)}: {_text(v)}" for k, v in words.cause_rows(root, card.offset)]
    lines += [""] + [f"**{heading}**: {_text(cause)}\n" for heading, cause in words.considered(i)]
    lines += ["", _figure(card.figure, folder)] if card.figure else [""]
    lines += (
        ["Chain:", ""]
        + [
            f"{n}. {_text(s.text)} ({', '.join(s.findings)}"
            + (f"; {say_window(s.start, s.end, card.offset)}" if s.start and s.end else "")
            + ")"
            for n, s in enumerate(i.chain, 1)
        ]
        + [""]
    )
    return "\n".join(lines + _what_to_do(i.recommendations))


def _rows(headers: list[str], rows: list[list[str]], numeric: AbstractSet[int] = frozenset()) -> list[str]:
    return (
        ["| " + " | ".join(headers) + " |", "|" + "|".join("--:" if i in numeric else "---" for i in range(len(headers))) + "|"]
        + ["| " + " | ".join(row) + " |" for row in rows]
        + [""]
    )


def _n(value, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def _per_run(total, per_run, say=lambda v: f"{v:,.0f}") -> str:
    return "-" if total is None else f"{say(total)} ({say(per_run) if say is size_text else f'{per_run:,.1f}'})"


def slow_figure_name(section) -> str:
    return f"{node_slug(section.name)}-slow-ops.svg"


def _fenced(text: str) -> list[str]:
    """`text` as a fenced block no backtick run inside it can close."""
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return [fence, text, fence]


def _shape_details(n: int, r: dict) -> list[str]:
    """A shape's plan, shape, ratios and clients as a list item, its slowest lines as the log has them beneath."""
    shape, code = shape_text(r["shape"], r["query_hash"], r["command"])
    if not r["shape"] and not r["query_hash"] and r["command_shape"]:
        said = f"command {_code(printable(r['command_shape']))} (the slowest run's, its values left out)"
    else:
        said = f"shape {_shape(printable(shape), code)}"
    ratio = ratios_text(r)
    lines = [
        f"{n}. {_text(r['ns'])} {_text(r['command'])}: plan {_text(plans_text(r))}; {said}"
        + (f"; examined per document returned: {ratio}" if ratio else "")
        + f"; clients {_text(apps_text(r['apps']))}",
        "",
    ]
    for run in r["slowest"]:
        lines += [
            f"    {say_time(run['at'])} · {ms(run['duration_ms'])} · {_text(run['file'] or 'the log')} line {run['line']}",
            "",
        ]
        quoted = run["log_line"]
        lines += [*("    " + x for x in _fenced(printable(quoted))), ""] if quoted is not None else [f"    {NOT_QUOTED}", ""]
    return lines


def _workbench(section, h: str, folder: str) -> list[str]:
    """The node's slow operations of the whole span, clients and log messages, system panels and configuration audit."""
    out = []
    w = section.workload
    if w is not None:
        out += [f"{h} Slow operations of the whole span", ""]
        if w.queries.is_empty():  # not "0 query shape(s) in the log; the 0 with the most total time" and an empty table
            out += [NO_SLOW_OPERATIONS, ""]
        else:
            out += [
                f"{counted(w.shapes, 'shape')} of slow operations in the log, index builds included; the "
                f"{min(TOP_SHAPES, w.queries.height)} with the most total time "
                "(all of them, up to 500, are in the JSON report):",
                "",
            ]
            top = w.queries.head(TOP_SHAPES)
            rows = [
                [
                    _cell(r["ns"]),
                    _cell((r["command"] or NOT_LOGGED) + (" (COLLSCAN)" if (r["collscan_share"] or 0) > 0 else "")),
                    f"{r['count']:,}",
                    f"{r['total_ms'] / 1000:,.1f}",
                    *(_n(r[k]) for k in LATENCIES),
                    *(_per_run(r[k], r[f"{k}_per_run"]) for k in ("keys_examined", "docs_examined", "nreturned")),
                    _per_run(r["reslen_bytes"], r["reslen_bytes_per_run"], size_text),
                    _n(r["working_ms"] / 1000 if r["working_runs"] else None, ",.1f"),
                    _n(r["queued_ms"] / 1000 if r["working_runs"] else None, ",.1f"),
                ]
                for r in top.iter_rows(named=True)
            ]
            out += _rows(
                [
                    "namespace",
                    "operation",
                    "count",
                    "total s",
                    "min ms",
                    "mean ms",
                    "p50 ms",
                    "p95 ms",
                    "p99 ms",
                    "max ms",
                    "keys examined (a run)",
                    "docs examined (a run)",
                    "returned (a run)",
                    "response (a run)",
                    "working s (8.0)",
                    "queued s (8.0)",
                ],
                rows,
                set(range(2, 16)),
            )
            chart = _slow_figure(section)
            out += [_figure(chart, folder)] if chart is not None else []
            out += ["Each shape of the table, in its order: its plan, shape and clients, and its slowest lines of the log.", ""]
            out += [line for n, r in enumerate(top.iter_rows(named=True), 1) for line in _shape_details(n, r)]
        if w.connections.height:
            out += [f"{h} Connections by application and driver", ""] + _rows(
                ["application", "driver", "connections", "first", "last"],
                [
                    [
                        _cell(r["app"]),
                        _cell(r["driver"]),
                        f"{r['connections']:,}",
                        say_time(r["first"]),
                        say_time(r["last"]),
                    ]
                    for r in w.connections.head(20).iter_rows(named=True)
                ],
                {2},
            )
        if w.messages.height:
            out += [f"{h} Warnings and errors by message", ""] + _rows(
                ["severity", "id", "message", "count", "first", "last"],
                [
                    [
                        r["severity"],
                        str(r["id"] or ""),
                        _cell(r["msg"]),
                        f"{r['count']:,}",
                        say_time(r["first"]),
                        say_time(r["last"]),
                    ]
                    for r in w.messages.head(20).iter_rows(named=True)
                ],
                {3},
            )
    if section.system is not None and section.system.series:
        out += [f"{h} System panels", ""] + ([_figure(section.system_figure, folder)] if section.system_figure else [])
        out += _rows(
            ["panel", "series", "unit", "min", "median", "p95", "max"],
            [
                [
                    _cell(s.panel),
                    _cell(s.label),
                    s.unit,
                    _n(s.min, ",.2f"),
                    _n(s.median, ",.2f"),
                    _n(s.p95, ",.2f"),
                    _n(s.max, ",.2f"),
                ]
                for s in section.system.series
            ],
            {3, 4, 5, 6},
        )
        if section.system.missing:
            out += [f"Not recorded by this node: {_text(section.system.missing_said)}.", ""]
        if section.system.unread:
            out += [
                f"Recorded in Windows' layout, which this version does not read: {_text(', '.join(section.system.unread))}.",
                "",
            ]
    if section.analysis.result.audit:
        out += [f"{h} Configuration audit", "", "Advice on the node's set-up, from its own files; none of it is an incident.", ""]
        out += _rows(
            ["item", "severity", "this node", "recommended", "why it matters", "what to change", "from"],
            [
                [
                    _cell(i.title),
                    i.severity if i.recorded or i.severity == "warning" else "not recorded",
                    _cell(i.has),
                    _cell(i.recommended or "-"),
                    _cell(i.why),
                    _cell(i.change or "-"),
                    _cell(i.source),
                ]
                for i in section.analysis.result.audit
            ],
        )
    return out


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


def _slow_figure(section) -> Figure | None:
    chart = slow_chart.svg(section.workload) if section.workload is not None else None
    return Figure(slow_figure_name(section), "slow operations over time", chart) if chart is not None else None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write(report: Report, path: Path, folder: Path, stage: Path) -> list[str]:
    figures = [
        *(c.figure for c in report.incidents),
        report.members,
        *(f for section in report.nodes for f in (*section.evidence.values(), section.timeline, section.system_figure)),
        *(_slow_figure(section) for section in report.nodes),
    ]
    written = []
    for figure in figures:
        if figure is not None:
            (stage / figure.name).write_text(figure.svg, encoding="utf-8")
            written.append(figure.name)
    out = (
        [f"# {_text(report.title)}", ""]
        + [f"> - {_text(h)}" for h in report.headlines]
        + ([">", f"> {_text(words.sentence(report.no_log))}"] if report.no_log else [])
        + ["", f"generated {say_time(report.generated)}" + (" · redacted" if report.redacted else ""), ""]
    )
    if report.incidents:
        out += ["## Incidents", ""] + [_incident(card, folder.name) for card in report.incidents]
        if report.more_incidents:
            out += [
                f"{len(report.more_incidents)} more, less severe {plural(len(report.more_incidents), 'incident')} (all of them, in full, are in the JSON report):",
                "",
                "| severity | node | start | for | incident |",
                "|---|---|---|---|---|",
            ]
            out += [
                f"| {i.severity} | {_cell(node)} | {say_time(i.start)} | {duration(i.seconds)} | {i.id}. {_cell(i.title)} |"
                for node, i in report.more_incidents
            ] + [""]
    several = len(report.nodes) > 1
    if several:
        out += ["## Replica set", ""] + ([_figure(report.members, folder.name)] if report.members else [])
        out += [
            _finding(f, None, folder.name, offset=report.nodes[0].offset if report.nodes else None) for f in report.cross_node
        ]
    for section in report.nodes:
        h = "###" if several else "##"
        if several:
            out += [f"## {_text(section.name)}", ""]
        out += [f"{h} {section.findings_heading}", ""]
        if not section.carded:
            out += [_text(section.headlines[0]) if several else "No warning or critical finding.", ""]
        out += [
            _finding(section.findings[i], section.evidence.get(i), folder.name, h + "#", section.offset) for i in section.carded
        ]
        if section.listed:
            out += [
                f"{len(section.listed)} more {plural(len(section.listed), 'finding')}, each like one above (all of them, in full, are in the JSON report):",
                "",
                "| severity | start | for | kind | what happened |",
                "|---|---|---|---|---|",
            ]
            out += [
                f"| {f.severity} | {say_time(f.start)} | {duration(f.seconds)} | {_cell(words.kind(f.kind, f.resource))} | {_cell(f.title)} |"
                for f in section.listed
            ] + [""]
        context = [f for f in section.findings if f.severity == "info"]
        if context:
            out += [f"{h} Context and what could not be checked", ""] + [_context(f, section.offset) for f in context] + [""]
        out += _workbench(section, h, folder.name)
        if section.timeline:
            out += [f"{h} Timeline", "", _figure(section.timeline, folder.name)]
        out += [f"{h} Node", "", "| | |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in section.facts] + [""]
        out += (
            [f"{h} Data coverage", "", "| | |", "|---|---|"]
            + [f"| {_cell(k)} | {_cell(v)} |" for k, v in section.coverage]
            + [""]
        )
    out += ["## Methods", ""] + [f"**{k}**: {' '.join(v.split())}\n" for k, v in report.methods]
    with replacing(path) as sink:
        sink.write("\n".join(out).encode("utf-8"))
    return written
