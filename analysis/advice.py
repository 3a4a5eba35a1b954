"""Advice on a setting, checked against the node's current value and what the setting means.

syncdelay (storage.syncPeriodSecs) is how long mongod's checkpointer sleeps
between one checkpoint's end and the next one's start (checkpointer.cpp); 0
turns periodic checkpoints off. So "checkpoint more often" halves it, never
to 0 and never below MIN_SYNCDELAY_S; a value already that short is itself
the finding (checkpoints then run nearly back to back), as is one of five
minutes or more (each checkpoint writes that long a build-up), and the
advice is the default, not a shorter or longer one. Eviction threads, the dirty target, the
idle-handle sweep and the cache size move from their current value within
WiredTiger's bounds and the host's memory, or are not advised at all.
"""

from __future__ import annotations

import re

from .thresholds import Thresholds

DEFAULT_SYNCDELAY_S = 60
# Shorter than this, each checkpoint starts moments after the last one ends: halving gains
# nothing, the write load of checkpointing just becomes continuous.
MIN_SYNCDELAY_S = 10
# Longer than this, each checkpoint writes minutes of dirty data at once (docs/metrics.md: checkpoints every 60 s by default).
LONG_SYNCDELAY_S = 300
SYNCDELAY = "setParameter syncdelay, or storage.syncPeriodSecs"


def interval_text(thresholds: Thresholds) -> str:
    """`60 s (mongod default ...)`, marked as assumed when the files did not record the node's configuration."""
    text = thresholds.describe("checkpoint_interval")
    return f"{text}, assumed: these files do not record the node's configuration" if thresholds.assumed("checkpoint_interval") else text


def interval_problem(interval: float) -> str | None:
    """Why a checkpoint interval of `interval` seconds is itself a problem, or None."""
    if interval == 0:
        return "syncdelay 0 turns periodic checkpoints off: dirty data is written only when the cache forces it"
    if interval < MIN_SYNCDELAY_S:
        return (f"a checkpoint interval of {interval:g} s, far below mongod's {DEFAULT_SYNCDELAY_S} s, starts each checkpoint moments after "
                "the last one ended, so one is nearly always running")
    if interval >= LONG_SYNCDELAY_S:
        return (f"a checkpoint interval of {interval:g} s, far above mongod's {DEFAULT_SYNCDELAY_S} s, lets each checkpoint gather "
                "that long a build-up of dirty data to write at once")
    return None


def unusual_interval(thresholds: Thresholds) -> str | None:
    """Why the current checkpoint interval is itself a problem, or None."""
    interval = thresholds.value("checkpoint_interval")
    return None if interval is None else interval_problem(interval)


def restore_interval(interval: float, now: str) -> str | None:
    """Advice to return an interval that is itself the problem to the default; `now` describes the current value."""
    problem = interval_problem(interval)
    return None if problem is None else (f"Set syncdelay back to the default {DEFAULT_SYNCDELAY_S} s ({SYNCDELAY}; never 0, which turns "
                                         f"periodic checkpoints off; now {now}): {problem}")


def checkpoint_more_often(thresholds: Thresholds, why: str) -> str | None:
    """"Checkpoint more often" as a value this node can take, or the interval's own problem."""
    interval = thresholds.value("checkpoint_interval")
    if interval is None:
        return None
    restore = restore_interval(interval, interval_text(thresholds))
    if restore:
        return restore
    proposed = max(MIN_SYNCDELAY_S, int(interval // 2))
    if proposed >= interval:
        return None
    return f"{why}: syncdelay {interval:g} → {proposed} s ({SYNCDELAY}; now {interval_text(thresholds)})"


# WiredTiger's bounds (dist/api_data.py): eviction threads_max 1-20, eviction_dirty_target at least 1 %.
MAX_EVICTION_THREADS = 20
MIN_DIRTY_TARGET = 1


def more_eviction_threads(thresholds: Thresholds) -> str | None:
    """`eviction=(threads_min=..,threads_max=..)` doubling the workers, or None at WiredTiger's maximum."""
    threads = int(thresholds.value("eviction_threads_max") or 4)
    wanted = min(MAX_EVICTION_THREADS, threads * 2)
    if wanted <= threads:
        return None
    low = min(int(thresholds.value("eviction_threads_min") or 4), wanted)
    return f"eviction=(threads_min={low},threads_max={wanted})"


def earlier_dirty_eviction(thresholds: Thresholds) -> str | None:
    """`eviction_dirty_target=..` at half the current one, or None at WiredTiger's minimum."""
    target = thresholds.value("eviction_dirty_target") or 5
    wanted = max(MIN_DIRTY_TARGET, int(target // 2))
    return f"eviction_dirty_target={wanted}" if wanted < target else None


# WiredTiger's file_manager.close_idle_time: 0 never closes an idle handle; sweeping more often
# than every MIN_CLOSE_IDLE_S costs more reopening than it frees.
MIN_CLOSE_IDLE_S = 30


def sooner_sweep(thresholds: Thresholds) -> str | None:
    """`file_manager=(close_idle_time=..)` closing idle handles sooner than now, or None."""
    idle = thresholds.value("close_idle_time")
    if idle is None:
        return None
    if idle == 0:
        return "file_manager=(close_idle_time=600)"  # 0 never closes idle handles: give them a lifetime
    wanted = max(MIN_CLOSE_IDLE_S, int(idle // 2))
    return f"file_manager=(close_idle_time={wanted})" if wanted < idle else None


# The cache is not all of mongod's memory: connections, index builds and the OS's cache of
# compressed blocks need the rest of the host's RAM.
MAX_CACHE_SHARE_OF_RAM = 0.8


def larger_cache(cache_gb: float, peak_pct: float, target_pct: float, memory_mb: int | None) -> str:
    """Raising cacheSizeGB so that the peak fill sits at the eviction target, or why this host cannot."""
    wanted = cache_gb * peak_pct / target_pct
    if memory_mb and wanted > MAX_CACHE_SHARE_OF_RAM * memory_mb / 1024:
        return (f"A cache large enough to hold the {peak_pct:.0f} % peak at the {target_pct:g} % eviction target ({wanted:.1f} GB, now {cache_gb:.1f} GB) "
                f"would take more than {MAX_CACHE_SHARE_OF_RAM:.0%} of the host's {memory_mb / 1024:.0f} GB of RAM: if no scan is behind it, "
                "the working set has outgrown this host (add memory, or shard)")
    memory = f" (the host has {memory_mb / 1024:.0f} GB of RAM)" if memory_mb else ""
    return (f"If the working set has outgrown the cache (no scan behind it), raise storage.wiredTiger.engineConfig.cacheSizeGB from "
            f"{cache_gb:.1f} to about {wanted:.1f}, so the {peak_pct:.0f} % peak sits at the {target_pct:g} % eviction target{memory}")


# The changes a piece of advice proposes (`setting=value`, a syncdelay move, an index, a limit), read from its text
# less what it says the node has now: detectors word one change their own way, an incident lists it once.
_PROPOSALS = re.compile(r"syncdelay \d+ → \d+|\b(?:threads_min|threads_max|eviction_dirty_target|eviction_target|close_idle_time)=\d+"
                        r"|storageEngineConcurrent\w+Transactions: \d+|createIndex\(\{[^)]*\}\)|maxTimeMS: \d+")
_NOW = re.compile(r"\bnow [^)]*\)")


def proposals(text: str) -> frozenset[str]:
    return frozenset(_PROPOSALS.findall(_NOW.sub("", text)))


def once(recommendations: list[str]) -> list[str]:
    """Each piece of advice once, in order: a text is left out when earlier ones already propose every change it does."""
    out: list[str] = []
    proposed: set[str] = set()
    for text in dict.fromkeys(recommendations):
        changes = proposals(text)
        if changes and changes <= proposed:
            continue
        out.append(text)
        proposed |= changes
    return out
