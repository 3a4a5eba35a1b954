"""The `logs` command's output: top query shapes as a table, JSON or CSV.

Kept here so the CLI stays a thin layer over `read_logs` and `summarize_queries`.
"""

import polars as pl
from rich.markup import escape
from rich.table import Table

FORMATS = ("table", "json", "csv")
SHAPE_WIDTH = 70


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


def render_table(summary: pl.DataFrame, problems: int) -> Table:
    """A rich table; COLLSCAN shapes get a red marker and their share of runs."""
    caption = f"{problems} unreadable line(s): see LogFrames.problems" if problems else None
    table = Table(title="Top query shapes", caption=caption)
    table.add_column("scan", no_wrap=True)
    for name in ("ns", "command", "shape"):
        table.add_column(name, overflow="fold")
    for name in ("count", "total ms", "p50", "p95", "p99", "max", "docs/ret"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("plans", overflow="fold")
    for row in _mark(summary).iter_rows(named=True):
        shape = row["shape"] or ""
        if len(shape) > SHAPE_WIDTH:
            shape = shape[: SHAPE_WIDTH - 1] + "…"
        ratio = row["docs_examined_per_returned"]
        table.add_row(
            f"[red]COLLSCAN {row['collscan_share']:.0%}[/red]" if row["collscan"] else "",
            escape(row["ns"] or ""),
            escape(row["command"] or ""),
            escape(shape),
            f"{row['count']:,}",
            f"{row['total_ms']:,}",
            f"{row['p50_ms']:.0f}",
            f"{row['p95_ms']:.0f}",
            f"{row['p99_ms']:.0f}",
            f"{row['max_ms']:,}",
            "" if ratio is None else f"{ratio:.1f}",
            row["plan_kinds"] or "",
        )
    return table
