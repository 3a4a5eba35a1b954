"""Incident scenarios with their truth: `samples/scenarios/<name>/` = diagnostic.data + log + truth.json.

Each scenario is built from a mechanism the references describe (docs/metrics.md,
its public incidents in §12, docs/log-format.md) with production-like numbers,
and its truth is written from what was injected: the windows where the node
was made to breach, queue, stall or saturate. The analyses are judged
against these files; the files are never tuned to the analyses.

    python -m samples.make_scenarios          # rebuild every scenario (deterministic)
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from analysis.findings.detectors import RECORDS
from samples.simulate import Config, JsonLog, Run, TextLog, Tick, write_ftdc

HERE = Path(__file__).resolve().parent / "scenarios"
UTC = dt.timezone.utc
# The kinds each scenario's truth says are absent unless injected: every detector's, read from the registry (a new
# detector is judged on every scenario without a word here), but for moments (an election), which are context
# whatever a scenario injects.
KINDS = tuple(kind for kind, record in RECORDS.items() if kind not in record.moments)
DEFAULT_OPEN = (
    "create,cache_size={cache}M,session_max=33000,eviction=(threads_min=4,threads_max=4),config_base=false,statistics=(fast),"
    "log=(enabled=true,remove=true,path=journal,compressor=snappy),file_manager=(close_idle_time=600,close_scan_interval=10,"
    "close_handle_minimum=2000),statistics_log=(wait=0),verbose=[recovery_progress:1,checkpoint_progress:1,compact_progress:1]"
)


def iso(t: dt.datetime) -> str:
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{t.microsecond // 1000:03d}Z" if t.microsecond // 1000 else f"{text}Z"


def finding(
    run: Run,
    kind: str,
    start_s: float,
    end_s: float,
    *,
    tolerance_s: float,
    severity: str = "warning",
    resource=None,
    culprit=None,
    collscan_blamed=False,
    **extra,
) -> dict:
    return {
        "kind": kind,
        "severity_at_least": severity,
        "resource": resource,
        "start": iso(run.at(start_s)),
        "end": iso(run.at(end_s)),
        "tolerance_s": tolerance_s,
        "top_culprit": culprit,
        "collscan_blamed": collscan_blamed,
        **extra,
    }


# The incidents each scenario injects, in time order: what its warning and critical incidents must
# be, each with the injected cause as its root cause (`analysis.incidents.incident.ROOT_KINDS`; an operation by namespace).
INCIDENTS = {
    "cache-fill-collscan": [{"root_cause": "operation", "ns": "shop.orders"}],
    "checkpoint-stall": [{"root_cause": "workload"}],  # dirty data from steady writes piles up before each checkpoint
    "dhandle-pressure": [{"root_cause": "workload"}],  # a collection per tenant
    "dirty-cache-checkpoints-8.0": [{"root_cause": "workload"}],  # dirty data outruns checkpoints; the storm is its effect
    "disk-saturation": [{"root_cause": "resource", "mechanism": "another_process"}],  # a backup reading the volume
    "read-tickets-4.2": [{"root_cause": "operation", "ns": "shop.events"}],
    "replica-set": [
        {"node": "rs1-c.example.net:27017", "root_cause": "resource"},  # its slow disk, its lag
        {"node": "rs1-a.example.net:27017", "root_cause": "operation", "ns": "app.events"},
    ],  # the scan, the election
    "throughput-dip": [{"root_cause": "undetermined"}] * 3,  # server stalls with nothing in the data to say why
    "ttl-burst-6.0": [{"root_cause": "workload"}],
    "write-queue-7.0": [{"root_cause": "operation", "ns": "shop.orders"}],
}


def truth(name: str, config: Config, description: str, findings: list[dict], context: list[dict] | None = None) -> dict:
    """What was injected: the findings it must give, the kinds it must not (neither injected nor told as context: a
    restart it holds is said, as an info), its incidents, and the context (info findings) it must tell."""
    present = {f["kind"] for f in findings + (context or [])}
    said = {
        "scenario": name,
        "version": config.version,
        "description": description,
        "findings": findings,
        "absent": [k for k in KINDS if k not in present],
        "incidents": INCIDENTS.get(name, []),
    }
    return said | ({"context": context} if context else {})


class Healthy:
    """A busy, healthy node second by second: the baseline every scenario departs from.

    Checkpoints every `interval` s (offset so the first starts at 30 s) take 2 s,
    drain the dirty data that built up (a sawtooth of 1-4.5 %), push the disk to
    100 % for a moment and add a little write latency; the TTL monitor deletes a
    few hundred documents a minute; connections churn slowly."""

    def __init__(self, seed: int, interval: int = 60, ttl_second: int = 17):
        self.rng = random.Random(seed)
        self.interval = interval
        self.ttl_second = ttl_second  # the TTL monitor wakes at this second of every minute

    def phase(self, s: int) -> int:
        return (s - self.interval // 2) % self.interval

    def __call__(self, s: int) -> Tick:
        r, phase = self.rng, self.phase(s)
        in_checkpoint = s >= self.interval // 2 and phase < 2
        dirty = 0.01 + 0.035 * phase / self.interval
        return Tick(
            reads=r.uniform(1900, 2100),
            writes=r.uniform(750, 850),
            commands=r.uniform(280, 320),
            read_latency_us=r.uniform(150, 250),
            write_latency_us=r.uniform(250, 350) * (1.4 if in_checkpoint else 1.0),
            command_latency_us=r.uniform(80, 120),
            cache_fill=0.80 + r.uniform(-0.01, 0.01),
            dirty=dirty,
            updates=dirty / 2,
            read_out=r.randint(0, 4),
            write_out=r.randint(0, 4),
            scanned_objects=r.uniform(5500, 6500),
            returned=r.uniform(3800, 4200),
            ttl_deleted=r.randint(100, 300) if s % 60 == self.ttl_second else 0,
            ttl_pass=s % 60 == self.ttl_second,
            disk_util=r.uniform(0.92, 1.0) if in_checkpoint else r.uniform(0.15, 0.35),
            disk_await_ms=r.uniform(2, 4) if in_checkpoint else r.uniform(0.6, 1.0),
            disk_iops=r.uniform(300, 500),
            disk_mb=r.uniform(15, 25),
            connections=300 + r.randint(-5, 5),
            connections_created=r.randint(1, 4),
            dhandles=900 + r.randint(-3, 3),
            collect_ms=r.uniform(1, 4),
            checkpoint_seconds=2.0,
        )


def json_log(config: Config, run: Run, boot: dt.datetime, open_string: str | None = None) -> JsonLog:
    log = JsonLog(config)
    log.startup(boot, open_string or DEFAULT_OPEN.format(cache=int(config.cache_gb * 1024)))
    log.checkpoints(run)
    return log


def ordinary_slow_finds(log: JsonLog, run: Run, seconds: int, rng: random.Random, count: int = 12) -> None:
    """A few ordinary slow indexed reads: every log has some."""
    for s in sorted(rng.sample(range(60, seconds - 60), count)):
        log.slow(
            run.at(s) + dt.timedelta(milliseconds=100),
            f"conn{rng.randint(100, 999)}",
            "shop.customers",
            {"find": "customers", "filter": {"email": "someone@example.com"}, "$db": "shop"},
            "IXSCAN { email: 1 }",
            rng.randint(101, 180),
            queryHash="8E1B7F02",
        )


# --------------------------------------------------------------------------------------------------------------


def checkpoint_stall(out: Path) -> dict:
    """SERVER-21652: once dirty data piles up, inserts stall in the latter part of each checkpoint.
    For 30 minutes every checkpoint takes 25 s and writes block for its last 6 s (the client
    pool, 50 writers, holds its tickets); dirty data builds to ~14 % before each."""
    config = Config(version="7.0.12", layout="7.0", seed=11)
    t0, seconds = dt.datetime(2024, 6, 3, 2, 0, tzinfo=UTC), 2 * 3600
    base = Healthy(11)
    episode = range(3600, 5400)

    def plan(s: int) -> Tick:
        tick = base(s)
        phase = base.phase(s)
        if s in episode or (s - 25 in episode and phase < 25):
            stalling = 19 <= phase < 25
            tick = replace(
                tick,
                checkpoint_seconds=25.0,
                dirty=0.02 + 0.12 * ((phase - 25) % 60) / 35 if phase >= 25 else 0.14 - 0.12 * phase / 25,
                writes_stalled=stalling,
                write_out=50 if stalling else tick.write_out,
                disk_util=0.98 if phase < 25 else tick.disk_util,
                disk_await_ms=4.0 if phase < 25 else tick.disk_await_ms,
            )
            tick = replace(tick, updates=tick.dirty / 2)
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    stalls = [start for start, end in run.checkpoints if end - start >= 20]
    rng = random.Random(12)
    log = json_log(config, run, t0 - dt.timedelta(days=2))
    ordinary_slow_finds(log, run, seconds, rng)
    log.slow(
        run.at(1800.3),
        "conn512",
        "shop.audit",
        {"find": "audit", "filter": {"actor": "batch"}, "$db": "shop"},
        "COLLSCAN",
        310,
        docs=180_000,
        keys=0,
        queryHash="A11D1742",
    )
    for start in stalls:  # the writes that waited out each stall, as a batch and its statements
        for k in range(3):
            end = run.at(start + 25) + dt.timedelta(milliseconds=40 * k)
            ms = 6000 - 40 * k
            ctx = f"conn{rng.randint(100, 999)}"
            statement = {"q": {"_id": {"$oid": "66433a2f9d1e8b00123456" + f"{k:02d}"}}, "u": {"$set": {"status": "paid"}}}
            log.slow(
                end - dt.timedelta(milliseconds=1),
                ctx,
                "shop.orders",
                statement,
                "IDHACK",
                ms - 1,
                component="WRITE",
                op_type="update",
                nMatched=1,
                nModified=1,
            )
            log.slow(
                end, ctx, "shop.$cmd", {"update": "orders", "updates": [statement], "ordered": True, "$db": "shop"}, "IDHACK", ms
            )
    log.write(out / "mongod.log")
    return truth(
        "checkpoint-stall",
        config,
        checkpoint_stall.__doc__,
        [
            finding(
                run,
                "checkpoint_stall",
                stalls[0],
                stalls[-1] + 25,
                tolerance_s=60,
                aligned_spikes=[iso(run.at(start + 25)) for start in stalls],
            ),
        ],
    )


def cache_fill_collscan(out: Path) -> dict:
    """WT-4869 / SERVER-23778: a large analytics scan fills the cache past eviction_trigger;
    application threads evict and wait, reads and writes slow down while it runs (8 minutes)."""
    config = Config(version="6.0.14", layout="6.0", seed=21, host="db-analytics-02.example.net")
    t0, seconds = dt.datetime(2024, 7, 9, 14, 0, tzinfo=UTC), 90 * 60
    base = Healthy(21)
    scan = (3000, 3480)
    fill = {"value": 0.80}
    breach: list[int] = []

    def plan(s: int) -> Tick:
        tick = base(s)
        target = 0.967 if scan[0] <= s < scan[1] else 0.80
        fill["value"] += (target - fill["value"]) * 0.06
        level = fill["value"] + base.rng.uniform(-0.001, 0.001)
        tick = replace(
            tick,
            cache_fill=level,
            scanned_objects=tick.scanned_objects + (80_000 if scan[0] <= s < scan[1] else 0),
            collscans=1 if s == scan[1] else 0,
        )
        if level > 0.95:
            breach.append(s)
            tick = replace(
                tick,
                app_evicted_pages=base.rng.uniform(600, 1200),
                app_evict_us=base.rng.uniform(2e6, 4e6),
                app_wait_us=base.rng.uniform(3e6, 6e6),
                read_latency_us=tick.read_latency_us * 6,
                write_latency_us=tick.write_latency_us * 4,
                read_out=base.rng.randint(30, 50),
            )
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    rng = random.Random(22)
    log = json_log(config, run, t0 - dt.timedelta(days=5))
    ordinary_slow_finds(log, run, seconds, rng)
    log.slow(
        run.at(scan[1]) + dt.timedelta(milliseconds=412),
        "conn2231",
        "shop.orders",
        {
            "aggregate": "orders",
            "pipeline": [
                {"$match": {"status": "shipped", "region": "eu"}},
                {"$sort": {"createdAt": -1}},
                {"$group": {"_id": "$customer", "n": {"$sum": 1}}},
            ],
            "cursor": {},
            "$db": "shop",
        },
        "COLLSCAN",
        (scan[1] - scan[0]) * 1000 + 412,
        keys=0,
        docs=38_000_000,
        nreturned=101,
        queryHash="5C5B0E3A",
    )
    for s in range(breach[0] + 5, breach[-1], 23):  # reads slowed by the full cache (the scan's victims)
        log.slow(
            run.at(s) + dt.timedelta(milliseconds=200),
            f"conn{rng.randint(100, 999)}",
            "shop.customers",
            {"find": "customers", "filter": {"email": "someone@example.com"}, "$db": "shop"},
            "IXSCAN { email: 1 }",
            rng.randint(300, 900),
            queryHash="8E1B7F02",
        )
    log.write(out / "mongod.log")
    return truth(
        "cache-fill-collscan",
        config,
        cache_fill_collscan.__doc__,
        [
            finding(
                run,
                "cache_pressure",
                breach[0],
                breach[-1],
                tolerance_s=5,
                culprit={"ns": "shop.orders", "plan_summary": "COLLSCAN", "command": "aggregate"},
                collscan_blamed=True,
            ),
        ],
    )


def dirty_cache_checkpoints_80(out: Path) -> dict:
    """WT-16718: very long checkpoints, dirty data climbing past eviction_dirty_trigger,
    application threads evicting; then clients time out and reconnect all at once until
    the node refuses connections (8.0, an embedded router: shard./common. sections)."""
    config = Config(version="8.0.4", layout="8.0-services", seed=31, host="shard-a-01.example.net", cache_gb=16)
    t0, seconds = dt.datetime(2024, 11, 18, 3, 0, tzinfo=UTC), 2 * 3600
    base = Healthy(31)
    long_start, long_end = 2430, 3330  # a 15-minute checkpoint
    storm = (3030, 3070)
    dirty = {"value": 0.03}
    over: list[int] = []

    def plan(s: int) -> Tick:
        tick = base(s)
        if s == long_start:
            tick = replace(tick, checkpoint_seconds=float(long_end - long_start))
        if long_start <= s < long_end:
            dirty["value"] = min(0.225 + base.rng.uniform(-0.002, 0.002), dirty["value"] + 0.0005)
            tick = replace(tick, dirty=dirty["value"], updates=dirty["value"] / 2.5, disk_util=0.97, disk_await_ms=5.0)
        elif s >= long_end and dirty["value"] > 0.03:
            dirty["value"] = max(0.03, dirty["value"] - 0.01)
            tick = replace(tick, dirty=dirty["value"], updates=dirty["value"] / 2.5)
        if tick.dirty > 0.20:
            over.append(s)
            tick = replace(
                tick,
                app_evicted_pages=base.rng.uniform(800, 1500),
                app_evict_us=base.rng.uniform(3e6, 6e6),
                app_wait_us=base.rng.uniform(4e6, 9e6),
                write_latency_us=tick.write_latency_us * 50,
                write_out=base.rng.randint(40, 70),
            )
        if storm[0] <= s < storm[1]:
            k = s - storm[0]
            tick = replace(
                tick, connections=min(3000, 300 + 70 * k), connections_created=300, connections_rejected=60 if k > 30 else 0
            )
        elif storm[1] <= s < storm[1] + 600:
            tick = replace(tick, connections=max(300, 3000 - 5 * (s - storm[1])))
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    rng = random.Random(32)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, rng)
    for s in range(over[0], over[-1], 17):
        log.slow(
            run.at(s) + dt.timedelta(milliseconds=500),
            f"conn{rng.randint(100, 999)}",
            "ledger.entries",
            {"insert": "entries", "ordered": True, "$db": "ledger"},
            "",
            rng.randint(2000, 9000),
            op_type="command",
            docs=0,
            keys=0,
            nreturned=0,
        )
    for s in range(*storm):
        for k in range(5):
            t = run.at(s) + dt.timedelta(milliseconds=190 * k)
            log.line(
                t,
                "NETWORK",
                22943,
                "listener",
                "Connection accepted",
                {"remote": f"10.4.{k}.{s % 250}:5{s % 10000:04d}", "connectionCount": 300 + 70 * (s - storm[0])},
            )
            if s - storm[0] > 30:
                log.line(
                    t,
                    "NETWORK",
                    22942,
                    "listener",
                    "Connection refused because there are too many open connections",
                    {"connectionCount": 3000},
                    s="I",
                )
    log.write(out / "mongod.log")
    return truth(
        "dirty-cache-checkpoints-8.0",
        config,
        dirty_cache_checkpoints_80.__doc__,
        [
            finding(run, "cache_pressure", over[0], over[-1], tolerance_s=5),
            finding(run, "checkpoint_stall", long_start, long_end, tolerance_s=60),
            finding(run, "connection_storm", storm[0], storm[1], tolerance_s=10, severity="critical"),
        ],
    )


def read_tickets_42(out: Path) -> dict:
    """Long COLLSCAN finds hold read tickets: 0 of 128 available for 4.5 minutes and about 200
    readers queued on the global lock (4.2, legacy text log: statements without COMMAND lines too)."""
    config = Config(version="4.2.24", layout="4.2", seed=41, host="db-reporting-03.example.net")
    t0, seconds = dt.datetime(2023, 3, 21, 9, 0, tzinfo=UTC), 90 * 60
    base = Healthy(41)
    exhausted = (2460, 2730)

    def plan(s: int) -> Tick:
        tick = replace(base(s), cache_fill=0.85)
        if 2400 <= s < 2790:
            tick = replace(
                tick,
                read_latency_us=tick.read_latency_us * 40,
                read_out=base.rng.randint(60, 110),
                scanned_objects=tick.scanned_objects + 150_000,
            )
        if exhausted[0] <= s < exhausted[1]:
            tick = replace(tick, read_out=128, read_queue=base.rng.randint(150, 215))
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    rng = random.Random(42)
    log = TextLog(config)
    log.line(
        t0 - dt.timedelta(days=3),
        "CONTROL",
        "initandlisten",
        f"MongoDB starting : pid={config.pid} port={config.port} dbpath=/var/lib/mongo 64-bit host={config.host}",
    )
    log.line(t0 - dt.timedelta(days=3), "CONTROL", "initandlisten", f"db version v{config.version}")
    log.line(t0 - dt.timedelta(days=3), "STORAGE", "initandlisten", "wiredtiger_open config: " + DEFAULT_OPEN.format(cache=8192))
    for k in range(6):  # the scans: started 2400..2460, 270-330 s each
        started = 2400 + 12 * k
        ms = rng.randint(270_000, 330_000)
        end = run.at(started) + dt.timedelta(milliseconds=ms)
        log.line(
            end,
            "COMMAND",
            f"conn{700 + k}",
            'command shop.events appName: "reports" command: find { find: "events", filter: { type: "click", ts: { $gte: new Date(1679360000000) } }, '
            f'sort: {{ ts: -1 }}, $db: "shop" }} planSummary: COLLSCAN keysExamined:0 docsExamined:{4_500_000 + k} cursorExhausted:1 numYields:{35000 + k} '
            f"nreturned:{101 + k} queryHash:7D2E7C1B planCacheKey:7D2E7C1B reslen:{50_000 + k} locks:{{}} protocol:op_msg {ms}ms",
        )
    for s in range(2420, 2780, 9):  # reads queued behind them
        log.line(
            run.at(s),
            "COMMAND",
            f"conn{rng.randint(100, 699)}",
            f'command shop.customers command: find {{ find: "customers", filter: {{ email: "a{s}@example.com" }}, $db: "shop" }} planSummary: IXSCAN {{ email: 1 }} '
            f"keysExamined:1 docsExamined:1 nreturned:1 queryHash:8E1B7F02 reslen:400 protocol:op_msg {rng.randint(1000, 6000)}ms",
        )
    for s in sorted(rng.sample(range(120, seconds - 120), 15)):  # per-statement WRITE lines, no COMMAND line
        log.line(
            run.at(s),
            "WRITE",
            f"conn{rng.randint(100, 699)}",
            f'update shop.carts command: {{ q: {{ _id: "c{s}" }}, u: {{ $set: {{ total: {s} }} }}, multi: false, upsert: false }} planSummary: IDHACK '
            f"keysExamined:1 docsExamined:1 nMatched:1 nModified:1 keysInserted:0 keysDeleted:0 numYields:0 locks:{{}} {rng.randint(105, 240)}ms",
        )
    log.write(out / "mongod.log")
    return truth(
        "read-tickets-4.2",
        config,
        read_tickets_42.__doc__,
        [
            finding(
                run,
                "ticket_exhaustion",
                exhausted[0],
                exhausted[1],
                tolerance_s=5,
                resource="read",
                severity="critical",
                culprit={"ns": "shop.events", "plan_summary": "COLLSCAN", "command": "find"},
                collscan_blamed=True,
            ),
        ],
    )


def write_queue_70(out: Path) -> dict:
    """7.0 throughput probing keeps the write pool small, so `available == 0` is frequent and
    harmless; one real episode has writes queued behind slow updates whose filter has no index
    (each statement a COLLSCAN), logged as `shop.$cmd` update commands."""
    config = Config(version="7.0.12", layout="7.0", seed=51, host="db-orders-01.example.net")
    t0, seconds = dt.datetime(2024, 9, 2, 18, 0, tzinfo=UTC), 2 * 3600
    base = Healthy(51)
    episode = (3600, 3780)

    def plan(s: int) -> Tick:
        tick = base(s)
        total = 8 + (s // 30) % 17  # probing moves the pool between 8 and 24
        held = total if base.rng.random() < 0.35 else base.rng.randint(0, total)  # often all held, nobody waiting
        tick = replace(tick, write_total=total, read_total=total, write_out=held)
        if episode[0] <= s < episode[1]:
            tick = replace(
                tick, write_out=total, write_queue=base.rng.randint(20, 60), write_latency_us=tick.write_latency_us * 30
            )
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    rng = random.Random(52)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, rng)
    for k, s in enumerate(range(episode[0] - 25, episode[1] - 20, 14)):
        ms = rng.randint(20_000, 40_000)
        statement = {"q": {"sku": f"A-{1000 + k}"}, "u": {"$inc": {"stock": -1}}, "multi": False, "upsert": False}
        log.slow(
            run.at(s) + dt.timedelta(milliseconds=ms),
            f"conn{rng.randint(100, 999)}",
            "shop.$cmd",
            {"update": "orders", "updates": [statement], "ordered": True, "$db": "shop"},
            "COLLSCAN",
            ms,
            keys=0,
            docs=2_400_000,
            nreturned=0,
            nMatched=1,
            nModified=1,
        )
    log.write(out / "mongod.log")
    return truth(
        "write-queue-7.0",
        config,
        write_queue_70.__doc__,
        [
            finding(
                run,
                "ticket_exhaustion",
                episode[0],
                episode[1],
                tolerance_s=5,
                resource="write",
                severity="critical",
                culprit={"ns": "shop.orders", "plan_summary": "COLLSCAN", "command": "update"},
                collscan_blamed=True,
            ),
        ],
    )


def ttl_burst_60(out: Path) -> dict:
    """A TTL pass at peak load deletes 450,000 expired sessions over 70 s (sub-passes of up to
    50,000 per index, SERVER-56194): write latency and dirty data rise while it runs."""
    config = Config(version="6.0.14", layout="6.0", seed=61, host="db-sessions-01.example.net")
    t0, seconds = dt.datetime(2024, 4, 15, 19, 0, tzinfo=UTC), 2 * 3600
    base = Healthy(61)
    burst = (3600, 3670)

    def plan(s: int) -> Tick:
        tick = base(s)
        if 3000 <= s < 4800:  # the evening peak
            tick = replace(tick, reads=tick.reads * 1.5, writes=tick.writes * 1.5)
        if burst[0] <= s < burst[1]:
            tick = replace(
                tick,
                ttl_deleted=450_000 // (burst[1] - burst[0]),
                ttl_pass=s == burst[0],
                write_latency_us=tick.write_latency_us * 15,
                dirty=min(0.11, tick.dirty + 0.002 * (s - burst[0])),
                write_out=base.rng.randint(70, 95),
            )
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    rng = random.Random(62)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, rng)
    log.line(
        run.at(burst[1]),
        "INDEX",
        5479200,
        "TTLMonitor",
        "Deleted expired documents using index",
        {
            "namespace": "app.sessions",
            "index": "expireAt_1",
            "numDeleted": 450_000,
            "durationMillis": (burst[1] - burst[0]) * 1000,
        },
    )
    log.write(out / "mongod.log")
    return truth(
        "ttl-burst-6.0",
        config,
        ttl_burst_60.__doc__,
        [
            finding(run, "ttl_burst", burst[0], burst[1], tolerance_s=60),
        ],
    )


def disk_saturation(out: Path) -> dict:
    """The data volume saturates for 4 minutes outside checkpoints (a backup reading it, about
    160 MB/s on top of the volume's usual 20 MB/s): 100 % busy, requests waiting 120-180 ms, every
    task stalled on I/O a third of the time; the volume is about 25 % busy otherwise."""
    config = Config(version="7.0.12", layout="7.0", seed=71, host="db-prod-07.example.net", journal=True)
    t0, seconds = dt.datetime(2024, 8, 20, 1, 0, tzinfo=UTC), 90 * 60
    base = Healthy(71)
    saturated = (3000, 3240)

    def plan(s: int) -> Tick:
        tick = base(s)
        if saturated[0] <= s < saturated[1]:
            tick = replace(
                tick,
                disk_util=1.0,
                disk_await_ms=base.rng.uniform(120, 180),
                io_full_share=base.rng.uniform(0.3, 0.45),
                foreign_read_mb=180 - tick.disk_mb,
                write_latency_us=tick.write_latency_us * 20,
                read_latency_us=tick.read_latency_us * 10,
            )
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, random.Random(72))
    log.write(out / "mongod.log")
    return truth(
        "disk-saturation", config, disk_saturation.__doc__, [finding(run, "disk_saturation", *saturated, tolerance_s=15)]
    )


def dhandle_pressure(out: Path) -> dict:
    """SERVER-19954: a collection per tenant, data handles growing from 40,000 to 62,000;
    checkpoints spend seconds gathering handles, application threads wait for the dhandle lock."""
    config = Config(version="6.0.14", layout="6.0", seed=81, host="db-tenants-01.example.net")
    t0, seconds = dt.datetime(2024, 2, 6, 10, 0, tzinfo=UTC), 2 * 3600
    base = Healthy(81)
    pressure_from = 3000

    def plan(s: int) -> Tick:
        handles = 40_000 + int(22_000 * s / seconds)
        tick = replace(base(s), dhandles=handles, gather_handles_us=400_000)
        if s >= pressure_from:
            tick = replace(tick, gather_handles_us=base.rng.uniform(2.5e6, 4e6), dhandle_wait_us=base.rng.uniform(3e5, 7e5))
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, random.Random(82))
    log.write(out / "mongod.log")
    return truth(
        "dhandle-pressure",
        config,
        dhandle_pressure.__doc__,
        [finding(run, "dhandle_pressure", pressure_from, seconds - 1, tolerance_s=60)],
    )


def throughput_dip(out: Path) -> dict:
    """Three 10-second server stalls: operations drop to a twentieth, serverStatus itself takes
    3 s to answer (FTDC misses samples), every ticket is held and operations queue."""
    config = Config(version="7.0.12", layout="7.0", seed=91, host="db-prod-09.example.net")
    t0, seconds = dt.datetime(2024, 10, 1, 12, 0, tzinfo=UTC), 90 * 60
    base = Healthy(91)
    stalls = [1510, 3010, 4510]

    def plan(s: int) -> Tick:
        tick = base(s)
        for start in stalls:
            if start <= s < start + 10:
                return replace(
                    tick,
                    reads_stalled=True,
                    writes_stalled=True,
                    collect_ms=3000,
                    read_out=128,
                    write_out=128,
                    read_queue=base.rng.randint(80, 150),
                    write_queue=base.rng.randint(80, 150),
                    missing=(s - start) % 3 != 0,
                )
        return tick

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, random.Random(92))
    log.write(out / "mongod.log")
    found = []
    for start in stalls:
        found.append(finding(run, "throughput_dip", start, start + 10, tolerance_s=5))
        found += [finding(run, "ticket_exhaustion", start, start + 10, tolerance_s=5, resource=rw) for rw in ("read", "write")]
    return truth("throughput-dip", config, throughput_dip.__doc__, found)


def restart_and_gap(out: Path) -> dict:
    """Context only: mongod restarts (3 minutes down, a new pid, counters from zero) and, later,
    FTDC records nothing for 5 minutes. Nothing else is wrong."""
    config = Config(version="6.0.14", layout="6.0", seed=101, host="db-prod-10.example.net")
    t0, seconds = dt.datetime(2024, 5, 30, 22, 0, tzinfo=UTC), 90 * 60
    base = Healthy(101)
    down, gap = (2220, 2400), (4000, 4300)

    def plan(s: int) -> Tick:
        return replace(base(s), missing=down[0] <= s < down[1] or gap[0] <= s < gap[1])

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan, restarts={down[1]: config.pid + 1})
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    log.line(run.at(down[0]), "CONTROL", 23377, "SignalHandler", "Received signal", {"signal": 15, "error": "Terminated"})
    log.startup(run.at(down[1] - 5), DEFAULT_OPEN.format(cache=8192))
    log.write(out / "mongod.log")
    context = [
        {"kind": "restart", "start": iso(run.at(down[0] - 1)), "end": iso(run.at(down[1]))},
        {"kind": "ftdc_gap", "start": iso(run.at(gap[0] - 1)), "end": iso(run.at(gap[1]))},
    ]
    return truth("restart-and-gap", config, restart_and_gap.__doc__, [], context)


def healthy(out: Path) -> dict:
    """A busy, healthy node for three hours: checkpoints every minute with their small latency
    blips and disk bursts, cache at 80 %, dirty 1-4.5 %, tickets free, TTL deleting a few hundred
    a minute, connections churning, a few short COLLSCANs in the log."""
    config = Config(version="7.0.12", layout="7.0", seed=111, host="db-prod-11.example.net")
    t0, seconds = dt.datetime(2024, 3, 12, 8, 0, tzinfo=UTC), 3 * 3600
    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, Healthy(111))
    rng = random.Random(112)
    log = json_log(config, run, t0 - dt.timedelta(days=1))
    ordinary_slow_finds(log, run, seconds, rng, count=40)
    for s in sorted(rng.sample(range(600, seconds - 600), 5)):
        log.slow(
            run.at(s),
            f"conn{rng.randint(100, 999)}",
            "shop.settings",
            {"find": "settings", "filter": {}, "$db": "shop"},
            "COLLSCAN",
            rng.randint(150, 400),
            keys=0,
            docs=rng.randint(2000, 9000),
            queryHash="0F3D88B2",
        )
    log.write(out / "mongod.log")
    return truth("healthy", config, healthy.__doc__, [])


def raised_thresholds(out: Path) -> dict:
    """A node configured with eviction_trigger=97 and eviction_dirty_trigger=25 (command line and
    the log's open string) sits at ~96 % fill and up to ~22 % dirty while eviction keeps up: no
    application thread evicts. Under its own thresholds there is no breach."""
    setting = "eviction_trigger=97,eviction_dirty_trigger=25"
    config = Config(version="7.0.12", layout="7.0", seed=121, host="db-prod-12.example.net", config_string=setting)
    t0, seconds = dt.datetime(2024, 6, 18, 6, 0, tzinfo=UTC), 90 * 60
    base = Healthy(121)

    def plan(s: int) -> Tick:
        tick = base(s)
        dirty = 0.15 + 0.07 * base.phase(s) / base.interval
        return replace(tick, cache_fill=0.96 + base.rng.uniform(-0.004, 0.004), dirty=dirty, updates=dirty / 3)

    run = write_ftdc(out / "diagnostic.data", config, t0, seconds, plan)
    log = json_log(config, run, t0 - dt.timedelta(days=1), DEFAULT_OPEN.format(cache=8192) + "," + setting)
    ordinary_slow_finds(log, run, seconds, random.Random(122))
    log.write(out / "mongod.log")
    return truth("raised-thresholds", config, raised_thresholds.__doc__, [])


def replica_set(out: Path) -> dict:
    """Three members, one time axis: a COLLSCAN fills member 0's cache; during that incident it
    loses the primary (member 1 takes over 12 s later); member 2's disk is slow, so it falls up
    to 90 s behind and catches up. Each node's FTDC sees the set through its own
    replSetGetStatus (heartbeat views of the others a second or two old)."""
    t0, seconds = dt.datetime(2024, 12, 2, 7, 0, tzinfo=UTC), 60 * 60
    hosts = ["rs1-a.example.net", "rs1-b.example.net", "rs1-c.example.net"]
    incident, election, lag = (1800, 2200), (2100, 2112), (1500, 2700)

    def state(member: int, s: int) -> int:
        if member == 0:
            return 1 if s < election[0] else 2
        if member == 1:
            return 2 if s < election[1] else 1
        return 2

    def lag_of(member: int, s: int) -> float:
        if member != 2 or not lag[0] <= s < lag[1]:
            return 0.0
        rise = (lag[1] - lag[0]) * 0.6
        k = s - lag[0]
        return 90 * k / rise if k < rise else 90 * (lag[1] - lag[0] - k) / (lag[1] - lag[0] - rise)

    def repl(me: int, rng: random.Random) -> Callable[[int, Tick], dict]:
        def status(s: int, tick: Tick) -> dict:
            now = t0 + dt.timedelta(seconds=s)
            members = {}
            for m in range(3):
                stale = 0.0 if m == me else rng.uniform(0, 2)  # heartbeats every 2 s
                optime = now - dt.timedelta(seconds=lag_of(m, s) + stale)
                doc = {
                    "_id": m,
                    "health": 1.0,
                    "state": state(m, s) if not election[0] <= s < election[1] or m == 2 else 2,
                    "uptime": 86400 + s,
                    "optimeDate": optime,
                }
                if m == me:
                    doc["self"] = True
                members[str(m)] = doc
            return {
                "replSetGetStatus": {
                    "start": now,
                    "date": now,
                    "myState": members[str(me)]["state"],
                    "term": 3 + (s >= election[1]),
                    "members": members,
                    "end": now,
                }
            }

        return status

    nodes = []
    for me, host in enumerate(hosts):
        config = Config(version="7.0.12", layout="7.0", seed=131 + me, host=host, replica_set="rs-prod", pid=5000 + me)
        base = Healthy(131 + me)

        def plan(s: int, me=me, base=base) -> Tick:
            tick = base(s)
            if me == 0 and incident[0] <= s < incident[1]:
                tick = replace(
                    tick,
                    cache_fill=0.965,
                    app_evicted_pages=base.rng.uniform(600, 1000),
                    app_evict_us=base.rng.uniform(2e6, 3e6),
                    app_wait_us=base.rng.uniform(3e6, 5e6),
                    read_latency_us=tick.read_latency_us * 5,
                    scanned_objects=tick.scanned_objects + 90_000,
                )
            if me != 0 and s < election[1] or me == 0 and s >= election[0]:  # secondaries apply, they take no client writes
                tick = replace(tick, writes=5, write_latency_us=200)
            if me == 2 and lag[0] <= s < lag[1]:
                tick = replace(tick, disk_util=0.97, disk_await_ms=base.rng.uniform(25, 40))
            return tick

        folder = out / f"node{me + 1}"
        run = write_ftdc(folder / "diagnostic.data", config, t0, seconds, plan, extra=repl(me, random.Random(140 + me)))
        log = json_log(config, run, t0 - dt.timedelta(days=4))
        if me == 0:
            log.slow(
                run.at(incident[1]) + dt.timedelta(milliseconds=250),
                "conn981",
                "app.events",
                {
                    "aggregate": "events",
                    "pipeline": [{"$match": {"kind": "view", "day": {"$gte": "2024-11-01"}}}, {"$sort": {"day": 1}}],
                    "cursor": {},
                    "$db": "app",
                },
                "COLLSCAN",
                (incident[1] - incident[0]) * 1000 + 250,
                keys=0,
                docs=52_000_000,
                nreturned=300,
                queryHash="B4D1E0C2",
            )
        if me in (0, 1):
            new, old, at = ("SECONDARY", "PRIMARY", election[0]) if me == 0 else ("PRIMARY", "SECONDARY", election[1])
            log.line(run.at(at), "REPL", 21358, "ReplCoord-1", "Replica set state transition", {"newState": new, "oldState": old})
        log.write(folder / "mongod.log")
        nodes.append(run)
    run = nodes[0]
    lag_start = next(s for s in range(*lag) if lag_of(2, s) >= 12)
    lag_end = max(s for s in range(*lag) if lag_of(2, s) >= 12)
    result = truth("replica-set", Config(version="7.0.12"), replica_set.__doc__, [])
    result["nodes"] = [f"{h}:27017" for h in hosts]
    result["node_findings"] = {
        f"{hosts[0]}:27017": [finding(run, "cache_pressure", *incident, tolerance_s=5)],
        f"{hosts[2]}:27017": [finding(run, "disk_saturation", *lag, tolerance_s=15)],
    }
    result["cross_node"] = [
        finding(
            run,
            "primary_change",
            election[0],
            election[1],
            tolerance_s=5,
            from_node=f"{hosts[0]}:27017",
            to_node=f"{hosts[1]}:27017",
        ),
        finding(run, "replication_lag", lag_start, lag_end, tolerance_s=30, node=f"{hosts[2]}:27017"),
    ]
    return result


SCENARIOS: dict[str, Callable[[Path], dict]] = {
    "checkpoint-stall": checkpoint_stall,
    "cache-fill-collscan": cache_fill_collscan,
    "dirty-cache-checkpoints-8.0": dirty_cache_checkpoints_80,
    "read-tickets-4.2": read_tickets_42,
    "write-queue-7.0": write_queue_70,
    "ttl-burst-6.0": ttl_burst_60,
    "disk-saturation": disk_saturation,
    "dhandle-pressure": dhandle_pressure,
    "throughput-dip": throughput_dip,
    "restart-and-gap": restart_and_gap,
    "healthy": healthy,
    "raised-thresholds": raised_thresholds,
    "replica-set": replica_set,
}


def build(name: str, root: Path = HERE) -> Path:
    out = root / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    result = SCENARIOS[name](out)
    result["description"] = " ".join(result["description"].split())
    (out / "truth.json").write_text(json.dumps(result, indent=1) + "\n")
    return out


def main() -> None:
    for name in sys.argv[1:] or SCENARIOS:
        print("built", build(name))


if __name__ == "__main__":
    main()
