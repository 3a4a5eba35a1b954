"""The `logs` subcommand: table with COLLSCAN marks, JSON/CSV output, one-line errors."""

import json

import pytest
from typer.testing import CliRunner

cli = pytest.importorskip("cli")
runner = CliRunner()


def test_json_output_marks_collscan(log_samples):
    result = runner.invoke(cli.app, ["logs", str(log_samples / "atlas-8.0.12"), "--format", "json", "--top", "50"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    # The 27 COMMAND lines (EXPECTED.json); the 16 STORAGE index builds are not queries.
    assert sum(r["count"] for r in rows) == 27
    scans = [r for r in rows if r["collscan"]]
    assert scans and max(r["max_ms"] for r in scans) == 328


def test_table_and_sort(log_samples):
    result = runner.invoke(cli.app, ["logs", str(log_samples / "atlas-8.0.12"), "--sort", "p95", "--top", "5"])
    assert result.exit_code == 0, result.output
    assert "COLLSCAN" in result.stdout and "Top query shapes" in result.stdout


def test_csv_output(log_samples):
    result = runner.invoke(cli.app, ["logs", str(log_samples / "mongod-6.0.11"), "--format", "csv", "--top", "3", "--sort", "count"])
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("ns,command,shape") and len(lines) == 4


def test_missing_path_is_one_line_exit_2(tmp_path):
    result = runner.invoke(cli.app, ["logs", str(tmp_path / "nope.log")])
    assert result.exit_code == 2
    assert "no such file" in result.output and "Traceback" not in result.output


def test_bad_sort_is_exit_2(log_samples):
    result = runner.invoke(cli.app, ["logs", str(log_samples / "atlas-8.0.12"), "--sort", "mean"])
    assert result.exit_code == 2
