"""The derived series: one row per sample, the quantities detectors reason about.

Counters become per-interval values with the real Δt (docs/metrics.md §1): no
value across a restart (pid change, uptime going back), a gap (a step over
GAP_PERIODS sampling periods) or a counter going backwards. Latency is the
interval mean Δlatency / Δops, never the cumulative ratio, which flattens
spikes. Cache levels are % of the configured maximum, thresholds in effect
at each sample beside them.

Every column is declared once in COLUMNS (name, unit, meaning), so a report
or a notebook can say what each one is.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Final

import polars as pl

from analysis.series.metrics import COUNTER, CPU_STATES, Resolved
from analysis.series.rolling import medians_of_rows_before
from analysis.series.thresholds import Thresholds
from analysis.settings import CACHE_PERCENTAGES
from ftdc.frames import TIME_COLUMN
from ftdc.memory import release_dropped_columns

# A step longer than this many sampling periods is a gap: no rate across it. The one
# definition of a gap and a restart (overview.py and the context findings read these flags).
GAP_PERIODS = 3
# The period in effect: the median of this many previous steps.
PERIOD_WINDOW = 5
OP_CLASSES = ("reads", "writes", "commands", "transactions")
OPCOUNTERS = ("insert", "query", "update", "delete", "getmore", "command")
# What each opcounter counts, in the words a user counts in: mongod adds the documents of an insert batch one by one
# (`gotInserts(batch.size())`), an update or delete statement once however many documents it touched, a getMore
# once per batch of a cursor, and every other command (aggregate, hello, heartbeats) under `command`.
COUNTED = {
    "insert": "documents inserted",
    "query": "queries",
    "update": "update statements",
    "delete": "delete statements",
    "getmore": "getMore batches",
    "command": "commands",
}
# metrics.document.*: documents as users count them, by what was done to them.
DOCUMENTS = {
    "returned": "returned_per_s",
    "inserted": "documents_inserted_per_s",
    "updated": "documents_updated_per_s",
    "deleted": "documents_deleted_per_s",
}
WAITERS = {"read": "readers", "write": "writers"}  # who queues for each kind of ticket (globalLock.currentQueue's names)


# The columns only shown (the report's system panels and explorer, notebooks), "." ending a family as in a detector's
# `reads`: no detector, root cause or incident reads them (tests/test_derived_plan.py reads the analyses' code for each), so
# `analyze` derives them when its series are first shown (`Derived.full`), not before: a fifth of the columns, and more
# of the time (every CPU state's share, every device's requests).
SHOWN_ONLY = (
    "transactions_latency_ms",
    "transactions_per_s",
    "transactions_waiting_pct",
    "checkpoints_started",
    "read_tickets_used_pct",
    "write_tickets_used_pct",
    "scanned_keys_per_s",
    "ttl_passes",
    "files_open",
    "swap_used_mb",
    "page_faults_per_s",
    "network_in_mb_per_s",
    "network_out_mb_per_s",
    "requests_per_s",
    "oplog_window_h",
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "disk_iops.",
)


def in_family(name: str, wanted: str) -> bool:
    """Whether the derived column `name` is `wanted`, or of its family (a name ending in "." stands for every
    device's or member's column)."""
    return name == wanted or (wanted.endswith(".") and name.startswith(wanted))


def shown_only(name: str) -> bool:
    """Whether the derived column `name` is among SHOWN_ONLY."""
    return any(in_family(name, s) for s in SHOWN_ONLY)


@dataclass(frozen=True)
class Column:
    name: str
    unit: str
    meaning: str
    needs: tuple[str, ...]  # canonical metric names
    build: Callable[..., pl.Expr]  # called without arguments (a lambda binds its loop values as defaults)

    @functools.cached_property
    def expression(self) -> pl.Expr:
        """`build()` named as the column, made once per column: polars takes 15-40 µs a node to build an expression in
        Python, a few ms an analysis for every column's."""
        return self.build().alias(self.name)


def valid() -> pl.Expr:
    return pl.col("valid")


def increase(name: str | pl.Expr) -> pl.Expr:
    """A counter's (the column `name`'s, or an expression's) increase over the interval ending at each sample; null
    across gaps, restarts and resets."""
    d = (pl.col(name) if isinstance(name, str) else name).diff()
    return pl.when(valid() & (d >= 0)).then(d)


def recorded_rate(name: str | pl.Expr) -> pl.Expr:
    """A recorded counter's per-second rate, on a frame with the bookkeeping columns (the explorer's)."""
    return increase(name) / pl.col("interval_s")


def _increase_column(name: str) -> str:
    return f"Δ{name}"


@functools.lru_cache(maxsize=4096)
def _increase_expression(name: str) -> pl.Expr:
    """`increase(name)` as the column `delta` reads, made once per name (2.4 ms an analysis for 64 counters made anew);
    bounded, as devices' and members' names come from the files."""
    return increase(name).alias(_increase_column(name))


def increases(resolved: Resolved, names: Iterable[str]) -> list[pl.Expr]:
    """Each counter's `increase` among canonical `names`, as the column `delta` reads: the stage before the columns."""
    return [_increase_expression(n) for n in names if resolved.kinds.get(n) == COUNTER]


def delta(name: str) -> pl.Expr:
    """`increase(name)` as the derived columns read it: `derive` computes each counter's once, in a stage of its own
    (`increases`). Inlined, the CPU columns alone held 32 copies of it, which cost polars more to plan than to compute."""
    return pl.col(_increase_column(name))


def rate(name: str) -> pl.Expr:
    return delta(name) / pl.col("interval_s")


def ratio(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    return pl.when(denominator > 0).then(numerator / denominator)


def _columns_per_op() -> list[Column]:
    out = []
    for op in OP_CLASSES:
        lat, ops, work = f"latency.{op}.micros", f"latency.{op}.ops", f"working.{op}.micros"
        out += [
            Column(
                f"{op}_latency_ms",
                "ms",
                f"mean latency of the {op} finished in the interval (Δlatency / Δops)",
                (lat, ops),
                lambda lat=lat, ops=ops: ratio(delta(lat), delta(ops)) / 1000,
            ),
            Column(f"{op}_per_s", "1/s", f"{op} finished per second", (ops,), lambda ops=ops: rate(ops)),
            Column(
                f"{op}_waiting_pct",
                "%",
                f"share of {op} latency spent waiting (locks, tickets, write concern; 8.0 opWorkingTime)",
                (lat, work),
                lambda lat=lat, work=work: 100 * (1 - ratio(delta(work), delta(lat))),
            ),
        ]
    return out


def _columns_per_resource() -> list[Column]:
    out = []
    for rw in ("read", "write"):
        t = f"tickets.{rw}."
        out += [
            Column(f"{rw}_tickets_out", "count", f"{rw} tickets held", (t + "out",), lambda t=t: pl.col(t + "out")),
            Column(
                f"{rw}_tickets_available", "count", f"{rw} tickets free", (t + "available",), lambda t=t: pl.col(t + "available")
            ),
            Column(
                f"{rw}_tickets_total",
                "count",
                f"{rw} ticket pool size (varies on 7.0 with throughput probing)",
                (t + "total",),
                lambda t=t: pl.col(t + "total"),
            ),
            Column(
                f"{rw}_tickets_used_pct",
                "%",
                f"{rw} tickets held, % of the pool at that sample (7.0 resizes it)",
                (t + "out", t + "total"),
                lambda t=t: 100 * ratio(pl.col(t + "out"), pl.col(t + "total")),
            ),
            Column(
                f"{rw}_ticket_queue",
                "count",
                f"operations queued for a {rw} ticket (ticket statistics, 6.1+)",
                (t + "queue_length",),
                lambda t=t: pl.col(t + "queue_length"),
            ),
            Column(
                f"{rw}_ticket_waiters",
                "count",
                f"mean operations waiting for a {rw} ticket over the interval (ΔtotalTimeQueuedMicros / Δt)",
                (t + "queued_micros",),
                lambda t=t: rate(t + "queued_micros") / 1e6,
            ),
            Column(
                f"{rw}_queued",
                "count",
                f"{WAITERS[rw]} queued on the global lock (globalLock.currentQueue)",
                (f"queue.{WAITERS[rw]}",),
                lambda rw=rw: pl.col(f"queue.{WAITERS[rw]}"),
            ),
        ]
    return out


# Why this node changed role, counted in the interval (the elections it called by reason, its stepdowns on seeing a
# higher term, the replSetStepDown commands it carried out): what tells a planned role change from a failover without a log.
ROLE_CHANGE_COLUMNS = (
    *(
        Column(
            f"elections_{reason}",
            "count",
            f"elections this node called in the interval: {meaning}",
            (f"election.{reason}",),
            lambda reason=reason: delta(f"election.{reason}"),
        )
        for reason, meaning in (
            ("step_up", "on a replSetStepUp request (an operator's, or a stepping-down primary's handoff)"),
            ("priority_takeover", "to take the primary back by its higher priority"),
            ("catchup_takeover", "to take over from a primary that lagged it"),
            ("timeout", "on seeing no primary for electionTimeoutMillis (a failover)"),
        )
    ),
    Column(
        "stepdowns_higher_term",
        "count",
        "times this node stepped down in the interval on seeing a higher term (another member was elected)",
        ("election.stepped_down_higher_term",),
        lambda: delta("election.stepped_down_higher_term"),
    ),
    Column(
        "stepdown_commands",
        "count",
        "replSetStepDown commands this node carried out in the interval (failed ones left out)",
        ("commands.stepdown", "commands.stepdown_failed"),
        lambda: delta("commands.stepdown") - delta("commands.stepdown_failed"),
    ),
)

COLUMNS: tuple[Column, ...] = (
    *_columns_per_op(),
    Column(
        "ops_per_s",
        "1/s",
        "opcounters per second, all types (queries, getMore batches, commands, update and delete statements, documents inserted)",
        tuple(f"opcounters.{o}" for o in OPCOUNTERS),
        lambda: pl.sum_horizontal([rate(f"opcounters.{o}") for o in OPCOUNTERS]),
    ),
    # What users count: requests finished (opLatencies counts each once, a getMore or an insert batch of any size) and documents.
    Column(
        "finished_per_s",
        "1/s",
        "operations finished per second, all classes (opLatencies reads + writes + commands: each request once)",
        tuple(f"latency.{op}.ops" for op in OP_CLASSES[:3]),
        lambda: rate("latency.reads.ops") + rate("latency.writes.ops") + rate("latency.commands.ops"),
    ),
    Column(
        "documents_per_s",
        "1/s",
        "documents returned, inserted, updated and deleted per second (metrics.document.*)",
        ("query.returned", *(f"documents.{op}" for op in ("inserted", "updated", "deleted"))),
        lambda: rate("query.returned") + rate("documents.inserted") + rate("documents.updated") + rate("documents.deleted"),
    ),
    *(
        Column(
            f"{o}_ops_per_s",
            "1/s",
            f"opcounters.{o} per second: {COUNTED[o]}",
            (f"opcounters.{o}",),
            lambda o=o: rate(f"opcounters.{o}"),
        )
        for o in OPCOUNTERS
    ),
    Column(
        "collect_ms",
        "ms",
        "serverStatus collection time (grows when the server stalls)",
        ("collect.start", "collect.end"),
        lambda: (pl.col("collect.end") - pl.col("collect.start")).dt.total_milliseconds(),
    ),
    # Cache
    Column("cache_max_bytes", "bytes", "WiredTiger cache size", ("cache.max_bytes",), lambda: pl.col("cache.max_bytes")),
    Column(
        "cache_fill_pct",
        "%",
        "bytes in the cache / maximum",
        ("cache.bytes", "cache.max_bytes"),
        lambda: 100 * ratio(pl.col("cache.bytes"), pl.col("cache.max_bytes")),
    ),
    Column(
        "cache_dirty_pct",
        "%",
        "tracked dirty bytes / maximum (WiredTiger tests dirty leaf bytes: slightly less)",
        ("cache.dirty_bytes", "cache.max_bytes"),
        lambda: 100 * ratio(pl.col("cache.dirty_bytes"), pl.col("cache.max_bytes")),
    ),
    Column(
        "cache_updates_pct",
        "%",
        "bytes allocated for updates / maximum (4.4+)",
        ("cache.updates_bytes", "cache.max_bytes"),
        lambda: 100 * ratio(pl.col("cache.updates_bytes"), pl.col("cache.max_bytes")),
    ),
    Column(
        "app_evicted_pages_per_s",
        "1/s",
        "pages evicted by application threads per second",
        ("cache.app_evicted_pages",),
        lambda: rate("cache.app_evicted_pages"),
    ),
    Column(
        "app_evict_threads",
        "threads",
        "application-thread time evicting per second (≈ threads busy evicting)",
        ("cache.app_evict_micros",),
        lambda: rate("cache.app_evict_micros") / 1e6,
    ),
    Column(
        "app_wait_threads",
        "threads",
        "application-thread time waiting for cache per second",
        ("cache.app_wait_micros",),
        lambda: rate("cache.app_wait_micros") / 1e6,
    ),
    Column(
        "cache_timeouts",
        "count",
        "operations timed out waiting for space in cache in the interval",
        ("cache.timeouts",),
        lambda: delta("cache.timeouts"),
    ),
    # Checkpoints (windows are found from these, checkpoints.py)
    Column(
        "checkpoint_running",
        "flag",
        "checkpoint running (7.1+: progress state non-zero)",
        ("checkpoint.running",),
        lambda: (pl.col("checkpoint.running") > 0).cast(pl.Int8),
    ),
    Column(
        "checkpoints_started",
        "count",
        "checkpoints started in the interval",
        ("checkpoint.started",),
        lambda: delta("checkpoint.started"),
    ),
    Column(
        "checkpoints_succeeded",
        "count",
        "checkpoints that succeeded in the interval (7.3+)",
        ("checkpoint.succeeded",),
        lambda: delta("checkpoint.succeeded"),
    ),
    Column(
        "checkpoints_failed",
        "count",
        "checkpoints that failed in the interval (7.3+)",
        ("checkpoint.failed",),
        lambda: delta("checkpoint.failed"),
    ),
    Column(
        "checkpoint_time_ms",
        "ms",
        "checkpoint time accumulated in the interval (Δ total time)",
        ("checkpoint.total_ms",),
        lambda: delta("checkpoint.total_ms"),
    ),
    Column(
        "checkpoint_last_ms",
        "ms",
        "duration of the most recent checkpoint",
        ("checkpoint.last_ms",),
        lambda: pl.col("checkpoint.last_ms"),
    ),
    Column(
        "checkpoint_scrub_ms",
        "ms",
        "scrub time of the most recent checkpoint",
        ("checkpoint.scrub_ms",),
        lambda: pl.col("checkpoint.scrub_ms"),
    ),
    Column(
        "checkpoint_write_mb_per_s",
        "MB/s",
        "bytes written for checkpoint per second",
        ("checkpoint.bytes_written",),
        lambda: rate("checkpoint.bytes_written") / 1e6,
    ),
    Column(
        "checkpoint_gather_handles_ms",
        "ms",
        "most recent checkpoint's time gathering handles",
        ("checkpoint.gather_handles_micros",),
        lambda: pl.col("checkpoint.gather_handles_micros") / 1000,
    ),
    # Admission
    *_columns_per_resource(),
    # Query execution
    Column(
        "collscans_per_s", "1/s", "collection scans finished per second", ("query.collscans",), lambda: rate("query.collscans")
    ),
    Column(
        "scanned_objects_per_s",
        "1/s",
        "documents examined per second",
        ("query.scanned_objects",),
        lambda: rate("query.scanned_objects"),
    ),
    Column(
        "scanned_keys_per_s", "1/s", "index keys examined per second", ("query.scanned_keys",), lambda: rate("query.scanned_keys")
    ),
    Column("returned_per_s", "1/s", "documents returned per second", ("query.returned",), lambda: rate("query.returned")),
    # TTL
    Column(
        "ttl_deleted",
        "count",
        "documents deleted by the TTL monitor in the interval",
        ("ttl.deleted",),
        lambda: delta("ttl.deleted"),
    ),
    Column("ttl_passes", "count", "TTL monitor passes in the interval", ("ttl.passes",), lambda: delta("ttl.passes")),
    Column(
        "io_full_pct",
        "%",
        "share of time every task stalled on I/O (Linux PSI)",
        ("pressure.io_full_micros",),
        lambda: 100 * rate("pressure.io_full_micros") / 1e6,
    ),
    # Index builds and transactions
    Column(
        "index_builds_running",
        "count",
        "index builds registered and not yet committed (indexBuilds.total - phases.commit)",
        ("index.builds_started", "index.builds_committed"),
        lambda: pl.col("index.builds_started") - pl.col("index.builds_committed"),
    ),
    Column("transactions_open", "count", "multi-document transactions open", ("txn.open",), lambda: pl.col("txn.open")),
    Column(
        "transactions_inactive",
        "count",
        "open transactions idle between statements",
        ("txn.inactive",),
        lambda: pl.col("txn.inactive"),
    ),
    Column(
        "pinned_txn_ids",
        "count",
        "WiredTiger transaction IDs pinned by the oldest running transaction",
        ("txn.pinned_ids",),
        lambda: pl.col("txn.pinned_ids"),
    ),
    Column(
        "cache_read_mb_per_s",
        "MB/s",
        "bytes read into the cache per second (pages read from disk)",
        ("cache.bytes_read_into",),
        lambda: rate("cache.bytes_read_into") / 2**20,
    ),
    Column(
        "mongod_read_mb_per_s",
        "MB/s",
        "bytes mongod read from its data files per second (WiredTiger's block manager)",
        ("storage.bytes_read",),
        lambda: rate("storage.bytes_read") / 1e6,
    ),
    Column(
        "mongod_write_mb_per_s",
        "MB/s",
        "bytes mongod wrote to its data files per second (WiredTiger's block manager)",
        ("storage.bytes_written",),
        lambda: rate("storage.bytes_written") / 1e6,
    ),
    Column(
        "journal_write_mb_per_s",
        "MB/s",
        "bytes mongod wrote to its journal per second (WiredTiger's log)",
        ("journal.bytes_written",),
        lambda: rate("journal.bytes_written") / 1e6,
    ),
    Column(
        "history_store_mb",
        "MB",
        "history store table on disk",
        ("cache.history_store_bytes",),
        lambda: pl.col("cache.history_store_bytes") / 2**20,
    ),
    # A shard's chunk migrations (each side) and the range deleter's work on the donor after them
    Column(
        "chunk_migrations",
        "count",
        "chunk migrations this shard began in the interval, donating or receiving",
        ("sharding.donated", "sharding.received"),
        lambda: delta("sharding.donated").fill_null(0) + delta("sharding.received").fill_null(0),
    ),
    Column(
        "range_deleted_per_s",
        "1/s",
        "documents the range deleter removed per second from chunks this shard donated",
        ("sharding.range_deleted",),
        lambda: rate("sharding.range_deleted"),
    ),
    # Connections
    Column("connections", "count", "open connections", ("conn.current",), lambda: pl.col("conn.current")),
    Column("connections_available", "count", "connections still allowed", ("conn.available",), lambda: pl.col("conn.available")),
    Column("connections_created_per_s", "1/s", "connections opened per second", ("conn.created",), lambda: rate("conn.created")),
    Column(
        "connections_rejected", "count", "connections refused in the interval", ("conn.rejected",), lambda: delta("conn.rejected")
    ),
    # Data handles
    Column("dhandles", "count", "open data handles", ("dhandle.active",), lambda: pl.col("dhandle.active")),
    Column("files_open", "count", "files WiredTiger holds open", ("files.open",), lambda: pl.col("files.open")),
    Column(
        "dhandle_lock_wait_threads",
        "threads",
        "application-thread time waiting for the dhandle lock per second",
        ("dhandle.lock_wait_micros",),
        lambda: rate("dhandle.lock_wait_micros") / 1e6,
    ),
    Column(
        "schema_lock_wait_threads",
        "threads",
        "application-thread time waiting for the schema lock per second",
        ("dhandle.schema_lock_wait_micros",),
        lambda: rate("dhandle.schema_lock_wait_micros") / 1e6,
    ),
    Column(
        "dhandles_swept",
        "count",
        "data handles closed by sweeps in the interval",
        ("dhandle.sweep_closed",),
        lambda: delta("dhandle.sweep_closed"),
    ),
    Column(
        "repl_state", "state", "replica-set member state (1 primary, 2 secondary)", ("repl.state",), lambda: pl.col("repl.state")
    ),
    # The host and the process (the report's system panels)
    Column("resident_mb", "MB", "mongod's resident memory", ("mem.resident_mb",), lambda: pl.col("mem.resident_mb")),
    Column(
        "swap_used_mb",
        "MB",
        "the host's swap in use (SwapTotal - SwapFree)",
        ("mem.swap_total_kb", "mem.swap_free_kb"),
        lambda: (pl.col("mem.swap_total_kb") - pl.col("mem.swap_free_kb")) / 1024,
    ),
    Column(
        "page_faults_per_s",
        "1/s",
        "mongod's page faults per second (extra_info.page_faults)",
        ("mem.page_faults",),
        lambda: rate("mem.page_faults"),
    ),
    Column(
        "network_in_mb_per_s", "MB/s", "bytes mongod received per second", ("net.bytes_in",), lambda: rate("net.bytes_in") / 1e6
    ),
    Column(
        "network_out_mb_per_s", "MB/s", "bytes mongod sent per second", ("net.bytes_out",), lambda: rate("net.bytes_out") / 1e6
    ),
    Column("requests_per_s", "1/s", "requests mongod received per second", ("net.requests",), lambda: rate("net.requests")),
    Column(
        "runnable_per_core",
        "threads",
        "the host's runnable threads per core at the sample, on a core or waiting for one: systemMetrics.cpu.procs_running "
        "/ num_cpus (8.0: num_logical_cores); above 1, threads wait for a CPU",
        ("cpu.procs_running", "cpu.cores"),
        lambda: ratio(pl.col("cpu.procs_running").cast(pl.Float64), pl.col("cpu.cores").cast(pl.Float64)),
    ),
    *(
        Column(
            f"documents_{op}_per_s",
            "1/s",
            f"documents {op} per second (metrics.document.{op})",
            (f"documents.{op}",),
            lambda op=op: rate(f"documents.{op}"),
        )
        for op in ("inserted", "updated", "deleted")
    ),
    Column(
        "oplog_window_h",
        "h",
        "time between the oplog's earliest and latest entries (serverStatus.oplog's optimes)",
        ("oplog.first", "oplog.last"),
        # An empty oplog reports a null optime (0 s): no window, not one reaching back to 1970; nor is one whose
        # latest entry reads before its earliest (the 8.0 sample's latestOptime reads 0 throughout: no negative window).
        lambda: pl.when((pl.col("oplog.first") > 0) & (pl.col("oplog.last") >= pl.col("oplog.first"))).then(
            (pl.col("oplog.last") - pl.col("oplog.first")) / 3600.0
        ),
    ),
    *ROLE_CHANGE_COLUMNS,
)


def _cpu_columns(resolved: Resolved) -> list[Column]:
    """Each CPU state's share of all the cores' time over the interval: Δstate / Δ(every state the node records)."""
    states = [s for s in CPU_STATES if resolved.has(f"cpu.{s}_ms")]
    if not {"user", "system", "idle"} <= set(states):
        return []
    needs = tuple(f"cpu.{s}_ms" for s in states)
    total = lambda: pl.sum_horizontal([delta(n) for n in needs])  # noqa: E731
    # Not busy: idle, and iowait (an idle core with a task waiting on I/O: any runnable task could have it).
    resting = [n for n in needs if n in ("cpu.idle_ms", "cpu.iowait_ms")]
    mongod = ("cpu.mongod_user_us", "cpu.mongod_system_us")
    return [
        *(
            Column(
                f"cpu_{s}_pct",
                "%",
                f"CPU time in {s}, % of all cores' time (Δ{s}_ms / Δ every state's)",
                needs,
                lambda s=s: 100 * ratio(delta(f"cpu.{s}_ms"), total()),
            )
            for s in ("user", "system", "iowait", "steal")
            if s in states
        ),
        Column(
            "cpu_busy_pct",
            "%",
            "the host's CPUs busy, % of all cores' time: every state of systemMetrics.cpu but idle and iowait "
            "(user, nice, system, irq, softirq, steal) / Δ every state's",
            needs,
            lambda: 100 * ratio(total() - pl.sum_horizontal([delta(n) for n in resting]), total()),
        ),
        Column(
            "mongod_cpu_pct",
            "%",
            "mongod's own CPU time, % of all cores' time: Δ(serverStatus.extra_info.user_time_us + system_time_us) / "
            "Δ every state's of systemMetrics.cpu",
            (*needs, *mongod),
            lambda: 100 * ratio((delta(mongod[0]) + delta(mongod[1])) / 1000, total()),
        ),
    ]


def _disk_columns(resolved: Resolved) -> list[Column]:
    """Per device (docs/metrics.md §8): util %, queue, await, throughput."""
    out = []
    for name in resolved.matching("disk.io_time_ms."):
        dev = name.removeprefix("disk.io_time_ms.")
        d = lambda field, dev=dev: f"disk.{field}.{dev}"  # noqa: E731
        out += [
            Column(
                f"disk_util_pct.{dev}",
                "%",
                f"{dev}: time busy (Δio_time_ms / Δt)",
                (d("io_time_ms"),),
                lambda d=d: (100 * rate(d("io_time_ms")) / 1000).clip(upper_bound=100),
            ),
            Column(
                f"disk_queue.{dev}",
                "count",
                f"{dev}: mean requests in flight (Δio_queued_ms / Δt)",
                (d("io_queued_ms"),),
                lambda d=d: rate(d("io_queued_ms")) / 1000,
            ),
            Column(
                f"disk_await_ms.{dev}",
                "ms",
                f"{dev}: mean time per request",
                (d("read_time_ms"), d("write_time_ms"), d("reads"), d("writes")),
                lambda d=d: ratio(delta(d("read_time_ms")) + delta(d("write_time_ms")), delta(d("reads")) + delta(d("writes"))),
            ),
            Column(
                f"disk_mb_per_s.{dev}",
                "MB/s",
                f"{dev}: bytes read and written per second",
                (d("read_sectors"), d("write_sectors")),
                lambda d=d: (rate(d("read_sectors")) + rate(d("write_sectors"))) * 512 / 1e6,
            ),
            Column(
                f"disk_read_mb_per_s.{dev}",
                "MB/s",
                f"{dev}: bytes read per second",
                (d("read_sectors"),),
                lambda d=d: rate(d("read_sectors")) * 512 / 1e6,
            ),
            Column(
                f"disk_write_mb_per_s.{dev}",
                "MB/s",
                f"{dev}: bytes written per second",
                (d("write_sectors"),),
                lambda d=d: rate(d("write_sectors")) * 512 / 1e6,
            ),
            Column(
                f"disk_iops.{dev}",
                "1/s",
                f"{dev}: requests completed per second (reads and writes)",
                (d("reads"), d("writes")),
                lambda d=d: rate(d("reads")) + rate(d("writes")),
            ),
        ]
    return out


def _windows_disk_columns(resolved: Resolved) -> list[Column]:
    """Per Windows PhysicalDisk instance, what its counters hold: queue, await, throughput and requests (the same columns as
    Linux's). Windows sums each request's time (100 ns units), so Δ(read + write time) / Δt is the mean requests in flight and
    / Δrequests their mean time; the time the disk was busy is not recorded, so there is no util % to derive."""
    out = []
    for name in resolved.matching("disk.windows_reads."):
        dev = name.removeprefix("disk.windows_reads.")
        w = lambda field, dev=dev: f"disk.windows_{field}.{dev}"  # noqa: E731
        out += [
            Column(
                f"disk_queue.{dev}",
                "count",
                f"{dev}: mean requests in flight (Δ(% Disk Read Time + % Disk Write Time) / Δt, 100 ns sums)",
                (w("read_time_100ns"), w("write_time_100ns")),
                lambda w=w: (rate(w("read_time_100ns")) + rate(w("write_time_100ns"))) / 1e7,
            ),
            Column(
                f"disk_await_ms.{dev}",
                "ms",
                f"{dev}: mean time per request",
                (w("read_time_100ns"), w("write_time_100ns"), w("reads"), w("writes")),
                lambda w=w: ratio(
                    (delta(w("read_time_100ns")) + delta(w("write_time_100ns"))) / 1e4, delta(w("reads")) + delta(w("writes"))
                ),
            ),
            Column(
                f"disk_mb_per_s.{dev}",
                "MB/s",
                f"{dev}: bytes read and written per second",
                (w("read_bytes"), w("write_bytes")),
                lambda w=w: (rate(w("read_bytes")) + rate(w("write_bytes"))) / 1e6,
            ),
            Column(
                f"disk_read_mb_per_s.{dev}",
                "MB/s",
                f"{dev}: bytes read per second",
                (w("read_bytes"),),
                lambda w=w: rate(w("read_bytes")) / 1e6,
            ),
            Column(
                f"disk_write_mb_per_s.{dev}",
                "MB/s",
                f"{dev}: bytes written per second",
                (w("write_bytes"),),
                lambda w=w: rate(w("write_bytes")) / 1e6,
            ),
            Column(
                f"disk_iops.{dev}",
                "1/s",
                f"{dev}: requests completed per second (reads and writes)",
                (w("reads"), w("writes")),
                lambda w=w: rate(w("reads")) + rate(w("writes")),
            ),
        ]
    return out


PRIMARY, SECONDARY = 1, 2  # replica-set member states


def _member_columns(resolved: Resolved) -> list[Column]:
    """Per replica-set member, as this node sees it: its state, how far its last
    applied operation trails the primary's, and whether it is this node."""
    members = [name.removeprefix("member.state.") for name in resolved.matching("member.state.")]
    optimes = [m for m in members if resolved.has(f"member.optime.{m}")]
    primary = (
        pl.max_horizontal([pl.when(pl.col(f"member.state.{m}") == PRIMARY).then(pl.col(f"member.optime.{m}")) for m in optimes])
        if optimes
        else None
    )
    out = []
    for m in members:
        out.append(
            Column(
                f"member_state.{m}",
                "state",
                f"replica-set member {m}: 1 primary, 2 secondary, 7 arbiter, 8 down",
                (f"member.state.{m}",),
                lambda m=m: pl.col(f"member.state.{m}"),
            )
        )
        if m in optimes:
            out.append(
                Column(
                    f"member_lag_s.{m}",
                    "s",
                    f"member {m}: how far its last applied operation trails the primary's (secondaries only)",
                    (f"member.state.{m}", f"member.optime.{m}"),
                    # At least 0: the optimes of one replSetGetStatus are not read at one instant (this node's own
                    # is its applier's now, every other member's the one its last heartbeat brought, up to 2 s old),
                    # so a secondary that keeps up can read up to a heartbeat ahead of the primary. No member applies
                    # what the primary has not written: that skew is no lag, not negative lag.
                    lambda m=m: pl.when(pl.col(f"member.state.{m}") == SECONDARY).then(
                        ((primary - pl.col(f"member.optime.{m}")).dt.total_milliseconds() / 1000).clip(lower_bound=0)
                    ),
                )
            )
        out.append(
            Column(
                f"member_self.{m}",
                "flag",
                f"member {m} is this node",
                (f"member.self.{m}",),
                lambda m=m: pl.col(f"member.self.{m}"),
            )
        )
    return out


def columns_for(resolved: Resolved) -> list[Column]:
    """The derived columns this node's metrics allow."""
    return [
        c
        for c in (
            *COLUMNS,
            *_cpu_columns(resolved),
            *_disk_columns(resolved),
            *_windows_disk_columns(resolved),
            *_member_columns(resolved),
        )
        if resolved.has(*c.needs)
    ]


# The plans run on frames already in memory. The streaming engine would cut them into morsels, and
# polars divides a morsel by a constant either exactly or by its reciprocal depending on where the
# morsel ends: the same column could differ in its last bit from one run's layout to another's.
ENGINE: Final = "in-memory"
# The common subexpressions a plan of the columns holds are stages of their own already (each counter's increase, read by
# name): polars' search for more cost a day's `derive` a fifth of its time and found nothing but the CPU states' total.
OPTIMIZATIONS = pl.QueryOptFlags(comm_subexpr_elim=False)
# What restarts are told from (the alias layer picks each layout's path, 8.0 `shard.` included).
IDENTITY = ("pid", "uptime_ms", "uptime_s")
# One process's samples give its start (time less uptime) within this much: the uptime in whole seconds (`uptime`
# where `uptimeMillis` is not recorded) and the moment a collection takes. Two processes of one pid (a container's
# mongod is often pid 1 each time) start further apart than that: the first lived and was sampled in between.
SAME_START_MS = 2000


def _canonical(columns: Iterable[str], resolved: Resolved, names: Iterable[str]) -> list[pl.Expr]:
    """One expression per canonical name among `names` whose paths are among `columns`: a node
    upgraded mid-directory (7.0 -> 8.0) wrote two paths for one quantity, so they are coalesced."""
    present_columns = set(columns)
    exprs = []
    for name in names:
        present = [p for p in resolved.paths.get(name, ()) if p in present_columns]
        if present:
            exprs.append(pl.coalesce(present).alias(name) if len(present) > 1 else pl.col(present[0]).alias(name))
    return exprs


def _process_marks(frame: pl.DataFrame, identity: set[str]) -> tuple[pl.Series, pl.Series] | None:
    """Whether each sample of a time-ordered `frame` is a restart, and whether it was taken by another process than
    the sample before it; None when neither the pid nor an uptime is recorded.

    A process is its pid and its start: the sample's time less its uptime (mongod reads both from the wall clock, so a
    clock step moves neither). Consecutive samples of one process make a run; runs of one pid whose starts lie within
    SAME_START_MS of each other (in order of start) are one process, however other processes' runs interleave with them.
    A restart is the first run of a process that started later than the process before it, whose run before it is
    that process's last. The work is done per run, a few per restart, not per sample."""
    uptime = next((u for u in ("uptime_ms", "uptime_s") if u in identity), None)
    if uptime is None and "pid" not in identity:
        return None
    started = (
        pl.col(TIME_COLUMN).dt.epoch("ms") - pl.col(uptime).cast(pl.Int64) * (1 if uptime == "uptime_ms" else 1000)
        if uptime
        else pl.lit(None, pl.Int64)
    )
    pid = pl.col("pid") if "pid" in identity else pl.lit(0)
    moved = (pl.col("started") - pl.col("started").shift(1)).abs() > SAME_START_MS
    runs = (
        frame.select(pid.alias("pid"), started.alias("started"))
        .with_row_index("row")
        .filter(pl.col("pid").ne_missing(pl.col("pid").shift(1)) | moved.fill_null(False))
    )
    process = (
        runs.with_row_index("run")
        .sort("pid", "started", nulls_last=True)
        .select(
            "run",
            process=(
                pl.col("pid").ne_missing(pl.col("pid").shift(1)) | (pl.col("started").diff() > SAME_START_MS).fill_null(False)
            ).cum_sum(),
        )
        .sort("run")["process"]
    )
    runs = runs.with_columns(process=process).with_columns(
        restart=(
            pl.col("process").is_first_distinct()
            & pl.col("process").is_last_distinct().shift(1).fill_null(False)
            & (pl.col("started") > pl.col("started").shift(1)).fill_null(True)
        ),
        switched=pl.col("process").ne_missing(pl.col("process").shift(1)) & (pl.col("row") > 0),
    )
    none = pl.Series([False]).extend_constant(False, frame.height - 1) if frame.height else pl.Series([], dtype=pl.Boolean)
    restart, switched = (
        none.clone().scatter(runs.filter(pl.col(flag))["row"], True) if runs[flag].any() else none
        for flag in ("restart", "switched")
    )
    return restart, switched


def _bookkeeping(frame: pl.DataFrame, identity: Iterable[str]) -> pl.LazyFrame:
    """interval_s, period_s, restart, gap, valid (the interval ending at each row can be rated) of a time-ordered
    `frame` holding the `identity` columns it has.

    A restart is the first sample of a new process that began after the one before it (later than its start),
    whose previous sample is that process's last: files that overlap in time (a metrics file and an interim,
    two directories read together) interleave the samples of processes that are not replaced, and one
    process's line returning after another's is no restart. A rate is taken only within one process's line."""
    step = frame.select(pl.col(TIME_COLUMN).diff().dt.total_milliseconds() / 1000).to_series()
    # The period in effect: the median of the PERIOD_WINDOW steps before each. The median of the steps after a row is
    # the one PERIOD_WINDOW + 1 rows on (nulls past the end, so the last rows' take what is left): one pass for both.
    medians = medians_of_rows_before(step.extend_constant(None, PERIOD_WINDOW + 1), PERIOD_WINDOW)
    period, after = medians.head(frame.height), medians.slice(PERIOD_WINDOW + 1, frame.height)
    marks = _process_marks(frame, set(identity))
    restart, switched = (pl.lit(False), pl.lit(False)) if marks is None else (pl.lit(marks[0]), pl.lit(marks[1]))
    # The period a gap is measured against is the larger of the medians before and after the
    # step, so a change of sampling period (1 s -> 10 s) is not taken for a gap.
    lazy = frame.lazy().with_columns(
        interval_s=step,
        period_s=period.fill_null(step),
        gap_period_s=pl.max_horizontal(period, after),
        restart=restart,
        switched=switched,
    )
    # Repeated timestamps (period 0: samples timed by their chunk) say nothing about gaps.
    lazy = lazy.with_columns(gap=(pl.col("gap_period_s") > 0) & (pl.col("interval_s") > GAP_PERIODS * pl.col("gap_period_s")))
    return lazy.with_columns(valid=(pl.col("interval_s") > 0) & ~pl.col("switched") & ~pl.col("gap").fill_null(True))


def threshold_exprs(thresholds: Thresholds, cache_max_bytes: pl.Expr | None) -> list[pl.Expr]:
    """Each cache threshold in effect at each sample, in % (values above 100 are bytes, made % of `cache_max_bytes`)."""
    out = []
    for name in CACHE_PERCENTAGES:
        value = thresholds.expr(name, pl.col(TIME_COLUMN))
        if cache_max_bytes is not None:
            value = pl.when(value > 100).then(100 * value / cache_max_bytes).otherwise(value)
        out.append(value.alias(f"{name}_pct"))
    return out


def prepare(raw: pl.DataFrame, resolved: Resolved) -> pl.DataFrame:
    """`raw` (a read_ftdc frame of `resolved.wanted`) in time order with the bookkeeping columns beside its own
    (restarts are known from here on: the thresholds in effect need them before `derive` runs). Only the few
    identity columns are computed on; the rest are the same buffers, not copies."""
    ordered = raw.sort(TIME_COLUMN, maintain_order=True)  # free when the decoder flagged it sorted
    identity = _canonical(ordered.columns, resolved, IDENTITY)
    book = _bookkeeping(ordered.select(TIME_COLUMN, *identity), [e.meta.output_name() for e in identity])
    return ordered.hstack(book.select(*BOOKKEEPING).collect(engine=ENGINE).get_columns())


def _plan(frame: pl.DataFrame, resolved: Resolved, columns: list[Column]) -> pl.LazyFrame:
    """`columns` of a frame holding the time, the bookkeeping and the recorded paths they need: the canonical names,
    each counter's increase (once, however many columns read it), every column's expression."""
    canonical = _canonical(frame.columns, resolved, resolved.paths)
    return (
        frame.lazy()
        .select(TIME_COLUMN, *BOOKKEEPING, *canonical)
        .with_columns(increases(resolved, (e.meta.output_name() for e in canonical)))
        .select(TIME_COLUMN, *BOOKKEEPING, *(c.expression for c in columns))
    )


# The columns are derived in plans of consecutive columns, each collected before the next, whose values and the
# increases of the counters they read (a plan holds each beside its columns until it ends) take at most this much
# memory; the read's columns go as the plans are done with them. A week's analysed columns (464 MB) took 590 MB at once
# above the prepared frame, 450 MB in three plans; with the read's columns going, its derivation peaked 155 MB above
# what it was given in ten plans of as many columns, 50 MB in 19 plans of this many bytes (in 0.30 s against 0.23 s
# in plans of 160 MB). A small read is derived in one plan (docs/performance.md).
PLAN_BYTES: Final = 48 << 20


def derive(
    prepared: pl.DataFrame,
    resolved: Resolved,
    thresholds: Thresholds,
    *,
    shown: bool = True,
    spend: Collection[str] | None = None,
) -> pl.DataFrame:
    """The derived series of a `prepare`d frame (without the SHOWN_ONLY columns unless `shown`): lazy plans (`_plan`)
    of consecutive columns of PLAN_BYTES at most, each collected once, so a counter's Δ that several columns of a plan
    use is computed once; then the thresholds in effect.

    `spend`: the recorded columns to leave in `prepared`; each other one is dropped from it (in place) once no later
    plan reads it, and its memory goes back then (the decoder's columns each go when they are no longer held: a week's
    derivation peaked at the whole read beside every plan's columns). For a caller that hands `prepared` over."""
    columns = [c for c in columns_for(resolved) if shown or not shown_only(c.name)]
    cache_max = "cache_max_bytes" in {c.name for c in columns}
    held = Held()
    derived = _collected(prepared, resolved, columns, held, spend)
    exprs = threshold_exprs(thresholds, pl.col("cache_max_bytes") if cache_max else None)
    limits = derived.with_columns(exprs).select(e.meta.output_name() for e in exprs)  # a constant's a value a row
    return derived.hstack(held.shared(limits).get_columns())


def _collected(
    frame: pl.DataFrame, resolved: Resolved, columns: list[Column], held: Held, spend: Collection[str] | None
) -> pl.DataFrame:
    """`columns` of `frame` beside its time and bookkeeping, in plans of consecutive columns (PLAN_BYTES), each
    collected and `held.shared` before the next; with `spend`, `derive`'s."""
    plans = _plans(columns, max(1, PLAN_BYTES // (8 * max(1, frame.height))))
    parts: list[pl.DataFrame] = []
    for done, plan in enumerate(plans, 1):
        part = _plan(frame, resolved, plan).collect(engine=ENGINE, optimizations=OPTIMIZATIONS)
        # The time and bookkeeping once, with the first plan's columns: the others' are the same columns of `frame`.
        parts.append(held.shared(part if not parts else part.drop(TIME_COLUMN, *BOOKKEEPING)))
        if spend is not None:
            needed = {*spend, TIME_COLUMN, *BOOKKEEPING, *_recorded_inputs(resolved, plans[done:])}
            for name in [c for c in frame.columns if c not in needed]:
                frame.drop_in_place(name)
            release_dropped_columns()
    return parts[0].hstack([c for part in parts[1:] for c in part.get_columns()])


def _plans(columns: list[Column], room: int) -> list[list[Column]]:
    """`columns` cut into plans of consecutive columns, each holding at most `room` columns' worth of values: its own
    and the increase of each counter they read (a plan of the operations' latencies and rates holds a dozen), and one
    column at least."""
    plans: list[list[Column]] = [[]]
    counters: set[str] = set()
    for column in columns:
        reads = {root for root in column.expression.meta.root_names() if root.startswith(_increase_column(""))}
        if plans[-1] and len(plans[-1]) + 1 + len(counters | reads) > room:
            plans.append([])
            counters = set()
        plans[-1].append(column)
        counters |= reads
    return plans


class Held:
    """The columns of the frames it has shared, by what tells equal ones apart quickly.

    Many series of a node hold the same values: on an idle node or a standalone, a dozen counters are 0 wherever an
    interval can be rated, and totals and queues sit at one value all week. Each such column is a value a row all the
    same (5 MB a week), so a column equal to one held already, to the bit and in its nulls, holds that one's memory
    (27 of a week's 96 analysed columns on the bench's node: 130 MB)."""

    def __init__(self) -> None:
        self._columns: dict[tuple, list[pl.Series]] = {}

    def shared(self, frame: pl.DataFrame) -> pl.DataFrame:
        """`frame`, each column equal to one held already (in this frame or an earlier one) holding that one's memory."""
        replaced = []
        for column, same in self._keyed(frame):
            match = next((held for held in same if _bitwise_equal(held, column)), None)
            if match is None:
                same.append(column)
            else:
                replaced.append(match.alias(column.name))
        return frame.with_columns(replaced) if replaced else frame

    def hold(self, frame: pl.DataFrame) -> None:
        """Holds the columns of a frame already shared, comparing none (a later frame's may share theirs)."""
        for column, same in self._keyed(frame):
            same.append(column)

    def _keyed(self, frame: pl.DataFrame) -> list[tuple[pl.Series, list[pl.Series]]]:
        """Each numeric column of `frame` and the columns held of its key: what tells most unequal columns apart at
        once, their type, nulls, least, greatest and sum."""
        schema = frame.schema
        numeric = [name for name, dtype in schema.items() if dtype.is_numeric()]
        if not numeric or not frame.height:
            return []
        # One expression per statistic over every column (not four per column): polars plans 4, not 4 x 90.
        statistics = (pl.col(numeric).null_count(), pl.col(numeric).min(), pl.col(numeric).max(), pl.col(numeric).sum())
        row = frame.select(s.name.suffix(f"\0{k}") for k, s in enumerate(statistics)).row(0)
        keys = zip(*(row[k * len(numeric) : (k + 1) * len(numeric)] for k in range(len(statistics))))
        return [(frame[c], self._columns.setdefault((schema[c], *key), [])) for c, key in zip(numeric, keys)]


def _bitwise_equal(a: pl.Series, b: pl.Series) -> bool:
    """Whether two columns of one type hold the same values, nulls where each other has them and floats to the bit
    (0.0 is not -0.0, as `equals` would have it)."""
    if not a.equals(b, check_names=False, null_equal=True):
        return False
    if not a.dtype.is_float():
        return True
    import pyarrow as pa  # loaded by every read already (`ftdc.frames.to_polars`)

    # The values' bits as unsigned integers, in place (a NumPy copy filled each null: 4 x the time); Arrow compares
    # the valid slots only, whatever a null's slot holds.
    first, second = a.to_arrow(), b.to_arrow()
    unsigned = getattr(pa, f"uint{first.type.bit_width}")()
    return bool(first.view(unsigned).equals(second.view(unsigned)))


def _recorded_inputs(resolved: Resolved, plans: Iterable[list[Column]]) -> set[str]:
    """The recorded paths the columns of `plans` read: those of each canonical name (or its increase) their
    expressions name."""
    names = {root.removeprefix(_increase_column("")) for plan in plans for c in plan for root in c.expression.meta.root_names()}
    return {path for name in names for path in resolved.paths.get(name, ())}


class Derived:
    """An analysis's derived series: `analysed`, the columns the analyses read, derived at once, and `full()`, every
    column, the SHOWN_ONLY ones derived at its first call from the recorded columns they need (the decoded frame's
    own buffers, held until then, not copies). Copies of an analysis share it, so they are derived once."""

    def __init__(self, prepared: pl.DataFrame, resolved: Resolved, thresholds: Thresholds):
        """Takes `prepared` over: the recorded columns it holds are dropped from it as the plans are done with them,
        all but those `full` needs (`derive`'s `spend`). The columns held here are the decoder's own, each of whose
        memory goes back when nothing holds it."""
        self._resolved = resolved
        self._later = [c for c in columns_for(resolved) if shown_only(c.name)]
        paths = _recorded_inputs(resolved, [self._later])
        self.analysed = derive(prepared, resolved, thresholds, shown=False, spend=paths)
        self._sources: pl.DataFrame | None = prepared.select(
            TIME_COLUMN, *BOOKKEEPING, *(c for c in prepared.columns if c in paths)
        )
        self._full: pl.DataFrame | None = None
        self._deriving = threading.Lock()

    def full(self) -> pl.DataFrame:
        """Every derived column, in `derive`'s order; the same values, to the bit, as one plan of them all gives. The
        recorded columns kept for it go as its plans are done with them."""
        with self._deriving:
            if self._full is None:
                assert self._sources is not None
                sources, self._sources = self._sources, None
                held = Held()
                held.hold(self.analysed)  # a shown column equal to an analysed one holds its memory
                later = _collected(sources, self._resolved, self._later, held, spend=()).drop(TIME_COLUMN, *BOOKKEEPING)
                self._full = self.analysed.hstack(later.get_columns()).select(TIME_COLUMN, *describe(self._resolved))
            return self._full


BOOKKEEPING = {
    "interval_s": ("s", "time since the previous sample"),
    "period_s": ("s", "sampling period in effect"),
    "restart": ("flag", "the process restarted before this sample"),
    "gap": ("flag", f"more than {GAP_PERIODS} periods since the previous sample"),
    "valid": ("flag", "the interval ending here can be rated"),
}


def describe(resolved: Resolved) -> dict[str, tuple[str, str]]:
    """name -> (unit, meaning) of every column `derive` makes for this node."""
    known = dict(BOOKKEEPING)
    known.update({c.name: (c.unit, c.meaning) for c in columns_for(resolved)})
    known.update({f"{name}_pct": ("%", f"{name} in effect (% of the cache)") for name in CACHE_PERCENTAGES})
    return known
