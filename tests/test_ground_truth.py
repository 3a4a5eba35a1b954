"""Every real sample decodes to exactly the figures in EXPECTED.json,
which an independent decoder computed."""

import json

import bson
import polars as pl
import pytest
from conftest import SHARED_SAMPLES, require_samples

import ftdc


def expected_samples():
    path = SHARED_SAMPLES / "ftdc" / "EXPECTED.json"
    if not path.exists():
        return ["missing"]
    return [k for k in json.loads(path.read_text()) if not k.startswith("_")]


@pytest.fixture(scope="module")
def expected(ftdc_samples):
    return json.loads((ftdc_samples / "EXPECTED.json").read_text())


@pytest.fixture(scope="module", params=expected_samples())
def sample(request, ftdc_samples, expected):
    name = request.param
    return name, expected[name], ftdc.read_ftdc(ftdc_samples / name)


def test_rows_and_distinct_columns(sample):
    _, want, frame = sample
    assert frame.height == want["rows"]
    assert frame.width == want["columns"]
    assert len(set(frame.columns)) == frame.width


def test_time_range(sample):
    _, want, frame = sample
    millis = frame["start"].dt.epoch("ms")
    assert millis.min() == want["start_min_ms"]
    assert millis.max() == want["start_max_ms"]
    assert frame["start"].is_sorted()
    assert frame.columns[0] == "start" and frame.schema["start"] == pl.Datetime("ms", "UTC")


def test_per_metric_sums(sample):
    _, want, frame = sample
    for metric, total in want["sums"].items():
        assert frame[metric].sum() == total, metric


def test_document_types(sample, ftdc_samples):
    name, want, _ = sample
    documents = ftdc.read_catalog(ftdc_samples / name).documents
    counts = dict(documents.group_by("type").len().iter_rows())
    assert {str(k): v for k, v in counts.items()} == want["doc_types"]
    # Cross-check the envelope walk against pymongo's decoder.
    raw = b"".join(p.read_bytes() for p in sorted((ftdc_samples / name).glob("metrics.*")) or [ftdc_samples / name])
    assert len(bson.decode_all(raw)) == documents.height


def test_duplicate_keys_are_kept():
    chunk = require_samples("ftdc", "mongod-8.0-chunk", "metric-2025-03-12_15-58-06.0_+00-00-00.bson")
    frame = ftdc.read_ftdc(chunk, metrics=["systemMetrics.mounts./boot/efi*"])
    assert sorted(frame.columns[1:]) == sorted(
        f"systemMetrics.mounts./boot/efi{suffix}.{field}" for suffix in ("", "#2") for field in ("capacity", "available", "free")
    )


def test_doubles_are_truncated_not_bit_patterns(ftdc_samples):
    # serverStatus.uptime is a double; its bit pattern would be ~4.6e18.
    frame = ftdc.read_ftdc(ftdc_samples / "mongod-4.2.1" / "diagnostic.data", metrics=["serverStatus.uptime"])
    assert 0 <= frame["serverStatus.uptime"].max() < 10**7


def test_interim_repeats_are_dropped(ftdc_samples):
    directory = ftdc_samples / "mongod-7.0" / "diagnostic.data"
    archives = sorted(directory.glob("metrics.20*"))
    with_interim = ftdc.read_ftdc(directory, metrics=["serverStatus.uptime"])
    without = ftdc.read_ftdc(archives, metrics=["serverStatus.uptime"])
    interim_alone = ftdc.read_ftdc(directory / "metrics.interim", metrics=["serverStatus.uptime"])
    assert interim_alone.height == 181
    assert with_interim.equals(without)


def test_types_follow_bson(ftdc_samples):
    frame = ftdc.read_ftdc(
        ftdc_samples / "mongod-7.0" / "diagnostic.data",
        metrics=["serverStatus.flowControl.enabled", "serverStatus.localTime", "serverStatus.pid"],
    )
    assert frame.schema["serverStatus.flowControl.enabled"] == pl.Boolean
    assert frame.schema["serverStatus.localTime"] == pl.Datetime("ms", "UTC")
    assert frame.schema["serverStatus.pid"] == pl.Int64


def test_absent_metric_is_null_where_missing(ftdc_samples):
    directory = ftdc_samples / "mongod-7.0" / "diagnostic.data"
    name = "systemMetrics.mounts./media/byron/disk1.capacity"
    frame = ftdc.read_ftdc(directory, metrics=[name])
    seen = ftdc.list_metrics(directory).filter(pl.col("name") == name)
    assert 0 < frame[name].null_count() < frame.height
    present = frame.filter(pl.col(name).is_not_null())["start"]
    assert present.min() >= seen["first_seen"][0] and present.max() <= seen["last_seen"][0]
