"""The fleet path on Spark local[2]: each node's findings and incidents, and its replica set's, equal
`analyze_nodes`'s for the members together, and the dataset answers the same questions in Spark, DuckDB and polars."""

import datetime as dt
import json
import warnings
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from conftest import require_module

import analysis
import ftdc
from analysis import fleet
from analysis.outputs.tables import (
    FINDINGS_SCHEMA,
    INCIDENTS_SCHEMA,
    analysis_key,
    finding_rows,
    incident_rows,
    incidents_table,
    series_table,
    to_table,
)

duckdb = require_module("duckdb")

ROOT = Path(__file__).resolve().parents[1]
COMPARED = [
    "node",
    "replica_set",
    "version",
    "scope",
    "id",
    "kind",
    "severity",
    "resource",
    "start",
    "end",
    "title",
    "explanation",
    "evidence",
    "culprits",
    "causes",
    "recommendations",
    "error",
]


def written_nodes(root: Path) -> list[Path]:
    """Nodes this test writes with the project's simulator: an hour each, layouts the samples lack
    (8.0 with the multi-service sections), a standalone, and a second replica set of two."""
    from samples.make_scenarios import Healthy
    from samples.simulate import Config, write_ftdc

    t0 = dt.datetime(2025, 2, 3, 4, 0, tzinfo=dt.timezone.utc)
    configs = [
        Config(version="8.0.4", layout="8.0-services", host="svc-01.example.net", replica_set=None, seed=21),
        Config(version="6.0.14", layout="6.0", host="rs2-a.example.net", replica_set="rs-two", seed=22),
        Config(version="6.0.14", layout="6.0", host="rs2-b.example.net", replica_set="rs-two", seed=23),
    ]
    for config in configs:
        write_ftdc(root / config.host / "diagnostic.data", config, t0, 3600, Healthy(config.seed))
    return [root / c.host / "diagnostic.data" for c in configs]


@pytest.fixture(scope="module")
def nodes(ftdc_samples, tmp_path_factory):
    real = [
        ftdc_samples / "mongod-4.2.1" / "diagnostic.data",
        ftdc_samples / "mongod-7.0" / "diagnostic.data",
        ftdc_samples / "mongod-8.0-chunk" / "metric-2025-03-12_15-58-06.0_+00-00-00.bson",
    ]
    # The scenario nodes (the demo shares checkpoint-stall's address: one node, another day).
    scenarios = sorted(p for p in (ROOT / "samples" / "scenarios").rglob("diagnostic.data") if p.is_dir())
    found = real + scenarios + written_nodes(tmp_path_factory.mktemp("written"))
    assert len(found) >= 12
    return found


@pytest.fixture(scope="module")
def fleet_run(spark, nodes, tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ftdc.to_dataset(nodes, root)
        found = fleet.run_spark(spark, [str(p) for p in nodes] + [str(root / "no-such-node")], str(root)).toArrow()
    found.validate(full=True)
    # polars 1.x misreads some nested columns of Spark's Arrow batches ("offsets must not exceed the values length"): rebuilt from values.
    found = pa.Table.from_pylist(found.to_pylist(), schema=FINDINGS_SCHEMA)
    return root, pl.from_arrow(found)


def _rows(table: pa.Table, columns=COMPARED) -> list[tuple]:
    return sorted(
        tuple(json.dumps(r[c], default=str, sort_keys=True) for c in columns) for r in table.select(columns).to_pylist()
    )


def test_spark_findings_and_incidents_equal_the_per_node_analyses(fleet_run, nodes):
    """Each node's findings and incidents as `analyze_nodes` composes them with the other members of its replica set
    (elections and lag to the replica set), a node of no replica set alone."""
    root, found = fleet_run
    assert {".".join(v.split(".")[:2]) for v in found["version"].drop_nulls()} == {"4.2", "6.0", "7.0", "8.0"}
    incidents = pl.read_parquet(root / "incidents" / "*.parquet").to_arrow().cast(INCIDENTS_SCHEMA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for unit in fleet.units(nodes):
            result = analysis.analyze_nodes([path for path, _ in unit])
            for (path, _), want in zip(unit, result.nodes):
                key = analysis_key(want, path)
                mine = found.filter((pl.col("node") == key) & (pl.col("scope") == "node")).to_arrow().cast(FINDINGS_SCHEMA)
                assert _rows(mine) == _rows(to_table(finding_rows(want.findings, want.node, key))), path
                mine = incidents.filter(pa.compute.equal(incidents["node"], key))
                expected = to_table(incident_rows(want.incidents, want.node, key), INCIDENTS_SCHEMA)
                assert _rows(mine, INCIDENTS_SCHEMA.names) == _rows(expected, INCIDENTS_SCHEMA.names), path
    assert incidents.num_rows > 0
    # Written too, and read back in one call.
    assert pl.read_parquet(root / "findings" / "*.parquet").height == found.height


@pytest.mark.parametrize("name", ["rs-prod", "rs-two"])
def test_replica_sets_equal_analyze_nodes(fleet_run, nodes, name):
    """Each replica set's merged elections and lag, ids included, as `analyze_nodes` gives them for its members."""
    root, found = fleet_run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        members = sorted(p for p in nodes if ftdc.read_metadata(p).node.replica_set == name)
        want = analysis.analyze_nodes(members).cross_node
    assert len(members) >= 2
    mine = found.filter(pl.col("replica_set") == name, pl.col("scope") == "replica_set").to_arrow().cast(FINDINGS_SCHEMA)
    expected = to_table(finding_rows(want, ftdc.NodeInfo(replica_set=name), None, scope="replica_set"))
    assert _rows(mine) == _rows(expected)
    if name == "rs-prod":
        assert sorted(mine["kind"].to_pylist()) == ["primary_change", "replication_lag"]


def test_a_node_that_cannot_be_read_is_an_error_row(fleet_run, tmp_path):
    root, found = fleet_run
    errors = found.filter(pl.col("error").is_not_null())
    assert errors.height == 1 and "no-such-node" in errors["error"][0] and errors["kind"][0] is None
    (tmp_path / "metrics.2024-01-01T00-00-00Z-00000").write_bytes(b"not FTDC at all")
    for table in (analysis.findings_table(tmp_path), incidents_table(tmp_path)):
        assert table.num_rows == 1 and str(tmp_path) in table["error"][0].as_py() and table["title"][0].as_py() is None


def test_spark_duckdb_and_polars_answer_the_same_questions(spark, fleet_run, nodes):
    """Max cache fill and minutes with write tickets exhausted (the detector's test) per node, one call each."""
    root, _ = fleet_run
    series = root / "series"
    sql = (
        "select node, max(cache_fill_pct) as fill, round(sum(case when write_tickets_exhausted then interval_s else 0 end) / 60, 3) as minutes "
        "from {} group by node order by node"
    )
    spark.read.parquet(str(series)).createOrReplaceTempView("series")
    by_spark = [tuple(r) for r in spark.sql(sql.format("series")).collect()]
    by_duckdb = duckdb.sql(sql.format(f"read_parquet('{series}/**/*.parquet', hive_partitioning = true)")).fetchall()
    by_polars = (
        pl.scan_parquet(series, hive_partitioning=True)
        .group_by("node")
        .agg(
            fill=pl.col("cache_fill_pct").max(),
            minutes=(pl.when(pl.col("write_tickets_exhausted")).then(pl.col("interval_s")).otherwise(0).sum() / 60).round(3),
        )
        .sort("node")
        .collect()
        .rows()
    )
    assert by_spark == by_duckdb == by_polars
    assert len(by_spark) == len(nodes)
    # The answers are the analyses' own: the write-queue node's minutes cover its ticket_exhaustion finding.
    answers = {node: (fill, minutes) for node, fill, minutes in by_spark}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        queued = analysis.analyze(ROOT / "samples" / "scenarios" / "write-queue-7.0" / "diagnostic.data")
    key = ftdc.dataset.node_key(
        queued.node, ftdc.paths.resolve(ROOT / "samples" / "scenarios" / "write-queue-7.0" / "diagnostic.data")
    )
    exhausted = [f for f in queued.findings if f.kind == "ticket_exhaustion" and f.resource == "write"]
    assert exhausted and answers[key][1] * 60 >= exhausted[0].evidence["seconds_exhausted"] - 1
    assert answers[key][0] == pytest.approx(series_table(queued)["cache_fill_pct"].to_pandas().max())


def test_spark_reads_a_real_family_with_lock_modes_differing_by_case(spark, fleet_run):
    root, _ = fleet_run
    family = spark.read.parquet(str(root / "samples" / "family=mongod-4.2"))
    assert "serverStatus.locks.Collection.acquireCount.^r" in family.columns
    assert family.count() == ftdc.dataset.read_nodes(root).filter(pl.col("family") == "mongod-4.2")["samples"].sum()


def test_a_spawn_pool_and_the_command_give_the_loop_s_findings(tmp_path):
    import subprocess
    import sys

    members = sorted((ROOT / "samples" / "scenarios" / "replica-set").glob("*/diagnostic.data"))
    # The command reads the logs beside each member's diagnostic.data, as the summary does (issue 19 §5).
    logs = [str(m.parent / "mongod.log") for m in members]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop = fleet.run(members, workers=1, logs=logs)
        pool = fleet.run(members, workers=2, logs=logs)
    assert _rows(pool) == _rows(loop) and loop.num_rows >= 4
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli",
            "fleet",
            str(ROOT / "samples" / "scenarios" / "replica-set"),
            "--out",
            str(tmp_path / "d"),
            "--engine",
            "loop",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert _rows(pl.read_parquet(tmp_path / "d" / "findings" / "*.parquet").to_arrow().cast(FINDINGS_SCHEMA)) == _rows(loop)


def test_every_engine_reads_the_whole_sample_tree_in_one_call(spark, fleet_run):
    """Nodes of 4.2 to 8.0, each file with its own metrics: merged by name (nodes/ is outside the tree)."""
    root, _ = fleet_run
    samples = root / "samples"
    facts = sorted(ftdc.dataset.read_nodes(root).select("node", "family", "samples").rows())
    sql = 'select node, family, count(*) as n, max("serverStatus.locks.Global.acquireCount.^w") as w from {} group by node, family order by node'
    spark.read.option("mergeSchema", "true").parquet(str(samples)).createOrReplaceTempView("samples")
    by_spark = [tuple(r) for r in spark.sql(sql.replace('"', "`").format("samples")).collect()]
    by_duckdb = duckdb.sql(
        sql.format(f"read_parquet('{samples}/**/*.parquet', hive_partitioning = true, union_by_name = true)")
    ).fetchall()
    by_polars = (
        pl.scan_parquet(samples, hive_partitioning=True, missing_columns="insert", extra_columns="ignore")
        .group_by("node", "family")
        .agg(n=pl.len().cast(pl.Int64), w=pl.col("serverStatus.locks.Global.acquireCount.^w").max())
        .sort("node")
        .collect()
        .rows()
    )
    assert by_spark == by_duckdb == by_polars
    assert [row[:3] for row in by_spark] == facts
    assert any(row[3] is not None for row in by_spark)


def test_two_paths_of_one_node_are_named_in_a_warning():
    same = [ROOT / "samples" / "diagnostic.data", ROOT / "samples" / "scenarios" / "checkpoint-stall" / "diagnostic.data"]
    with pytest.warns(ftdc.FTDCWarning, match=r"the same node \(db-prod-01.example.net_27017\)"):
        fleet.run(same, workers=1)


def test_the_readme_publishes_the_spark_schemas_as_the_code_has_them():
    from analysis.outputs.tables import FINDINGS_DDL, INCIDENTS_DDL

    # The README is moving into docs/ (issue 21): the schemas are published in one of them.
    published = [(ROOT / "README.md").read_text(), *(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))]
    assert any(FINDINGS_DDL in text and INCIDENTS_DDL in text for text in published)
