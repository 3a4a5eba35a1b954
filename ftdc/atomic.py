"""Output files that appear whole or not at all.

An export or report interrupted half-way (Ctrl-C, a full disk, a crash) must leave
the user's previous file in place, not a valid-looking short one.
"""

from __future__ import annotations

import errno
import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .leftovers import sweep

PARTIAL = ".partial"
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file beside `path` that replaces it when the block ends without error
    and is removed otherwise; it gets the permissions a plain write would give
    (mkstemp's are private). A place that cannot be written is one plain OSError."""
    path = Path(path)
    if path.is_dir():
        raise OSError(f"{path}: a directory; give a file name")
    prefix = f".{path.name}."
    sweep(path.parent, prefix, PARTIAL)  # an earlier run's, killed before it could clean up
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f"{prefix}{os.getpid()}-", suffix=PARTIAL)
    except OSError as exc:
        raise OSError(f"{path}: cannot write there ({exc.strerror or exc})") from None
    try:
        with named_after(path):
            with os.fdopen(fd, "wb") as out:
                yield out
            os.chmod(temp, 0o666 & ~umask())
            os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@contextmanager
def named_after(target: str | os.PathLike) -> Iterator[None]:
    """An OSError raised while `target` is written names `target`: a full disk or quota (which
    writers such as pyarrow and polars report naming no file, or only as text), or any error
    naming the temporary `.partial` path the user never gave."""
    try:
        yield
    except OSError as exc:
        full = _full(exc)
        if full is not None:
            raise OSError(full, os.strerror(full), str(target)) from None
        if exc.filename is not None and PARTIAL in os.fspath(exc.filename):
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from None
        raise


def umask() -> int:
    """The process's umask (read by setting it, and set back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def uninterrupted() -> Iterator[None]:
    """SIGINT and SIGTERM held until the block ends: a commit of several renames is not cut
    half-way by Ctrl-C or a service manager's stop (only by SIGKILL or a power cut)."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _full(exc: BaseException) -> int | None:
    """The errno of a full disk or quota, also when a writer (polars) re-raised it as text."""
    if not isinstance(exc, OSError):
        return None
    if exc.errno in _FULL:
        return exc.errno
    return next((code for code in _FULL if os.strerror(code) in str(exc)), None)
