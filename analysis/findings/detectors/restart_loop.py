"""`restart_loop`: mongod restarting over and over, each process living minutes and started again promptly.

A restart is a new process (`derived._bookkeeping`: a pid or a start time not seen before, whose process before
it took its last sample just then). What restarts a crashing mongod is a supervisor, and a supervisor brings it
back within its back-off: systemd's `Restart=` after `RestartSec` (100 ms by default), Docker's restart policy
after a delay doubling from 100 ms, Kubernetes after a back-off doubling from 10 s and capped at 5 minutes
(CrashLoopBackOff). So a restart after a longer wait was someone's (a developer stopping a container and
starting it hours or days later): it ends a loop and starts none. Restarts back within PROMPT_RETURN form a chain;
a chain holding LOOP_RESTARTS or more in a row, each process between them living less than SHORT_LIFE, is one loop,
from its first such run to its last (a loop that lasts weeks, with calmer stretches between its bursts, is one
loop while the supervisor kept bringing the node back): one finding with the count, the first and last restart,
how long each process lived and how long the node was down. The restarts and the FTDC gaps inside it are the
loop's (`node_events` leaves them to it).

Why a process ended is in the log's last lines before each restart (a fatal assertion, a signal), not in FTDC;
what FTDC shows is the out-of-memory killer's signature: mongod's resident memory at the host's or container's
memory limit (hostInfo's memLimitMB, else memSizeMB) when the process ended.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors.record import Detector
from analysis.findings.finding import Finding
from analysis.series import aggregates
from analysis.settings import default_cache_bytes
from analysis.text import dated_span, duration, pct, ram
from ftdc.frames import TIME_COLUMN

KIND = "restart_loop"
LOOP_RESTARTS = 3
SHORT_LIFE = dt.timedelta(minutes=15)
# The longest wait a supervisor makes before starting mongod again: Kubernetes' CrashLoopBackOff cap (5 min; systemd
# and Docker wait less), plus the time the new process takes to start and take its first sample (2 min).
BACK_OFF_CAP = dt.timedelta(minutes=5)
PROMPT_RETURN = BACK_OFF_CAP + dt.timedelta(minutes=2)
# A process that ended with its resident memory within this share of the memory limit was at the limit: the kernel's
# out-of-memory killer ends the largest process when the host or the container has no page left to give.
AT_LIMIT = 0.9
# Where each process's resident memory is read: its samples in the last minute before it ended.
LAST_MINUTE = dt.timedelta(minutes=1)
# How many lifetimes and downtimes the text lists one by one; more are told as a range and a median.
LISTED = 6
# How it decides, for the report's readers (the values, not their names).
METHOD = (
    f"A restart is a new process: its pid changed, or its uptime went back, and the process before it took no sample "
    f"afterwards (files that overlap in time interleave one process's samples, which is no restart). A supervisor brings "
    f"a crashing mongod back within seconds to a few minutes (systemd's Restart=, Docker's restart policy; Kubernetes' "
    f"back-off is capped at {duration(BACK_OFF_CAP.total_seconds())}): a node down longer than "
    f"{duration(PROMPT_RETURN.total_seconds())} (that cap, and 2 minutes for the new process to start) was stopped and "
    f"started by someone, and is no loop. {LOOP_RESTARTS} or more prompt restarts in a row, each process living less than "
    f"{duration(SHORT_LIFE.total_seconds())}, are a restart loop; the loop lasts while the node keeps coming back promptly, "
    "however long, and is one finding with the count, the first and last restart, how long each process lived and how long "
    f"the node was down. A process whose resident memory was within {pct(round(1 - AT_LIMIT, 2))} of the host's or container's memory "
    "limit when it ended bears the out-of-memory killer's signature. Why a process ended is otherwise in the log's last "
    "lines before each restart (a fatal assertion, a signal), not in FTDC."
)
DETECTOR = Detector(
    order=100,
    kinds=(KIND,),
    names=("restart loop",),
    method=METHOD,
    reads=("resident_mb", "cache_max_bytes"),
    attributed=False,
    root="restart",
    sets_off=("throughput_dip", "connection_storm"),  # each restart drops the work and reconnects the clients
    panels=(("operations/s", ("ops_per_s",), False), ("memory, MB (mongod resident)", ("resident_mb",), False)),
)


@dataclass(frozen=True)
class Restart:
    before: dt.datetime  # the old process's last sample
    after: dt.datetime  # the new process's first sample

    @property
    def down_s(self) -> float:
        return (self.after - self.before).total_seconds()


@dataclass(frozen=True)
class Loop:
    restarts: tuple[Restart, ...]

    @property
    def start(self) -> dt.datetime:
        """The last sample of the process before the first restart."""
        return self.restarts[0].before

    @property
    def end(self) -> dt.datetime:
        """The first sample of the last process."""
        return self.restarts[-1].after

    @property
    def lives_s(self) -> list[float]:
        """How long each process started and ended within the loop was sampled, in order."""
        return [(b.before - a.after).total_seconds() for a, b in zip(self.restarts, self.restarts[1:])]

    @property
    def downs_s(self) -> list[float]:
        """How long the node was down at each restart: the old process's last sample to the new one's first."""
        return [r.down_s for r in self.restarts]

    def holds(self, when: dt.datetime) -> bool:
        return self.start <= when <= self.end


def restarts_of(series: pl.DataFrame) -> list[Restart]:
    """Each restart of a series (its `restart` flag), with the old process's last sample and the new one's first."""
    marks = series.select(TIME_COLUMN, "restart", previous=pl.col(TIME_COLUMN).shift(1)).filter(pl.col("restart"))
    return [Restart(r["previous"], r[TIME_COLUMN]) for r in marks.iter_rows(named=True) if r["previous"] is not None]


def _chains(restarts: list[Restart]) -> list[list[Restart]]:
    """Runs of restarts each back within PROMPT_RETURN: a restart after a longer wait belongs to none."""
    chains: list[list[Restart]] = [[]]
    for restart in restarts:
        if restart.down_s > PROMPT_RETURN.total_seconds():
            chains.append([])
        else:
            chains[-1].append(restart)
    return [c for c in chains if c]


def _loop_of(chain: list[Restart]) -> Loop | None:
    """The loop a chain holds: from the first to the last run of LOOP_RESTARTS or more restarts whose processes each
    lived less than SHORT_LIFE; None without such a run."""
    runs: list[list[int]] = []
    for i, restart in enumerate(chain):
        if runs and restart.before - chain[runs[-1][-1]].after < SHORT_LIFE:
            runs[-1].append(i)
        else:
            runs.append([i])
    looping = [run for run in runs if len(run) >= LOOP_RESTARTS]
    return Loop(tuple(chain[looping[0][0] : looping[-1][-1] + 1])) if looping else None


def loops(series: pl.DataFrame) -> list[Loop]:
    """The restart loops of a series, one per chain of prompt restarts that holds one."""
    return [loop for chain in _chains(restarts_of(series)) if (loop := _loop_of(chain)) is not None]


def _durations(values: Sequence[float]) -> str:
    """`47 min, 2 min and 8 min`, or, for more than LISTED, `2 min to 9 min (median 4 min)`."""
    if len(values) > LISTED:
        return f"{duration(min(values))} to {duration(max(values))} (median {duration(statistics.median(values))})"
    words = [duration(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


@dataclass(frozen=True)
class Memory:
    """What the resident memory says of the processes that ended in a loop."""

    limit_mb: float
    container: bool  # the limit is the container's (memLimitMB below the host's memSizeMB)
    at_limit: int  # processes that ended with their resident memory at the limit
    ended: int  # processes that ended in the loop with a resident memory recorded
    peak_mb: float  # the highest resident memory among them at their end
    cache_bytes: float | None


def memory_at_end(ctx: Context, loop: Loop) -> Memory | None:
    """The resident memory of each process ending in `loop` in its last minute against the memory limit; None where
    either is not recorded."""
    limit = ctx.node.memory_limit_mb or ctx.node.memory_mb
    if not limit or "resident_mb" not in ctx.series.columns:
        return None
    resident = ctx.series.select(TIME_COLUMN, "resident_mb").drop_nulls()
    dtype = resident.schema[TIME_COLUMN]
    ends = pl.Series([r.before for r in loop.restarts]).cast(dtype)
    # Each process's samples in its last minute: a slice of the time-ordered series, found by bisection.
    lows = resident[TIME_COLUMN].search_sorted(ends - LAST_MINUTE, side="left")
    highs = resident[TIME_COLUMN].search_sorted(ends, side="right")
    highest = [aggregates.greatest(resident["resident_mb"].slice(lo, hi - lo)) for lo, hi in zip(lows, highs)]
    peaks = [float(p) for p in highest if p is not None]
    if not peaks:
        return None
    cache = ctx.series["cache_max_bytes"].drop_nulls() if "cache_max_bytes" in ctx.series.columns else None
    cache_bytes = float(cache[-1]) if cache is not None and len(cache) else None
    if cache_bytes is None and ctx.node.cache_size_gb:
        cache_bytes = ctx.node.cache_size_gb * 2**30
    return Memory(
        limit_mb=float(limit),
        container=bool(ctx.node.memory_limit_mb and ctx.node.memory_mb and ctx.node.memory_limit_mb < ctx.node.memory_mb),
        at_limit=sum(p >= AT_LIMIT * limit for p in peaks),
        ended=len(peaks),
        peak_mb=max(peaks),
        cache_bytes=cache_bytes,
    )


def _whose(memory: Memory) -> str:
    return "the container's memory limit" if memory.container else "the host's memory"


def _out_of_memory(memory: Memory) -> tuple[str, list]:
    """The sentence and the advice for processes that ended at the memory limit (most of them)."""
    whose = _whose(memory)
    limit = ram(memory.limit_mb)
    sentence = (
        f"{memory.at_limit} of the {memory.ended} processes ended with mongod's resident memory within "
        f"{pct(round(1 - AT_LIMIT, 2))} of {whose} ({limit}; up to {ram(memory.peak_mb)} resident): the out-of-memory "
        "killer's signature."
    )
    default = default_cache_bytes(int(memory.limit_mb))
    if memory.cache_bytes is not None:
        sentence += (
            f" The WiredTiger cache is {memory.cache_bytes / 2**30:.1f} GB, {pct(memory.cache_bytes / (memory.limit_mb * 2**20))} "
            f"of that {limit}"
            + (f" (mongod's default for it: {default / 2**30:.1f} GB)" if default else "")
            + "; connections, aggregations and sorts take memory beside it."
        )
    advice = advise(
        "investigate",
        f'Confirm the out-of-memory kills in the host\'s kernel log (dmesg: "Out of memory: Killed process" naming mongod), '
        f"then give mongod a memory limit that holds its {'cache' if memory.cache_bytes is None else f'{memory.cache_bytes / 2**30:.1f} GB cache'} "
        f"and its connections, or size the cache to the {limit} limit"
        + (f" (mongod's default for it: {default / 2**30:.1f} GB)" if default else ""),
        "a process the kernel kills at the memory limit comes back to the same limit and is killed again",
    )
    return sentence, [advice]


def detect(ctx: Context) -> list[Finding]:
    findings = []
    for loop in loops(ctx.series):
        lives, downs = loop.lives_s, loop.downs_s
        first, last = loop.restarts[0].after, loop.restarts[-1].after
        memory = memory_at_end(ctx, loop)
        killed = memory is not None and memory.at_limit * 2 > memory.ended
        why, oom_advice = _out_of_memory(memory) if killed and memory is not None else ("", [])
        findings.append(
            Finding(
                kind=KIND,
                severity="warning",
                start=loop.start,
                end=loop.end,
                subject=f"mongod restarted {len(loop.restarts)} times in {duration((loop.end - loop.start).total_seconds())}",
                statement=f"the processes lived {_durations(lives)}"
                + (f", {memory.at_limit} of {memory.ended} ending at {_whose(memory)}" if killed and memory is not None else "")
                + f"; each back within {duration(max(downs))}",
                reasoning=(
                    f"{len(loop.restarts)} new processes (the pid changed or the uptime went back), the first at "
                    f"{dated_span(first, last, 'and the last at')}. Between the restarts the processes lived {_durations(lives)}; "
                    f"from each old process's last sample to the new one's first, the node was down {_durations(downs)}: "
                    f"back within {duration(PROMPT_RETURN.total_seconds())} each time, as a supervisor restarting a crashing "
                    f"mongod brings it back. A restart loop, not {len(loop.restarts)} separate restarts. "
                    + (f"{why} " if why else "")
                    + "Counters restart from zero each time, so no rate is taken across a restart."
                ),
                evidence={
                    "metrics": [
                        p
                        for p in (
                            ctx.resolved.path("pid"),
                            ctx.resolved.path("uptime_ms") or ctx.resolved.path("uptime_s"),
                            ctx.resolved.path("mem.resident_mb") if memory is not None else None,
                        )
                        if p
                    ],
                    "restarts": len(loop.restarts),
                    "first_restart": first,
                    "last_restart": last,
                    "restarted_at": [r.after for r in loop.restarts],
                    "lives_s": [round(v, 1) for v in lives],
                    "downs_s": [round(v, 1) for v in downs],
                    "median_life_s": round(statistics.median(lives), 1),
                    "shortest_life_s": round(min(lives), 1),
                    "longest_down_s": round(max(downs), 1),
                    **(
                        {
                            "memory_limit_mb": memory.limit_mb,
                            "memory_limit_of": "container" if memory.container else "host",
                            "ended_at_memory_limit": memory.at_limit,
                            "ended": memory.ended,
                            "resident_peak_mb": memory.peak_mb,
                            "cache_bytes": memory.cache_bytes,
                        }
                        if memory is not None
                        else {}
                    ),
                    "thresholds": {
                        "loop": f"≥ {LOOP_RESTARTS} restarts in a row, each process living < {duration(SHORT_LIFE.total_seconds())}",
                        "prompt": f"back within {duration(PROMPT_RETURN.total_seconds())} (Kubernetes' back-off cap, "
                        f"{duration(BACK_OFF_CAP.total_seconds())}, and 2 minutes to start)",
                        **(
                            {"memory limit": f"resident memory ≥ {pct(AT_LIMIT)} of the limit in the process's last minute"}
                            if memory is not None
                            else {}
                        ),
                    },
                },
                # What ends each process: the limit the resident memory reached, or what the log says.
                recommendations=oom_advice
                or [
                    advise(
                        "investigate",
                        'Read the mongod log\'s last lines before each restart (a fatal assertion, "out of memory", a signal '
                        "from the service manager) and the host's journal for the out-of-memory killer",
                        "the loop ends when what ends each process is fixed",
                    )
                ],
            )
        )
    return findings
