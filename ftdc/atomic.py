"""Output files that appear whole or not at all.

An export or report interrupted half-way (Ctrl-C, a full disk, a crash) must leave
the user's previous file in place, not a valid-looking short one.
"""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

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
        with os.fdopen(fd, "wb") as out:
            yield out
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException as exc:
        Path(temp).unlink(missing_ok=True)
        full = _full(exc)
        if full is not None:
            # Named after the target, not the temporary file beside it.
            raise OSError(full, os.strerror(full), str(path)) from None
        raise


def _full(exc: BaseException) -> int | None:
    """The errno of a full disk or quota, also when a writer (polars) re-raised it as text."""
    if not isinstance(exc, OSError):
        return None
    if exc.errno in _FULL:
        return exc.errno
    return next((code for code in _FULL if os.strerror(code) in str(exc)), None)
