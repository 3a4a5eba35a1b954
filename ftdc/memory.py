"""Giving freed memory back to the operating system between the stages of a long job."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# polars allocates through its own jemalloc (its Linux wheels), which keeps the pages a frame freed for a while before
# handing them back (polars sets half a second, and a second more before they are unmapped), and the pages freed in one
# stage of a command are not the ones the next reuses, so a command's peak was the sum of its stages': `logs` peaked
# at 350-360 MB on a 0.25 GB log and 890-900 MB on 1 GB, and at 300-305 and 680 MB with freed pages handed back at
# once, in 1.12x and 0.92x the time (docs/benchmarks.md). polars adds its own setting before the one it finds when it loads (polars/__init__.py), so
# the variable a parent that loaded polars passes on is polars' own, not the user's.
POLARS_ALLOCATOR = "_RJEM_MALLOC_CONF"
POLARS_OWN = "dirty_decay_ms:500,muzzy_decay_ms:1000"
HANDED_BACK = "dirty_decay_ms:0,muzzy_decay_ms:0"
# A read of less than this sets no peak worth handing its memory back for (`release_free_memory`): a week's read of the
# analyses' metrics is 576 MB, a day of them 83 MB; each hand-back cost a small run 10 - 35 ms of a 0.33 s analysis
# (docs/performance.md).
WORTH_HANDING_BACK = 256 << 20


# glibc maps a buffer of at least its threshold on its own, but raises the threshold to the size of each such buffer
# freed (to 32 MB), and with it the free space it keeps atop its heap (twice the threshold): after a large log's 16 MB
# blocks, up to 32 MB freed later (the NumPy columns of a week's slow operations are 10 MB each) stayed in the heap
# until `release_free_memory` trimmed it. A threshold set turns both rises off: at glibc's own greatest, the heap
# serves the buffers it would serve anyway, and what is freed atop it goes back at once. A week with its 1 GB log and
# `--report` peaked at 0.91 GB against 0.99 - 1.03 GB, the `logs` command of 1 GB at 0.64 against 0.68 - 0.73 GB, in
# the same time (docs/performance.md). glibc's name for the setting, and its variable (read when the process starts:
# a user's is kept).
C_LARGE_BUFFER = 32 << 20
M_MMAP_THRESHOLD = -3
C_ALLOCATOR = "MALLOC_MMAP_THRESHOLD_"


def hand_back_freed_pages() -> None:
    """Has polars' allocator hand freed pages back at once, for a process that has not loaded polars yet (a command
    line run that reads a log: a run of FTDC alone keeps polars' own decay, as its pages handed back would be faulted
    in again); a decay the user set is kept, and so are their other settings. What is freed atop the C library's heap
    goes back at once too (glibc's threshold set to C_LARGE_BUFFER, unless the user set one)."""
    users = os.environ.get(POLARS_ALLOCATOR, "").removeprefix(POLARS_OWN).strip(",")
    if "decay_ms" not in users:
        os.environ[POLARS_ALLOCATOR] = ",".join(filter(None, (users, HANDED_BACK)))
    libc = _libc()
    if libc is not None and C_ALLOCATOR not in os.environ and hasattr(libc, "mallopt"):
        libc.mallopt(M_MMAP_THRESHOLD, C_LARGE_BUFFER)


@functools.cache
def _libc():
    """glibc, looked up once (find_library runs ldconfig: milliseconds a call); None off Linux and where the C library
    cannot be loaded. Its own functions (malloc_trim, mallopt) are looked for where they are called: musl has none."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def release_free_memory() -> None:
    """Collects reference cycles (a reader's futures can hold its buffers), unmaps the
    decoder's memory kept for a next read (its pages count as resident until the kernel
    needs them) and gives back the decoded columns nothing holds (`release_dropped_columns`), then
    hands back what glibc keeps in its arenas (large buffers included, once its mmap threshold
    has grown). malloc_trim is glibc's; elsewhere only the collection runs."""
    from ftdc import _native  # here: the command line loads this module before it knows it will decode

    gc.collect()
    _native.release_spare()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def release_dropped_columns() -> None:
    """Gives back the pages of the decoded columns nothing holds any longer, of reads whose other columns are still
    held (a derivation done with some of its read's columns); a read dropped whole keeps its pages for the next."""
    from ftdc import _native

    _native.release_dropped_columns()


@contextmanager
def imports_kept() -> Iterator[None]:
    """The block's imports made without the cyclic collector, and what they made (modules, classes, tables: the process
    keeps them to its end) frozen out of its later passes. A summary's imports make some 90,000 objects the collector
    tracks, nearly all living on: the passes their allocations set off find no garbage, and every full pass after them
    (`release_free_memory`'s, the collector's own) would walk them all again (docs/performance.md). The collector
    runs again after the block, for what the command makes; an error in the block re-enables it too. Once a process:
    a later block imports nothing new, and freezing again would keep whatever cyclic garbage a test process's earlier
    work left."""
    if _FROZE_IMPORTS:
        yield
        return
    _FROZE_IMPORTS.append(True)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


_FROZE_IMPORTS: list[bool] = []  # not empty once `imports_kept` has frozen this process's imports
