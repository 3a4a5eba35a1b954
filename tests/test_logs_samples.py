"""read_logs against the shared JSON samples and their independently computed EXPECTED.json."""

import datetime as dt
import json

import polars as pl
import pytest

from ftdc.logs import read_logs, summarize_queries

UTC = dt.timezone.utc
SAMPLES = [
    "mongod-6.0.11/sample-mongod.log.gz",
    "atlas-8.0.12/" + "cluster0-shard-00-00.ufghn.mongodb.net_2025-08-17T19_50_00_2025-08-18T19_55_21_MONGODB.log.gz",
]


@pytest.fixture(scope="module")
def expected(log_samples):
    return json.loads((log_samples / "EXPECTED.json").read_text())


@pytest.fixture(scope="module")
def frames(log_samples):
    return {name: read_logs(log_samples / name) for name in SAMPLES}


@pytest.mark.parametrize("name", SAMPLES)
def test_counts_match_expected(frames, expected, name):
    want, got = expected[name], frames[name]
    slow = got.slow_ops
    assert slow.height == want["slow"]
    assert slow.height + got.events.height == want["lines"]
    assert got.problems.height == want["bad"]
    collscan = slow.filter(pl.col("plan_summary") == "COLLSCAN")
    assert collscan.height == want["collscan"]
    assert collscan["duration_ms"].max() == want["collscan_max_ms"]
    by = slow.group_by("component", "op_type").len()
    assert {f"{c}/{t}": n for c, t, n in by.iter_rows()} == want["by"]


def test_write_statements_are_marked(frames):
    slow = frames[SAMPLES[0]].slow_ops
    assert slow.filter(pl.col("write_statement")).height == 3072 + 2988
    assert slow.filter(pl.col("write_statement"))["component"].unique().to_list() == ["WRITE"]


def test_collscan_row_6011_hand_checked(frames):
    # Line: "2023-09-23T16:25:49.693-04:00" ... find vehicles filter {} COLLSCAN durationMillis 268
    row = frames[SAMPLES[0]].slow_ops.filter(pl.col("duration_ms") == 268, pl.col("plan_kind") == "COLLSCAN").row(0, named=True)
    assert row["ts"] == dt.datetime(2023, 9, 23, 20, 25, 49, 693000, tzinfo=UTC)  # -04:00 -> UTC
    assert row["started"] == dt.datetime(2023, 9, 23, 20, 25, 49, 425000, tzinfo=UTC)
    assert (row["command"], row["ns"], row["db"], row["coll"]) == ("find", "testdb.vehicles", "testdb", "vehicles")
    assert row["shape"] == '{"filter":{}}'
    assert (row["docs_examined"], row["nreturned"], row["keys_examined"]) == (101, 101, 0)
    assert row["query_hash"] == "17830885"
    assert row["connection"] == "conn519"
    assert row["app_name"] == "mongosh 2.0.1"
    assert row["node"] == "demo.simagix.com:27017"
    assert json.loads(row["command_json"])["filter"] == {}


def test_write_statement_row_6011(frames):
    row = frames[SAMPLES[0]].slow_ops.filter(pl.col("write_statement")).row(0, named=True)
    assert (row["op_type"], row["command"], row["plan_kind"]) == ("update", "update", "IDHACK")
    assert row["shape"] == '{"q":{"_id":1}}'
    assert row["ts"] == dt.datetime(2023, 9, 23, 20, 25, 13, 420000, tzinfo=UTC)


def test_storage_waits_6011(frames):
    # docs/log-format.md §3: 199 non-empty storage.timeWaitingMicros.cache values.
    assert frames[SAMPLES[0]].slow_ops["cache_wait_micros"].is_not_null().sum() == 199


def test_client_from_metadata_6011(frames):
    slow = frames[SAMPLES[0]].slow_ops
    events = frames[SAMPLES[0]].events
    # conn22 announces PyMongo, then (a later connection with the same id) the Go driver: the op takes the latest before it.
    metas = events.filter(pl.col("kind") == "client_metadata", pl.col("ctx") == "conn22")
    assert metas["driver"].to_list() == ["PyMongo 4.3.2", "mongo-go-driver v1.8.3"]
    meta = metas.row(1, named=True)
    ops = slow.filter(pl.col("connection") == "conn22", pl.col("ts") >= meta["ts"])
    assert ops.height > 0 and ops["client"].unique().to_list() == [meta["driver"]]
    unannounced = set(slow["connection"]) - set(events.filter(pl.col("kind") == "client_metadata")["ctx"])
    assert (
        slow.filter(pl.col("connection").is_in(list(unannounced)))["client"].null_count()
        == slow.filter(pl.col("connection").is_in(list(unannounced))).height
    )


def test_atlas_80_fields(frames):
    slow = frames[SAMPLES[1]].slow_ops
    row = slow.filter(pl.col("plan_kind") == "COLLSCAN", pl.col("duration_ms") == 328).row(0, named=True)
    assert row["ts"] == dt.datetime(2025, 8, 18, 19, 25, 19, 244000, tzinfo=UTC)  # +00:00
    assert row["query_shape_hash"] == "671A74857BD88690FC505DACD5766C6A81744B706FF95AF24B50D7E5EA213E53"
    assert (row["query_hash"], row["plan_cache_key"]) == ("415AC4BA", "289FFE52")
    assert (row["working_ms"], row["cpu_nanos"], row["execution_admissions"]) == (328, 104552423, 20)
    assert (row["bytes_read"], row["read_micros"]) == (74376970, 255633)
    assert row["command"] == "aggregate"
    assert row["shape"].startswith('{"pipeline":[{"$match":{"accommodates":{"$gte":1},"access":1}}')
    index_builds = slow.filter(pl.col("op_type") == "none")
    assert index_builds.height == 16 and index_builds["command"].unique().to_list() == ["createIndexes"]


def test_atlas_checkpoints(frames):
    events = frames[SAMPLES[1]].events
    assert events.filter(pl.col("kind") == "checkpoint").height == 58
    assert events.filter(pl.col("component") == "WTCHKPT")["kind"].unique().to_list() == ["checkpoint"]


def test_summary(frames):
    slow = frames[SAMPLES[0]].slow_ops
    summary = summarize_queries(slow)
    assert summary["count"].sum() == slow.filter(~pl.col("write_statement")).height
    assert summary["total_ms"].to_list() == sorted(summary["total_ms"].to_list(), reverse=True)
    vehicles = summary.filter(pl.col("ns") == "testdb.vehicles", pl.col("shape") == '{"filter":{}}').row(0, named=True)
    assert vehicles["collscan_share"] > 0 and vehicles["max_ms"] == 268
    assert vehicles["p50_ms"] <= vehicles["p95_ms"] <= vehicles["p99_ms"] <= vehicles["max_ms"]
    assert summarize_queries(slow, sort="count")["count"].is_sorted(descending=True)


def test_time_window(frames, log_samples):
    start = dt.datetime(2023, 9, 23, 20, 25, 49, tzinfo=UTC)
    end = "2023-09-23T20:26:00+00:00"
    window = read_logs(log_samples / SAMPLES[0], start=start, end=end).slow_ops
    assert window.height > 0
    assert window["ts"].min() >= start
    assert window["started"].max() <= dt.datetime(2023, 9, 23, 20, 26, tzinfo=UTC)


def test_wiredtiger_open_string_kept(frames, log_samples):
    """22315 "Opening WiredTiger" keeps its config (thresholds come from it); so does the legacy line."""
    atlas = frames[SAMPLES[1]].events.filter(pl.col("kind") == "storage_config")
    assert atlas.height == 1
    config = atlas["text"][0]
    assert config.startswith("create,cache_size=512M,") and "close_handle_minimum=2000" in config
    legacy = read_logs(log_samples / "legacy-text" / "mongod_4.0.10_storagestats.log").events
    texts = legacy.filter(pl.col("kind") == "storage_config")["text"].to_list()
    assert texts and texts[0].startswith("create,cache_size=7680M,") and "wiredtiger_open" not in texts[0]


def test_writes_logged_against_cmd_name_their_collection(frames):
    """update/delete COMMAND lines are logged as `<db>.$cmd`; their collection is the command's target."""
    slow = frames[SAMPLES[0]].slow_ops
    writes = slow.filter(pl.col("command").is_in(["update", "delete"]), ~pl.col("write_statement"))
    assert writes.height == 3072 + 2988
    assert not writes["ns"].str.ends_with("$cmd").any()
    target = writes["command_json"].str.extract(r'^\{"(?:update|delete)":"([^"]+)"')
    assert (writes["coll"] == target).all() and (writes["ns"] == writes["db"] + "." + target).all()
    # Commands that name no collection keep the namespace they were logged with.
    assert slow.filter(pl.col("command") == "getLog")["ns"].to_list() == ["admin.$cmd", "admin.$cmd"]
