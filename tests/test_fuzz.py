"""Mutation fuzzing of the native decoder: damaged bytes give warnings or
FTDCError, never another exception, a Rust panic (pyo3 PanicException, a
BaseException) or a hang (each example has a deadline)."""

from __future__ import annotations

import datetime as dt
import struct
import warnings
import zlib
from pathlib import Path

import pytest
from ftdc_files import chunks, payload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ftdc
from bench.mutators import mutate_bytes
from ftdc import FTDCError
from ftdc.writer import FTDCWriter
from ftdc.writer.documents import chunk_document

FUZZ = settings(max_examples=600, deadline=2000, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, bytes]:
    """Small valid files: the Go-writer sample, a 4.2.1 chunk, and writer output with every metric type."""
    from conftest import require_samples

    out = {"go": require_samples("ftdc", "go-writer-synthetic", "perf_metrics_small.ftdc").read_bytes()}
    first_42 = chunks(require_samples("ftdc", "mongod-4.2.1", "diagnostic.data", "metrics.2021-07-13T01-43-32Z-00000"))[1]
    out["mongod-4.2.1-chunk"] = first_42.raw
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    directory = tmp_path_factory.mktemp("seed")
    with FTDCWriter(directory, metadata={"start": start}, samples_per_chunk=6) as writer:
        for i in range(20):
            writer.add_sample(
                {
                    "start": start + dt.timedelta(seconds=i),
                    "a": {"n": i * 1000, "f": i / 3, "b": i % 2 == 0, "s": "x"},
                    "l": [i, -i],
                }
            )
    out["writer"] = writer.files[0].read_bytes()
    return out


def read_quietly(path: Path) -> None:
    """Reads `path`; only FTDCError may escape."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ftdc.read_ftdc(path)
        except FTDCError:
            pass


@FUZZ
@given(data=st.data())
def test_mutated_files(seeds, tmp_path_factory, data):
    name = data.draw(st.sampled_from(sorted(seeds)))
    path = tmp_path_factory.mktemp("fuzz") / "metrics.fuzz"
    path.write_bytes(mutate_bytes(seeds[name], data.draw(st.randoms(use_true_random=False))))
    read_quietly(path)


@FUZZ
@given(data=st.data())
def test_mutated_chunk_payloads(seeds, tmp_path_factory, data):
    """Mutations inside the inflated payload, re-compressed with a true length, so they reach the BSON and varint parsers."""
    name = data.draw(st.sampled_from(["writer", "mongod-4.2.1-chunk"]))
    source = tmp_path_factory.mktemp("src") / "metrics.src"
    source.write_bytes(seeds[name])
    original = chunks(source)[0]
    inflated = mutate_bytes(payload(original), data.draw(st.randoms(use_true_random=False)))
    path = source.with_name("metrics.fuzz")
    path.write_bytes(chunk_document(int(original["_id"]), struct.pack("<I", len(inflated)) + zlib.compress(inflated)))
    read_quietly(path)
