"""The configuration audit: what a support engineer checks first on a node's set-up, from the
node's own files (`getCmdLineOpts`, `hostInfo`, `buildInfo`, `ulimits` of FTDC's metadata; the
startup warnings of its log). One rule per item; each says what the node has, why it matters
and what to change, with the fact's source, as `warning` or `info`. An item is advice for the
ticket's reply, never an incident: nothing here raises a finding. A node whose files do not
record an item says so. The recommendations are MongoDB's production notes and operations
checklist (docs/config-audit.md cites them).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import polars as pl

from analysis.text import counted, ram
from analysis.workbench.sampled import ARBITER, Sampled
from ftdc.metadata import find_section

# End of life of each release series (MongoDB's legacy support policy; docs/config-audit.md).
END_OF_LIFE = {
    "3.4": dt.date(2020, 1, 31),
    "3.6": dt.date(2021, 4, 30),
    "4.0": dt.date(2022, 4, 30),
    "4.2": dt.date(2023, 4, 30),
    "4.4": dt.date(2024, 2, 29),
    "5.0": dt.date(2024, 10, 31),
    "6.0": dt.date(2025, 7, 31),
    "7.0": dt.date(2027, 8, 31),
    "8.0": dt.date(2029, 10, 31),
}
# The production notes' minimum for open files and processes (ulimit -n / -u).
RECOMMENDED_LIMIT = 64000
# WiredTiger's default cache: 50 % of (RAM - 1 GB), at least 256 MB. Past this share of the RAM the
# rest (connections, aggregations, the file system cache WiredTiger's compressed blocks live in) is squeezed.
CACHE_SHARE_WARNING = 0.6
NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class AuditItem:
    key: str
    title: str
    severity: str  # "warning" or "info"
    has: str  # what the node has
    why: str  # why it matters
    change: str  # what to change ("" when nothing)
    source: str  # where the fact came from
    recommended: str = ""  # the value MongoDB's notes recommend ("" where the item has no one value)

    @property
    def recorded(self) -> bool:
        return self.source != NOT_RECORDED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"recorded": self.recorded}


@dataclass(frozen=True)
class Facts:
    """What the audit reads: the first metadata document's sections, the log's startup lines."""

    cmdline: dict | None  # getCmdLineOpts.parsed
    host: dict | None  # hostInfo
    build: dict | None  # buildInfo
    ulimits: dict | None  # FTDC's ulimits section (4.4+)
    startup: pl.DataFrame | None  # the log's warning lines (msg) when it holds the start-up; None otherwise
    cache_bytes: float | None  # WiredTiger's configured maximum as serverStatus reports it
    last: dt.datetime | None  # the data's last time: whether the series was supported when the data was recorded
    today: dt.date | None = None  # the day the report is read for (None: today's date); whether it is supported now
    parameters: dict[tuple[str, str], Any] | None = None  # 8.0's periodic metadata at its last value: (section, name)
    sampled: Sampled | None = None  # the sampled metrics the audit reads (oplog, connections, members)

    def warning(self, pattern: str) -> str | None:
        """The first start-up line matching `pattern` (case-insensitive), or None."""
        if self.startup is None:
            return None
        hit = self.startup.filter(pl.col("msg").str.contains(f"(?i){pattern}"))
        return hit["msg"][0] if hit.height else None


def _get(doc: dict | None, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _item(key: str, title: str, severity: str, has: str, why: str, change: str, source: str, recommended: str = "") -> AuditItem:
    return AuditItem(key, title, severity, has, why, change, source, recommended)


def _unrecorded(key: str, title: str, why: str, what_would: str, recommended: str = "") -> AuditItem:
    return _item(key, title, "info", f"{NOT_RECORDED}: {what_would}", why, "", NOT_RECORDED, recommended)


def access_control(f: Facts) -> AuditItem:
    why = "without authorization any client that reaches the port reads and writes every database"
    title = "access control"
    security = _get(f.cmdline, "security") or {}
    if (
        security.get("authorization") == "enabled"
        or security.get("keyFile")
        or security.get("clusterAuthMode") in ("keyFile", "x509", "sendX509")
    ):
        how = (
            "security.authorization enabled"
            if security.get("authorization") == "enabled"
            else "a keyFile / cluster authentication (implies authorization)"
        )
        return _item("access_control", title, "info", how, why, "", "getCmdLineOpts")
    line = f.warning("Access control is not enabled")
    if line or f.cmdline is not None:
        return _item(
            "access_control",
            title,
            "warning",
            "off (security.authorization not set)",
            why,
            "enable security.authorization and create users with the least roles they need",
            "log start-up warning 22120" if line else "getCmdLineOpts (no security section: authorization is off by default)",
        )
    return _unrecorded("access_control", title, why, "no getCmdLineOpts nor start-up log")


_EVERY_ADDRESS = {"0.0.0.0", "::", "*", "::,0.0.0.0", "0.0.0.0,::"}


def bind_address(f: Facts) -> AuditItem:
    why = "a server listening on every address is reachable from any network the host is on"
    title = "network binding"
    net = _get(f.cmdline, "net") or {}
    bind = net.get("bindIp")
    if net.get("bindIpAll") or (isinstance(bind, str) and set(x.strip() for x in bind.split(",")) & _EVERY_ADDRESS):
        return _item(
            "bind_address",
            title,
            "warning",
            f"every address ({'bindIpAll' if net.get('bindIpAll') else 'bindIp ' + str(bind)})",
            why,
            "bind to the addresses clients use (net.bindIp) and restrict the port with a firewall; keep authorization on",
            "getCmdLineOpts",
        )
    if bind:
        return _item("bind_address", title, "info", f"bindIp {bind}", why, "", "getCmdLineOpts")
    if f.cmdline is not None:
        return _item(
            "bind_address", title, "info", "localhost only (no bindIp: the default since 3.6)", why, "", "getCmdLineOpts"
        )
    return _unrecorded("bind_address", title, why, "no getCmdLineOpts")


def _startup_check(key: str, title: str, why: str, pattern: str, change: str, checked: bool) -> Callable[[Facts], AuditItem]:
    """An item the log's start-up warnings tell. `checked`: mongod checks it at every start on Linux (THP), so a
    start-up without the warning means the setting is right; otherwise only a warning tells, and its absence nothing."""

    def rule(f: Facts) -> AuditItem:
        line = f.warning(pattern)
        if line:
            return _item(key, title, "warning", _clip(line), why, change, "log start-up warning")
        system = _get(f.host, "os", "type")
        if system not in (None, "Linux"):
            return _item(key, title, "info", f"not applicable ({system})", why, "", "hostInfo.os")
        if checked and f.startup is not None:
            return _item(
                key,
                title,
                "info",
                "no start-up warning (mongod checks it at every start on Linux)",
                why,
                "",
                "log start-up lines",
            )
        return _unrecorded(
            key,
            title,
            why,
            "give the log that holds the node's start-up" if checked else f"mongod's files do not hold it; {change}",
        )

    rule.__name__ = key
    return rule


transparent_huge_pages = _startup_check(
    "transparent_huge_pages",
    "transparent huge pages",
    "THP in the wrong mode for the version stalls the allocator (up to 7.0 disable it; 8.0's TCMalloc wants it enabled)",
    r"transparent_hugepage|transparent huge ?pages",
    "set /sys/kernel/mm/transparent_hugepage/enabled (and defrag) as the warning says, persistently (a systemd unit or tuned profile)",
    True,
)
swappiness = _startup_check(
    "swappiness",
    "swappiness",
    "a high vm.swappiness lets the kernel swap mongod's memory out while file cache stays, and swapped pages stall operations",
    r"swappiness",
    "check sysctl vm.swappiness and set it to 1 (persisted in /etc/sysctl.conf)",
    False,
)
read_ahead = _startup_check(
    "read_ahead",
    "read-ahead",
    "a large read-ahead reads pages WiredTiger never asked for and fills the file system cache with them",
    r"read.?ahead",
    "check blockdev --getra on the data device and set 8-32 sectors (blockdev --setra), per the production notes",
    False,
)


def numa(f: Facts) -> AuditItem:
    why = "on a NUMA host without interleaving mongod's memory concentrates on one node and the kernel reclaims it early"
    title = "NUMA"
    line = f.warning(r"NUMA")
    if line:
        return _item(
            "numa",
            title,
            "warning",
            _clip(line),
            why,
            "start mongod with numactl --interleave=all and set vm.zone_reclaim_mode to 0",
            "log start-up warning",
        )
    enabled = _get(f.host, "system", "numaEnabled")
    if enabled is None:
        return _unrecorded("numa", title, why, "no hostInfo.system.numaEnabled nor start-up log")
    nodes = _get(f.host, "system", "numNumaNodes")
    has = f"NUMA {'enabled' if enabled else 'not enabled'}" + (f", {counted(nodes, 'node')}" if nodes else "")
    severity = "warning" if enabled and (nodes or 2) > 1 else "info"
    return _item(
        "numa",
        title,
        severity,
        has,
        why,
        "start mongod with numactl --interleave=all" if severity == "warning" else "",
        "hostInfo",
    )


def file_system(f: Facts) -> AuditItem:
    why = "WiredTiger on ext4 has shown stalls under checkpoints that XFS does not: XFS is recommended"
    title = "file system of the data"
    mounts = _get(f.host, "extra", "mountInfo")
    db_path = _get(f.cmdline, "storage", "dbPath") or "/data/db"
    if isinstance(mounts, list) and mounts:
        mine = max(
            (
                m
                for m in mounts
                if isinstance(m, dict)
                and isinstance(m.get("mountPoint"), str)
                and (db_path.rstrip("/") + "/").startswith(m["mountPoint"].rstrip("/") + "/")
            ),
            key=lambda m: len(m["mountPoint"]),
            default=None,
        )
        if mine is not None:
            kind = str(mine.get("type"))
            has = f"{kind} (mount {mine['mountPoint']}, holding the dbPath)"
            if kind == "xfs":
                return _item(
                    "file_system", title, "info", has, why, "", "hostInfo.extra.mountInfo, getCmdLineOpts storage.dbPath"
                )
            return _item(
                "file_system",
                title,
                "warning",
                has,
                why,
                "move the data files to an XFS volume",
                "hostInfo.extra.mountInfo, getCmdLineOpts storage.dbPath",
            )
    line = f.warning(r"XFS")
    if line:
        return _item(
            "file_system", title, "warning", _clip(line), why, "move the data files to an XFS volume", "log start-up warning"
        )
    return _unrecorded(
        "file_system", title, why, "no hostInfo.extra.mountInfo (recorded by Linux mongod 4.4+) nor XFS start-up warning"
    )


def _limit(value: Any) -> int | None:
    """A ulimit's soft value (FTDC records {soft, hard}; -1 is unlimited)."""
    soft = value.get("soft") if isinstance(value, dict) else value
    return int(soft) if isinstance(soft, (int, float)) else None


def open_files_and_processes(f: Facts) -> AuditItem:
    why = "every connection and every data file takes a file descriptor, every connection a thread: low limits refuse connections"
    title = "open files and processes (ulimit -n / -u)"
    files = _limit(_get(f.ulimits, "fileDescriptors"))
    processes = _limit(_get(f.ulimits, "processes"))
    source = "FTDC ulimits"
    if files is None and isinstance(_get(f.host, "extra", "maxOpenFiles"), (int, float)):
        files, source = int(_get(f.host, "extra", "maxOpenFiles")), "hostInfo.extra.maxOpenFiles"
    line = f.warning(r"rlimits")
    if files is None and processes is None:
        if line:
            return _item(
                "limits",
                title,
                "warning",
                _clip(line),
                why,
                f"raise nofile and nproc to {RECOMMENDED_LIMIT:,} or more",
                "log start-up warning",
            )
        return _unrecorded("limits", title, why, "no ulimits (FTDC 4.4+) nor hostInfo.extra.maxOpenFiles")
    low = [
        (name, v) for name, v in (("open files", files), ("processes", processes)) if v is not None and 0 <= v < RECOMMENDED_LIMIT
    ]
    has = ", ".join(
        f"{name} {'unlimited' if v is not None and v < 0 else v}"
        for name, v in (("open files", files), ("processes", processes))
        if v is not None
    )
    if low or line:
        return _item(
            "limits",
            title,
            "warning",
            has,
            why,
            f"raise {' and '.join(n for n, _ in low) or 'the limits'} to {RECOMMENDED_LIMIT:,} or more "
            "(limits.conf or the systemd unit's LimitNOFILE / LimitNPROC)",
            source,
        )
    return _item("limits", title, "info", has, why, "", source)


def cache_size(f: Facts) -> AuditItem:
    why = "the WiredTiger cache is one part of mongod's memory; connections, aggregations, the file system cache and other processes need the rest"
    title = "WiredTiger cache against the host's RAM"
    ram_mb = _get(f.host, "system", "memLimitMB") or _get(f.host, "system", "memSizeMB")
    configured = _get(f.cmdline, "storage", "wiredTiger", "engineConfig", "cacheSizeGB")
    cache_gb = float(configured) if isinstance(configured, (int, float)) else (f.cache_bytes / 2**30 if f.cache_bytes else None)
    if not ram_mb or cache_gb is None:
        return _unrecorded("cache_size", title, why, "no hostInfo memory size or no cache size")
    ram_gb = ram_mb / 1024
    default = max(0.25, 0.5 * (ram_gb - 1))
    share = cache_gb / ram_gb
    has = f"{cache_gb:.1f} GB of {ram(ram_mb)} RAM ({share:.0%}; mongod's default here {default:.1f} GB)" + (
        " set by cacheSizeGB" if configured is not None else ""
    )
    source = "getCmdLineOpts cacheSizeGB, hostInfo" if configured is not None else "serverStatus cache maximum, hostInfo"
    if share > CACHE_SHARE_WARNING:
        return _item(
            "cache_size",
            title,
            "warning",
            has,
            why,
            f"lower storage.wiredTiger.engineConfig.cacheSizeGB to about {default:.1f} (the default) unless the host runs nothing else and "
            "the working set needs it",
            source,
        )
    return _item("cache_size", title, "info", has, why, "", source)


def _series(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def end_of_life(f: Facts) -> AuditItem:
    """Whether the series is past its end of life today (what the customer runs now, if nothing changed), and whether it
    already was when the data was recorded."""
    why = "a release past its end of life gets no fixes, security ones included"
    title = "version support"
    version = _get(f.build, "version")
    if not isinstance(version, str):
        return _unrecorded("end_of_life", title, why, "no buildInfo.version")
    numbers = _series(version)
    series = f"{numbers[0]}.{numbers[1]}" if numbers else None
    eol = END_OF_LIFE.get(series or "")
    if eol is None:
        older = numbers is not None and numbers < (3, 4)
        return _item(
            "end_of_life",
            title,
            "warning" if older else "info",
            f"{version}" + (" (end of life long ago)" if older else " (no end-of-life date known for this series)"),
            why,
            "upgrade to a supported release" if older else "",
            "buildInfo",
        )
    today = f.today or dt.datetime.now(dt.timezone.utc).date()
    recorded = f.last.date() if f.last is not None else None
    if today > eol:
        then = (
            ", as it already was when the data was recorded"
            if recorded is None or recorded > eol
            else f"; it was still supported when the data was recorded ({recorded.isoformat()})"
        )
        return _item(
            "end_of_life",
            title,
            "warning",
            f"{version}: series {series} reached its end of life on {eol.isoformat()}, before today{then}",
            why,
            "upgrade to a supported release series (one major release at a time)",
            "buildInfo, MongoDB's support policy",
        )
    then = f" and when the data was recorded ({recorded.isoformat()})" if recorded is not None else ""
    return _item(
        "end_of_life",
        title,
        "info",
        f"{version}: series {series} supported until {eol.isoformat()}: today ({today.isoformat()}){then}",
        why,
        "",
        "buildInfo, MongoDB's support policy",
    )


# Builds that are not a production release: a release candidate (`7.0.0-rc3`), a pre-release (`-alpha`, `-beta`) and
# a development or patch build (`-pre-`, `-patch-`, or git's `-12-gabc1234` past a tag). Before 5.0 an odd minor
# version (4.3, 3.5) is a development series, whatever its suffix; from 5.0 on, odd minors are rapid releases.
_CANDIDATE = re.compile(r"-rc\d*", re.IGNORECASE)
_DEVELOPMENT = re.compile(r"-(?:alpha|beta|pre|patch)|-\d+-g[0-9a-f]{7,}", re.IGNORECASE)


def release_kind(f: Facts) -> AuditItem:
    """A release candidate or a development build running in production: neither is supported there."""
    why = "release candidates and development builds are for testing: they are not supported in production and get no fixes"
    title = "release type"
    version = _get(f.build, "version")
    if not isinstance(version, str):
        return _unrecorded("release_kind", title, why, "no buildInfo.version")
    numbers = _series(version)
    if _CANDIDATE.search(version):
        kind = "a release candidate"
    elif _DEVELOPMENT.search(version):
        kind = "a development build"
    elif numbers is not None and numbers < (5, 0) and numbers[1] % 2 == 1:
        kind = f"a development series ({numbers[0]}.{numbers[1]}: before 5.0 an odd minor version is one)"
    else:
        return _item("release_kind", title, "info", f"{version}: a production release", why, "", "buildInfo")
    return _item(
        "release_kind",
        title,
        "warning",
        f"{version}: {kind}",
        why,
        "run a production release (the latest patch of a supported series)",
        "buildInfo",
    )


# The oplog window this audit asks for: MongoDB's "Replica Set Oplog" page sizes the default for a secondary that can
# stop copying for up to 24 hours, and Atlas keeps 24 hours by default (docs/config-audit.md).
OPLOG_WINDOW_HOURS = 24.0
# An oplog within this share of its maximum is full: from then on its size stays flat and no longer shows the writes.
OPLOG_FULL = 0.95
# Connections past this share of the limit in effect leave no room for a failover's reconnections.
CONNECTIONS_SHARE_WARNING = 0.8
DEFAULT_MAX_INCOMING = 1_000_000  # net.maxIncomingConnections' default (capped by the open-files limit)


def _replica_set(f: Facts) -> bool | None:
    """Whether the node is a replica-set member: its options name a set, or its files hold replSetGetStatus or the
    oplog's statistics; None when nothing tells."""
    if _get(f.cmdline, "replication", "replSetName") or _get(f.cmdline, "replication", "replSet"):
        return True
    s = f.sampled
    if s is not None and (s.members or s.oplog_bytes is not None or s.oplog_window_h is not None):
        return True
    return False if f.cmdline is not None else None


def _standalone(key: str, title: str, why: str) -> AuditItem:
    return _item(key, title, "info", "not applicable: a standalone (no replica set)", why, "", "getCmdLineOpts")


def _size(b: float) -> str:
    if b >= 2**30:
        return f"{b / 2**30:.1f} GB"
    return f"{b / 2**20:.0f} MB" if b >= 2**20 else f"{b / 2**10:.0f} KB"


def oplog_window(f: Facts) -> AuditItem:
    """The oplog's window against the hours a secondary may be down or an initial sync may take. Measured where FTDC
    holds serverStatus.oplog's optimes; otherwise estimated from the rate the collection grew, only while it was
    still growing (a full oplog's size stays flat, whatever the writes); never claimed beyond that."""
    why = "a secondary down or syncing longer than the oplog window falls off it and needs a full initial sync"
    title = "oplog size and window"
    want = f"at least {OPLOG_WINDOW_HOURS:.0f} hours of window"
    member = _replica_set(f)
    if member is False:
        return _standalone("oplog", title, why)
    s = f.sampled or Sampled()
    retention = _get(f.cmdline, "storage", "oplogMinRetentionHours")
    configured = _get(f.cmdline, "replication", "oplogSizeMB")
    size = (
        f"{_size(s.oplog_bytes)} of a {_size(s.oplog_max_bytes)} maximum"
        if s.oplog_bytes is not None and s.oplog_max_bytes
        else None
    )
    set_by = "; ".join(
        x
        for x in (
            f"oplogSizeMB {configured}" if configured is not None else "",
            f"oplogMinRetentionHours {retention} (kept at least that long, past the size)" if retention else "",
        )
        if x
    )
    full = bool(s.oplog_bytes is not None and s.oplog_max_bytes and s.oplog_bytes >= OPLOG_FULL * s.oplog_max_bytes)
    parts = [x for x in (size, set_by) if x]
    raise_it = (
        "raise the oplog's size (replSetResizeOplog, on every member) or set storage.oplogMinRetentionHours, "
        f"to keep {OPLOG_WINDOW_HOURS:.0f} hours or more at the peak write rate"
    )
    if s.oplog_window_h is not None:
        has = f"window {s.oplog_window_h:.1f} h at its shortest over the data (serverStatus.oplog's first and last entries)"
        if not full and size:
            has += "; the oplog is not full yet, so this is its age, not the window it will keep"
        has = "; ".join([has, *parts])
        short = (
            s.oplog_window_h < OPLOG_WINDOW_HOURS and (full or not size) and not (retention and retention >= OPLOG_WINDOW_HOURS)
        )
        return _item(
            "oplog",
            title,
            "warning" if short else "info",
            has,
            why,
            raise_it if short else "",
            "FTDC serverStatus.oplog, local.oplog.rs.stats",
            want,
        )
    g = s.oplog_growth
    if s.oplog_max_bytes and g is not None and not full and g.grew_throughout and g.last_bytes > g.first_bytes:
        rate = (g.last_bytes - g.first_bytes) / g.seconds
        hours = s.oplog_max_bytes / rate / 3600
        has = "; ".join(
            [
                f"window about {hours:,.{1 if hours < 10 else 0}f} h{f' ({hours / 24:,.0f} days)' if hours >= 48 else ''} once full, estimated from the {_size(rate * 3600)} an hour the oplog grew "
                f"over {g.seconds / 3600:.1f} h of data (the window at that write rate; FTDC does not record its entries' times)",
                *parts,
            ]
        )
        short = hours < OPLOG_WINDOW_HOURS and not (retention and retention >= OPLOG_WINDOW_HOURS)
        return _item(
            "oplog", title, "warning" if short else "info", has, why, raise_it if short else "", "FTDC local.oplog.rs.stats", want
        )
    if parts:
        reason = (
            "the oplog is full, so its size no longer shows the write rate, and FTDC did not record its entries' times"
            if full
            else "FTDC did not record its entries' times, and its size did not grow steadily enough to give a rate"
        )
        return _item(
            "oplog",
            title,
            "info",
            f"{'; '.join(parts)}; window {NOT_RECORDED}: {reason}",
            why,
            "",
            "FTDC local.oplog.rs.stats" if size else "getCmdLineOpts",
            want,
        )
    return _unrecorded("oplog", title, why, "no oplog statistics (local.oplog.rs.stats) nor serverStatus.oplog in FTDC", want)


def _parameter(f: Facts, section: str, name: str) -> Any:
    return (f.parameters or {}).get((section, name))


def default_rw_concern(f: Facts) -> AuditItem:
    """The cluster-wide default read and write concerns (8.0's periodic metadata records getDefaultRWConcern). A
    default set on purpose is reported with its trade-off, never moved."""
    why = "writes acknowledged by fewer than a majority can be rolled back at a failover; reads below majority can see them"
    title = "default read and write concerns"
    want = "write concern majority (the implicit default since 5.0, w:1 with an arbiter), read concern local"
    if _replica_set(f) is False:
        return _item("rw_concern", title, "info", "not applicable: a standalone (no replica set)", why, "", "getCmdLineOpts")
    write = _parameter(f, "getDefaultRWConcern", "defaultWriteConcern")
    read = _parameter(f, "getDefaultRWConcern", "defaultReadConcern")
    source = _parameter(f, "getDefaultRWConcern", "defaultWriteConcernSource")
    if write is None and read is None:
        return _unrecorded("rw_concern", title, why, "FTDC records getDefaultRWConcern in 8.0's periodic metadata only", want)
    w = write.get("w") if isinstance(write, dict) else None
    level = read.get("level") if isinstance(read, dict) else None
    has = (
        f"write concern w: {w if w is not None else 'unset'}"
        + (f" ({source})" if source else "")
        + f", read concern {level or 'unset (local)'}"
    )
    if w is not None and w != "majority" and source != "implicit":
        return _item(
            "rw_concern",
            title,
            "warning",
            has + ": set on purpose",
            why,
            "keep it if the latency of a majority acknowledgement matters more than writes a failover can roll back; "
            "otherwise set the default write concern to majority (setDefaultRWConcern)",
            "FTDC getDefaultRWConcern",
            want,
        )
    return _item("rw_concern", title, "info", has, why, "", "FTDC getDefaultRWConcern", want)


def feature_compatibility(f: Facts) -> AuditItem:
    """featureCompatibilityVersion against the binary: below it after an upgrade, the new release's features are off."""
    why = "an FCV below the binary keeps the new release's features off (and a downgrade possible); it is meant to last only while an upgrade settles"
    title = "featureCompatibilityVersion"
    version = _get(f.build, "version")
    numbers = _series(version) if isinstance(version, str) else None
    want = f"{numbers[0]}.{numbers[1]} (the binary's series) once the upgrade is settled" if numbers else "the binary's series"
    fcv = _parameter(f, "getParameter", "featureCompatibilityVersion")
    value = fcv.get("version") if isinstance(fcv, dict) else fcv if isinstance(fcv, str) else None
    if value is None:
        return _unrecorded("fcv", title, why, "FTDC records it in 8.0's periodic metadata only (getParameter)", want)
    has = f"FCV {value} on a {version or 'binary of unknown version'}"
    mine = _series(str(value))
    if numbers and mine and mine < numbers:
        return _item(
            "fcv",
            title,
            "warning",
            has,
            why,
            f'once the upgrade is settled, set it with setFeatureCompatibilityVersion: "{numbers[0]}.{numbers[1]}" '
            "(after it, a downgrade needs a restore)",
            "FTDC getParameter, buildInfo",
            want,
        )
    return _item("fcv", title, "info", has, why, "", "FTDC getParameter, buildInfo", want)


# replSetGetStatus' member states (MemberState) in words.
_STATES = {
    0: "starting up",
    1: "primary",
    2: "secondary",
    3: "recovering",
    5: "in initial sync",
    6: "unknown",
    ARBITER: "arbiter",
    8: "down",
    9: "rolling back",
    10: "removed",
}
# The states that are nouns, as more than one of them reads (the others read alike: "2 down").
_MANY = {"primary": "primaries", "secondary": "secondaries", "arbiter": "arbiters"}


def replica_set_configuration(f: Facts) -> AuditItem:
    """Members and arbiters as this node's replSetGetStatus saw them. FTDC records no replica-set configuration, so
    votes, priorities, hidden and delayed members are said to be not recorded, never guessed."""
    why = "a set needs an odd number of voters of which a majority can fail over; an arbiter holds no data, so a set with one loses its majority commit point when a data-bearing member is down"
    title = "replica-set configuration"
    want = "three or more data-bearing voting members (primary, secondary, secondary), no arbiter"
    unknown = "votes, priorities, hidden and delayed members not recorded (FTDC holds no replica-set configuration; rs.conf() shows them)"
    member = _replica_set(f)
    if member is False:
        return _standalone("replica_set", title, why)
    s = f.sampled or Sampled()
    if not s.members:
        return _unrecorded("replica_set", title, why, "no replSetGetStatus members in FTDC", want)
    arbiters = s.members.count(ARBITER)
    bearing = len(s.members) - arbiters
    counts: dict[str, int] = {}
    for state in s.members:
        name = _STATES.get(state, f"in state {state}")
        counts[name] = counts.get(name, 0) + 1
    has = (
        f"{counted(len(s.members), 'member')} ("
        + ", ".join(counted(n, k, _MANY.get(k, k)) for k, n in counts.items())
        + ")"
        + (f"; a majority is {s.majority_votes:.0f} votes" if s.majority_votes else "")
        + f"; {unknown}"
    )
    source = "FTDC replSetGetStatus"
    if arbiters and bearing <= 2:
        return _item(
            "replica_set",
            title,
            "warning",
            has,
            why,
            "replace the arbiter by a data-bearing secondary (PSS); until then, with a member down, majority writes wait and "
            "the cache holds history for the commit point",
            source,
            want,
        )
    if bearing < 3 and not arbiters:
        return _item(
            "replica_set",
            title,
            "warning",
            has,
            why,
            "add data-bearing members to three: with fewer, one member down leaves no majority or no copy",
            source,
            want,
        )
    return _item("replica_set", title, "info", has, why, "", source, want)


zone_reclaim = _startup_check(
    "zone_reclaim",
    "zone_reclaim_mode",
    "with vm.zone_reclaim_mode on, a NUMA host reclaims memory on the local node before using a remote one, evicting the file system cache and stalling allocations",
    r"zone_reclaim_mode",
    "check /proc/sys/vm/zone_reclaim_mode and set vm.zone_reclaim_mode to 0 (persisted in /etc/sysctl.conf)",
    False,
)


def max_connections(f: Facts) -> AuditItem:
    """The connection limit in effect (serverStatus.connections current + available: net.maxIncomingConnections or
    the open-files limit, the lower) against the most connections the node had open."""
    why = "past the limit mongod refuses connections; a failover or restarted application servers open many at once"
    title = "maxIncomingConnections against the connections seen"
    configured = _get(f.cmdline, "net", "maxIncomingConnections")
    want = f"the default {DEFAULT_MAX_INCOMING:,} (capped by ulimit -n), with the peak well under the limit in effect"
    s = f.sampled or Sampled()
    setting = (
        f"net.maxIncomingConnections {configured:,} (set)"
        if isinstance(configured, (int, float))
        else f"net.maxIncomingConnections not set (default {DEFAULT_MAX_INCOMING:,})"
        if f.cmdline is not None
        else None
    )
    if s.connections_peak is None:
        if setting:
            return _item(
                "max_connections", title, "info", f"{setting}; connections {NOT_RECORDED}", why, "", "getCmdLineOpts", want
            )
        return _unrecorded("max_connections", title, why, "no getCmdLineOpts nor serverStatus.connections", want)
    at = f" at {s.connections_peak_at:%Y-%m-%d %H:%M:%S %Z}" if s.connections_peak_at is not None else ""
    if s.connections_limit:
        share = s.connections_peak / s.connections_limit
        has = f"peak {s.connections_peak:,.0f} open{at} of a limit of {s.connections_limit:,.0f} in effect ({share:.0%})"
    else:
        share, has = None, f"peak {s.connections_peak:,.0f} open{at}; the limit in effect {NOT_RECORDED}"
    has += f"; {setting}" if setting else ""
    source = "FTDC serverStatus.connections" + (", getCmdLineOpts" if setting else "")
    if share is not None and share >= CONNECTIONS_SHARE_WARNING:
        deliberate = isinstance(configured, (int, float)) and configured <= (s.connections_limit or 0)
        change = (
            "the limit was set on purpose: keep it if it guards the host's memory (each connection takes a thread and "
            "about 1 MB), and lower the clients' pool sizes (maxPoolSize) instead; otherwise raise it"
            if deliberate
            else "raise ulimit -n (the limit follows it) and check the clients' pool sizes (maxPoolSize)"
        )
        return _item("max_connections", title, "warning", has, why, change, source, want)
    return _item("max_connections", title, "info", has, why, "", source, want)


_TLS_REQUIRED = {"requireTLS", "requireSSL"}
_TLS_MIXED = {"allowTLS", "preferTLS", "allowSSL", "preferSSL"}


def tls(f: Facts) -> AuditItem:
    """net.tls.mode (4.2+) or net.ssl.mode: whether clients' connections are encrypted."""
    why = "without TLS, credentials' exchanges aside, queries and documents cross the network in clear"
    title = "TLS"
    want = "requireTLS"
    net = _get(f.cmdline, "net") or {}
    mode = _get(net, "tls", "mode") or _get(net, "ssl", "mode")
    option = "net.tls.mode" if _get(net, "tls", "mode") else "net.ssl.mode"
    if f.cmdline is None:
        line = f.warning(r"TLS|SSL")
        if line:
            return _item("tls", title, "info", _clip(line), why, "", "log start-up warning", want)
        return _unrecorded("tls", title, why, "no getCmdLineOpts", want)
    local = set(str(net.get("bindIp") or "localhost").replace(" ", "").split(",")) <= {
        "localhost",
        "127.0.0.1",
        "::1",
    } and not net.get("bindIpAll")
    if mode in _TLS_REQUIRED:
        return _item("tls", title, "info", f"{option} {mode}", why, "", "getCmdLineOpts", want)
    has = (
        f"{option} {mode}: connections without TLS are accepted"
        if mode in _TLS_MIXED
        else (f"{option} disabled" if mode else "off (no net.tls.mode: disabled by default)")
    )
    if local:
        return _item("tls", title, "info", has + "; bound to localhost only", why, "", "getCmdLineOpts", want)
    change = (
        "finish the move to TLS: once every client connects with it, set net.tls.mode to requireTLS"
        if mode in _TLS_MIXED
        else "configure net.tls (certificate, CA) and set net.tls.mode to requireTLS, through allowTLS and preferTLS while clients move"
    )
    return _item("tls", title, "warning", has, why, change, "getCmdLineOpts", want)


RULES: Sequence[Callable[[Facts], AuditItem]] = (
    access_control,
    bind_address,
    transparent_huge_pages,
    swappiness,
    file_system,
    numa,
    open_files_and_processes,
    read_ahead,
    cache_size,
    end_of_life,
    release_kind,
    oplog_window,
    default_rw_concern,
    feature_compatibility,
    replica_set_configuration,
    zone_reclaim,
    max_connections,
    tls,
)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts(
    documents: Sequence[Any],
    events: pl.DataFrame | None,
    cache_bytes: float | None,
    last: dt.datetime | None,
    *,
    parameters: pl.DataFrame | None = None,
    sampled: Sampled | None = None,
) -> Facts:
    """The audit's facts from the metadata documents (`ftdc.metadata.MetadataDocument`, the latest start of the process
    first wins: its settings are the ones in effect at the end), 8.0's periodic metadata (`Metadata.parameters`: each
    parameter's last value), the sampled metrics and the log's events."""
    doc = documents[-1].doc if documents else {}
    startup = None
    if events is not None and "msg" in events.columns and events.filter(pl.col("kind") == "startup").height:
        # Warnings only: JSON logs' severity W, legacy text's "** WARNING:" lines (severity I).
        warned = (pl.col("severity") == "W") | pl.col("msg").str.contains("WARNING", literal=True)
        startup = events.filter(warned).select("msg").drop_nulls()
    return Facts(
        cmdline=_get(find_section(doc, "getCmdLineOpts"), "parsed"),
        host=find_section(doc, "hostInfo"),
        build=find_section(doc, "buildInfo"),
        ulimits=find_section(doc, "ulimits"),
        startup=startup,
        cache_bytes=cache_bytes,
        last=last,
        parameters=_last_parameters(parameters),
        sampled=sampled,
    )


def _last_parameters(parameters: pl.DataFrame | None) -> dict[tuple[str, str], Any] | None:
    """Each (section, parameter)'s last value of the replayed periodic metadata, decoded from its JSON text."""
    if parameters is None or parameters.height == 0:
        return None
    last = parameters.sort(pl.col(parameters.columns[0]), nulls_last=False).group_by("section", "parameter").last()
    out: dict[tuple[str, str], Any] = {}
    for section, name, value in last.select("section", "parameter", "value").iter_rows():
        try:
            out[(section, name)] = json.loads(value)
        except (TypeError, ValueError):
            out[(section, name)] = None
    return out


# The recommended value of the items whose rule does not depend on the node (the others give their own).
RECOMMENDED = {
    "access_control": "security.authorization enabled",
    "bind_address": "the addresses clients use (net.bindIp), behind a firewall",
    "transparent_huge_pages": "disabled up to 7.0, enabled from 8.0 (as mongod's start-up warning says)",
    "swappiness": "vm.swappiness 1",
    "file_system": "xfs",
    "numa": "numactl --interleave=all and vm.zone_reclaim_mode 0 on a NUMA host",
    "limits": f"{RECOMMENDED_LIMIT:,} or more open files and processes",
    "read_ahead": "8 to 32 sectors",
    "cache_size": "the default: 50 % of (RAM - 1 GB), at least 256 MB",
    "end_of_life": "a series still supported",
    "release_kind": "a production release, the latest patch of its series",
    "zone_reclaim": "vm.zone_reclaim_mode 0",
}


def audit(f: Facts) -> list[AuditItem]:
    """Every rule's item, warnings first."""
    items = [replace(item, recommended=item.recommended or RECOMMENDED.get(item.key, "")) for item in (rule(f) for rule in RULES)]
    return sorted(items, key=lambda i: i.severity != "warning")
