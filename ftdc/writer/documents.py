"""The BSON documents of an FTDC file, and samples given in any form."""

from __future__ import annotations

from collections.abc import Mapping

import bson
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument
from bson.son import SON

TYPE_METADATA = 0
TYPE_METRIC_CHUNK = 1

# Raw access to one top-level field; Dates come back as exact milliseconds.
RAW_MS = CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_MS)

Document = bytes | bytearray | memoryview | RawBSONDocument | Mapping


def to_bson(document: Document) -> bytes:
    """BSON bytes of a dict, `bson.SON` (which can repeat keys), RawBSONDocument or raw bytes."""
    if isinstance(document, (bytes, bytearray, memoryview)):
        return bytes(document)
    if isinstance(document, RawBSONDocument):
        return bytes(document.raw)
    if isinstance(document, Mapping):
        return bson.encode(document)
    raise TypeError(f"a sample must be a mapping or BSON bytes, not {type(document).__name__}")


def root_start_ms(raw: bytes) -> int | None:
    """The root `start` Date (the sample time mongod uses), in ms; None if absent."""
    value = RawBSONDocument(raw, RAW_MS).get("start")
    return int(value) if isinstance(value, DatetimeMS) else None


def metadata_document(date_ms: int, doc: bytes) -> bytes:
    """`{_id: Date, type: 0, doc: {...}}`, as `createBSONMetadataDocument` builds it."""
    return bson.encode(SON([("_id", DatetimeMS(date_ms)), ("type", TYPE_METADATA), ("doc", RawBSONDocument(doc))]))


def chunk_document(date_ms: int, data: bytes) -> bytes:
    """`{_id: Date, type: 1, data: BinData(0, ...)}`, as `createBSONMetricChunkDocument` builds it."""
    return bson.encode(SON([("_id", DatetimeMS(date_ms)), ("type", TYPE_METRIC_CHUNK), ("data", bson.Binary(data, 0))]))
