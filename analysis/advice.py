"""Advice on a setting, checked against the node's current value and what the setting means.

syncdelay (storage.syncPeriodSecs) is how long mongod's checkpointer sleeps
between one checkpoint's end and the next one's start (checkpointer.cpp); 0
turns periodic checkpoints off. So "checkpoint more often" halves it, never
to 0 and never below MIN_SYNCDELAY_S; a value already that short is itself
the finding (checkpoints then run nearly back to back), and the advice is
the default, not a shorter one.
"""

from __future__ import annotations

from .thresholds import Thresholds

DEFAULT_SYNCDELAY_S = 60
# Shorter than this, each checkpoint starts moments after the last one ends: halving gains
# nothing, the write load of checkpointing just becomes continuous.
MIN_SYNCDELAY_S = 10
SYNCDELAY = "setParameter syncdelay, or storage.syncPeriodSecs"


def interval_text(thresholds: Thresholds) -> str:
    """`60 s (mongod default ...)`, marked as assumed when the files did not record the node's configuration."""
    text = thresholds.describe("checkpoint_interval")
    return f"{text}, assumed: these files do not record the node's configuration" if thresholds.assumed("checkpoint_interval") else text


def unusual_interval(thresholds: Thresholds) -> str | None:
    """Why the current checkpoint interval is itself a problem, or None."""
    interval = thresholds.value("checkpoint_interval")
    if interval is None:
        return None
    if interval == 0:
        return f"periodic checkpoints are off (syncdelay {interval_text(thresholds)}): dirty data is written only when the cache forces it"
    if interval < MIN_SYNCDELAY_S:
        return (f"a checkpoint interval of {interval:g} s, far below mongod's {DEFAULT_SYNCDELAY_S} s, starts each checkpoint moments after "
                "the last one ended, so one is nearly always running")
    return None


def checkpoint_more_often(thresholds: Thresholds, why: str) -> str | None:
    """"Checkpoint more often" as a value this node can take, or the interval's own problem."""
    interval = thresholds.value("checkpoint_interval")
    if interval is None:
        return None
    if unusual_interval(thresholds):
        return (f"Set syncdelay back to the default {DEFAULT_SYNCDELAY_S} s ({SYNCDELAY}; never 0, which turns periodic checkpoints off; "
                f"now {interval_text(thresholds)}): " + unusual_interval(thresholds))
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
