"""The log lines a report quotes: read again by their numbers (`ftdc.logs.lines`), chosen as each group's longest
runs (`summary.slowest_runs`), and the shape of a command that has no filter (`shapes.shape_of_other_command`)."""

from __future__ import annotations

import gzip
import json

import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

import ftdc
from ftdc.logs import lines
from ftdc.logs.shapes import shape_of_command_json, shape_of_other_command
from ftdc.logs.summary import slowest_runs

LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(LINE, min_size=1, max_size=30),
    st.booleans(),
    st.lists(st.integers(1, 12), max_size=8),
    st.data(),
)
def test_chosen_lines_are_the_files_lines_however_it_is_cut(texts, ended, cuts, data):
    raw = b"\n".join(texts) + (b"\n" if ended else b"")
    chunks, at = [], 0
    for size in cuts:
        chunks.append(raw[at : at + size])
        at += size
    chunks.append(raw[at:])
    wanted = sorted(data.draw(st.sets(st.integers(1, len(texts) + 2))))
    found = lines._file_lines(iter(c for c in chunks if c), wanted)
    # The file's lines: what lies between its newlines, and after the last one if anything does.
    held = raw.split(b"\n")
    held = held[:-1] if held[-1] == b"" else held
    assert found == {n: held[n - 1].rstrip(b"\r").decode("utf-8", errors="replace") for n in wanted if n <= len(held)}


def test_a_long_line_keeps_its_start_and_says_what_it_left_out(monkeypatch):
    monkeypatch.setattr(lines, "MAX_TEXT_BYTES", 10)
    found = lines._file_lines(iter([b"first\n", b"0123456789abc", b"def\nlast"]), [2, 3])
    assert found == {2: "0123456789 … (6 more bytes)", 3: "last"}


def test_the_lines_of_a_gzipped_log_are_read_again(log_samples):
    path = next((log_samples / "atlas-8.0.12").glob("*.gz"))
    file = ftdc.read_logs(path).slow_ops["file"][0]
    raw = gzip.open(path).read().split(b"\n")
    found = lines.line_texts(path, {file: [1980, 1, 3481, 10**9]})
    assert found == {(file, n): raw[n - 1].decode() for n in (1, 1980, 3481)}


def test_slowest_runs_are_each_groups_longest(log_samples):
    slow = ftdc.read_logs(log_samples / "mongod-6.0.11").slow_ops
    chosen = slow.filter(slowest_runs(slow, 3, index_builds=True))
    runs = ftdc.logs.summary.queries(slow, index_builds=True)
    summary = ftdc.summarize_queries(slow, index_builds=True)
    assert chosen.height == sum(min(3, n) for n in summary["count"])
    for (ns, command, shape), group in runs.group_by("ns", "command", "shape"):
        if group["truncated"].is_not_null().any():
            continue  # grouped by the server's hash
        mine = chosen.filter(
            pl.col("ns").eq_missing(ns), pl.col("command").eq_missing(command), pl.col("shape").eq_missing(shape)
        )
        assert sorted(mine["duration_ms"], reverse=True) == sorted(group["duration_ms"], reverse=True)[:3]


def test_slowest_runs_of_the_shapes_a_table_keeps(log_samples):
    """With `groups`, only the runs of each node's groups of most total time: the lines asked for are bounded by the
    table's rows, however many shapes a log holds."""
    slow = ftdc.read_logs(log_samples / "mongod-6.0.11").slow_ops
    top = ftdc.summarize_queries(slow, index_builds=True).head(5)
    assert top["total_ms"].n_unique() == 5  # no tie at the edge, so the five are one set
    chosen = slow.filter(slowest_runs(slow, 3, index_builds=True, groups=5))
    assert chosen.height == 15
    assert set(chosen.select("ns", "command", "shape").unique().iter_rows()) == set(
        top.select("ns", "command", "shape").iter_rows()
    )
    every = slowest_runs(slow, 3, index_builds=True)
    assert slowest_runs(slow, 3, index_builds=True, groups=10**6).equals(every)


def test_index_builds_count_when_asked(log_samples):
    slow = ftdc.read_logs(log_samples / "atlas-8.0.12").slow_ops
    builds = slow.filter(pl.col("op_type") == "none")
    assert builds.height == 16 and set(builds["command"]) == {"createIndexes"}
    queries = ftdc.summarize_queries(slow)
    everything = ftdc.summarize_queries(slow, index_builds=True)
    assert everything["count"].sum() == queries["count"].sum() + builds.height
    assert "createIndexes" not in set(queries["command"]) and "createIndexes" in set(everything["command"])


def test_a_command_without_a_filter_has_a_shape():
    index_build = {
        "createIndexes": "movies",
        "indexes": [
            {"v": 2, "key": {"_fts": "text", "_ftsx": 1}, "name": "plot_text", "weights": {"plot": 1}},
            {"v": 2, "key": {"email": -1}, "name": "email_-1", "unique": True},
        ],
        "lsid": {"id": "x"},
        "$db": "shop",
    }
    shape = orjson.loads(shape_of_command_json(json.dumps(index_build)))
    # An index build is the indexes it builds: each by its key pattern as given (directions and types are what it
    # builds), its options by name, its name and version left out.
    assert shape == {
        "indexes": [{"key": {"_fts": "text", "_ftsx": 1}, "weights": {"plot": 1}}, {"key": {"email": -1}, "unique": 1}],
    }
    stats = {"collStats": "orders", "scale": 1024, "$db": "shop", "$clusterTime": {"t": 1}}
    assert shape_of_other_command(json.dumps(stats)) == '{"collStats":1,"scale":1}'
    assert shape_of_other_command('{"insert":"orders","ordered":tr') is None  # a truncated line
    assert shape_of_other_command("[1]") is None and shape_of_other_command(None) is None


@settings(max_examples=25, deadline=None)
@given(groups=st.integers(2, 300), seed=st.integers(0, 2**32 - 1))
def test_shapes_of_equal_total_time_are_in_the_order_first_logged(groups, seed):
    """A table of slow operations is the same from run to run: shapes whose totals tie come in the order their first
    line was logged, as the lines quoted for them are chosen (`slowest_runs`); a grouping's own order is its threads'."""
    import random

    from conftest import slow_ops

    names = [f"db.c{i}" for i in range(groups)]
    random.Random(seed).shuffle(names)
    rows = [
        {
            "ns": ns,
            "command": "find",
            "shape": '{"a":1}',
            "duration_ms": 100,
            "node": "a:1",
            "op_type": "query",
            "write_statement": False,
        }
        for ns in names
        for _ in range(2)
    ]
    table = ftdc.summarize_queries(slow_ops(rows))
    assert table["ns"].to_list() == names
