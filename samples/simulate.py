"""A mongod node simulated second by second, written as FTDC and logs the way mongod writes them.

A scenario says, for each second, what the node is doing (a `Tick`: operation
rates and latencies, cache levels, eviction, tickets, disks, connections,
TTL, data handles, checkpoints stalled or not); `Node` turns that into the
counters and gauges of serverStatus / systemMetrics in the layout of the
version it runs (4.2, 4.4, 6.0, 7.0, 8.0, 8.0 with the multi-service sections),
with the mechanisms the analyses rely on: counters are cumulative and
operations are credited when they finish (a stalled write counts, with its
whole wait, in the second it completes); checkpoints run every
`checkpoint_interval` seconds, drain dirty data, and set the running flag,
counts, total and most recent time as WiredTiger does; serverStatus takes
`collect_ms` to answer. `Log` writes the matching mongod log (JSON 4.4+ or
legacy text).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ftdc.writer import FTDCWriter

# /proc/stat's CPU states, in its order, as systemMetrics.cpu names them (each `<state>_ms`).
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

GB = 1024**3


@dataclass
class Tick:
    """What the node does during one second (rates per second, levels as shares of the cache)."""

    reads: float = 2000
    writes: float = 800
    # Documents per insert request: a bulk loader's batches count once in opLatencies, each document in opcounters.insert
    # and metrics.document.inserted (mongod's gotInserts(batch.size())).
    insert_batch: float = 1.0
    commands: float = 300
    read_latency_us: float = 200
    write_latency_us: float = 300
    command_latency_us: float = 100
    # Writes blocked this second (a stall): they finish, with their wait, when the stall ends.
    writes_stalled: bool = False
    reads_stalled: bool = False
    cache_fill: float = 0.80
    dirty: float = 0.03
    updates: float = 0.01
    app_evicted_pages: float = 0
    app_evict_us: float = 0
    app_wait_us: float = 0
    cache_timeouts: int = 0
    read_out: int = 2
    write_out: int = 2
    read_total: int = 128
    write_total: int = 128
    read_queue: int = 0  # ticket queue (6.1+) and globalLock.currentQueue
    write_queue: int = 0
    collscans: int = 0  # finished this second
    scanned_objects: float = 6000
    returned: float = 4000
    ttl_deleted: int = 0
    ttl_pass: bool = False
    disk_util: float = 0.25
    disk_await_ms: float = 0.8
    disk_iops: float = 400
    disk_mb: float = 20
    # Another process on the host reading the device (a backup, a file copy): the device's reads, none of mongod's.
    foreign_read_mb: float = 0.0
    # ...or writing it: the device's writes, none of mongod's.
    foreign_write_mb: float = 0.0
    # The device's writes (disk_mb's 70 %) all mongod's: three quarters to its data files, a quarter to its journal
    # (otherwise mongod's writes are estimated per write operation, as the committed scenarios were made).
    own_writes: bool = False
    io_full_share: float = 0.0
    connections: int = 300
    connections_created: float = 2
    connections_rejected: int = 0
    dhandles: int = 900
    dhandle_wait_us: float = 0
    schema_wait_us: float = 0
    gather_handles_us: float = 2000
    collect_ms: float = 2
    # An index build running this second (its scan reads the collection through the cache, its bulk load writes the index).
    index_build: bool = False
    # Transactions open (and of them idle: between statements), and what the oldest pins in WiredTiger (IDs, history store bytes).
    txn_open: int = 0
    txn_inactive: int = 0
    pinned_ids: int = 30
    history_store_bytes: float = 4 * 2**20
    # Checkpoints: how long the next one takes, and whether this second's sample is missing.
    checkpoint_seconds: float = 2.0
    missing: bool = False
    # A shard's chunk migrations begun this second (donating, receiving) and the documents its range deleter removed.
    donated: int = 0
    received: int = 0
    range_deleted: float = 0
    # mongod's resident memory (serverStatus mem.resident, MB); None writes no mem section (the committed scenarios').
    resident_mb: float | None = None
    # Why this node changed role this second, as its counters record it (Config.election_metrics): "stepdown_command"
    # (it carried out a replSetStepDown), an election it called ("step_up", "priority_takeover", "catchup_takeover",
    # "election_timeout"), or "higher_term" (it stepped down on seeing another member elected).
    role_change: str = ""
    # The host's CPU this second (Config.cpu): the share of all its cores' time busy (steal included), the share the
    # hypervisor stole, mongod's share of the rest (its own CPU time), and the tasks runnable per core at the sample.
    cpu_busy: float = 0.35
    cpu_steal: float = 0.0
    mongod_cpu: float = 0.9
    runnable: float = 0.4


@dataclass
class Config:
    version: str = "7.0.12"
    layout: str = "7.0"  # 4.2 | 4.4 | 6.0 | 7.0 | 8.0 | 8.0-services
    host: str = "db-prod-01.example.net"
    port: int = 27017
    replica_set: str | None = "rs0"
    cache_gb: float = 8.0
    cores: int = 8
    memory_mb: int = 32000
    config_string: str | None = None  # storage.wiredTiger.engineConfig.configString
    checkpoint_interval: int = 60
    first_checkpoint: int = 30  # seconds after the first sample
    pid: int = 41873
    seed: int = 7
    # Recorded in getCmdLineOpts when set: storage.syncPeriodSecs (the checkpoint interval) and setParameter.
    sync_period_s: int | None = None
    parameters: dict | None = None
    log_tz: dt.tzinfo = dt.timezone.utc  # the offset the log's timestamps are written in (the host's local time)
    windows: bool = False  # systemMetrics as mongod samples Windows performance counters (ftdc_system_stats_windows.cpp)
    # serverStatus's indexBuilds, indexBulkBuilder and transactions sections, WiredTiger's pinned range, history store size
    # and bytes read into the cache, as mongod records them; off for the committed scenarios, written without them (byte for byte).
    full_status: bool = False
    # WiredTiger's log statistics (the journal's bytes written); off for the committed scenarios but disk-saturation's.
    journal: bool = False
    # A shard's member: serverStatus.shardingStatistics, as mongod records it there (off: written without it, byte for byte).
    sharded: bool = False
    uptime_s: float = 86400.0  # how long the process has run at the first sample
    memory_limit_mb: int | None = None  # hostInfo's memLimitMB (a container's limit), written when set
    # serverStatus.electionMetrics (4.2+) and metrics.commands' replSetStepDown / replSetStepUp, as mongod records them
    # (off: written without them, byte for byte).
    election_metrics: bool = False
    # The host's CPU as Linux records it: every /proc/stat state, its cores, runnable tasks and boot time, and mongod's own
    # CPU time (serverStatus.extra_info); off: the four states the committed scenarios were written with, byte for byte.
    cpu: bool = False
    # With `cpu`: each restart is the host's reboot too (systemMetrics count again from boot, btime moves).
    reboots: bool = False


class Node:
    """Cumulative state of the simulated node; `sample(t, tick)` advances one second and returns serverStatus & co."""

    def __init__(self, config: Config):
        self.c = config
        self.rng = random.Random(config.seed)
        self.n = {
            k: 0
            for k in (
                "reads_ops reads_lat writes_ops writes_lat cmd_ops cmd_lat insert query update delete getmore command "
                "scanned scanned_objects collscans returned app_evicted app_mod_evicted evict_us wait_us timeouts "
                "ckpt_started ckpt_succeeded ckpt_total_ms ckpt_bytes bytes_read bytes_written added queued_us created rejected "
                "reads writes rsect wsect rtime wtime io_time io_queued iowait psi_full ttl_deleted ttl_passes ttl_subpasses "
                "dhandle_wait schema_wait sweeps swept builds_started builds_committed donated received range_deleted log_bytes "
                "stepdown_command step_up priority_takeover catchup_takeover election_timeout higher_term"
            ).split()
        }
        self.building = False
        self.pid = config.pid
        self.boot_s = 0.0
        self.uptime_s = config.uptime_s
        self.stalled_writes: list[float] = []  # arrival seconds of writes waiting for a stall to end
        self.stalled_reads: list[float] = []
        self.checkpoint_left = 0.0
        self.next_checkpoint = config.first_checkpoint
        self.last_checkpoint_ms = 1800
        self.generation = 0
        self.checkpoint_running = 0
        # The host's CPU counters (Config.cpu), drawn from their own generator: the node's draws stay as they were.
        self.cpu_rng = random.Random(config.seed + 101)
        self.cpu = {k: 0.0 for k in (*CPU_STATES, "mongod_user_us", "mongod_system_us")}
        self.procs_running = 1
        self.booted: dt.datetime | None = None  # when the host booted: three days before the first sample
        self.booted_before_s = 3 * 86400.0

    def restart(self, pid: int) -> None:
        """A new process: every serverStatus and WiredTiger counter starts again (systemMetrics do not, unless the host
        rebooted: Config.reboots)."""
        host = (
            ()
            if self.c.reboots
            else ("reads", "writes", "rsect", "wsect", "rtime", "wtime", "io_time", "io_queued", "iowait", "psi_full")
        )
        keep = {k: self.n[k] for k in host}
        self.n = {k: 0 for k in self.n} | keep
        self.cpu = {k: 0.0 if self.c.reboots or k.startswith("mongod_") else v for k, v in self.cpu.items()}
        if self.c.reboots:  # booted just before this process started: btime moves
            self.booted, self.booted_before_s = None, 30.0
        self.pid, self.uptime_s, self.generation, self.last_checkpoint_ms = pid, 0.0, 0, 0

    # -- one second

    def _ops(self, kind: str, rate: float, latency_us: float, stalled: bool, backlog: list[float]) -> int:
        """Operations finishing this second: hardly any while stalled (they queue), all of them, waits
        included, when it ends. Returns how many finished."""
        r = self.rng
        count = max(0, int(rate * r.uniform(0.95, 1.05)))
        if stalled:
            backlog.append(count)
            finished, latency = int(count * 0.02), count * 0.02 * latency_us
        else:
            finished, latency = count, count * latency_us * r.uniform(0.9, 1.1)
            waited = len(backlog)
            if waited:
                queued = sum(backlog)
                finished += int(queued)
                latency += queued * (waited / 2) * 1e6  # each waited about half the stall on average
                backlog.clear()
        self.n[f"{kind}_ops"] += finished
        self.n[f"{kind}_lat"] += int(latency)
        return finished

    def _checkpoint(self, tick: Tick, t: float) -> None:
        """WiredTiger's checkpoint counters: started on entry, total/most recent time at completion."""
        if self.checkpoint_left <= 0 and t >= self.next_checkpoint:
            self.checkpoint_left = tick.checkpoint_seconds
            self.checkpoint_length = tick.checkpoint_seconds
            self.n["ckpt_started"] += 1
            # mongod's checkpointer waits syncdelay from one start to the next, or runs at once when late.
            self.next_checkpoint = t + self.c.checkpoint_interval
        self.checkpoint_running = int(self.checkpoint_left > 0)
        if self.checkpoint_left > 0:
            # WiredTiger's block manager counts a checkpoint's writes in its bytes written too (block_write.c): a part of
            # them, within the data-file writes a tick of mongod's own device writes already counted (`own_share`).
            written = int(self.rng.uniform(40, 60) * 2**20)
            self.n["ckpt_bytes"] += written
            self.n["bytes_written"] += max(0, written - self.own_share)
            self.checkpoint_left -= 1
            if self.checkpoint_left <= 0:
                self.last_checkpoint_ms = int(self.checkpoint_length * 1000 - self.rng.randint(0, 300))
                self.n["ckpt_total_ms"] += self.last_checkpoint_ms
                self.n["ckpt_succeeded"] += 1
                self.generation += 1
                self.checkpoint_running = 0
                self.next_checkpoint = max(self.next_checkpoint, t + 1)

    def advance(self, t: float, tick: Tick) -> None:
        r, n = self.rng, self.n
        self.uptime_s += 1
        # opcounters count operations as they are processed: a stall shows as a drop.
        reads = self._ops("reads", tick.reads, tick.read_latency_us, tick.reads_stalled, self.stalled_reads)
        writes = self._ops("writes", tick.writes, tick.write_latency_us, tick.writes_stalled, self.stalled_writes)
        commands = self._ops("cmd", tick.commands, tick.command_latency_us, False, [])
        for key, share in (("insert", 0.5), ("update", 0.35), ("delete", 0.15)):
            n[key] += int(writes * share * (tick.insert_batch if key == "insert" else 1))
        n["query"] += reads
        n["getmore"] += int(reads * 0.03)
        n["command"] += commands
        n["scanned"] += int(tick.scanned_objects * 0.9)
        n["scanned_objects"] += int(tick.scanned_objects)
        n["returned"] += int(tick.returned)
        n["collscans"] += tick.collscans
        n["app_evicted"] += int(tick.app_evicted_pages)
        n["app_mod_evicted"] += int(tick.app_evicted_pages * 0.6)
        n["evict_us"] += int(tick.app_evict_us)
        n["wait_us"] += int(tick.app_wait_us)
        n["timeouts"] += tick.cache_timeouts
        queued = tick.read_queue + tick.write_queue
        n["added"] += queued
        n["queued_us"] += int(tick.write_queue * 1e6)
        n["created"] += int(tick.connections_created)
        n["rejected"] += tick.connections_rejected
        # The device's writes all mongod's: its data-file share holds the tick's checkpoint writes (`_checkpoint`).
        self.own_share = int(tick.disk_mb * 0.7 * 0.75 * 1e6) if tick.own_writes else 0
        if tick.own_writes:
            n["bytes_written"] += self.own_share
            n["log_bytes"] += int(tick.disk_mb * 0.7 * 0.25 * 1e6)
        else:
            n["bytes_written"] += int(writes * 4000 * (1 + 0.5 * (tick.insert_batch - 1)))
            n["log_bytes"] += int(writes * 1000 * tick.insert_batch)
        n["bytes_read"] += int(tick.disk_mb * 0.3 * 1e6)
        ios = tick.disk_iops * r.uniform(0.9, 1.1)
        n["reads"] += int(ios * 0.3)
        n["writes"] += int(ios * 0.7)
        n["rsect"] += int((tick.disk_mb * 0.3 + tick.foreign_read_mb) * 1e6 / 512)
        n["wsect"] += int((tick.disk_mb * 0.7 + tick.foreign_write_mb) * 1e6 / 512)
        n["rtime"] += int(ios * 0.3 * tick.disk_await_ms)
        n["wtime"] += int(ios * 0.7 * tick.disk_await_ms)
        n["io_time"] += int(1000 * min(1.0, tick.disk_util * r.uniform(0.95, 1.05)))
        n["io_queued"] += int(1000 * tick.disk_util * max(1.0, ios * tick.disk_await_ms / 1000))
        n["iowait"] += int(tick.io_full_share * 1000 * self.c.cores)
        n["psi_full"] += int(tick.io_full_share * 1e6)
        n["ttl_deleted"] += tick.ttl_deleted
        n["ttl_passes"] += int(tick.ttl_pass)
        n["ttl_subpasses"] += int(tick.ttl_pass)
        n["dhandle_wait"] += int(tick.dhandle_wait_us)
        n["schema_wait"] += int(tick.schema_wait_us)
        if int(t) % 60 == 0:
            n["sweeps"] += 1
            n["swept"] += r.randint(0, 3)
        n["donated"] += tick.donated
        n["received"] += tick.received
        n["range_deleted"] += int(tick.range_deleted)
        if tick.role_change:
            n[tick.role_change] += 1
        if tick.index_build != self.building:  # a build registers and scans, or commits
            n["builds_started" if tick.index_build else "builds_committed"] += 1
            self.building = tick.index_build
        self._checkpoint(tick, t)
        if self.c.cpu:
            self._cpu(tick)

    def _cpu(self, tick: Tick) -> None:
        """One second of the host's CPU time by state over all its cores (ms), mongod's own (µs), its runnable tasks
        (the thread reading /proc/stat among them)."""
        r, cores_ms, cpu = self.cpu_rng, 1000.0 * self.c.cores, self.cpu
        busy = min(1.0, tick.cpu_busy * r.uniform(0.98, 1.02))
        steal = min(busy, tick.cpu_steal)
        guest = busy - steal  # the host's own work
        waiting = min(1.0 - busy, tick.io_full_share)
        for state, share in (
            ("user", guest * 0.8),
            ("nice", guest * 0.01),
            ("system", guest * 0.15),
            ("irq", guest * 0.01),
            ("softirq", guest * 0.03),
            ("steal", steal),
            ("iowait", waiting),
            ("idle", 1.0 - busy - waiting),
        ):
            cpu[state] += share * cores_ms
        mongod_us = guest * min(1.0, tick.mongod_cpu) * cores_ms * 1000
        cpu["mongod_user_us"] += mongod_us * 0.85
        cpu["mongod_system_us"] += mongod_us * 0.15
        self.procs_running = max(1, round(tick.runnable * self.c.cores * r.uniform(0.9, 1.1)))

    # -- the documents mongod would write

    def _tickets(self, rw: str, tick: Tick) -> dict:
        out, total = (tick.read_out, tick.read_total) if rw == "read" else (tick.write_out, tick.write_total)
        queue = tick.read_queue if rw == "read" else tick.write_queue
        doc = {"out": out, "available": max(0, total - out), "totalTickets": total}
        layout = self.c.layout
        if layout == "6.0":
            doc.update(
                addedToQueue=self.n["added"],
                removedFromQueue=self.n["added"],
                queueLength=queue,
                processing=out,
                totalTimeProcessingMicros=self.n["queued_us"] * 3,
            )
        elif layout.startswith(("7.0", "8.0")):
            priority = {
                "addedToQueue": self.n["added"],
                "removedFromQueue": self.n["added"],
                "queueLength": queue,
                "startedProcessing": self.n["added"],
                "processing": out,
                "finishedProcessing": self.n["added"],
                "totalTimeProcessingMicros": self.n["queued_us"] * 3,
                "canceled": 0,
                "newAdmissions": self.n["added"],
                "totalTimeQueuedMicros": self.n["queued_us"] if rw == "write" else 0,
            }
            doc["normalPriority"] = priority
            if layout == "7.0":
                doc["lowPriority"] = {**{k: 0 for k in priority}, "expedited": 0, "bypassed": 0}
        return doc

    def _index_builds(self) -> dict:
        """serverStatus.indexBuilds (builds registered, and how many reached each phase) and indexBulkBuilder (one bulk
        builder per index built) as 6.0+ report them: a build is running between its registration and its commit."""
        started, committed = self.n["builds_started"], self.n["builds_committed"]
        phases = {
            "scanCollection": started,
            "drainSideWritesTable": started,
            "drainSideWritesTablePreCommit": committed,
            "waitForCommitQuorum": committed,
            "drainSideWritesTableOnCommit": committed,
            "processConstraintsViolatonTableOnCommit": committed,
            "commit": committed,
        }
        return {
            "indexBuilds": {
                "total": started,
                "killedDueToInsufficientDiskSpace": 0,
                "failedDueToDataCorruption": 0,
                "phases": phases,
            },
            "indexBulkBuilder": {
                "count": started,
                "resumed": 0,
                "filesOpenedForExternalSort": started * 4,
                "filesClosedForExternalSort": committed * 4,
                "spilledRanges": started * 4,
                "bytesSpilled": started * 800_000_000,
                "numSorted": started * 50_000_000,
                "bytesSorted": started * 2_000_000_000,
                "memUsage": 200 * 2**20 if self.building else 0,
            },
        }

    def _wiredtiger(self, tick: Tick) -> dict:
        n, cache_max = self.n, int(self.c.cache_gb * GB)
        new_names = self.c.layout.startswith("8.0")
        cache = {
            "maximum bytes configured": cache_max,
            "bytes currently in the cache": int(tick.cache_fill * cache_max),
            "tracked dirty bytes in the cache": int(tick.dirty * cache_max),
            "pages evicted by application threads": n["app_evicted"],
            "modified pages evicted by application threads": n["app_mod_evicted"],
            "operations timed out waiting for space in cache": n["timeouts"],
            "eviction currently operating in aggressive mode": int(tick.app_evicted_pages > 0),
        }
        if self.c.layout != "4.2":
            cache["bytes allocated for updates"] = int(tick.updates * cache_max)
        if self.c.full_status:
            cache["bytes read into cache"] = n["bytes_read"]
        if self.c.full_status and self.c.layout != "4.2":
            cache["history store table on-disk size"] = int(tick.history_store_bytes)
        thread_yield = {"application thread time waiting for cache (usecs)": n["wait_us"]}
        if new_names:
            cache["application thread time evicting (usecs)"] = n["evict_us"]
        else:
            thread_yield["application thread time evicting (usecs)"] = n["evict_us"]
        if new_names:
            checkpoint = {
                "progress state": self.checkpoint_running,
                "number of checkpoints started by api": n["ckpt_started"],
                "total succeed number of checkpoints": n["ckpt_succeeded"],
                "total failed number of checkpoints": 0,
                "most recent time (msecs)": self.last_checkpoint_ms,
                "total time (msecs)": n["ckpt_total_ms"],
                "generation": self.generation,
                "scrub most recent time (msecs)": 0,
                "most recent duration for gathering all handles (usecs)": int(tick.gather_handles_us),
            }
            sections = {"checkpoint": checkpoint}
        else:
            checkpoint = {
                "transaction checkpoint currently running": self.checkpoint_running,
                "transaction checkpoint generation": self.generation,
                "transaction checkpoint most recent time (msecs)": self.last_checkpoint_ms,
                "transaction checkpoint scrub time (msecs)": 0,
                "transaction checkpoint total time (msecs)": n["ckpt_total_ms"],
                "transaction checkpoints": n["ckpt_started"],
                "transaction checkpoint most recent duration for gathering all handles (usecs)": int(tick.gather_handles_us),
            }
            sections = {"transaction": checkpoint}
        if self.c.full_status:  # the oldest running transaction's snapshot, and every ID since, stays pinned
            sections.setdefault("transaction", {})["transaction range of IDs currently pinned"] = tick.pinned_ids
        wt = {
            "block-manager": {
                "bytes read": n["bytes_read"],
                "bytes written": n["bytes_written"],
                "bytes written for checkpoint": n["ckpt_bytes"],
            },
            "cache": cache,
            **sections,
            "connection": {"files currently open": tick.dhandles // 2},
            "data-handle": {
                "connection data handles currently active": tick.dhandles,
                "connection sweeps": n["sweeps"],
                "connection sweep dhandles closed": n["swept"],
            },
            "lock": {
                "dhandle lock application thread time waiting (usecs)": n["dhandle_wait"],
                "schema lock application thread wait time (usecs)": n["schema_wait"],
            },
            "thread-yield": thread_yield,
        }
        if self.c.journal:
            wt["log"] = {"log bytes written": n["log_bytes"]}
        if not new_names:
            wt["concurrentTransactions"] = {"write": self._tickets("write", tick), "read": self._tickets("read", tick)}
        return wt

    def server_status(self, start: dt.datetime, tick: Tick) -> dict:
        n, c, r = self.n, self.c, self.rng
        end = start + dt.timedelta(milliseconds=tick.collect_ms * r.uniform(0.8, 1.2))
        queue = tick.read_queue + tick.write_queue
        doc = {
            "start": start,
            "host": c.host,
            "version": c.version,
            "process": "mongod",
            "pid": self.pid,
            "uptime": float(int(self.uptime_s)),
            "uptimeMillis": int(self.uptime_s * 1000),
            "localTime": start,
            "connections": {
                "current": tick.connections,
                "available": max(0, 51200 - tick.connections) if not tick.connections_rejected else 0,
                "totalCreated": n["created"] + 10_000,
                "active": min(tick.connections, 20 + queue),
            },
            "globalLock": {
                "currentQueue": {"total": queue, "readers": tick.read_queue, "writers": tick.write_queue},
                "activeClients": {"total": 20, "readers": tick.read_out, "writers": tick.write_out},
            },
            "opLatencies": {
                "reads": {"latency": n["reads_lat"], "ops": n["reads_ops"]},
                "writes": {"latency": n["writes_lat"], "ops": n["writes_ops"]},
                "commands": {"latency": n["cmd_lat"], "ops": n["cmd_ops"]},
                "transactions": {"latency": 0, "ops": 0},
            },
            "opcounters": {k: n[k] for k in ("insert", "query", "update", "delete", "getmore", "command")},
            "wiredTiger": self._wiredtiger(tick),
            "metrics": {
                "document": {"returned": n["returned"], "inserted": n["insert"], "updated": n["update"], "deleted": n["delete"]},
                "queryExecutor": {"scanned": n["scanned"], "scannedObjects": n["scanned_objects"]},
                "ttl": {"deletedDocuments": n["ttl_deleted"], "passes": n["ttl_passes"]},
            },
        }
        if c.layout not in ("4.2", "4.4"):  # connections refused at the limit: counted from 6.0's layout on
            doc["connections"]["rejected"] = n["rejected"]
        if c.layout != "4.2":
            doc["metrics"]["queryExecutor"]["collectionScans"] = {"nonTailable": n["collscans"], "total": n["collscans"]}
        if c.layout in ("6.0", "7.0") or c.layout.startswith("8.0"):
            doc["metrics"]["ttl"]["subPasses"] = n["ttl_subpasses"]
        if c.layout.startswith("8.0"):
            doc["queues"] = {"execution": {"write": self._tickets("write", tick), "read": self._tickets("read", tick)}}
        if c.full_status and c.layout != "4.2":
            doc.update(self._index_builds())
        if c.full_status:
            doc["transactions"] = {
                "currentOpen": tick.txn_open,
                "currentActive": tick.txn_open - tick.txn_inactive,
                "currentInactive": tick.txn_inactive,
                "totalStarted": n["writes_ops"] // 50,
                "totalCommitted": n["writes_ops"] // 50,
                "totalAborted": 0,
            }
        if c.sharded:
            doc["shardingStatistics"] = {
                "countStaleConfigErrors": 0,
                "countDonorMoveChunkStarted": n["donated"],
                "countRecipientMoveChunkStarted": n["received"],
                "countDocsClonedOnRecipient": n["received"] * 40_000,
                "countDocsClonedOnDonor": n["donated"] * 40_000,
                "countDocsDeletedOnDonor": n["range_deleted"],
            }
        if c.election_metrics:
            doc["electionMetrics"], doc["metrics"]["commands"] = self._election_metrics()
        if c.cpu and c.layout != "4.2":  # mongod's own CPU time (getrusage), recorded from 4.4
            doc["extra_info"] = {
                "user_time_us": int(self.cpu["mongod_user_us"]),
                "system_time_us": int(self.cpu["mongod_system_us"]),
            }
        if tick.resident_mb is not None:
            doc["mem"] = {"bits": 64, "resident": int(tick.resident_mb), "virtual": int(tick.resident_mb * 1.3)}
        doc["end"] = end
        return doc

    def _election_metrics(self) -> tuple[dict, dict]:
        """serverStatus.electionMetrics (the elections this node called, by reason: `called` as it starts one,
        `successful` as it wins; its stepdowns on a higher term) and metrics.commands' role-change commands it ran."""
        n = self.n
        reasons = {
            "stepUpCmd": n["step_up"],
            "priorityTakeover": n["priority_takeover"],
            "catchUpTakeover": n["catchup_takeover"],
            "electionTimeout": n["election_timeout"],
            "freezeTimeout": 0,
        }
        elections = {
            **{reason: {"called": count, "successful": count} for reason, count in reasons.items()},
            "numStepDownsCausedByHigherTerm": n["higher_term"],
            "numCatchUps": 0,
            "averageCatchUpOps": 0.0,
        }
        commands = {
            "replSetStepDown": {"failed": 0, "total": n["stepdown_command"]},
            "replSetStepUp": {"failed": 0, "total": n["step_up"]},
        }
        return elections, commands

    def windows_metrics(self, start: dt.datetime) -> dict:
        """Windows' layout: PDH raw counters by group, disks by PhysicalDisk instance (the _Total instance left out); a
        precision counter's raw second value follows it as "<name> Base"; times in 100 ns units (perfctr_collect.cpp)."""
        n, ticks = self.n, int(self.uptime_s * 1e7)
        disk = {
            "\\PhysicalDisk\\% Disk Read Time": n["rtime"] * 10_000,
            "\\PhysicalDisk\\% Disk Read Time Base": ticks,
            "\\PhysicalDisk\\% Disk Write Time": n["wtime"] * 10_000,
            "\\PhysicalDisk\\% Disk Write Time Base": ticks,
            "\\PhysicalDisk\\Avg. Disk Read Queue Length": n["rtime"] * 10_000,
            "\\PhysicalDisk\\Avg. Disk Write Queue Length": n["wtime"] * 10_000,
            "\\PhysicalDisk\\Disk Read Bytes/sec": n["rsect"] * 512,
            "\\PhysicalDisk\\Disk Write Bytes/sec": n["wsect"] * 512,
            "\\PhysicalDisk\\Disk Reads/sec": n["reads"],
            "\\PhysicalDisk\\Disk Writes/sec": n["writes"],
            "\\PhysicalDisk\\Current Disk Queue Length": 0,
        }
        return {
            "start": start,
            "timebase": 10_000_000,
            "cpu": {
                "\\Processor\\% Idle Time": int(self.uptime_s * 4e7),
                "\\Processor\\% User Time": int(self.uptime_s * 3e7),
                "\\System\\Processes": 90,
            },
            "memory": {"\\Memory\\Available Bytes": 12 * GB},
            "disks": {"0 C:": disk},
            "end": start + dt.timedelta(milliseconds=1),
        }

    def system_metrics(self, start: dt.datetime) -> dict:
        if self.c.windows:
            return self.windows_metrics(start)
        n = self.n
        disks = {
            "sda": {
                "reads": n["reads"],
                "reads_merged": 0,
                "read_sectors": n["rsect"],
                "read_time_ms": n["rtime"],
                "writes": n["writes"],
                "writes_merged": 0,
                "write_sectors": n["wsect"],
                "write_time_ms": n["wtime"],
                "io_in_progress": 0,
                "io_time_ms": n["io_time"],
                "io_queued_ms": n["io_queued"],
            }
        }
        doc = {
            "start": start,
            "cpu": self._linux_cpu(start)
            if self.c.cpu
            else {
                "user_ms": int(self.uptime_s * 3000),
                "system_ms": int(self.uptime_s * 500),
                "iowait_ms": n["iowait"],
                "idle_ms": int(self.uptime_s * 4000),
            },
            "disks": disks,
        }
        if self.c.layout in ("7.0",) or self.c.layout.startswith("8.0"):
            doc["pressure"] = {"io": {"some": {"totalMicros": n["psi_full"] * 2}, "full": {"totalMicros": n["psi_full"]}}}
        doc["end"] = start + dt.timedelta(milliseconds=1)
        return doc

    def _linux_cpu(self, start: dt.datetime) -> dict:
        """systemMetrics.cpu as mongod reads /proc/stat (ftdc_system_stats_linux.cpp): 8.0 names the cores
        num_logical_cores (and those the process may use), earlier versions num_cpus."""
        if self.booted is None:
            self.booted = start - dt.timedelta(seconds=self.booted_before_s)
        cores = (
            {"num_logical_cores": self.c.cores, "num_cores_available_to_process": self.c.cores}
            if self.c.layout.startswith("8.0")
            else {"num_cpus": self.c.cores}
        )
        states = {f"{state}_ms": int(self.cpu[state]) for state in CPU_STATES}
        return {
            **cores,
            **states,
            "guest_ms": 0,
            "guest_nice_ms": 0,
            "ctxt": int(self.cpu["user"] * 20),
            "btime": int(self.booted.timestamp()),
            "processes": 90_000,
            "procs_running": self.procs_running,
            "procs_blocked": 0,
        }

    def sample(self, start: dt.datetime, tick: Tick, extra: dict | None = None) -> dict:
        status = self.server_status(start, tick)
        system = self.system_metrics(status["end"])
        if self.c.layout == "8.0-services":
            # 8.0 with an embedded router: collectors nest under their service (docs/ftdc-format.md §6).
            return {
                "start": start,
                "shard": {"serverStatus": status, **(extra or {})},
                "common": {"systemMetrics": system},
                "end": system["end"],
            }
        return {"start": start, "serverStatus": status, **(extra or {}), "systemMetrics": system, "end": system["end"]}

    def metadata(self, start: dt.datetime) -> dict:
        c = self.c
        engine = {"cacheSizeGB": c.cache_gb, **({"configString": c.config_string} if c.config_string else {})}
        storage = {
            "dbPath": "/var/lib/mongo",
            **({"syncPeriodSecs": c.sync_period_s} if c.sync_period_s else {}),
            "wiredTiger": {"engineConfig": engine},
        }
        parsed = {"net": {"port": c.port, "bindIp": "0.0.0.0"}, "storage": storage}
        if c.parameters:
            parsed["setParameter"] = c.parameters
        if c.replica_set:
            parsed["replication"] = {"replSetName": c.replica_set}
        build = {"start": start, "version": c.version, "gitVersion": "0" * 40, "end": start}
        opts = {"start": start, "argv": ["mongod", "--config", "/etc/mongod.conf"], "parsed": parsed, "end": start}
        host = {
            "start": start,
            "system": {"hostname": c.host, "memSizeMB": c.memory_mb, "numCores": c.cores, "cpuArch": "x86_64"}
            | ({"memLimitMB": c.memory_limit_mb} if c.memory_limit_mb else {}),
            "os": {"type": "Windows", "name": "Microsoft Windows Server 2022", "version": "10.0"}
            if c.windows
            else {"type": "Linux", "name": "Ubuntu", "version": "22.04"},
            "end": start,
        }
        if c.layout == "8.0-services":
            return {
                "start": start,
                "shard": {"buildInfo": build, "getCmdLineOpts": opts},
                "common": {"hostInfo": host},
                "end": start,
            }
        return {"start": start, "buildInfo": build, "getCmdLineOpts": opts, "hostInfo": host, "end": start}


@dataclass
class Run:
    """The seconds a scenario produced: per second its tick, and the checkpoints that ran."""

    t0: dt.datetime
    ticks: list[Tick]
    checkpoints: list[tuple[float, float]] = field(default_factory=list)  # (start s, end s)

    def at(self, s: float) -> dt.datetime:
        return self.t0 + dt.timedelta(seconds=s)


def write_ftdc(
    directory: Path,
    config: Config,
    t0: dt.datetime,
    seconds: int,
    plan: Callable[[int], Tick],
    *,
    restarts: dict[int, int] = None,
    extra: Callable[[int, Tick], dict] = None,
    flush: bool = True,
    metadata: bool = True,
    period: int = 1,
) -> Run:
    """Simulates `seconds` seconds from `plan(s)` and writes a sample every `period` seconds (mongod's
    diagnosticDataCollectionPeriodMillis; counters keep counting between samples); `restarts` maps a second
    to a new pid; `metadata=False` writes no configuration document (a lone metric chunk, as support cases
    often hold). Returns what ran."""
    import shutil

    shutil.rmtree(directory, ignore_errors=True)
    node = Node(config)
    writer = FTDCWriter(directory, metadata=node.metadata(t0) if metadata else None)
    run = Run(t0, [])
    for s in range(seconds):
        tick = plan(s)
        if restarts and s in restarts:
            writer.close()
            node.restart(restarts[s])
            writer = FTDCWriter(directory, metadata=node.metadata(t0 + dt.timedelta(seconds=s)) if metadata else None)
        was_running = node.checkpoint_running
        node.advance(s, tick)
        if node.checkpoint_running and not was_running:
            run.checkpoints.append((s, s + tick.checkpoint_seconds))
        run.ticks.append(tick)
        if not tick.missing and s % period == 0:
            writer.add_sample(node.sample(t0 + dt.timedelta(seconds=s), tick, extra(s, tick) if extra else None))
    writer.close(flush=flush)
    return run


# -- logs


def _stamp(t: dt.datetime, tz: dt.tzinfo) -> str:
    local = t.astimezone(tz)
    offset = local.strftime("%z")
    return local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}{offset[:3]}:{offset[3:]}"


class JsonLog:
    """mongod's structured log (4.4+), one line per call, written sorted by time."""

    def __init__(self, config: Config):
        self.c = config
        self.lines: list[tuple[dt.datetime, str]] = []

    def line(self, t: dt.datetime, c: str, id_: int, ctx: str, msg: str, attr: dict | None = None, s: str = "I") -> None:
        doc = {"t": {"$date": _stamp(t, self.c.log_tz)}, "s": s, "c": c, "id": id_, "ctx": ctx, "msg": msg}
        if attr is not None:
            doc["attr"] = attr
        self.lines.append((t, json.dumps(doc, separators=(",", ":"))))

    def startup(self, t: dt.datetime, open_string: str) -> None:
        c = self.c
        self.line(
            t,
            "CONTROL",
            4615611,
            "initandlisten",
            "MongoDB starting",
            {"pid": c.pid, "port": c.port, "dbPath": "/var/lib/mongo", "host": c.host},
        )
        self.line(t, "CONTROL", 23403, "initandlisten", "Build Info", {"buildInfo": {"version": c.version}})
        self.line(t, "STORAGE", 22315, "initandlisten", "Opening WiredTiger", {"config": open_string})

    def checkpoint(self, t: dt.datetime, text: str) -> None:
        if self.c.layout == "4.4":  # 4.4-5.2: the message one string, its prefix as WiredTiger prints it (log-format §5)
            stamp = f"[{int(t.timestamp())}:{t.microsecond}][{self.c.pid}:0x7f1c2a]"
            message = f"{stamp}, WT_SESSION.checkpoint: [WT_VERB_CHECKPOINT_PROGRESS] {text}"
            self.line(t, "STORAGE", 22430, "Checkpointer", "WiredTiger message", {"message": message})
            return
        self.line(
            t,
            "WTCHKPT",
            22430,
            "Checkpointer",
            "WiredTiger message",
            {
                "message": {
                    "ts_sec": int(t.timestamp()),
                    "ts_usec": t.microsecond,
                    "thread": f"{self.c.pid}:0x7f1c2a",
                    "session_name": "WT_SESSION.checkpoint",
                    "category": "WT_VERB_CHECKPOINT_PROGRESS",
                    "category_id": 7,
                    "verbose_level": "INFO",
                    "verbose_level_id": 0,
                    "msg": text,
                }
            },
        )

    def checkpoints(self, run: Run) -> None:
        """The checkpoint lines WiredTiger writes (docs/log-format.md §5): progress every 20 s, the snapshot near the end."""
        for start, end in run.checkpoints:
            length = end - start
            for running in range(20, int(length), 20):
                self.checkpoint(
                    run.at(start + running),
                    f"Checkpoint has been running for {running} seconds and wrote: {running * 9000} pages ({running * 70} MB)",
                )
            if length >= 20:
                self.checkpoint(
                    run.at(end) + dt.timedelta(milliseconds=5),
                    f"Checkpoint ran for {int(length)} seconds and wrote: {int(length) * 9000} pages ({int(length) * 70} MB)",
                )
            self.checkpoint(
                run.at(end) - dt.timedelta(milliseconds=300),
                f"saving checkpoint snapshot min: {1000 + int(start)}, snapshot max: {1000 + int(start)} snapshot count: 0, oldest timestamp: (0, 0) , meta checkpoint timestamp: (0, 0) base write gen: {20000 + int(start)}",
            )

    def slow(
        self,
        end: dt.datetime,
        ctx: str,
        ns: str,
        command: dict,
        plan: str,
        ms: int,
        *,
        component: str = "COMMAND",
        op_type: str = "command",
        keys: int = 1,
        docs: int = 1,
        nreturned: int = 1,
        **extra,
    ) -> None:
        """A slow-query line (id 51803), written when the operation finished."""
        attr = {
            "type": op_type,
            "ns": ns,
            "appName": "orders-service",
            "command": command,
            "planSummary": plan,
            "keysExamined": keys,
            "docsExamined": docs,
            "numYields": docs // 1000,
            "nreturned": nreturned,
            **extra,
            "protocol": "op_msg",
            "durationMillis": ms,
        }
        self.line(end, component, 51803, ctx, "Slow query", attr)

    def transaction_expired(self, t: dt.datetime, session: str, txn_number: int) -> None:
        """The reaper aborting a transaction older than transactionLifetimeLimitSeconds (id 20707, killAllExpiredTransactions)."""
        self.line(
            t,
            "COMMAND",
            20707,
            "abortExpiredTransactions",
            "Aborting transaction because it has been running for longer than 'transactionLifetimeLimitSeconds'",
            {"sessionId": {"$uuid": session}, "txnNumberAndRetryCounter": {"txnNumber": txn_number, "txnRetryCounter": 0}},
        )

    def write(self, path: Path) -> None:
        path.write_text("".join(line + "\n" for _, line in sorted(self.lines, key=lambda x: x[0])))


class TextLog:
    """mongod's legacy text log (4.2: severity padded to two, component to eight)."""

    def __init__(self, config: Config):
        self.c = config
        self.lines: list[tuple[dt.datetime, str]] = []

    def line(self, t: dt.datetime, component: str, ctx: str, text: str) -> None:
        local = t.astimezone(self.c.log_tz)
        stamp = local.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + local.strftime("%z")
        self.lines.append((t, f"{stamp} I  {component:<8} [{ctx}] {text}"))

    def startup(self, t: dt.datetime, open_string: str) -> None:
        c = self.c
        self.line(
            t,
            "CONTROL",
            "initandlisten",
            f"MongoDB starting : pid={c.pid} port={c.port} dbpath=/var/lib/mongo 64-bit host={c.host}",
        )
        self.line(t, "CONTROL", "initandlisten", f"db version v{c.version}")
        self.line(t, "STORAGE", "initandlisten", "wiredtiger_open config: " + open_string)

    def transaction_expired(self, t: dt.datetime, session: str, txn_number: int) -> None:
        """The reaper's abort as 4.2 words it (TransactionParticipant, the lsid's UUID bare)."""
        self.line(
            t,
            "COMMAND",
            "abortExpiredTransactions",
            f"Aborting transaction with txnNumber {txn_number} on session with lsid "
            f"{session} because it has been running for longer than 'transactionLifetimeLimitSeconds'",
        )

    def slow(
        self,
        end: dt.datetime,
        ctx: str,
        ns: str,
        command: dict,
        plan: str,
        ms: int,
        *,
        component: str = "COMMAND",
        op_type: str = "command",
        keys: int = 1,
        docs: int = 1,
        nreturned: int = 1,
        **extra,
    ) -> None:
        """A slow operation as 4.2 writes it (JsonLog.slow's arguments): `command ns command: find { ... }`, or for a
        write statement (component WRITE) `update ns command: { q: ... }`; `locks` and `storage` render in shell notation."""
        head = (
            f"command {ns} command: {next(iter(command))} {_shell(command)}"
            if op_type == "command"
            else f"{op_type} {ns} command: {_shell(command)}"
        )
        # Counters print bare (nMatched:1, queryHash:7D2E7C1B); the locks and storage documents print as the shell would.
        fields = [f"{k}:{v if isinstance(v, (str, int)) else _shell(v)}" for k, v in extra.items()]
        self.line(
            end,
            component,
            ctx,
            " ".join(
                [
                    head,
                    f"planSummary: {plan or 'NONE'}",
                    f"keysExamined:{keys}",
                    f"docsExamined:{docs}",
                    f"numYields:{docs // 1000}",
                    f"nreturned:{nreturned}",
                    *fields,
                    "protocol:op_msg",
                    f"{ms}ms",
                ]
            ),
        )

    def write(self, path: Path) -> None:
        path.write_text("".join(line + "\n" for _, line in sorted(self.lines, key=lambda x: x[0])))


def _shell(value) -> str:
    """A value in the mongo shell notation of legacy log lines: { key: "text", n: 1, ok: true }."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k}: {_shell(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, list):
        return "[ " + ", ".join(_shell(v) for v in value) + " ]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else str(value)
