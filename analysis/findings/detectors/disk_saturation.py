"""`disk_saturation`: a device busy all the time with requests waiting longer, and whose I/O it was.

Utilisation alone says little (a device doing parallel I/O reads 100 % long
before it is full, and 100 % during checkpoints is normal, docs/metrics.md §11);
saturation is the device nearly always busy (≥ UTIL_PCT) while requests take
AWAIT_FACTOR times their usual time (their wait while the device is not busy), sustained for MIN_S, and mostly outside
checkpoints. Linux pressure stall information (`io.full`), where recorded and it moved at some time in the capture,
is reported beside it (a counter at zero throughout is a host that does not keep it, not a disk no task waited on). What the device read and wrote is set against what mongod
itself did: WiredTiger's block manager counts every byte mongod read from its data files
and wrote to them (checkpoints' share among the writes), its log every byte written to the
journal. A device moving FOREIGN times what mongod did, in either direction, was busy with
another process's I/O; where mongod's own I/O was most of the device's, the finding names
which of its work it was.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import polars as pl

from analysis.advice.recommendation import Recommendation, advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.series.windows import Window, overlap_s, sustained
from analysis.text import duration, mb_per_s, ms, span
from ftdc.frames import TIME_COLUMN

KIND = "disk_saturation"
UTIL_PCT = 90.0
AWAIT_FACTOR = 3.0
MIN_AWAIT_MS = 10.0
MIN_S = 60.0
MERGE_S = 15.0
OUTSIDE_CHECKPOINTS = 0.5  # at least this share of the window outside checkpoints
CRITICAL_AWAIT_MS = 100.0
# The device read (or wrote) this many times what mongod read from its data files (or wrote to them and its journal):
# read-ahead reads a little more than asked, a file system's own journal writes a little more, never several times it...
FOREIGN = 4.0
# ...and this many MB/s more: the rest is another process's.
FOREIGN_MIN_MB = 20.0
# mongod's own reads and writes (its data files and its journal) at least this share of the device's throughput: its I/O
# was the load, and doing less at once relieves the device.
MOSTLY_MONGOD = 0.5
# A device this busy in its usual hours (the median of the capture outside the window) has no headroom for a burst:
# more IOPS is the fix there, and only there; a burst on a device usually idle is its cause's to answer.
USUAL_BUSY_PCT = 70.0
# A device moving at most this many times its usual bytes (the median outside the window) was asked no more than usual:
# saturated, it slowed itself (a cloud volume out of burst credits or throttled, a degraded array, shared storage).
SLOWED = 1.5
# mongod's own work, as its statistics split it: what it is said as, and the fix that does less of it at once.
WORK = {
    "reads": "reads from its data files into its cache",
    "checkpoints": "checkpoint writes",
    "eviction": "writes of dirty pages between checkpoints (eviction)",
    "data_writes": "writes to its data files",
    "journal": "journal writes",
}
LESS_READING = (
    "Find the operations that read from disk in this window (collection scans, index builds, queries over more data than "
    "the cache holds: the slow operations of this window) and index, restrict or reschedule them"
)
LESS_WRITING = (
    "Spread what the node writes at once: bulk loads, mass updates and deletes, and index builds of this window, in "
    "smaller batches or at a quieter hour"
)
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    "Utilisation alone says little: a device doing parallel I/O reads 100 % long before it is full, and is 100 % "
    f"busy during checkpoints as a matter of course. Saturation is a device busy at least {UTIL_PCT:g} % of the time "
    f"while requests take {AWAIT_FACTOR:g} times their usual time (and at least {MIN_AWAIT_MS:g} ms), for at "
    f"least {MIN_S:g} s, mostly outside checkpoints. Linux pressure stall information is reported beside it "
    f"where recorded and above zero at some time in the capture. Critical: {CRITICAL_AWAIT_MS:g} ms or more per request. A device reading at least {FOREIGN:g} times "
    f"(and {FOREIGN_MIN_MB:g} MB/s more than) what mongod read from its data files, or writing that much more than mongod "
    "wrote to them and to its journal, was busy with another process's I/O; one moving at most "
    f"{SLOWED:g} times its usual bytes slowed itself. More IOPS is advised only for a device at least "
    f"{USUAL_BUSY_PCT:g} % busy in its usual hours too."
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
        "disk_write_mb_per_s.",
        "mongod_read_mb_per_s",
        "mongod_write_mb_per_s",
        "checkpoint_write_mb_per_s",
        "journal_write_mb_per_s",
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
            "missing": ["% Idle Time"],
            "metrics": [p for n in ctx.resolved.matching("disk.windows_") if (p := ctx.resolved.path(n))],
        },
    )


def _io(rows: pl.DataFrame, dev: str) -> dict[str, float | None]:
    """What the device read and wrote over the window, and what mongod itself did (MB/s; None where not recorded)."""

    def mean(column: str) -> float | None:
        return round(float(aggregates.mean(rows[column]) or 0), 1) if column in rows.columns else None

    return {
        "device_read_mb_per_s": mean(f"disk_read_mb_per_s.{dev}"),
        "device_write_mb_per_s": mean(f"disk_write_mb_per_s.{dev}"),
        "mongod_read_mb_per_s": mean("mongod_read_mb_per_s"),
        "mongod_write_mb_per_s": mean("mongod_write_mb_per_s"),
        "checkpoint_write_mb_per_s": mean("checkpoint_write_mb_per_s"),
        "journal_write_mb_per_s": mean("journal_write_mb_per_s"),
    }


def _own_writes(io: dict[str, float | None]) -> float | None:
    """mongod's writes to its data files and its journal; unknown without the journal's count (it can be as much again)."""
    if io["mongod_write_mb_per_s"] is None or io["journal_write_mb_per_s"] is None:
        return None
    return io["mongod_write_mb_per_s"] + io["journal_write_mb_per_s"]


def _foreign(io: dict[str, float | None]) -> list[str]:
    """The directions ("reads", "writes") in which the device moved FOREIGN times, and FOREIGN_MIN_MB more than, mongod did."""
    out = []
    for direction, device, own in (
        ("reads", io["device_read_mb_per_s"], io["mongod_read_mb_per_s"]),
        ("writes", io["device_write_mb_per_s"], _own_writes(io)),
    ):
        if device is not None and own is not None and device >= FOREIGN * own and device - own >= FOREIGN_MIN_MB:
            out.append(direction)
    return out


def _own_total(io: dict[str, float | None]) -> float | None:
    """mongod's reads and writes (data files and journal), where both are recorded."""
    read, written = io["mongod_read_mb_per_s"], _own_writes(io)
    return None if read is None or written is None else read + written


def _own_work(io: dict[str, float | None]) -> tuple[str, float]:
    """The largest of mongod's own I/O: its reads, its checkpoints' writes, its other writes to its data files (eviction's,
    the checkpoints' share being recorded), its journal."""
    written, checkpoints = io["mongod_write_mb_per_s"] or 0.0, io["checkpoint_write_mb_per_s"]
    parts = {"reads": io["mongod_read_mb_per_s"] or 0.0, "journal": io["journal_write_mb_per_s"] or 0.0}
    if checkpoints is None:
        parts["data_writes"] = written
    else:
        parts |= {"checkpoints": min(checkpoints, written), "eviction": max(0.0, written - checkpoints)}
    return max(parts.items(), key=lambda part: part[1])


def _told(io: dict[str, float | None]) -> str:
    """`the device read 166 MB/s and wrote 14 MB/s while mongod read 6.0 MB/s from its data files and wrote 1.6 MB/s to
    them and 0.4 MB/s to its journal`."""
    device = [
        f"{verb} {mb_per_s(v)}"
        for verb, v in (("read", io["device_read_mb_per_s"]), ("wrote", io["device_write_mb_per_s"]))
        if v is not None
    ]
    read, written, journal = io["mongod_read_mb_per_s"], io["mongod_write_mb_per_s"], io["journal_write_mb_per_s"]
    if read is None or written is None:
        return f"the device {' and '.join(device)}; what mongod itself read and wrote is not recorded"
    own = f"mongod read {mb_per_s(read)} from its data files and wrote {mb_per_s(written)} to them"
    own += f" and {mb_per_s(journal)} to its journal" if journal is not None else " (its journal's writes not recorded)"
    return f"the device {' and '.join(device)} while {own}"


@dataclass(frozen=True)
class Load:
    """What a saturated device did over its window (MB/s), against its usual hours and against mongod's own I/O."""

    io: dict[str, float | None]  # `_io`
    throughput: float | None  # read and written
    usual_mb: float | None  # its median throughput outside the window
    usual_busy: float | None  # its median busy share (%) outside the window


def usual_of(ctx: Context, column: str, start: dt.datetime, end: dt.datetime) -> float | None:
    """A column's median outside the window: the device's usual hours, as far as the capture holds them (also a slow
    checkpoint's disk against its usual, incidents.root_causes)."""
    if column not in ctx.series.columns:
        return None
    # The one column filtered, not the frame's hundred (each copied, then all but one dropped): 5 ms of CPU a call on
    # the 7.0 sample's 36,722 samples, called twice for each saturated window.
    kept = pl.col(column).filter((pl.col(TIME_COLUMN) < start) | (pl.col(TIME_COLUMN) > end))
    outside = ctx.series.select(kept).to_series().drop_nulls()
    usual = aggregates.median(outside)  # None: no sample outside the window
    return None if usual is None else float(usual)


def _cause(load: Load) -> str | None:
    """Whose I/O filled the device: another process's (it moved FOREIGN times what mongod did, in either direction); none
    more than usual (it moved at most SLOWED times its usual bytes: the device itself slowed); mongod's (its own reads and
    writes most of the device's); or not told apart (None)."""
    if _foreign(load.io):
        return "another_process"
    if load.throughput is not None and load.usual_mb is not None and load.throughput <= SLOWED * load.usual_mb:
        return "device_slowed"
    own = _own_total(load.io)
    if own is not None and load.throughput and own >= MOSTLY_MONGOD * load.throughput:
        return "mongod"
    return None


def _slowed(load: Load) -> str:
    """`it moved 20 MB/s against 20 MB/s usually`."""
    return f"it moved {mb_per_s(load.throughput or 0)} against {mb_per_s(load.usual_mb or 0)} usually"


def _hunt(window: str) -> str:
    """How to find a process whose I/O is past: per-process I/O accounting shows only the I/O of the moment it runs, so
    the schedules of that time of day are read now and the accounting run when the burst comes again."""
    return (
        f"{window}: look now for a job scheduled at that time of day (cron, backup and snapshot schedules); backups, file "
        "copies, antivirus scans, log shipping and other databases are the usual ones. If it recurs at that hour, run the "
        "host's per-process I/O accounting (pidstat -d, iotop) while it lasts: it shows only the I/O of the moment"
    )


def _advice(load: Load, peak_wait: float, window: str) -> list:
    """Advice that fits the cause: another process's I/O wants that process found and moved; a device slower at its usual
    load, the volume itself checked; mongod's own, the work of it that filled the device done less at once; none told
    apart, the processes found. More IOPS only for a device near saturation in its usual hours too."""
    cause, io, throughput = _cause(load), load.io, load.throughput or 0.0
    own = _own_total(io)
    out = []
    if cause == "another_process":
        verb = " and ".join({"reads": "reading", "writes": "writing"}[d] for d in _foreign(io))
        out.append(
            advise(
                "investigate",
                f"Find the process {verb} this volume besides mongod {_hunt(window)}. Move it to another volume or a "
                "quieter hour",
                _told(io),
            )
        )
    elif cause == "device_slowed":
        out.append(
            check_volume(window, _slowed(load) + f", yet was busy all the time with requests waiting up to {ms(peak_wait)}")
        )
    elif cause == "mongod" and own is not None:
        work, rate = _own_work(io)
        out.append(
            advise(
                "change_workload" if work == "reads" else "batch_writes",
                LESS_READING if work == "reads" else LESS_WRITING,
                f"mongod's own reads and writes were {mb_per_s(own)} of the device's {mb_per_s(throughput)}, its {WORK[work]} "
                f"{mb_per_s(rate)} of them",
            )
        )
    else:
        out.append(
            advise(
                "investigate",
                f"Find which processes did I/O on this volume {_hunt(window)}",
                f"mongod's own reads and writes were {mb_per_s(own)} of the device's {mb_per_s(throughput)}"
                if own is not None and throughput
                else _told(io),
            )
        )
    if load.usual_busy is not None and load.usual_busy >= USUAL_BUSY_PCT:
        out.append(
            advise(
                "resize",
                "Provision more IOPS and throughput for this volume, or move the data (and journal) to faster storage",
                f"the device is {load.usual_busy:.0f} % busy in its usual hours (the median of the capture outside this "
                f"window) and delivered {mb_per_s(throughput)} at up to {ms(peak_wait)} per request here",
            )
        )
    return out


def check_volume(window: str, evidence: str) -> Recommendation:
    """The advice for a device slower per request at its usual load: the volume itself checked (also a checkpoint that ran
    long on such a device, incidents.root_causes)."""
    return advise(
        "investigate",
        f"Check the volume itself {window}: a cloud volume's burst balance and throttling (its provider's metrics), "
        "a degraded array or failing disk (the kernel log, SMART), or other tenants of shared storage",
        evidence,
    )


def _by(cause: str | None, load: Load) -> str:
    """What the subject says filled the device."""
    if cause == "another_process":
        return f" by another process's {' and '.join(_foreign(load.io))}"
    if cause == "device_slowed":
        return " at its usual load, the device itself slower"
    if cause == "mongod":
        return f" by mongod's own {WORK[_own_work(load.io)[0]]}"
    return ""


def _headroom(dev: str, usual_busy: float) -> str:
    """`sda is 25 % busy in its usual hours (...): it has headroom outside this window, ...`."""
    said = f"{dev} is {usual_busy:.0f} % busy in its usual hours (the median of the capture outside this window)"
    if usual_busy >= USUAL_BUSY_PCT:
        return said + ": it has no headroom for a burst"
    return said + ": it has headroom outside this window, and more IOPS is not what it lacks"


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
        usual = (aggregates.median(idle) if idle.len() else aggregates.median(ctx.series[wait])) or 0.0
        bar = max(MIN_AWAIT_MS, AWAIT_FACTOR * usual)
        condition = (pl.col(util) >= UTIL_PCT) & (pl.col(wait) >= bar)
        for window in sustained(ctx.series, condition, min_s=MIN_S, merge_s=MERGE_S, interval=True):
            in_checkpoints = sum(overlap_s(window.start, window.end, c.start, c.end) for c in ctx.checkpoints)
            if window.seconds and in_checkpoints / window.seconds > 1 - OUTSIDE_CHECKPOINTS:
                continue
            findings.append(_finding(ctx, dev, window, usual, bar, in_checkpoints))
    return findings


def _psi_moved(ctx: Context) -> bool:
    """Whether the host's I/O pressure counter (PSI io.full) rose at some time in the capture: one at zero throughout
    says the host does not keep it (or nothing wrote it), not that no task waited while the device was saturated."""
    return ctx.has("io_full_pct") and (aggregates.greatest(ctx.series["io_full_pct"]) or 0) > 0


def _finding(ctx: Context, dev: str, window: Window, usual: float, bar: float, in_checkpoints: float) -> Finding:
    """One saturated window of `dev`: its wait, whose I/O filled it, and the advice that fits."""
    util, wait, mb, queue = (f"{c}.{dev}" for c in ("disk_util_pct", "disk_await_ms", "disk_mb_per_s", "disk_queue"))
    rows = window.rows(ctx.series)
    peak_wait, median_wait = aggregates.known(aggregates.greatest(rows[wait])), float(aggregates.median(rows[wait]) or 0)
    depth = aggregates.known(aggregates.mean(rows[queue])) if queue in rows.columns else None
    psi = aggregates.known(aggregates.mean(rows["io_full_pct"])) if _psi_moved(ctx) else None
    load = Load(
        io=_io(rows, dev),
        throughput=aggregates.known(aggregates.mean(rows[mb])) if mb in rows.columns else None,
        usual_mb=usual_of(ctx, mb, window.start, window.end),
        usual_busy=usual_of(ctx, util, window.start, window.end),
    )
    cause = _cause(load)
    details = [f"requests waited a median {ms(median_wait)}, up to {ms(peak_wait)}, against {ms(usual)} usually"]
    if depth is not None:
        details.append(f"{depth:,.1f} requests in flight on average")
    if load.throughput is not None:
        details.append(f"{mb_per_s(load.throughput)} read and written")
    if psi is not None:
        details.append(f"every task stalled on I/O {psi:.0f} % of the time (PSI io.full)")
    details.append(_told(load.io))
    if cause == "another_process":
        details.append(f"another process on the host did the rest of the {' and '.join(_foreign(load.io))}")
    elif cause == "device_slowed":
        details.append(_slowed(load) + ": neither mongod nor another process asked more of it, the device itself slowed")
    elif cause == "mongod":
        work, rate = _own_work(load.io)
        details.append(f"mongod's own I/O was most of the device's, its {WORK[work]} {mb_per_s(rate)} of it")
    if load.usual_busy is not None:
        details.append(_headroom(dev, load.usual_busy))
    # The root cause's words when this finding starts its incident: whose I/O it was, with the numbers that show it (the
    # title says only what filled the device).
    told = {
        "another_process": f"{_told(load.io)}: another process on the host did the rest of the "
        + " and ".join(_foreign(load.io)),
        "device_slowed": _slowed(load) + ": neither mongod nor another process asked more of it, the device itself slowed",
        "mongod": f"{_told(load.io)}: mongod's own I/O was most of the device's",
    }.get(cause or "", "")
    return Finding(
        kind=KIND,
        severity="critical" if peak_wait >= CRITICAL_AWAIT_MS else "warning",
        start=window.start,
        end=window.end,
        subject=f"Disk {dev} saturated for {duration(window.seconds)}{_by(cause, load)}",
        statement=f"≥ {UTIL_PCT:.0f} % busy, requests waiting up to {ms(peak_wait)}",
        cause=told,
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
                *(["io_full_pct"] if psi is not None else []),
                f"disk_read_mb_per_s.{dev}",
                f"disk_write_mb_per_s.{dev}",
                "mongod_read_mb_per_s",
                "mongod_write_mb_per_s",
                "checkpoint_write_mb_per_s",
                "journal_write_mb_per_s",
            ),
            "device": dev,
            "util_pct_mean": round(aggregates.known(aggregates.mean(rows[util])), 1),
            "usual_util_pct": None if load.usual_busy is None else round(load.usual_busy, 1),
            "await_ms_median": round(median_wait, 1),
            "await_ms_peak": round(peak_wait, 1),
            "baseline": {"await_ms": round(usual, 2)},
            "thresholds": {
                "util_pct": UTIL_PCT,
                "await_ms": round(bar, 1),
                "sustained_s": MIN_S,
                "usual_util_pct_to_advise_more_throughput": USUAL_BUSY_PCT,
            },
            "seconds_in_checkpoints": round(in_checkpoints, 1),
            "device_usual_mb_per_s": None if load.usual_mb is None else round(load.usual_mb, 1),
            **{name: value for name, value in load.io.items() if value is not None},
            **({"mechanism": "another_process", "another_process_io": _foreign(load.io)} if cause == "another_process" else {}),
            **({"device_slowed": True} if cause == "device_slowed" else {}),
            **({"own_work": _own_work(load.io)[0]} if cause == "mongod" else {}),
        },
        recommendations=_advice(load, peak_wait, f"from {span(window.start, window.end)}"),
    )
