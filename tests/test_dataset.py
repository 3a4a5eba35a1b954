"""A fleet's FTDC as one hive-partitioned Parquet dataset, read back without this tool."""

import datetime as dt
import warnings
from pathlib import Path

import polars as pl
import pytest

import ftdc
from ftdc.dataset import NODES_TABLE

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
    assert sorted(p.name for p in out.iterdir()) == ["mongod-4.2", "mongod-7.0", NODES_TABLE]
    assert facts.equals(pl.read_parquet(out / NODES_TABLE))
    assert facts["family"].to_list() == ["mongod-7.0", "mongod-7.0", "mongod-4.2"]
    assert facts["node"].to_list() == ["byron-ThinkCentre-M910q_27017", "db-prod-01.example.net_27017", "M-C02F13T4MD6M.sanmiguel.local_27017"]
    assert facts["replica_set"].to_list() == [None, "rs0", "rs0"] and facts["samples"].to_list()[1] == 5431
    # One schema per family: every file of mongod-7.0 has the same columns.
    schemas = {tuple(pl.read_parquet_schema(f)) for f in (out / "mongod-7.0").rglob("*.parquet")}
    assert len(schemas) == 1


def test_polars_reads_the_dataset_as_read_ftdc_does(dataset):
    out, nodes, facts = dataset
    scanned = pl.scan_parquet(out / "mongod-7.0", hive_partitioning=True).collect()
    for path, name in zip(nodes[:2], facts["node"][:2]):
        mine = scanned.filter(pl.col("node") == name).sort("start")
        want = expected(path, name)
        assert mine.height == want.height
        for column in ("start", "serverStatus.uptime", "serverStatus.opcounters.insert", "date"):
            assert mine[column].to_list() == want[column].to_list(), column


def test_duckdb_reads_the_dataset_too(dataset):
    duckdb = pytest.importorskip("duckdb")
    out, nodes, facts = dataset
    rows = duckdb.sql(
        f"""select node, count(*) as n, sum("serverStatus.connections.current") as c, min(date) as d
            from read_parquet('{out}/mongod-4.2/**/*.parquet', hive_partitioning = true) group by node"""
    ).fetchall()
    want = expected(nodes[2], facts["node"][2])
    assert rows == [(facts["node"][2], want.height, want["serverStatus.connections.current"].sum(), want["date"].min())]


def test_an_existing_dataset_is_never_mixed_into(dataset, tmp_path):
    out, nodes, _ = dataset
    with pytest.raises(ftdc.FTDCError, match="not an empty directory"):
        ftdc.to_dataset(nodes[1:2], out)
    assert not list(out.parent.glob(".dataset.*.partial"))


def test_time_range_and_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "d"
    facts = ftdc.to_dataset([DEMO], out, METRICS, start="2024-05-14T10:00:00Z")
    assert facts["first"][0] == dt.datetime(2024, 5, 14, 10, 0, tzinfo=dt.timezone.utc)
    import ftdc.dataset as module

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module.pq, "write_table", broken)
    with pytest.raises(KeyboardInterrupt):
        ftdc.to_dataset([DEMO], tmp_path / "e", METRICS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
