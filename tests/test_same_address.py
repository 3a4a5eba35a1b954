"""Issue 19 §5: two nodes that share an address (`host:port`) stay two nodes, with a key that says
so and a warning; captures of one node on different days stay one node. `fleet` takes logs."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from crafted_nodes import START, write_node

import ftdc
from analysis import fleet
from ftdc.dataset import read_nodes

ROOT = Path(__file__).resolve().parents[1]
DAY = dt.timedelta(days=1)


@pytest.fixture(scope="module")
def rigs(tmp_path_factory) -> dict[str, Path]:
    """Test rigs on localhost:27017: `a` on two days, `b` another replica set at a's time, `c` the same
    hardware and replica set as `a` but sampling at the same time (another process)."""
    root = tmp_path_factory.mktemp("rigs")
    made = {
        "a1": write_node(root / "a1" / "diagnostic.data", hostname="localhost", replica_set="rs0"),
        "a2": write_node(root / "a2" / "diagnostic.data", hostname="localhost", replica_set="rs0", start=START + DAY, seconds=60),
        "b": write_node(root / "b" / "diagnostic.data", hostname="localhost", replica_set="rs-test", seconds=90),
        "c": write_node(
            root / "c" / "diagnostic.data",
            hostname="localhost",
            replica_set="rs0",
            start=START + dt.timedelta(seconds=30),
            seconds=30,
        ),
    }
    return made


def export(nodes, out) -> tuple[pl.DataFrame, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts = ftdc.to_dataset(nodes, out)
    return facts, [str(w.message) for w in caught if issubclass(w.category, ftdc.FTDCWarning)]


def held(out: Path) -> dict[str, int]:
    frame = pl.scan_parquet(out / "samples", hive_partitioning=True).group_by("node").len().collect()
    return dict(frame.iter_rows())


def test_nodes_whose_identity_or_time_differ_are_kept_apart_and_named(tmp_path, rigs):
    out = tmp_path / "d"
    facts, warned = export([rigs["a1"], rigs["b"], rigs["c"]], out)
    keys = facts["node"].to_list()
    assert (
        keys[0] == "localhost_27017"
        and all(k.startswith("localhost_27017-same-address-") for k in keys[1:])
        and len(set(keys)) == 3
    )
    assert held(out) == dict(zip(keys, [120, 90, 30]))
    assert read_nodes(out).sort("node").equals(facts.sort("node"))
    assert len(warned) == 2
    assert (
        f"{rigs['b']}: another node at localhost:27017 than {rigs['a1']} (replica set differ): kept apart as {keys[1]}"
        == warned[0]
    )
    assert (
        f"{rigs['c']}: another node at localhost:27017 than {rigs['a1']} (their samples overlap in time): kept apart as {keys[2]}"
        == warned[1]
    )


def test_captures_of_one_node_on_different_days_are_one_node(tmp_path, rigs):
    out = tmp_path / "d"
    facts, warned = export([rigs["a1"], rigs["a2"]], out)
    assert warned == [] and facts.height == 1
    row = facts.row(0, named=True)
    assert row["node"] == "localhost_27017" and row["samples"] == 180 and row["files"] == 2
    assert row["first"] == START and row["last"] == START + DAY + dt.timedelta(seconds=59)
    assert row["source"] == f"{rigs['a1']}; {rigs['a2']}"
    assert held(out) == {"localhost_27017": 180}


def test_a_dataset_added_to_keeps_its_nodes_apart_and_together(tmp_path, rigs):
    out = tmp_path / "d"
    export([rigs["a1"]], out)
    facts, warned = export([rigs["b"]], out)
    other = facts["node"][0]
    assert other.startswith("localhost_27017-same-address-") and len(warned) == 1
    again, warned = export([rigs["b"]], out)  # the same node written again: its own key, no warning
    assert again["node"].to_list() == [other] and warned == []
    later, warned = export([rigs["a2"]], out)
    assert later["node"].to_list() == ["localhost_27017"] and warned == []
    assert held(out) == {"localhost_27017": 180, other: 90}
    assert dict(read_nodes(out).select("node", "samples").iter_rows()) == {"localhost_27017": 180, other: 90}


def test_the_cli_counts_the_nodes_the_dataset_holds(tmp_path, rigs):
    out = tmp_path / "d"
    result = subprocess.run(
        [sys.executable, "-m", "cli", "export", *map(str, rigs.values()), "--dataset", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("another node at localhost:27017") == 2
    assert " ".join(result.stderr.split()).endswith(f"wrote 300 rows to {out} (3 nodes)")
    assert len(held(out)) == 3 and read_nodes(out).height == 3


def test_fleet_keeps_nodes_sharing_an_address_apart(tmp_path, rigs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = fleet.run([rigs["a1"], rigs["b"]], tmp_path / "f", workers=1)
    keys = set(found["node"].to_pylist()) - {None}
    written = {p.stem for p in (tmp_path / "f" / "findings").glob("*.parquet") if not p.stem.startswith("replica_set=")}
    assert len(written) == 2 and {"localhost_27017"} < written and keys <= written
    assert {p.name for p in (tmp_path / "f" / "series").iterdir()} == {f"node={key}" for key in written}


def test_fleet_findings_carry_their_culprits_from_the_logs(tmp_path):
    """The demo node: its log beside its diagnostic.data names the operations behind its findings."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli",
            "fleet",
            str(ROOT / "samples" / "diagnostic.data"),
            "--out",
            str(tmp_path / "f"),
            "--engine",
            "loop",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "read the logs found beside the FTDC" in result.stderr
    findings = pl.read_parquet(tmp_path / "f" / "findings" / "*.parquet")
    culprits = findings.filter(pl.col("culprits").list.len() > 0)
    assert culprits.height >= 1 and "shop.orders" in culprits["culprits"].explode().struct.field("ns").to_list()


def rig_log(folder: Path, start: dt.datetime, ns: str) -> Path:
    from crafted_nodes import slow_query_line, startup_line

    folder.mkdir(parents=True)
    lines = [startup_line(start, "localhost")] + [slow_query_line(start + dt.timedelta(seconds=s), ns) for s in (10, 20)]
    (folder / "mongod.log").write_text("\n".join(lines) + "\n")
    return folder


def test_logs_of_two_nodes_at_one_address_are_two_nodes(tmp_path):
    a, b = rig_log(tmp_path / "rig-a", START, "app.a"), rig_log(tmp_path / "rig-b", START, "app.b")
    with pytest.warns(ftdc.LogWarning, match=r"another node at localhost:27017 than .*rig-a \(their lines overlap in time\)"):
        frames = ftdc.read_logs([a, b])
    nodes = dict(frames.slow_ops.group_by("node").agg(pl.col("ns").unique().first()).iter_rows())
    assert nodes == {"localhost:27017": "app.a", f"localhost:27017 ({b})": "app.b"}
    result = subprocess.run(
        [sys.executable, "-m", "cli", "logs", str(a), str(b), "--format", "csv"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0 and "another node at localhost:27017" in result.stderr
    import csv
    import io

    assert {row["node"] for row in csv.DictReader(io.StringIO(result.stdout))} == {"localhost:27017", f"localhost:27017 ({b})"}


def test_logs_of_one_node_on_different_days_are_one_node(tmp_path):
    a, b = rig_log(tmp_path / "monday", START, "app.a"), rig_log(tmp_path / "tuesday", START + DAY, "app.a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ftdc.LogWarning)
        frames = ftdc.read_logs([a, b])
    assert frames.slow_ops["node"].unique().to_list() == ["localhost:27017"] and frames.slow_ops.height == 4


def test_spark_keeps_nodes_sharing_an_address_apart(spark, tmp_path, rigs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = fleet.run_spark(spark, [str(rigs["a1"]), str(rigs["b"])], str(tmp_path / "f")).toArrow()
    written = {p.stem for p in (tmp_path / "f" / "findings").glob("*.parquet") if not p.stem.startswith("replica_set=")}
    assert len(written) == 2 and "localhost_27017" in written
    assert set(found["node"].to_pylist()) - {None} <= written
