"""Output files that appear whole or not at all.

An export or report interrupted half-way (Ctrl-C, a full disk, a crash) must leave
the user's previous file in place, not a valid-looking short one.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from .leftovers import sweep

PARTIAL = ".partial"


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file beside `path` that replaces it when the block ends without error
    and is removed otherwise; it gets the permissions a plain write would give
    (mkstemp's are private). A place that cannot be written is one plain OSError."""
    path = Path(path)
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
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
