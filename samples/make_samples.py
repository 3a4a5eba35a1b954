"""Builds the bundled demo data: `samples/diagnostic.data/` (FTDC, written
with ftdc.writer) and `samples/mongod.log` (4.4+ JSON log lines) for one
synthetic mongod 7.0 standalone, 90 minutes at 1 s.

The incident, about 50 minutes in: a long COLLSCAN starts at 09:49:10 and
fills the cache; the checkpoint due at 09:50:00 runs for 140 s; dirty
bytes pass the 20 % trigger, application threads evict, write tickets run
out and queue, and write latency spikes until the checkpoint ends.
Deterministic: run `python samples/make_samples.py` to rebuild identical files.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
from pathlib import Path

from ftdc.writer import FTDCWriter

HERE = Path(__file__).resolve().parent
T0 = dt.datetime(2024, 5, 14, 9, 0, 0, tzinfo=dt.timezone.utc)
SAMPLES = 90 * 60 + 35  # the last chunk is still open: metrics.interim holds 1 + 30 samples
HOST, PORT, PID, VERSION = "db-prod-01.example.net", 27017, 41873, "7.0.12"
CACHE_BYTES = 8 * 1024**3
CHECKPOINT_EVERY, NORMAL_CHECKPOINT_S = 60, 2
INCIDENT_CHECKPOINT_AT, INCIDENT_CHECKPOINT_S = 3000, 140
SCAN_START, SCAN_END = 2950, 3020
TICKETS = 8


def metadata() -> dict:
    return {
        "start": T0,
        "buildInfo": {"start": T0, "version": VERSION, "gitVersion": "0" * 40, "storageEngines": ["devnull", "wiredTiger"], "end": T0},
        "getCmdLineOpts": {
            "start": T0,
            "argv": ["mongod", "--config", "/etc/mongod.conf"],
            "parsed": {
                "net": {"port": PORT, "bindIp": "0.0.0.0"},
                "replication": {"replSetName": "rs0"},
                "storage": {"dbPath": "/var/lib/mongo", "engine": "wiredTiger", "wiredTiger": {"engineConfig": {"cacheSizeGB": 8.0}}},
            },
            "end": T0,
        },
        "hostInfo": {
            "start": T0,
            "system": {"hostname": HOST, "memSizeMB": 32000, "numCores": 8, "cpuArch": "x86_64"},
            "os": {"type": "Linux", "name": "Ubuntu", "version": "22.04"},
            "end": T0,
        },
        "end": T0,
    }


class Node:
    """Cumulative counters and gauges of the simulated node, advanced one second at a time."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.c = dict.fromkeys(
            "insert query update delete getmore command reads_lat reads_ops writes_lat writes_ops cmd_lat cmd_ops "
            "scanned scanned_objects collscans returned app_evicted app_mod_evicted evict_us wait_us timeouts "
            "ckpts ckpt_total ckpt_bytes bytes_written bytes_read added removed queued_us created "
            "reads writes rsect wsect rtime wtime io_time io_queued user_ms sys_ms iowait_ms idle_ms".split(),
            0,
        )
        self.cache, self.dirty, self.generation, self.last_ckpt_ms = int(0.78 * CACHE_BYTES), int(0.02 * CACHE_BYTES), 0, 1800
        self.connections, self.ckpt_left = 120, 0

    def step(self, s: int) -> None:
        r, c = self.rng, self.c
        scanning = SCAN_START <= s < SCAN_END
        checkpoint_start = s % CHECKPOINT_EVERY == 0 and self.ckpt_left == 0
        if checkpoint_start:
            self.ckpt_left = INCIDENT_CHECKPOINT_S if s == INCIDENT_CHECKPOINT_AT else NORMAL_CHECKPOINT_S
            c["ckpts"] += 1
        in_checkpoint = self.ckpt_left > 0
        slow = in_checkpoint and self.ckpt_left > NORMAL_CHECKPOINT_S or scanning
        # Dirty data grows with writes and drains at checkpoints; a long checkpoint lets it pile up.
        writes = r.randint(900, 1100) // (3 if self.dirty > 0.2 * CACHE_BYTES else 1)
        draining = in_checkpoint and self.ckpt_left <= NORMAL_CHECKPOINT_S
        self.dirty += writes * 6000 + (int(0.0012 * CACHE_BYTES) if slow else 0) - (int(0.04 * CACHE_BYTES) if draining else 0)
        self.dirty = max(int(0.01 * CACHE_BYTES), min(self.dirty, int(0.24 * CACHE_BYTES)))
        target = 0.96 if scanning or self.dirty > 0.2 * CACHE_BYTES else 0.79
        self.cache += int((target * CACHE_BYTES - self.cache) * 0.05) + r.randint(-2**22, 2**22)
        pressure = self.dirty > 0.2 * CACHE_BYTES or self.cache > 0.95 * CACHE_BYTES
        queued = r.randint(20, 60) if pressure else 0
        self.tickets_out = TICKETS if pressure else r.randint(0, 3)
        self.queue = queued
        write_latency_us = r.randint(250, 400) * (120 if pressure else 1)
        for key, v in (("insert", writes // 2), ("update", writes // 3), ("delete", writes // 10), ("query", r.randint(2000, 2400)),
                       ("getmore", r.randint(50, 80)), ("command", r.randint(300, 400))):
            c[key] += v
        c["writes_ops"] += writes
        c["writes_lat"] += writes * write_latency_us
        reads = r.randint(2000, 2400)
        c["reads_ops"] += reads
        c["reads_lat"] += reads * r.randint(150, 250) * (8 if pressure else 1)
        c["cmd_ops"] += r.randint(300, 400)
        c["cmd_lat"] += r.randint(300, 400) * 90
        c["scanned"] += reads * 3
        c["scanned_objects"] += reads * 3 + (2_500_000 if scanning else 0)
        c["returned"] += reads * 2
        if s == SCAN_END:  # collection scans are counted when they finish
            c["collscans"] += 1
        if pressure:
            c["app_evicted"] += r.randint(400, 900)
            c["app_mod_evicted"] += r.randint(300, 700)
            c["evict_us"] += r.randint(2_000_000, 6_000_000)
            c["wait_us"] += r.randint(5_000_000, 15_000_000)
            c["added"] += queued * 10
            c["removed"] += queued * 10
            c["queued_us"] += queued * r.randint(200_000, 900_000)
        if in_checkpoint:
            c["ckpt_bytes"] += r.randint(40, 60) * 2**20
            self.ckpt_left -= 1
            if self.ckpt_left == 0:
                duration = INCIDENT_CHECKPOINT_S if s == INCIDENT_CHECKPOINT_AT + INCIDENT_CHECKPOINT_S - 1 else NORMAL_CHECKPOINT_S
                self.last_ckpt_ms = duration * 1000 - r.randint(0, 300)
                c["ckpt_total"] += self.last_ckpt_ms
                self.generation += 1
        c["bytes_written"] += writes * 4000 + (c["ckpt_bytes"] and r.randint(0, 2**20))
        c["bytes_read"] += r.randint(1, 4) * 2**20 * (30 if scanning else 1)
        self.connections = max(80, self.connections + r.randint(-2, 2) + (3 if pressure else 0))
        c["created"] += r.randint(0, 2) + (3 if pressure else 0)
        io = 990 if in_checkpoint or scanning else r.randint(150, 300)
        c["reads"] += r.randint(100, 200) * (20 if scanning else 1)
        c["writes"] += r.randint(300, 500) * (4 if in_checkpoint else 1)
        c["rsect"] += r.randint(800, 1600) * (40 if scanning else 1)
        c["wsect"] += r.randint(4000, 8000) * (12 if in_checkpoint else 1)
        c["rtime"] += r.randint(50, 120) * (10 if scanning else 1)
        c["wtime"] += r.randint(200, 400) * (10 if in_checkpoint else 1)
        c["io_time"] += io
        c["io_queued"] += io * (12 if slow else 1)
        c["user_ms"] += r.randint(3000, 4000)
        c["sys_ms"] += r.randint(400, 700)
        c["iowait_ms"] += r.randint(2000, 4000) if slow else r.randint(10, 60)
        c["idle_ms"] += r.randint(1500, 3500)
        self.in_checkpoint = int(in_checkpoint)

    def sample(self, s: int) -> dict:
        c, r = self.c, self.rng
        start = T0 + dt.timedelta(seconds=s)
        ss_end = start + dt.timedelta(milliseconds=r.randint(1, 4) * (30 if self.queue else 1))
        tickets = lambda out, q, extra: {  # noqa: E731
            "out": out, "available": TICKETS - out, "totalTickets": TICKETS,
            "normalPriority": {"addedToQueue": extra[0], "removedFromQueue": extra[1], "queueLength": q, "totalTimeQueuedMicros": extra[2]},
        }
        return {
            "start": start,
            "serverStatus": {
                "start": start,
                "host": HOST,
                "version": VERSION,
                "process": "mongod",
                "pid": PID,
                "uptime": float(3600 * 24 + s),
                "localTime": start,
                "connections": {"current": self.connections, "available": 51200 - self.connections,
                                "totalCreated": 5000 + c["created"], "active": min(self.connections, 8 + self.queue), "rejected": 0},
                "globalLock": {"currentQueue": {"total": self.queue, "readers": 0, "writers": self.queue}},
                "opLatencies": {
                    "reads": {"latency": c["reads_lat"], "ops": c["reads_ops"]},
                    "writes": {"latency": c["writes_lat"], "ops": c["writes_ops"]},
                    "commands": {"latency": c["cmd_lat"], "ops": c["cmd_ops"]},
                    "transactions": {"latency": 0, "ops": 0},
                },
                "opcounters": {k: c[k] for k in ("insert", "query", "update", "delete", "getmore", "command")},
                "wiredTiger": {
                    "cache": {
                        "maximum bytes configured": CACHE_BYTES,
                        "bytes currently in the cache": self.cache,
                        "tracked dirty bytes in the cache": self.dirty,
                        "bytes allocated for updates": self.dirty // 2,
                        "pages evicted by application threads": c["app_evicted"],
                        "modified pages evicted by application threads": c["app_mod_evicted"],
                        "operations timed out waiting for space in cache": c["timeouts"],
                    },
                    "thread-yield": {
                        "application thread time evicting (usecs)": c["evict_us"],
                        "application thread time waiting for cache (usecs)": c["wait_us"],
                    },
                    "transaction": {
                        "transaction checkpoint currently running": self.in_checkpoint,
                        "transaction checkpoint generation": self.generation,
                        "transaction checkpoint most recent time (msecs)": self.last_ckpt_ms,
                        "transaction checkpoint scrub time (msecs)": 0,
                        "transaction checkpoint total time (msecs)": c["ckpt_total"],
                        "transaction checkpoints": c["ckpts"],
                    },
                    "block-manager": {"bytes read": c["bytes_read"], "bytes written": c["bytes_written"],
                                      "bytes written for checkpoint": c["ckpt_bytes"]},
                    "concurrentTransactions": {
                        "write": tickets(self.tickets_out, self.queue, (c["added"], c["removed"], c["queued_us"])),
                        "read": tickets(r.randint(0, 3), 0, (0, 0, 0)),
                    },
                },
                "metrics": {
                    "queryExecutor": {"scanned": c["scanned"], "scannedObjects": c["scanned_objects"],
                                      "collectionScans": {"nonTailable": c["collscans"], "total": c["collscans"]}},
                    "document": {"returned": c["returned"], "inserted": c["insert"]},
                },
                "end": ss_end,
            },
            "systemMetrics": {
                "start": ss_end,
                "cpu": {"user_ms": c["user_ms"], "system_ms": c["sys_ms"], "iowait_ms": c["iowait_ms"], "idle_ms": c["idle_ms"]},
                "disks": {"nvme0n1": {
                    "reads": c["reads"], "reads_merged": 0, "read_sectors": c["rsect"], "read_time_ms": c["rtime"],
                    "writes": c["writes"], "writes_merged": 0, "write_sectors": c["wsect"], "write_time_ms": c["wtime"],
                    "io_in_progress": 4 if self.queue else 0, "io_time_ms": c["io_time"], "io_queued_ms": c["io_queued"]}},
                "end": ss_end + dt.timedelta(milliseconds=1),
            },
            "end": ss_end + dt.timedelta(milliseconds=1),
        }


def write_ftdc(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    node = Node(random.Random(7))
    writer = FTDCWriter(directory, metadata=metadata())
    for s in range(SAMPLES):
        node.step(s)
        writer.add_sample(node.sample(s))
    # Stop as a killed mongod does: the open chunk survives only in metrics.interim.
    writer.close(flush=False)


def log_line(t: dt.datetime, s: str, c: str, id_: int, ctx: str, msg: str, attr: dict | None = None) -> str:
    line = {"t": {"$date": t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}+00:00"}, "s": s, "c": c, "id": id_, "ctx": ctx, "msg": msg}
    if attr is not None:
        line["attr"] = attr
    return json.dumps(line, separators=(",", ":"))


def checkpoint_message(t: dt.datetime, text: str) -> dict:
    return {"message": {"ts_sec": int(t.timestamp()), "ts_usec": t.microsecond, "thread": f"{PID}:0x7f1c2a", "session_name": "WT_SESSION.checkpoint",
                        "category": "WT_VERB_CHECKPOINT_PROGRESS", "category_id": 7, "verbose_level": "INFO", "verbose_level_id": 0, "msg": text}}


def slow_query(t: dt.datetime, ctx: str, ns: str, command: dict, plan: str, keys: int, docs: int, nreturned: int, ms: int, **extra) -> str:
    attr = {"type": "command", "ns": ns, "appName": "orders-service", "command": command, "planSummary": plan,
            "keysExamined": keys, "docsExamined": docs, "numYields": docs // 1000, "nreturned": nreturned,
            "queryHash": "5C5B0E3A" if plan == "COLLSCAN" else "8E1B7F02", "reslen": 300 + 200 * nreturned,
            "locks": {"Global": {"acquireCount": {"r": 1 + docs // 1000}}}, **extra, "protocol": "op_msg", "durationMillis": ms}
    return log_line(t, "I", "COMMAND", 51803, ctx, "Slow query", attr)


def write_log(path: Path) -> None:
    at = lambda s, ms=0: T0 + dt.timedelta(seconds=s, milliseconds=ms)  # noqa: E731
    boot = T0 - dt.timedelta(days=1)
    lines = [
        (boot, log_line(boot, "I", "CONTROL", 4615611, "initandlisten", "MongoDB starting",
                        {"pid": PID, "port": PORT, "dbPath": "/var/lib/mongo", "architecture": "64-bit", "host": HOST})),
        (boot, log_line(boot, "I", "CONTROL", 23403, "initandlisten", "Build Info",
                        {"buildInfo": {"version": VERSION, "gitVersion": "0" * 40, "environment": {"distmod": "ubuntu2204"}}})),
        (boot, log_line(boot, "I", "STORAGE", 22315, "initandlisten", "Opening WiredTiger",
                        {"config": "create,cache_size=8192M,session_max=33000,eviction=(threads_min=4,threads_max=4),"
                                   "file_manager=(close_idle_time=600,close_scan_interval=10,close_handle_minimum=2000),"
                                   "statistics_log=(wait=0),verbose=[recovery_progress,checkpoint_progress,compact_progress]"})),
    ]
    for s in range(0, SAMPLES, CHECKPOINT_EVERY):
        duration = INCIDENT_CHECKPOINT_S if s == INCIDENT_CHECKPOINT_AT else NORMAL_CHECKPOINT_S
        if s == INCIDENT_CHECKPOINT_AT:
            for running in range(20, duration, 20):
                t = at(s + running)
                lines.append((t, log_line(t, "I", "WTCHKPT", 22430, "Checkpointer", "WiredTiger message",
                                          checkpoint_message(t, f"Checkpoint has been running for {running} seconds and wrote: {running * 9000} pages ({running * 70} MB)"))))
            t = at(s + duration, 5)
            lines.append((t, log_line(t, "I", "WTCHKPT", 22430, "Checkpointer", "WiredTiger message",
                                      checkpoint_message(t, f"Checkpoint ran for {duration} seconds and wrote: {duration * 9000} pages ({duration * 70} MB)"))))
        t = at(s + duration - 1, 700)
        lines.append((t, log_line(t, "I", "WTCHKPT", 22430, "Checkpointer", "WiredTiger message",
                                  checkpoint_message(t, f"saving checkpoint snapshot min: {1000 + s}, snapshot max: {1000 + s} snapshot count: 0, oldest timestamp: (0, 0) , meta checkpoint timestamp: (0, 0) base write gen: {20000 + s}"))))
    # A long collection scan that starts before the incident and ends inside it.
    scan_ms = (SCAN_END - SCAN_START) * 1000 + 412
    lines.append((at(SCAN_END, 412), slow_query(at(SCAN_END, 412), "conn4411", "shop.orders", {"aggregate": "orders", "pipeline": [{"$match": {"status": "pending", "total": {"$gt": 500}}}], "$db": "shop"},
                                                "COLLSCAN", 0, 175_000_000, 212, scan_ms, storage={"data": {"bytesRead": 98_000_000_000, "timeReadingMicros": 41_000_000}})))
    # Ordinary slow finds and, during the incident, slow writes waiting for cache.
    rng = random.Random(11)
    for s in sorted(rng.sample(range(60, SAMPLES), 12)):
        lines.append((at(s, 100), slow_query(at(s, 100), f"conn{rng.randint(100, 999)}", "shop.customers",
                                             {"find": "customers", "filter": {"email": "x"}, "$db": "shop"}, "IXSCAN { email: 1 }", 1, 1, 1, rng.randint(101, 180))))
    for s in range(INCIDENT_CHECKPOINT_AT + 15, INCIDENT_CHECKPOINT_AT + INCIDENT_CHECKPOINT_S, 9):
        ms = rng.randint(1500, 9000)
        attr = {"type": "update", "ns": "shop.orders", "appName": "orders-service",
                "command": {"q": {"_id": {"$oid": "66433a2f9d1e8b0012345678"}}, "u": {"$set": {"status": "paid"}}},
                "planSummary": "IDHACK", "keysExamined": 1, "docsExamined": 1, "nMatched": 1, "nModified": 1, "numYields": 0,
                "storage": {"timeWaitingMicros": {"cache": ms * 900}}, "durationMillis": ms}
        lines.append((at(s, 250), log_line(at(s, 250), "I", "WRITE", 51803, f"conn{rng.randint(100, 999)}", "Slow query", attr)))
    path.write_text("".join(line + "\n" for _, line in sorted(lines, key=lambda x: x[0])))


def main() -> None:
    write_ftdc(HERE / "diagnostic.data")
    write_log(HERE / "mongod.log")


if __name__ == "__main__":
    main()
