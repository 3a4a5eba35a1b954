"""The command line: summary, metrics, export, and one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import ftdc
from analysis.overview import find_gaps
from cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def directory(ftdc_samples):
    return ftdc_samples / "mongod-7.0" / "diagnostic.data"


def test_summary_json(directory):
    result = runner.invoke(app, [str(directory), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"node", "summary", "thresholds", "findings"}
    summary = doc["summary"]
    assert doc["node"]["version"] == "7.0.0-rc6"
    assert summary["samples"] == 36722 and summary["files"] == 3 and summary["chunks"] == 150
    assert summary["metrics"] == 2465
    assert len(summary["restarts"]) == 1 and summary["restarts"] == ["2025-07-10T15:58:49.001Z"]
    periods = summary["periods_ms"]
    assert max(periods, key=periods.get) == "1000" and "100" in periods and "10000" in periods
    assert summary["schema_changes"] > 0


def test_summary_table_mentions_the_node(directory):
    result = runner.invoke(app, ["summary", str(directory)])
    assert result.exit_code == 0
    assert "7.0.0-rc6" in result.stdout and "byron-ThinkCentre-M910q:27017" in result.stdout


def test_gaps_ignore_period_changes():
    times = pl.Series("t", [0, 100, 200, 300, 400, 1400, 2400, 3400, 4400, 9400, 10400, 11400], dtype=pl.Int64).cast(pl.Datetime("ms"))
    gaps = find_gaps(times)
    assert [g.seconds for g in gaps] == [5.0]


def test_metrics_match(directory):
    result = runner.invoke(app, ["metrics", str(directory), "--match", "serverStatus.connections.*"])
    assert result.exit_code == 0
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert "serverStatus.connections.current" in names and all(n.startswith("serverStatus.connections.") for n in names)


def test_export_parquet(directory, tmp_path):
    out = tmp_path / "x.parquet"
    result = runner.invoke(app, ["export", str(directory), "--out", str(out), "--metrics", "serverStatus.uptime", "--start", "2025-07-10T16:00:00Z"])
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(out).equals(ftdc.read_ftdc(directory, ["serverStatus.uptime"], start="2025-07-10T16:00:00Z"))


@pytest.mark.parametrize("make", ["missing", "empty_dir", "garbage", "empty_file", "bad_suffix"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, make, directory):
    args = {
        "missing": [str(tmp_path / "nope")],
        "empty_dir": [str(tmp_path)],
        "garbage": [str(tmp_path / "metrics.x")],
        "empty_file": [str(tmp_path / "metrics.y")],
        "bad_suffix": ["export", str(directory), "--out", str(tmp_path / "x.xlsx")],
    }[make]
    (tmp_path / "metrics.x").write_bytes(b"this is not bson at all")
    (tmp_path / "metrics.y").write_bytes(b"")
    if make == "empty_dir":
        for f in tmp_path.iterdir():
            f.unlink()
    # A real process: the console script's behaviour, stderr included.
    result = subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr


DEMO = Path(__file__).resolve().parents[1] / "samples"


def test_findings_follow_the_summary(tmp_path):
    result = runner.invoke(app, [str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log")], terminal_width=80)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.index("time range") < text.index("Findings")
    for kind in ("checkpoint_stall", "cache_pressure", "ticket_exhaustion (write)"):
        assert kind in text
    assert "createIndex({ status: 1, total: 1 })" in text.replace("\n", "")


def test_findings_as_json():
    result = runner.invoke(app, [str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log"), "--json", "--start", "2024-05-14T09:40:00Z"])
    assert result.exit_code == 0, result.output
    findings = json.loads(result.stdout)["findings"]
    cache = next(f for f in findings if f["kind"] == "cache_pressure")
    assert cache["start"].endswith("Z") and cache["severity"] == "critical"
    assert cache["culprits"][0]["ns"] == "shop.orders" and cache["culprits"][0]["collscan"]


def test_a_quiet_node_says_so(ftdc_samples):
    result = runner.invoke(app, [str(ftdc_samples / "mongod-4.2.1" / "diagnostic.data")], terminal_width=100)
    assert result.exit_code == 0 and "No problems found" in result.stdout
