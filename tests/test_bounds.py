"""Memory stays bounded when a chunk's counts lie: zero runs let a few bytes
claim any number of samples, so the decoder refuses implausible chunks before
allocating. Each read runs in a subprocess so its own peak RSS (VmHWM) is measured."""

import datetime as dt
import struct
import subprocess
import sys
import zlib

import bson

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
    code = "import ftdc; print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout) // 1024


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
    code = (
        "import sys, ftdc\n"
        "try:\n"
        "    ftdc.read_ftdc(sys.argv[1])\n"
        "except ftdc.FTDCError as e:\n"
        "    print('refused', e)\n"
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    refusal, peak = out.stdout.strip().splitlines()
    assert refusal.startswith("refused") and "max_values" in refusal
    # The budget (64 M values) bounds what phase 1 may hold: 512 MB of times.
    assert int(peak) // 1024 < baseline_mb() + 600


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
