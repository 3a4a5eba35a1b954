"""`ftdc-analyze`: a thin command line over the `ftdc` and `analysis` APIs.

    ftdc-analyze PATH [--log FILE ...]         summary of the node and the data, then findings
    ftdc-analyze metrics PATH [--match GLOB]   metric names, types, time seen
    ftdc-analyze export PATH --out FILE        Parquet or CSV, bounded memory
"""

from __future__ import annotations

import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import polars as pl
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

import analysis
import ftdc
from analysis.analyze import STAGES
from analysis.console import findings_table, render_findings
from analysis.report import FORMATS as REPORT_FORMATS
from analysis.report import Redactor, build_report, redact_all, write_key, write_report
from analysis.overview import Overview
from ftdc.inputs import gather
from ftdc.select import select_names

EXIT_BAD_INPUT = 2
out = Console()
err = Console(stderr=True)


class DefaultToSummary(TyperGroup):
    """`ftdc-analyze PATH` means `ftdc-analyze summary PATH`."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["summary", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=DefaultToSummary,
    help="Offline diagnostics for MongoDB: FTDC (diagnostic.data) and mongod logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input ends with one line and exit code 2; damage warnings print one line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ftdc.FTDCWarning)
        try:
            yield
        except (ftdc.FTDCError, ValueError, OSError) as e:
            err.print(f"error: {e}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        finally:
            # Several passes over one file report the same damage; say it once.
            messages = dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, ftdc.FTDCWarning))
            for message in messages:
                err.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] * bool(days) + [f"{hours}h"] * bool(hours) + [f"{minutes}m"] * bool(minutes)
    return " ".join(parts + [f"{secs}s"] * (bool(secs) or not parts))


def _periods(periods: dict[int, int]) -> str:
    total = sum(periods.values()) or 1
    shown = [(p, n) for p, n in periods.items() if n / total >= 0.01][:4]
    return ", ".join(f"{p / 1000:g} s ({100 * n / total:.0f} %)" for p, n in shown) or "-"


def render_overview(view: Overview) -> Table:
    node = view.node
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("node", node.address or "unknown"),
        ("version", node.version or "-"),
        ("replica set", node.replica_set or "-"),
        ("host", f"{node.os or '-'}, {node.cpus or '-'} cores, {node.memory_mb or '-'} MB"),
        ("storage", f"{node.storage_engine or '-'}, cacheSizeGB {node.cache_size_gb if node.cache_size_gb is not None else 'default'}"),
        ("time range", f"{view.first} .. {view.last} ({_duration((view.last - view.first).total_seconds())})" if view.first else "-"),
        ("samples", f"{view.samples:,} in {view.files} file(s)"),
        ("sampling period", _periods(view.periods_ms)),
        ("metrics", f"{view.metrics:,}"),
        ("chunks", f"{view.chunks:,}, {view.schema_changes} schema change(s)"),
        ("gaps > 2 periods", str(len(view.gaps))),
        ("restarts", str(len(view.restarts))),
    ]
    for key, value in rows:
        table.add_row(key, value)
    for gap in view.gaps[:10]:
        table.add_row("  gap", f"{gap.start} .. {gap.end} ({_duration(gap.seconds) if gap.seconds >= 1 else f'{gap.seconds:.1f}s'})")
    if len(view.gaps) > 10:
        table.add_row("", f"... {len(view.gaps) - 10} more")
    for restart in view.restarts:
        table.add_row("  restart", str(restart))
    return table


@app.command()
def summary(
    paths: List[Path] = typer.Argument(..., help="diagnostic.data directories (or dbpaths, FTDC files, .tar/.tar.gz/.zip support bundles): one or several nodes"),
    log: Optional[List[Path]] = typer.Option(None, "--log", "-l", help="mongod log file, directory or archive (repeatable): names the operations behind each finding"),
    start: Optional[str] = typer.Option(None, help="analyse from this time (ISO-8601, UTC if no offset)"),
    end: Optional[str] = typer.Option(None, help="analyse up to this time"),
    as_json: bool = typer.Option(False, "--json", help="print node, summary, thresholds and findings as JSON"),
    report: Optional[Path] = typer.Option(None, "--report", help="write an incident report: .html (self-contained), .md (+ PNG folder) or .json"),
    redact: bool = typer.Option(False, "--redact", help="hosts, IPs, users, replica sets and namespaces as pseudonyms; query shapes, never values"),
    redact_key: Optional[Path] = typer.Option(None, "--redact-key", help="with --redact: write the pseudonym -> original map here (keep it; do not attach it)"),
) -> None:
    """Summarise each node and its data, then what went wrong: findings with their window, evidence, culprits and fixes."""
    with user_errors():
        if report is not None and report.suffix.lower() not in REPORT_FORMATS:
            raise ValueError(f"{report}: unsupported report type (use {', '.join(REPORT_FORMATS)})")
        found = gather(paths)
        if not found.ftdc:
            raise ftdc.FTDCError(f"{', '.join(map(str, paths))}: no FTDC (diagnostic.data) in it"
                                 + ("; these are mongod logs: use `ftdc-analyze logs`" if found.logs else ""))
        logs = [*found.logs, *(log or [])] or None
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
            task = bar.add_task("reading", total=len(STAGES) * len(found.ftdc))
            result = analysis.analyze_nodes(found.ftdc, logs, start=start, end=end,
                                            progress=lambda stage: bar.update(task, advance=1, description=f"read {stage}"))
        if redact_key is not None and not redact:
            raise ValueError("--redact-key needs --redact")
        if redact:
            redactor = Redactor()
            result.nodes, result.cross_node = redact_all(result.nodes, result.cross_node, redactor)
            if redact_key is not None:
                write_key(redactor, redact_key)
        if report is not None:
            written = write_report(build_report(result.nodes, result.cross_node, redacted=redact), report)
    several = len(result.nodes) > 1
    if as_json:
        out.print_json(json.dumps(result.to_dict() if several else result.nodes[0].to_dict()))
    else:
        if several and result.cross_node:
            out.print(findings_table(result.cross_node, out.width, title="Across nodes"))
        for name, node in zip(result.names, result.nodes):
            if several:
                out.rule(name)
            out.print(render_overview(node.overview))
            out.print(render_findings(node, out.width))
    if report is not None:
        err.print(f"wrote {', '.join(str(p) for p in written[:1])}" + (f" and {len(written) - 1} image(s)" if len(written) > 1 else ""),
                  markup=False, highlight=False)


@app.command()
def metrics(
    path: Path = typer.Argument(..., help="diagnostic.data directory or FTDC file"),
    match: Optional[str] = typer.Option(None, "--match", "-m", help="glob on metric names, e.g. 'serverStatus.wiredTiger.cache.*'"),
) -> None:
    """List metric names with their type and the time span they were seen in."""
    with user_errors():
        names = ftdc.list_metrics(path)
        if match:
            chosen = set(select_names([match], names["name"].to_list()))
            names = names.filter(pl.col("name").is_in(chosen))
    # Tab-separated for scripts: name, dtype, first seen, last seen.
    for name, dtype, first, last in names.iter_rows():
        typer.echo(f"{name}\t{dtype}\t{first}\t{last}")


@app.command()
def export(
    path: Path = typer.Argument(..., help="diagnostic.data directory or FTDC file"),
    out_file: Path = typer.Option(..., "--out", "-o", help="output file: .parquet or .csv"),
    metric: Optional[List[str]] = typer.Option(None, "--metrics", help="metric names or globs (repeatable)"),
    start: Optional[str] = typer.Option(None, help="inclusive start time (ISO-8601, UTC if no offset)"),
    end: Optional[str] = typer.Option(None, help="inclusive end time"),
) -> None:
    """Export samples to Parquet (zstd) or CSV, streaming with bounded memory."""
    writers = {".parquet": ftdc.to_parquet, ".csv": ftdc.to_csv}
    writer = writers.get(out_file.suffix.lower())
    if writer is None:
        err.print(f"error: {out_file}: unsupported output type (use .parquet or .csv)", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    with user_errors():
        with Progress(TextColumn("exporting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
            task = bar.add_task("export", total=None)
            rows = writer(path, out_file, metric or None, start, end, progress=lambda done, total: bar.update(task, completed=done, total=total))
    err.print(f"wrote {rows:,} rows to {out_file}")


@app.command()
def logs(
    paths: List[Path] = typer.Argument(..., help="mongod log files, directories or .tar/.tar.gz archives"),
    start: Optional[str] = typer.Option(None, help="keep operations running at or after this time (ISO-8601, UTC if no offset)"),
    end: Optional[str] = typer.Option(None, help="keep operations that started at or before this time"),
    top: int = typer.Option(20, help="number of query shapes to show"),
    sort: str = typer.Option("total", help="order by: total, p95 or count"),
    fmt: str = typer.Option("table", "--format", help="table, json or csv"),
) -> None:
    """Top slow-query shapes of mongod logs (JSON 4.4+ or text 2.2-4.2), COLLSCAN shapes marked."""
    from ftdc.logs import report

    if sort not in ftdc.logs.summary.SORT_KEYS or fmt not in report.FORMATS:
        err.print("error: --sort must be total, p95 or count; --format table, json or csv", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    with user_errors():
        with Progress(TextColumn("reading logs"), BarColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
            task = bar.add_task("logs", total=None)
            frames = ftdc.read_logs(
                paths, start, end, workers=None, progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
        summary = ftdc.summarize_queries(frames.slow_ops, sort=sort).head(top)
    if fmt == "table":
        out.print(report.render_table(summary, frames.problems.height, out.width))
    else:
        typer.echo(report.render_text(summary, fmt))


def main() -> None:
    app()


if __name__ == "__main__":
    sys.exit(main())
