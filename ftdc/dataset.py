"""`to_dataset`: a fleet's FTDC as one hive-partitioned Parquet dataset.

    DIR/<family>/node=<node>/date=<YYYY-MM-DD>/part-<n>.parquet
    DIR/nodes.parquet

A family is a process and its major.minor version (`mongod-7.0`): its nodes
record the same metrics, so all of a family's files share one schema (the
union of its nodes' metrics, null where a node lacks one) and polars
`scan_parquet`, DuckDB or Spark read `DIR/<family>` as one table, with `node`
and `date` from the paths. `nodes.parquet` holds each node's facts. Nodes
stream through the exporters' time windows (bounded memory); the dataset is
built beside DIR and moved into place when complete.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import polars as pl
import pyarrow.parquet as pq

from .batches import DEFAULT_BUDGET, conform, decode_windows, time_windows
from .catalog import Catalog, catalog_files
from .errors import FTDCError
from .frames import TIME_COLUMN
from .metadata import NodeInfo, catalog_metadata
from .paths import PathArg, resolve
from .reader import Metrics, metric_list
from .select import select_schema
from .timeutil import TimeArg, time_range, to_ms

NODES_TABLE = "nodes.parquet"
NODE_FACTS = {
    "node": pl.String, "family": pl.String, "host": pl.String, "port": pl.Int64, "replica_set": pl.String, "version": pl.String,
    "os": pl.String, "cpus": pl.Int64, "memory_mb": pl.Int64, "cache_size_gb": pl.Float64,
    "first": pl.Datetime("ms", "UTC"), "last": pl.Datetime("ms", "UTC"), "samples": pl.Int64, "files": pl.Int64, "source": pl.String,
}


@dataclass
class _Node:
    name: str
    family: str
    info: NodeInfo
    catalog: Catalog
    source: str


def family_of(info: NodeInfo) -> str:
    """`mongod-7.0`; `unknown` when the files carry no version (no metadata document)."""
    if not info.version:
        return "unknown"
    major_minor = ".".join(info.version.split(".")[:2])
    return f"mongod-{major_minor}"


def _safe(text: str) -> str:
    """A path component that is also a clean hive value."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "node"


def _nodes(paths: Sequence[PathArg], time_field: str) -> list[_Node]:
    nodes, taken = [], set()
    for index, path in enumerate(paths):
        catalog = catalog_files(resolve(path), time_field)
        info = catalog_metadata(catalog).node
        name = _safe(info.address or f"node-{index + 1}")
        while name in taken:  # two nodes with one address (copies): keep both, distinctly
            name += "-2"
        taken.add(name)
        nodes.append(_Node(name, family_of(info), info, catalog, str(path)))
    return nodes


def _family_schemas(nodes: list[_Node], metrics: Optional[list[str]]) -> dict[str, dict[str, pl.DataType]]:
    schemas: dict[str, dict[str, pl.DataType]] = {}
    for node in nodes:
        schema = schemas.setdefault(node.family, {TIME_COLUMN: pl.Datetime("ms", "UTC")})
        for name, dtype in select_schema(node.catalog.schema(), metrics).items():
            # Kinds that disagree between nodes (a bool on one, an int on another) meet as Int64.
            schema[name] = dtype if schema.get(name, dtype) == dtype else pl.Int64
    return schemas


def _write_node(node: _Node, schema: dict[str, pl.DataType], root: Path, lower, upper, time_field: str, budget: int,
                done: Callable[[], None]) -> tuple[int, Optional[dt.datetime], Optional[dt.datetime]]:
    own = {n: d for n, d in schema.items() if n == TIME_COLUMN or n in node.catalog.schema()}
    windows = list(time_windows(node.catalog, len(own), lower, upper, budget))
    arrow_schema = pl.DataFrame(schema=schema).to_arrow().schema
    rows, first, last, part = 0, None, None, 0
    for frame in decode_windows(node.catalog, own, windows, time_field, budget):
        frame = conform(frame, schema)
        if frame.height:
            first = frame[TIME_COLUMN].min() if first is None else first
            last = frame[TIME_COLUMN].max()
        days = frame.with_columns(date=pl.col(TIME_COLUMN).dt.date()).partition_by("date", as_dict=True, include_key=False, maintain_order=True)
        for (day,), rows_of_day in days.items():
            folder = root / node.family / f"node={node.name}" / f"date={day.isoformat()}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(rows_of_day.to_arrow().cast(arrow_schema), folder / f"part-{part:05d}.parquet", compression="zstd")
            part += 1
            rows += rows_of_day.height
        done()
    return rows, first, last


def to_dataset(
    paths: Sequence[PathArg],
    out: str | os.PathLike,
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    *,
    time_field: str = TIME_COLUMN,
    budget: int = DEFAULT_BUDGET,
    progress: Optional[Callable[[int, int], None]] = None,
) -> pl.DataFrame:
    """Writes the nodes' samples (each path: one node's diagnostic.data) as a dataset in `out`,
    which must not exist or be empty. Returns the node facts table it wrote beside them."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FTDCError(f"{out}: already exists and is not an empty directory (a dataset is written whole, into a new place)")
    lower, upper = map(to_ms, time_range(start, end))
    nodes = _nodes(paths, time_field)
    schemas = _family_schemas(nodes, metric_list(metrics))
    total = sum(len(list(time_windows(n.catalog, len(schemas[n.family]), lower, upper, budget))) for n in nodes)
    finished = 0

    def done() -> None:
        nonlocal finished
        finished += 1
        if progress:
            progress(finished, total)

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial"))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's is private; this one becomes the dataset
    try:
        facts = []
        for node in nodes:
            rows, first, last = _write_node(node, schemas[node.family], staging, lower, upper, time_field, budget, done)
            i = node.info
            facts.append({"node": node.name, "family": node.family, "host": i.host, "port": i.port, "replica_set": i.replica_set,
                          "version": i.version, "os": i.os, "cpus": i.cpus, "memory_mb": i.memory_mb, "cache_size_gb": i.cache_size_gb,
                          "first": first, "last": last, "samples": rows, "files": len(node.catalog.files), "source": node.source})
        table = pl.DataFrame(facts, schema=NODE_FACTS)
        table.write_parquet(staging / NODES_TABLE)
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return table
