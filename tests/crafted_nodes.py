"""Test helpers: small nodes written by `ftdc.writer` with whatever identity a test needs
(a crafted host name, version or metric name; two nodes sharing an address)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from ftdc.writer import FTDCWriter

UTC = dt.timezone.utc
START = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)


def write_node(
    directory: Path,
    *,
    hostname: str = "db1.example.net",
    port: int = 27017,
    version: str = "7.0.12",
    replica_set: str | None = None,
    os_name: str = "Ubuntu 22.04",
    cpus: int = 4,
    memory_mb: int = 16384,
    start: dt.datetime = START,
    seconds: int = 120,
    period: int = 1,
    extra: dict | None = None,
) -> Path:
    """A diagnostic.data of samples every `period` s for `seconds` from `start`: uptime, connections
    and opcounters counting up, and `extra` metrics (name -> value) at the sample's top level."""
    parsed = {"net": {"port": port}}
    if replica_set is not None:
        parsed["replication"] = {"replSetName": replica_set}
    metadata = {
        "start": start,
        "buildInfo": {"version": version},
        "getCmdLineOpts": {"parsed": parsed},
        "hostInfo": {"system": {"hostname": hostname, "numCores": cpus, "memSizeMB": memory_mb}, "os": {"name": os_name}},
        "end": start,
    }
    with FTDCWriter(directory, metadata=metadata, samples_per_chunk=60) as writer:
        for i in range(0, seconds, period):
            t = start + dt.timedelta(seconds=i)
            status = {
                "start": t,
                "uptime": 1000 + i,
                "connections": {"current": 5, "totalCreated": 10 + i},
                "opcounters": {"insert": 10 * i, "query": 20 * i},
                "end": t,
            }
            writer.add_sample({"start": t, "serverStatus": status, **(extra or {}), "end": t})
    return directory


def slow_query_line(t: dt.datetime, ns: str, *, host_ctx: str = "conn1", millis: int = 900) -> str:
    """A 4.4+ JSON slow-query line (id 51803) for `ns`, a COLLSCAN."""
    attr = {
        "type": "command",
        "ns": ns,
        "command": {"find": ns.split(".", 1)[-1], "filter": {"status": "x"}},
        "planSummary": "COLLSCAN",
        "docsExamined": 100000,
        "nreturned": 1,
        "durationMillis": millis,
    }
    return json.dumps(
        {
            "t": {"$date": t.isoformat(timespec="milliseconds").replace("+00:00", "Z")},
            "s": "I",
            "c": "COMMAND",
            "id": 51803,
            "ctx": host_ctx,
            "msg": "Slow query",
            "attr": attr,
        }
    )


def startup_line(t: dt.datetime, host: str, port: int = 27017, pid: int = 4242) -> str:
    """The start-up line (id 4615611) that names a log's node."""
    return json.dumps(
        {
            "t": {"$date": t.isoformat(timespec="milliseconds").replace("+00:00", "Z")},
            "s": "I",
            "c": "CONTROL",
            "id": 4615611,
            "ctx": "initandlisten",
            "msg": "MongoDB starting",
            "attr": {"pid": pid, "port": port, "dbPath": "/data/db", "host": host},
        }
    )
