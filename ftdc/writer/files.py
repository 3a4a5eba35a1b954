"""The files of a diagnostic.data directory, named and replaced as mongod does."""

from __future__ import annotations

import datetime as dt
import os
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path

from bson.raw_bson import RawBSONDocument

from .. import _native
from ..errors import FTDCError, FTDCWarning
from .documents import RAW_MS, TYPE_METADATA, TYPE_METRIC_CHUNK

INTERIM = "metrics.interim"
INTERIM_TEMP = "metrics.interim.temp"
# FTDCConfig::kMaxFileUniqifier: archive files started within one second.
MAX_UNIQUIFIER = 65000


def archive_path(directory: Path, date_ms: int) -> Path:
    """`metrics.<YYYY-MM-DDTHH-MM-SSZ>-NNNNN`, the first uniquifier not taken."""
    when = dt.datetime.fromtimestamp(date_ms / 1000, tz=dt.timezone.utc)
    stem = "metrics." + when.strftime("%Y-%m-%dT%H-%M-%SZ")
    for uniquifier in range(MAX_UNIQUIFIER):
        path = directory / f"{stem}-{uniquifier:05d}"
        if not path.exists():
            return path
    raise FTDCError(f"{directory}: {MAX_UNIQUIFIER} archive files already start at {stem}")


def write_interim(directory: Path, document: bytes) -> None:
    """Replaces metrics.interim atomically (write the temp file, then rename)."""
    temp = directory / INTERIM_TEMP
    temp.write_bytes(document)
    os.replace(temp, directory / INTERIM)


def remove_interim(directory: Path) -> None:
    (directory / INTERIM).unlink(missing_ok=True)


def _documents(data: bytes) -> Iterator[RawBSONDocument]:
    pos = 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from("<i", data, pos)
        if length < 5 or pos + length > len(data):
            return
        yield RawBSONDocument(data[pos : pos + length], RAW_MS)
        pos += length


def recover_interim(directory: Path) -> list[tuple[int, bytes, int]]:
    """`(type, document, date ms)` for what a previous writer left in metrics.interim.

    Like mongod's `recoverInterimFile`, best effort: a damaged document ends
    the recovery with a warning. Chunk samples are rebuilt from their metric
    values (numbers as int64), each dated by the chunk's `_id`.
    """
    path = directory / INTERIM
    if not path.is_file():
        return []
    recovered = []
    try:
        for document in _documents(path.read_bytes()):
            date_ms = int(document["_id"])
            if document["type"] == TYPE_METADATA:
                recovered.append((TYPE_METADATA, document["doc"].raw, date_ms))
            elif document["type"] == TYPE_METRIC_CHUNK:
                reference, samples, metric_count, values = _native.decode_chunk(bytes(document["data"]))
                row = 8 * metric_count
                recovered.append((TYPE_METRIC_CHUNK, reference, date_ms))
                for r in range(1, samples):
                    sample = _native.fill_reference(reference, values[r * row : (r + 1) * row])
                    recovered.append((TYPE_METRIC_CHUNK, sample, date_ms))
    except (KeyError, TypeError, ValueError) as e:
        warnings.warn(f"{path}: interim file only partly recovered: {e}", FTDCWarning, stacklevel=3)
    return recovered
