"""The FTDC writer: hypothesis round trips through read_ftdc against an
independent oracle of the extraction rules, byte-identical re-encoding of
every real chunk, and mongod's chunk, interim and rotation behaviour."""

from __future__ import annotations

import datetime as dt
import math
import struct
from pathlib import Path

import polars as pl
import pytest
from bson.decimal128 import Decimal128
from bson.objectid import ObjectId
from ftdc_files import chunk_samples, chunks, documents, payload, sample_files
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ftdc
from ftdc import _native
from ftdc.writer import ChunkCompressor, FTDCWriter

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
T0_MS = 1_700_000_000_000

# ---------------------------------------------------------------------------
# A document model that can say everything BSON can, duplicate keys included:
# a document is a list of (key, (type, value)) pairs.

NUMERIC = ("double", "int32", "int64", "decimal")


def encode_document(pairs) -> bytes:
    body = b"".join(encode_element(key, value) for key, value in pairs)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def encode_element(key: str, typed) -> bytes:
    kind, v = typed
    name = key.encode() + b"\x00"
    if kind == "double":
        return b"\x01" + name + struct.pack("<d", v)
    if kind == "int32":
        return b"\x10" + name + struct.pack("<i", v)
    if kind == "int64":
        return b"\x12" + name + struct.pack("<q", v)
    if kind == "decimal":
        return b"\x13" + name + v
    if kind == "bool":
        return b"\x08" + name + bytes([v])
    if kind == "date":
        return b"\x09" + name + struct.pack("<q", v)
    if kind == "timestamp":
        seconds, increment = v
        return b"\x11" + name + struct.pack("<II", increment, seconds)
    if kind == "string":
        raw = v.encode()
        return b"\x02" + name + struct.pack("<i", len(raw) + 1) + raw + b"\x00"
    if kind == "objectid":
        return b"\x07" + name + v
    if kind == "null":
        return b"\x0a" + name
    if kind == "binary":
        return b"\x05" + name + struct.pack("<i", len(v)) + b"\x00" + v
    if kind == "regex":
        return b"\x0b" + name + v.encode() + b"\x00" + b"i\x00"
    if kind == "object":
        return b"\x03" + name + encode_document(v)
    if kind == "array":
        return b"\x04" + name + encode_document([(str(i), item) for i, item in enumerate(v)])
    raise AssertionError(kind)


# ---------------------------------------------------------------------------
# The oracle: docs/ftdc-format.md section 4, written independently of the decoder.


def double_metric(x: float) -> int:
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return INT64_MAX if x > 0 else INT64_MIN
    return max(INT64_MIN, min(INT64_MAX, int(x)))  # int() truncates toward zero


def decimal_metric(bid: bytes) -> int:
    """IEEE 754 BID decimal128 to int64, half to even; NaN, inf, overflow -> INT64_MIN."""
    bits = int.from_bytes(bid, "little")
    negative = bits >> 127
    if (bits >> 122) & 0b11111 in (0b11110, 0b11111):
        return INT64_MIN  # infinity, NaN
    if (bits >> 125) & 0b11 == 0b11:
        exponent, coefficient = (bits >> 111) & 0x3FFF, 0  # always non-canonical: zero
    else:
        exponent, coefficient = (bits >> 113) & 0x3FFF, bits & ((1 << 113) - 1)
    if coefficient >= 10**34:
        coefficient = 0
    exponent -= 6176
    if exponent >= 0:
        magnitude = coefficient * 10**exponent
    else:
        quotient, remainder = divmod(coefficient, 10**-exponent)
        twice = 2 * remainder
        half = 10**-exponent
        magnitude = quotient + (twice > half or (twice == half and quotient % 2 == 1))
    value = -magnitude if negative else magnitude
    return value if INT64_MIN <= value <= INT64_MAX else INT64_MIN


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# The milliseconds Python's datetime (and so CSV, Arrow's microseconds) can hold: years 1-9999.
PYTHON_DATE_MS = tuple(
    (d - _EPOCH) // dt.timedelta(milliseconds=1)
    for d in (dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.timezone.utc))
)


def expected_metrics(pairs, prefix: str = "") -> list[tuple[str, int]]:
    out = []
    seen: dict[str, int] = {}
    for key, (kind, v) in pairs:
        seen[key] = seen.get(key, 0) + 1
        component = key if seen[key] == 1 else f"{key}#{seen[key]}"
        name = f"{prefix}{component}"
        if kind == "double":
            out.append((name, double_metric(v)))
        elif kind in ("int32", "int64"):
            out.append((name, v))
        elif kind == "date":
            # A Date no calendar of times holds (outside years 1-9999) is damage: read as null, with a warning.
            low, high = PYTHON_DATE_MS
            out.append((name, v if low <= v <= high else None))
        elif kind == "decimal":
            out.append((name, decimal_metric(v)))
        elif kind == "bool":
            out.append((name, int(v)))
        elif kind == "timestamp":
            out += [(name + ".t", v[0]), (name + ".i", v[1])]
        elif kind == "object":
            out += expected_metrics(v, name + ".")
        elif kind == "array":
            out += expected_metrics([(str(i), item) for i, item in enumerate(v)], name + ".")
    return out


# ---------------------------------------------------------------------------
# Strategies: a few document shapes, and samples that refill a shape's values.

KEYS = st.text(alphabet="abxy", min_size=1, max_size=2)  # short keys repeat often


def scalar(kind: str):
    return {
        "double": st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([2.0**63, -(2.0**63), 9.3e18, -0.5, 1e300]),
        "int32": st.integers(-(2**31), 2**31 - 1),
        "int64": st.integers(INT64_MIN, INT64_MAX) | st.sampled_from([INT64_MIN, INT64_MAX, 2**53 + 1]),
        "decimal": st.binary(min_size=16, max_size=16)
        | st.sampled_from(
            ["2.5", "3.5", "-2.5", "1E+30", "9223372036854775807", "-9223372036854775808", "NaN", "-Infinity", "1E-40"]
        ).map(lambda s: Decimal128(s).bid),
        "bool": st.booleans(),
        "date": st.integers(INT64_MIN, INT64_MAX),
        "timestamp": st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
        "string": st.text(max_size=5).filter(lambda s: "\x00" not in s),
        "objectid": st.builds(lambda: ObjectId().binary),
        "null": st.none(),
        "binary": st.binary(max_size=6),
        "regex": st.sampled_from(["^a", "b+"]),
    }[kind]


SCALAR_KINDS = NUMERIC + ("bool", "date", "timestamp", "string", "objectid", "null", "binary", "regex")


def typed_value(depth: int):
    scalars = st.sampled_from(SCALAR_KINDS).flatmap(lambda k: scalar(k).map(lambda v: (k, v)))
    if depth >= 4:
        return scalars
    inner = typed_value(depth + 1)
    return st.one_of(
        scalars,
        st.lists(st.tuples(KEYS, inner), max_size=4).map(lambda p: ("object", p)),
        st.lists(inner, max_size=3).map(lambda items: ("array", items)),
    )


shapes = st.lists(st.tuples(KEYS, typed_value(1)), max_size=6)


def refill(draw, typed):
    """Same structure, new values; a number may come back as another numeric type."""
    kind, v = typed
    if kind == "object":
        return kind, [(k, refill(draw, item)) for k, item in v]
    if kind == "array":
        return kind, [refill(draw, item) for item in v]
    if kind in NUMERIC:
        kind = draw(st.sampled_from(NUMERIC))
    return kind, draw(scalar(kind))


@st.composite
def sample_series(draw):
    """Samples drawn from one to three shapes, with a root `start` Date one second apart."""
    variants = draw(st.lists(shapes, min_size=1, max_size=3))
    samples = []
    for i in range(draw(st.integers(1, 14))):
        shape = variants[draw(st.integers(0, len(variants) - 1))]
        body = [(k, refill(draw, typed)) for k, typed in shape]
        samples.append([("start", ("date", T0_MS + 1000 * i))] + body)
    return samples


def as_int64(frame: pl.DataFrame) -> pl.DataFrame:
    """Bool and Datetime columns as their int64 metric values."""
    return frame.with_columns(pl.all().cast(pl.Int64))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(samples=sample_series(), samples_per_chunk=st.integers(2, 5))
# Found in CI: a Date a millisecond before year 1 (damage) reads as null, not as its value.
@example(
    samples=[
        [("start", ("date", 1_700_000_000_000)), ("a", ("date", -62_135_596_800_001)), ("b", ("date", 253_402_300_800_000))]
    ],
    samples_per_chunk=2,
)
def test_random_documents_round_trip(tmp_path_factory, samples, samples_per_chunk):
    directory = tmp_path_factory.mktemp("rt")
    with FTDCWriter(directory, samples_per_chunk=samples_per_chunk, samples_per_interim_update=2) as writer:
        for sample in samples:
            writer.add_sample(encode_document(sample))
    frame = as_int64(ftdc.read_ftdc(directory))
    assert frame.height == len(samples)
    expected_columns = {"start"}
    for row, sample in enumerate(samples):
        metrics = expected_metrics(sample)
        names = [name for name, _ in metrics]
        expected_columns.update(names)
        got = frame.row(row, named=True)
        for name, value in metrics:
            assert got[name] == value, (row, name)
        absent = [c for c in frame.columns if c not in set(names)]
        assert all(got[c] is None for c in absent), (row, absent)
    assert set(frame.columns) == expected_columns


# ---------------------------------------------------------------------------
# Every real chunk re-encodes to the same bytes.


def real_chunk_files() -> list[Path]:
    from conftest import SHARED_SAMPLES

    return sample_files(SHARED_SAMPLES / "ftdc") if SHARED_SAMPLES.exists() else []


def rebuilt_samples(data: bytes) -> list[bytes]:
    """The reference document, then every later sample rebuilt from its decoded values."""
    reference, samples, metric_count, values = _native.decode_chunk(data)
    row = 8 * metric_count
    return [reference] + [_native.fill_reference(reference, values[r * row : (r + 1) * row]) for r in range(1, samples)]


@pytest.mark.parametrize("path", real_chunk_files(), ids=lambda p: p.name)
def test_real_chunks_re_encode_byte_identical(ftdc_samples, tmp_path, path):
    originals = chunks(path)
    assert originals
    for n, original in enumerate(originals):
        samples = rebuilt_samples(bytes(original["data"]))
        directory = tmp_path / str(n)
        # No interim updates: they do not change the archived chunk and cost a compression each.
        with FTDCWriter(directory, samples_per_chunk=300, samples_per_interim_update=10**6) as writer:
            for sample in samples:
                writer.add_sample(sample, date=int(original["_id"]))
        [written] = chunks(writer.files[0])
        assert payload(written) == payload(original), f"chunk {n} at _id {original['_id']}"
        assert int(written["_id"]) == int(original["_id"])


def test_rebuilt_samples_have_the_reference_schema(ftdc_samples):
    data = bytes(chunks(ftdc_samples / "mongod-8.0-chunk" / "metric-2025-03-12_15-58-06.0_+00-00-00.bson")[0]["data"])
    reference, *later = rebuilt_samples(data)
    assert all(_native.schema_matches(reference, s) for s in later)


# ---------------------------------------------------------------------------
# Chunk boundaries, metrics.interim and rotation, as mongod does them.


def server_sample(i: int, **extra) -> dict:
    return {
        "start": dt.datetime.fromtimestamp((T0_MS + 1000 * i) / 1000, dt.timezone.utc),
        "serverStatus": {"uptime": float(i), "opcounters": {"insert": 10 * i}, **extra},
    }


def written_chunk_sizes(directory: Path) -> list[int]:
    return [chunk_samples(c) for f in sorted(directory.glob("metrics.2*")) for c in chunks(f)]


def test_full_chunks_hold_300_samples(tmp_path):
    with FTDCWriter(tmp_path) as writer:
        for i in range(655):
            writer.add_sample(server_sample(i))
    assert written_chunk_sizes(tmp_path) == [300, 300, 55]
    assert not (tmp_path / "metrics.interim").exists()
    assert ftdc.read_ftdc(tmp_path)["serverStatus.opcounters.insert"].to_list() == [10 * i for i in range(655)]


def test_schema_change_starts_a_chunk(tmp_path):
    with FTDCWriter(tmp_path) as writer:
        for i in range(10):
            writer.add_sample(server_sample(i))
        # A number changing type and a string appearing are not schema changes...
        writer.add_sample({**server_sample(10), "serverStatus": {"uptime": 10, "opcounters": {"insert": 100.0}, "host": "h"}})
        # ...a new metric field is, and so is a number turning into a bool.
        for i in range(11, 15):
            writer.add_sample(server_sample(i, connections={"current": i}))
        writer.add_sample(server_sample(15, connections={"current": True}))
    assert written_chunk_sizes(tmp_path) == [11, 4, 1]
    frame = ftdc.read_ftdc(tmp_path)
    # Absent from the first chunk; the int and bool chunks share one Int64 column.
    assert frame["serverStatus.connections.current"].to_list() == [None] * 11 + [11, 12, 13, 14, 1]


def test_duplicate_keys_survive(tmp_path):
    # A dict cannot repeat a key; raw BSON can, as /proc/self/mountinfo does.
    sample = encode_document(
        [("start", ("date", T0_MS)), ("mounts", ("object", [("/boot", ("int64", 1)), ("/boot", ("int64", 2))]))]
    )
    with FTDCWriter(tmp_path) as writer:
        writer.add_sample(sample)
    frame = ftdc.read_ftdc(tmp_path)
    assert frame.select("mounts./boot", "mounts./boot#2").row(0) == (1, 2)


@pytest.mark.parametrize("added, interim_samples", [(9, None), (11, 11), (25, 21), (31, 31), (300, None), (311, 11)])
def test_interim_holds_the_open_chunk(tmp_path, added, interim_samples):
    writer = FTDCWriter(tmp_path)
    for i in range(added):
        writer.add_sample(server_sample(i))
    interim = tmp_path / "metrics.interim"
    if interim_samples is None:
        assert not interim.exists()
    else:
        [(_, document)] = documents(interim)  # one type-1 document, no metadata
        assert document["type"] == 1
        assert chunk_samples(document) == interim_samples
        assert int(document["_id"]) == T0_MS + 1000 * (added - (added - 1) % 300 - 1)
    assert not (tmp_path / "metrics.interim.temp").exists()
    writer.close()
    assert not interim.exists()


def test_files_rotate_and_start_with_metadata(tmp_path):
    metadata = {"start": dt.datetime(2023, 11, 14, tzinfo=dt.timezone.utc), "buildInfo": {"version": "7.0.2"}}
    with FTDCWriter(tmp_path, metadata=metadata, file_size_mb=0.0005) as writer:
        for i in range(2000):
            writer.add_sample(server_sample(i))
    files = sorted(tmp_path.glob("metrics.*"))
    assert len(files) > 1 and files == sorted(writer.files)
    for f in files:
        assert f.name.startswith("metrics.2023-11-14T") and f.name.endswith("-00000")
        (_, first), *_ = documents(f)
        assert first["type"] == 0 and first["doc"]["buildInfo"]["version"] == "7.0.2"
    # The size check runs after each write, so every file but the last ends past the limit.
    assert all(f.stat().st_size > 0.0005 * 1024 * 1024 for f in writer.files[:-1])
    assert ftdc.read_ftdc(tmp_path).height == 2000


def test_unflushed_interim_is_recovered_by_the_next_writer(tmp_path):
    writer = FTDCWriter(tmp_path)
    for i in range(35):
        writer.add_sample(server_sample(i))
    writer.close(flush=False)  # a crash: samples 0..30 survive only in metrics.interim
    assert ftdc.read_ftdc(tmp_path).height == 31
    with FTDCWriter(tmp_path, metadata={"note": "restart"}) as writer:
        writer.add_sample(server_sample(100))
    second = writer.files[0]
    # Recovered samples go through the compressor (numbers rebuilt as int64, which
    # matches the new sample's doubles), so the metadata is written first.
    assert [d["type"] for _, d in documents(second)] == [0, 1]
    assert written_chunk_sizes(tmp_path) == [32]
    starts = ftdc.read_ftdc(tmp_path)["serverStatus.opcounters.insert"].to_list()
    assert starts == [10 * i for i in range(31)] + [1000]


def test_refused_samples(tmp_path):
    deep = {"x": 1}
    for _ in range(11):
        deep = {"o": deep}
    with FTDCWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match="nesting"):
            writer.add_sample({**server_sample(0), "deep": deep})
        with pytest.raises(ValueError, match="start"):
            writer.add_sample({"serverStatus": {"uptime": 1}})
    with pytest.raises(ValueError):
        ChunkCompressor(samples_per_chunk=1)


# ---------------------------------------------------------------------------
# Columns that are 0 throughout (most of a real node's) share one buffer.


def zero_sample(i: int, second: int, interleaved: bool) -> bytes:
    """Sample i of file A (even seconds) or B (odd): metrics 0 throughout, and metrics 0
    except in one place (a reference value, a delta, or a whole chunk of file B)."""
    pairs = [
        ("start", ("date", T0_MS + 1000 * second)),
        ("zero", ("int64", 0)),
        ("flag", ("bool", False)),
        ("when", ("date", 0)),
        ("const", ("int64", 7)),
        ("late", ("int64", 5 if interleaved and i >= 3 else 0)),
        ("first", ("int64", 4 if i == 0 and not interleaved else 0)),
        ("blip", ("int64", 3 if i == 1 else 0)),
    ]
    if i >= 3 and not interleaved:
        pairs.append(("sometimes", ("int64", 0)))  # a schema change: A's second chunk only
    return encode_document(pairs)


def test_columns_zero_throughout_share_one_buffer(tmp_path):
    # 1,785 of the 7.0 sample's 2,325 metrics stay 0: the decoder gives such columns neither
    # decoding nor memory (a fresh process's read of every metric faulted in 3 x the pages).
    # Two files whose samples interleave in time take the path that merges chunks.
    files = []
    for interleaved in (False, True):
        directory = tmp_path / ("b" if interleaved else "a")
        with FTDCWriter(directory, samples_per_chunk=3) as writer:
            for i in range(6):
                writer.add_sample(zero_sample(i, 2 * i + interleaved, interleaved))
        files += sorted(directory.glob("metrics.2*"))
    frame = ftdc.read_ftdc(files)
    assert frame.height == 12
    assert frame.schema["flag"] == pl.Boolean and frame.schema["when"] == pl.Datetime("ms", "UTC")
    from_a = [i % 2 == 0 for i in range(12)]
    assert as_int64(frame.drop("start")).to_dict(as_series=False) == {
        "zero": [0] * 12,
        "flag": [0] * 12,
        "when": [0] * 12,
        "const": [7] * 12,
        "late": [5 if not a and s // 2 >= 3 else 0 for s, a in zip(range(12), from_a)],
        "first": [4] + [0] * 11,
        "blip": [3 if s // 2 == 1 else 0 for s in range(12)],
        "sometimes": [0 if a and s // 2 >= 3 else None for s, a in zip(range(12), from_a)],
    }
    decoded = _native.read([str(f) for f in files], [False] * len(files))
    import pyarrow as pa

    address = {name: pa.array(column).buffers()[1].address for name, _, column in decoded.columns()}
    shared = {address[name] for name in ("zero", "flag", "when", "sometimes")}
    assert len(shared) == 1
    assert len({address[name] for name in ("const", "late", "first", "blip")} | shared) == 5
