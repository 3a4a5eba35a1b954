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
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from analysis.text import counted, ram
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


def _item(key: str, title: str, severity: str, has: str, why: str, change: str, source: str) -> AuditItem:
    return AuditItem(key, title, severity, has, why, change, source)


def _unrecorded(key: str, title: str, why: str, what_would: str) -> AuditItem:
    return _item(key, title, "info", f"{NOT_RECORDED}: {what_would}", why, "", NOT_RECORDED)


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
    return _item(
        "end_of_life",
        title,
        "info",
        f"{version}: series {series} supported until {eol.isoformat()}",
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
)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts(documents: Sequence[Any], events: pl.DataFrame | None, cache_bytes: float | None, last: dt.datetime | None) -> Facts:
    """The audit's facts from the metadata documents (`ftdc.metadata.MetadataDocument`, the latest start of the process
    first wins: its settings are the ones in effect at the end) and the log's events."""
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
    )


def audit(f: Facts) -> list[AuditItem]:
    """Every rule's item, warnings first."""
    items = [rule(f) for rule in RULES]
    return sorted(items, key=lambda i: i.severity != "warning")
