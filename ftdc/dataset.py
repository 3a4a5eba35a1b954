"""A fleet's FTDC as one Parquet dataset that Spark, DuckDB and polars each read in one call.

    DIR/samples/family=<mongod-X.Y>/node=<key>/date=<YYYY-MM-DD>/part-0.parquet   raw samples
    DIR/nodes/<key>.parquet                                                       node facts, one row
    DIR/series/..., DIR/findings/...                                              analyses (`analysis.fleet`)

Written node by node: `write_node` writes or replaces only the days it holds of
one node's partition, so workers write in parallel and a new day joins an
existing dataset. `to_dataset` is a manifest pass (`manifest`) plus that loop.
A node is written as it is decoded, a window at a time, the next window decoded
in a worker thread meanwhile (`ahead`): memory holds two windows of `budget` values.
A write is seen whole or not at all: a new dataset is renamed into place when
complete, and a node's days and facts are committed together (`commit`).

A node's key is stable: its address (`host_port`), or for files without one a
digest of their first chunk, never its place in a list; another node at an
address already keyed gets a key of its own (`ftdc.addresses`). A family is the process
and its major.minor version; each node's files hold the metrics it recorded
(readers merge by name: Spark `mergeSchema`, DuckDB `union_by_name`, polars
`missing_columns="insert"`). Spark, Hive, Glue and Athena ignore case, and real
FTDC has lock modes that differ only by it (`acquireCount.r` / `.R`): in a path
component that is one capital letter (a lock mode, on every node alike) or where
names of one node differ only by case, a capital letter X is written `^x`, and
`^` anywhere is written `^^`; `original_name` reverses it.
The samples' files are written by the native core from the decoder's columns
(`_native.ParquetWriter`): a column chunk holding one value is a one-entry
dictionary (a few bytes whatever its rows), other integer and time columns are
delta encoded (times in microseconds), LZ4_RAW on top (a pure-Rust codec, so the
core builds for every platform), statistics only on `start`: about the size of
the FTDC itself. The other tables (node facts, analyses) are written by Arrow
with the same encodings and zstd (`parquet_options`); readers take the codec of
each file as it comes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import os
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from . import _native
from .addresses import IDENTITY, Capture, keys_apart
from .atomic import PARTIAL, named_after, umask, uninterrupted
from .batches import DEFAULT_BUDGET, ahead, decode_columns, time_windows
from .catalog import Catalog, catalog_files
from .decoding import Metrics, metric_list
from .errors import FTDCError
from .frames import TIME_COLUMN, Dtype
from .leftovers import sweep
from .metadata import NodeInfo, catalog_metadata
from .paths import FtdcFile, PathArg, resolve
from .select import select_schema
from .timeutil import TimeArg, time_range, to_ms
from .untrusted import safe_name

SAMPLES, NODES = "samples", "nodes"
NODE_FACTS: dict[str, Dtype] = {
    "node": pl.String,
    "address": pl.String,
    "family": pl.String,
    "host": pl.String,
    "port": pl.Int64,
    "replica_set": pl.String,
    "version": pl.String,
    "os": pl.String,
    "cpus": pl.Int64,
    "memory_mb": pl.Int64,
    "cache_size_gb": pl.Float64,
    "first": pl.Datetime("us", "UTC"),
    "last": pl.Datetime("us", "UTC"),
    "samples": pl.Int64,
    "metrics": pl.Int64,
    "files": pl.Int64,
    "source": pl.String,
    # The FTDC archive files of every capture written (metrics.<time>-00000): what tells copies of one
    # capture (one node) from another node at the same address (`ftdc.addresses`).
    "ftdc_files": pl.List(pl.String),
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
    """`mongod-7.0`; `unknown` when the files carry no version (no metadata document). The
    version is the file's word: a path component made of it is a `safe_name`, as the key is."""
    if not info.version:
        return "unknown"
    return safe_name("mongod-" + ".".join(info.version.split(".")[:2]))


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


def archive_names(catalog: Catalog) -> list[str]:
    return sorted(f.path.name for f in catalog.files if not f.interim)


def _capture(node: Node) -> Capture:
    chunks = node.catalog.chunks
    identity = tuple(getattr(node.info, name) for name in IDENTITY)
    first, last = chunks.select(pl.col("first").min(), pl.col("last").max()).row(0)  # nulls when there are no chunks
    return Capture(node.key, node.info.address, identity, first, last, frozenset(archive_names(node.catalog)), node.source)


def _captured(facts: dict) -> Capture:
    """A node already in a dataset, as its facts describe it."""
    identity = tuple(facts[name] for name in IDENTITY)
    return Capture(
        facts["node"],
        facts["address"],
        identity,
        facts["first"],
        facts["last"],
        frozenset(facts.get("ftdc_files") or ()),
        facts["source"],
    )


def manifest(paths: Sequence[PathArg], time_field: str = TIME_COLUMN, known: pl.DataFrame | None = None) -> list[Node]:
    """Each path's node: key, address, replica set, version, family and metrics, from the catalogs alone.
    Nodes that share an address are told apart (`ftdc.addresses`), from each other and from the
    `known` nodes (a dataset's facts) whose keys they would take."""
    return told_apart([open_node(p, time_field) for p in paths], known)


def told_apart(nodes: Sequence[Node], known: pl.DataFrame | None = None) -> list[Node]:
    """`nodes` with keys that tell nodes sharing an address apart (see `manifest`)."""
    earlier = [_captured(row) for row in known.iter_rows(named=True)] if known is not None else []
    keys = keys_apart([_capture(n) for n in nodes], earlier)
    return [dataclasses.replace(n, key=k) for n, k in zip(nodes, keys)]


# Lock modes (R, W beside r, w): escaped even on a node that recorded only the capital one, so
# every node writes a mode under one column name (the only case collisions real FTDC has).
LOCK_MODE = re.compile(r"[A-Z]")
# What `_escape` changes in a name that no other differs from by case: a `^`, a lock mode component.
ESCAPED = re.compile(r"\^|(?:^|\.)[A-Z](?:\.|$)")


def _escape(component: str, letters: bool) -> str:
    text = component.replace("^", "^^")
    return "".join(f"^{c.lower()}" if c.isupper() else c for c in text) if letters else text


def distinct_names(names: Iterable[str]) -> dict[str, str]:
    """Metric name -> a column name no other differs from by case alone (see the module's docstring)."""
    names = list(names)
    groups: dict[str, list[str]] = defaultdict(list)
    for name in names:
        groups[name.lower()].append(name)
    out = {}
    for name in names:
        group = groups[name.lower()]
        if len(group) == 1 and not ESCAPED.search(name):
            out[name] = name  # most names: nothing to escape (what the rest finds for them, 20 x faster)
            continue
        twins = [t.split(".") for t in group]
        parts = name.split(".")
        differs = [len({t[i] for t in twins}) > 1 or LOCK_MODE.fullmatch(part) is not None for i, part in enumerate(parts)]
        out[name] = ".".join(_escape(p, d) for p, d in zip(parts, differs))
    return out


def original_name(column: str) -> str:
    """The metric name a dataset column holds (`distinct_names` reversed)."""
    return re.sub(r"\^(.)", lambda m: m[1] if m[1] == "^" else m[1].upper(), column)


def parquet_options(schema: pa.Schema, sorted_by: str | None = TIME_COLUMN) -> dict:
    """How the dataset's tables are written by Arrow (node facts, analyses; the samples' writer in the
    native core encodes the same, with LZ4_RAW for zstd): integers and times delta encoded (FTDC's own
    idea: counters change by little), zstd, statistics only where readers prune on them."""
    delta = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_timestamp(f.type)]
    return dict(
        compression="zstd",
        use_dictionary=[f.name for f in schema if pa.types.is_string(f.type)],
        column_encoding={name: "DELTA_BINARY_PACKED" for name in delta},
        coerce_timestamps="us",
        write_statistics=[sorted_by] if sorted_by in schema.names else False,
    )


# A node's files while they are written: DIR/.staged.<pid>-<random>.partial/ mirrors the
# dataset's layout beside samples/ and nodes/, where no reader of those looks.
STAGED = ".staged."


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


@contextlib.contextmanager
def staging(root: Path) -> Iterator[Path]:
    """A hidden folder inside `root` to write one node's files in, then `commit` them; removed
    afterwards (a killed run's by the next run). An error meanwhile names `root`."""
    root.mkdir(parents=True, exist_ok=True)
    sweep(root, STAGED, PARTIAL)
    with named_after(root):
        stage = Path(tempfile.mkdtemp(dir=root, prefix=f"{STAGED}{os.getpid()}-", suffix=PARTIAL))
        try:
            yield stage
        finally:
            shutil.rmtree(stage, ignore_errors=True)


def commit(stage: Path, root: Path, parts: Sequence[Path]) -> None:
    """Moves `parts` (day folders and files, relative to `stage`) to their places under `root`,
    replacing what is there, as one step: SIGINT and SIGTERM wait until it is done, and if
    one move fails those already made are undone. Renames only, so nothing here fills a disk."""
    aside = stage / ".replaced"
    done: list[tuple[Path, Path | None]] = []
    with uninterrupted():
        try:
            for n, part in enumerate(parts):
                target = root / part
                target.parent.mkdir(parents=True, exist_ok=True)
                old = None
                if target.exists():
                    aside.mkdir(exist_ok=True)
                    old = aside / str(n)
                    os.replace(target, old)
                done.append((target, old))
                os.replace(stage / part, target)
        except BaseException:
            for target, old in reversed(done):
                if target.exists():
                    _remove(target)
                if old is not None:
                    os.replace(old, target)
            raise


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
    The node's days and facts are written in a hidden folder inside `root`, then `commit`ted
    together: a reader sees all of them or none (an interrupted write leaves `root` as it was)."""
    node = path if isinstance(path, Node) else open_node(path, time_field)
    root = Path(root)
    with staging(root) as stage:
        facts, parts = _stage_node(node, root, stage, metrics, start, end, time_field, budget, progress)
        commit(stage, root, parts)
    return facts


def _stage_node(
    node: Node,
    root: Path,
    stage: Path,
    metrics: Metrics,
    start: TimeArg,
    end: TimeArg,
    time_field: str,
    budget: int,
    progress: Callable[[], None],
) -> tuple[dict, list[Path]]:
    """The node's day folders and facts file written under `stage`, in the layout of the dataset
    `root`; returns the facts and those parts (days first, facts last)."""
    lower, upper = map(to_ms, time_range(start, end))
    schema = select_schema(node.catalog.schema(), metric_list(metrics), node.source)
    columns = distinct_names(schema)
    kinds = [_file_kind(name, dtype) for name, dtype in schema.items()]
    folder = Path(SAMPLES) / f"family={node.family}" / f"node={node.key}"
    parts: list[Path] = []
    spans: list[Span] = []
    day = None
    writer: _native.ParquetWriter | None = None
    windows = time_windows(node.catalog, len(schema), lower, upper, budget)
    with contextlib.closing(ahead(decode_columns(node.catalog, schema, windows, time_field, budget))) as decoded:
        for times, held in decoded:
            for date, offset, length in _days(times):
                if date != day or writer is None:
                    if writer is not None:
                        writer.close()
                    day, place = date, folder / f"date={date.isoformat()}"
                    parts += [] if place in parts else [place]
                    (stage / place).mkdir(parents=True, exist_ok=True)
                    # The dataset's files are written by the native core (`parquet_write`) from the decoder's columns:
                    # a column that holds one value in a window costs a few bytes whatever its rows, where Arrow's
                    # writer visits each.
                    writer = _native.ParquetWriter(stage / place / "part-0.parquet", list(columns.values()), kinds, [TIME_COLUMN])
                writer.write(held, offset, offset + length)
                spans.append((times[offset], times[offset + length - 1], length))
            progress()
    if writer is not None:
        writer.close()  # left unclosed on an error: the staging folder it lies in is removed
    place = Path(NODES) / f"{node.key}.parquet"
    facts = _facts(node, root, parts, spans, list(columns.values()) if parts else [], place)
    table = pl.DataFrame([facts], schema=NODE_FACTS).to_arrow()
    (stage / NODES).mkdir(exist_ok=True)
    pq.write_table(table, stage / place, **parquet_options(table.schema, None))
    return facts, parts + [place]


def _file_kind(name: str, dtype: Dtype) -> str:
    """A column's kind in the native writer: the decoder's columns are integers, booleans and times."""
    if dtype == pl.Int64:
        return "int64"
    if dtype == pl.Boolean:
        return "boolean"
    if isinstance(dtype, pl.Datetime) and dtype.time_zone == "UTC":
        return "timestamp"
    raise FTDCError(f"{name}: a column of {dtype} has no place in the dataset")


# The first and last time and the number of samples of some days of a node.
Span = tuple[dt.datetime, dt.datetime, int]


def _days(times: pl.Series) -> Iterator[tuple[dt.date, int, int]]:
    """Each day of a window's `times` (in time order, as the decoder gives them): its date, first row and rows."""
    offset = 0
    for length, date in times.dt.date().rle().struct.unnest().iter_rows():
        yield date, offset, length
        offset += length


def _facts(node: Node, root: Path, parts: list[Path], spans: list[Span], columns: list[str], place: Path) -> dict:
    """The node's facts row: what this capture says of it, and what the dataset will hold of it once
    `parts` are committed (their samples as `spans`, holding `columns`; its days kept from earlier
    captures too: samples, span, metrics, files)."""
    kept = [
        p
        for p in root.glob(f"{SAMPLES}/family=*/node={node.key}/date=*/part-0.parquet")
        if p.parent.relative_to(root) not in parts
    ]
    if kept:
        times = pl.concat([pl.scan_parquet(f).select(TIME_COLUMN) for f in kept])
        spans = [
            *spans,
            times.select(first=pl.col(TIME_COLUMN).min(), last=pl.col(TIME_COLUMN).max(), samples=pl.len()).collect().row(0),
        ]
    held = (
        pl.DataFrame(spans, schema={"first": NODE_FACTS["first"], "last": NODE_FACTS["last"], "samples": pl.Int64}, orient="row")
        .select(pl.col("first").min(), pl.col("last").max(), pl.col("samples").sum())
        .row(0, named=True)
    )
    metrics = set(columns).union(*(pq.read_schema(f).names for f in kept)) - {TIME_COLUMN}
    before = pl.read_parquet(root / place).row(0, named=True) if (root / place).exists() else {}
    files = sorted(set(before.get("ftdc_files") or ()) | set(archive_names(node.catalog)))
    sources = dict.fromkeys([*(before["source"].split("; ") if before.get("source") else []), node.source])
    i = node.info
    return {
        "node": node.key,
        "address": i.address,
        "family": node.family,
        "host": i.host,
        "port": i.port,
        "replica_set": i.replica_set,
        "version": i.version,
        "os": i.os,
        "cpus": i.cpus,
        "memory_mb": i.memory_mb,
        "cache_size_gb": i.cache_size_gb,
        **held,
        "metrics": len(metrics),
        "files": len(files),
        "source": "; ".join(sources),
        "ftdc_files": files,
    }


def to_dataset(
    paths: Sequence[PathArg],
    out: str | os.PathLike,
    metrics: Metrics = None,
    start: TimeArg = None,
    end: TimeArg = None,
    *,
    time_field: str = TIME_COLUMN,
    budget: int = DEFAULT_BUDGET,
    progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """Writes the nodes' samples (each path: one node's diagnostic.data) into the dataset `out`
    (new, or an existing one to add days or nodes to). Returns the facts of the nodes written, one
    row per node (captures of one node on different days are one node; `manifest` tells nodes
    sharing an address apart).
    A new dataset is written whole beside `out` and renamed to it at the end (`out` appears
    complete or not at all); an existing one takes each node whole (`write_node`)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FTDCError(f"{out}: exists and is not a directory")
    fresh = not out.exists() or not any(out.iterdir())
    if not fresh and not (out / SAMPLES).is_dir():
        raise FTDCError(f"{out}: is not empty and holds no dataset (no {SAMPLES}/ folder): give a new directory")
    lower, upper = map(to_ms, time_range(start, end))
    nodes = manifest(paths, time_field, None if fresh else read_nodes(out))
    wanted = metric_list(metrics)
    total = sum(
        len(list(time_windows(n.catalog, len(select_schema(n.catalog.schema(), wanted, n.source)), lower, upper, budget)))
        for n in nodes
    )
    finished = 0

    def done() -> None:
        nonlocal finished
        finished += 1
        if progress:
            progress(finished, total)

    def write(root: Path) -> pl.DataFrame:
        facts = {}  # by key: a node's later capture's row holds the earlier ones'
        for node in nodes:
            facts[node.key] = write_node(node, root, metrics, start, end, time_field=time_field, budget=budget, progress=done)
        return pl.DataFrame(list(facts.values()), schema=NODE_FACTS)

    if not fresh:
        return write(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep(out.parent, f".{out.name}.", PARTIAL)  # a killed run's
    with named_after(out):
        stage = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.{os.getpid()}-", suffix=PARTIAL))
        try:
            stage.chmod(0o777 & ~umask())
            facts = write(stage)
            os.replace(stage, out)  # over an empty directory too
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
    return facts


def read_nodes(root: str | os.PathLike) -> pl.DataFrame:
    """The dataset's node facts, one row per node."""
    files = sorted((Path(root) / NODES).glob("*.parquet"))
    # A dataset written before a column was added lacks it: null there.
    return pl.concat([pl.DataFrame(schema=NODE_FACTS), *(pl.read_parquet(f) for f in files)], how="diagonal_relaxed")
