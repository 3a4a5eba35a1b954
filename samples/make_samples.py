"""Builds the bundled demo node: `samples/diagnostic.data/` (FTDC) and `samples/mongod.log`
(4.4+ JSON log) of one mongod 7.0 replica-set member, 90 minutes at 1 s, written through
the scenario simulator (samples/simulate.py).

The incident, about 50 minutes in: a long COLLSCAN (an aggregate on shop.orders) starts at
09:49:10 and fills the cache; the checkpoint due at 09:50:00 runs for 140 s; dirty bytes pass
the 20 % trigger, application threads evict, the 8 write tickets throughput probing left run
out with writers queued, and write latency climbs until the checkpoint ends. Updates that
waited for cache meanwhile are logged as WRITE lines of their own (no COMMAND line).
mongod is killed at the end: the last chunk survives only in metrics.interim.
Deterministic: `python -m samples.make_samples` (from the checkout) rebuilds identical files.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import replace
from pathlib import Path

from samples.simulate import Config, JsonLog, Tick, write_ftdc

HERE = Path(__file__).resolve().parent
T0 = dt.datetime(2024, 5, 14, 9, 0, 0, tzinfo=dt.timezone.utc)
SAMPLES = 90 * 60 + 35  # the last chunk is still open: metrics.interim holds 1 + 30 samples
CONFIG = Config(
    version="7.0.12",
    layout="7.0",
    host="db-prod-01.example.net",
    replica_set="rs0",
    cache_gb=8,
    cores=8,
    memory_mb=32000,
    first_checkpoint=0,
    seed=7,
)
TICKETS = 8
INCIDENT_CHECKPOINT_AT, INCIDENT_CHECKPOINT_S = 3000, 140
SCAN_START, SCAN_END = 2950, 3020
OPEN = (
    "create,cache_size=8192M,session_max=33000,eviction=(threads_min=4,threads_max=4),"
    "file_manager=(close_idle_time=600,close_scan_interval=10,close_handle_minimum=2000),"
    "statistics_log=(wait=0),verbose=[recovery_progress,checkpoint_progress,compact_progress]"
)


class Demo:
    """The demo node second by second: dirty data builds with writes and drains at checkpoints;
    a long checkpoint lets it pile up past the trigger while the scan fills the cache."""

    def __init__(self) -> None:
        self.rng = random.Random(7)
        self.cache, self.dirty = 0.78, 0.02

    def __call__(self, s: int) -> Tick:
        r = self.rng
        scanning = SCAN_START <= s < SCAN_END
        long_checkpoint = INCIDENT_CHECKPOINT_AT <= s < INCIDENT_CHECKPOINT_AT + INCIDENT_CHECKPOINT_S
        checkpoint = (
            s % 60 < 2 and not long_checkpoint or (long_checkpoint and s >= INCIDENT_CHECKPOINT_AT + INCIDENT_CHECKPOINT_S - 2)
        )
        self.dirty += 0.0007 + (0.0012 if scanning or long_checkpoint else 0) - (0.04 if checkpoint else 0)
        self.dirty = max(0.01, min(self.dirty, 0.24))
        target = 0.96 if scanning or self.dirty > 0.2 else 0.79
        self.cache += (target - self.cache) * 0.05 + r.uniform(-0.0005, 0.0005)
        pressure = self.dirty > 0.2 or self.cache > 0.95
        tick = Tick(
            reads=r.uniform(2000, 2400),
            writes=r.uniform(900, 1100) / (3 if self.dirty > 0.2 else 1),
            commands=r.uniform(300, 400),
            read_latency_us=r.uniform(150, 250) * (8 if pressure else 1),
            write_latency_us=r.uniform(250, 400) * (120 if pressure else 1),
            command_latency_us=90,
            cache_fill=self.cache,
            dirty=self.dirty,
            updates=self.dirty / 2,
            read_out=r.randint(0, 3),
            write_out=TICKETS if pressure else r.randint(0, 3),
            read_total=TICKETS,
            write_total=TICKETS,
            write_queue=r.randint(20, 60) if pressure else 0,
            collscans=1 if s == SCAN_END else 0,
            scanned_objects=r.uniform(6000, 7200) + (2_500_000 if scanning else 0),
            returned=r.uniform(4000, 4800),
            disk_util=0.99 if checkpoint or long_checkpoint or scanning else r.uniform(0.15, 0.3),
            disk_await_ms=r.uniform(0.6, 1.2),
            connections=120,
            connections_created=r.randint(0, 2) + (3 if pressure else 0),
            collect_ms=r.uniform(1, 4) * (30 if pressure else 1),
            checkpoint_seconds=float(INCIDENT_CHECKPOINT_S) if s == INCIDENT_CHECKPOINT_AT else 2.0,
        )
        if pressure:
            tick = replace(
                tick, app_evicted_pages=r.uniform(400, 900), app_evict_us=r.uniform(2e6, 6e6), app_wait_us=r.uniform(5e6, 15e6)
            )
        return tick


def write_log(run, path: Path) -> None:
    log = JsonLog(CONFIG)
    log.startup(T0 - dt.timedelta(days=1), OPEN)
    log.checkpoints(run)
    at = run.at
    log.slow(
        at(SCAN_END) + dt.timedelta(milliseconds=412),
        "conn4411",
        "shop.orders",
        {
            "aggregate": "orders",
            "pipeline": [{"$match": {"status": "pending", "total": {"$gt": 500}}}],
            "cursor": {},
            "$db": "shop",
        },
        "COLLSCAN",
        (SCAN_END - SCAN_START) * 1000 + 412,
        keys=0,
        docs=175_000_000,
        nreturned=212,
        queryHash="5C5B0E3A",
        storage={"data": {"bytesRead": 98_000_000_000, "timeReadingMicros": 41_000_000}},
    )
    rng = random.Random(11)
    for s in sorted(rng.sample(range(60, SAMPLES), 12)):
        log.slow(
            at(s) + dt.timedelta(milliseconds=100),
            f"conn{rng.randint(100, 999)}",
            "shop.customers",
            {"find": "customers", "filter": {"email": "x"}, "$db": "shop"},
            "IXSCAN { email: 1 }",
            rng.randint(101, 180),
            queryHash="8E1B7F02",
        )
    for s in range(INCIDENT_CHECKPOINT_AT + 15, INCIDENT_CHECKPOINT_AT + INCIDENT_CHECKPOINT_S, 9):
        ms = rng.randint(1500, 9000)
        log.slow(
            at(s) + dt.timedelta(milliseconds=250),
            f"conn{rng.randint(100, 999)}",
            "shop.orders",
            {"q": {"_id": {"$oid": "66433a2f9d1e8b0012345678"}}, "u": {"$set": {"status": "paid"}}},
            "IDHACK",
            ms,
            component="WRITE",
            op_type="update",
            nMatched=1,
            nModified=1,
            storage={"timeWaitingMicros": {"cache": ms * 900}},
        )
    log.write(path)


def main() -> None:
    run = write_ftdc(HERE / "diagnostic.data", CONFIG, T0, SAMPLES, Demo(), flush=False)
    write_log(run, HERE / "mongod.log")


if __name__ == "__main__":
    main()
