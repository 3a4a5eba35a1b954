"""`observe`: a node's FTDC (and logs) in, its evidence and findings out.

logs -> files read once: the catalog (metric names, metadata) and the values of
every metric the detectors could need (projection) -> derived series ->
thresholds, checkpoints -> detectors -> culprits from the log -> an `Analysis`, two values:
the `Evidence` (what was read and derived) and the `Result` (what it says).
Its findings are not yet incidents: `nodes.compose` makes a run's incidents, once,
for one node or several (`nodes.analyze` and `nodes.analyze_nodes` run both), a new
result beside the same evidence. Each stage takes values and returns new ones: all are frozen.
"""

from __future__ import annotations

import datetime as dt
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from analysis import display
from analysis.findings.context import Context
from analysis.findings.culprits import WAITS, attribute, culprit_key, during_checkpoints
from analysis.findings.detectors import NOT_ATTRIBUTED, RECORDS, RELATE, detect
from analysis.findings.detectors.connection_storm import KIND as STORM
from analysis.findings.finding import Finding, jsonable
from analysis.incidents.incident import Incident
from analysis.series import derived as series_module
from analysis.series.checkpoints import Checkpoint, checkpoint_windows, infer_interval
from analysis.series.metrics import Resolved, candidates
from analysis.series.metrics import resolve as resolve_metrics
from analysis.series.spikes import all_spikes
from analysis.series.thresholds import Thresholds, effective_thresholds
from analysis.workbench import audit as audit_module
from analysis.workbench.overview import Overview, summarize
from analysis.workbench.sampled import sampled as audit_sampled
from ftdc import memory
from ftdc.batches import require_splittable
from ftdc.catalog import Catalog
from ftdc.decoding import Decoding
from ftdc.errors import no_samples
from ftdc.frames import TIME_COLUMN
from ftdc.kept import Kept
from ftdc.logs import LogFrames
from ftdc.memory import release_free_memory
from ftdc.metadata import NodeInfo, catalog_metadata
from ftdc.paths import PathArg, resolve
from ftdc.reader import read_with_catalog
from ftdc.timeutil import Offset, TimeArg, time_range, to_ms

LogsArg = LogFrames | PathArg | None
STAGES = ("logs", "samples", "series", "analyses")


@dataclass(frozen=True)
class Evidence:
    """What was read of one node and derived from it: what the detectors were given, and what figures, the explorer
    and the workbench's tables draw. Redaction maps only the logs of it (the tables it shows), never the series."""

    node: NodeInfo
    thresholds: Thresholds
    derived: series_module.Derived = field(repr=False)
    """The derived series: `derived.analysed` the detectors used, `series` every column."""
    resolved: Resolved = field(repr=False)
    """Which of the node's metric paths stand for what: the series' sources, part of the detectors' `context`."""
    catalog: Catalog = field(repr=False, compare=False)
    """What the files hold (every metric's name and type, the chunks' times), taken in the analysis's one pass over
    them: the explorer lists and reads the node's metrics from it without another."""
    checkpoints: list[Checkpoint] = field(default_factory=list)
    logs: LogFrames | None = None
    columns: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Derived column -> (unit, meaning)."""
    kept: Kept | None = field(default=None, repr=False, compare=False)
    """With `observe(..., keep_metrics=True)`: every metric of the range, kept by the same pass as delta bytes for the
    explorer to reduce on its axis (no second inflation of the files, no frame of every metric)."""

    @property
    def series(self) -> pl.DataFrame:
        """Every derived column (`columns` says what each is): those the detectors used and, derived at the first
        asking, those only shown (`analysis.series.derived.SHOWN_ONLY`)."""
        return self.derived.full()

    @property
    def context(self) -> Context:
        """What the detectors were given, and what incidents are explained with."""
        return Context(self.derived.analysed, self.resolved, self.thresholds, self.checkpoints, self.node, self.logs)


@dataclass(frozen=True)
class Result:
    """What the analysis says of one node, and no frame or series: the node and its coverage as the answer names them,
    the thresholds its findings were judged by (with their sources), findings, incidents and the configuration audit.
    The JSON document's answer, the console's and the tables of findings and incidents read only this; redaction maps
    it to a new one."""

    node: NodeInfo
    overview: Overview
    thresholds: Thresholds
    findings: list[Finding]
    incidents: list[Incident] = field(default_factory=list)
    """The warning and critical findings grouped into episodes, root cause first (`nodes.compose`)."""
    audit: list[audit_module.AuditItem] = field(default_factory=list)
    """The configuration audit (`analysis.workbench.audit`): advice on the node's set-up, never a finding."""
    logged: bool = False
    """Whether the node's log was read: the answer says its slow operations were looked at, or that there was none."""
    log_offset: Offset = None
    """The offsets the node's log writes its times in (None without a log): the answer gives a time in the offset of
    the log's lines around it beside UTC."""

    @property
    def problems(self) -> list[Finding]:
        """Warning and critical findings: what a healthy node has none of."""
        return [f for f in self.findings if f.severity != "info"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: node, summary, thresholds with their sources, incidents, findings (times ISO-8601 with Z)."""
        summary = self.overview.to_dict()
        node = summary.pop("node")
        return jsonable(
            {
                "node": node,
                "summary": summary,
                "thresholds": self.thresholds.to_dict(),
                "incidents": [i.to_dict() for i in self.incidents],
                "findings": [f.to_dict() for f in self.findings],
            }
        )


@dataclass(frozen=True)
class Analysis:
    """One node's analysis: the evidence (what was read and derived) and the result (what it says), two values.
    Stages after the detectors make a new result and keep the evidence; outputs that only say the answer take the
    result."""

    evidence: Evidence
    result: Result

    if not TYPE_CHECKING:  # hidden from mypy, which then holds the package to naming the side it reads

        def __getattr__(self, name: str) -> Any:
            """In a notebook, `a.findings` or `a.series`: the result's attribute of that name, else the evidence's
            (the package itself names the side it reads: mypy, and `tests/test_evidence_result.py`)."""
            if name.startswith("__") or name in ("evidence", "result"):  # copy and pickle ask before the fields are set
                raise AttributeError(name)
            return getattr(self.result, name) if hasattr(self.result, name) else getattr(self.evidence, name)

    def _repr_html_(self) -> str:
        return display.html(self)


# The log columns analyses and reports use.
SLOW_OP_COLUMNS = [
    "ts",
    "started",
    "duration_ms",
    "node",
    "ns",
    "command",
    "op_type",
    "write_statement",
    "plan_summary",
    "plan_kind",
    "shape",
    "query_hash",
    "query_shape_hash",
    "command_json",
    "app_name",
    *WAITS,
    "ok",
    "err_name",
    # the report's slow-operation table (analysis.workbench.log_overview): summarize_queries' and its extras
    "keys_examined",
    "docs_examined",
    "nreturned",
    "truncated",
    "working_ms",
    "reslen",
    "file",
    "line",
]
EVENT_COLUMNS = [
    "ts",
    "started",
    "node",
    "kind",
    "component",
    "id",
    "ctx",
    "duration_ms",
    "connection_count",
    "remote",
    "new_state",
    "old_state",
    "version",
    "text",
    "file",
    "line",
    # the report's connections by client and messages by severity (analysis.workbench.log_overview), the audit's startup warnings
    "severity",
    "msg",
    "driver",
    "app_name",
]


def _release_after(read_bytes: float) -> None:
    """Freed memory handed back (`release_free_memory`) after a read of `read_bytes` that could set a run's peak
    (`WORTH_HANDING_BACK`): below it, a full collection, the decoder's spare block unmapped (to be faulted in again by
    the next read) and the C library's arenas trimmed cost a small run 10 - 35 ms each and give back too little."""
    if read_bytes >= memory.WORTH_HANDING_BACK:
        release_free_memory()


def read_compact_logs(logs: LogsArg, start: TimeArg = None, end: TimeArg = None) -> LogFrames | None:
    """The log frames, narrowed to the columns used and holding only their own text,
    so a large log's text is freed before the FTDC is decoded. Culprit examples show
    the longest run of a shape, so only those runs keep their command."""
    if logs is None:
        return logs
    if isinstance(logs, LogFrames):
        return as_categories(logs)
    from ftdc.logs.narrow import Longest, Narrowing  # the log readers only where there is a log to read
    from ftdc.logs.reader import read_logs

    # Each block is narrowed to these columns as it is decoded (copied into polars' memory, as the frames are held through
    # the analysis), the commands packed until the longest runs are known.
    narrowing = Narrowing(tuple(SLOW_OP_COLUMNS), Longest(tuple(culprit_key())), copied=True, categories=CATEGORY_COLUMNS)
    frames = read_logs(logs, start, end, narrowing=narrowing)
    read_bytes = frames.slow_ops.estimated_size() + frames.events.estimated_size()
    longest = pl.col("duration_ms") == pl.col("duration_ms").max().over(culprit_key())
    slow = frames.slow_ops.with_columns(command_json=pl.when(longest).then(pl.col("command_json")))
    compact = as_categories(replace(frames, slow_ops=slow).compact(SLOW_OP_COLUMNS, EVENT_COLUMNS))
    del frames, slow
    _release_after(read_bytes)
    return replace(compact, slow_ops=with_slowest_lines(compact.slow_ops, logs))


# The slow operations' text columns of a handful of values each, held as categories (a number a row) through an
# analysis: a string column costs a 16-byte view a row whatever its value, and these were 190 MB of a 1 GB log's
# 1.2 M slow operations (docs/performance.md). Their readers compare them to text, group by them, or cast them back.
CATEGORY_COLUMNS = (
    "node",
    "ns",
    "command",
    "op_type",
    "plan_summary",
    "plan_kind",
    "shape",
    "query_hash",
    "app_name",
    "err_name",
    "truncated",
    "file",
)


def as_categories(frames: LogFrames) -> LogFrames:
    """`frames` with the slow operations' CATEGORY_COLUMNS held as categories."""
    slow = frames.slow_ops
    columns = [c for c in CATEGORY_COLUMNS if slow.schema.get(c) == pl.String]
    return replace(frames, slow_ops=slow.with_columns(pl.col(columns).cast(pl.Categorical))) if columns else frames


def with_slowest_lines(slow_ops: pl.DataFrame, logs: LogsArg) -> pl.DataFrame:
    """`slow_ops` with `line_text`: the line as the log holds it, for the SLOWEST_LINES longest runs of each group of
    the report's slow-operation table (index builds too; its QUOTED_SHAPES shapes of most total time), null for the other
    rows and for a line that is gone."""
    from analysis.workbench.log_overview import QUOTED_SHAPES, SLOWEST_LINES
    from ftdc.logs.lines import line_texts
    from ftdc.logs.summary import slowest_runs

    # Only the shapes a reader looks at first: a crafted log of a million shapes asks for no more lines.
    rows = slowest_runs(slow_ops, SLOWEST_LINES, index_builds=True, groups=QUOTED_SHAPES).arg_true()
    where = slow_ops.select("file", "line")[rows]
    wanted: dict[str, list[int]] = {}
    for file, line in where.iter_rows():
        wanted.setdefault(file, []).append(line)
    texts = line_texts(logs, wanted) if rows.len() else {}
    quoted = pl.Series([texts.get(key) for key in where.iter_rows()], dtype=pl.String)
    column = pl.repeat(None, slow_ops.height, dtype=pl.String, eager=True)
    return slow_ops.with_columns(line_text=column.scatter(rows, quoted) if rows.len() else column)


def read_found_logs(found: list, start: TimeArg = None, end: TimeArg = None) -> LogFrames | None:
    """Logs that were found (in a bundle, beside a `diagnostic.data`), not given: read when they can be;
    otherwise a `LogWarning` names them and the analysis goes on without a log (an empty
    `mongod.log`, as a fresh rotation leaves, must not end an analysis nobody asked a log of)."""
    from ftdc.logs.sources import LogWarning, NotALog  # only where a log was found

    try:
        return read_compact_logs(found, start, end)
    except (NotALog, OSError, EOFError) as e:
        warnings.warn(
            f"{e}: found with the FTDC, not given, so not read; analysed without a log (--log names one, --no-log does not look)",
            LogWarning,
            stacklevel=2,
        )
        return None


def for_node(logs: LogFrames | None, node: NodeInfo) -> LogFrames | None:
    """The log rows of `node` when the logs name several nodes (a replica set's archive);
    logs that name one node or none cannot be told apart and are all kept."""
    if logs is None or node.host is None:
        return logs
    names = set(logs.slow_ops["node"].drop_nulls().unique()) | set(logs.events["node"].drop_nulls().unique())
    if len(names) <= 1:
        return logs
    mine = {n for n in names if n.split(":")[0].lower() == node.host.lower()}
    keep = pl.col("node").is_in(list(mine))
    return replace(logs, slow_ops=logs.slow_ops.filter(keep), events=logs.events.filter(keep))


def _open_strings(logs: LogFrames | None) -> list[tuple[dt.datetime, str, str]]:
    if logs is None:
        return []
    rows = logs.events.filter(pl.col("kind") == "storage_config", pl.col("text").is_not_null(), pl.col("ts").is_not_null())
    # The file's name, not where it lay on this machine: the source is quoted to the customer, in words (not the log
    # id 22315 and `mongod.log:3`).
    return [
        (ts, text, f'the log\'s "Opening WiredTiger" line, {Path(file or "").name} line {line}')
        for ts, text, file, line in rows.select("ts", "text", "file", "line").iter_rows()
    ]


def _starts(prepared: pl.DataFrame, logs: LogFrames | None) -> list[dt.datetime]:
    starts = prepared.filter(pl.col("restart"))[TIME_COLUMN].to_list()
    if logs is not None:
        starts += logs.events.filter(pl.col("kind") == "startup", pl.col("ts").is_not_null())["ts"].to_list()
    return starts


def observe(
    diagnostic_data: PathArg,
    logs: LogsArg = None,
    *,
    start: TimeArg = None,
    end: TimeArg = None,
    progress: Callable[[str], None] = lambda stage: None,
    keep_metrics: bool = False,
    started: Decoding | None = None,
) -> Analysis:
    """The evidence and findings of one node, in rank order, not yet numbered or told as incidents (`nodes.compose`
    does that for a run): `diagnostic_data` (a directory, files) and optionally its logs (paths as `ftdc.read_logs`
    takes them, or `LogFrames`), within [start, end]. `progress(stage)` is called as each of STAGES completes.
    `keep_metrics`: the read also keeps every other metric for the explorer (`Evidence.kept`). `started`: a decode
    started already (`ftdc.decoding.decode_ahead`), taken if it is this node's read."""
    lower, upper = time_range(start, end)
    files = resolve(diagnostic_data)
    # The log before the samples: its reader's transient peak then meets nothing else held in memory.
    all_logs = read_compact_logs(logs, lower, upper)
    progress(STAGES[0])
    # One pass: the metrics any analysis could use are decoded while the catalog is taken,
    # then the node's own names decide which of them stand for what.
    catalog, raw, kept = read_with_catalog(
        files,
        candidates(),
        lower,
        upper,
        vet=lambda c: require_splittable(c, to_ms(lower), to_ms(upper)),
        keep=keep_metrics,
        started=started,
    )
    # The inflated chunks the decoder freed: after a large log, the C library keeps them (the log's blocks raised its
    # threshold for giving large buffers back), 200 MB of a week beside the series about to be derived.
    read_bytes = raw.estimated_size()
    _release_after(read_bytes)
    resolved = resolve_metrics(catalog.schema())
    metadata = catalog_metadata(catalog)
    log_frames = for_node(all_logs, metadata.node)
    del all_logs
    progress(STAGES[1])
    if raw.height == 0:
        where = diagnostic_data if isinstance(diagnostic_data, (str, os.PathLike)) else ", ".join(map(str, diagnostic_data))
        raise no_samples(str(where), catalog.chunks, lower, upper)
    prepared = series_module.prepare(raw, resolved)
    del raw
    sampled = audit_sampled(prepared, resolved)
    marks = prepared.select(TIME_COLUMN, *series_module.BOOKKEEPING)
    with ThreadPoolExecutor(1, thread_name_prefix="ahead") as ahead:
        # The overview is read from the sample times and their marks while the series are derived: polars derives
        # them without the GIL, with a core to spare while the new columns' memory is mapped.
        overview_ahead = ahead.submit(summarize, catalog, marks, metadata.node)
        thresholds = effective_thresholds(metadata, _open_strings(log_frames), _starts(marks, log_frames))
        # `Derived` takes the prepared frame over, and each recorded column's memory goes back once it is derived from.
        derived_series = series_module.Derived(prepared, resolved, thresholds)
        derived = derived_series.analysed
        del prepared
        overview = overview_ahead.result()
        # What the derivation freed goes back before the detectors and the report, which would otherwise add theirs.
        _release_after(read_bytes)
        progress(STAGES[2])
        # The spikes' rolling windows are the detectors' longest wait and need only the series: they run (in the native
        # core and polars, without the GIL) while the checkpoints are found.
        spikes = ahead.submit(all_spikes, derived)
        checkpoints = checkpoint_windows(derived, metadata.node.version, log_frames.events if log_frames else None)
        thresholds = infer_interval(thresholds, checkpoints, float(derived.select(pl.median("period_s")).item() or 1))
        ctx = Context(derived, resolved, thresholds, checkpoints, metadata.node, log_frames, spikes_ahead=spikes)
        findings = detect(ctx)
    for relate in RELATE:
        findings = relate(findings)
    # A scan's disk reads are its work except while a checkpoint holds the device: each run's share inside checkpoints.
    slow_ops = during_checkpoints(log_frames.slow_ops, checkpoints) if log_frames is not None else None
    advice: dict = {}  # each culprit's recommendations, once
    # A connection storm's clients' first operations are its load, in its window and in those it set off.
    storms = tuple(
        (f.start, f.end)
        for f in findings
        if f.kind == STORM and f.severity != "info" and f.start is not None and f.end is not None
    )
    # Replication findings are about other members: this node's operations do not explain them.
    findings = [
        attribute(
            f,
            slow_ops,
            derived,
            replica_set=metadata.node.replica_set is not None,
            advice=advice,
            reading_holds=RECORDS[f.kind].reading_holds,
            storms=storms,
        )
        if f.severity != "info" and f.kind not in NOT_ATTRIBUTED
        else f
        for f in findings
    ]
    evidence = Evidence(
        node=metadata.node,
        thresholds=thresholds,
        derived=derived_series,
        resolved=resolved,
        catalog=catalog,
        checkpoints=checkpoints,
        logs=log_frames,
        columns=series_module.describe(resolved),
        kept=kept,
    )
    result = Result(
        node=metadata.node,
        overview=overview,
        thresholds=thresholds,
        findings=sorted(findings, key=Finding.rank),
        audit=audit_module.audit(
            audit_module.facts(
                metadata.documents,
                log_frames.events if log_frames else None,
                derived.select(pl.max("cache_max_bytes")).item() if "cache_max_bytes" in derived.columns else None,
                overview.last,
                parameters=metadata.parameters,
                sampled=sampled,
            )
        ),
        logged=log_frames is not None,
        log_offset=None if log_frames is None else log_frames.utc_offsets or log_frames.utc_offset,
    )
    progress(STAGES[3])
    return Analysis(evidence, result)
