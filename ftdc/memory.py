"""Giving freed memory back to the operating system between the stages of a long job."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys


def release_free_memory() -> None:
    """Collects reference cycles (a reader's futures can hold its buffers), then
    hands back what glibc keeps in its arenas (large buffers included, once its
    mmap threshold has grown). malloc_trim is glibc's; elsewhere only the collection runs."""
    gc.collect()
    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        pass
