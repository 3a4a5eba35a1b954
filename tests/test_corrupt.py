"""Damaged FTDC input: every problem is a warning naming the file and byte
offset, every intact chunk is still read, and nothing crashes or hangs."""

from __future__ import annotations

import datetime as dt
import re
import struct
import warnings
import zlib
from pathlib import Path

import pytest
from ftdc_files import chunk_samples, documents, payload

import ftdc
from ftdc import FTDCError, FTDCWarning
from ftdc.writer import FTDCWriter
from ftdc.writer.documents import chunk_document

SMALL_42 = ("mongod-4.2.1", "diagnostic.data", "metrics.2021-07-13T01-43-32Z-00000")


def read_with_warnings(path: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = ftdc.read_ftdc(path)
    messages = [str(w.message) for w in caught if issubclass(w.category, FTDCWarning)]
    return frame, messages


def offsets_named(messages: list[str], path: Path) -> list[int]:
    """Byte offsets of the warnings that name `path`."""
    return [int(m) for text in messages if str(path) in text for m in re.findall(r"offset (\d+)", text)[:1]]


@pytest.fixture(params=["real", "writer"])
def ftdc_file(request, tmp_path) -> Path:
    """A real 4.2.1 archive file, or a writer-made one, copied to a scratch path."""
    out = tmp_path / "metrics.2024-01-01T00-00-00Z-00000"
    if request.param == "real":
        from conftest import require_samples

        out.write_bytes(require_samples("ftdc", *SMALL_42).read_bytes())
        return out
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    with FTDCWriter(tmp_path / "w", metadata={"start": start, "host": "h"}, samples_per_chunk=50) as writer:
        for i in range(320):
            writer.add_sample({"start": start + dt.timedelta(seconds=i), "ss": {"n": i, "b": i % 3 == 0, "f": i / 7}})
    out.write_bytes(writer.files[0].read_bytes())
    return out


def chunk_table(path: Path):
    """`(offset, length, samples)` of every type-1 document."""
    data = path.read_bytes()
    table = []
    for offset, doc in documents(path):
        if doc["type"] == 1:
            (length,) = struct.unpack_from("<i", data, offset)
            table.append((offset, length, chunk_samples(doc)))
    return table


def replace_chunk_data(path: Path, index: int, new_data: bytes) -> int:
    """Rewrites chunk `index` with `new_data`; returns its offset."""
    data = path.read_bytes()
    offset, length, _ = chunk_table(path)[index]
    doc = dict(documents(path))[offset]
    rebuilt = chunk_document(int(doc["_id"]), new_data)
    path.write_bytes(data[:offset] + rebuilt + data[offset + length :])
    return offset


def total_samples(path: Path) -> int:
    return sum(samples for _, _, samples in chunk_table(path))


def test_intact_file_reads_cleanly(ftdc_file):
    frame, messages = read_with_warnings(ftdc_file)
    assert frame.height == total_samples(ftdc_file) and not messages


def test_truncated_last_document(ftdc_file):
    offset, _, last = chunk_table(ftdc_file)[-1]
    total = total_samples(ftdc_file)
    data = ftdc_file.read_bytes()
    ftdc_file.write_bytes(data[: len(data) - 50])
    frame, messages = read_with_warnings(ftdc_file)
    assert frame.height == total - last
    assert offsets_named(messages, ftdc_file) == [offset]


def test_garbage_appended(ftdc_file):
    total, size = total_samples(ftdc_file), ftdc_file.stat().st_size
    ftdc_file.write_bytes(ftdc_file.read_bytes() + b"\x17garbage" * 40)
    frame, messages = read_with_warnings(ftdc_file)
    assert frame.height == total
    assert offsets_named(messages, ftdc_file) == [size]


def test_flipped_byte_in_zlib_stream(ftdc_file):
    total = total_samples(ftdc_file)
    offset, _, samples = chunk_table(ftdc_file)[1]
    doc = dict(documents(ftdc_file))[offset]
    data = bytearray(doc["data"])
    data[len(data) // 2] ^= 0xFF
    replace_chunk_data(ftdc_file, 1, bytes(data))
    frame, messages = read_with_warnings(ftdc_file)
    assert frame.height == total - samples
    assert offsets_named(messages, ftdc_file) == [offset]


@pytest.mark.parametrize("declared", [lambda n: n + 1, lambda n: n - 1, lambda n: 2**32 - 1, lambda n: 0])
def test_lying_uncompressed_length(ftdc_file, declared):
    total = total_samples(ftdc_file)
    offset, _, samples = chunk_table(ftdc_file)[0]
    data = bytes(dict(documents(ftdc_file))[offset]["data"])
    (length,) = struct.unpack_from("<I", data)
    replace_chunk_data(ftdc_file, 0, struct.pack("<I", declared(length)) + data[4:])
    frame, messages = read_with_warnings(ftdc_file)
    assert frame.height == total - samples
    assert offsets_named(messages, ftdc_file) == [offset]


def rewrite_counts(ftdc_file: Path, index: int, metric_count=None, delta_count=None, deltas=None) -> tuple[int, int]:
    """Rewrites a chunk's counts (and optionally its delta bytes), correctly compressed."""
    offset, _, samples = chunk_table(ftdc_file)[index]
    inflated = payload(dict(documents(ftdc_file))[offset])
    (reference_length,) = struct.unpack_from("<i", inflated)
    old_metrics, old_deltas = struct.unpack_from("<II", inflated, reference_length)
    body = inflated[reference_length + 8 :] if deltas is None else deltas
    new = inflated[:reference_length] + struct.pack(
        "<II",
        old_metrics if metric_count is None else metric_count(old_metrics),
        old_deltas if delta_count is None else delta_count(old_deltas),
    )
    new += body
    replace_chunk_data(ftdc_file, index, struct.pack("<I", len(new)) + zlib.compress(new))
    return offset, samples


@pytest.mark.parametrize(
    "change",
    [
        {"delta_count": lambda d: d * 20 + 20},  # more values than the delta bytes hold
        {"delta_count": lambda d: 1_000_001},  # implausible: refused before allocating
        {"metric_count": lambda m: m + 1},  # disagrees with the reference document
        {"metric_count": lambda m: 2**32 - 1},
        {"deltas": b"\xff" * 11},  # an over-long varint
        {"deltas": b"\x00\xff\xff\xff\xff\x0f"},  # a zero run longer than the matrix
    ],
    ids=["deltas-x20", "deltas-1M", "metrics+1", "metrics-max", "long-varint", "long-zero-run"],
)
def test_counts_disagree_with_data(ftdc_file, change):
    total = total_samples(ftdc_file)
    offset, samples = rewrite_counts(ftdc_file, 0, **change)
    frame, messages = read_with_warnings(ftdc_file)
    assert frame.height == total - samples
    assert offsets_named(messages, ftdc_file) == [offset]


def bson_document(body: bytes) -> bytes:
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def nested(depth: int) -> bytes:
    """A sample whose metric `x` is `depth` objects below the root."""
    doc = bson_document(b"\x10x\x00" + struct.pack("<i", 1))
    for _ in range(depth - 1):
        doc = bson_document(b"\x03o\x00" + doc)
    return bson_document(b"\x09start\x00" + struct.pack("<q", 1_700_000_000_000) + b"\x03o\x00" + doc)


@pytest.mark.parametrize("depth, readable", [(10, True), (11, False), (500, False)])
def test_deep_nesting(tmp_path, depth, readable):
    inflated = nested(depth) + struct.pack("<II", 2, 0)  # metrics: start, x
    path = tmp_path / "metrics.deep"
    path.write_bytes(chunk_document(1_700_000_000_000, struct.pack("<I", len(inflated)) + zlib.compress(inflated)))
    frame, messages = read_with_warnings(path)
    if readable:
        assert frame.height == 1 and not messages
    else:
        # mongod refuses such documents ("Recursion limit reached"); so does the reader.
        assert frame.height == 0
        assert offsets_named(messages, path) == [0] and "deeper than 10" in messages[0]


def test_empty_file_alone_is_an_error(tmp_path):
    path = tmp_path / "metrics.empty"
    path.write_bytes(b"")
    with pytest.raises(FTDCError, match="empty"):
        ftdc.read_ftdc(path)


def test_empty_file_beside_intact_ones(ftdc_file):
    total = total_samples(ftdc_file)
    empty = ftdc_file.parent / "metrics.2024-01-02T00-00-00Z-00000"
    empty.write_bytes(b"")
    frame, messages = read_with_warnings(ftdc_file.parent)
    assert frame.height == total
    assert any(str(empty) in m for m in messages)


def test_every_single_cut_point_is_survived(tmp_path):
    """Truncating a writer-made file at every byte never fails on what precedes the cut."""
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    with FTDCWriter(tmp_path / "w", metadata={"start": start}, samples_per_chunk=5) as writer:
        for i in range(12):
            writer.add_sample({"start": start + dt.timedelta(seconds=i), "n": i})
    data = writer.files[0].read_bytes()
    ends = [offset + len(doc.raw) for offset, doc in documents(writer.files[0]) if doc["type"] == 1]
    cut_file = tmp_path / "metrics.cut"
    for cut in range(1, len(data)):
        cut_file.write_bytes(data[:cut])
        whole_chunks = sum(1 for e in ends if e <= cut)
        expected = [5, 5, 2][:whole_chunks]
        try:
            frame, _ = read_with_warnings(cut_file)
            assert frame.height == sum(expected), cut
        except FTDCError:
            assert not expected, cut


def test_unknown_document_type_is_skipped_with_a_warning(tmp_path, ftdc_file):
    import bson

    odd = bson.encode({"_id": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "type": 7, "doc": {"x": 1}})
    path = tmp_path / "metrics.odd"
    path.write_bytes(odd + ftdc_file.read_bytes())
    frame, messages = read_with_warnings(path)
    assert frame.height == total_samples(ftdc_file)
    assert any(f"{path}: offset 0: document of unknown type 7 skipped" in m for m in messages)


def test_problems_cross_typed_with_file_offset_and_kind(tmp_path, ftdc_file):
    """Each problem is a value (file, offset, kind, message), not a line of text: the catalog lists them, a read of
    the same files warns of each once, in the words `str(problem)` gives, and an empty file is a problem of its own."""
    import bson

    from ftdc import Problem, ProblemKind

    odd = bson.encode({"_id": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "type": 7, "doc": {"x": 1}})
    garbage = b"\x00not a document\x00" * 4
    folder = tmp_path / "diagnostic.data"
    folder.mkdir()
    damaged = folder / "metrics.2024-01-01T00-00-00Z-00000"
    damaged.write_bytes(odd + garbage + ftdc_file.read_bytes())
    (folder / "metrics.2024-01-01T00-00-01Z-00000").write_bytes(b"")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        problems = ftdc.read_catalog(folder).problems
    kinds = {(p.file.rsplit("/", 1)[-1], p.offset, p.kind) for p in problems}
    assert (damaged.name, 0, ProblemKind.UNKNOWN_TYPE) in kinds
    assert (damaged.name, len(odd), ProblemKind.DAMAGED) in kinds
    assert ("metrics.2024-01-01T00-00-01Z-00000", None, ProblemKind.EMPTY) in kinds
    assert all(isinstance(p, Problem) for p in problems)
    assert [str(w.message) for w in caught if issubclass(w.category, FTDCWarning)] == [str(p) for p in problems]
    assert str(problems[0]).startswith(f"{problems[0].file}: ")
