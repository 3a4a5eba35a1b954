"""Giving freed memory back to the operating system between the stages of a long job."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import sys


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
