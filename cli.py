"""`ftdc-analyze`: a thin command line over the `ftdc` and `analysis` APIs.

ftdc-analyze PATH [--log FILE ...]         summary of the node and the data, then findings
ftdc-analyze metrics PATH [--match GLOB]   metric names, types, time seen
ftdc-analyze export PATH --out FILE        Parquet or CSV, bounded memory
ftdc-analyze fleet PATH... --out DIR       many nodes' findings and series into a Parquet dataset
ftdc-analyze explore PATH... -o x.html  every metric of a node (or of each node) on one zoomable time axis, offline
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.text import Text
from typer.core import TyperGroup

# Only what defining the commands needs is imported here (`ftdc` names load when used):
# each command imports the rest itself, so `--version` and `--help` start without polars,
# pyarrow, matplotlib or Spark (tests/test_cli_startup.py).
import ftdc
from ftdc.errors import UnmatchedMetric, no_samples
from ftdc.inputs import Inputs, as_shown, gather, plan_logs, what_was_found
from ftdc.memory import hand_back_freed_pages, imports_kept
from ftdc.terminal import Terminal
from ftdc.threads import no_blas_threads
from ftdc.timeutil import TIME_HELP, format_time_expr, time_range
from ftdc.untrusted import printable

EXIT_BAD_INPUT = 2
# Every line for a person goes through these two: input's control characters shown, never acted on.
out = Terminal()
err = Terminal(stderr=True)


class DefaultToSummary(TyperGroup):
    """`ftdc-analyze PATH` means `ftdc-analyze summary PATH`."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["summary", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=DefaultToSummary,
    help=(
        "Offline diagnostics for MongoDB: FTDC (diagnostic.data) and mongod logs.\n\n"
        "ftdc-analyze PATH [--log FILE ...] [--report FILE] is the summary command without its name: "
        "what the data covers, then what went wrong and what to change."
    ),
    no_args_is_help=True,
    subcommand_metavar="PATH... | COMMAND [ARGS]...",
    add_completion=False,
    pretty_exceptions_enable=False,
    # Every table and error line is written for a person; Typer's framed help must not hide that.
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # 24 ms: only for the command that says it

        typer.echo(f"ftdc-analyze {version('ftdc-analyze')}")
        raise typer.Exit()


@app.callback()
def main_options(
    show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version and exit"),
) -> None:
    """Offline diagnostics for MongoDB: FTDC (diagnostic.data) and mongod logs."""


class Terminated(SystemExit):
    """SIGTERM, raised where the program is, so that unwinding removes `.partial` outputs."""


@contextmanager
def user_errors(writing: Path | None = None) -> Iterator[None]:
    """Bad input ends with one line and exit code 2; damage warnings print one line each.
    A metric name or glob that matches nothing, a warning in the library, is an error here:
    raised where the library selects metrics, before anything is written. Stopped by SIGTERM
    while `writing` an output, one line says so (what was written half is already gone)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ftdc.FTDCWarning)
        warnings.simplefilter("always", ftdc.LogWarning)
        warnings.simplefilter("error", UnmatchedMetric)
        try:
            yield
        except Terminated:
            if writing is not None:
                err.print(
                    f"error: {writing}: stopped by SIGTERM before it was complete; nothing half-written is left there",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
            raise
        except (ftdc.FTDCError, UnmatchedMetric, ValueError, OSError, EOFError) as e:
            _print_warnings(caught)  # what was wrong along the way, then why it stopped: the last line
            err.print(f"error: {as_shown(_one_line(e))}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_BAD_INPUT) from e
        _print_warnings(caught)


def _one_line(e: Exception) -> str:
    """The error as one line naming its file: `x.log: permission denied`, never `[Errno 13] ...`."""
    if isinstance(e, OSError) and e.strerror:
        where = e.filename if e.filename is not None else ""
        return f"{where}: {e.strerror[:1].lower()}{e.strerror[1:]}" if where else e.strerror
    if isinstance(e, EOFError):
        return f"the input ends early ({e})" if str(e) else "the input ends early"
    return str(e)


def _print_warnings(caught: list[warnings.WarningMessage]) -> None:
    # Several passes over one file report the same damage; say it once.
    messages = dict.fromkeys(
        as_shown(str(w.message)) for w in caught if issubclass(w.category, (ftdc.FTDCWarning, ftdc.LogWarning))
    )
    for message in messages:
        err.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)


class _Unwatched:
    """A progress bar no terminal watches: it draws nothing and costs no import of rich.progress."""

    def __enter__(self) -> _Unwatched:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, *args, **kwargs) -> int:
        return 0

    def update(self, *args, **kwargs) -> None:
        return None


def progress_bar(text: str):
    """A progress bar on stderr, `text` (a rich format of the task, e.g. "{task.description}") before it, while a
    terminal watches; nothing at all (not even a blank line) when stderr is a file or a pipe."""
    if not err.is_terminal:
        return _Unwatched()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(text), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True)


def _gathered(paths) -> Inputs:
    """What the paths hold (`gather`), with what a user should know of it said first: the nodes found below a folder,
    a metrics file read without the rest of its folder."""
    found = gather(paths)
    for text in what_was_found(paths, found):
        _note(text)
    return found


def _freed_pages_for_a_log(paths: list[Path], given: list[Path], no_log: bool = False) -> None:
    """Has polars' allocator hand freed pages back at once where the run will read a large log (`_freed_pages_for`):
    a log passes through polars block by block, and pages kept for a while added up to a peak of several times a
    block. A run of FTDC alone keeps polars' own decay: its frames are few and large, and pages handed back were
    faulted in again, a sixth of a small summary's page faults. Asked of the one log policy (`plan_logs`) before
    anything loads polars; what is wrong with the paths is said by the run itself, once."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = gather(paths)
            reads = plan_logs(paths, found, given, no_log).paths
    except (ftdc.FTDCError, ValueError, OSError, EOFError):
        return
    _freed_pages_for(reads)


# Logs of less than this pass through polars in a block or two (`ftdc.logs.sources.BLOCK_BYTES`): the pages polars keeps
# a while after each add up to little, and handed back at once they were faulted in again, as a run of FTDC alone
# would fault them: the demo node's summary with its 63 KB log took 1.06 x the time (0.534 s against 0.506 s).
HAND_BACK_FROM_BLOCKS = 2


def _freed_pages_for(logs: list[Path]) -> None:
    """Has polars' allocator hand freed pages back at once (`hand_back_freed_pages`) for a run that reads `logs`, unless
    they are plain files of less than HAND_BACK_FROM_BLOCKS of the reader's blocks (a folder, an archive or a
    compressed log counts as large: its size on disk says little of what passes through)."""
    if not logs:
        return
    from ftdc.logs.sources import BLOCK_BYTES, plain_bytes

    size = plain_bytes(logs)
    if size is None or size >= HAND_BACK_FROM_BLOCKS * BLOCK_BYTES:
        hand_back_freed_pages()


def _note(text: str) -> None:
    """What a user should know of what their paths held (`ftdc.inputs.what_was_found`), said before the long part."""
    err.print(f"note: {text}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def summary(
    paths: list[Path] = typer.Argument(
        ..., help="diagnostic.data directories (or dbpaths, FTDC files, .tar/.tar.gz/.zip support bundles): one or several nodes"
    ),
    log: list[Path] | None = typer.Option(
        None, "--log", "-l", help="mongod log file, directory or archive (repeatable): names the operations behind each finding"
    ),
    start: str | None = typer.Option(None, help=f"analyse from this time ({TIME_HELP})"),
    end: str | None = typer.Option(None, help="analyse up to this time"),
    as_json: bool = typer.Option(
        False, "--json", help="print the JSON report (the document --report x.json writes): nodes, incidents, findings"
    ),
    list_findings: bool = typer.Option(
        False, "--findings", help="list the individual findings instead of the incidents they make up"
    ),
    report: Path | None = typer.Option(
        None, "--report", help="write an incident report: .html (self-contained), .md (+ PNG folder) or .json"
    ),
    redact: bool = typer.Option(
        False,
        "--redact",
        help="hosts, IPs, users, replica sets, namespaces and application names as pseudonyms; query shapes, never values",
    ),
    redact_key: Path | None = typer.Option(
        None, "--redact-key", help="with --redact: write the pseudonym -> original map here (keep it; do not attach it)"
    ),
    no_log: bool = typer.Option(False, "--no-log", help="do not read the log found beside diagnostic.data"),
) -> None:
    """Summarise each node and its data, then what went wrong: incidents with their root cause, chain of evidence and fixes."""
    _freed_pages_for_a_log(paths, log or [], no_log)
    import analysis  # the package alone: `analysis.run` imports the stages once it has started a small node's decode

    with user_errors():
        if report is not None:  # the report's modules only for a report (tests/test_cli_startup.py)
            with imports_kept():
                from analysis.outputs.report import FORMATS as REPORT_FORMATS

            if report.suffix.lower() not in REPORT_FORMATS:
                raise ValueError(f"{report}: unsupported report type (use {', '.join(REPORT_FORMATS)})")
        if redact_key is not None and not redact:
            raise ValueError("--redact-key needs --redact")
        with progress_bar("{task.description}") as bar:
            task = bar.add_task("reading", total=None)
            ran = analysis.run(
                paths,
                log or [],
                no_log=no_log,
                start=start,
                end=end,
                redact=redact,
                progress=lambda done, total, what: bar.update(task, completed=done, total=total, description=what),
                note=_note,
            )
        result, beside, note = ran.result, ran.beside, ran.looked
        from analysis import text
        from analysis.outputs.console import findings_table, render_findings, render_incidents, render_overview

        if ran.redactor is not None and redact_key is not None:
            from analysis.outputs.report import write_key

            write_key(ran.redactor, redact_key)
        # One time for both: `--json` prints the document `--report x.json` writes.
        generated = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        built = None
        if report is not None:
            from analysis.outputs.report import build_report, write_report

            built = build_report(result, redacted=redact, generated=generated)
            written = write_report(built, report)
    several = len(result.nodes) > 1
    if as_json:
        from analysis.outputs.document import result_document

        # The report's own document where one was built: its workbenches are not built again.
        document = built.to_dict() if built is not None else result_document(result, redacted=redact, generated=generated)
        out.print_json(json.dumps(document))
    else:
        if several and result.cross_node:
            out.print(findings_table(result.cross_node, out.width, title="Across nodes"))
        for name, node in zip(result.names, result.nodes):
            if several:
                out.rule(Text(name))
            out.print(render_overview(node.result.overview, out.width), markup=False, highlight=False, soft_wrap=True)
            if list_findings:
                out.print(render_findings(node.result, out.width))
            else:
                out.print(render_incidents(node.result, out.width, result.cross_node), soft_wrap=not node.result.incidents)
    if beside:
        err.print(
            f"read the log found beside the FTDC: {', '.join(map(str, beside))} (--log names another)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    elif note is not None:
        err.print(note, markup=False, highlight=False, soft_wrap=True)
    if report is not None:
        err.print(
            f"wrote {', '.join(str(p) for p in written[:1])}"
            + (f" and {text.counted(len(written) - 1, 'image')}" if len(written) > 1 else ""),
            markup=False,
            highlight=False,
        )


@app.command()
def metrics(
    path: Path = typer.Argument(..., help="diagnostic.data directory or FTDC file"),
    match: str | None = typer.Option(None, "--match", "-m", help="glob on metric names, e.g. 'serverStatus.wiredTiger.cache.*'"),
) -> None:
    """List metric names with their type and the time span they were seen in."""
    import polars as pl

    from ftdc.select import select_names, warn_unmatched

    with user_errors():
        names = ftdc.list_metrics(path)
        if match:
            warn_unmatched([match], names["name"].to_list())
            chosen = set(select_names([match], names["name"].to_list()))
            names = names.filter(pl.col("name").is_in(chosen))
    # Tab-separated for scripts: name, dtype, first seen, last seen; one line per metric whatever its name holds.
    for row in names.with_columns(format_time_expr(pl.col("first_seen", "last_seen"))).iter_rows():
        typer.echo("\t".join(printable(str(field), keep="") for field in row))


@app.command()
def export(
    paths: list[Path] = typer.Argument(..., help="diagnostic.data directories, FTDC files, dbpaths or support bundles"),
    out_file: Path | None = typer.Option(None, "--out", "-o", help="one node's samples to one file: .parquet or .csv"),
    dataset: Path | None = typer.Option(
        None,
        "--dataset",
        help="every node's samples to a Parquet dataset here (samples/family=/node=/date=, nodes/): new, or one to add nodes and days to",
    ),
    metric: list[str] | None = typer.Option(None, "--metrics", help="metric names or globs (repeatable)"),
    start: str | None = typer.Option(None, help=f"inclusive start time ({TIME_HELP})"),
    end: str | None = typer.Option(None, help="inclusive end time"),
) -> None:
    """Export samples to Parquet (zstd), CSV or a Parquet dataset of many nodes, streaming with bounded memory."""
    writers = {".parquet": ftdc.to_parquet, ".csv": ftdc.to_csv}
    with user_errors(writing=dataset if dataset is not None else out_file):
        if (out_file is None) == (dataset is None):
            raise ValueError("give --out FILE or --dataset DIR")
        if out_file is not None and out_file.suffix.lower() not in writers:
            raise ValueError(f"{out_file}: unsupported output type (use .parquet or .csv)")
        nodes = _gathered(paths).nodes(paths)
        if out_file is not None and len(nodes) > 1:
            raise ftdc.FTDCError(f"{len(nodes)} nodes found; --out writes one node's samples: use --dataset DIR for several")
        with progress_bar("exporting") as bar:
            task = bar.add_task("export", total=None)
            advance = lambda done, total: bar.update(task, completed=done, total=total)  # noqa: E731
            if dataset is not None:
                from analysis import text

                facts = ftdc.to_dataset(nodes, dataset, metric or None, start, end, progress=advance)
                rows, target = int(facts["samples"].sum()), f"{dataset} ({text.counted(facts.height, 'node')})"
            else:
                rows, target = (
                    writers[out_file.suffix.lower()](nodes[0], out_file, metric or None, start, end, progress=advance),
                    out_file,
                )
        if rows == 0:  # a new dataset holding no row (an --out export refuses before replacing the file)
            raise no_samples(", ".join(map(str, paths)), None, *time_range(start, end))
    err.print(f"wrote {rows:,} rows to {target}", markup=False, highlight=False)


@app.command()
def explore(
    paths: list[Path] = typer.Argument(
        ...,
        help="a node's diagnostic.data directory (or dbpath, FTDC file, support bundle), or several nodes (a replica set): "
        "one page, a panel may draw one metric of every node",
    ),
    out_file: Path | None = typer.Option(
        None, "--out", "-o", help="the page to write (.html): self-contained, opens offline (or --serve)"
    ),
    log: list[Path] | None = typer.Option(
        None,
        "--log",
        "-l",
        help="mongod log file, directory or archive (repeatable): its checkpoints and culprits shape the incidents drawn",
    ),
    metric: list[str] | None = typer.Option(
        None, "--metrics", help="metric names or globs to open as panels (every metric is in the page; repeatable)"
    ),
    serve: bool = typer.Option(
        False,
        "--serve",
        help="serve the page on 127.0.0.1 until Ctrl-C, with each sample when zoomed in (read from the files given)",
    ),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="the port --serve listens on (0: any free one)"),
    start: str | None = typer.Option(None, help=f"from this time ({TIME_HELP})"),
    end: str | None = typer.Option(None, help="up to this time"),
    no_log: bool = typer.Option(False, "--no-log", help="do not read the log found beside diagnostic.data"),
) -> None:
    """Write an explorer: find any metric by name and zoom every panel on one time axis, incidents and checkpoints drawn."""
    _freed_pages_for_a_log(paths, log or [], no_log)
    with imports_kept():
        import analysis
        from analysis.observe import STAGES
        from analysis.outputs.report import explore as explorer_of
        from analysis.outputs.report import write_explorer

    with user_errors():
        if (out_file is None) == (not serve):
            raise ValueError("give the page to write (-o page.html) or --serve, one of them")
        if out_file is not None and out_file.suffix.lower() != ".html":
            raise ValueError(f"{out_file}: the explorer is an .html page")
        with progress_bar("{task.description}") as bar:
            task = bar.add_task("reading", total=None)
            # Each node's stages, then the reduction of its metrics: one more step a node.
            ran = analysis.run(
                paths,
                log or [],
                no_log=no_log,
                start=start,
                end=end,
                progress=lambda done, total, what: bar.update(
                    task, completed=done, total=total + total // len(STAGES), description=what
                ),
                note=_note,
                keep_metrics=True,  # every metric kept by the analysis' own pass, for the explorer
            )
            result, beside = ran.result, ran.beside
            explorers = []
            for node, ftdc_path, name in zip(result.nodes, ran.inputs.ftdc, result.names):
                bar.update(task, advance=1, description=f"reducing the metrics of {name}")
                explorers.append(explorer_of(node, ftdc_path, name, metric, start, end))
        if serve:
            from analysis.outputs.report.explorer_serve import node_of, server

            httpd = server(explorers, [node_of(e, n) for e, n in zip(explorers, result.nodes)], port)
        else:
            write_explorer(explorers, out_file)
    if beside:
        err.print(
            f"read the log found beside the FTDC: {', '.join(map(str, beside))} (--log names another)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    held = f"{sum(len(e.series) for e in explorers):,} series{f' of {len(explorers)} nodes' if len(explorers) > 1 else ''}"
    if not serve:
        err.print(
            f"wrote {out_file} ({held}, {out_file.stat().st_size / 1e6:.1f} MB)", markup=False, highlight=False, soft_wrap=True
        )
        return
    err.print(
        f"serving http://127.0.0.1:{httpd.server_address[1]}/ ({held}); Ctrl-C stops it",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        err.print("stopped", markup=False, highlight=False)
    finally:
        httpd.server_close()


@app.command()
def fleet(
    paths: list[Path] = typer.Argument(..., help="diagnostic.data directories, dbpaths or support bundles: one or many nodes"),
    out_dir: Path = typer.Option(
        ..., "--out", "-o", help="the dataset to write findings/ and series/ into (new, or one to add to)"
    ),
    engine: str = typer.Option(
        "pool",
        help="loop (this process), pool (spawn processes) or spark (pyspark, local or the cluster SPARK_REMOTE/--master names)",
    ),
    workers: int | None = typer.Option(None, help="processes for --engine pool (default: one per core)"),
    master: str = typer.Option("local[*]", help="Spark master for --engine spark"),
    samples: bool = typer.Option(False, "--samples", help="also write every node's raw samples (samples/, nodes/)"),
    log: list[Path] | None = typer.Option(
        None, "--log", "-l", help="mongod log file, directory or archive (repeatable): names the operations behind each finding"
    ),
) -> None:
    """Analyse many nodes into a Parquet dataset: each node's findings and derived series, then each replica set's elections and lag."""
    _freed_pages_for_a_log(paths, log or [])  # each node's worker, a child, inherits the setting
    with imports_kept():
        from analysis import fleet as fleet_module
        from analysis import text

    with user_errors():
        if engine not in ("loop", "pool", "spark"):
            raise ValueError("--engine must be loop, pool or spark")
        found_inputs = _gathered(paths)
        nodes = found_inputs.nodes(paths)
        # By the summary's policy (each node's worker reads them): given, else inside the inputs, else beside.
        plan = plan_logs(paths, found_inputs, log or [])
        logs, beside = [str(p) for p in plan.paths] or None, plan.found if plan.beside else []
        if samples:
            ftdc.to_dataset(nodes, out_dir)
        if engine == "spark":
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.master(master).appName("ftdc-analyze fleet").getOrCreate()
            found = fleet_module.run_spark(spark, [str(n) for n in nodes], str(out_dir.resolve()), logs=logs).toArrow()
        else:
            found = fleet_module.run(nodes, out_dir, workers=1 if engine == "loop" else workers, logs=logs)
    errors = [e for e in found["error"].to_pylist() if e is not None]
    for message in errors:
        err.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)
    if beside:
        err.print(
            f"read the logs found beside the FTDC: {', '.join(map(str, beside))} (--log names others)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    err.print(
        f"wrote {text.counted(found.num_rows - len(errors), 'finding')} of {text.counted(len(nodes) - len(errors), 'node')} to {out_dir}",
        markup=False,
        highlight=False,
    )


@app.command()
def logs(
    paths: list[Path] = typer.Argument(..., help="mongod log files, directories or .tar/.tar.gz archives"),
    start: str | None = typer.Option(None, help=f"keep operations running at or after this time ({TIME_HELP})"),
    end: str | None = typer.Option(None, help="keep operations that started at or before this time"),
    top: int = typer.Option(20, help="number of query shapes to show"),
    sort: str = typer.Option("total", help="order by: total, p95 or count"),
    fmt: str = typer.Option("table", "--format", help="table, json or csv"),
    problems: bool = typer.Option(False, "--problems", help="list the lines that could not be read instead"),
) -> None:
    """Top slow-query shapes of mongod logs (JSON 4.4+ or text 2.2-4.2), COLLSCAN shapes marked."""
    _freed_pages_for(paths)  # before polars loads: a large log's blocks pass through it one after another
    with imports_kept():
        from ftdc.logs import report

    with user_errors():
        if sort not in ftdc.logs.summary.SORT_KEYS or fmt not in report.FORMATS or top < 1:
            raise ValueError("--sort must be total, p95 or count; --format table, json or csv; --top a positive number")
        with progress_bar("reading logs") as bar:
            task = bar.add_task("logs", total=None)
            frames = ftdc.read_logs(
                paths,
                start,
                end,
                workers=None,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                narrowing=report.NARROWING,
            )
        if (start or end) and frames.slow_ops.is_empty() and frames.events.is_empty():
            raise ValueError(
                f"{', '.join(map(str, paths))}: no log line between {start or 'the start'} and {end or 'the end'}; "
                "the lines it holds are outside that range"
            )
        several = frames.slow_ops["node"].drop_nulls().n_unique() > 1
        summary = ftdc.summarize_queries(frames.slow_ops, sort=sort, by_node=several).head(top)
    warning = report.problems_warning(frames.problems)
    if warning and not problems:
        err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if problems:
        if fmt == "table":
            out.print(report.render_problems_table(frames.problems) if frames.problems.height else "Every line could be read.")
        else:
            typer.echo(report.render_problems_text(frames.problems, fmt))
    elif fmt == "table":
        out.print(report.describe(frames, out.width), markup=False, highlight=False, soft_wrap=True)
        out.print(report.render_table(summary, out.width))
    else:
        typer.echo(report.render_text(summary, fmt))


def _terminated(signum: int, frame) -> None:
    # As Ctrl-C does: unwinding removes `.partial` outputs, and exit handlers unpacked bundles.
    raise Terminated(128 + signum)


# Click's usage error (a bad option, a missing argument), reached through the class Typer
# exports, as Typer vendors Click in some versions and depends on it in others.
UsageError = typer.BadParameter.__mro__[1]


def main() -> None:
    signal.signal(signal.SIGTERM, _terminated)
    no_blas_threads()  # before any command loads numpy
    try:
        code = app(prog_name="ftdc-analyze", standalone_mode=False)
    except UsageError as e:
        if type(e).__name__ == "NoArgsIsHelpError" or e.ctx is None:
            e.show()  # no arguments at all: the help
        else:
            command = e.ctx.command_path
            err.print(
                f"error: {e.format_message()} (`{command} --help` lists the options)",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    sys.exit(main())
