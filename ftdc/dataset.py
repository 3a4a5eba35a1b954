"""A fleet's FTDC as one Parquet dataset that Spark, DuckDB and polars each read in one call.

    DIR/samples/family=<mongod-X.Y>/node=<key>/date=<YYYY-MM-DD>/part-0.parquet   raw samples
    DIR/nodes/<key>.parquet                                                       node facts, one row
    DIR/series/..., DIR/findings/...                                              analyses (`analysis.fleet`)

Written node by node: `write_node` writes or replaces only the days it holds of
one node's partition, so workers write in parallel and a new day joins an
existing dataset. `to_dataset` is a manifest pass (`manifest`) plus that loop.

A node's key is stable: its address (`host_port`), or for files without one a
digest of their first chunk, never its place in a list. A family is the process
and its major.minor version; each node's files hold the metrics it recorded
(readers merge by name: Spark `mergeSchema`, DuckDB `union_by_name`, polars
`missing_columns="insert"`). Spark, Hive, Glue and Athena ignore case, and real
FTDC has lock modes that differ only by it (`acquireCount.r` / `.R`): in a path
component that is one capital letter (a lock mode, on every node alike) or where
names of one node differ only by case, a capital letter X is written `^x`, and
`^` anywhere is written `^^`; `original_name` reverses it.
Integer and time columns are delta encoded (times in microseconds), zstd
on top, no dictionary and no statistics but for `start`: about the size of the
FTDC itself.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from .batches import DEFAULT_BUDGET, decode_windows, time_windows
from .catalog import Catalog, catalog_files
from .errors import FTDCError
from .frames import TIME_COLUMN
from .metadata import NodeInfo, catalog_metadata
from .paths import FtdcFile, PathArg, resolve
from .reader import Metrics, metric_list
from .select import select_schema
from .timeutil import TimeArg, time_range, to_ms

SAMPLES, NODES = "samples", "nodes"
NODE_FACTS = {
    "node": pl.String, "address": pl.String, "family": pl.String, "host": pl.String, "port": pl.Int64, "replica_set": pl.String,
    "version": pl.String, "os": pl.String, "cpus": pl.Int64, "memory_mb": pl.Int64, "cache_size_gb": pl.Float64,
    "first": pl.Datetime("us", "UTC"), "last": pl.Datetime("us", "UTC"), "samples": pl.Int64, "metrics": pl.Int64, "files": pl.Int64,
    "source": pl.String,
}


@dataclass
class Node:
    """One node of a manifest: what it is and what its files hold, nothing decoded."""

    key: str
    family: str
    info: NodeInfo
    catalog: Catalog
    source: str


def family_of(info: NodeInfo) -> str:
    """`mongod-7.0`; `unknown` when the files carry no version (no metadata document)."""
    if not info.version:
        return "unknown"
    return "mongod-" + ".".join(info.version.split(".")[:2])


def safe_name(text: str) -> str:
    """A path component that is also a clean hive value."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "node"


def node_key(info: NodeInfo, files: Sequence[FtdcFile]) -> str:
    """`host_port`; without an address, a digest of the files' names (mongod names each by
    the time it was opened), so the same files get the same key wherever they are listed."""
    if info.address:
        return safe_name(info.address)
    return "unknown-" + hashlib.sha1("|".join(sorted(f.path.name for f in files)).encode()).hexdigest()[:12]


def open_node(path: PathArg, time_field: str = TIME_COLUMN) -> Node:
    catalog = catalog_files(resolve(path), time_field)
    info = catalog_metadata(catalog).node
    return Node(node_key(info, catalog.files), family_of(info), info, catalog, str(path))


def manifest(paths: Sequence[PathArg], time_field: str = TIME_COLUMN) -> list[Node]:
    """Each path's node: key, address, replica set, version, family and metrics, from the catalogs alone."""
    return [open_node(p, time_field) for p in paths]


# Lock modes (R, W beside r, w): escaped even on a node that recorded only the capital one, so
# every node writes a mode under one column name (the only case collisions real FTDC has).
LOCK_MODE = re.compile(r"[A-Z]")


def _escape(component: str, letters: bool) -> str:
    text = component.replace("^", "^^")
    return "".join(f"^{c.lower()}" if c.isupper() else c for c in text) if letters else text


def distinct_names(names: Iterable[str]) -> dict[str, str]:
    """Metric name -> a column name no other differs from by case alone (see the module's docstring)."""
    names = list(names)
    groups: dict[str, list[list[str]]] = defaultdict(list)
    for name in names:
        groups[name.lower()].append(name.split("."))
    out = {}
    for name in names:
        parts = name.split(".")
        twins = groups[name.lower()]
        differs = [len({t[i] for t in twins}) > 1 or LOCK_MODE.fullmatch(part) is not None for i, part in enumerate(parts)]
        out[name] = ".".join(_escape(p, d) for p, d in zip(parts, differs))
    return out


def original_name(column: str) -> str:
    """The metric name a dataset column holds (`distinct_names` reversed)."""
    return re.sub(r"\^(.)", lambda m: m[1] if m[1] == "^" else m[1].upper(), column)


def parquet_options(schema: pa.Schema, sorted_by: Optional[str] = TIME_COLUMN) -> dict:
    """How the dataset's files are written: integers and times delta encoded (FTDC's own idea:
    counters change by little), zstd, statistics only where readers prune on them."""
    delta = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_timestamp(f.type)]
    return dict(compression="zstd", use_dictionary=[f.name for f in schema if pa.types.is_string(f.type)],
                column_encoding={name: "DELTA_BINARY_PACKED" for name in delta}, coerce_timestamps="us",
                write_statistics=[sorted_by] if sorted_by in schema.names else False)


def replace_dir(staged: Path, target: Path) -> None:
    """`target` becomes `staged` (written whole beside it): the old one is moved aside, then removed."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.{os.getpid()}.old")
        os.replace(target, old)
    os.replace(staged, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_file(table: pa.Table, target: Path, **options) -> None:
    """One Parquet file written beside `target` and renamed over it when whole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    os.close(fd)
    try:
        pq.write_table(table, tmp, **options)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_node(
    path: PathArg | Node,
    root: str | os.PathLike,
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    *,
    time_field: str = TIME_COLUMN,
    budget: int = DEFAULT_BUDGET,
    progress: Callable[[], None] = lambda: None,
) -> dict:
    """Writes one node's samples (a diagnostic.data path, or a `manifest` entry) into the dataset
    at `root`, replacing only the days of that node it writes, and its facts row; returns the row.
    Each day is written in a hidden folder beside its place and moved there when whole."""
    node = path if isinstance(path, Node) else open_node(path, time_field)
    root = Path(root)
    lower, upper = map(to_ms, time_range(start, end))
    schema = select_schema(node.catalog.schema(), metric_list(metrics), node.source)
    columns = distinct_names(schema)
    folder = root / SAMPLES / f"family={node.family}" / f"node={node.key}"
    folder.mkdir(parents=True, exist_ok=True)
    rows, first, last = 0, None, None
    day, writer, staged = None, None, None
    try:
        windows = time_windows(node.catalog, len(schema), lower, upper, budget)
        for frame in decode_windows(node.catalog, schema, windows, time_field, budget):
            frame = frame.rename(columns)
            if frame.height:
                first = frame[TIME_COLUMN].min() if first is None else first
                last = frame[TIME_COLUMN].max()
                rows += frame.height
            days = frame.with_columns(_day=pl.col(TIME_COLUMN).dt.date()).partition_by("_day", as_dict=True, include_key=False, maintain_order=True)
            for (date,), part in days.items():
                part = part.to_arrow()
                if date != day:
                    if writer is not None:
                        writer.close()
                        replace_dir(staged, folder / f"date={day.isoformat()}")
                    day, staged = date, Path(tempfile.mkdtemp(dir=folder, prefix=f".date={date.isoformat()}.", suffix=".partial"))
                    staged.chmod(0o777 & ~_umask())
                    writer = pq.ParquetWriter(staged / "part-0.parquet", part.schema, **parquet_options(part.schema))
                writer.write_table(part, row_group_size=1 << 20)
            progress()
        if writer is not None:
            writer.close()
            writer = None
            replace_dir(staged, folder / f"date={day.isoformat()}")
    except BaseException:
        if writer is not None:
            writer.close()
        if staged is not None and staged.exists():
            shutil.rmtree(staged, ignore_errors=True)
        raise
    i = node.info
    facts = {"node": node.key, "address": i.address, "family": node.family, "host": i.host, "port": i.port, "replica_set": i.replica_set,
             "version": i.version, "os": i.os, "cpus": i.cpus, "memory_mb": i.memory_mb, "cache_size_gb": i.cache_size_gb,
             "first": first, "last": last, "samples": rows, "metrics": len(schema) - 1, "files": len(node.catalog.files), "source": node.source}
    table = pl.DataFrame([facts], schema=NODE_FACTS).to_arrow()
    write_file(table, root / NODES / f"{node.key}.parquet", **parquet_options(table.schema, None))
    return facts


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
    """Writes the nodes' samples (each path: one node's diagnostic.data) into the dataset `out`
    (new, or an existing one to add days or nodes to). Returns the facts of the nodes written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FTDCError(f"{out}: exists and is not a directory")
    if out.exists() and any(out.iterdir()) and not (out / SAMPLES).is_dir():
        raise FTDCError(f"{out}: is not empty and holds no dataset (no {SAMPLES}/ folder): give a new directory")
    lower, upper = map(to_ms, time_range(start, end))
    nodes = manifest(paths, time_field)
    wanted = metric_list(metrics)
    total = sum(len(list(time_windows(n.catalog, len(select_schema(n.catalog.schema(), wanted, n.source)), lower, upper, budget))) for n in nodes)
    finished = 0

    def done() -> None:
        nonlocal finished
        finished += 1
        if progress:
            progress(finished, total)

    facts = [write_node(node, out, metrics, start, end, time_field=time_field, budget=budget, progress=done) for node in nodes]
    return pl.DataFrame(facts, schema=NODE_FACTS)


def read_nodes(root: str | os.PathLike) -> pl.DataFrame:
    """The dataset's node facts, one row per node."""
    files = sorted((Path(root) / NODES).glob("*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame(schema=NODE_FACTS)
