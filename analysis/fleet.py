"""A fleet's analyses into the dataset, per node on any engine, then per replica set.

    DIR/findings/<node key>.parquet          a node's findings (FINDINGS_SCHEMA), or its `error` row
    DIR/incidents/<node key>.parquet         a node's incidents (INCIDENTS_SCHEMA), naming its findings by id
    DIR/findings/replica_set=<name>.parquet  elections and lag of a replica set, merged across its members
    DIR/series/node=<key>/date=<YYYY-MM-DD>/part-0.parquet   the derived series (SERIES_SCHEMA)

`analyse_node` is the per-node step (any worker: a loop, a process pool, Spark
executors), `replica_set_findings` the per-replica-set step over what the
nodes' steps returned. `run` drives them in this process or a spawn pool;
`run_spark` on Spark: `mapInArrow` over the node paths, then
`groupBy("replica_set").applyInArrow` (one job). Each node's key is chosen in the driver
(`node_keys`), where every node is seen: two nodes sharing an address get two keys, with a
warning; two paths of one node (copies of one capture) share its findings file: `run` warns. Workers write their own files (the
root must be a path every worker sees); each file is written whole and
renamed, and a node's files are committed together (`ftdc.dataset.commit`), so a retried task rewrites them.

Processes are started with the spawn method: a forked child of a process
where polars (or any thread pool) has run can deadlock on a lock held by a
thread that was not copied.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analysis.analyze import analyze
from analysis.findings.detectors import REPLICA_SET_WIDE
from analysis.findings.finding import Finding
from analysis.members import self_members
from analysis.nodes import cross_node_findings, leave_to_the_replica_set
from analysis.outputs.tables import (
    FINDINGS_SCHEMA,
    INCIDENTS_SCHEMA,
    analysis_key,
    error_table,
    finding_of,
    finding_rows,
    incident_rows,
    series_table,
    spark_ddl,
    to_table,
)
from ftdc.dataset import commit, open_node, parquet_options, read_nodes, staging, told_apart, write_file
from ftdc.errors import FTDCError, FTDCWarning
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import NodeInfo
from ftdc.paths import PathArg
from ftdc.timeutil import TimeArg
from ftdc.untrusted import safe_name

FINDINGS, INCIDENTS, SERIES = "findings", "incidents", "series"
# What a node's step returns to the replica-set step (and Spark's first stage holds).
NODE_SCHEMA = pa.schema(
    [
        ("node", pa.string()),
        ("source", pa.string()),
        ("host", pa.string()),
        ("port", pa.int64()),
        ("address", pa.string()),
        ("replica_set", pa.string()),
        ("version", pa.string()),
        ("members", pa.list_(pa.string())),  # the replica-set member indices this node recorded as itself
        ("findings", pa.binary()),  # its FINDINGS_SCHEMA table, elections and lag included, as an Arrow IPC stream
        ("error", pa.string()),
    ]
)


def spawn_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """The project's process pool: spawn, never fork (see the module's docstring)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def _stage_series(stage: Path, key: str, series: pa.Table) -> list[Path]:
    """The node's derived series, a folder per day, written under `stage`; returns their places."""
    folder = Path(SERIES) / f"node={key}"
    frame = pl.from_arrow(series)
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


def node_keys(paths: Sequence[PathArg], root: str | os.PathLike | None = None) -> list[str | None]:
    """Each path's node key, nodes that share an address told apart (`ftdc.addresses`), also from
    the nodes already in the dataset at `root`; None for a path that cannot be read (its step
    says why). From the catalogs alone, in the driver: the one place that sees every node."""
    opened = {}
    for n, path in enumerate(paths):
        try:
            opened[n] = open_node(path)
        except (FTDCError, OSError, ValueError):
            continue
    known = read_nodes(root) if root is not None and Path(root).is_dir() else None
    keys = dict(zip(opened, (node.key for node in told_apart(list(opened.values()), known))))
    return [keys.get(n) for n in range(len(paths))]


def analyse_node(
    path: PathArg,
    root: str | os.PathLike | None = None,
    logs=None,
    start: TimeArg = None,
    end: TimeArg = None,
    key: str | None = None,
) -> dict:
    """One node: analysed, its own findings, incidents and series written under `root` when given;
    returns a NODE_SCHEMA row. A replica-set member's elections and lag go to its replica set's
    step (numbered there), its findings numbered without them as `analyze_nodes` does. Its incidents
    are its own findings' only: `analyze_nodes` also folds in the set's findings about the member
    (its lag beside its slow disk), which needs every member's analysis at once; here the replica
    set's findings stand alone in findings/. `key`: the node's key as `node_keys` gave it (by
    default its address's, as if no other node had it)."""
    try:
        analysis = analyze(path, logs, start=start, end=end)
    except (FTDCError, OSError, ValueError) as e:
        own, incidents = error_table(path, e), error_table(path, e, INCIDENTS_SCHEMA)
        row = {
            "node": None,
            "host": None,
            "port": None,
            "address": None,
            "replica_set": None,
            "version": None,
            "members": [],
            "error": own["error"][0].as_py(),
            "findings": _ipc(own),
        }
    else:
        key, info = key or analysis_key(analysis, path), analysis.node
        analysis, taken = leave_to_the_replica_set(analysis) if info.replica_set is not None else (analysis, [])
        own = to_table(finding_rows(analysis.findings, info, key))
        incidents = to_table(incident_rows(analysis.incidents, info, key), INCIDENTS_SCHEMA)
        row = {
            "node": key,
            "host": info.host,
            "port": info.port,
            "address": info.address,
            "replica_set": info.replica_set,
            "version": info.version,
            "members": self_members(analysis),
            "error": None,
            "findings": _ipc(pa.concat_tables([own, to_table(finding_rows(taken, info, key))])),
        }
    if root is not None:
        # The node's series, findings and incidents committed together: a retried or stopped task
        # leaves the node's files as they were or as they are now, never a mix.
        name = row["node"] or "unreadable-" + safe_name(str(path))
        with staging(Path(root)) as stage:
            parts = [] if row["error"] is not None else _stage_series(stage, name, series_table(analysis))
            parts += [
                _stage_table(stage, Path(FINDINGS) / f"{name}.parquet", own),
                _stage_table(stage, Path(INCIDENTS) / f"{name}.parquet", incidents),
            ]
            commit(stage, Path(root), parts)
    return {**row, "source": str(path)}


def _own(table: pa.Table) -> pa.Table:
    """`table` less elections and lag (its error row kept); a node's record that it could not check them
    (`Finding.not_checked`: info, its evidence's "missing") stays its own, as `analysis.nodes.set_wide` keeps it."""
    not_checked = pc.and_(pc.equal(table["severity"], "info"), pc.match_substring(table["evidence"], '"missing"'))
    set_wide = pc.and_(pc.is_in(table["kind"], pa.array(REPLICA_SET_WIDE)), pc.invert(pc.fill_null(not_checked, False)))
    return table.filter(pc.fill_null(pc.invert(set_wide), True))


@dataclass
class _Reported:
    """What `cross_node_findings` needs of a node, rebuilt from its row."""

    node: NodeInfo
    findings: list[Finding]


def node_findings(rows: Iterable[dict]) -> pa.Table:
    """The nodes' own findings (elections and lag left to their replica set), error rows included."""
    tables = [_own(_from_ipc(row["findings"])) for row in rows]
    return pa.concat_tables(tables) if tables else FINDINGS_SCHEMA.empty_table()


def replica_set_findings(rows: Sequence[dict], root: str | os.PathLike | None = None) -> pa.Table:
    """Elections and lag of one replica set's members (NODE_SCHEMA rows), merged as `analyze_nodes` does."""
    # Ordered by key, so every engine (whatever order its groups arrive in) merges alike.
    rows = sorted((r for r in rows if r["error"] is None and r["replica_set"] is not None), key=lambda r: r["node"])
    if not rows:
        return FINDINGS_SCHEMA.empty_table()
    replica_set = rows[0]["replica_set"]
    assert all(r["replica_set"] == replica_set for r in rows), "rows of one replica set"
    nodes = [
        _Reported(
            NodeInfo(host=r["host"], port=r["port"], version=r["version"], replica_set=replica_set),
            [finding_of(f) for f in _from_ipc(r["findings"]).to_pylist()],
        )
        for r in rows
    ]
    names = [r["address"] or r["node"] for r in rows]
    merged = cross_node_findings(nodes, names, [r["members"] for r in rows])
    table = to_table(finding_rows(merged, NodeInfo(replica_set=replica_set), None, scope="replica_set"))
    if root is not None:
        write_file(
            table, Path(root) / FINDINGS / f"replica_set={safe_name(replica_set)}.parquet", **parquet_options(table.schema, None)
        )
    return table


def warn_same_node(rows: Iterable[dict]) -> None:
    """Two paths of one node (one address) in a run share its findings file: the last written stays."""
    sources: dict[str, list[str]] = {}
    for row in rows:
        if row["node"] is not None:
            sources.setdefault(row["node"], []).append(row["source"])
    for key, paths in sources.items():
        if len(paths) > 1:
            warnings.warn(
                f"{', '.join(paths)}: the same node ({key}); its findings file holds one of them: analyse them one at a time "
                "or give each its own dataset",
                FTDCWarning,
                stacklevel=3,
            )


def _by_replica_set(rows: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        if row["replica_set"] is not None and row["error"] is None:
            groups.setdefault(row["replica_set"], []).append(row)
    return groups


def run(
    paths: Sequence[PathArg],
    root: str | os.PathLike | None = None,
    *,
    workers: int | None = 1,
    logs=None,
    start: TimeArg = None,
    end: TimeArg = None,
) -> pa.Table:
    """The fleet's findings (FINDINGS_SCHEMA): nodes analysed in this process (`workers=1`) or a
    spawn pool, then per replica set; written under `root` when given."""
    args = [
        (str(p), str(root) if root is not None else None, logs, start, end, key) for p, key in zip(paths, node_keys(paths, root))
    ]
    if workers == 1:
        rows = [analyse_node(*a) for a in args]
    else:
        with spawn_pool(workers) as pool:
            rows = list(pool.map(analyse_node, *zip(*args)))
    warn_same_node(rows)
    tables = [node_findings(rows)] + [replica_set_findings(g, root) for g in _by_replica_set(rows).values()]
    return pa.concat_tables(tables)


# Spark: the same two steps on executors.
NODE_DDL = spark_ddl(NODE_SCHEMA)


def _batches_of(rows_of: Iterator[pa.RecordBatch]) -> Iterator[dict]:
    for batch in rows_of:
        yield from batch.to_pylist()


def run_spark(
    spark,
    paths: Sequence[str],
    root: str | None = None,
    *,
    logs=None,
    start: TimeArg = None,
    end: TimeArg = None,
    partitions: int | None = None,
):
    """The fleet's findings as a Spark DataFrame (FINDINGS_DDL), nodes analysed on the executors
    (`partitions` tasks, two per core by default); written under `root` when given.

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        analysis.fleet.run_spark(spark, ["/mnt/fleet-ftdc/node1/diagnostic.data", ...], "/mnt/fleet").toArrow()

    One job: `mapInArrow` analyses each node, `groupBy("replica_set").applyInArrow` gets each
    replica set's rows (standalones together, under null) and returns the nodes' own findings
    and the set's merged elections and lag."""
    from analysis.outputs.tables import FINDINGS_DDL

    def analyse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for row in _batches_of(batches):
            yield pa.RecordBatch.from_pylist([analyse_node(row["path"], root, logs, start, end, row["key"])], schema=NODE_SCHEMA)

    def per_replica_set(table: pa.Table) -> pa.Table:
        rows = table.to_pylist()
        return pa.concat_tables([node_findings(rows), replica_set_findings(rows, root)])

    # Nodes dealt into two partitions per core, without a shuffle: a task costs Spark a fraction
    # of a second, as much as a small node's analysis, and a worker still holds one node at a time.
    partitions = partitions or min(len(paths), 2 * spark.sparkContext.defaultParallelism)
    listed = [(str(p), key) for p, key in zip(paths, node_keys(paths, root))]
    listed = spark.createDataFrame(spark.sparkContext.parallelize(listed, max(1, partitions)), "path string, key string")
    return listed.mapInArrow(analyse, NODE_DDL).groupBy("replica_set").applyInArrow(per_replica_set, FINDINGS_DDL)
