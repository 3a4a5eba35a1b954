"""read_logs narrowed as it reads (ftdc.logs.narrow) gives the `logs` command and the analyses
what the whole frames gave them: on the shared samples, the demo log and generated logs
cut into many blocks, with statements, write commands, tied durations and time windows."""

import datetime as dt
import gc
import json
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from analysis.findings.culprits import culprit_key
from analysis.observe import EVENT_COLUMNS, SLOW_OP_COLUMNS, as_categories, read_compact_logs
from ftdc.logs import read_logs, report, sources, summarize_queries

DEMO_LOG = Path(__file__).resolve().parents[1] / "samples" / "mongod.log"
SAMPLES = [
    "mongod-6.0.11/sample-mongod.log.gz",
    "atlas-8.0.12/cluster0-shard-00-00.ufghn.mongodb.net_2025-08-17T19_50_00_2025-08-18T19_55_21_MONGODB.log.gz",
    "legacy-text",
]


def _summary(slow: pl.DataFrame) -> pl.DataFrame:
    """The `logs` command's table in full, its rows in one order (shapes of equal cost tie)."""
    several = slow["node"].drop_nulls().n_unique() > 1
    table = summarize_queries(slow, by_node=several)
    return table.sort(pl.all(), nulls_last=True)


def _reference_summary(slow: pl.DataFrame) -> pl.DataFrame:
    """The counts, sums and exact percentiles grouped by text, the rows that are not queries filtered
    out first: how the summary was computed before it grouped by categories."""
    ops = slow.filter(~pl.col("write_statement") & (pl.col("op_type").fill_null("") != "none"))
    hashed = pl.coalesce("query_shape_hash", "query_hash")
    key = pl.when(pl.col("truncated").is_not_null() & hashed.is_not_null()).then(pl.lit("hash:") + hashed).otherwise("shape")
    d = pl.col("duration_ms")
    nodes = ["node"] * (slow["node"].drop_nulls().n_unique() > 1)
    return (
        ops.group_by(*nodes, "ns", "command", key.alias("group_key"))
        .agg(
            count=pl.len().cast(pl.UInt32),
            total_ms=d.sum(),
            p50_ms=d.quantile(0.5, "linear"),
            p95_ms=d.quantile(0.95, "linear"),
            p99_ms=d.quantile(0.99, "linear"),
            max_ms=d.max(),
            example_command=pl.col("command_json").sort_by(d, descending=True, nulls_last=True, maintain_order=True).first(),
        )
        .drop("group_key")
        .sort(pl.all(), nulls_last=True)
    )


def _old_compact(path, start=None, end=None):
    """What the analyses got before: the whole frames, then the longest runs' commands, then the columns (their
    text columns of a handful of values as categories, as an analysis holds them)."""
    frames = read_logs(path, start, end)
    longest = pl.col("duration_ms") == pl.col("duration_ms").max().over(culprit_key())
    slow = frames.slow_ops.with_columns(command_json=pl.when(longest).then(pl.col("command_json")))
    return as_categories(replace(frames, slow_ops=slow).compact(SLOW_OP_COLUMNS, EVENT_COLUMNS))


def _assert_same(path, start=None, end=None) -> None:
    whole = read_logs(path, start, end)
    narrowed = read_logs(path, start, end, narrowing=report.NARROWING)
    assert narrowed.slow_ops.columns == [c for c in whole.slow_ops.columns if c in report.NARROWING.slow_columns]
    assert_frame_equal(_summary(narrowed.slow_ops), _summary(whole.slow_ops))
    assert report.describe(narrowed, 100) == report.describe(whole, 100)
    assert_frame_equal(narrowed.problems, whole.problems)
    assert_frame_equal(narrowed.events, whole.events)
    old, new = _old_compact(path, start, end), read_compact_logs(path, start, end)
    # The same frames, and beside them the lines the report quotes (each group's longest runs, read again).
    assert_frame_equal(new.slow_ops.drop("line_text"), old.slow_ops)
    assert_frame_equal(new.events, old.events)
    reference = _reference_summary(whole.slow_ops)
    got = _summary(narrowed.slow_ops).select(reference.columns).sort(pl.all(), nulls_last=True)
    assert_frame_equal(got, reference)


@pytest.mark.parametrize("name", SAMPLES)
def test_narrowed_reading_gives_the_same_tables_on_the_samples(log_samples, name):
    _assert_same(log_samples / name)


def test_narrowed_reading_gives_the_same_tables_on_the_demo_log():
    _assert_same(DEMO_LOG)


def test_narrowed_reading_keeps_the_longest_commands_only(log_samples):
    """The point of it: of the sample's commands, only each group's longest runs' are held."""
    path = log_samples / SAMPLES[0]
    whole = read_logs(path).slow_ops
    narrowed = read_logs(path, narrowing=report.NARROWING).slow_ops
    assert narrowed["command_json"].is_not_null().sum() < whole["command_json"].is_not_null().sum() / 10


def test_block_offsets_hold_no_reference_to_the_block():
    """stamp_offsets must not keep the 16 MB block alive until a garbage collection (a recursive closure did)."""
    block = b'{"t":{"$date":"2024-01-02T03:04:05.678+01:00"}}\n' * 3 + b'{"t":{"$date":"2024-01-02T03:04:06.678+02:00"}}\n'
    gc.disable()
    try:
        before = sys.getrefcount(block)
        assert len(sources.stamp_offsets(block)) > 2  # the offset changes: the search between lines ran
        assert sys.getrefcount(block) == before
    finally:
        gc.enable()


T0 = dt.datetime(2024, 1, 2, 3, 0, tzinfo=dt.timezone.utc)


def _line(at: dt.datetime, component: str, conn: int, attr: dict) -> str:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    head = {"t": {"$date": stamp}, "s": "I", "c": component, "id": 51803, "ctx": f"conn{conn}", "msg": "Slow query"}
    return json.dumps({**head, "attr": attr})


@st.composite
def slow_logs(draw):
    """Slow queries, WRITE statements with or without their batch's COMMAND line, inserts and
    index builds, on a few connections, collections and shapes, with durations that tie."""
    lines, at = [], T0
    for _ in range(draw(st.integers(1, 40))):
        at += dt.timedelta(milliseconds=draw(st.integers(0, 400)))
        conn = draw(st.integers(1, 3))
        coll = draw(st.sampled_from(["a", "b"]))
        duration = draw(st.sampled_from([100, 100, 120, 250, None]))
        took = {} if duration is None else {"durationMillis": duration}
        kind = draw(st.sampled_from(["find", "statement", "batch", "insert", "none"]))
        field = draw(st.sampled_from(["x", "y"]))
        if kind == "find":
            plan = draw(st.sampled_from(["COLLSCAN", "IXSCAN { x: 1 }"]))
            command = {"find": coll, "filter": {field: draw(st.integers(0, 3))}, "$db": "db"}
            lines.append(
                _line(
                    at, "COMMAND", conn, {"type": "command", "ns": f"db.{coll}", "command": command, "planSummary": plan, **took}
                )
            )
        elif kind in ("statement", "batch"):
            statement = {"q": {field: 1}, "u": {"$set": {"z": draw(st.integers(0, 9))}}}
            lines.append(
                _line(
                    at,
                    "WRITE",
                    conn,
                    {
                        "type": "update",
                        "ns": f"db.{coll}",
                        "command": statement,
                        "planSummary": "COLLSCAN",
                        "docsExamined": 5,
                        **took,
                    },
                )
            )
            if kind == "batch":
                command = {"update": coll, "ordered": True, "$db": "db"}
                lines.append(_line(at, "COMMAND", conn, {"type": "command", "ns": "db.$cmd", "command": command, **took}))
        elif kind == "insert":
            command = {"insert": coll, "documents": draw(st.integers(1, 3)), "$db": "db"}
            lines.append(_line(at, "COMMAND", conn, {"type": "command", "ns": f"db.{coll}", "command": command, **took}))
        else:
            lines.append(
                _line(at, "STORAGE", conn, {"type": "none", "ns": f"db.{coll}", "command": {"createIndexes": coll}, **took})
            )
    window = draw(st.sampled_from([(None, None), (T0 + dt.timedelta(seconds=1), None), (None, T0 + dt.timedelta(seconds=3))]))
    return "\n".join(lines) + "\n", window


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(slow_logs())
def test_narrowed_reading_gives_the_same_tables_on_logs_in_many_blocks(tmp_path, monkeypatch, log):
    text, (start, end) = log
    monkeypatch.setattr(sources, "BLOCK_BYTES", 700)  # a few lines a block: groups and batches across blocks
    path = tmp_path / "mongod.log"
    path.write_text(text)
    if start is not None or end is not None:
        whole = read_logs(path, start, end)
        if whole.slow_ops.is_empty() and whole.events.is_empty():
            return
    _assert_same(path, start, end)
