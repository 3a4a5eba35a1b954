"""Memory stays bounded when a chunk's counts lie: zero runs let a few bytes
claim any number of samples, so the decoder refuses implausible chunks before
allocating. Each read runs in a subprocess so its own peak RSS (VmHWM) is measured."""

import datetime as dt
import struct
import subprocess
import sys
import zlib

import bson
import pytest

import ftdc
from ftdc.writer.documents import chunk_document

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def zero_run_chunk(metrics: int, samples: int) -> bytes:
    """A chunk whose metrics never change: the whole matrix is one zero run."""
    reference = bson.encode({"start": T0, **{f"m{i}": i for i in range(metrics - 1)}})
    deltas = bytearray()
    for value in (0, metrics * (samples - 1) - 1):  # `0, k-1` encodes k zeros
        while value >= 0x80:
            deltas.append(value & 0x7F | 0x80)
            value >>= 7
        deltas.append(value)
    body = reference + struct.pack("<II", metrics, samples - 1) + bytes(deltas)
    data = struct.pack("<I", len(body)) + zlib.compress(body)
    return chunk_document(int(T0.timestamp() * 1000), data)


def read_in_child(path) -> tuple[str, int]:
    code = (
        "import sys, warnings, ftdc\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    frame = ftdc.read_ftdc(sys.argv[1])\n"
        "print(frame.height, frame.width, '|'.join(str(x.message) for x in w))\n"
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, peak = out.stdout.strip().splitlines()
    return first, int(peak) // 1024


def baseline_mb() -> int:
    # What a read loads before it reads (`import ftdc` alone loads nothing since its names are lazy).
    code = "import ftdc, ftdc.reader, ftdc.scan, ftdc.export, pyarrow; print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout) // 1024


def run_in_child(code: str, *args) -> tuple[list[str], int]:
    code += "\nprint(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    *lines, peak = out.stdout.strip().splitlines()
    return lines, int(peak) // 1024


READ = "import sys, ftdc\ntry:\n    ftdc.read_ftdc(sys.argv[1])\nexcept ftdc.FTDCError as e:\n    print('refused', e)\n"
EXPORT = (
    "import sys, ftdc\n"
    "try:\n"
    "    print('rows', ftdc.to_parquet(sys.argv[1], sys.argv[2]))\n"
    "except ftdc.FTDCError as e:\n"
    "    print('refused', e)\n"
)


def test_billions_of_claimed_values_are_refused_cheaply(tmp_path):
    path = tmp_path / "metrics.bomb"
    path.write_bytes(zero_run_chunk(metrics=3479, samples=1_000_000))
    assert path.stat().st_size < 100_000
    summary, peak = read_in_child(path)
    assert summary.startswith("0 1 ") and "implausible" in summary and "offset 0" in summary
    assert peak < baseline_mb() + 64


def test_largest_allowed_chunk_costs_only_its_values(tmp_path):
    metrics, samples = 1000, 16_000  # 16 M values: the cap
    path = tmp_path / "metrics.big"
    path.write_bytes(zero_run_chunk(metrics, samples))
    summary, peak = read_in_child(path)
    assert summary.startswith(f"{samples} {metrics} ")
    # The values themselves take 128 MB; allow as much again for the frame's bookkeeping.
    assert peak < baseline_mb() + 2 * metrics * samples * 8 // 2**20


def test_chunk_without_metrics_cannot_claim_billions_of_samples(tmp_path):
    reference = bson.encode({"s": "x"})
    body = reference + struct.pack("<II", 0, 0xFFFFFFFF)
    path = tmp_path / "metrics.nometrics"
    path.write_bytes(chunk_document(0, struct.pack("<I", len(body)) + zlib.compress(body)))
    summary, peak = read_in_child(path)
    assert summary.startswith("0 1 ") and "implausible" in summary
    assert peak < baseline_mb() + 64


def test_many_allowed_chunks_hit_the_read_budget(tmp_path):
    # Each chunk is legal on its own (one metric, 100,000 samples); together
    # they claim 80 M values from a few KB, above the default budget.
    path = tmp_path / "metrics.many"
    path.write_bytes(zero_run_chunk(metrics=1, samples=100_000) * 800)
    (refusal,), peak = run_in_child(READ, path)
    assert refusal.startswith("refused") and "max_values" in refusal
    # The budget (64 M values) bounds what phase 1 may hold: 512 MB of times.
    assert peak < baseline_mb() + 600


def test_reused_output_memory_gives_identical_frames(ftdc_samples):
    import gc

    import ftdc

    directory = ftdc_samples / "mongod-7.0" / "diagnostic.data"
    # Fresh memory, with nulls where metrics come and go.
    first = ftdc.read_ftdc(directory)
    digest = first.hash_rows().to_list()
    nulls = first.null_count().row(0)
    assert sum(nulls) > 0
    del first
    gc.collect()
    # The freed arena (hundreds of MB) is reused, stale values and all.
    ftdc.read_ftdc(directory, "serverStatus.*")
    gc.collect()
    again = ftdc.read_ftdc(directory)
    assert again.hash_rows().to_list() == digest and again.null_count().row(0) == nulls


def padded_zero_run_chunk(metrics: int, samples: int, when: dt.datetime, pad: int) -> bytes:
    """A legal zero-run chunk made `pad` bytes longer by an incompressible string (strings
    are not metrics): the file then claims fewer values per input byte than the budget."""
    import random

    noise = random.Random(pad).randbytes(pad // 2).hex()
    reference = bson.encode({"start": when, "pad": noise, **{f"m{i}": i for i in range(metrics - 1)}})
    deltas = bytearray()
    for value in (0, metrics * (samples - 1) - 1):
        while value >= 0x80:
            deltas.append(value & 0x7F | 0x80)
            value >>= 7
        deltas.append(value)
    body = reference + struct.pack("<II", metrics, samples - 1) + bytes(deltas)
    return chunk_document(int(when.timestamp() * 1000), struct.pack("<I", len(body)) + zlib.compress(body))


def crafted_file(path, *, same_time: bool):
    """2 MB, 30 chunks of 160 metrics x 100,000 samples: 480 M values (3.8 GB) under
    the old 256 values per byte budget."""
    chunks = [padded_zero_run_chunk(160, 100_000, T0 if same_time else T0 + dt.timedelta(days=k), 128_000) for k in range(30)]
    path.write_bytes(b"".join(chunks))
    assert 2_000_000 < path.stat().st_size < 2_500_000
    return path


def test_an_export_of_a_crafted_file_stays_under_1_gb(tmp_path):
    # Chunks spread over time stream window by window ...
    lines, peak = run_in_child(EXPORT, crafted_file(tmp_path / "metrics.days", same_time=False), tmp_path / "days.parquet")
    assert lines == ["rows 3000000"] and peak < 1024
    # ... chunks that all claim one instant cannot be split by time: refused before decoding.
    lines, peak = run_in_child(EXPORT, crafted_file(tmp_path / "metrics.same", same_time=True), tmp_path / "same.parquet")
    assert lines[0].startswith("refused ") and "metrics.same: offset 0: 30 chunk(s) from 2024-01-01T00:00:00Z claim" in lines[0]
    assert peak < baseline_mb() + 100 and not (tmp_path / "same.parquet").exists()


def test_read_budget_follows_real_density_and_says_how_to_raise_it(tmp_path):
    path = crafted_file(tmp_path / "metrics.days", same_time=False)
    (refusal,), peak = run_in_child(READ, path)
    # 128 values per input byte: 7x the densest real sample (7.0: 17.8 per byte).
    assert f"above the limit of {128 * path.stat().st_size} for this input" in refusal
    assert "read_ftdc(..., max_values=N)" in refusal and "scan_ftdc or export" in refusal
    assert peak < baseline_mb() + 100


def test_real_samples_are_far_below_the_read_budget(ftdc_samples):
    for path in [
        ftdc_samples / "mongod-4.2.1" / "diagnostic.data",
        ftdc_samples / "mongod-7.0" / "diagnostic.data",
        next((ftdc_samples / "mongod-8.0-chunk").iterdir()),
    ]:
        catalog = ftdc.read_catalog(path)
        size = sum(f.path.stat().st_size for f in catalog.files)
        values = int((catalog.chunks["samples"] * (catalog.chunks["metrics"] + 1)).sum())
        assert values / size < 128 / 4, path


def test_the_chunk_sample_limit_and_its_message_agree(tmp_path):
    legal = tmp_path / "metrics.2001"
    legal.write_bytes(zero_run_chunk(metrics=10, samples=2_001))  # diagnosticDataCollectionSamplesPerChunk=2001
    assert ftdc.read_ftdc(legal).height == 2_001
    over = tmp_path / "metrics.over"
    over.write_bytes(zero_run_chunk(metrics=10, samples=100_001))
    with pytest.warns(
        ftdc.FTDCWarning, match="10 metrics x 100001 samples is implausible: this reader takes up to 100000 samples"
    ):
        assert ftdc.read_ftdc(over).height == 0
