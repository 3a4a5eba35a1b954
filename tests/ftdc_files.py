"""Test helpers: the documents and chunks of FTDC files, read independently of the decoder."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

RAW_MS = CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_MS)


def documents(path: Path) -> list[tuple[int, RawBSONDocument]]:
    """`(offset, document)` for every intact top-level document of an FTDC file."""
    data = Path(path).read_bytes()
    out, pos = [], 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from("<i", data, pos)
        if length < 5 or pos + length > len(data):
            break
        out.append((pos, RawBSONDocument(data[pos : pos + length], RAW_MS)))
        pos += length
    return out


def chunks(path: Path) -> list[RawBSONDocument]:
    return [d for _, d in documents(path) if d["type"] == 1]


def payload(chunk: RawBSONDocument) -> bytes:
    """The inflated `data` of a type-1 document (Python's zlib, not the native inflater)."""
    return zlib.decompress(bytes(chunk["data"])[4:])


def chunk_samples(chunk: RawBSONDocument) -> int:
    """1 + deltaCount, read from the inflated payload."""
    inflated = payload(chunk)
    (reference_length,) = struct.unpack_from("<i", inflated, 0)
    _, delta_count = struct.unpack_from("<II", inflated, reference_length)
    return delta_count + 1


def sample_files(ftdc_samples: Path) -> list[Path]:
    """Every FTDC file of the shared samples (archive, interim, bare chunk, Go writer)."""
    return sorted(p for p in ftdc_samples.rglob("*") if p.is_file() and p.suffix != ".json")
