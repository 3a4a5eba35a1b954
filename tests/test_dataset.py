"""A fleet's FTDC as one hive-partitioned Parquet dataset, read back without this tool."""

import datetime as dt
import warnings
from pathlib import Path

import polars as pl
import polars.selectors as cs
import pyarrow.parquet as pq
import pytest
from conftest import require_module
from hypothesis import given
from hypothesis import strategies as st

import ftdc
from ftdc import _native
from ftdc.batches import time_windows, window_limit
from ftdc.dataset import distinct_names, open_node, original_name, read_nodes, write_node
from ftdc.reader import decode_native

DEMO = Path(__file__).resolve().parents[1] / "samples" / "diagnostic.data"
METRICS = ["serverStatus.uptime", "serverStatus.connections.current", "serverStatus.opcounters.*"]


@pytest.fixture(scope="module")
def dataset(ftdc_samples, tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet") / "dataset"
    nodes = [ftdc_samples / "mongod-7.0" / "diagnostic.data", DEMO, ftdc_samples / "mongod-4.2.1" / "diagnostic.data"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.FTDCWarning)
        facts = ftdc.to_dataset(nodes, out, METRICS)
    return out, nodes, facts


def expected(path, node_name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.FTDCWarning)
        frame = ftdc.read_ftdc(path, METRICS)
    return frame.with_columns(node=pl.lit(node_name), date=pl.col("start").dt.date())


def test_layout_and_node_facts(dataset):
    out, nodes, facts = dataset
    assert sorted(p.name for p in out.iterdir()) == ["nodes", "samples"]
    assert sorted(p.name for p in (out / "samples").iterdir()) == ["family=mongod-4.2", "family=mongod-7.0"]
    assert facts.sort("node").equals(read_nodes(out).sort("node"))
    assert facts["family"].to_list() == ["mongod-7.0", "mongod-7.0", "mongod-4.2"]
    assert facts["node"].to_list() == [
        "byron-ThinkCentre-M910q_27017",
        "db-prod-01.example.net_27017",
        "M-C02F13T4MD6M.sanmiguel.local_27017",
    ]
    assert facts["replica_set"].to_list() == [None, "rs0", "rs0"] and facts["samples"].to_list()[1] == 5431
    # One file per node and day, each holding that node's own metrics.
    for key, metrics in zip(facts["node"], facts["metrics"]):
        files = list((out / "samples").glob(f"family=*/node={key}/date=*/part-0.parquet"))
        assert files and all(len(pl.read_parquet_schema(f)) == metrics + 1 for f in files)


def test_polars_reads_the_dataset_as_read_ftdc_does(dataset):
    out, nodes, facts = dataset
    scanned = pl.scan_parquet(out / "samples" / "family=mongod-7.0", hive_partitioning=True, missing_columns="insert").collect()
    for path, name in zip(nodes[:2], facts["node"][:2]):
        mine = scanned.filter(pl.col("node") == name).sort("start")
        want = expected(path, name)
        assert mine.height == want.height
        for column in ("start", "serverStatus.uptime", "serverStatus.opcounters.insert", "date"):
            assert mine[column].to_list() == want[column].to_list(), column


def test_duckdb_reads_the_dataset_too(dataset):
    duckdb = require_module("duckdb")
    out, nodes, facts = dataset
    rows = duckdb.sql(
        f"""select node, count(*) as n, sum("serverStatus.connections.current") as c, min(date) as d
            from read_parquet('{out}/samples/**/*.parquet', hive_partitioning = true, union_by_name = true)
            where family = 'mongod-4.2' group by node"""
    ).fetchall()
    want = expected(nodes[2], facts["node"][2])
    assert rows == [(facts["node"][2], want.height, want["serverStatus.connections.current"].sum(), want["date"].min())]


def test_a_directory_that_is_not_a_dataset_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(ftdc.FTDCError, match="holds no dataset"):
        ftdc.to_dataset([DEMO], tmp_path / "d")


def test_write_node_replaces_only_its_own_days(dataset, tmp_path):
    out, nodes, facts = dataset
    root = tmp_path / "d"
    ftdc.to_dataset(nodes[1:3], root, METRICS)
    before = {p: p.stat().st_mtime_ns for p in (root / "samples").rglob("*.parquet")}
    # The demo node again, its second hour only: the other node's files are untouched, its own day rewritten.
    row = write_node(DEMO, root, METRICS, start="2024-05-14T10:00:00Z")
    after = {p: p.stat().st_mtime_ns for p in (root / "samples").rglob("*.parquet")}
    assert before.keys() == after.keys()
    changed = [p for p in after if after[p] != before[p]]
    assert changed and all(f"node={row['node']}" in str(p) for p in changed)
    assert read_nodes(root).filter(pl.col("node") == row["node"])["samples"].item() == row["samples"] < 5431
    assert not list(root.rglob(".*partial*"))


@given(st.lists(st.text(alphabet="aAbB.^_r", min_size=1, max_size=6), min_size=1, max_size=8, unique=True))
def test_case_colliding_names_become_distinct_and_reversible(names):
    columns = distinct_names(names)
    assert len({c.lower() for c in columns.values()}) == len(names)
    assert all(original_name(c) == n for n, c in columns.items())


def test_a_lock_mode_is_one_column_on_every_node():
    # A node that recorded only the exclusive mode names it as one that recorded both does.
    alone = distinct_names(["serverStatus.locks.Global.acquireCount.W"])
    both = distinct_names(["serverStatus.locks.Global.acquireCount.w", "serverStatus.locks.Global.acquireCount.W"])
    assert (
        alone["serverStatus.locks.Global.acquireCount.W"]
        == both["serverStatus.locks.Global.acquireCount.W"]
        == "serverStatus.locks.Global.acquireCount.^w"
    )
    assert distinct_names(["serverStatus.opcounters.insert"]) == {
        "serverStatus.opcounters.insert": "serverStatus.opcounters.insert"
    }


def test_real_lock_modes_differing_by_case(dataset, tmp_path):
    out, nodes, facts = dataset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.FTDCWarning)
        write_node(nodes[2], tmp_path)
    files = list((tmp_path / "samples" / "family=mongod-4.2").rglob("*.parquet"))
    names = pl.read_parquet_schema(files[0])
    lowered = [n.lower() for n in names]
    assert len(set(lowered)) == len(lowered)
    assert "serverStatus.locks.Collection.acquireCount.^r" in names and "serverStatus.locks.Collection.acquireCount.r" in names


def test_time_range_and_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "d"
    facts = ftdc.to_dataset([DEMO], out, METRICS, start="2024-05-14T10:00:00Z")
    assert facts["first"][0] == dt.datetime(2024, 5, 14, 10, 0, tzinfo=dt.timezone.utc)
    import ftdc.dataset as module

    days = module._days

    def broken(times):
        # The first day's file is under way when the run is interrupted.
        yield from days(times)
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "_days", broken)
    with pytest.raises(KeyboardInterrupt):
        ftdc.to_dataset([DEMO], tmp_path / "e", METRICS)
    assert not list((tmp_path / "e").rglob("*.parquet")) and not list((tmp_path / "e").rglob(".*partial*"))


@pytest.mark.parametrize("budget", [2_000_000, None])
@pytest.mark.parametrize("node", ["demo", "mongod-7.0"])
def test_every_metric_reads_back_as_read_ftdc_gives_it(node, budget, ftdc_samples, tmp_path):
    """The dataset holds the node's frame itself: every metric, each sample once, in its day's
    file, at Arrow's microseconds, whatever the windows the write was cut into (the 7.0
    sample spans many days; 2 M values cut it into windows of ~800 rows that cross midnight)."""
    path = DEMO if node == "demo" else ftdc_samples / node / "diagnostic.data"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.FTDCWarning)
        ftdc.to_dataset([path], tmp_path / "d", **({"budget": budget} if budget else {}))
        want = ftdc.read_ftdc(path)
    want = want.rename(distinct_names(want.columns)).with_columns(cs.datetime().dt.cast_time_unit("us"))
    files = sorted((tmp_path / "d" / "samples").rglob("*.parquet"))
    days = [pl.read_parquet(f) for f in files]
    for f, day in zip(files, days):
        assert f.name == "part-0.parquet" and day["start"].dt.date().unique().to_list() == [
            dt.date.fromisoformat(f.parent.name.removeprefix("date="))
        ]
        assert pq.read_schema(f).remove_metadata() == want.to_arrow().schema.remove_metadata()
    assert pl.concat(days).equals(want)


@given(st.lists(st.text(alphabet="aAbB.^_r", min_size=1, max_size=6), min_size=1, max_size=8, unique=True))
def test_a_name_needing_no_escape_is_its_own_column(names):
    # Escaped only for a twin differing by case, a `^`, or a component of one capital letter (a lock mode).
    columns = distinct_names(names)
    for name in names:
        plain = "^" not in name and not any(len(p) == 1 and p.isupper() for p in name.split("."))
        if plain and sum(n.lower() == name.lower() for n in names) == 1:
            assert columns[name] == name
        else:
            assert columns[name] != name or ("^" not in name and not any(p.isupper() for p in name))


def test_an_export_does_not_import_pyarrow_compute(tmp_path):
    # Its import (250 functions wrapped) costs a whole process 0.13 s; polars takes a lone Arrow array through it.
    import subprocess
    import sys

    code = "import sys, ftdc; ftdc.to_dataset([sys.argv[1]], sys.argv[2]); assert 'pyarrow.compute' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", code, str(DEMO), str(tmp_path / "d")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_an_exports_windows_reuse_the_memory_of_the_windows_before(ftdc_samples, tmp_path):
    # The real 7.0 node in windows of some 40 MB of decoded values each: decoded alone, each maps its own memory; in
    # an export, two are held at once (one written while the next is decoded) and the others reuse theirs, so the
    # pages are faulted in once, not once a window (a week's export faulted 2.5 GB in its 44 windows).
    node = open_node(ftdc_samples / "mongod-7.0" / "diagnostic.data")
    budget = 20_000_000
    windows = list(time_windows(node.catalog, len(node.catalog.schema()), budget=budget))
    alone = []
    for window in windows:
        _native.release_spare()
        before = _native.counters()[2]
        decode_native(window.files, None, window.start, window.end, max_values=window_limit(budget))
        alone.append(_native.counters()[2] - before)
    assert len(windows) >= 4 and min(alone) >= 16 << 20, (len(windows), alone)
    _native.release_spare()
    before = _native.counters()[2]
    write_node(node, tmp_path / "d", budget=budget)
    assert _native.counters()[2] - before <= 2 * max(alone) < sum(alone)
