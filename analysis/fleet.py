"""A fleet's analyses into the dataset, a replica set's members together, on any engine.

    DIR/findings/<node key>.parquet          a node's findings (FINDINGS_SCHEMA), or its `error` row
    DIR/incidents/<node key>.parquet         a node's incidents (INCIDENTS_SCHEMA), naming its findings by id
    DIR/findings/replica_set=<name>.parquet  elections and lag of a replica set, merged across its members
    DIR/incidents/replica_set=<name>.parquet the incidents of those no member's incident folds in
    DIR/series/node=<key>/date=<YYYY-MM-DD>/part-0.parquet   the derived series (SERIES_SCHEMA)

The driver reads each node's catalog (`units`): it keys the nodes (two nodes sharing an address get
two keys, with a warning; two paths of one node, copies of one capture, share its findings file:
`run` warns) and puts the members of one replica set in one unit, every other node in a unit of its
own. `analyse_unit` is the step of a unit (any worker: a loop, a process pool, Spark executors): its
nodes observed, then composed as `analyze_nodes` composes them (`nodes.compose`, the same function),
so a replica set's incidents in the dataset are the report's. `run` drives the units in this process
or a spawn pool; `run_spark` on Spark: `groupBy("unit").applyInArrow` over the node paths (one job).
Workers write their own files (the root must be a path every worker sees); each file is written
whole and renamed, and a node's files are committed together (`ftdc.dataset.commit`), so a retried
task rewrites them.

Processes are started with the spawn method: a forked child of a process
where polars (or any thread pool) has run can deadlock on a lock held by a
thread that was not copied.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import cast

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.nodes import compose
from analysis.observe import Analysis, LogsArg, observe, read_compact_logs
from analysis.outputs.tables import (
    FINDINGS_SCHEMA,
    INCIDENTS_SCHEMA,
    analysis_key,
    error_table,
    finding_rows,
    incident_rows,
    series_table,
    to_table,
)
from ftdc.dataset import commit, open_node, parquet_options, read_nodes, staging, told_apart
from ftdc.errors import FTDCError, FTDCWarning
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import NodeInfo
from ftdc.paths import PathArg
from ftdc.timeutil import TimeArg
from ftdc.untrusted import safe_name

FINDINGS, INCIDENTS, SERIES = "findings", "incidents", "series"


def spawn_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """The project's process pool: spawn, never fork (see the module's docstring)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def _stage_series(stage: Path, key: str, series: pa.Table) -> list[Path]:
    """The node's derived series, a folder per day, written under `stage`; returns their places."""
    folder = Path(SERIES) / f"node={key}"
    # polars types from_arrow as a frame or a series for any input (pyarrow has no types to overload on); a table
    # gives a frame.
    frame = cast(pl.DataFrame, pl.from_arrow(series))
    days = frame.with_columns(_day=pl.col(TIME_COLUMN).dt.date()).partition_by(
        "_day", as_dict=True, include_key=False, maintain_order=True
    )
    places = []
    for (day,), part in days.items():
        places.append(
            _stage_table(
                stage, folder / f"date={day.isoformat()}" / "part-0.parquet", part.to_arrow().cast(series.schema), TIME_COLUMN
            )
        )
    return [p.parent for p in places]


def _stage_table(stage: Path, place: Path, table: pa.Table, sorted_by: str | None = None) -> Path:
    (stage / place).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, stage / place, **parquet_options(table.schema, sorted_by))
    return place


Unit = list[tuple[str, str | None]]
"""A fleet's unit of work: its nodes' paths with their keys (None for a node whose files cannot be read)."""


def units(paths: Sequence[PathArg], root: str | os.PathLike | None = None) -> list[Unit]:
    """The paths in units: the members of one replica set together (as the paths list them), every other node alone.
    Each node's key tells nodes that share an address apart (`ftdc.addresses`), also from the nodes already in the
    dataset at `root`; a path that cannot be read is a unit of its own, keyed None (its step says why). From the
    catalogs alone, in the driver: the one place that sees every node."""
    opened = {}
    for n, path in enumerate(paths):
        try:
            opened[n] = open_node(path)
        except (FTDCError, OSError, ValueError):
            continue
    known = read_nodes(root) if root is not None and Path(root).is_dir() else None
    nodes = dict(zip(opened, told_apart(list(opened.values()), known)))
    found: dict[object, Unit] = {}
    for n, path in enumerate(paths):
        node = nodes.get(n)
        replica_set = node.info.replica_set if node is not None else None
        found.setdefault(n if replica_set is None else replica_set, []).append((str(path), node.key if node else None))
    return list(found.values())


def analyse_unit(
    unit: Unit, root: str | os.PathLike | None = None, logs: LogsArg = None, start: TimeArg = None, end: TimeArg = None
) -> pa.Table:
    """One unit (a replica set's members, or a node alone): observed, composed as `analyze_nodes` composes them, each
    node's findings, incidents and series written under `root` when given, and the replica set's findings and
    incidents; returns the unit's findings (FINDINGS_SCHEMA), a node that cannot be read as its `error` row."""
    observed: list[tuple[str, str | None, Analysis]] = []
    tables: list[pa.Table] = []
    failed: FTDCError | OSError | ValueError | None = None
    try:
        frames = read_compact_logs(logs, start, end)  # read once for the unit, as `analyze_nodes` reads them
    except (FTDCError, OSError, ValueError) as e:
        frames, failed = None, e
    for path, key in unit:
        try:
            if failed is not None:
                raise failed
            observed.append((path, key, observe(path, frames, start=start, end=end)))
        except (FTDCError, OSError, ValueError) as e:
            own = error_table(path, e)
            _write_node(root, "unreadable-" + safe_name(str(path)), None, own, error_table(path, e, INCIDENTS_SCHEMA))
            tables.append(own)
    if not observed:
        return pa.concat_tables(tables) if tables else FINDINGS_SCHEMA.empty_table()
    result = compose([analysis for _, _, analysis in observed])
    for (path, key, _), analysis in zip(observed, result.nodes):
        key = key or analysis_key(analysis, path)
        own = to_table(finding_rows(analysis.result.findings, analysis.result.node, key))
        _write_node(
            root,
            key,
            analysis,
            own,
            to_table(incident_rows(analysis.result.incidents, analysis.result.node, key), INCIDENTS_SCHEMA),
        )
        tables.append(own)
    if result.cross_node:
        info = NodeInfo(replica_set=result.nodes[0].result.node.replica_set)
        merged = to_table(finding_rows(result.cross_node, info, None, scope="replica_set"))
        incidents = to_table(incident_rows(result.incidents, info, None), INCIDENTS_SCHEMA)
        if root is not None:
            name = f"replica_set={safe_name(info.replica_set or 'none')}.parquet"
            with staging(Path(root)) as stage:
                commit(
                    stage,
                    Path(root),
                    [_stage_table(stage, Path(FINDINGS) / name, merged), _stage_table(stage, Path(INCIDENTS) / name, incidents)],
                )
        tables.append(merged)
    return pa.concat_tables(tables)


def _write_node(root: str | os.PathLike | None, name: str, analysis: Analysis | None, own: pa.Table, incidents: pa.Table) -> None:
    """The node's series (none for a node that could not be read), findings and incidents committed together: a retried
    or stopped task leaves the node's files as they were or as they are now, never a mix."""
    if root is None:
        return
    with staging(Path(root)) as stage:
        parts = [] if analysis is None else _stage_series(stage, name, series_table(analysis))
        parts += [
            _stage_table(stage, Path(FINDINGS) / f"{name}.parquet", own),
            _stage_table(stage, Path(INCIDENTS) / f"{name}.parquet", incidents),
        ]
        commit(stage, Path(root), parts)


def warn_same_node(found: Iterable[Unit]) -> None:
    """Two paths of one node (one address) in a run share its findings file: the last written stays."""
    sources: dict[str, list[str]] = {}
    for path, key in (node for unit in found for node in unit):
        if key is not None:
            sources.setdefault(key, []).append(path)
    for key, paths in sources.items():
        if len(paths) > 1:
            warnings.warn(
                f"{', '.join(paths)}: the same node ({key}); its findings file holds one of them: analyse them one at a time "
                "or give each its own dataset",
                FTDCWarning,
                stacklevel=3,
            )


def run(
    paths: Sequence[PathArg],
    root: str | os.PathLike | None = None,
    *,
    workers: int | None = 1,
    logs: LogsArg = None,
    start: TimeArg = None,
    end: TimeArg = None,
) -> pa.Table:
    """The fleet's findings (FINDINGS_SCHEMA): its units analysed in this process (`workers=1`) or a spawn pool;
    written under `root` when given."""
    found = units(paths, root)
    warn_same_node(found)
    args = [(unit, str(root) if root is not None else None, logs, start, end) for unit in found]
    if workers == 1:
        tables = [analyse_unit(*a) for a in args]
    else:
        with spawn_pool(workers) as pool:
            tables = list(pool.map(analyse_unit, *zip(*args)))
    return pa.concat_tables(tables)


def run_spark(
    spark,
    paths: Sequence[str],
    root: str | None = None,
    *,
    logs: LogsArg = None,
    start: TimeArg = None,
    end: TimeArg = None,
    partitions: int | None = None,
):
    """The fleet's findings as a Spark DataFrame (FINDINGS_DDL), the units analysed on the executors
    (`partitions` shuffle partitions, two per core by default); written under `root` when given.

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        analysis.fleet.run_spark(spark, ["/mnt/fleet-ftdc/node1/diagnostic.data", ...], "/mnt/fleet").toArrow()

    One job: `groupBy("unit").applyInArrow` gets each unit's paths (a replica set's members together) and returns
    what `analyse_unit` does."""
    from analysis.outputs.tables import FINDINGS_DDL

    def analyse(table: pa.Table) -> pa.Table:
        rows = table.sort_by("place").to_pylist()
        return analyse_unit([(row["path"], row["key"]) for row in rows], root, logs, start, end)

    found = units(paths, root)
    warn_same_node(found)
    # A task costs Spark a fraction of a second, as much as a small node's analysis: two partitions per core at most.
    partitions = partitions or min(len(found), 2 * spark.sparkContext.defaultParallelism)
    listed = [(n, place, path, key) for n, unit in enumerate(found) for place, (path, key) in enumerate(unit)]
    listed = spark.createDataFrame(listed, "unit int, place int, path string, key string")
    return listed.repartition(max(1, partitions), "unit").groupBy("unit").applyInArrow(analyse, FINDINGS_DDL)
