"""Mutations that know the formats, for the fuzz targets (`bench/fuzz_targets.py`, bounded in
CI) and the campaign (`bench/campaign.py`, a million inputs). Each takes a `random.Random`, so
an input is reproduced from its seed number alone, and hypothesis draws one
(`st.randoms(use_true_random=False)`) to shrink what it finds.

FTDC (docs/ftdc-format.md): a file is BSON documents `{_id: Date, type, doc | data}`; a metric
chunk's `data` is `uint32 length ‖ zlib(reference document ‖ uint32 metrics ‖ uint32 deltas ‖
varints)`. The edits reach each layer: the envelope (document lengths, `_id`, `type`, order,
an interim file cut mid-write), the compression (the length prefix, the zlib stream, a stream
that inflates far past its claim), the reference document (a value's BSON type, keys added,
removed, renamed or nested), the two counts, and the varint stream (huge values, zero runs,
cuts). Logs: whole lines (cut, joined, NULs, re-dated) and, in JSON lines, a field's value or
type (`t`, `attr.durationMillis`, `ns`, …), with hostile strings (terminal escapes, formulas).
"""

from __future__ import annotations

import functools
import json
import random
import struct
import zlib
from dataclasses import dataclass

import bson
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.son import SON
from bson.timestamp import Timestamp

# Strings that do something when they reach a terminal, a page, a spreadsheet or a path raw.
HOSTILE = [
    "\x1b]0;pwned\x07",
    "\x1b[2J\x1b[H",
    "<script>alert(1)</script>",
    '=HYPERLINK("http://x")',
    "../../etc/passwd",
    "a\0b",
    "\u202eevil",
    "x" * 70_000,
]
# Bytes no UTF-8 reader accepts: a lone continuation byte, an encoded surrogate, an overlong NUL.
INVALID_UTF8 = [b"\xff", b"\xed\xa0\x80", b"\xc0\x80"]
_INT32 = [0, 1, -1, 4, 5, 2**31 - 1, -(2**31), 2**16, 255]
_RAW = CodecOptions(
    document_class=SON, datetime_conversion=DatetimeConversion.DATETIME_MS, unicode_decode_error_handler="replace"
)


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """One to four blind edits: byte flips, cuts, insertions, or an int32 overwritten."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            break
        at = rng.randrange(len(buf))
        kind = rng.choice(("flip", "truncate", "insert", "int32"))
        if kind == "flip":
            buf[at] ^= rng.randint(1, 255)
        elif kind == "truncate":
            del buf[at:]
        elif kind == "insert":
            buf[at:at] = rng.randbytes(rng.randint(1, 8))
        else:
            buf[at : at + 4] = struct.pack("<i", _int32(rng))
    return bytes(buf)


def _int32(rng: random.Random) -> int:
    return rng.choice(_INT32) if rng.random() < 0.6 else rng.randint(-(2**31), 2**31 - 1)


# --- FTDC ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """One BSON document of an FTDC file; a metric chunk's payload kept inflated."""

    raw: bytes
    kind: object  # the `type` field as read (int normally)
    id_ms: int | None
    inflated: bytes | None  # type 1 only


def split_ftdc(data: bytes) -> list[Document]:
    """The documents of a file (a seed, or an edited one read back); stops at the first one
    that does not parse."""
    out, at = [], 0
    while at + 4 <= len(data):
        size = struct.unpack_from("<i", data, at)[0]
        if size < 5 or at + size > len(data):
            break
        raw = data[at : at + size]
        doc = bson.decode(raw, _RAW)
        inflated = None
        if doc.get("type") == 1 and isinstance(doc.get("data"), bytes):
            try:
                inflated = zlib.decompress(bytes(doc["data"])[4:])
            except zlib.error:  # an edited file read back: a chunk whose payload no longer inflates
                pass
        ident = doc.get("_id")
        out.append(Document(raw, doc.get("type"), int(ident) if isinstance(ident, DatetimeMS) else None, inflated))
        at += size
    return out


def pruned(
    documents: list[Document], rng: random.Random, leaves: int = 60, samples: int = 15, samples_per_chunk: int = 5
) -> bytes:
    """A small file in a real node's shape: its metadata document, then chunks whose reference
    document keeps about `leaves` of the real one's values (names, types and nesting as they
    were), `samples` samples in all, written by `ftdc.writer` (true deltas, true lengths)."""
    from ftdc.writer.compressor import ChunkCompressor
    from ftdc.writer.documents import chunk_document

    first = next(d for d in documents if d.inflated is not None)
    size = struct.unpack_from("<i", first.inflated or b"")[0]
    reference = bson.decode((first.inflated or b"")[:size], _RAW)
    paths = [p for p in _paths(reference) if p[0] != "start"]
    keep = set(rng.sample(paths, min(leaves, len(paths))))

    def prune(doc: SON, prefix: tuple) -> SON:
        out = SON()
        for key, value in doc.items():
            path = (*prefix, key)
            if isinstance(value, dict):
                inner = prune(value, path)
                if inner:
                    out[key] = inner
            elif path in keep or key == "start":
                out[key] = value
        return out

    small = prune(reference, ())
    compressor = ChunkCompressor(samples_per_chunk)
    chunks = []
    for i in range(samples):
        closed = compressor.add_sample(bson.encode(_stepped(small, rng)), (first.id_ms or 0) + 1000 * i)
        chunks += [closed] if closed else []
    chunks += [c for c in [compressor.compressed()] if c]
    metadata = [d.raw for d in documents if d.kind == 0][:1]
    return b"".join(metadata + [chunk_document(c.date_ms, c.data) for c in chunks])


def _stepped(doc: SON, rng: random.Random) -> SON:
    """`doc` with each number moved a little, types kept, as the next second's sample."""
    out = SON()
    for key, value in doc.items():
        if isinstance(value, dict):
            out[key] = _stepped(value, rng)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            out[key] = value
        elif isinstance(value, Int64):
            out[key] = Int64(max(-(2**63), min(2**63 - 1, value + rng.randint(0, 1000))))
        elif isinstance(value, int):
            out[key] = max(-(2**31), min(2**31 - 1, value + rng.randint(0, 50)))
        else:
            out[key] = value + rng.random()
    return out


def _envelope(fields: list[tuple[str, object]]) -> bytes:
    return bson.encode(SON(fields))


def _chunk(id_ms: object, kind: object, data: bytes) -> bytes:
    return _envelope([("_id", id_ms), ("type", kind), ("data", bson.Binary(data, 0))])


def _leaf(rng: random.Random) -> object:
    """A value of any BSON type, several of them odd for a metric."""
    return rng.choice(
        [
            lambda: Int64(rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randint(-(2**40), 2**40)])),
            lambda: rng.choice([0, -1, 2**31 - 1, -(2**31)]),
            lambda: rng.choice([0.5, -0.0, float("nan"), float("inf"), -float("inf"), 1e308, 9.3e18]),
            lambda: rng.random() < 0.5,
            lambda: DatetimeMS(rng.choice([0, -1, -62_135_596_800_001, 253_402_300_800_000, 2**63 - 1, -(2**63)])),
            lambda: Timestamp(rng.randint(0, 2**32 - 1), rng.randint(0, 2**32 - 1)),
            lambda: rng.choice(HOSTILE),
            lambda: None,
            lambda: Decimal128(rng.choice(["1.5", "NaN", "-Infinity", "1E+6144", "-0"])),
            lambda: ObjectId(),
            lambda: [rng.randint(0, 9)] * rng.randint(0, 3),
            lambda: {},
            lambda: MinKey() if rng.random() < 0.5 else MaxKey(),
            lambda: bson.Binary(rng.randbytes(4), rng.choice([0, 4, 128])),
        ]
    )()


def _paths(doc: SON, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a document, nested documents and arrays included."""
    out = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc)
    for key, value in items:
        path = (*prefix, key)
        out.append(path)
        if isinstance(value, (dict, list)) and len(out) < 20_000:
            out.extend(_paths(value, path))
    return out


def _edit_reference(reference: bytes, rng: random.Random) -> bytes:
    """A value's type changed, a key added, removed, renamed (hostile names) or nested deep."""
    doc = bson.decode(reference, _RAW)
    paths = _paths(doc)
    if not paths:
        return bson.encode(SON([("x", _leaf(rng))]))
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        edit = rng.choice(("type", "type", "remove", "add", "rename", "nest"))
        try:
            if edit == "type":
                parent[key] = _leaf(rng)
            elif edit == "remove" and isinstance(parent, dict):
                del parent[key]
            elif edit == "add" and isinstance(parent, dict):
                parent[rng.choice(HOSTILE[:7] + ["n", "start", "end"])] = _leaf(rng)
            elif edit == "rename" and isinstance(parent, dict):
                parent[str(key) + rng.choice(HOSTILE[:7] + [".", "$"])] = parent.pop(key)
            elif edit == "nest":
                value: object = _leaf(rng)
                for _ in range(rng.choice([2, 50, 200])):
                    value = {"d": value}
                parent[key] = value
        except (KeyError, IndexError, TypeError):
            pass
        paths = _paths(doc) or paths
    try:
        return bson.encode(doc)
    except (bson.errors.InvalidDocument, ValueError, OverflowError):  # a key bson will not write
        return reference


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _edit_payload(inflated: bytes, rng: random.Random) -> bytes:
    """The inflated chunk with its reference document, its counts or its varints edited."""
    size = struct.unpack_from("<i", inflated)[0] if len(inflated) >= 4 else 0
    if not 5 <= size <= len(inflated) - 8:
        return mutate_bytes(inflated, rng)
    reference, counts, deltas = inflated[:size], inflated[size : size + 8], inflated[size + 8 :]
    layer = rng.choice(("reference", "counts", "deltas", "deltas", "bytes"))
    if layer == "reference":
        reference = _edit_reference(reference, rng)
    elif layer == "counts":
        metrics, samples = struct.unpack("<II", counts)
        lie = lambda n: rng.choice([0, 1, n - 1, n + 1, 2 * n, 50_001, 2**31 - 1, 2**32 - 1]) % 2**32  # noqa: E731
        metrics, samples = (lie(metrics), samples) if rng.random() < 0.5 else (metrics, lie(samples))
        counts = struct.pack("<II", metrics, samples)
    elif layer == "deltas":
        buf = bytearray(deltas)
        at = rng.randint(0, len(buf))
        edit = rng.choice(("huge", "zero-run", "cut", "random", "overlong"))
        if edit == "huge":
            buf[at:at] = _varint(rng.choice([2**63, 2**64 - 1, 2**63 - 1]))
        elif edit == "zero-run":
            buf[at:at] = b"\0" + _varint(rng.choice([0, 1, 2**31, 2**32 + 5, 2**63]))
        elif edit == "cut":
            del buf[at:]
        elif edit == "random":
            buf[at : at + 16] = rng.randbytes(rng.randint(1, 16))
        else:  # more than 10 continuation bytes
            buf[at:at] = b"\xff" * rng.choice([10, 11, 40])
        deltas = bytes(buf)
    else:
        return mutate_bytes(inflated, rng)
    return reference + counts + deltas


def _compressed(inflated: bytes, rng: random.Random) -> bytes:
    """`uint32 length ‖ zlib`, the length true or a lie, the stream intact or damaged."""
    stream = zlib.compress(inflated, rng.choice([1, 6]))
    length = len(inflated)
    edit = rng.choice(("none", "none", "none", "length", "stream", "raw", "trailing"))
    if edit == "length":
        length = rng.choice([0, 1, length - 1, length + 1, 2**31 - 1, 2**32 - 1, length * 1000]) % 2**32
    elif edit == "stream":
        stream = mutate_bytes(stream, rng)
    elif edit == "raw":  # deflate with no zlib header, as a careless writer might
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        stream = compressor.compress(inflated) + compressor.flush()
    else:
        stream += rng.randbytes(rng.randint(1, 16))
    return struct.pack("<I", length) + stream


@functools.cache
def _zeros_deflated(megabytes: int) -> bytes:
    compressor = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    return b"".join(compressor.compress(zeros) for _ in range(megabytes)) + compressor.flush()


def _bomb(rng: random.Random) -> bytes:
    """A payload that inflates to far more than a chunk holds (up to 256 MB), its length true or not."""
    megabytes = rng.choice([1, 1, 1, 64, 256])
    return struct.pack("<I", rng.choice([megabytes << 20, 1000, 2**32 - 1])) + _zeros_deflated(megabytes)


def mutate_ftdc(documents: list[Document], rng: random.Random) -> bytes:
    """A file made from a seed's documents with one to three edits that know the format."""
    items = [(d, d.raw) for d in documents]  # (the seed's document, its bytes as edited so far)
    for _ in range(rng.randint(1, 3)):
        edit = rng.choice(
            ("payload",) * 12 + ("zlib",) * 4 + ("envelope",) * 4 + ("order",) * 2 + ("interim",) * 2 + ("bytes",) * 2 + ("bomb",)
        )
        chunks = [i for i, (d, _) in enumerate(items) if d.inflated is not None]
        if edit in ("payload", "zlib", "bomb") and chunks:
            i = rng.choice(chunks)
            doc = items[i][0]
            if edit == "payload":
                data = _compressed(_edit_payload(doc.inflated or b"", rng), rng)
            elif edit == "zlib":
                data = _compressed(doc.inflated or b"", rng)
            else:
                data = _bomb(rng)
            items[i] = (doc, _chunk(DatetimeMS(doc.id_ms or 0), doc.kind, data))
        elif edit == "envelope" and items:
            i = rng.randrange(len(items))
            items[i] = (items[i][0], _edit_envelope(items[i][0], items[i][1], rng))
        elif edit == "order" and items:
            i = rng.randrange(len(items))
            how = rng.choice(("duplicate", "drop", "swap", "reverse"))
            if how == "duplicate":
                items.insert(i, items[i])
            elif how == "drop" and len(items) > 1:
                del items[i]
            elif how == "swap":
                j = rng.randrange(len(items))
                items[i], items[j] = items[j], items[i]
            else:
                items.reverse()
        elif edit == "interim" and items:  # a file cut while mongod wrote it, or an interim chunk appended twice
            if rng.random() < 0.5:
                data = b"".join(raw for _, raw in items)
                return data[: rng.randrange(len(data))]
            items.append(items[rng.choice(chunks)] if chunks else items[-1])
        else:
            return mutate_bytes(b"".join(raw for _, raw in items), rng)
    return b"".join(raw for _, raw in items)


def _edit_envelope(doc: Document, raw: bytes, rng: random.Random) -> bytes:
    """`_id` outside the calendar or going back, `type` of another kind, a field gone, a lying length."""
    try:
        fields = bson.decode(raw, _RAW)
    except bson.errors.InvalidBSON:  # an earlier edit's lie: edit the bytes instead
        return mutate_bytes(raw, rng)
    what = rng.choice(("_id", "type", "length", "missing"))
    if what == "_id":
        fields["_id"] = rng.choice(
            [DatetimeMS(-62_135_596_800_001), DatetimeMS(253_402_300_800_000), DatetimeMS(2**63 - 1), DatetimeMS(0), "x", None]
            + ([DatetimeMS(doc.id_ms - 86_400_000)] if doc.id_ms else [])
        )
    elif what == "type":
        fields["type"] = rng.choice([0, 1, 2, 3, -1, Int64(1), 1.0, "1", None])
    elif what == "missing":
        fields.pop(rng.choice(list(fields) or ["_id"]), None)
    out = bson.encode(fields)
    if what == "length":
        out = struct.pack("<i", rng.choice([0, 4, 5, len(out) - 1, len(out) + 1, 2**31 - 1, -1])) + out[4:]
    return out


# --- logs -----------------------------------------------------------------------------------

# Edits that real damage makes to a log line, beside the samples' own oddities.
_LINE_EDITS = ("flip", "cut", "nul", "year", "digits", "duplicate", "join", "field", "field", "hostile")
_DATES = [
    "0000-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999+14:00",
    "10000-01-01T00:00:00Z",
    "2024-02-30T25:61:61.000Z",
    "2024-05-14T09:00:00.000-25:00",
    "2024-05-14T09:00:00",
    "2024-05-14",
    "",
]


def _json_value(rng: random.Random) -> object:
    return rng.choice(
        [
            lambda: rng.choice([-1, 0, 2**63, -(2**63) - 1, 10**30, 1.5e308, -0.0]),
            lambda: rng.choice(HOSTILE),
            lambda: None,
            lambda: rng.random() < 0.5,
            lambda: [1, "a", {}],
            lambda: {"$date": rng.choice(_DATES + [0, -1, 2**62])},
            lambda: {"$numberLong": rng.choice(["1", "x", "99999999999999999999"])},
            lambda: {"$oid": "zz"},
        ]
    )()


def _edit_json_field(line: bytes, rng: random.Random) -> bytes:
    """A JSON line with one field's value or type changed; other lines unchanged."""
    try:
        doc = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return line
    if not isinstance(doc, dict):
        return line
    target = doc
    if isinstance(doc.get("attr"), dict) and rng.random() < 0.6:
        target = doc["attr"]
    keys = list(target) or ["x"]
    key = rng.choice(keys + ["t", "s", "c", "id", "ctx", "msg", "durationMillis", "ns", "planSummary", "appName"])
    if key == "t" and rng.random() < 0.7:
        target[key] = {"$date": rng.choice(_DATES)} if rng.random() < 0.8 else rng.choice(_DATES)
    elif rng.random() < 0.15:
        target.pop(key, None)
    elif rng.random() < 0.1:
        value: object = _json_value(rng)
        for _ in range(rng.choice([10, 300])):
            value = {"d": value}
        target[key] = value
    else:
        target[key] = _json_value(rng)
    try:
        return json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return line


def mutate_log(lines: list[bytes], rng: random.Random) -> bytes:
    """Some of `lines`, a few of them damaged, the file maybe NUL-padded at its start."""
    start = rng.randint(0, max(0, len(lines) - 1))
    kept = list(lines[start : start + rng.randint(1, 40)])
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(kept))
        line = bytearray(kept[i])
        edit = rng.choice(_LINE_EDITS)
        at = rng.randint(0, max(0, len(line) - 1))
        if edit == "flip" and line:
            line[at] ^= rng.randint(1, 255)
        elif edit == "cut":
            del line[at:]
        elif edit == "nul":
            line[at:at] = b"\0" * rng.randint(1, 3)
        elif edit == "year":  # the stamp's year: 0000, 9999, a fifth digit
            year = line.find(b"20")
            if year >= 0:
                line[year : year + 4] = rng.choice([b"0000", b"0001", b"9999", b"10000", b"-001"])
        elif edit == "digits":
            line[at:at] = rng.choice([b"9" * 25, b"-1", b"1e309", b"18446744073709551616"])
        elif edit == "duplicate":
            kept.insert(i, bytes(line))
        elif edit == "join" and i + 1 < len(kept):
            line += kept.pop(i + 1)
        elif edit == "field":
            line = bytearray(_edit_json_field(bytes(line), rng))
        elif edit == "hostile":
            line[at:at] = rng.choice([h.encode() for h in HOSTILE[:6]] + INVALID_UTF8)
        kept[i] = bytes(line)
    padding = b"\0" * rng.choice([0, 0, 0, 512, 70_000])
    return padding + b"\n".join(kept) + b"\n"
