"""The `logs` command's output: top query shapes as a table, JSON or CSV.

Kept here so the CLI stays a thin layer over `read_logs` and `summarize_queries`.
"""

import polars as pl
from rich.markup import escape
from rich.table import Table

FORMATS = ("table", "json", "csv")
SHAPE_WIDTH = 70
# Consoles at least this wide also show p50 and p99.
WIDE = 110


def _mark(summary: pl.DataFrame) -> pl.DataFrame:
    """`collscan`: whether any run of the shape scanned the whole collection."""
    return summary.with_columns(collscan=pl.col("collscan_share") > 0)


def render_text(summary: pl.DataFrame, fmt: str) -> str:
    """The summary as JSON (one object per shape) or CSV, for scripts."""
    marked = _mark(summary)
    if fmt == "json":
        return marked.write_json()
    if fmt == "csv":
        return marked.write_csv()
    raise ValueError(f"format must be one of {', '.join(FORMATS)}")


def render_table(summary: pl.DataFrame, problems: int, width: int = 120) -> Table:
    """A rich table for a console `width` columns wide: each query (namespace,
    command, and its shape below) gets the room left by the numbers; COLLSCAN
    shapes get a red marker and their share of runs; p50/p99 need a wide console."""
    caption = f"{problems} unreadable line(s): see LogFrames.problems" if problems else None
    table = Table(title="Top query shapes", caption=caption)
    table.add_column("plan", no_wrap=True)
    table.add_column("query", overflow="fold", min_width=24, ratio=1)
    numbers = ["count", "total ms", "p95", "max", "docs/ret"]
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
            plan = f"[red]COLLSCAN {row['collscan_share']:.0%}[/red]"
        ratio = row["docs_examined_per_returned"]
        cells = {
            "count": f"{row['count']:,}",
            "total ms": f"{row['total_ms']:,}",
            "p50": f"{row['p50_ms']:.0f}",
            "p95": f"{row['p95_ms']:.0f}",
            "p99": f"{row['p99_ms']:.0f}",
            "max": f"{row['max_ms']:,}",
            "docs/ret": "" if ratio is None else f"{ratio:.1f}",
        }
        query = f"{escape(row['ns'] or '')} {escape(row['command'] or '')}" + (f"\n[dim]{escape(shape)}[/dim]" if shape else "")
        table.add_row(plan, query, *(cells[name] for name in numbers))
    return table
