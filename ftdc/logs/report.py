"""The `logs` command's output: what was read, then the top query shapes as a table,
JSON or CSV, or the lines that could not be read.

Kept here so the CLI stays a thin layer over `read_logs` and `summarize_queries`.
"""

from __future__ import annotations

import datetime as dt
import os
import textwrap
from typing import cast

import polars as pl
from rich.markup import escape
from rich.table import Table

from ..timeutil import format_duration, format_time, times_as_text
from ..untrusted import csv_cells, json_printable, printable
from .frames import LogFrames
from .summary import narrowing, queries

SHAPE_WIDTH = 70
PROBLEM_TEXT_WIDTH = 60
WHERE_WIDTH = 40
# What the command reads of a log: the summary's columns, and the files `describe` counts.
NARROWING = narrowing("file")
# Consoles at least this wide also show p95 and docs/returned, then p50 and p99;
# below, plan, query, count, total and max fit 80 columns.
MEDIUM, WIDE = 100, 120


def _mark(summary: pl.DataFrame) -> pl.DataFrame:
    """`collscan`: whether any run of the shape scanned the whole collection."""
    return summary.with_columns(collscan=pl.col("collscan_share") > 0)


def _json(frame: pl.DataFrame) -> str:
    return json_printable(frame.write_json())


def _csv(frame: pl.DataFrame) -> str:
    return printable(csv_cells(frame).write_csv(), keep="\n")


# The machine-readable formats, each a writer of a frame; "table" is the console's.
TEXT_WRITERS = {"json": _json, "csv": _csv}
FORMATS = ("table", *TEXT_WRITERS)


def _as_text(frame: pl.DataFrame, fmt: str) -> str:
    """JSON (one object per row) or CSV, times as ISO-8601 UTC with Z; safe to print (control
    characters escaped) and, as CSV, to open in a spreadsheet (no cell is a formula)."""
    if fmt not in TEXT_WRITERS:
        raise ValueError(f"format must be one of {', '.join(TEXT_WRITERS)}")
    return TEXT_WRITERS[fmt](frame.with_columns(times_as_text(frame.schema)))


def render_text(summary: pl.DataFrame, fmt: str) -> str:
    """The summary as JSON or CSV, for scripts."""
    return _as_text(_mark(summary), fmt)


def render_problems_text(problems: pl.DataFrame, fmt: str) -> str:
    return _as_text(problems, fmt)


def describe(frames: LogFrames, width: int = 80) -> str:
    """What was read, in words: files, nodes, time span, slow operations, COLLSCANs,
    unreadable lines; wrapped between words to `width`, no line ending in spaces."""
    files = pl.concat([frames.slow_ops["file"], frames.events["file"], frames.problems["file"]]).drop_nulls().n_unique()
    nodes = sorted(pl.concat([frames.slow_ops["node"], frames.events["node"]]).drop_nulls().unique().to_list())
    # Datetime columns: their least and greatest are datetimes, or None when empty.
    first = cast("dt.datetime | None", pl.concat([frames.slow_ops["started"], frames.events["ts"]]).min())
    last = cast("dt.datetime", pl.concat([frames.slow_ops["ts"], frames.events["ts"]]).max())
    ops = queries(frames.slow_ops.select("write_statement", "op_type", "plan_kind"))
    scans = int((ops["plan_kind"] == "COLLSCAN").sum())
    lines = [f"{files} file(s) from {_nodes(nodes)}"]
    if first is not None:
        lines.append(f"{format_time(first)} – {format_time(last)} ({format_duration((last - first).total_seconds())})")
    lines.append(f"{ops.height:,} slow operation(s), {scans:,} of them COLLSCAN")
    if frames.problems.height:
        lines.append(f"{frames.problems.height:,} line(s) could not be read; `--problems` lists them")
    return "\n".join(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) for line in lines)


def _nodes(nodes: list[str]) -> str:
    if not nodes:
        return "a node the logs do not name"
    if len(nodes) == 1:
        return nodes[0]
    return f"{len(nodes)} nodes ({', '.join(nodes[:4])}{', ...' if len(nodes) > 4 else ''})"


def problems_warning(problems: pl.DataFrame) -> str | None:
    """One line for stderr when some lines could not be read: how many, and the first."""
    if not problems.height:
        return None
    first = problems.row(0, named=True)
    return f"{problems.height:,} line(s) could not be read; the first: {first['file']}:{first['line']}: {first['reason']}"


def render_table(summary: pl.DataFrame, width: int = 80) -> Table:
    """A rich table that fits a console `width` columns wide: each query (node when there
    are several, namespace, command, and its shape below) gets the room the numbers leave;
    COLLSCAN shapes get a red marker with their share of runs under it."""
    table = Table()
    table.add_column("plan", no_wrap=True)
    table.add_column("query", overflow="fold", min_width=24, ratio=1)
    numbers = ["count", "total ms", "max"]
    if width >= MEDIUM:
        numbers[2:2] = ["p95"]
        numbers.append("docs/ret")
    if width >= WIDE:
        numbers[2:2] = ["p50"]
        numbers[4:4] = ["p99"]
    for name in numbers:
        table.add_column(name, justify="right", no_wrap=True)
    for row in _mark(summary).iter_rows(named=True):
        shape = row["shape"] or ""
        if len(shape) > SHAPE_WIDTH:
            shape = shape[: SHAPE_WIDTH - 1] + "…"
        plan = escape(row["plan_kinds"] or "")
        if row["collscan"]:
            plan = f"[red]COLLSCAN[/red]\n{100 * row['collscan_share']:.0f} % of runs"
        ratio = row["docs_examined_per_returned"]
        cells = {
            "count": _number(row["count"]),
            "total ms": _number(row["total_ms"]),
            "p50": _number(row["p50_ms"]),
            "p95": _number(row["p95_ms"]),
            "p99": _number(row["p99_ms"]),
            "max": _number(row["max_ms"]),
            "docs/ret": "" if ratio is None else f"{ratio:.1f}",
        }
        node = f"[bold]{escape(row['node'] or 'unnamed node')}[/bold]\n" if "node" in row else ""
        query = f"{node}{escape(row['ns'] or '')} {escape(row['command'] or '')}" + (
            f"\n[dim]{escape(shape)}[/dim]" if shape else ""
        )
        table.add_row(plan, query, *(cells[name] for name in numbers))
    return table


def _number(value: float | None) -> str:
    """`1,234`; "-" when no run of the shape logged a usable duration."""
    return "-" if value is None else f"{value:,.0f}"


def render_problems_table(problems: pl.DataFrame) -> Table:
    """The unreadable lines: where each is, why, and how it starts. Files are named
    from the folder they share, given once in the title, so a deep path does not
    fold into a narrow column."""
    folder = _shared_folder(problems["file"].drop_nulls().unique().to_list())
    table = Table(title=f"in {escape(folder)}" if folder else None)
    places = [
        _relative(row["file"] or "", folder) + f":{row['line']}" for row in problems.select("file", "line").iter_rows(named=True)
    ]
    # A place stays on one line while it fits in half an 80-column console.
    table.add_column("where", overflow="fold", width=min(max(map(len, places), default=5), WHERE_WIDTH))
    table.add_column("reason", overflow="fold")
    table.add_column("text", overflow="fold", ratio=1)
    for place, row in zip(places, problems.iter_rows(named=True)):
        text = row["text"] or ""
        if len(text) > PROBLEM_TEXT_WIDTH:
            text = text[: PROBLEM_TEXT_WIDTH - 1] + "…"
        table.add_row(escape(place), escape(row["reason"] or ""), escape(text))
    return table


def _relative(file: str, folder: str) -> str:
    return file[len(folder) + 1 :] if folder and file.startswith(folder + "/") else file


def _shared_folder(files: list[str]) -> str:
    """The deepest folder holding every file ('' when they share none)."""
    try:
        return os.path.commonpath([os.path.dirname(f) for f in files]) if files else ""
    except ValueError:  # absolute and relative names mixed
        return ""
