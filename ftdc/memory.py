"""Giving freed memory back to the operating system between the stages of a long job."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
import sys

# polars allocates through its own jemalloc (its Linux wheels), which keeps the pages a frame freed for ten seconds
# before handing them back, and the pages it freed in one stage of a command are not the ones the next reuses, so a
# command's peak was the sum of its stages': on a 1 GB log `logs` peaked at 0.92-0.95 GB, and at 0.70 GB with freed
# pages handed back at once, at the same speed (docs/benchmarks.md). jemalloc reads this when polars loads.
POLARS_ALLOCATOR = ("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")


def hand_back_freed_pages() -> None:
    """Has polars' allocator hand freed pages back at once, for a process that has not loaded polars yet (a command
    line run); a setting the user made is kept."""
    os.environ.setdefault(*POLARS_ALLOCATOR)


@functools.cache
def _malloc_trim():
    """glibc's malloc_trim, looked up once (find_library runs ldconfig: milliseconds a call);
    None off Linux and where the C library has none (musl and others)."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def release_free_memory() -> None:
    """Collects reference cycles (a reader's futures can hold its buffers), then
    hands back what glibc keeps in its arenas (large buffers included, once its
    mmap threshold has grown). malloc_trim is glibc's; elsewhere only the collection runs."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
