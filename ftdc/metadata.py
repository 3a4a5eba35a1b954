"""`read_metadata`: the type-0 documents of each file, the 8.0 type-2
periodic metadata replayed into parameter values over time, and the node's
identity."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import bson
import bson.errors
import polars as pl
from bson import json_util

from .catalog import Catalog, read_catalog
from .errors import FTDCWarning
from .frames import TIME_COLUMN
from .paths import PathArg

METADATA, PERIODIC_METADATA = 0, 2
# 8.0 processes that also act as a router nest every collector under these.
SERVICE_SECTIONS = ("common", "shard", "router")
_BOUNDARY_KEYS = {"start", "end"}
DEFAULT_PORTS = {"shardsvr": 27018, "configsvr": 27019}
# Dates outside Python's range (corrupt or sentinel values) stay DatetimeMS.
_CODEC: bson.CodecOptions[dict[str, Any]] = bson.CodecOptions(
    tz_aware=True, datetime_conversion=bson.DatetimeConversion.DATETIME_AUTO
)


@dataclass(frozen=True)
class MetadataDocument:
    file: str
    offset: int
    time: dt.datetime | None
    doc: dict[str, Any]


@dataclass(frozen=True)
class NodeInfo:
    host: str | None = None
    port: int | None = None
    version: str | None = None
    replica_set: str | None = None
    storage_engine: str | None = None
    cache_size_gb: float | None = None
    os: str | None = None
    cpus: int | None = None
    memory_mb: int | None = None
    # hostInfo's memLimitMB: the memory mongod may use, its container's (cgroup) limit where one is set, the host's
    # otherwise; None where the version does not record it.
    memory_limit_mb: int | None = None

    @property
    def address(self) -> str | None:
        return None if self.host is None else f"{self.host}:{self.port or 27017}"


@dataclass
class Metadata:
    documents: list[MetadataDocument]
    """Type-0 documents (buildInfo, getCmdLineOpts, hostInfo, ...), one per file start."""
    parameters: pl.DataFrame
    """Type-2 snapshots replayed: time, section, parameter, value (as JSON text)."""
    node: NodeInfo = field(default_factory=NodeInfo)


def find_section(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    """`doc[name]`, also looking inside the 8.0 multi-service sections."""
    if isinstance(doc.get(name), dict):
        return doc[name]
    for service in SERVICE_SECTIONS:
        nested = doc.get(service)
        if isinstance(nested, dict) and isinstance(nested.get(name), dict):
            return nested[name]
    return None


def _path(doc: dict[str, Any] | None, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def node_info(doc: dict[str, Any]) -> NodeInfo:
    """Identity and storage settings from one type-0 document."""
    build = find_section(doc, "buildInfo")
    host = find_section(doc, "hostInfo")
    parsed = _path(find_section(doc, "getCmdLineOpts"), "parsed")
    replica_set = _path(parsed, "replication", "replSetName") or _path(parsed, "replication", "replSet")
    cache = _path(parsed, "storage", "wiredTiger", "engineConfig", "cacheSizeGB")
    # getCmdLineOpts lists only options that were set, so absent ones take
    # mongod's defaults: the port follows the cluster role, and WiredTiger
    # has been the default engine since 3.2 (the only other, inMemory, must be set).
    role = _path(parsed, "sharding", "clusterRole")
    return NodeInfo(
        host=_path(host, "system", "hostname"),
        port=_path(parsed, "net", "port") or DEFAULT_PORTS.get(role, 27017),
        version=_path(build, "version"),
        replica_set=replica_set,
        storage_engine=_path(parsed, "storage", "engine") or "wiredTiger",
        cache_size_gb=None if cache is None else float(cache),
        os=_path(host, "os", "name"),
        cpus=_path(host, "system", "numCores"),
        memory_mb=_path(host, "system", "memSizeMB"),
        memory_limit_mb=_path(host, "system", "memLimitMB"),
    )


def replay_periodic(documents: Iterable[tuple[dt.datetime | None, int, dict[str, Any]]]) -> pl.DataFrame:
    """Rebuild each type-2 snapshot: a `count == 0` document is complete, and
    each later delta overwrites only the `section.field`s it carries.
    Deltas before the first complete document have nothing to apply to."""
    state: dict[str, dict[str, Any]] | None = None
    rows = []
    orphans = 0
    for time, count, doc in documents:
        sections = {k: v for k, v in doc.items() if isinstance(v, dict)}
        if count == 0:
            state = {name: dict(values) for name, values in sections.items()}
        elif state is None:
            orphans += 1
            continue
        else:
            for name, changed in sections.items():
                state.setdefault(name, {}).update(changed)
        for name, values in state.items():
            for key, value in values.items():
                if key not in _BOUNDARY_KEYS:
                    rows.append((time, name, key, json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS)))
    if orphans:
        warnings.warn(
            f"{orphans} periodic metadata delta(s) precede any complete document and were skipped", FTDCWarning, stacklevel=3
        )
    return pl.DataFrame(
        rows,
        schema={TIME_COLUMN: pl.Datetime("ms", "UTC"), "section": pl.String, "parameter": pl.String, "value": pl.String},
        orient="row",
    )


def _decoded(cat: Catalog, doc_type: int) -> list[tuple[str, int, dt.datetime | None, int, dict[str, Any]]]:
    """The `doc` of every document of `doc_type`; a damaged one is a warning, not an error."""
    rows = cat.documents.filter(pl.col("type") == doc_type, pl.col("doc").is_not_null())
    decoded = []
    for row in rows.iter_rows(named=True):
        try:
            doc = bson.decode(row["doc"], codec_options=_CODEC)
        except (bson.errors.BSONError, ValueError, OverflowError) as e:
            warnings.warn(f"{row['file']}: offset {row['offset']}: metadata document skipped: {e}", FTDCWarning, stacklevel=3)
            continue
        decoded.append((row["file"], row["offset"], row["_id"], row["count"] or 0, doc))
    return decoded


def read_metadata(path: PathArg) -> Metadata:
    """Metadata of `path`; `node` describes the newest type-0 document."""
    return catalog_metadata(read_catalog(path))


def catalog_metadata(cat: Catalog) -> Metadata:
    """Metadata from an already-read catalog."""
    documents = [MetadataDocument(f, o, t, d) for f, o, t, _, d in _decoded(cat, METADATA)]
    periodic = sorted(_decoded(cat, PERIODIC_METADATA), key=lambda r: (r[2] is None, r[2], r[3]))
    parameters = replay_periodic((t, count, d) for _, _, t, count, d in periodic)
    node = node_info(documents[-1].doc) if documents else NodeInfo()
    return Metadata(documents, parameters, node)
