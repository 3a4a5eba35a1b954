"""Changes of setting as `Recommendation`s, each from the value the node had and what the setting means.

syncdelay (storage.syncPeriodSecs) is how long mongod's checkpointer sleeps
between one checkpoint's end and the next one's start; 0 turns periodic
checkpoints off. It is never proposed below mongod's default of 60 s (MongoDB's
guidance keeps syncPeriodSecs at its default; SERVER-75162: a shorter syncdelay
set at runtime does not make recent versions checkpoint more often): "checkpoint
more often" is the default for a node that raised it, and nothing for one at or
below it. A value under 10 s is itself the finding (checkpoints then run nearly
back to back), as is one of five minutes or more (each checkpoint writes that
long a build-up), and the advice is the default there too. Eviction threads, the dirty target, the idle-handle sweep and the
cache size move from their current value within WiredTiger's bounds and the
host's memory, or are not advised at all. `analysis.incidents.vetting` checks every one
against the node before it is kept.
"""

from __future__ import annotations

from analysis.advice.recommendation import Current, Recommendation
from analysis.series.thresholds import Setting, Thresholds
from analysis.settings import DEFAULT_SOURCES, SETTINGS, max_cache_bytes
from analysis.text import ram

DEFAULT_SYNCDELAY_S = 60
# Shorter than this, each checkpoint starts moments after the last one ends: the write load of checkpointing becomes
# continuous.
SHORT_SYNCDELAY_S = 10
# Longer than this, each checkpoint writes minutes of dirty data at once (mongod checkpoints every 60 s by default).
LONG_SYNCDELAY_S = 300
ASSUMED = "assumed: these files do not record the node's configuration"


def _given(value: float | None, setting: str, what: str) -> float:
    """A bound or default of `setting` that its record gives: the changes below move only settings that have it."""
    if value is None:
        raise ValueError(f"the record of {setting} gives no {what}")
    return value


# The bounds and defaults the changes below move settings within.
EVICTION_THREADS_DEFAULT = _given(SETTINGS["eviction_threads_max"].default, "eviction_threads_max", "default")
EVICTION_THREADS_MOST = _given(SETTINGS["eviction_threads_max"].maximum, "eviction_threads_max", "maximum")
DIRTY_TARGET_DEFAULT = _given(SETTINGS["eviction_dirty_target"].default, "eviction_dirty_target", "default")
DIRTY_TARGET_LEAST = _given(SETTINGS["eviction_dirty_target"].minimum, "eviction_dirty_target", "minimum")
IDLE_TIME_LEAST = _given(SETTINGS["close_idle_time"].minimum, "close_idle_time", "minimum")


def set_by_node(setting: Setting) -> bool:
    """A value the node's configuration gave (or its behaviour showed), not a default filled in (derived defaults extend their source)."""
    return setting.value is not None and not setting.source.startswith(DEFAULT_SOURCES)


def origin(setting: Setting, assumed: bool) -> str:
    """Where a setting's value came from, as `Current.origin` says it."""
    if setting.source.startswith("inferred"):
        return "inferred"
    if not set_by_node(setting):
        return "assumed" if assumed else "default"
    return "configured"


def current_of(name: str, setting: Setting, assumed: bool = False) -> Current:
    return Current(value=setting.value, unit=SETTINGS[name].unit, source=setting.source, origin=origin(setting, assumed))


def current(thresholds: Thresholds, name: str) -> Current:
    """The value `thresholds` holds now (a window's, from `Thresholds.within`)."""
    return current_of(name, thresholds.current(name), thresholds.assumed(name))


def change(
    name: str, now: Current, proposed: float, what: str, why: str = "", action: str = "set_setting"
) -> Recommendation | None:
    """Setting `name` from `now` to `proposed`, or None when that changes nothing."""
    if now.value == proposed:
        return None
    return Recommendation(action=action, what=what, why=why, setting=name, current=now, proposed=proposed)


def interval_text(thresholds: Thresholds) -> str:
    """`60 s (mongod default ...)`, marked as assumed when the files did not record the node's configuration."""
    text = thresholds.describe("checkpoint_interval")
    return f"{text}, {ASSUMED}" if thresholds.assumed("checkpoint_interval") else text


def interval_problem(interval: float) -> str | None:
    """Why a checkpoint interval of `interval` seconds is itself a problem, or None."""
    if interval == 0:
        return "syncdelay 0 turns periodic checkpoints off: dirty data is written only when the cache forces it"
    if interval < SHORT_SYNCDELAY_S:
        return (
            f"a checkpoint interval of {interval:g} s, far below mongod's {DEFAULT_SYNCDELAY_S} s, starts each checkpoint moments after "
            "the last one ended, so one is nearly always running"
        )
    if interval >= LONG_SYNCDELAY_S:
        return (
            f"a checkpoint interval of {interval:g} s, far above mongod's {DEFAULT_SYNCDELAY_S} s, lets each checkpoint gather "
            "that long a build-up of dirty data to write at once"
        )
    return None


def unusual_interval(thresholds: Thresholds) -> str | None:
    """Why the current checkpoint interval is itself a problem, or None."""
    interval = thresholds.value("checkpoint_interval")
    return None if interval is None else interval_problem(interval)


def restore_interval(now: Current) -> Recommendation | None:
    """An interval that is itself the problem back to the default."""
    problem = None if now.value is None else interval_problem(now.value)
    return (
        None
        if problem is None
        else change("checkpoint_interval", now, DEFAULT_SYNCDELAY_S, "Set syncdelay back to the default", problem)
    )


def checkpoint_more_often(thresholds: Thresholds, what: str) -> Recommendation | None:
    """ "Checkpoint more often" as this node can take it: the interval's own problem put right, or an interval the node
    raised above mongod's default back to it; nothing at or below the default (never proposed shorter than it)."""
    now = current(thresholds, "checkpoint_interval")
    if now.value is None:
        return None
    restore = restore_interval(now)
    if restore or now.value <= DEFAULT_SYNCDELAY_S:
        return restore
    return change(
        "checkpoint_interval",
        now,
        DEFAULT_SYNCDELAY_S,
        f"{what}, back to mongod's default",
        f"the node's {now.value:g} s is above mongod's default {DEFAULT_SYNCDELAY_S} s: each checkpoint writes that long a build-up",
    )


def more_eviction_threads(thresholds: Thresholds, what: str) -> Recommendation | None:
    """Doubling eviction's worker threads, or None at WiredTiger's maximum."""
    now = current(thresholds, "eviction_threads_max")
    threads = int(now.value or EVICTION_THREADS_DEFAULT)
    wanted = min(int(EVICTION_THREADS_MOST), threads * 2)
    return change("eviction_threads_max", now, wanted, what) if wanted > threads else None


def earlier_dirty_eviction(thresholds: Thresholds, what: str, why: str = "") -> Recommendation | None:
    """The dirty target at half the current one, or None at WiredTiger's minimum."""
    now = current(thresholds, "eviction_dirty_target")
    target = now.value or DIRTY_TARGET_DEFAULT
    wanted = max(DIRTY_TARGET_LEAST, int(target // 2))
    return change("eviction_dirty_target", now, wanted, what, why) if wanted < target else None


# Idle handles get this lifetime when they had none (close_idle_time=0 never closes them).
IDLE_LIFETIME_S = 600


def sooner_sweep(thresholds: Thresholds) -> Recommendation | None:
    """Closing idle handles sooner than now, or None."""
    now = current(thresholds, "close_idle_time")
    if now.value is None:
        return None
    if now.value == 0:
        return change(
            "close_idle_time", now, IDLE_LIFETIME_S, "Give idle handles a lifetime", "close_idle_time 0 never closes them"
        )
    wanted = max(IDLE_TIME_LEAST, int(now.value // 2))
    return change("close_idle_time", now, wanted, "Sweep idle handles sooner") if wanted < now.value else None


def larger_cache(now: Current, peak_pct: float, target_pct: float, memory_mb: int | None) -> Recommendation:
    """Raising the cache so that the peak fill sits at the eviction target, or why this host cannot."""
    if now.value is None:
        raise ValueError("raising the cache needs its current size")
    wanted = now.value * peak_pct / target_pct
    limit = max_cache_bytes(memory_mb)
    if memory_mb and limit and wanted > limit:
        return Recommendation(
            action="resize",
            what="Add memory to this host, or shard: the working set has outgrown it",
            why=(
                f"a cache large enough to hold the {peak_pct:.0f} % peak at the {target_pct:g} % eviction target ({wanted / 2**30:.1f} GB, "
                f"now {now.value / 2**30:.1f} GB) would take more than {limit / memory_mb / 2**20:.0%} of the host's {ram(memory_mb)} of RAM"
            ),
            caveat="only if no scan is behind the fill",
            assumes="no_scan",
        )
    memory = f"; the host has {ram(memory_mb)} of RAM" if memory_mb else ""
    return Recommendation(
        action="resize",
        what="If the working set has outgrown the cache, raise the cache size",
        setting="cache_size",
        current=now,
        proposed=float(round(wanted / 2**30, 1) * 2**30),
        why=f"so the {peak_pct:.0f} % peak sits at the {target_pct:g} % eviction target{memory}",
        caveat="only if no scan is behind the fill",
        assumes="no_scan",
    )
