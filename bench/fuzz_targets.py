"""Fuzz targets over real files (issue 19 §6), shared by `tests/test_fuzz_targets.py` (a
bounded run in CI) and `python -m bench.fuzz` (long runs); `mutate` is the byte mutator
`tests/test_fuzz.py` also uses.

Each target takes a real file, applies mutations drawn by hypothesis, and checks what a
user relies on, end to end, not just "no crash":

- FTDC: the catalog, the reader and the lazy scan agree on the columns (a chunk the reader
  skips lends no metric to the catalog), every value can be written out (CSV: no Date
  outside the calendar), and the analysis runs; only `FTDCError` may end a read.
- Log lines: `read_logs` returns frames or raises `NotALog`; every line is a row or a
  problem row; the summary, the `logs` table's description and the problem listing render.
"""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from pathlib import Path

import polars as pl
from bson import decode_all
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument
from hypothesis import strategies as st

import analysis
import ftdc
from ftdc import FTDCError
from ftdc.logs import report
from ftdc.logs.sources import NotALog
from ftdc.writer.documents import chunk_document

ROOT = Path(__file__).resolve().parents[1]
DEMO_FTDC = ROOT / "samples" / "diagnostic.data" / "metrics.2024-05-14T09-00-00Z-00000"
DEMO_LOG = ROOT / "samples" / "mongod.log"


def ftdc_seeds(samples: Path) -> dict[str, bytes]:  # samples: ../shared/samples/ftdc
    """Real files: a 4.2.1 archive file (several schemas), the 7.0 interim file, the demo node."""
    return {
        "mongod-4.2.1": (samples / "mongod-4.2.1" / "diagnostic.data" / "metrics.2021-07-13T01-43-32Z-00000").read_bytes(),
        "mongod-7.0-interim": (samples / "mongod-7.0" / "diagnostic.data" / "metrics.interim").read_bytes(),
        "demo": DEMO_FTDC.read_bytes(),
    }


def log_seeds(samples: Path) -> dict[str, list[bytes]]:  # samples: ../shared/samples/logs
    """Real log lines: the demo's JSON log and a 4.2.11 text log."""
    return {
        "json": DEMO_LOG.read_bytes().splitlines(),
        "text": (samples / "legacy-text" / "mongod_4.2.11.log").read_bytes().splitlines()[:200],
    }


def mutate(data: bytes, draw) -> bytes:
    """One to four edits: byte flips, cuts, insertions, or an int32 overwritten (length fields)."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        if not buf:
            break
        at = draw(st.integers(0, len(buf) - 1))
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "int32"]))
        if kind == "flip":
            buf[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del buf[at:]
        elif kind == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            value = draw(st.sampled_from([0, 1, 4, 5, -1, 2**31 - 1, -(2**31)]) | st.integers(-(2**31), 2**31 - 1))
            buf[at : at + 4] = struct.pack("<i", value)
    return bytes(buf)


def _chunks(seed: bytes) -> list[tuple[int, RawBSONDocument]]:
    """`(offset, document)` of each metric chunk of an intact FTDC file."""
    out, offset = [], 0
    for doc in decode_all(seed, CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_MS)):
        if doc["type"] == 1:
            out.append((offset, doc))
        offset += len(doc.raw)
    return out


def mutated_ftdc(seed: bytes, draw) -> bytes:
    """`seed` with its bytes mutated, or one chunk's inflated payload mutated and compressed
    again with a true length prefix (so the edits reach the BSON and varint parsers)."""
    if not draw(st.booleans()):
        return mutate(seed, draw)
    chunks = _chunks(seed)
    if not chunks:
        return mutate(seed, draw)
    offset, doc = draw(st.sampled_from(chunks))
    inflated = mutate(zlib.decompress(bytes(doc["data"])[4:]), draw)
    data = struct.pack("<I", len(inflated)) + zlib.compress(inflated)
    return seed[:offset] + chunk_document(int(doc["_id"]), data) + seed[offset + len(doc.raw) :]


# Edits that real damage makes to a log line, beside mongod_4.2.11.log's own oddities.
_LINE_EDITS = ["flip", "cut", "nul", "year", "digits", "duplicate", "join"]


def mutated_log(lines: list[bytes], draw) -> bytes:
    """Some of `lines`, a few of them damaged, the file maybe NUL-padded at its start."""
    start = draw(st.integers(0, max(0, len(lines) - 1)))
    kept = list(lines[start : start + draw(st.integers(1, 40))])
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(kept) - 1))
        line = bytearray(kept[i])
        edit = draw(st.sampled_from(_LINE_EDITS))
        at = draw(st.integers(0, max(0, len(line) - 1)))
        if edit == "flip" and line:
            line[at] ^= draw(st.integers(1, 255))
        elif edit == "cut":
            del line[at:]
        elif edit == "nul":
            line[at:at] = b"\0" * draw(st.integers(1, 3))
        elif edit == "year":  # the stamp's year: 0000, 9999, a fifth digit
            year = line.find(b"20")
            if year >= 0:
                line[year : year + 4] = draw(st.sampled_from([b"0000", b"0001", b"9999", b"10000", b"-001"]))
        elif edit == "digits":
            line[at:at] = draw(st.sampled_from([b"9" * 25, b"-1", b"1e309", b"18446744073709551616"]))
        elif edit == "duplicate":
            kept.insert(i, bytes(line))
        elif edit == "join" and i + 1 < len(kept):
            line += kept.pop(i + 1)
        kept[i] = bytes(line)
    padding = b"\0" * draw(st.sampled_from([0, 0, 0, 512, 70_000]))
    return padding + b"\n".join(kept) + b"\n"


def check_ftdc(path: Path) -> None:
    """What a user relies on when one FTDC file is damaged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            catalog = ftdc.read_catalog(path)
            frame = ftdc.read_ftdc(path)
        except FTDCError:
            return
        assert set(frame.columns) == set(catalog.schema()), "the catalog and the reader disagree on the metrics"
        assert ftdc.scan_ftdc(path).collect().columns == list(catalog.schema())
        frame.write_csv(io.BytesIO())  # every time within the calendar
        frame.to_arrow().cast(pl.DataFrame(schema={c: _micro(t) for c, t in frame.schema.items()}).to_arrow().schema)
        try:
            analysis.analyze(path)
        except FTDCError:
            pass


def _micro(dtype: pl.DataType) -> pl.DataType:
    """The dataset's types: times in microseconds, as Spark reads them."""
    return pl.Datetime("us", "UTC") if isinstance(dtype, pl.Datetime) else dtype


def check_log(path: Path) -> None:
    """What a user relies on when a log is damaged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            frames = ftdc.read_logs(path, workers=1)
        except NotALog:
            return
    lines = path.read_bytes().count(b"\n")
    seen = pl.concat([frames.slow_ops["line"], frames.events["line"], frames.problems["line"]]).drop_nulls().unique()
    assert set(seen.to_list()) == set(range(1, lines + 1)), "a line is neither a row nor a problem"
    ftdc.summarize_queries(frames.slow_ops)
    report.describe(frames, 100)
    report.render_problems_table(frames.problems)
    report.render_problems_text(frames.problems, "csv")
