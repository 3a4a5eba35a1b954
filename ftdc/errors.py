"""Errors and warnings raised by the readers, and the problems a read reports."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FTDCError(Exception):
    """The input cannot be read as FTDC at all (missing path, no FTDC files, not FTDC)."""


class NoSamples(FTDCError):
    """FTDC files were found but no sample could be read from them in the range asked for."""


class FTDCWarning(UserWarning):
    """Part of the input was damaged or unusual; everything intact was still read."""


class UnmatchedMetric(FTDCWarning):
    """A metric name or glob that matches no metric (the CLI makes it an error)."""


class ProblemKind(str, Enum):
    """What kind of damage a read reports (the native core's `ProblemKind`)."""

    UNREADABLE = "unreadable"  # the file could not be read at all
    EMPTY = "empty"  # the file holds no document
    DAMAGED = "damaged"  # a region that is no document, skipped up to the next plausible one
    UNKNOWN_TYPE = "unknown type"  # a document whose type FTDC does not define
    CHUNK_SKIPPED = "chunk skipped"  # a metric chunk that cannot be decoded whole


@dataclass(frozen=True)
class Problem:
    """Damage a read skipped: the file, where in it (None: the whole file), its kind and what was wrong.
    Said as one line, "file: offset N: message"; two reports of one problem are equal values."""

    file: str
    offset: int | None
    kind: ProblemKind
    message: str

    @classmethod
    def from_native(cls, found: tuple[str, int | None, str, str]) -> Problem:
        file, offset, kind, message = found
        return cls(file, offset, ProblemKind(kind), message)

    def __str__(self) -> str:
        return f"{self.file}: offset {self.offset}: {self.message}" if self.offset is not None else f"{self.file}: {self.message}"


def require_documents(files: list, documents: int, problems: list[Problem]) -> None:
    """Raise when not one file held an FTDC document: the input is not FTDC."""
    if files and documents == 0:
        detail = str(problems[0]) if problems else ", ".join(str(f.path) for f in files) + ": empty"
        raise FTDCError(f"not FTDC data: {detail}")


def no_samples(where: str, chunks, lower, upper) -> NoSamples:
    """Why nothing was read: a range past the data (naming what the data covers), or no
    readable sample at all (only metadata, or every chunk damaged). `chunks` is a catalog's
    chunk frame (`first`, `last`), None when unknown."""
    from .timeutil import format_time

    if chunks is not None and chunks.height and (lower is not None or upper is not None):
        return NoSamples(
            f"{where}: no sample between {format_time(lower) if lower else 'the start'} and "
            f"{format_time(upper) if upper else 'the end'}; the data covers "
            f"{format_time(chunks['first'].min())} – {format_time(chunks['last'].max())}"
        )
    if chunks is None and (lower is not None or upper is not None):
        return NoSamples(f"{where}: no readable sample in that range")
    return NoSamples(f"{where}: no readable sample (only metadata, or every chunk damaged)")
