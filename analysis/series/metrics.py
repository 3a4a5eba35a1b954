"""The one alias table: canonical metric names -> each version's FTDC paths.

Detectors read canonical names only; which path a node wrote (3.6 - 8.0,
`transaction.*` checkpoint statistics vs 7.1+ `checkpoint.*`, tickets under
`concurrentTransactions` vs 8.0 `queues.execution`, the 8.0 multi-service
`shard.`/`common.` prefixes) is decided here, once (docs/metrics.md §2-§10).

`{key}` in a path is a wildcard for one path component (a disk device, a
replica-set member's index); the canonical name keeps it:
`disk.io_time_ms.{key}` -> `disk.io_time_ms.nvme0n1`.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

SS = "serverStatus."
WT = "serverStatus.wiredTiger."
# 8.0 processes that also run a router nest every collector under one of these
# (docs/ftdc-format.md §6); the shard's serverStatus is the mongod's own.
SERVICE_PREFIXES = ("", "shard.", "common.")

COUNTER, GAUGE = "counter", "gauge"
# /proc/stat's states as systemMetrics.cpu names them; their sum is all the cores' time.
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# Windows' PhysicalDisk counters the disk columns read, by the name they take here.
WINDOWS_DISK_COUNTERS = {
    "reads": "Disk Reads/sec",
    "writes": "Disk Writes/sec",
    "read_bytes": "Disk Read Bytes/sec",
    "write_bytes": "Disk Write Bytes/sec",
    "read_time_100ns": "% Disk Read Time",
    "write_time_100ns": "% Disk Write Time",
}


@dataclass(frozen=True)
class Alias:
    name: str
    kind: str  # COUNTER (cumulative) or GAUGE
    paths: tuple[str, ...]  # in order of preference; several may be present across an upgrade


def _alias(name: str, kind: str, *paths: str) -> Alias:
    return Alias(name, kind, paths)


def _tickets() -> list[Alias]:
    out = []
    for rw in ("read", "write"):
        old, new = f"{WT}concurrentTransactions.{rw}.", f"{SS}queues.execution.{rw}."
        out += [
            _alias(f"tickets.{rw}.out", GAUGE, old + "out", new + "out"),
            _alias(f"tickets.{rw}.available", GAUGE, old + "available", new + "available"),
            _alias(f"tickets.{rw}.total", GAUGE, old + "totalTickets", new + "totalTickets"),
            # 6.1-6.x keep the queue at the top level, 7.0+ per priority (docs/metrics.md §4).
            _alias(
                f"tickets.{rw}.queue_length",
                GAUGE,
                old + "normalPriority.queueLength",
                new + "normalPriority.queueLength",
                old + "queueLength",
            ),
            _alias(
                f"tickets.{rw}.queued_micros",
                COUNTER,
                old + "normalPriority.totalTimeQueuedMicros",
                new + "normalPriority.totalTimeQueuedMicros",
            ),
            _alias(f"tickets.{rw}.low_queue_length", GAUGE, old + "lowPriority.queueLength"),
        ]
    return out


def _latencies() -> list[Alias]:
    out = []
    for op in ("reads", "writes", "commands", "transactions"):
        out += [
            _alias(f"latency.{op}.micros", COUNTER, f"{SS}opLatencies.{op}.latency"),
            _alias(f"latency.{op}.ops", COUNTER, f"{SS}opLatencies.{op}.ops"),
            # 8.0: latency less lock, ticket and write-concern waits (docs/metrics.md §5).
            _alias(f"working.{op}.micros", COUNTER, f"{SS}opWorkingTime.{op}.latency"),
        ]
    return out


ALIASES: tuple[Alias, ...] = (
    # Process identity: restarts reset every serverStatus counter.
    _alias("pid", GAUGE, SS + "pid"),
    _alias("uptime_ms", GAUGE, SS + "uptimeMillis"),
    _alias("uptime_s", GAUGE, SS + "uptime"),
    # serverStatus's own run time grows when the server stalls (docs/metrics.md §1).
    _alias("collect.start", GAUGE, SS + "start"),
    _alias("collect.end", GAUGE, SS + "end"),
    *_latencies(),
    *(
        _alias(f"opcounters.{op}", COUNTER, f"{SS}opcounters.{op}")
        for op in ("insert", "query", "update", "delete", "getmore", "command")
    ),
    # WiredTiger cache (docs/metrics.md §3).
    _alias("cache.max_bytes", GAUGE, WT + "cache.maximum bytes configured"),
    _alias("cache.bytes", GAUGE, WT + "cache.bytes currently in the cache"),
    _alias("cache.dirty_bytes", GAUGE, WT + "cache.tracked dirty bytes in the cache"),
    _alias("cache.updates_bytes", GAUGE, WT + "cache.bytes allocated for updates"),
    _alias(
        "cache.app_evicted_pages",
        COUNTER,
        WT + "cache.pages evicted by application threads",
        WT + "cache.page evict attempts by application threads",
    ),
    _alias("cache.app_evicted_modified", COUNTER, WT + "cache.modified pages evicted by application threads"),
    _alias(
        "cache.app_evict_micros",
        COUNTER,
        WT + "thread-yield.application thread time evicting (usecs)",
        WT + "cache.application thread time evicting (usecs)",
    ),
    _alias("cache.app_wait_micros", COUNTER, WT + "thread-yield.application thread time waiting for cache (usecs)"),
    _alias("cache.timeouts", COUNTER, WT + "cache.operations timed out waiting for space in cache"),
    _alias("cache.aggressive", GAUGE, WT + "cache.eviction currently operating in aggressive mode"),
    # Checkpoints: 3.6-7.0 `transaction.*`, 7.1+ `checkpoint.*` (WT-11171; docs/metrics.md §2).
    _alias(
        "checkpoint.running", GAUGE, WT + "transaction.transaction checkpoint currently running", WT + "checkpoint.progress state"
    ),
    _alias(
        "checkpoint.started",
        COUNTER,
        WT + "transaction.transaction checkpoints",
        WT + "checkpoint.number of checkpoints started",
        WT + "checkpoint.number of checkpoints started by api",
    ),
    _alias("checkpoint.succeeded", COUNTER, WT + "checkpoint.total succeed number of checkpoints"),
    _alias("checkpoint.failed", COUNTER, WT + "checkpoint.total failed number of checkpoints"),
    _alias(
        "checkpoint.last_ms",
        GAUGE,
        WT + "transaction.transaction checkpoint most recent time (msecs)",
        WT + "checkpoint.most recent time (msecs)",
    ),
    _alias(
        "checkpoint.total_ms",
        COUNTER,
        WT + "transaction.transaction checkpoint total time (msecs)",
        WT + "checkpoint.total time (msecs)",
    ),
    _alias("checkpoint.generation", GAUGE, WT + "transaction.transaction checkpoint generation", WT + "checkpoint.generation"),
    # Scrub time precedes "most recent time" up to 7.2 (WT-11999); 7.3+ names it per checkpoint.
    _alias(
        "checkpoint.scrub_ms",
        GAUGE,
        WT + "transaction.transaction checkpoint scrub time (msecs)",
        WT + "checkpoint.scrub time (msecs)",
    ),
    _alias("checkpoint.bytes_written", COUNTER, WT + "block-manager.bytes written for checkpoint"),
    # What mongod itself read from and wrote to its data files (WiredTiger's block manager): against the device's bytes,
    # the I/O another process did (docs/metrics.md §8).
    _alias("storage.bytes_read", COUNTER, WT + "block-manager.bytes read"),
    _alias("storage.bytes_written", COUNTER, WT + "block-manager.bytes written"),
    # ...and to its journal (WiredTiger's log: every write to the log files, padding included), which the block manager
    # does not count.
    _alias("journal.bytes_written", COUNTER, WT + "log.log bytes written"),
    _alias(
        "checkpoint.gather_handles_micros",
        GAUGE,
        WT + "transaction.transaction checkpoint most recent duration for gathering all handles (usecs)",
        WT + "checkpoint.most recent duration for gathering all handles (usecs)",
    ),
    # Admission (docs/metrics.md §4).
    *_tickets(),
    _alias("queue.readers", GAUGE, SS + "globalLock.currentQueue.readers"),
    _alias("queue.writers", GAUGE, SS + "globalLock.currentQueue.writers"),
    _alias("active.readers", GAUGE, SS + "globalLock.activeClients.readers"),
    _alias("active.writers", GAUGE, SS + "globalLock.activeClients.writers"),
    # Query execution (docs/metrics.md §6).
    _alias("query.collscans", COUNTER, SS + "metrics.queryExecutor.collectionScans.total"),
    _alias("query.scanned_objects", COUNTER, SS + "metrics.queryExecutor.scannedObjects"),
    _alias("query.scanned_keys", COUNTER, SS + "metrics.queryExecutor.scanned"),
    _alias("query.returned", COUNTER, SS + "metrics.document.returned"),
    # TTL (docs/metrics.md §7).
    _alias("ttl.deleted", COUNTER, SS + "metrics.ttl.deletedDocuments"),
    _alias("ttl.passes", COUNTER, SS + "metrics.ttl.passes"),
    _alias("ttl.subpasses", COUNTER, SS + "metrics.ttl.subPasses"),
    # Disks, per device, counted since boot (docs/metrics.md §8).
    *(
        _alias(f"disk.{field}.{{key}}", COUNTER, f"systemMetrics.disks.{{key}}.{field}")
        for field in (
            "io_time_ms",
            "io_queued_ms",
            "reads",
            "writes",
            "read_time_ms",
            "write_time_ms",
            "read_sectors",
            "write_sectors",
        )
    ),
    # Windows records its disks as PhysicalDisk performance counters per instance ("0 C:"; ftdc_system_stats_windows.cpp), each
    # counter's raw cumulative value (perfctr_collect.cpp): requests and bytes, and the time requests took in 100 ns units
    # (% Disk Read/Write Time's first value; FTDC's own sample times stand in for its clock). The time the disk was busy
    # (% Idle Time) is not among them.
    *(
        _alias(f"disk.windows_{field}.{{key}}", COUNTER, f"systemMetrics.disks.{{key}}.\\PhysicalDisk\\{counter}")
        for field, counter in WINDOWS_DISK_COUNTERS.items()
    ),
    # The host's CPU time by state, summed over its cores (ms since boot; the report's system panels).
    *(_alias(f"cpu.{state}_ms", COUNTER, f"systemMetrics.cpu.{state}_ms") for state in CPU_STATES),
    # The host's logical cores (8.0 names them num_logical_cores), and its tasks runnable at the sample: /proc/stat's
    # procs_running, a gauge of the whole host (the thread reading it among them) that counts those on a core and those
    # waiting for one (cpu_saturation).
    _alias("cpu.cores", GAUGE, "systemMetrics.cpu.num_cpus", "systemMetrics.cpu.num_logical_cores"),
    _alias("cpu.procs_running", GAUGE, "systemMetrics.cpu.procs_running"),
    # mongod's own CPU time, user and kernel (µs since the process started; newer versions: the 7.0 and 8.0 samples hold
    # them, the 4.2.1 macOS one does not).
    _alias("cpu.mongod_user_us", COUNTER, SS + "extra_info.user_time_us"),
    _alias("cpu.mongod_system_us", COUNTER, SS + "extra_info.system_time_us"),
    # Memory, paging and the network as mongod and the host see them (the report's system panels).
    _alias("mem.resident_mb", GAUGE, SS + "mem.resident"),
    _alias("mem.swap_total_kb", GAUGE, "systemMetrics.memory.SwapTotal_kb"),
    _alias("mem.swap_free_kb", GAUGE, "systemMetrics.memory.SwapFree_kb"),
    _alias("mem.page_faults", COUNTER, SS + "extra_info.page_faults"),
    _alias("net.bytes_in", COUNTER, SS + "network.bytesIn"),
    _alias("net.bytes_out", COUNTER, SS + "network.bytesOut"),
    _alias("net.requests", COUNTER, SS + "network.numRequests"),
    *(_alias(f"documents.{op}", COUNTER, f"{SS}metrics.document.{op}") for op in ("inserted", "updated", "deleted")),
    # The oplog's earliest and latest entries (their optimes' seconds; serverStatus.oplog, which FTDC's serverStatus
    # asks for to give the oplog window): its window. local.oplog.rs.stats' start and end are not: they are when
    # the collector ran (every collector's own timestamps), a few milliseconds apart. Nodes without the section do
    # not record the window.
    _alias("oplog.first", GAUGE, SS + "oplog.earliestOptime.t"),
    _alias("oplog.last", GAUGE, SS + "oplog.latestOptime.t"),
    # The oplog collection's size, entries and configured maximum (FTDC's collStats of local.oplog.rs; 8.0 nests them
    # under storageStats): the configuration audit sizes the oplog from them (analysis/workbench/audit.py).
    _alias("oplog.bytes", GAUGE, "local.oplog.rs.stats.size", "local.oplog.rs.stats.storageStats.size"),
    _alias("oplog.max_bytes", GAUGE, "local.oplog.rs.stats.maxSize", "local.oplog.rs.stats.storageStats.maxSize"),
    # Votes a majority needs (replSetGetStatus, 4.2+): the audit's replica-set configuration.
    _alias("repl.majority_votes", GAUGE, "replSetGetStatus.majorityVoteCount"),
    _alias(
        "pressure.io_full_micros",
        COUNTER,
        "systemMetrics.pressure.io.full.totalMicros",
        SS + "extra_info.pressure.io.full.totalMicros",
    ),
    # Index builds (6.0+): registered, and committed; a build runs between the two (IndexBuildsCoordinator::IndexBuildsSSS).
    _alias("index.builds_started", COUNTER, SS + "indexBuilds.total"),
    _alias("index.builds_committed", COUNTER, SS + "indexBuilds.phases.commit"),
    # Transactions open, and of them idle between statements; what the oldest snapshot pins in WiredTiger.
    _alias("txn.open", GAUGE, SS + "transactions.currentOpen"),
    _alias("txn.inactive", GAUGE, SS + "transactions.currentInactive"),
    _alias("txn.pinned_ids", GAUGE, WT + "transaction.transaction range of IDs currently pinned"),
    _alias("cache.history_store_bytes", GAUGE, WT + "cache.history store table on-disk size"),
    _alias("cache.bytes_read_into", COUNTER, WT + "cache.bytes read into cache"),
    # A shard's chunk migrations, each side, and the documents the range deleter removed from the donor after them
    # (serverStatus.shardingStatistics on a shard's members, ShardingStatistics::report).
    _alias("sharding.donated", COUNTER, SS + "shardingStatistics.countDonorMoveChunkStarted"),
    _alias("sharding.received", COUNTER, SS + "shardingStatistics.countRecipientMoveChunkStarted"),
    _alias("sharding.range_deleted", COUNTER, SS + "shardingStatistics.countDocsDeletedOnDonor"),
    # Connections (docs/metrics.md §9).
    _alias("conn.current", GAUGE, SS + "connections.current"),
    _alias("conn.available", GAUGE, SS + "connections.available"),
    _alias("conn.created", COUNTER, SS + "connections.totalCreated"),
    _alias("conn.rejected", COUNTER, SS + "connections.rejected"),
    # Data handles (docs/metrics.md §10).
    _alias("dhandle.active", GAUGE, WT + "data-handle.connection data handles currently active"),
    _alias("dhandle.sweeps", COUNTER, WT + "data-handle.connection sweeps"),
    _alias("dhandle.sweep_closed", COUNTER, WT + "data-handle.connection sweep dhandles closed"),
    _alias("dhandle.lock_wait_micros", COUNTER, WT + "lock.dhandle lock application thread time waiting (usecs)"),
    _alias("dhandle.schema_lock_wait_micros", COUNTER, WT + "lock.schema lock application thread wait time (usecs)"),
    _alias("files.open", GAUGE, WT + "connection.files currently open"),
    # Replication: this node's state, and every member as this node sees it
    # (members are in replica-set config order, the same index on every node).
    _alias("repl.state", GAUGE, "replSetGetStatus.myState"),
    _alias("member.state.{key}", GAUGE, "replSetGetStatus.members.{key}.state"),
    _alias("member.optime.{key}", GAUGE, "replSetGetStatus.members.{key}.optimeDate"),
    _alias("member.self.{key}", GAUGE, "replSetGetStatus.members.{key}.self"),
    # Why this node changed role (4.2+, src/mongo/db/repl/replication_metrics.idl): the elections it called, by reason
    # (`called` rises as the node starts one), the times it stepped down on seeing a higher term (another member won),
    # and the replSetStepDown commands it ran (metrics.commands, failed ones counted apart).
    *(
        _alias(f"election.{reason}", COUNTER, f"{SS}electionMetrics.{path}.called")
        for reason, path in (
            ("step_up", "stepUpCmd"),
            ("priority_takeover", "priorityTakeover"),
            ("catchup_takeover", "catchUpTakeover"),
            ("timeout", "electionTimeout"),
        )
    ),
    _alias("election.stepped_down_higher_term", COUNTER, SS + "electionMetrics.numStepDownsCausedByHigherTerm"),
    _alias("commands.stepdown", COUNTER, SS + "metrics.commands.replSetStepDown.total"),
    _alias("commands.stepdown_failed", COUNTER, SS + "metrics.commands.replSetStepDown.failed"),
)

BY_NAME = {a.name: a for a in ALIASES}


@dataclass(frozen=True)
class Resolved:
    """Which paths of a node stand behind which canonical names."""

    paths: dict[str, tuple[str, ...]]  # canonical name -> the node's paths, preferred first
    kinds: dict[str, str]  # canonical name -> COUNTER or GAUGE

    @property
    def wanted(self) -> list[str]:
        """Every path to decode (the projection)."""
        return sorted({p for paths in self.paths.values() for p in paths})

    def path(self, name: str) -> str | None:
        """The path shown as evidence for `name`."""
        paths = self.paths.get(name)
        return paths[0] if paths else None

    def has(self, *names: str) -> bool:
        return all(n in self.paths for n in names)

    def matching(self, prefix: str) -> list[str]:
        """Canonical names starting with `prefix` (the devices or members of a `{key}` alias)."""
        return sorted(n for n in self.paths if n.startswith(prefix))


def _pattern(path: str) -> re.Pattern:
    return re.compile(
        "^" + "".join("(?P<key>[^.]+)" if part == "{key}" else re.escape(part) for part in re.split(r"(\{key\})", path)) + "$"
    )


_PATTERNS = {p: _pattern(p) for a in ALIASES for p in a.paths if "{key}" in p}


def resolve(available: Iterable[str]) -> Resolved:
    """The canonical names a node has, given the metric names its files hold."""
    names = sorted(set(available))
    present = set(names)
    paths: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    for alias in ALIASES:
        for prefix in SERVICE_PREFIXES:
            for path in alias.paths:
                if "{key}" in path:
                    pattern, head = _PATTERNS[path], prefix + path.split("{key}")[0]
                    # Names sharing the path's text before `{key}` sit together in sorted order.
                    for name in names[bisect.bisect_left(names, head) :]:
                        if not name.startswith(head):
                            break
                        match = pattern.match(name[len(prefix) :])
                        if match:
                            canonical = alias.name.replace("{key}", match["key"])
                            paths.setdefault(canonical, []).append(name)
                            kinds[canonical] = alias.kind
                elif prefix + path in present:
                    paths.setdefault(alias.name, []).append(prefix + path)
                    kinds[alias.name] = alias.kind
    return Resolved({k: tuple(v) for k, v in paths.items()}, kinds)


@functools.cache
def candidates(names: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Names and globs (the decoder's selection) covering every path `resolve` can take
    (of the canonical `names` only, when given), whatever the node holds: a read of these
    decodes the analyses' metrics before the node's names are known (`{key}` becomes `*`,
    which also matches dots: `resolve` then keeps only one path component). Made once: they
    come from constants, and making them (a thousand globs escaped) cost each analysis 2 ms."""
    aliases = [alias for alias in ALIASES if names is None or alias.name in names]
    return tuple(sorted({prefix + _glob(path) for alias in aliases for prefix in SERVICE_PREFIXES for path in alias.paths}))


def _glob(path: str) -> str:
    """An alias path as a glob: `{key}` is `*`, and the rest literal (a Windows counter's `\\PhysicalDisk\\` holds
    backslashes, which a glob reads as escapes)."""
    return "*".join(re.sub(r"([\\*?\[\]{}])", r"\\\1", part) for part in path.split("{key}"))
