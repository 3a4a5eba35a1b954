"""Randomised scenarios for the detectors (issue 13 §2): a node shape and an incident (or a quiet
node) in, a simulated diagnostic.data + mongod log + what was injected out.

`Shape` is the node: version and layout, cache size, healthy latency, FTDC sampling
period, the log's time-zone offset, and the configuration it runs with (eviction
triggers, checkpoint interval, a fixed ticket pool or, from 7.0, throughput probing).
`Incident` is one detector's mechanism (docs/metrics.md) at a drawn length and strength;
`Quiet` is a busy node that is healthy. `build` writes the node and returns a
`Scenario` whose `expected` findings are written from what was injected, never from
what the analyses find. tests/test_families.py draws them with hypothesis;
`python -m bench.bench_families` counts pass rates.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from samples.make_scenarios import DEFAULT_OPEN, Healthy, json_log, ordinary_slow_finds
from samples.simulate import Config, JsonLog, Run, TextLog, Tick, write_ftdc

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
VERSIONS = {"4.2": "4.2.24", "4.4": "4.4.29", "6.0": "6.0.14", "7.0": "7.0.12", "8.0": "8.0.4", "8.0-services": "8.0.4"}
FIXED_POOL = 128  # tickets per pool before 7.0 unless set
HEALTHY_READ_US, HEALTHY_WRITE_US = 200, 300  # Healthy's mean latencies, which `Shape.baseline_ms` rescales
WINDOW_TOLERANCE_S = 5  # the issue's ±5 s; no better than one sampling period


@dataclass(frozen=True)
class Shape:
    """The node an incident happens on."""

    layout: str = "7.0"  # 4.2 | 4.4 | 6.0 | 7.0 | 8.0 | 8.0-services; 4.2 writes the legacy text log, 4.4+ only JSON
    cache_gb: float = 8.0
    baseline_ms: float = HEALTHY_WRITE_US / 1000  # healthy mean write latency (reads 2/3 of it, commands 1/3)
    period_s: int = 1  # diagnosticDataCollectionPeriodMillis / 1000
    tz_minutes: int = 0  # the log's UTC offset
    checkpoint_interval: int = 60  # storage.syncPeriodSecs, configured when not 60
    eviction_trigger: int = 95  # configured when not WiredTiger's default
    dirty_trigger: int = 20
    tickets: int | None = (
        None  # a pool size set by setParameter; None: 128 before 7.0, throughput probing from 7.0; 0: 8.0's default recorded
    )
    seed: int = 0
    standalone: bool = False  # no replica set (a member of "rs0" otherwise)
    eviction_target: int = 80  # configured when not WiredTiger's default (lowered: background eviction starts early)
    dirty_target: int = 5
    cores: int = 8  # the host's logical cores

    @property
    def probing(self) -> bool:
        return not self.tickets and self.layout not in ("4.2", "4.4", "6.0")

    def config(self) -> Config:
        set_ = {
            key: value
            for key, value, default in (
                ("eviction_trigger", self.eviction_trigger, 95),
                ("eviction_dirty_trigger", self.dirty_trigger, 20),
                ("eviction_target", self.eviction_target, 80),
                ("eviction_dirty_target", self.dirty_target, 5),
            )
            if value != default
        }
        # The triggers are written together when either is set (as before the targets could be).
        if {"eviction_trigger", "eviction_dirty_trigger"} & set(set_):
            set_ = {"eviction_trigger": self.eviction_trigger, "eviction_dirty_trigger": self.dirty_trigger, **set_}
        cache = ",".join(f"{key}={value}" for key, value in set_.items()) or None
        pool = None
        if self.tickets is not None:
            prefix = "wiredTigerConcurrent" if self.layout in ("4.2", "4.4", "6.0") else "storageEngineConcurrent"
            pool = {f"{prefix}ReadTransactions": self.tickets, f"{prefix}WriteTransactions": self.tickets}
        return Config(
            version=VERSIONS[self.layout],
            layout=self.layout,
            cache_gb=self.cache_gb,
            config_string=cache,
            seed=self.seed,
            checkpoint_interval=self.checkpoint_interval,
            first_checkpoint=self.checkpoint_interval // 2,
            sync_period_s=self.checkpoint_interval if self.checkpoint_interval != 60 else None,
            parameters=pool,
            log_tz=dt.timezone(dt.timedelta(minutes=self.tz_minutes)),
            host=f"db-{self.seed % 1000:03d}.example.net",
            replica_set=None if self.standalone else Config.replica_set,
            cores=self.cores,
            cpu=True,
        )


@dataclass(frozen=True)
class Incident:
    """One detector's incident. `strength` (0-1) places it within its mechanism's realistic range:
    how far past the trigger, how many queued, how slow the disk, how fast clients reconnect."""

    kind: str
    length_s: int
    factor: float = 10.0  # how many times the affected operations' mean latency rises
    variant: str = ""  # cache_pressure: fill | dirty; ticket_exhaustion: read | write; checkpoint_stall: repeated | long
    strength: float = 0.5
    culprit: bool = False  # a COLLSCAN in the log causes it (cache fill, tickets)
    victims: bool = False  # checkpoint_stall: short COLLSCANs that spent their time waiting on it
    long_reads: bool = False  # checkpoint_stall: aggregates of minutes finishing at random times, credited at completion
    steady: bool = False  # the load did not change: a workload root cause must say so, and name the operations carrying it
    index_build: bool = False  # cache_pressure (fill): an index build's collection scan fills the cache (its root cause)
    at_limits: bool = (
        False  # cache_pressure (fill): the cache sits at its trigger all along and the working set grows (its root cause)
    )
    pinned: bool = False  # cache_pressure (dirty): an idle transaction pins history while the load is unchanged (its root cause)
    # What pins it: a transaction the client ends with the window, within its transactionLifetimeLimitSeconds ("transaction");
    # one the server's reaper aborts then, having outlived the limit ("reaped"); or a cursor, no transaction open ("cursor").
    pinned_by: str = "transaction"
    own_queue: bool = (
        False  # ticket_exhaustion (read, 8.0 logs the queue): the culprit's runs fill the pool and queue behind each other
    )
    # Issue 39 §3, each its root cause: a client's insert batches of ~75 documents at an unchanged request rate
    # (checkpoint_stall); another process reading the device, mongod's own I/O unchanged (disk_saturation); quiet hours, then
    # a working set past the cache, an hour at its trigger reading 5-10× as much (cache_pressure fill).
    bulk_loader: bool = False
    other_process: bool = False
    outgrown: bool = False
    warm_up: bool = False  # connection_storm: the reconnecting clients' first queries queue for every read ticket (its load)
    other_writes: bool = False  # disk_saturation: another process writing the device, mongod's own I/O a tenth of the plan's


# cpu_saturation's variants: whose CPU it is ("": mongod's own work; another process's; the hypervisor's steal), and the
# hosts that must stay quiet: every core busy with no thread waiting, a saturation shorter than a minute, a host
# rebooted (its counters start again from boot) with more threads runnable than cores on both sides and the CPUs under
# the bar.
CPU_CAUSES = ("", "other_process", "steal")
CPU_QUIET = ("busy", "spike", "reboot")


@dataclass(frozen=True)
class Quiet:
    """A busy node that is healthy: nothing may be raised, no COLLSCAN blamed."""

    minutes: int = 60
    full_cache: bool = False  # fill 90-94 % (under the node's trigger), dirty under its trigger
    fast_collscans: bool = False  # frequent short COLLSCANs of tiny collections
    blips: int = 0  # latency blips at random times (some in checkpoints, by chance only)
    restart: bool = False
    gap: bool = False
    idle_days: float = 0.0  # instead: a node with next to no work for days


@dataclass
class Expected:
    kind: str
    resource: str | None
    start: dt.datetime
    end: dt.datetime
    tolerance_s: float
    culprit: tuple[str, str] | None = None  # (ns, command) of the COLLSCAN that must be named the cause


@dataclass(frozen=True)
class Pinned:
    """What held history in a pinned scenario: its holder (Incident.pinned_by), the node's transaction lifetime and how long it held."""

    holder: str
    limit_s: float  # transactionLifetimeLimitSeconds in effect (mongod's 60 unless set)
    held_s: int


@dataclass
class Scenario:
    ftdc: Path
    log: Path | None  # None: no log beside the FTDC
    expected: list[Expected] = field(default_factory=list)
    victims: bool = False  # COLLSCANs that waited on the incident are in the log: no operation may be its root cause
    root: tuple[str, str | None] | None = None  # the root cause's mechanism (evidence "mechanism") and namespace, when injected
    pools_unset: bool = False  # no ticket pool was fixed (none recorded, or 8.0's 0): no cause may name one
    steady: bool = False  # the load was steady: the root cause says the writes did not change (or names a checkpoint interval that is the problem)
    pinned: Pinned | None = None
    bulk_loader: bool = False  # the write load rose in documents, not in operations: its root cause says so and names the client
    warm_up: bool = False  # a storm's clients' first queries: the storm's load (named in its root cause), never its victims


# -- the healthy node


class Baseline:
    """Healthy's busy node at the shape's latency, with its ticket pools (fixed, or 7.0+ probing:
    a pool of 8-24 that is often all held with nobody waiting)."""

    def __init__(self, shape: Shape):
        self.shape = shape
        self.healthy = Healthy(shape.seed, shape.checkpoint_interval, ttl_second=shape.seed % 60)
        self.rng = self.healthy.rng
        self.scale = shape.baseline_ms * 1000 / HEALTHY_WRITE_US

    def total(self, s: int) -> int:
        if self.shape.probing:
            return 8 + (s // 30) % 17
        return self.shape.tickets or FIXED_POOL  # (0 is probing's, from 7.0)

    def __call__(self, s: int) -> Tick:
        tick = self.healthy(s)
        total = self.total(s)
        tick = replace(
            tick,
            read_latency_us=tick.read_latency_us * self.scale,
            write_latency_us=tick.write_latency_us * self.scale,
            command_latency_us=tick.command_latency_us * self.scale,
            read_total=total,
            write_total=total,
        )
        if self.shape.probing:
            held = [total if self.rng.random() < 0.35 else self.rng.randint(0, total) for _ in range(2)]
            tick = replace(tick, read_out=held[0], write_out=held[1])
        return tick


# -- incidents: each kind's plan, the node second by second


@dataclass
class Timeline:
    shape: Shape
    start: int  # the incident's first second
    end: int  # one past its last
    seconds: int

    @property
    def tolerance(self) -> float:
        return max(WINDOW_TOLERANCE_S, self.shape.period_s)


def _slowed(tick: Tick, base: Baseline, factor: float, reads: bool = True, writes: bool = True) -> Tick:
    """Operations `factor` times slower than the node's healthy mean (not this second's draw, which
    varies ±17 %: the rise is the one drawn)."""
    return replace(
        tick,
        read_latency_us=factor * HEALTHY_READ_US * base.scale if reads else tick.read_latency_us,
        write_latency_us=factor * HEALTHY_WRITE_US * base.scale if writes else tick.write_latency_us,
    )


def _cache(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    shape, r = base.shape, base.rng
    excess = 0.3 + 3.7 * incident.strength  # points past the trigger

    def plan(s: int) -> Tick:
        tick = base(s)
        if not line.start <= s < line.end:
            return tick
        if incident.variant == "dirty":
            dirty = (shape.dirty_trigger + excess) / 100
            tick = replace(tick, dirty=dirty, updates=dirty / 2)
        else:
            tick = replace(
                tick,
                cache_fill=min(0.999, (shape.eviction_trigger + excess) / 100),
                scanned_objects=tick.scanned_objects + 80_000 * incident.culprit,
            )
        return _slowed(
            replace(
                tick, app_evicted_pages=r.uniform(300, 1500), app_evict_us=r.uniform(1e6, 4e6), app_wait_us=r.uniform(1e6, 6e6)
            ),
            base,
            incident.factor,
        )

    return plan


def _tickets(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    rw, r = incident.variant, base.rng
    queue = 1 + int(299 * incident.strength)

    def plan(s: int) -> Tick:
        tick = base(s)
        if not line.start <= s < line.end:
            return tick
        held = {f"{rw}_out": tick.read_total, f"{rw}_queue": max(1, int(queue * r.uniform(0.7, 1.0)))}
        return _slowed(replace(tick, **held), base, incident.factor, reads=rw == "read", writes=rw == "write")

    return plan


def _ttl(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    # 12,000 to 600,000 documents a minute (sub-passes of up to 50,000 per index, SERVER-56194); a pass shorter
    # than a minute still deletes 12,000 (a burst is 10,000 in a minute or more, docs/metrics.md §7).
    rate = int(max(200 + 9800 * incident.strength, 12_000 / min(line.end - line.start, 60)))

    def plan(s: int) -> Tick:
        tick = base(s)
        if line.end <= s < line.end + 60:  # the monitor sleeps a minute after its pass
            return replace(tick, ttl_deleted=0, ttl_pass=False)
        if not line.start <= s < line.end:
            return tick
        dirty = min(
            tick.dirty + 0.0005 * (s - line.start), (base.shape.dirty_trigger - 2) / 100
        )  # the deletes dirty the cache, under its trigger
        return _slowed(
            replace(tick, ttl_deleted=rate, ttl_pass=s == line.start, dirty=max(tick.dirty, dirty)),
            base,
            incident.factor,
            reads=False,
        )

    return plan


def _disk(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    r = base.rng
    wait = 15 + 285 * incident.strength  # ms per request

    def plan(s: int) -> Tick:
        tick = base(s)
        if not line.start <= s < line.end:
            return tick
        return _slowed(
            replace(
                tick,
                disk_util=1.0,
                disk_await_ms=wait * r.uniform(0.8, 1.2),
                io_full_share=r.uniform(0.1, 0.45),
                disk_mb=r.uniform(100, 400),
                own_writes=True,
            ),
            base,
            incident.factor,
        )

    return plan


def _cpu(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    """The host's CPUs through the window (docs/analyses.md, CPU saturation): saturated (busy 96-100 %, 1.3 to 4 runnable
    threads per core, at least one thread more than the cores) by mongod's own work, another process's (mongod a tenth
    to a third of the busy time) or the hypervisor's steal (15-40 % of all the cores' time); or one of CPU_QUIET."""
    r, cores = base.rng, base.shape.cores
    # Runnable threads per core: at least one thread over the cores after the simulator's ±10 % (a 2-core host's 1.3 is 2).
    waiting = max(1.3 + 2.7 * incident.strength, (cores + 1.5) / cores / 0.9)

    def plan(s: int) -> Tick:
        tick = base(s)
        if incident.variant == "reboot":  # under the bar throughout, more runnable than cores; down through the window
            return replace(tick, cpu_busy=r.uniform(0.8, 0.88), runnable=waiting, missing=line.start <= s < line.end)
        if not line.start <= s < line.end:
            return tick
        if incident.variant == "busy":  # every core busy, no thread waiting
            return replace(tick, cpu_busy=r.uniform(0.95, 1.0), runnable=min(0.85, cores / (cores + 1)) * r.uniform(0.6, 1.0))
        tick = replace(tick, cpu_busy=r.uniform(0.96, 1.0), runnable=waiting, mongod_cpu=r.uniform(0.85, 0.95))
        if incident.variant == "other_process":
            tick = replace(tick, mongod_cpu=r.uniform(0.1, 0.35))
        if incident.variant == "steal":
            tick = replace(tick, cpu_steal=r.uniform(0.15, 0.4))
        # A spike's operations are left at their pace: what must stay quiet is the CPU's finding, not the latency's.
        return tick if incident.variant == "spike" else _slowed(tick, base, incident.factor)

    return plan


def _dhandles(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    r = base.rng
    handles = int(5_000 + 95_000 * incident.strength)
    waiting = 0.15 + 3.85 * incident.strength  # threads waiting for the dhandle lock, on average

    def plan(s: int) -> Tick:
        tick = replace(base(s), dhandles=handles, gather_handles_us=300_000)
        if not line.start <= s < line.end:
            return tick
        return _slowed(
            replace(tick, dhandle_wait_us=waiting * 1e6 * r.uniform(0.8, 1.2), gather_handles_us=r.uniform(1.2e6, 4e6)),
            base,
            incident.factor,
        )

    return plan


def _storm(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    # Connections opened a second: from 50, over 12× the busiest healthy second (4/s): a storm near its 10× bar
    # lifts the hour's median it is measured against with its own samples.
    rate = 50 + 1950 * incident.strength
    limit = 51_200
    count = {"open": 300}

    def plan(s: int) -> Tick:
        tick = base(s)
        if line.start <= s < line.end:
            count["open"] = min(limit, count["open"] + int(rate * 0.6))  # most stay open: the count climbs
            return replace(
                tick,
                connections=count["open"],
                connections_created=rate,
                connections_rejected=int(rate * 0.4) if count["open"] >= limit else 0,
            )
        if s >= line.end and count["open"] > 300:
            count["open"] = max(300, count["open"] - 200)  # idle connections time out
        return replace(tick, connections=max(tick.connections, count["open"]))

    return plan


def _dip(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    """The server stalls (throughput-dip's mechanism): operations hardly finish, every ticket is held by
    one waiting for the stall (mongod takes the ticket before the global lock) and the rest queue;
    serverStatus itself may wait, so FTDC misses samples."""
    r = base.rng
    collect_ms = 3000 * incident.strength

    def plan(s: int) -> Tick:
        tick = base(s)
        if not line.start <= s < line.end:
            return tick
        return replace(
            tick,
            reads_stalled=True,
            writes_stalled=True,
            collect_ms=collect_ms,
            read_out=tick.read_total,
            write_out=tick.write_total,
            read_queue=r.randint(20, 300),
            write_queue=r.randint(20, 300),
            missing=collect_ms >= 1000 * base.shape.period_s and (s - line.start) % 3 != 0,
        )  # a collection outlasting the period misses the next

    return plan


def stall_seconds(incident: Incident, shape: Shape) -> float:
    """How long each checkpoint of a `repeated` episode runs: 5-30 % of the interval, at least 3 s and
    three samples (its slow part must fill a whole sample to be seen at that period)."""
    return float(max(3, 3 * shape.period_s, round(shape.checkpoint_interval * (0.05 + 0.25 * incident.strength))))


def _checkpoints(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    """SERVER-21652: during the episode each checkpoint runs longer and writes slow down in its
    latter part (`repeated`, each shorter than the interval); or one checkpoint outlasts the
    interval, writes slowing near its end (`long`). Checkpoints start every interval from
    interval / 2 (Node), so the plan knows when they run."""
    interval = base.shape.checkpoint_interval
    first = interval // 2

    def started(s: int) -> int | None:
        """The start of the episode's checkpoint running at second `s`, if one is."""
        start = line.start if incident.variant == "long" else first + (s - first) // interval * interval
        return start if line.start <= start < line.end and start <= s < start + length(start) else None

    def length(start: int) -> float:
        return float(line.end - start) if incident.variant == "long" else stall_seconds(incident, base.shape)

    def plan(s: int) -> Tick:
        tick = base(s)
        start = started(s)
        if start is None:
            return tick
        tick = replace(tick, checkpoint_seconds=length(start), disk_util=0.98)
        # The latter part (dirty pages left for the end): 30 %, and two samples so that one is slow throughout.
        slow_from = start + length(start) - max(2 * base.shape.period_s, int(length(start) * 0.3))
        return _slowed(tick, base, incident.factor, reads=False) if s >= slow_from else tick

    return plan


def long_reads(base: Baseline, line: Timeline, rng: random.Random) -> dict[int, int]:
    """Aggregates of 1-10 minutes ending every 1-4 minutes through the episode and around it: second -> milliseconds."""
    out, s = {}, line.start - 300
    while s < line.end + 120:
        out[s] = rng.randint(60_000, 600_000)
        s += rng.randint(60, 240)
    return out


def _index_build(plan: Callable[[int], Tick], span: tuple[int, int]) -> Callable[[int], Tick]:
    """`plan` with an index build registered at span[0] and committed at span[1] (indexBuilds, indexBulkBuilder)."""
    return lambda s: replace(plan(s), index_build=span[0] <= s < span[1])


def _pinning(plan: Callable[[int], Tick], since: int, until: int, transaction: bool) -> Callable[[int], Tick]:
    """`plan` with one transaction (or a cursor) left open and idle from `since` to `until`: every write since pins another
    ID in WiredTiger, and the history store grows with the updates it keeps."""

    def pinned(s: int) -> Tick:
        tick = plan(s)
        if not since <= s < until:
            return tick
        return replace(
            tick,
            txn_open=int(transaction),
            txn_inactive=int(transaction),
            pinned_ids=30 + int(tick.writes * (s - since)),
            history_store_bytes=tick.history_store_bytes + (s - since) * 2 * 2**20,
        )

    return pinned


def _at_limits(plan: Callable[[int], Tick], shape: Shape, line: Timeline, rng: random.Random) -> Callable[[int], Tick]:
    """`plan` on a node whose cache sits a point under its trigger all along, reading more and more into it; during the
    incident the working set outgrows it: three times the reads, and the fill past the trigger (the incident's own plan)."""

    def limited(s: int) -> Tick:
        tick = plan(s)
        if line.start <= s < line.end:
            return replace(tick, disk_mb=tick.disk_mb * 3)
        return replace(
            tick,
            cache_fill=(shape.eviction_trigger - 1 + rng.uniform(-0.4, 0.4)) / 100,
            disk_mb=tick.disk_mb * (1 + 0.3 * s / line.seconds),
        )

    return limited


DEFAULT_LIFETIME_S = 60  # transactionLifetimeLimitSeconds unless set
RAISED_LIFETIMES_S = (300, 600, 3600, 7200, 86400)  # what deployments raise it to


def reaper_period_s(limit_s: float) -> float:
    """The reaper wakes every half of the limit, 1 to 60 s (periodic_runner_job_abort_expired_transactions.cpp)."""
    return min(60.0, max(1.0, limit_s / 2))


def _lifetime(holder: str, held_s: int, rng: random.Random) -> int:
    """The node's transactionLifetimeLimitSeconds for a pin held `held_s` seconds: a transaction the reaper aborts at the end
    expired up to one reaper period earlier; one the client ends lived within it; a cursor's is any."""
    if holder == "reaped":
        return held_s - rng.randrange(max(1, min(60, held_s // 3)))
    fits = [
        limit
        for limit in (DEFAULT_LIFETIME_S, *RAISED_LIFETIMES_S)
        if holder == "cursor" or limit + reaper_period_s(limit) > held_s
    ]
    return rng.choice(fits[:2])


def _log_index_build(log: JsonLog | TextLog, run: Run, span: tuple[int, int], rng: random.Random) -> str:
    """The build's createIndexes command (it returns when the build commits) and, 4.4+, its INDEX lines. Returns its namespace."""
    ns = rng.choice(NAMESPACES)
    db, collection = ns.split(".")
    spec = {"key": {"customer": 1, "ts": -1}, "name": "customer_1_ts_-1"}
    if isinstance(log, JsonLog):
        for at, id_, msg in ((span[0], 20384, "Index build: starting"), (span[1], 20663, "Index build: completed successfully")):
            log.line(
                run.at(at), "INDEX", id_, "IndexBuildsCoordinatorMongod-0", msg, {"namespace": ns, "properties": {"v": 2, **spec}}
            )
    log.slow(
        run.at(span[1]) + dt.timedelta(milliseconds=30),
        f"conn{rng.randint(100, 999)}",
        ns,
        {"createIndexes": collection, "indexes": [spec], "$db": db},
        "",
        (span[1] - span[0]) * 1000 + 30,
        keys=0,
        docs=0,
        nreturned=0,
    )
    return ns


def _credited(plan: Callable[[int], Tick], ends: dict[int, int]) -> Callable[[int], Tick]:
    """`plan` with each long read's whole latency credited to the second it ends (opLatencies counts an operation
    when it finishes, docs/metrics.md §1): that second's mean read latency carries it; no other read is slower."""

    def credited(s: int) -> Tick:
        tick = plan(s)
        if s not in ends:
            return tick
        return replace(tick, read_latency_us=tick.read_latency_us + ends[s] * 1000 / max(tick.reads, 1))

    return credited


KINDS: dict[str, Callable[[Incident, Baseline, Timeline], Callable[[int], Tick]]] = {
    "cache_pressure": _cache,
    "ticket_exhaustion": _tickets,
    "ttl_burst": _ttl,
    "disk_saturation": _disk,
    "cpu_saturation": _cpu,
    "dhandle_pressure": _dhandles,
    "connection_storm": _storm,
    "throughput_dip": _dip,
    "checkpoint_stall": _checkpoints,
}


def _timeline(shape: Shape, incident: Incident, rng: random.Random) -> Timeline:
    """Eleven minutes of history first for the latency baselines (66 samples at long periods), some after.
    A checkpoint episode starts with a checkpoint, a TTL pass when the monitor wakes; other incidents at any second."""
    before = max(660, 66 * shape.period_s) + rng.randrange(60)  # at any second of a minute and of a sampling period
    if incident.kind == "checkpoint_stall":
        interval = shape.checkpoint_interval
        before = interval // 2 + -(-(before - interval // 2) // interval) * interval
    if incident.kind == "ttl_burst":  # a pass begins when the TTL monitor wakes
        before = shape.seed % 60 + -(-(before - shape.seed % 60) // 60) * 60
    after = max(300, 30 * shape.period_s) + (shape.checkpoint_interval if incident.kind == "checkpoint_stall" else 0)
    return Timeline(shape, before, before + incident.length_s, before + incident.length_s + after)


# -- the log


def node_log(shape: Shape, config: Config, run: Run, boot: dt.datetime | None = None) -> JsonLog | TextLog:
    """The log mongod writes at this version (JSON from 4.4, legacy text before), from a start-up at `boot` (a day
    earlier unless given) with the node's configuration in its open string, and the usual few slow indexed finds."""
    boot = boot or run.t0 - dt.timedelta(days=1)
    open_string = DEFAULT_OPEN.format(cache=int(config.cache_gb * 1024)) + (
        f",{config.config_string}" if config.config_string else ""
    )
    if shape.layout == "4.2":
        log = TextLog(config)
        log.startup(boot, open_string)
    else:
        log = json_log(config, run, boot, open_string)
    ordinary_slow_finds(log, run, len(run.ticks), random.Random(shape.seed + 1))
    return log


NAMESPACES = ("shop.orders", "app.events", "billing.invoices", "crm.contacts")


def _collscans(log: JsonLog | TextLog, incident: Incident, line: Timeline, run: Run, rng: random.Random) -> tuple[str, str]:
    """The operations that cause a cache-fill or ticket incident: COLLSCANs running through it.
    Returns their (namespace, command)."""
    ns = rng.choice(NAMESPACES)
    db, collection = ns.split(".")
    length_ms = (line.end - line.start) * 1000
    if incident.kind == "cache_pressure":  # one analytics aggregation that reads the collection through the cache
        log.slow(
            run.at(line.end) + dt.timedelta(milliseconds=400),
            "conn2231",
            ns,
            {
                "aggregate": collection,
                "pipeline": [{"$match": {"status": "shipped"}}, {"$group": {"_id": "$customer", "n": {"$sum": 1}}}],
                "cursor": {},
                "$db": db,
            },
            "COLLSCAN",
            length_ms + 400 + rng.randint(0, 2000),
            keys=0,
            docs=38_000_000,
            nreturned=101,
            queryHash="5C5B0E3A",
        )
        return ns, "aggregate"
    if incident.own_queue:
        return _own_queue(log, incident, line, run, rng, ns)
    if incident.variant == "read":  # finds without an index holding read tickets, started just before the queue forms
        for k in range(rng.randint(3, 8)):
            ms = length_ms + rng.randint(2_000, 20_000)
            log.slow(
                run.at(line.start)
                - dt.timedelta(milliseconds=ms - length_ms - rng.randint(0, 1500))
                + dt.timedelta(milliseconds=ms),
                f"conn{700 + k}",
                ns,
                {"find": collection, "filter": {"type": "click", "day": {"$gte": "2024-05-01"}}, "sort": {"ts": -1}, "$db": db},
                "COLLSCAN",
                ms,
                keys=0,
                docs=4_500_000 + k,
                nreturned=101,
                queryHash="7D2E7C1B",
            )
        return ns, "find"
    # updates whose filter has no index, back to back through the episode, each statement a COLLSCAN
    s = line.start - 25
    while s < line.end - 5:
        ms = rng.randint(15_000, 40_000)
        end = run.at(s) + dt.timedelta(milliseconds=ms)
        statement = {"q": {"sku": f"A-{s}"}, "u": {"$inc": {"stock": -1}}, "multi": False, "upsert": False}
        ctx = f"conn{rng.randint(100, 999)}"
        log.slow(
            end - dt.timedelta(milliseconds=1),
            ctx,
            ns,
            statement,
            "COLLSCAN",
            ms - 1,
            component="WRITE",
            op_type="update",
            keys=0,
            docs=2_400_000,
            nMatched=1,
            nModified=1,
        )
        log.slow(
            end,
            ctx,
            f"{db}.$cmd",
            {"update": collection, "updates": [statement], "ordered": True, "$db": db},
            "COLLSCAN",
            ms,
            keys=0,
            docs=2_400_000,
        )
        s += rng.randint(5, 14)
    return ns, "update"


def _own_queue(
    log: JsonLog | TextLog, incident: Incident, line: Timeline, run: Run, rng: random.Random, ns: str
) -> tuple[str, str]:
    """One COLLSCAN find run so often that its runs hold every read ticket and the rest of them queue: pool + queue
    runs in flight, each spending the queue's share of its time queued for a ticket (the queue behind its own runs)
    and most of its working time reading the collection from disk, as 8.0's slow-query line records both."""
    db, collection = ns.split(".")
    pool = run.ticks[line.start].read_total
    queue = run.ticks[line.start].read_queue
    in_flight = pool + queue
    s = float(line.start - 30)
    while s < line.end:
        ms = rng.randint(20_000, 40_000)
        queued, reading = ms * queue / in_flight, ms * pool / in_flight * rng.uniform(0.5, 0.7)
        log.slow(
            run.at(s) + dt.timedelta(milliseconds=ms),
            f"conn{rng.randint(100, 9999)}",
            ns,
            {"find": collection, "filter": {"region": "emea", "total": {"$gt": 100}}, "$db": db},
            "COLLSCAN",
            ms,
            keys=0,
            docs=900_000,
            nreturned=12,
            queryHash="3A9C51D0",
            queues={"execution": {"admissions": 1, "totalTimeQueuedMicros": int(queued * 1000)}},
            storage={"data": {"bytesRead": 700_000_000, "timeReadingMicros": int(reading * 1000)}},
        )
        s += ms / 1000 / in_flight
    return ns, "find"


def _victims(log: JsonLog | TextLog, run: Run, checkpoints: list[tuple[float, float]], layout: str, rng: random.Random) -> None:
    """Short COLLSCANs of a small collection caught in each slowed checkpoint: most of their time waiting
    for cache, a lock or (8.0, which logs it) a ticket, as the slow-query line records it (docs/log-format.md §3)."""
    waits = {
        "cache": lambda us: {"storage": {"data": {"bytesRead": 40_000}, "timeWaitingMicros": {"cache": us}}},
        "lock": lambda us: {"locks": {"Global": {"acquireCount": {"r": 1}, "timeAcquiringMicros": {"r": us}}}},
        **(
            {"ticket": lambda us: {"queues": {"execution": {"admissions": 1, "totalTimeQueuedMicros": us}}}}
            if layout.startswith("8.0")
            else {}
        ),
    }
    for _, end in checkpoints:
        for _ in range(rng.randint(3, 6)):  # enough that, had they been working, they would hold the window
            ms = rng.randint(1000, 4000)
            extra = waits[rng.choice(sorted(waits))](int(ms * 1000 * rng.uniform(0.7, 0.95)))
            log.slow(
                run.at(end) - dt.timedelta(milliseconds=rng.randint(0, 400)),
                f"conn{rng.randint(100, 999)}",
                "shop.settings",
                {"find": "settings", "filter": {"key": "banner"}, "$db": "shop"},
                "COLLSCAN",
                ms,
                keys=0,
                docs=rng.randint(50, 900),
                queryHash="0F3D88B2",
                **extra,
            )


# -- scenarios


def _expected(incident: Incident, line: Timeline, run: Run, culprit: tuple[str, str] | None) -> list[Expected]:
    at, tolerance = run.at, line.tolerance
    kind = incident.kind
    if kind == "checkpoint_stall":
        episode = [(a, b) for a, b in run.checkpoints if line.start <= a < line.end]
        return [Expected(kind, None, at(episode[0][0]), at(episode[-1][1]), tolerance)]
    if kind == "throughput_dip":  # a stall holds every ticket: both pools are exhausted with it
        return [
            Expected(k, rw, at(line.start), at(line.end), tolerance)
            for k, rw in ((kind, None), ("ticket_exhaustion", "read"), ("ticket_exhaustion", "write"))
        ]
    if kind == "cpu_saturation" and incident.variant in CPU_QUIET:
        return []
    resource = incident.variant if kind == "ticket_exhaustion" else None
    return [Expected(kind, resource, at(line.start), at(line.end), tolerance, culprit)]


def build(shape: Shape, incident: Incident, out: Path) -> Scenario:
    """Simulates `incident` on a node of `shape` into `out` and says what must be found."""
    config = shape.config()
    rng = random.Random(shape.seed * 7919 + 13)
    line = _timeline(shape, incident, rng)
    line = _grown(line) if incident.outgrown else line
    base = Baseline(shape)
    plan = KINDS[incident.kind](incident, base, line)
    ends = long_reads(base, line, random.Random(shape.seed + 3)) if incident.long_reads else {}
    plan = _credited(plan, ends) if ends else plan
    held = random.Random(shape.seed + 9)  # the draws the plain families make stay as they were
    lead = held.randint(20, 120)  # the build's scan, or the idle transaction, began before the cache crossed its trigger
    building = (line.start - lead, line.end + held.randint(0, 60))
    if incident.index_build:
        plan = _index_build(plan, building)
    pinned = None
    if incident.pinned:
        plan = _pinning(plan, line.start - lead, line.end, incident.pinned_by != "cursor")
        pinned = Pinned(
            incident.pinned_by, _lifetime(incident.pinned_by, line.end - line.start + lead, held), line.end - line.start + lead
        )
        if pinned.limit_s != DEFAULT_LIFETIME_S:
            config = replace(config, parameters={**(config.parameters or {}), "transactionLifetimeLimitSeconds": pinned.limit_s})
    if incident.at_limits:
        plan = _at_limits(plan, shape, line, held)
    plan = _true_causes(plan, incident, shape, line, random.Random(shape.seed + 39))  # its own draws: the others' stay
    if incident.index_build or incident.pinned or incident.at_limits or incident.outgrown:
        config = replace(config, full_status=True)
    if incident.kind == "disk_saturation":  # the journal's bytes: mongod's writes in full, against the device's
        config = replace(config, journal=True)
    migrating = incident.kind == "latency_rise" and incident.variant == "migrations"
    config = replace(config, sharded=True) if migrating else config
    rebooted = incident.kind == "cpu_saturation" and incident.variant == "reboot"
    config = replace(config, reboots=True) if rebooted else config
    restarts = {line.end: config.pid + 1} if rebooted else None
    run = write_ftdc(out / "diagnostic.data", config, T0, line.seconds, plan, period=shape.period_s, restarts=restarts)
    log = node_log(shape, config, run)
    root = None
    if incident.index_build:
        root = ("index_build", _log_index_build(log, run, building, held))
    if incident.pinned:
        root = ("pinned_history", None)
        if incident.pinned_by == "reaped":
            log.transaction_expired(run.at(line.end), str(uuid.UUID(int=held.getrandbits(128))), held.randint(1, 500))
    if incident.at_limits:
        root = ("cache_too_small", None)
    if migrating:
        root = ("chunk_migration", None)
        log_migrations(log, run, line, shape.seed)
    root = _true_causes_log(log, run, incident, line, random.Random(shape.seed + 40)) or root
    for s, ms in ends.items():
        log.slow(
            run.at(s) + dt.timedelta(milliseconds=500),
            f"conn{rng.randint(100, 999)}",
            "reports.sales",
            {
                "aggregate": "sales",
                "pipeline": [{"$match": {"year": 2024}}, {"$group": {"_id": "$region", "total": {"$sum": "$amount"}}}],
                "cursor": {},
                "$db": "reports",
            },
            "IXSCAN { year: 1 }",
            ms,
            keys=5_000_000,
            docs=5_000_000,
            nreturned=12,
            queryHash="91AA03F4",
        )
    culprit = _collscans(log, incident, line, run, rng) if incident.culprit else None
    if incident.victims:
        _victims(log, run, [(a, b) for a, b in run.checkpoints if line.start <= a < line.end], shape.layout, rng)
    log.write(out / "mongod.log")
    return Scenario(
        out / "diagnostic.data",
        out / "mongod.log",
        _expected(incident, line, run, culprit) + _true_causes_expected(incident, line, run),
        incident.victims,
        root,
        not shape.tickets,
        incident.steady,
        pinned,
        incident.bulk_loader,
        incident.warm_up,
    )


def build_quiet(shape: Shape, quiet: Quiet, out: Path) -> Scenario:
    """Simulates a healthy node of `shape` into `out`: nothing is expected."""
    config = shape.config()
    rng = random.Random(shape.seed * 7919 + 17)
    if quiet.idle_days:
        seconds = int(quiet.idle_days * 86400)
        period = max(shape.period_s, 10)  # days at one sample a second take minutes to simulate; 10 s is as real
        base = Baseline(shape)

        def plan(s: int) -> Tick:
            return Tick(
                reads=rng.uniform(0, 4),
                writes=rng.uniform(0, 2),
                commands=rng.uniform(2, 6),
                connections=12,
                connections_created=0.01,
                cpu_busy=0.02,
                runnable=0.05,
                cache_fill=0.05,
                dirty=0.0001,
                updates=0.0,
                disk_util=0.01,
                disk_iops=3,
                disk_mb=0.05,
                dhandles=120,
                read_out=0,
                write_out=0,
                read_total=base.total(s),
                write_total=base.total(s),
                scanned_objects=5,
                returned=5,
            )

        run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=period)
    else:
        seconds = quiet.minutes * 60
        base = Baseline(shape)
        blips = {s: rng.uniform(3.5, 100) for s in rng.sample(range(700, seconds - 60), min(quiet.blips, seconds - 760))}
        fill = (min(shape.eviction_trigger - 1, rng.uniform(90, 94)) / 100) if quiet.full_cache else None
        down = (seconds // 3, seconds // 3 + rng.randint(60, 600)) if quiet.restart else None
        gap = (2 * seconds // 3, 2 * seconds // 3 + rng.randint(30, 600)) if quiet.gap else None

        def plan(s: int) -> Tick:
            tick = base(s)
            if fill is not None:
                dirty = min(tick.dirty * 2.5, (shape.dirty_trigger - 1) / 100)
                tick = replace(tick, cache_fill=fill + rng.uniform(-0.004, 0.004), dirty=dirty, updates=dirty / 2)
            if quiet.fast_collscans:
                tick = replace(tick, collscans=rng.randint(1, 40), scanned_objects=tick.scanned_objects + rng.uniform(100, 4000))
            if s in blips:  # one second of slow writes, from nothing in particular
                tick = _slowed(tick, base, blips[s], reads=False)
            missing = any(w and w[0] <= s < w[1] for w in (down, gap))
            return replace(tick, missing=missing)

        run = write_ftdc(
            out / "diagnostic.data",
            config,
            T0,
            seconds,
            plan,
            period=shape.period_s,
            restarts={down[1]: config.pid + 1} if down else None,
        )
    log = node_log(shape, config, run)
    if quiet.fast_collscans and not quiet.idle_days:
        for s in sorted(rng.sample(range(60, seconds - 60), min(200, seconds // 30))):
            log.slow(
                run.at(s) + dt.timedelta(milliseconds=rng.randint(0, 999)),
                f"conn{rng.randint(100, 999)}",
                "shop.settings",
                {"find": "settings", "filter": {}, "$db": "shop"},
                "COLLSCAN",
                rng.randint(100, 400),
                keys=0,
                docs=rng.randint(5, 900),
                queryHash="0F3D88B2",
            )
    log.write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log")


# -- judging


def _pinned_problems(pinned: Pinned, result) -> list[str]:
    """The pinned history's evidence against what held it: the node's transaction lifetime, the reaper's aborts when it
    aborted the transaction, no transaction when a cursor held it; and its lifetime lowered (never raised) back to the
    default exactly when a transaction outlived what the default allows, with what that costs."""
    causes = [
        c for i in result.incidents for c in (i.root_cause, *i.candidates) if c.evidence.get("mechanism") == "pinned_history"
    ]
    if not causes:
        return []  # the root cause check has said so
    evidence, wrong = causes[0].evidence, []
    if evidence.get("transaction_lifetime_limit_s") != pinned.limit_s:
        wrong.append(
            f"pinned: transaction lifetime {evidence.get('transaction_lifetime_limit_s')} quoted, the node had {pinned.limit_s}"
        )
    if bool(evidence.get("reaper_aborts")) != (pinned.holder == "reaped"):
        wrong.append(f"pinned by {pinned.holder}: reaper aborts {evidence.get('reaper_aborts')}")
    if (evidence.get("holder") == "transaction") != (pinned.holder != "cursor"):
        wrong.append(f"pinned by {pinned.holder}: told as held by {evidence.get('holder')}")
    lowered = [
        r
        for i in result.incidents
        for c in (i.root_cause, *i.candidates)
        for r in c.recommendations
        if r.setting == "transaction_lifetime_limit"
    ]
    # A lifetime the node raised is there for its long transactions: never lowered; the fix for an open transaction is in the client.
    if lowered:
        wrong.append(
            f"pinned by {pinned.holder} under a {pinned.limit_s} s lifetime: told to lower it {[(r.current.value, r.proposed) for r in lowered]}"
        )
    if pinned.holder != "cursor" and not any(
        r.action == "change_workload" and "application" in r.what for r in causes[0].recommendations
    ):
        wrong.append(f"pinned by {pinned.holder}: the client's fix (end the transaction in the application) not advised first")
    return wrong


def analyzed(make: Callable[..., Scenario], *args) -> tuple[Scenario, object]:
    """`make(*args, folder)` (build or build_quiet) in a temporary folder, and its analysis; a `make` that returns the
    scenario with what it injected (build_leak, build_stepdown) has both returned."""
    import tempfile
    import warnings

    import analysis

    with tempfile.TemporaryDirectory() as folder:
        made = make(*args, Path(folder))
        scenario = made[0] if isinstance(made, tuple) else made
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return made, analysis.analyze(scenario.ftdc, scenario.log)


def failures(scenario: Scenario, result) -> list[str]:
    """What `result` (analysis.analyze) got wrong about `scenario`: an expected finding missing (kind,
    resource, window within its tolerance, warning or worse), the wrong top culprit or a COLLSCAN not
    named, anything else warning/critical, a COLLSCAN blamed where none was injected, or a victim
    made an incident's root cause, or advice that breaks issue 18's rules (samples/advice_rules.py)."""
    from analysis.findings.culprits import causes
    from samples.advice_rules import advice_problems

    wrong, matched = [], set()
    for want in scenario.expected:
        tolerance = dt.timedelta(seconds=want.tolerance_s)
        found = [
            f
            for f in result.problems
            if f.kind == want.kind
            and f.resource == want.resource
            and abs(f.start - want.start) <= tolerance
            and abs(f.end - want.end) <= tolerance
        ]
        if not found:
            near = [
                (f.kind, f.resource, f.severity, f"{f.start:%H:%M:%S}", f"{f.end:%H:%M:%S}")
                for f in result.findings
                if f.kind == want.kind
            ]
            wrong.append(f"missing {want.kind} {want.resource or ''} {want.start:%H:%M:%S}-{want.end:%H:%M:%S}; found {near}")
            continue
        matched.update(id(f) for f in found)
        if want.culprit:
            top = found[0].culprits[0] if found[0].culprits else None
            if top is None or (top.ns, top.command) != want.culprit or not causes(found[0].culprits, found[0].seconds):
                wrong.append(
                    f"{want.kind}: culprit {want.culprit} not named the cause; top {top and (top.ns, top.command, top.plan_summary)}"
                )
    for f in result.problems:
        if id(f) not in matched:
            wrong.append(f"also raised: {f.kind} {f.resource or ''} {f.severity} {f.start:%H:%M:%S}-{f.end:%H:%M:%S}: {f.title}")
        elif not any(w.culprit for w in scenario.expected) and causes(f.culprits, f.seconds):
            wrong.append(
                f"{f.kind}: a COLLSCAN blamed where none was injected: {[(c.ns, c.plan_summary) for c in causes(f.culprits, f.seconds)]}"
            )
    if scenario.root and not any(
        i.root_cause.evidence.get("mechanism") == scenario.root[0] and scenario.root[1] in (None, i.root_cause.evidence.get("ns"))
        for i in result.incidents
    ):
        wrong.append(f"root cause {scenario.root} not found: {[i.root_cause.summary for i in result.incidents]}")
    named = [
        c.summary
        for i in result.incidents
        for c in (i.root_cause, *i.candidates)
        if c.evidence.get("setting") in ("read_tickets", "write_tickets")
    ]
    if scenario.pools_unset and named:
        wrong.append(f"a ticket pool named as a cause where none was fixed: {named}")
    loads = [
        i.root_cause.evidence
        for i in result.incidents
        if i.root_cause.kind == "workload" and "writes_changed" in i.root_cause.evidence
    ]
    if scenario.steady and any(e["writes_changed"] is not False or not e["operations_per_s"] for e in loads):
        wrong.append(f"a steady load told as changed or unnamed: {[(e['writes_changed'], e['operations_per_s']) for e in loads]}")
    # A steady load's stalls are told as the write load that did not change, or as a checkpoint interval that is itself the problem.
    if scenario.steady and not any(
        i.root_cause.kind == "workload"
        and i.root_cause.evidence.get("writes_changed") is False
        or i.root_cause.evidence.get("setting") == "checkpoint_interval"
        for i in result.incidents
    ):
        wrong.append(
            f"a steady load's stall without the load or the interval as its root cause: {[i.root_cause.summary for i in result.incidents]}"
        )
    if scenario.pinned:
        wrong += _pinned_problems(scenario.pinned, result)
    if scenario.victims and any(i.root_cause.kind == "operation" for i in result.incidents):
        wrong.append(f"a victim made the root cause: {[i.root_cause.summary for i in result.incidents]}")
    wrong += _true_causes_problems(scenario, result)
    return wrong + [f"advice: {problem}" for problem in advice_problems(result)]


# -- a sustained latency rise (issue 39 §3): reads and writes at several times their usual for up to an hour, with a
# shard's chunk migrations beside it ("migrations") or with nothing the node records moving ("").


def migration_starts(line: Timeline, rng: random.Random) -> list[int]:
    """The seconds the balancer's migrations begin through the rise: every 1-4 minutes, the first at its start."""
    out, s = [], line.start
    while s < line.end - 30:
        out.append(s)
        s += rng.randint(60, 240)
    return out


def _latency_rise(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    """Reads and writes `factor` times slower through the rise; with migrations, this shard donates a chunk every few
    minutes and its range deleter removes the donated documents behind it (shardingStatistics and the log record both)."""
    starts = set(migration_starts(line, random.Random(base.shape.seed + 21))) if incident.variant == "migrations" else set()
    deletes = 500 + 4500 * incident.strength  # documents a second

    def plan(s: int) -> Tick:
        tick = base(s)
        if not line.start <= s < line.end:
            return tick
        if starts:
            tick = replace(tick, donated=int(s in starts), range_deleted=deletes * base.rng.uniform(0.8, 1.2))
        return _slowed(tick, base, incident.factor)

    return plan


KINDS["latency_rise"] = _latency_rise


def log_migrations(log: JsonLog | TextLog, run: Run, line: Timeline, seed: int) -> None:
    """Each migration's "Starting chunk migration donation" line (id 22016, 4.4+; 4.2 words it in text) on this donor."""
    for s in migration_starts(line, random.Random(seed + 21)):
        request = {"moveChunk": "shop.orders", "toShard": "shard02", "min": {"customer": s}, "max": {"customer": s + 500}}
        if isinstance(log, JsonLog):
            log.line(
                run.at(s), "MIGRATE", 22016, "MoveChunk", "Starting chunk migration donation", {"requestParameters": request}
            )
        else:
            log.line(run.at(s), "SHARDING", "MoveChunk", f"Starting chunk migration donation {request}")


# -- idle transactions the reaper aborts every minute (issue 39 §3): a client that opens a transaction, writes once and
# leaves it idle, again and again; each is aborted by the reaper past transactionLifetimeLimitSeconds (60 s), the next
# opened at once. While each is open WiredTiger keeps every update since its snapshot: the pinned range climbs, the
# history store grows, dirty data climbs past its trigger near each one's end and checkpoints take longer.


@dataclass(frozen=True)
class Reaped:
    """One idle transaction: its session, transaction number and client, when it was opened and when the reaper aborted it."""

    session: str
    txn_number: int
    opened: int  # second
    aborted: int  # second


def reaped_transactions(line: Timeline, rng: random.Random) -> list[Reaped]:
    """Transactions opened back to back through the episode, each aborted 60-90 s after it opened (the 60 s limit, then
    the reaper's next pass, every 30 s)."""
    out, s, number = [], line.start, rng.randint(1, 400)
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    while s < line.end - 60:
        aborted = s + 60 + rng.randint(1, 30)
        out.append(Reaped(session, number, s, aborted))
        s, number = aborted + rng.randint(0, 2), number + 1
    return out


REAPED_DIRTY = 0.03  # dirty share of the cache when each transaction opens
REAPED_CROSSING_S = 65  # its age when dirty data reaches the trigger: those the reaper aborts sooner set nothing off


def _reaped_every_minute(incident: Incident, base: Baseline, line: Timeline) -> Callable[[int], Tick]:
    """While each transaction is open (idle): its pinned range climbs with every write, the history store grows, dirty data
    climbs from REAPED_DIRTY to the trigger at REAPED_CROSSING_S of its life and on to a peak past it (0.3-4 points, by
    strength), where application threads evict and writes slow `factor` times; checkpoints take 8-18 s (the history they
    write). Between two transactions the node is its healthy self."""
    held = reaped_transactions(line, random.Random(base.shape.seed + 31))
    dirty_peak = (base.shape.dirty_trigger + 0.3 + 3.7 * incident.strength) / 100

    def plan(s: int) -> Tick:
        tick = base(s)
        now = next((r for r in held if r.opened <= s < r.aborted), None)
        if now is None:
            return tick
        age = s - now.opened
        dirty = REAPED_DIRTY + (base.shape.dirty_trigger / 100 - REAPED_DIRTY) * age / REAPED_CROSSING_S
        dirty = min(dirty, dirty_peak)
        tick = replace(
            tick,
            txn_open=1,
            txn_inactive=1,
            pinned_ids=30 + int(tick.writes * age),
            history_store_bytes=tick.history_store_bytes + (s - line.start) * 2 * 2**20,
            dirty=dirty,
            updates=dirty / 2,
            checkpoint_seconds=max(tick.checkpoint_seconds, 8.0 + 10 * incident.strength),
        )
        if dirty < base.shape.dirty_trigger / 100:
            return tick
        # Past the trigger application threads evict (docs/metrics.md §3): writes wait for it.
        r = base.rng
        evicting = replace(
            tick, app_evicted_pages=r.uniform(300, 1500), app_evict_us=r.uniform(1e6, 4e6), app_wait_us=r.uniform(1e6, 6e6)
        )
        return _slowed(evicting, base, incident.factor, reads=False)

    return plan


REAPED_CLIENT = "batch-importer"


def build_reaped(shape: Shape, incident: Incident, out: Path, member: bool = True) -> tuple[Scenario, list[Reaped]]:
    """Simulates idle transactions reaped every minute on a node of `shape` into `out`: the node's FTDC (its transactions,
    pinned range and history store recorded), and a log with each transaction's opening insert (slow, behind eviction,
    its session named) and the reaper's abort. Returns the scenario (its root cause: history pinned by transactions the
    reaper aborted) and the transactions. `member`: a replica set's member, else a single node."""
    config = replace(shape.config(), full_status=True, replica_set=shape.config().replica_set if member else None)
    line = _timeline(shape, incident, random.Random(shape.seed * 7919 + 13))
    held = reaped_transactions(line, random.Random(shape.seed + 31))
    run = write_ftdc(
        out / "diagnostic.data",
        config,
        T0,
        line.seconds,
        _reaped_every_minute(incident, Baseline(shape), line),
        period=shape.period_s,
    )
    log = node_log(shape, config, run)
    rng = random.Random(shape.seed + 37)
    for r in held:
        command = {
            "insert": "imports",
            "documents": [{"batch": r.txn_number}],
            "lsid": {"id": {"$uuid": r.session}},
            "txnNumber": r.txn_number,
            "startTransaction": True,
            "autocommit": False,
            "$db": "app",
        }
        log.slow(
            run.at(r.opened) + dt.timedelta(milliseconds=rng.randint(150, 900)),
            "conn4242",
            "app.imports",
            command,
            "",
            rng.randint(120, 800),
            appName=REAPED_CLIENT,
        )
        log.transaction_expired(run.at(r.aborted), r.session, r.txn_number)
    log.write(out / "mongod.log")
    scenario = Scenario(
        out / "diagnostic.data",
        out / "mongod.log",
        root=("pinned_history", None),
        pinned=Pinned("reaped", DEFAULT_LIFETIME_S, held[-1].aborted - held[0].opened),
    )
    return scenario, held


def reaped_failures(scenario: Scenario, held: list[Reaped], result, shape: Shape) -> list[str]:
    """What `result` got wrong about idle transactions reaped every minute: more than one incident, a warning outside the
    episode, a root cause other than the pinned history, or one that does not name the holders (the session, the first and
    last transaction numbers, the client) and count every abort; and advice against its rules."""
    from samples.advice_rules import advice_problems

    wrong = []
    tolerance = dt.timedelta(seconds=max(WINDOW_TOLERANCE_S, shape.period_s) + DEFAULT_LIFETIME_S)
    first, last = T0 + dt.timedelta(seconds=held[0].opened), T0 + dt.timedelta(seconds=held[-1].aborted)
    outside = [f.title for f in result.problems if f.start < first - tolerance or f.end > last + tolerance]
    if outside:
        wrong.append(f"raised outside the episode: {outside}")
    if len(result.incidents) != 1:
        wrong.append(f"{len(result.incidents)} incidents, not one: {[i.title for i in result.incidents]}")
    for i in result.incidents:
        cause = i.root_cause
        if cause.evidence.get("mechanism") != "pinned_history":
            wrong.append(f"root cause not the pinned history: {cause.summary}")
            continue
        words = [held[0].session, f"transactions {held[0].txn_number} to {held[-1].txn_number}", REAPED_CLIENT]
        wrong += [f"root cause does not name {w!r}: {cause.summary}" for w in words if w not in cause.summary]
        if cause.evidence.get("reaper_aborts") != len(held):
            wrong.append(f"{cause.evidence.get('reaper_aborts')} aborts counted of {len(held)}")
    return wrong + _pinned_problems(scenario.pinned, result) + [f"advice: {p}" for p in advice_problems(result)]


# -- issue 39 §3: causes that are true (a bulk loader, another process's I/O, a working set past the cache)

BATCH = 75  # documents per insert request of a bulk loader (issue 39's: 37,743 documents/s at 501 requests/s)
LOADER = ("warehouse.items", "bulk-loader")  # the namespace it loads and its client's appName
QUIET_S = 1200  # the working set's quiet time beyond the timeline's history, before it outgrows the cache
GROWN_S = 3600  # then an hour at the trigger before the incident


def _grown(line: Timeline) -> Timeline:
    """The timeline pushed back by QUIET_S + GROWN_S: quiet hours, then an hour at the trigger, then the incident."""
    more = QUIET_S + GROWN_S
    return replace(line, start=line.start + more, end=line.end + more, seconds=line.seconds + more)


def _true_causes(
    plan: Callable[[int], Tick], incident: Incident, shape: Shape, line: Timeline, rng: random.Random
) -> Callable[[int], Tick]:
    """`plan` with the load or the host behind the incident: a bulk loader's batches from a little before the window to its
    end; another process reading the device through the window, mongod's own I/O a tenth of the plan's; the working set
    growing past the cache an hour before the window, reading 5-10× its quiet rate at the trigger, 10× in the window."""
    lead = rng.randint(20, 120)
    grown = line.start - GROWN_S
    growth = rng.uniform(5, 10)

    def changed(s: int) -> Tick:
        tick = plan(s)
        inside = line.start <= s < line.end
        if incident.bulk_loader and line.start - lead <= s < line.end:
            tick = replace(tick, insert_batch=BATCH * rng.uniform(0.9, 1.1))
        if incident.other_process and inside:
            tick = replace(tick, disk_mb=tick.disk_mb * 0.1, foreign_read_mb=tick.disk_mb * 0.9)
        if incident.other_writes and inside:
            tick = replace(tick, disk_mb=tick.disk_mb * 0.1, foreign_write_mb=tick.disk_mb * 0.9)
        if incident.outgrown and s >= grown:
            tick = (
                replace(tick, disk_mb=tick.disk_mb * 10)
                if inside
                else replace(
                    tick,
                    cache_fill=(shape.eviction_trigger - 1 + rng.uniform(-0.4, 0.4)) / 100,
                    disk_mb=tick.disk_mb * growth,
                )
            )
        return tick

    if incident.warm_up:
        return _warming_up(changed, incident, shape, line, rng)
    return changed if incident.bulk_loader or incident.other_process or incident.other_writes or incident.outgrown else plan


def _true_causes_log(
    log: JsonLog | TextLog, run: Run, incident: Incident, line: Timeline, rng: random.Random
) -> tuple[str, str | None] | None:
    """The log's part of the cause, and the root cause it makes: the loader's insert batches that waited out each of the
    episode's checkpoints and finished together at its end (fast between them, so not logged), by its client; none for
    another process (mongod does not see it) or the cache."""
    if incident.other_process or incident.other_writes:
        return ("another_process", None)
    if incident.outgrown:
        return ("cache_too_small", None)
    if incident.warm_up:
        _warm_up_queries(log, run, line, line.shape, rng)
        return ("connection_storm", None)
    if not incident.bulk_loader:
        return None
    ns, app = LOADER
    db, collection = ns.split(".")
    for a, b in run.checkpoints:
        if not line.start <= a < line.end:
            continue
        waited_ms = max(150, int(300 * (b - a)))  # the checkpoint's slow latter part (the plan's 30 %)
        for _ in range(rng.randint(12, 20)):
            log.slow(
                run.at(b) + dt.timedelta(milliseconds=rng.randint(0, 400)),
                f"conn{rng.randint(4000, 4003)}",
                ns,
                {"insert": collection, "ordered": False, "$db": db},
                "",
                rng.randint(waited_ms // 2, waited_ms),
                keys=0,
                docs=0,
                nreturned=0,
                ninserted=BATCH,
                appName=app,
            )
    return ("write_load", ns)


def _true_causes_problems(scenario: Scenario, result) -> list[str]:
    """A bulk loader's incident told as the write load that rose in documents, at an unchanged request rate, its client named."""
    if scenario.warm_up:
        return _warm_up_problems(result)
    if not scenario.bulk_loader:
        return []
    loads = [i.root_cause.evidence for i in result.incidents if i.root_cause.evidence.get("mechanism") == "write_load"]
    wrong = [
        f"a bulk loader not told in documents: {e}"
        for e in loads
        if e["load_change"] != "rose" or e["documents_written_per_s"] < 10 * e["documents_written_per_s_before"]
    ]
    wrong += [
        f"the loader's client not named: {e['carried_by']}"
        for e in loads
        if not any(c["app"] == LOADER[1] for c in e["carried_by"])
    ]
    return wrong


WARM_UP = ("catalog.products", "storefront")  # what the reconnecting clients read first, and their appName
FIRST_CONNECTION = 20_000  # the storm's connections are numbered after every one before it


def _warming_up(
    plan: Callable[[int], Tick], incident: Incident, shape: Shape, line: Timeline, rng: random.Random
) -> Callable[[int], Tick]:
    """`plan` (a storm) with its clients' first queries holding every read ticket and queueing behind each other, from
    WARMING_S after the first connections (they connect and authenticate first)."""
    base = Baseline(shape)  # its latency scale only: the node's own draws are `plan`'s
    queue = 20 + int(180 * incident.strength)

    def warming(s: int) -> Tick:
        tick = plan(s)
        if not line.start + _warming_s(shape) <= s < line.end:
            return tick
        held = replace(tick, read_out=tick.read_total, read_queue=max(1, int(queue * rng.uniform(0.7, 1.0))))
        return _slowed(held, base, incident.factor, writes=False)

    return warming


def _warm_up_queries(log: JsonLog | TextLog, run: Run, line: Timeline, shape: Shape, rng: random.Random) -> None:
    """The storm's clients' first queries, each on a new connection, most of their time queued for a read ticket (a lock
    acquisition before 8.0, the execution queue from 8.0, as the slow-query line records it)."""
    ns, app = WARM_UP
    db, collection = ns.split(".")
    connection = FIRST_CONNECTION
    for s in range(line.start + _warming_s(shape), line.end):
        for _ in range(rng.randint(2, 4)):
            ms = rng.randint(300, 3000)
            queued = int(ms * 1000 * rng.uniform(0.75, 0.95))
            wait = (
                {"queues": {"execution": {"admissions": 1, "totalTimeQueuedMicros": queued}}}
                if shape.layout.startswith("8.0")
                else {"locks": {"Global": {"acquireCount": {"r": 1}, "timeAcquiringMicros": {"r": queued}}}}
            )
            connection += 1
            log.slow(
                run.at(s) + dt.timedelta(milliseconds=ms + rng.randint(0, 999)),
                f"conn{connection}",
                ns,
                {"find": collection, "filter": {"featured": True}, "limit": 50, "$db": db},
                "IXSCAN { featured: 1 }",
                ms,
                keys=50,
                docs=50,
                nreturned=50,
                queryHash="6E1F2A9D",
                appName=app,
                **wait,
            )


def _true_causes_expected(incident: Incident, line: Timeline, run: Run) -> list[Expected]:
    """A storm whose clients' first queries hold the read tickets exhausts them for its window."""
    if not incident.warm_up:
        return []
    return [Expected("ticket_exhaustion", "read", run.at(line.start + _warming_s(line.shape)), run.at(line.end), line.tolerance)]


def _warming_s(shape: Shape) -> int:
    """How long after the storm's first connections their queries hold the tickets: a few seconds, a sample at least."""
    return max(5, 2 * shape.period_s)


def _warm_up_problems(result) -> list[str]:
    """A storm's warm-up queries named as its load in its root cause, and called victims nowhere."""
    ns, app = WARM_UP
    wrong = [
        f"the storm's queries called its victims: {f.title}: {f.explanation}"
        for f in result.findings
        if "victims of the window" in f.explanation
    ]
    storms = [i.root_cause for i in result.incidents if i.root_cause.evidence.get("mechanism") == "connection_storm"]
    wrong += [
        f"the storm's load not named: {c.summary}"
        for c in storms
        if not any(x["ns"] == ns and x["app"] == app for x in c.evidence.get("carried_by", []))
    ]
    return wrong


# -- issue 39 §1: quiet nodes and planned role changes


@dataclass(frozen=True)
class Laptop:
    """A developer's machine: a handful of operations a second for hours (a tool polling every few seconds, whose commands
    take a few tenths of a millisecond), now and then a test suite of a few hundred requests a second whose commands are
    quick pings; mongod stopped and started again minutes to an hour later, and the machine asleep (no samples, the same
    process). Nothing in it is an incident."""

    hours: float = 3.0
    suites: int = 2
    restarts: int = 1
    sleeps: int = 1
    standalone: bool = False  # not a replica-set member


def _apart(rng: random.Random, seconds: int, lengths: list[int]) -> list[tuple[int, int]]:
    """Windows of these lengths placed in order through `seconds`, with at least 15 minutes of work between them."""
    slack = seconds - sum(lengths) - 900 * (len(lengths) + 1)
    cuts = sorted(rng.randint(0, max(0, slack)) for _ in lengths)
    out, at = [], 900
    for length, cut, before in zip(lengths, cuts, [0, *cuts]):
        at += cut - before
        out.append((at, at + length))
        at += length + 900
    return out


def build_laptop(shape: Shape, laptop: Laptop, out: Path) -> Scenario:
    """Simulates `laptop` on `shape` into `out`: nothing may be raised."""
    config = replace(shape.config(), replica_set=None) if laptop.standalone else shape.config()
    rng = random.Random(shape.seed * 31 + 7)
    seconds = int(laptop.hours * 3600)
    kinds = ["suite"] * laptop.suites + ["down"] * laptop.restarts + ["asleep"] * laptop.sleeps
    rng.shuffle(kinds)
    lengths = {"suite": (300, 900), "down": (120, 3600), "asleep": (300, 2700)}
    windows = list(zip(kinds, _apart(rng, seconds, [rng.randint(*lengths[k]) for k in kinds])))
    suites = [w for k, w in windows if k == "suite"]
    missing = [w for k, w in windows if k != "suite"]
    restarts = {end: config.pid + 1 + i for i, (k, (_, end)) in enumerate(windows) if k == "down"}
    base = Baseline(shape)

    def plan(s: int) -> Tick:
        busy = any(a <= s < b for a, b in suites)
        return Tick(
            reads=rng.uniform(150, 400) if busy else rng.uniform(0, 3),
            writes=rng.uniform(50, 200) if busy else rng.uniform(0, 1),
            commands=rng.uniform(30, 90) if busy else rng.uniform(8, 14),
            read_latency_us=rng.uniform(150, 250),
            write_latency_us=rng.uniform(200, 350),
            command_latency_us=rng.uniform(30, 50) if busy else rng.uniform(250, 450),
            cpu_busy=0.6 if busy else 0.05,  # a test suite uses a few of the cores; idle, next to none
            runnable=0.5 if busy else 0.1,
            connections=25,
            connections_created=0.01,
            cache_fill=0.05,
            dirty=0.0005,
            updates=0.0,
            disk_util=0.02,
            disk_iops=5,
            disk_mb=0.1,
            dhandles=150,
            read_out=0,
            write_out=0,
            read_total=base.total(s),
            write_total=base.total(s),
            scanned_objects=50,
            returned=50,
            missing=any(a <= s < b for a, b in missing),
        )

    run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=shape.period_s, restarts=restarts)
    node_log(shape, config, run).write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log")


@dataclass(frozen=True)
class Leak:
    """A quiet node (tens of operations a second) and one application that opens connections and never closes them: the
    open count climbs steadily for `hours`, `leaked` of them, while the work stays flat; near the node's limit of 51,200
    connections (a file-descriptor limit of 64,000) when `leaked` is that many."""

    hours: float = 1.5
    leaked: int = 2000
    app: str = "billing-reports"
    standalone: bool = False  # not a replica-set member


LEAK_LIMIT = 51_200  # the simulated node's connections.current + available
LEAK_WARNING_AT = 0.8 * LEAK_LIMIT  # the detector's warning share of it (connection_leak.LIMIT_SHARE)


def build_leak(shape: Shape, leak: Leak, out: Path) -> tuple[Scenario, dict]:
    """Simulates `leak` on `shape` into `out`, the log recording each connection accepted with its client's metadata (the
    leaking application's, and a monitoring agent's that opens and closes one a minute). Returns the scenario (a warning
    expected only near the limit) and what was leaked: when, from where, by whom."""
    config = replace(shape.config(), replica_set=None) if leak.standalone else shape.config()
    rng = random.Random(shape.seed * 17 + 3)
    start, length = 1800, int(leak.hours * 3600)
    seconds = start + length + 900
    first = 40
    opened = [0] * seconds  # leaked connections opened by each second
    for n in range(leak.leaked):
        opened[start + int(n * length / leak.leaked)] += 1
    open_by, total = [], 0  # leaked connections open at each second
    for count in opened:
        total += count
        open_by.append(total)

    def plan(s: int) -> Tick:
        return Tick(
            reads=rng.uniform(15, 25),
            writes=rng.uniform(4, 8),
            commands=rng.uniform(10, 14),
            read_latency_us=HEALTHY_READ_US * shape.baseline_ms * 1000 / HEALTHY_WRITE_US,
            write_latency_us=shape.baseline_ms * 1000,
            command_latency_us=HEALTHY_WRITE_US / 3,
            connections=first + open_by[s] + rng.randint(-2, 2),
            connections_created=opened[s] + (1 if s % 60 == 0 else 0),
            cache_fill=0.4,
            dirty=0.002,
            read_out=0,
            write_out=0,
            disk_util=0.03,
            disk_iops=20,
            disk_mb=0.5,
        )

    run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=shape.period_s)
    log = node_log(shape, config, run)
    host, driver = f"10.20.{rng.randint(0, 255)}.{rng.randint(1, 254)}", ("nodejs", "4.17.1")
    conn = 1000
    for s in range(seconds):
        for n in range(opened[s]):
            conn += 1
            _connection_lines(
                log,
                run.at(s) + dt.timedelta(milliseconds=3 * n),
                conn,
                f"{host}:{40000 + conn % 20000}",
                leak.app,
                driver,
                first + open_by[s],
            )
        if s % 60 == 0:  # the monitoring agent: one connection a minute, closed a second later
            conn += 1
            remote = f"10.20.0.5:{30000 + conn % 20000}"
            _connection_lines(log, run.at(s), conn, remote, "monitoring-agent", ("PyMongo", "4.6.1"), first + open_by[s] + 1)
            _connection_ended(log, run.at(s + 1), conn, remote, first + open_by[s])
    log.write(out / "mongod.log")
    near = first + leak.leaked >= LEAK_WARNING_AT
    expected = [Expected("connection_leak", None, run.at(start), run.at(start + length), 150)] if near else []
    return Scenario(out / "diagnostic.data", out / "mongod.log", expected), {
        "start": run.at(start),
        "end": run.at(start + length),
        "host": host,
        "app": leak.app,
        "driver": " ".join(driver),
    }


def _connection_lines(
    log: JsonLog | TextLog, at: dt.datetime, conn: int, remote: str, app: str, driver: tuple, count: int
) -> None:
    """A connection accepted and its client's metadata, as mongod logs them (ids 22943 and 51800; legacy text before 4.4)."""
    if isinstance(log, TextLog):
        log.line(at, "NETWORK", "listener", f"connection accepted from {remote} #{conn} ({count} connections now open)")
        log.line(
            at,
            "NETWORK",
            f"conn{conn}",
            f'received client metadata from {remote} conn{conn}: {{ driver: {{ name: "{driver[0]}", version: "{driver[1]}" }}, '
            f'os: {{ type: "Linux" }}, application: {{ name: "{app}" }} }}',
        )
        return
    log.line(
        at,
        "NETWORK",
        22943,
        "listener",
        "Connection accepted",
        {"remote": remote, "connectionId": conn, "connectionCount": count},
    )
    log.line(
        at,
        "NETWORK",
        51800,
        f"conn{conn}",
        "client metadata",
        {
            "remote": remote,
            "client": f"conn{conn}",
            "doc": {"driver": {"name": driver[0], "version": driver[1]}, "os": {"type": "Linux"}, "application": {"name": app}},
        },
    )


def _connection_ended(log: JsonLog | TextLog, at: dt.datetime, conn: int, remote: str, count: int) -> None:
    if isinstance(log, TextLog):
        log.line(at, "NETWORK", f"conn{conn}", f"end connection {remote} ({count} connections now open)")
        return
    log.line(
        at,
        "NETWORK",
        22944,
        f"conn{conn}",
        "Connection ended",
        {"remote": remote, "connectionId": conn, "connectionCount": count},
    )


def member_status(s: int, rng: random.Random, state: Callable[[int], int], term: int) -> dict:
    """replSetGetStatus of a three-member set as member 0 records it `s` seconds from T0: member m in `state(m)`, the
    others' optimes up to 2 s behind (heard by heartbeat), in `term`."""
    now = T0 + dt.timedelta(seconds=s)
    members = {
        str(m): {
            "_id": m,
            "health": 1.0,
            "state": state(m),
            "uptime": 86400 + s,
            "optimeDate": now - dt.timedelta(seconds=0.0 if m == 0 else rng.uniform(0, 2)),
            **({"self": True} if m == 0 else {}),
        }
        for m in range(3)
    }
    doc = {"start": now, "date": now, "myState": state(0), "term": term, "members": members, "end": now}
    return {"replSetGetStatus": doc}


def build_stepdown(shape: Shape, out: Path) -> tuple[Scenario, dt.datetime]:
    """A replica-set primary at its usual work, stepped down by an operator (replSetStepDown): while it changes role its
    writes wait and queue for two seconds, then another member is primary (elected 1-10 s later) and this node, a
    secondary, serves a third of the reads and no client writes. Nothing may be a warning. Returns the scenario and when
    the command was logged."""
    config = shape.config()
    rng = random.Random(shape.seed * 13 + 5)
    seconds = 2400 + 66 * shape.period_s
    at = 1500 + rng.randrange(300)
    stepped, elected = at + 2, at + 2 + rng.randint(1, 10)
    base = Baseline(shape)

    def plan(s: int) -> Tick:
        tick = base(s)
        if at <= s < stepped:  # the replication state transition lock: writes wait, then are killed or go on
            return replace(tick, writes_stalled=True, write_queue=rng.randint(20, 200))
        if s >= stepped:
            return replace(tick, reads=tick.reads / 3, writes=0, returned=tick.returned / 3)
        return tick

    def state(member: int, s: int) -> int:
        if member == 0:
            return 1 if s < stepped else 2
        return 1 if member == 1 and s >= elected else 2

    def status(s: int, tick: Tick) -> dict:
        return member_status(s, rng, lambda m: state(m, s), 5 + (s >= elected))

    run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=shape.period_s, extra=status)
    log = node_log(shape, config, run)
    when = run.at(at) + dt.timedelta(milliseconds=120)
    if isinstance(log, TextLog):
        log.line(when, "COMMAND", "conn4182", "Attempting to step down in response to replSetStepDown command")
        log.line(run.at(stepped), "REPL", "conn4182", "transition to SECONDARY from PRIMARY")
    else:
        log.line(when, "COMMAND", 21579, "conn4182", "Attempting to step down in response to replSetStepDown command")
        log.line(
            run.at(stepped),
            "REPL",
            21358,
            "conn4182",
            "Replica set state transition",
            {"newState": "SECONDARY", "oldState": "PRIMARY"},
        )
        log.line(run.at(stepped), "COMMAND", 21580, "conn4182", "replSetStepDown command completed")
    log.write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log"), when


# -- restarts (issue 39 §1): files that overlap in time, a developer's stops and starts, a crash loop at a memory limit

CONTAINER_PID = 1  # a container's mongod: the same pid each time it starts


@dataclass(frozen=True)
class Restarts:
    """How a node's processes come and go.

    `interleaved`: two mongod processes of one pid (two containers' mongod) whose files lie in one directory, their
    samples overlapping in time: no restart. `developer`: a container stopped and started `hours_apart` or more later,
    `processes` times: restarts, no loop. `oom_loop`: a supervisor starting again within seconds to minutes a mongod
    the kernel kills at its container's `limit_mb`, `processes` times, each process's resident memory climbing to it:
    one loop that names the limit and the cache."""

    case: str  # interleaved | developer | oom_loop
    processes: int = 4
    standalone: bool = False  # a single node (no replica set)
    same_pid: bool = False  # a container's mongod, pid 1 each time
    version: str | None = None  # a version the layout also stands for (5.0 writes 4.4's FTDC)
    hours_apart: float = 5.0  # developer: the shortest stop
    limit_mb: int = 4096  # oom_loop: the container's memory limit
    cache_share: float = 0.6  # oom_loop: the WiredTiger cache (cacheSizeGB) as a share of that limit


@dataclass(frozen=True)
class RestartTruth:
    """What a restarts scenario must be told as: how many restarts, and the loop's memory limit (oom_loop)."""

    restarts: int
    limit_mb: int | None = None
    ended_at_limit: int = 0


def _merged(directories: list[Path], into: Path) -> None:
    """The files of several simulated captures in one directory (each named by the second it was opened)."""
    import shutil

    into.mkdir(parents=True, exist_ok=True)
    for directory in directories:
        for file in directory.iterdir():
            shutil.move(str(file), into / file.name)
        directory.rmdir()


def _restarts_config(shape: Shape, restarts: Restarts) -> Config:
    config = shape.config()
    if restarts.version:
        config = replace(config, version=restarts.version)
    if restarts.standalone:
        config = replace(config, replica_set=None)
    return replace(config, pid=CONTAINER_PID) if restarts.same_pid else config


def _sessions_log(shape: Shape, runs: list[tuple[Config, Run]]) -> JsonLog | TextLog:
    """One log for several processes, each from its own start-up."""
    log = node_log(shape, *runs[0], boot=runs[0][1].t0 - dt.timedelta(seconds=runs[0][0].uptime_s))
    for config, run in runs[1:]:
        log.lines += node_log(shape, config, run, boot=run.t0 - dt.timedelta(seconds=config.uptime_s)).lines
    return log


def _interleaved(shape: Shape, restarts: Restarts, out: Path, rng: random.Random) -> tuple[Scenario, RestartTruth]:
    """Two processes of one pid sampled over the same 20 minutes, half a period apart, their files in one directory."""
    seconds, runs, folders = 1200, [], []
    for i in range(2):
        config = replace(
            _restarts_config(shape, replace(restarts, same_pid=True)), seed=shape.seed + i, uptime_s=rng.uniform(600, 5 * 86400)
        )
        folder = out / f"capture{i}"
        t0 = T0 + dt.timedelta(seconds=i * 2.5 * shape.period_s)
        runs.append((config, write_ftdc(folder, config, t0, seconds, Baseline(shape), period=shape.period_s)))
        folders.append(folder)
    _merged(folders, out / "diagnostic.data")
    _sessions_log(shape, runs[:1]).write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log"), RestartTruth(0)


def _developer(shape: Shape, restarts: Restarts, out: Path, rng: random.Random) -> tuple[Scenario, RestartTruth]:
    """A container started, used for 3 to 12 minutes (a test run) and stopped, `processes` times, hours or days apart."""
    runs, folders, t0 = [], [], T0
    base = _restarts_config(shape, restarts)
    for i in range(restarts.processes):
        seconds = rng.randint(180, 720)
        config = replace(
            base, pid=base.pid if restarts.same_pid else base.pid + i, uptime_s=rng.uniform(3, 20), seed=shape.seed + i
        )
        folder = out / f"session{i}"
        runs.append(
            (
                config,
                write_ftdc(folder, config, t0, seconds, Baseline(replace(shape, seed=shape.seed + i)), period=shape.period_s),
            )
        )
        folders.append(folder)
        t0 += dt.timedelta(seconds=seconds) + dt.timedelta(hours=rng.uniform(restarts.hours_apart, 3 * 24))
    _merged(folders, out / "diagnostic.data")
    _sessions_log(shape, runs).write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log"), RestartTruth(restarts.processes - 1)


def _oom_loop(shape: Shape, restarts: Restarts, out: Path, rng: random.Random) -> tuple[Scenario, RestartTruth]:
    """Twenty minutes of work at a steady resident memory, then `processes` processes that each climb to the container's
    memory limit within 2 to 12 minutes and are killed there, each started again 5 s to 4 min later; the last one runs
    on for 10 minutes below the limit."""
    limit = restarts.limit_mb
    cache_gb = round(limit * restarts.cache_share / 1024, 2)
    shape = replace(shape, cache_gb=cache_gb)
    config = replace(_restarts_config(shape, restarts), memory_limit_mb=limit)
    base, period = Baseline(shape), shape.period_s
    climbs: list[tuple[int, int]] = []  # (first second, one past the last) of each process that climbs to the limit
    down: set[int] = set()
    pids: dict[int, int] = {}  # the second each new process starts: its pid
    s = 1200
    for i in range(restarts.processes):
        life, gone = rng.randint(120, 720), rng.randint(5, 240)
        climbs.append((s, s + life))
        down.update(range(s + life, s + life + gone))
        s += life + gone
        pids[s] = config.pid if restarts.same_pid else config.pid + i + 1
    seconds = s + 600

    def resident(t: int) -> float:
        """From what the cache and connections take at the start to the limit, where the kernel kills it."""
        climbing = next(((a, b) for a, b in climbs if a <= t < b), None)
        if climbing:
            return limit * (0.45 + 0.52 * (t - climbing[0]) / (climbing[1] - climbing[0]))
        return limit * (0.55 if t < climbs[0][0] else 0.5)

    def plan(t: int) -> Tick:
        return replace(base(t), missing=t in down, resident_mb=resident(t))

    run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=period, restarts=pids)
    sampled = [t for t in range(seconds) if t % period == 0 and t not in down]
    last_before = max(t for t in sampled if t < climbs[0][1])
    first_after = min(t for t in sampled if t >= max(pids))
    log = node_log(shape, config, run)
    for t in sorted(pids):
        log.startup(run.at(t), DEFAULT_OPEN.format(cache=int(config.cache_gb * 1024)))
    log.write(out / "mongod.log")
    expected = Expected("restart_loop", None, run.at(last_before), run.at(first_after), max(WINDOW_TOLERANCE_S, period))
    return (
        Scenario(out / "diagnostic.data", out / "mongod.log", [expected]),
        RestartTruth(restarts.processes, limit, restarts.processes),
    )


RESTART_CASES = {"interleaved": _interleaved, "developer": _developer, "oom_loop": _oom_loop}


def build_restarts(shape: Shape, restarts: Restarts, out: Path) -> tuple[Scenario, RestartTruth]:
    """Simulates `restarts.case` on a node of `shape` into `out`: the scenario and what its restarts must be told as."""
    return RESTART_CASES[restarts.case](shape, restarts, out, random.Random(shape.seed * 31 + 7))


def analyzed_restarts(shape: Shape, restarts: Restarts) -> tuple[Scenario, RestartTruth, object]:
    """`build_restarts` in a temporary folder, what it must be told as, and its analysis."""
    truths: list[RestartTruth] = []

    def make(out: Path) -> Scenario:
        scenario, truth = build_restarts(shape, restarts, out)
        truths.append(truth)
        return scenario

    scenario, result = analyzed(make)
    return scenario, truths[0], result


def restart_failures(truth: RestartTruth, result) -> list[str]:
    """What `result` got wrong about a restarts scenario: the count of restarts; for a loop, one finding naming the
    memory limit the processes ended at and the cache against it."""
    wrong = []
    if len(result.overview.restarts) != truth.restarts:
        wrong.append(f"{len(result.overview.restarts)} restarts told, {truth.restarts} happened")
    loops = [f for f in result.findings if f.kind == "restart_loop"]
    if truth.limit_mb is None:
        return wrong + [f"a restart loop told: {f.title}" for f in loops]
    if len(loops) != 1:
        return wrong + [f"{len(loops)} restart loops told, one happened"]
    evidence, text = loops[0].evidence, loops[0].title + " " + loops[0].explanation
    if evidence.get("memory_limit_mb") != truth.limit_mb or evidence.get("ended_at_memory_limit") != truth.ended_at_limit:
        wrong.append(
            f"memory limit {evidence.get('memory_limit_mb')} MB, {evidence.get('ended_at_memory_limit')} at it; "
            f"{truth.limit_mb} MB, {truth.ended_at_limit} happened"
        )
    if "memory limit" not in text or "out-of-memory" not in text or "WiredTiger cache" not in text:
        wrong.append(f"the loop does not say it ended at the memory limit, with the cache: {text}")
    return wrong


def restarts_judged(shape: Shape, restarts: Restarts) -> list[str]:
    """What the analysis of a restarts scenario got wrong: `failures` and `restart_failures` together."""
    scenario, truth, result = analyzed_restarts(shape, restarts)
    return failures(scenario, result) + restart_failures(truth, result)


def cpu_cause_problems(incident: Incident, result) -> list[str]:
    """A saturated host told as whose CPU it was, as drawn: the hypervisor's steal (a host with dedicated CPUs advised
    first), another process's (that process found first), mongod's own work (its operations found first); where mongod's
    CPU time is not recorded (4.2's layout), no cause but the steal said, and that said. Never more cores for a host
    usually a third busy."""
    saturated = [f for f in result.problems if f.kind == "cpu_saturation"]
    wrong = [] if saturated else ["no saturated CPU"]
    recorded = result.node.version is None or not result.node.version.startswith("4.2")
    drawn = {"": "mongod", "other_process": "another_process", "steal": "hypervisor"}[incident.variant]
    told = drawn if recorded or drawn == "hypervisor" else None
    first_action = {"mongod": "change_workload", "another_process": "investigate", "hypervisor": "resize", None: "investigate"}
    for f in saturated:
        first = f.recommendations[0] if f.recommendations else None
        if f.evidence.get("mechanism") != told:
            wrong.append(f"{drawn} drawn, told {f.evidence.get('mechanism')}: {f.title}")
        if first is None or first.action != first_action[told]:
            wrong.append(f"{told} first advised: {first and (first.action, first.what)}")
        if told is None and "not recorded" not in f.explanation:
            wrong.append(f"mongod's CPU time not recorded, not said: {f.explanation}")
        if any(r.what == "Give the host more cores" for r in f.recommendations):
            wrong.append(f"more cores for a host {f.evidence.get('usual_busy_pct')} % busy in its usual hours")
    return wrong


def cpu_judged(shape: Shape, incident: Incident) -> list[str]:
    """What the analysis of a CPU saturation scenario got wrong: `failures` and `cpu_cause_problems` together."""
    scenario, result = analyzed(build, shape, incident)
    return failures(scenario, result) + cpu_cause_problems(incident, result)


def disk_cause_problems(scenario: Scenario, incident: Incident, result) -> list[str]:
    """A saturated disk told as whose I/O filled it: another process's (reads or writes, as drawn), first advised found; or
    mongod's own, named as its work and advised done less at once; never more IOPS for a volume usually a quarter busy."""
    disks = [f for f in result.problems if f.kind == "disk_saturation"]
    wrong = [] if disks else ["no saturated disk"]
    for f in disks:
        e, first = f.evidence, f.recommendations[0] if f.recommendations else None
        drawn = ["reads"] * incident.other_process + ["writes"] * incident.other_writes
        if drawn and (e.get("mechanism") != "another_process" or e.get("another_process_io") != drawn):
            wrong.append(f"another process's {drawn} not told: {f.title}")
        if drawn and (first is None or first.action != "investigate" or "besides mongod" not in first.what):
            wrong.append(f"another process's I/O, first advised: {first and first.what}")
        if not drawn and ("mechanism" in e or "own_work" not in e or "by mongod's own" not in f.subject):
            wrong.append(f"mongod's own I/O not told as its work: {f.title}")
        if not drawn and (first is None or first.action not in ("batch_writes", "change_workload")):
            wrong.append(f"mongod's own I/O, first advised: {first and first.what}")
        if any(r.action == "resize" for r in f.recommendations):
            wrong.append(f"more IOPS for a volume {e.get('usual_util_pct')} % busy in its usual hours")
        if "up to" not in f.statement:
            wrong.append(f"the peak wait said as a level: {f.statement}")
    return wrong


# -- a role change told without a log (issue 39 §1): this node's own election and command counters say whether it was
# planned (a replSetStepDown it carried out, an election it called on a step-up request, by priority or to catch up) or a
# failover (it called an election on seeing no primary; as the old primary, it stepped down on seeing another elected).

PLANNED_CHANGES = ("stepdown_command", "step_up", "priority_takeover", "catchup_takeover", "taken_over")


@dataclass(frozen=True)
class RoleChange:
    """A replica-set member changing role with no log beside its FTDC. `how`: "stepdown_command" (this node, the primary,
    carries out a replSetStepDown; the election handoff makes another member primary), "step_up", "priority_takeover",
    "catchup_takeover" (this node, a secondary, calls an election for that reason and wins), "taken_over" (this node,
    the primary, answering all along, steps down on seeing another member elected by priority), or "failover": this
    node, the primary, stalls for 12-20 s (its serverStatus unanswered, writes queued) and another member, seeing no
    primary for electionTimeoutMillis, is elected; this node steps down on seeing the higher term. `version`: a version
    the layout also stands for (5.0 on 4.4's layout)."""

    how: str
    version: str | None = None
    logged: bool = False  # the log is there too: the stepdown command's line, or the new term's (id 21402) on the old primary


@dataclass(frozen=True)
class RoleChangeTruth:
    """What a role change must be told as: the sample whose counters record it (None for a failover, which no counter
    plans), how it was planned, and whether this node was the primary before."""

    at: dt.datetime | None
    how: str | None
    was_primary: bool
    changed: dt.datetime  # the first sample with the new primary


ROLE_CHANGE_WORDS = {
    "stepdown_command": "a replSetStepDown command",
    "step_up": "a replSetStepUp request",
    "priority_takeover": "a priority takeover",
    "catchup_takeover": "a catch-up takeover",
    "taken_over": "a takeover by another member while this node was answering",
}


def build_role_change(shape: Shape, change: RoleChange, out: Path) -> tuple[Scenario, RoleChangeTruth]:
    """A member at its usual work through a role change at a drawn second, its FTDC with electionMetrics and the
    role-change commands, no log unless `change.logged`. The old primary's writes wait 2 s while it changes role, then
    it serves a third of the reads; a member taking the primary serves a third of the reads before and all the work
    after. A failover's old primary stalls first (serverStatus unanswered, writes queued)."""
    config = replace(shape.config(), election_metrics=True)
    if change.version:
        config = replace(config, version=change.version)
    rng = random.Random(shape.seed * 17 + 3)
    period = shape.period_s
    seconds = 2400 + 66 * period
    at = 1500 + rng.randrange(300)
    was_primary = change.how in ("stepdown_command", "taken_over", "failover")
    stall = rng.randint(12, 20) if change.how == "failover" else 0
    stepped = at + stall + 2  # the old primary is a secondary from here
    elected = stepped if was_primary else at + 1  # this node, having called the election, wins it a second later
    base = Baseline(shape)

    def plan(s: int) -> Tick:
        tick = base(s)
        secondary = replace(tick, reads=tick.reads / 3, writes=0, returned=tick.returned / 3)
        if not was_primary:
            tick = secondary if s < elected else tick
            return replace(tick, role_change=change.how) if s == at else tick
        if at <= s < at + stall:  # the failing primary: nothing answers, writes queue
            return replace(tick, writes_stalled=True, reads_stalled=True, write_queue=rng.randint(200, 800), missing=True)
        if at + stall <= s < stepped:  # the replication state transition lock: writes wait, then are killed or go on
            tick = replace(tick, writes_stalled=True, write_queue=rng.randint(20, 200))
            if s == at + stall:
                tick = replace(tick, role_change="stepdown_command" if change.how == "stepdown_command" else "higher_term")
            return tick
        return secondary if s >= stepped else tick

    def primary(s: int) -> int:
        if was_primary:
            return 0 if s < stepped else 1
        return 1 if s < elected else 0

    def status(s: int, tick: Tick) -> dict:
        return member_status(s, rng, lambda m: 1 if primary(s) == m else 2, 5 + (s >= stepped))

    run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=period, extra=status)
    sampled = [s for s in range(seconds) if s % period == 0 and not run.ticks[s].missing]
    counted_in = at + stall if was_primary else at
    recorded = min(s for s in sampled if s >= counted_in)
    changed = min(s for s in sampled if s >= (stepped if was_primary else elected))
    log = None
    if change.logged:
        log = node_log(shape, config, run)
        if isinstance(log, JsonLog) and change.how == "stepdown_command":
            log.line(run.at(at), "COMMAND", 21579, "conn4182", "Attempting to step down in response to replSetStepDown command")
        if isinstance(log, JsonLog) and change.how in ("taken_over", "failover"):
            log.line(
                run.at(at + stall) + dt.timedelta(milliseconds=40),
                "REPL",
                21402,
                "ReplCoord-3",
                "Stepping down from primary, because a new term has begun",
                {"term": 6},
            )
        log.write(out / "mongod.log")
    planned = change.how in PLANNED_CHANGES
    if log and change.how == "stepdown_command":  # the log's line says when
        recorded_at = run.at(at)
    elif log and change.how == "taken_over":
        recorded_at = run.at(at + stall) + dt.timedelta(milliseconds=40)
    else:
        recorded_at = run.at(recorded)
    truth = RoleChangeTruth(
        recorded_at if planned else None,
        ROLE_CHANGE_WORDS.get(change.how),
        was_primary,
        run.at(changed),
    )
    return Scenario(out / "diagnostic.data", out / "mongod.log" if log else None), truth


def role_change_failures(truth: RoleChangeTruth, result) -> list[str]:
    """What `result` got wrong about a role change: a planned one is one primary change saying how (from this node's
    counters), nothing warning or critical, any dip context told as the role change; a failover is never called planned."""
    wrong = []
    changes = [f for f in result.findings if f.kind == "primary_change"]
    if len(changes) != 1:
        return [f"{len(changes)} primary changes told, one happened"]
    planned = changes[0].evidence.get("planned")
    if truth.how is None:
        if planned:
            wrong.append(f"a failover told as planned: {planned}")
        return wrong
    if not planned or planned["how"] != truth.how or abs(planned["at"] - truth.at) > dt.timedelta(seconds=1):
        wrong.append(f"planned as {planned}, {truth.how} at {truth.at:%H:%M:%S} happened")
    if "counters" not in changes[0].explanation and planned and planned["source"] == "FTDC":
        wrong.append(f"the primary change does not say what recorded the plan: {changes[0].explanation}")
    wrong += [f"raised: {f.severity} {f.title}" for f in result.problems]
    wrong += [
        f"a dip not told as the role change: {f.title}"
        for f in result.findings
        if f.kind == "throughput_dip" and f.evidence.get("role_change", {}).get("how") != truth.how
    ]
    return wrong


def role_change_judged(shape: Shape, change: RoleChange) -> list[str]:
    """What the analysis of a role change got wrong (`role_change_failures`)."""
    (_, truth), result = analyzed(build_role_change, shape, change)
    return role_change_failures(truth, result)
