"""Which files a path names: a diagnostic.data directory, a dbpath, an archive of one, one file, or a list."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

from .errors import FTDCError
from .inputs import is_archive, looks_like_log, one_node, refuse_special

PathLike = Union[str, os.PathLike]
PathArg = Union[PathLike, Iterable[PathLike]]

INTERIM_PREFIX = "metrics.interim"


@dataclass(frozen=True)
class FtdcFile:
    path: Path

    @property
    def interim(self) -> bool:
        """`metrics.interim` holds the open chunk, which may repeat archived samples."""
        return self.path.name.startswith(INTERIM_PREFIX)


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
    return files
