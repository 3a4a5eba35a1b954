"""`disk_saturation`: a device busy all the time with requests waiting longer.

Utilisation alone says little (a device doing parallel I/O reads 100 % long
before it is full, and 100 % during checkpoints is normal, docs/metrics.md §11);
saturation is the device nearly always busy (≥ UTIL_PCT) while requests take
AWAIT_FACTOR times their usual time (their wait while the device is not busy), sustained for MIN_S, and mostly outside
checkpoints. Linux pressure stall information (`io.full`), where recorded,
is reported beside it. A device reading FOREIGN times what mongod read from its
data files (WiredTiger's block manager counts every byte it reads; the page
cache only lowers the device's share) was busy with another process's I/O:
the finding says so, with what mongod itself read and wrote.
"""

from __future__ import annotations

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series.windows import overlap_s, sustained
from analysis.text import duration, ms, span

KIND = "disk_saturation"
UTIL_PCT = 90.0
AWAIT_FACTOR = 3.0
MIN_AWAIT_MS = 10.0
MIN_S = 60.0
MERGE_S = 15.0
OUTSIDE_CHECKPOINTS = 0.5  # at least this share of the window outside checkpoints
CRITICAL_AWAIT_MS = 100.0
# The device read this many times what mongod read (read-ahead reads a little more than asked, never several times it)...
FOREIGN = 4.0
# ...and this many MB/s more: the rest is another process's.
FOREIGN_MIN_MB = 20.0
# mongod's own reads and writes to its data files at least this share of the device's throughput: its I/O was the
# load, and doing less at once relieves the device (its journal is not counted, so the share errs low, never high).
MOSTLY_MONGOD = 0.5
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "Utilisation alone says little: a device doing parallel I/O reads 100 % long before it is full, and is 100 % "
    f"busy during checkpoints as a matter of course. Saturation is a device busy at least {UTIL_PCT:g} % of the time "
    f"while requests take {AWAIT_FACTOR:g} times their usual time (and at least {MIN_AWAIT_MS:g} ms), for at "
    f"least {MIN_S:g} s, mostly outside checkpoints. Linux pressure stall information is reported beside it "
    f"where recorded. Critical: {CRITICAL_AWAIT_MS:g} ms or more per request. A device reading at least {FOREIGN:g} times "
    f"(and {FOREIGN_MIN_MB:g} MB/s more than) what mongod read from its data files was busy with another process's I/O."
)
DETECTOR = Detector(
    order=50,
    kinds=(KIND,),
    names=("disk saturation",),
    method=METHOD,
    root="resource",
    reads=(
        "disk_util_pct.",
        "disk_queue.",
        "disk_await_ms.",
        "disk_mb_per_s.",
        "disk_read_mb_per_s.",
        "mongod_read_mb_per_s",
        "mongod_write_mb_per_s",
        "io_full_pct",
    ),
    sets_off=("checkpoint_stall", "cache_pressure", "ticket_exhaustion", "throughput_dip", "replication_lag"),
    panels=(("disk busy, %", ("disk_util_pct.",), False), ("await, ms", ("disk_await_ms.",), False)),
)


def _windows_not_checked(ctx: Context) -> Finding:
    """An `info` finding: a Windows node's PhysicalDisk counters are read (requests, bytes, their time), but hold no busy time."""
    devices = [n.split(".", 2)[2] for n in ctx.resolved.matching("disk.windows_reads.")]
    return Finding(
        kind=KIND,
        severity="info",
        start=ctx.first,
        end=ctx.last,
        subject="Disk saturation not checked",
        statement=f"this Windows node's PhysicalDisk counters ({', '.join(devices)}) do not record the time its disks were busy",
        reasoning=(
            "mongod on Windows samples PhysicalDisk performance counters per disk: reads, writes, bytes and the time requests took "
            "(read: time per request, requests in flight, IOPS and throughput are in the disk panels), but not the time a disk was busy "
            f"(% Idle Time), and saturation needs a disk busy at least {UTIL_PCT:g} % of the time, so nothing is said either way about it."
        ),
        evidence={
            "layout": "windows PhysicalDisk",
            "devices": devices,
            "not_recorded": "% Idle Time",
            "metrics": [p for n in ctx.resolved.matching("disk.windows_") if (p := ctx.resolved.path(n))],
        },
    )


def _another_process(rows: pl.DataFrame, dev: str) -> dict[str, float] | None:
    """The device's reads against mongod's own (MB/s over the window) when another process did most of them, else None."""
    device = f"disk_read_mb_per_s.{dev}"
    if device not in rows.columns or "mongod_read_mb_per_s" not in rows.columns:
        return None
    read, own = float(rows[device].mean() or 0), float(rows["mongod_read_mb_per_s"].mean() or 0)
    if read < FOREIGN * own or read - own < FOREIGN_MIN_MB:
        return None
    wrote = rows["mongod_write_mb_per_s"].mean() if "mongod_write_mb_per_s" in rows.columns else None
    return {
        "device_read_mb_per_s": round(read, 1),
        "mongod_read_mb_per_s": round(own, 1),
        "mongod_write_mb_per_s": None if wrote is None else round(float(wrote), 1),
    }


def _told(other: dict[str, float]) -> str:
    """`the device read 380 MB/s while mongod read 12 MB/s from its data files and wrote 30 MB/s`."""
    wrote = other["mongod_write_mb_per_s"]
    return (
        f"the device read {other['device_read_mb_per_s']:,.0f} MB/s while mongod read {other['mongod_read_mb_per_s']:,.0f} MB/s "
        "from its data files" + (f" and wrote {wrote:,.0f} MB/s" if wrote is not None else "")
    )


def _own_io(rows: pl.DataFrame, throughput: float | None) -> float | None:
    """mongod's reads and writes to its data files (MB/s over the window), where they and the device's are recorded."""
    own = [c for c in ("mongod_read_mb_per_s", "mongod_write_mb_per_s") if c in rows.columns]
    if throughput is None or not own:
        return None
    return float(sum(rows[c].mean() or 0 for c in own))


def _advice(throughput: float | None, peak_wait: float, other: dict[str, float] | None, own: float | None) -> list:
    """A volume too slow for mongod's own I/O wants more of it, or less at once; one busy with another process's wants
    that process moved. Doing less at once is advised only where mongod's own I/O was most of the device's."""
    resize = advise(
        "resize",
        "Provision more IOPS and throughput for this volume, or move the data (and journal) to faster storage",
        f"the device delivered {throughput or 0:,.0f} MB/s at {peak_wait:,.0f} ms per request",
    )
    if other is not None:
        return [
            advise(
                "investigate",
                "Find the process reading this volume besides mongod (a backup or file copy, antivirus, another database) and "
                "move it to another volume or a quiet hour",
                _told(other),
            ),
            resize,
        ]
    if own is None or not throughput or own < MOSTLY_MONGOD * throughput:
        return [resize]
    return [
        resize,
        advise(
            "batch_writes",
            "Reduce what the node writes or reads at once: the slow operations of this window, index builds, "
            "and bulk loads scheduled at the same time",
            f"mongod's own reads and writes to its data files were {own:,.0f} MB/s of the device's {throughput:,.0f} MB/s",
        ),
    ]


def detect(ctx: Context) -> list[Finding]:
    devices = [c.split(".", 1)[1] for c in ctx.series.columns if c.startswith("disk_util_pct.")]
    if not devices and ctx.resolved.matching("disk.windows_reads."):
        return [_windows_not_checked(ctx)]
    if not devices:
        return [ctx.not_checked(KIND, "Disk saturation", ["systemMetrics.disks"])]
    findings = []
    for dev in devices:
        util, wait = f"disk_util_pct.{dev}", f"disk_await_ms.{dev}"
        if not ctx.has(wait):
            continue
        # The device's usual wait is its wait when not busy: over all samples, a saturation longer than
        # half the data would be its own baseline (and checkpoints' bursts are not usual either).
        idle = ctx.series.select(pl.col(wait).filter(pl.col(util) < UTIL_PCT)).to_series()
        usual = (idle.median() if idle.len() else ctx.series[wait].median()) or 0.0
        bar = max(MIN_AWAIT_MS, AWAIT_FACTOR * usual)
        condition = (pl.col(util) >= UTIL_PCT) & (pl.col(wait) >= bar)
        for window in sustained(ctx.series, condition, min_s=MIN_S, merge_s=MERGE_S, interval=True):
            in_checkpoints = sum(overlap_s(window.start, window.end, c.start, c.end) for c in ctx.checkpoints)
            if window.seconds and in_checkpoints / window.seconds > 1 - OUTSIDE_CHECKPOINTS:
                continue
            rows = window.rows(ctx.series)
            peak_wait = float(rows[wait].max())
            mb = f"disk_mb_per_s.{dev}"
            throughput = float(rows[mb].mean()) if mb in rows.columns else None
            queue = f"disk_queue.{dev}"
            depth = float(rows[queue].mean()) if queue in rows.columns else None
            psi = float(rows["io_full_pct"].mean()) if "io_full_pct" in rows.columns else None
            details = [f"await {ms(peak_wait)} at peak against {ms(usual)} usually"]
            if depth is not None:
                details.append(f"{depth:,.1f} requests in flight on average")
            if throughput is not None:
                details.append(f"{throughput:,.0f} MB/s")
            if psi is not None:
                details.append(f"every task stalled on I/O {psi:.0f} % of the time (PSI io.full)")
            other = _another_process(rows, dev)
            if other is not None:
                details.append(_told(other) + ": another process on the host did the rest")
            findings.append(
                Finding(
                    kind=KIND,
                    severity="critical" if peak_wait >= CRITICAL_AWAIT_MS else "warning",
                    start=window.start,
                    end=window.end,
                    subject=f"Disk {dev} saturated for {duration(window.seconds)}"
                    + (" by another process's reads" if other is not None else ""),
                    statement=f"≥ {UTIL_PCT:.0f} % busy, requests waiting {ms(peak_wait)}"
                    + (f"; {_told(other)}" if other is not None else ""),
                    reasoning=(
                        f"{dev} was at least {UTIL_PCT:.0f} % busy from {span(window.start, window.end)} "
                        f"({duration(window.seconds)}, {duration(window.seconds - in_checkpoints)} of it outside checkpoints): "
                        + "; ".join(details)
                        + "."
                    ),
                    evidence={
                        "metrics": ctx.paths(
                            util,
                            wait,
                            queue,
                            mb,
                            "io_full_pct",
                            *((f"disk_read_mb_per_s.{dev}", "mongod_read_mb_per_s") if other else ()),
                        ),
                        "device": dev,
                        "util_pct_mean": round(float(rows[util].mean()), 1),
                        "await_ms_peak": round(peak_wait, 1),
                        "baseline": {"await_ms": round(usual, 2)},
                        "thresholds": {"util_pct": UTIL_PCT, "await_ms": round(bar, 1), "sustained_s": MIN_S},
                        "seconds_in_checkpoints": round(in_checkpoints, 1),
                        **({"mechanism": "another_process", **other} if other is not None else {}),
                    },
                    recommendations=_advice(throughput, peak_wait, other, _own_io(rows, throughput)),
                )
            )
    return findings
