"""Which files a path names: a diagnostic.data directory, a dbpath, an archive of one, one file, or a list."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import FTDCError, FTDCWarning
from .inputs import is_archive, looks_like_log, one_node, refuse_special

PathLike = str | os.PathLike
PathArg = PathLike | Iterable[PathLike]

INTERIM_PREFIX = "metrics.interim"


@dataclass(frozen=True)
class FtdcFile:
    path: Path

    @property
    def interim(self) -> bool:
        """`metrics.interim` holds the open chunk, which may repeat archived samples."""
        return self.path.name.startswith(INTERIM_PREFIX)


# The reader holds a file whole. mongod starts a new file at diagnosticDataCollectionFileSizeMB
# (10 MB by default) and keeps the directory under a few hundred MB, so a larger file, or one
# mostly holes (a sparse file: bytes never written), is not one mongod wrote.
MAX_FILE_BYTES = 1 << 30
SPARSE_FROM_BYTES = 64 << 20


def implausible(path: Path) -> str | None:
    """Why `path` is not read as an FTDC file (too large, mostly holes), else None."""
    st = path.stat()
    if st.st_size > MAX_FILE_BYTES:
        return f"{path}: {st.st_size / 2**30:,.1f} GB, larger than any FTDC file mongod writes (it rotates at 10 MB by default): not read"
    written = st.st_blocks * 512
    if st.st_size > SPARSE_FROM_BYTES and written < st.st_size // 2:
        return f"{path}: a sparse file, {written / 2**20:,.0f} MB of its {st.st_size / 2**20:,.0f} MB ever written: not FTDC as mongod writes it; not read"
    return None


def _plausible(files: list[FtdcFile]) -> list[FtdcFile]:
    kept = []
    for file in files:
        reason = implausible(file.path)
        if reason is None:
            kept.append(file)
        else:
            warnings.warn(reason, FTDCWarning, stacklevel=4)
    return kept


def _directory_files(directory: Path) -> list[FtdcFile]:
    files = [FtdcFile(p) for p in directory.iterdir() if p.is_file() and p.name.startswith("metrics.")]
    if not files:
        raise FTDCError(f"{directory}: no FTDC files (metrics.*) in this directory")
    # Archive names sort by time; the interim file goes last so archived copies win.
    return sorted(files, key=lambda f: (f.interim, f.path.name))


def resolve(path: PathArg) -> list[FtdcFile]:
    """The FTDC files named by `path`, archive files in time order, interim last."""
    if isinstance(path, (str, os.PathLike)):
        items = [Path(path)]
    else:
        items = [Path(p) for p in path]
        if not items:
            raise FTDCError("no paths given")
    files: list[FtdcFile] = []
    for item in items:
        if not item.exists():
            raise FTDCError(f"{item}: no such file or directory")
        refuse_special(item)
        if item.is_dir() or is_archive(item):
            where = one_node(item)  # diagnostic.data itself, inside a dbpath, or inside a bundle
            files.extend(_directory_files(where) if where.is_dir() else [FtdcFile(where)])
        elif looks_like_log(item):
            raise FTDCError(f"{item}: this is a mongod log, not FTDC (use `ftdc-analyze logs` for logs)")
        else:
            files.append(FtdcFile(item))
    kept = _plausible(files)
    if not kept:
        raise FTDCError(
            f"{', '.join(str(f.path) for f in files[:3])}{' ...' if len(files) > 3 else ''}: no FTDC file that can be read "
            "(each is named in a warning above)"
        )
    return kept
