"""`cpu_saturation`: the host's CPUs nearly all busy with more threads runnable than there are cores, and whose CPU it was.

Busy alone is not saturated: a host can run every core flat out with no thread waiting (a batch job sized to the
cores). Saturation is threads waiting for a CPU: /proc/stat's `procs_running` (systemMetrics.cpu.procs_running, a gauge
of the whole host at the sample: the tasks on a core and those queued for one) above the cores
(`num_cpus`, 8.0 `num_logical_cores`): the excess waits. An instant's count can be a burst the scheduler spreads in
a few milliseconds, so it is taken only while the cores were busy BUSY_PCT or more of the interval (every state of
systemMetrics.cpu but idle and iowait, as a share of all the cores' time): the excess had no idle core to go to.
BUSY_PCT is 90 %, not 100 %: the kernel charges its time in ticks of 10 ms (USER_HZ) to one state each, and a busy
scheduler still leaves moments of idle between one task sleeping and the next being balanced onto that core; a tenth
of all the cores' time covers both, as the disk's 90 % busy does for its device (disk_saturation). Sustained MIN_S
(a minute, merging dips up to MERGE_S), like a disk's saturation: shorter is a burst, not a saturated host; and the
window as a whole saturated (busy BUSY_PCT on average, more runnable than cores at the median sample), so that instants
of saturation seconds apart on a host half idle, caught by a node sampling every 100 ms, make no window.
Critical at CRITICAL_RUNNABLE runnable threads per core (median over the window): each then gets half a core at
most, waiting for a CPU at least as long as it runs, so everything on the host takes twice its time or more.

Whose CPU it was, over the window: steal at least STEAL_PCT of all the cores' time is the hypervisor's (the host's
own work had that much less: a tenth is the busy bar's margin, so without it the host might not have been saturated);
mongod's own CPU time (serverStatus.extra_info.user_time_us + system_time_us) at least MOSTLY_MONGOD of the host's
busy time less steal is mongod's work, and the log's slow operations of the window name it (culprits); less is
another process's. Where mongod's CPU time is not recorded, whose it was is not said. Counters are read as every
derived column reads them: systemMetrics counts since boot and starts again at a reboot (btime moves), a Δ
that goes backwards or crosses a restart is no value. Windows nodes record their CPU as Processor performance counters,
not read here, and a node without procs_running cannot tell busy from saturated: on both, an info finding says the check
was not taken.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.disk_saturation import usual_of
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series.windows import Window, sustained
from analysis.text import duration, span

KIND = "cpu_saturation"
BUSY_PCT = 90.0
RUNNABLE_PER_CORE = 1.0  # more runnable threads than cores: the excess waits for a CPU
CRITICAL_RUNNABLE = 2.0
MIN_S = 60.0
MERGE_S = 15.0
STEAL_PCT = 10.0
MOSTLY_MONGOD = 0.5
# A host this busy in its usual hours (the median of the capture outside the window) has no headroom for a burst: more
# cores is the fix there, and only there (as more IOPS is for a disk, disk_saturation).
USUAL_BUSY_PCT = 70.0
READS = ("cpu_busy_pct", "runnable_per_core", "cpu_steal_pct", "mongod_cpu_pct")
METHOD = (
    "Busy alone is not saturated: every core can run flat out with no thread waiting. A host's CPUs are saturated when "
    f"they are busy at least {BUSY_PCT:g} % of all the cores' time (every state but idle and iowait) while more threads are "
    "runnable than there are cores (/proc/stat's procs_running against the cores: the excess waits for a CPU), for at "
    f"least {MIN_S:g} s, the window as a whole that busy on average with more threads runnable than cores at most samples. The bar is {BUSY_PCT:g} %, not 100 %: the kernel charges its time in 10 ms ticks, and a busy "
    "scheduler still leaves moments of idle between tasks. Critical: "
    f"{CRITICAL_RUNNABLE:g} runnable threads per core or more (median), each waiting for a CPU at least as long as it runs. "
    f"Steal of {STEAL_PCT:g} % of all the cores' time or more is the hypervisor's; otherwise mongod's own CPU time "
    f"(extra_info's user and system time) at least {100 * MOSTLY_MONGOD:.0f} % of the host's busy time is mongod's work, less is "
    "another process's; where mongod's CPU time is not recorded, whose it was is not said. More cores are advised only "
    f"for a host at least {USUAL_BUSY_PCT:g} % busy in its usual hours too."
)
DETECTOR = Detector(
    order=55,
    kinds=(KIND,),
    names=("CPU saturation",),
    method=METHOD,
    root="resource",
    reads=READS,
    sets_off=("latency_rise", "ticket_exhaustion", "throughput_dip", "connection_storm", "replication_lag"),
    panels=(
        ("CPU, % of all cores", ("cpu_busy_pct", "mongod_cpu_pct", "cpu_steal_pct"), False),
        ("runnable threads per core", ("runnable_per_core",), False),
    ),
)


def _of(rows: pl.DataFrame, column: str, how: str = "mean") -> float | None:
    """The column's mean (or median, max) over the window's rows; None where the node does not record it (or no sample
    had a value)."""
    if column not in rows.columns:
        return None
    value = rows.select(getattr(pl.col(column).cast(pl.Float64), how)()).item()
    return None if value is None else float(value)


def _cause(steal: float | None, share: float | None) -> str | None:
    """Whose CPU it was: the hypervisor's (steal STEAL_PCT of all the cores' time or more), mongod's (its own CPU time,
    `share` of the host's busy time less steal, MOSTLY_MONGOD or more), another process's (less); None where mongod's
    time is not recorded."""
    if steal is not None and steal >= STEAL_PCT:
        return "hypervisor"
    if share is None:
        return None
    return "mongod" if share >= MOSTLY_MONGOD else "another_process"


def _told(busy: float, steal: float | None, mongod: float | None) -> str:
    """`the CPUs were 97 % busy, mongod's own CPU time 88 % of all the cores' time, steal 0 %`."""
    said = f"the CPUs were {busy:.0f} % busy"
    said += (
        ", mongod's own CPU time not recorded (serverStatus.extra_info.user_time_us, system_time_us)"
        if mongod is None
        else f", mongod's own CPU time {mongod:.0f} % of all the cores' time"
    )
    return said + ("" if steal is None else f", steal {steal:.0f} %")


def _hunt(window: str) -> str:
    """How to find a process whose CPU use is past: per-process accounting shows only the moment it runs."""
    return (
        f"{window}: look now for a job scheduled at that time of day (cron, backups that compress, antivirus scans, log "
        "shipping, another database or application on the host). If it recurs at that hour, run the host's per-process CPU "
        "accounting (pidstat -u, top) while it lasts: it shows only the CPU of the moment"
    )


def _advice(cause: str | None, told: str, steal: float | None, usual_busy: float | None, window: str) -> list:
    """Advice that fits the cause: the hypervisor's steal, a host with dedicated CPUs; another process, that process found
    and moved; mongod's own work, its operations of the window found and made cheaper; none told apart, the processes
    found. More cores only for a host near saturation in its usual hours too."""
    out = []
    if cause == "hypervisor":
        out.append(
            advise(
                "resize",
                "Move the node to an instance with dedicated CPUs (not burstable, not on an oversubscribed host), or ask the "
                "provider about the host and, on a burstable instance, its CPU credits",
                f"the hypervisor took {steal:.0f} % of all the cores' time {window}",
            )
        )
    elif cause == "another_process":
        out.append(
            advise(
                "investigate",
                f"Find the process using the CPUs besides mongod {_hunt(window)}. Move it to another host or a quieter hour",
                told,
            )
        )
    elif cause == "mongod":
        out.append(
            advise(
                "change_workload",
                "Find the operations that kept mongod's CPUs busy in this window (the slow operations of this window: "
                "collection scans, sorts without an index, large aggregations, unanchored regular expressions) and index, "
                "restrict or reschedule them",
                told,
            )
        )
    else:
        out.append(advise("investigate", f"Find which processes used the CPUs {_hunt(window)}", told))
    if usual_busy is not None and usual_busy >= USUAL_BUSY_PCT and cause != "hypervisor":
        out.append(
            advise(
                "resize",
                "Give the host more cores",
                f"the host's CPUs are {usual_busy:.0f} % busy in its usual hours (the median of the capture outside this "
                "window): it has no headroom for a burst",
            )
        )
    return out


def _by(cause: str | None) -> str:
    """What the subject says kept the CPUs busy."""
    return {
        "hypervisor": ", the hypervisor taking CPU time (steal)",
        "mongod": " by mongod's own work",
        "another_process": " by another process",
    }.get(cause or "", "")


def detect(ctx: Context) -> list[Finding]:
    if not ctx.has("cpu_busy_pct", "runnable_per_core"):
        return [_not_checked(ctx)]
    condition = (pl.col("cpu_busy_pct") >= BUSY_PCT) & (pl.col("runnable_per_core") > RUNNABLE_PER_CORE)
    windows = sustained(ctx.series, condition, min_s=MIN_S, merge_s=MERGE_S, interval=True)
    return [_finding(ctx, w) for w in windows if _saturated_throughout(w.rows(ctx.series))]


def _not_checked(ctx: Context) -> Finding:
    """An `info` finding, so that the node is not said to have passed a check it could not take: a Windows node records
    its CPU as Processor performance counters (ftdc_system_stats_windows.cpp), not read here; any other node lacks the
    CPU states or the runnable threads (4.2's systemMetrics has no procs_running)."""
    if _is_windows(ctx):
        finding = ctx.not_checked(KIND, "CPU saturation", ["Processor counters"])
        return dataclasses.replace(
            finding,
            statement="this Windows node records its CPU as Processor performance counters, which are not read here",
            reasoning=(
                "mongod on Windows samples its host's CPU as Processor performance counters, a layout this analysis does not "
                "read; saturation needs the CPUs' busy time and the threads waiting for a CPU, so nothing is said either way "
                "about it."
            ),
            evidence={"layout": "windows Processor counters", "missing": ["Processor counters"]},
        )
    missing = [path for names, path in _NEEDS if not any(ctx.resolved.has(n) for n in names)]
    # None of them (a macOS node records no systemMetrics): the section by its name, as a customer looks for it.
    return ctx.not_checked(KIND, "CPU saturation", missing if 0 < len(missing) < len(_NEEDS) else ["systemMetrics.cpu"])


# What saturation reads, by the alias names the derived columns need (cpu_busy_pct needs user, system and idle; 8.0 names
# the cores num_logical_cores), and the path a customer would look for.
_NEEDS = (
    (("cpu.user_ms",), "systemMetrics.cpu.user_ms"),
    (("cpu.system_ms",), "systemMetrics.cpu.system_ms"),
    (("cpu.idle_ms",), "systemMetrics.cpu.idle_ms"),
    (("cpu.procs_running",), "systemMetrics.cpu.procs_running"),
    (("cpu.cores",), "systemMetrics.cpu.num_cpus"),
)


def _is_windows(ctx: Context) -> bool:
    """A Windows node: hostInfo's OS, or its disks recorded as PhysicalDisk counters (a node without hostInfo)."""
    return "windows" in (ctx.node.os or "").lower() or bool(ctx.resolved.matching("disk.windows_"))


def _saturated_throughout(rows: pl.DataFrame) -> bool:
    """Whether the window as a whole was saturated, its dips included: busy BUSY_PCT on average and more threads runnable
    than cores at most samples (the median). Samples taken often (every 100 ms) catch instants of saturation a few
    seconds apart on a host half idle, and merged across those dips they would make a window of what was not one."""
    busy, runnable = _of(rows, "cpu_busy_pct"), _of(rows, "runnable_per_core", "median")
    return busy is not None and runnable is not None and busy >= BUSY_PCT and runnable > RUNNABLE_PER_CORE


def _finding(ctx: Context, window: Window) -> Finding:
    """One saturated window: how busy, how many waiting, whose CPU it was, and the advice that fits."""
    rows = window.rows(ctx.series)
    busy = _of(rows, "cpu_busy_pct") or 0.0
    runnable, peak = _of(rows, "runnable_per_core", "median") or 0.0, _of(rows, "runnable_per_core", "max") or 0.0
    steal, mongod = _of(rows, "cpu_steal_pct"), _of(rows, "mongod_cpu_pct")
    # mongod's share of the host's own busy time (steal is not the host's work).
    share = None if mongod is None else mongod / max(busy - (steal or 0.0), 1e-9)
    cause = _cause(steal, share)
    usual_busy = usual_of(ctx, "cpu_busy_pct", window.start, window.end)
    told = _told(busy, steal, mongod)
    details = [
        f"{runnable:.1f} runnable threads per core (median, up to {peak:.1f}): the excess waited for a CPU",
        told,
    ]
    if cause == "hypervisor":
        details.append("the hypervisor took that share of the cores: a noisy neighbour, or an undersized or burstable instance")
    elif share is not None:
        details.append(
            f"mongod's own work was {100 * share:.0f} % of the host's busy time"
            + (": another process had the rest" if cause == "another_process" else "")
        )
    else:
        details.append("whose CPU it was is not said")
    if usual_busy is not None:
        details.append(f"the CPUs are {usual_busy:.0f} % busy in the capture's usual hours (its median outside this window)")
    return Finding(
        kind=KIND,
        severity="critical" if runnable >= CRITICAL_RUNNABLE else "warning",
        start=window.start,
        end=window.end,
        subject=f"CPUs saturated for {duration(window.seconds)}{_by(cause)}",
        statement=f"≥ {BUSY_PCT:.0f} % busy, {runnable:.1f} runnable threads per core",
        cause={
            "hypervisor": f"{told}: the hypervisor took the CPUs",
            "mongod": f"{told}: mongod's own work",
            "another_process": f"{told}: another process on the host",
        }.get(cause or "", ""),
        reasoning=(
            f"The host's CPUs were at least {BUSY_PCT:.0f} % busy with more threads runnable than cores from "
            f"{span(window.start, window.end)} ({duration(window.seconds)}): " + "; ".join(details) + "."
        ),
        evidence={
            "metrics": ctx.paths(*READS),
            "busy_pct_mean": round(busy, 1),
            "runnable_per_core_median": round(runnable, 2),
            "runnable_per_core_peak": round(peak, 2),
            "steal_pct_mean": None if steal is None else round(steal, 1),
            "mongod_cpu_pct_mean": None if mongod is None else round(mongod, 1),
            "mongod_share_of_busy": None if share is None else round(share, 3),
            "usual_busy_pct": None if usual_busy is None else round(usual_busy, 1),
            "thresholds": {
                "busy_pct": BUSY_PCT,
                "runnable_per_core": RUNNABLE_PER_CORE,
                "critical_runnable_per_core": CRITICAL_RUNNABLE,
                "sustained_s": MIN_S,
                "steal_pct": STEAL_PCT,
                "mongod_share": MOSTLY_MONGOD,
                "usual_busy_pct_to_advise_more_cores": USUAL_BUSY_PCT,
            },
            **({"mechanism": cause} if cause is not None else {}),
        },
        recommendations=_advice(cause, told, steal, usual_busy, f"from {span(window.start, window.end)}"),
    )
