"""The command line: summary, metrics, export, and one-line errors."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import ftdc
from analysis.workbench.overview import find_gaps
from cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def directory(ftdc_samples):
    return ftdc_samples / "mongod-7.0" / "diagnostic.data"


def test_summary_json(directory):
    result = runner.invoke(app, [str(directory), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # --json prints the JSON report (issue 21 §3): one node here
    assert set(report) == {
        "schema_version",
        "generated",
        "title",
        "headlines",
        "redacted",
        "nodes",
        "cross_node_findings",
        "cross_node_incidents",
        "no_log",  # no log beside this sample: where the search looked, as the terminal says it
    }
    assert report["no_log"].startswith(f"no mongod log found: looked in {directory}")
    [doc] = report["nodes"]
    # The node's entry is the JSON report's: its analysis, then its workbench.
    assert set(doc) == {
        "name",
        "headlines",
        "node",
        "summary",
        "thresholds",
        "incidents",
        "findings",
        "shapes",
        "slow_operations",
        "slow_operations_over_time",
        "connections",
        "log_messages",
        "system",
        "audit",
    }
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
    times = pl.Series("t", [0, 100, 200, 300, 400, 1400, 2400, 3400, 4400, 9400, 10400, 11400], dtype=pl.Int64).cast(
        pl.Datetime("ms")
    )
    gaps = find_gaps(times)
    assert [g.seconds for g in gaps] == [5.0]


def test_metrics_match(directory):
    result = runner.invoke(app, ["metrics", str(directory), "--match", "serverStatus.connections.*"])
    assert result.exit_code == 0
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert "serverStatus.connections.current" in names and all(n.startswith("serverStatus.connections.") for n in names)


def test_export_parquet(directory, tmp_path):
    out = tmp_path / "x.parquet"
    result = runner.invoke(
        app, ["export", str(directory), "--out", str(out), "--metrics", "serverStatus.uptime", "--start", "2025-07-10T16:00:00Z"]
    )
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


def test_incidents_follow_the_summary(tmp_path):
    result = runner.invoke(app, [str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log")], terminal_width=80)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert text.index("time range") < text.index("Incidents")
    # One incident, its root cause the scan, the four findings folded into it.
    assert text.count("I1.") >= 1 and "I2." not in text
    assert (
        "Root cause (an operation): COLLSCAN of shop.orders (aggregate: 1 run," in text and "[F3, F4]" in text
    )  # two ticket windows, one step, ids in order (issue 18 §4)
    assert "createIndex({ status: 1, total: 1 })" in text


def test_findings_flag_lists_the_findings(tmp_path):
    result = runner.invoke(
        app, [str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log"), "--findings"], terminal_width=80
    )
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.index("time range") < text.index("Findings") and "Incidents" not in text
    for kind in ("checkpoint stall", "cache pressure", "ticket exhaustion (write)"):  # kinds by name
        assert kind in text


def test_findings_as_json():
    result = runner.invoke(
        app, [str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log"), "--json", "--start", "2024-05-14T09:40:00Z"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["nodes"][0]
    findings = doc["findings"]
    cache = next(f for f in findings if f["kind"] == "cache_pressure")
    assert cache["start"].endswith("Z") and cache["severity"] == "critical"
    assert cache["culprits"][0]["ns"] == "shop.orders" and cache["culprits"][0]["collscan"]
    assert cache["causes"][0]["ns"] == "shop.orders"  # typed, not searched for in the prose
    [incident] = doc["incidents"]
    assert sorted(incident["finding_ids"]) == sorted(f["id"] for f in findings if f["severity"] != "info")
    assert incident["root_cause"]["kind"] == "operation" and incident["root_cause"]["evidence"]["ns"] == "shop.orders"
    assert incident["start"].endswith("Z") and [s["kind"] for s in incident["chain"]][-1] == "ticket_exhaustion"


def test_a_quiet_node_says_so(ftdc_samples):
    result = runner.invoke(app, [str(ftdc_samples / "mongod-4.2.1" / "diagnostic.data")], terminal_width=100)
    assert result.exit_code == 0
    said = [line for line in result.stdout.splitlines() if "No incident" in line]
    assert len(said) == 1 and "none reached warning or critical" in said[0] and "Incidents" not in result.stdout
    listed = runner.invoke(app, [str(ftdc_samples / "mongod-4.2.1" / "diagnostic.data"), "--findings"], terminal_width=100)
    assert listed.exit_code == 0 and "No problems found" in listed.stdout


# --- first contact (issue 8 §3-§6) -----------------------------------------------------

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z")


def run_cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """The console script as a user runs it in a terminal `columns` wide (stderr not a terminal)."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2 and result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_a_match_that_selects_nothing_is_an_error_naming_the_closest(directory):
    line = one_error_line(run_cli("metrics", str(directory), "--match", "serverStatus.conection*"))
    assert "'serverStatus.conection*' matches no metric (closest: serverStatus.connections.*" in line


def test_an_export_of_no_metric_is_an_error_and_writes_nothing(directory, tmp_path):
    line = one_error_line(
        run_cli("export", str(directory), "--out", str(tmp_path / "x.parquet"), "--metrics", "serverStatus.uptim")
    )
    assert "closest: serverStatus.uptime" in line and not list(tmp_path.iterdir())


def test_metric_list_times_are_iso_utc(directory):
    rows = [line.split("\t") for line in run_cli("metrics", str(directory), "--match", "serverStatus.uptime").stdout.splitlines()]
    assert rows and all(ISO.fullmatch(first) and ISO.fullmatch(last) for _, _, first, last in rows)


@pytest.mark.parametrize("command", [[], ["export", "--out", "x.csv"], ["logs"]])
def test_start_after_end_is_an_error_everywhere(command, directory, tmp_path):
    target = str(DEMO / "mongod.log") if command == ["logs"] else str(directory)
    args = [*command[:1], target, *[str(tmp_path / a) if a.endswith(".csv") else a for a in command[1:]]]
    line = one_error_line(run_cli(*args, "--start", "2025-07-10T18:00:00Z", "--end", "2025-07-10T17:00:00.5Z"))
    assert line == "error: start 2025-07-10T18:00:00Z is after end 2025-07-10T17:00:00.500Z"
    bad = one_error_line(run_cli(*args, "--start", "10/07/2025"))
    assert bad == "error: not a valid time: '10/07/2025' (ISO-8601, UTC unless it has an offset, e.g. 2024-05-14T09:30:00Z)"


def test_export_dataset_of_a_replica_set(tmp_path):
    members = sorted((DEMO / "scenarios" / "replica-set").glob("*/diagnostic.data"))
    result = run_cli("export", *map(str, members), "--dataset", str(tmp_path / "ds"), "--metrics", "serverStatus.connections.*")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith(f"({len(members)} nodes)")  # a count in its number, not "node(s)"
    back = pl.scan_parquet(tmp_path / "ds" / "samples" / "**" / "*.parquet", hive_partitioning=True).collect()
    assert back["node"].n_unique() == len(members) == 3
    assert back.height == sum(ftdc.read_ftdc(m, ["serverStatus.uptime"]).height for m in members)
    several = one_error_line(run_cli("export", *map(str, members), "--out", str(tmp_path / "x.parquet")))
    assert "3 nodes found; --out writes one node's samples: use --dataset DIR" in several


def test_summary_fits_80_columns(ftdc_samples):
    result = run_cli(str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log"))
    assert result.returncode == 0 and result.stderr == ""  # no progress bar when stderr is not a terminal
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert [line for line in lines if line != line.rstrip()] == []
    # Every timestamp whole on one line: the text has no date cut at a line end.
    assert not [line for line in lines if re.search(r"\d{4}-\d\d(-\d\d(T[\d:.]*)?)?$", line) and not ISO.search(line.split()[-1])]
    assert "time range" in result.stdout and "Incidents" in result.stdout


def test_interim_only_prints_what_is_known(ftdc_samples, tmp_path):
    shutil.copy(ftdc_samples / "mongod-7.0" / "diagnostic.data" / "metrics.interim", tmp_path)
    text = run_cli(str(tmp_path)).stdout
    assert " - cores" not in text and "host -" not in text and "-, " not in text
    node = next(line for line in text.splitlines() if line.startswith("node"))
    assert "unknown: no metadata document" in node


def test_go_written_file_does_not_claim_a_zero_period(ftdc_samples):
    text = run_cli(str(ftdc_samples / "go-writer-synthetic" / "perf_metrics_small.ftdc"), columns=200).stdout
    period = next(line for line in text.splitlines() if line.startswith("sampling period"))
    assert "0 s" not in period and "carry no time of their own" in period


@pytest.mark.parametrize("command", ["summary", "metrics", "export", "explore", "fleet", "logs"])
def test_each_commands_help_reads_as_written(command):
    """Usage names the arguments as a shell user reads them (`PATHS...`, not typer 0.27+'s `{paths}...`
    nor its `<list[Path]>`), and each argument keeps its own help (typer before 0.26 dropped it)."""
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}, prog_name="ftdc-analyze")
    assert result.exit_code == 0, result.output
    usage = result.stdout.splitlines()[0]
    assert re.fullmatch(rf"Usage: ftdc-analyze {command} \[OPTIONS\] (PATHS?)(\.\.\.)?", usage), usage
    assert not re.search(r"[{}]|<list\[|\\\[", result.stdout), result.stdout
    arguments = result.stdout.split("Arguments:")[1].split("Options:")[0]
    assert re.search(r"PATHS?(\.\.\.)? +\S", arguments), arguments  # the name, then its help on the same line


def test_the_installed_typer_is_in_the_range_declared():
    """The range in pyproject.toml is the one the help test above ran against: CI installs its newest."""
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    (typer_range,) = [r for r in map(Requirement, requires("ftdc-analyze") or []) if r.name == "typer"]
    assert typer_range.specifier.contains(version("typer")), (typer_range, version("typer"))


def test_version_and_help():
    result = run_cli("--version")
    assert result.returncode == 0 and re.fullmatch(r"ftdc-analyze \d+\.\d+\.\d+\S*\n", result.stdout)
    help_text = " ".join(run_cli("--help").stdout.split())
    assert "ftdc-analyze PATH [--log FILE ...]" in help_text and "summary command without its name" in help_text
