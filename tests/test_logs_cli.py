"""The `logs` subcommand: table with COLLSCAN marks, JSON/CSV output, one-line errors."""

import csv
import gzip
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ftdc

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
    assert "27 slow operation(s), 9 of them COLLSCAN" in result.stdout  # EXPECTED.json: 27 COMMAND lines
    assert "COLLSCAN" in result.stdout.split("┃ plan")[1]


def test_csv_output(log_samples):
    result = runner.invoke(
        cli.app, ["logs", str(log_samples / "mongod-6.0.11"), "--format", "csv", "--top", "3", "--sort", "count"]
    )
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


# --- what a new user met on first contact (issue 8 §3, §6) -----------------------------

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")
DEMO_LOG = Path(__file__).resolve().parents[1] / "samples" / "mongod.log"


def run_cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """The console script as a user runs it, at a given terminal width."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env)


def test_header_says_what_was_read(log_samples):
    result = run_cli("logs", str(log_samples / "legacy-text"), "--top", "3")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "14 file(s) from 6 nodes" in text
    assert "3 line(s) could not be read; `--problems` lists them" in text
    assert re.search(r"[\d,]+ slow operation\(s\), [\d,]+ of them COLLSCAN", text)
    assert "2014-04-10T03:16:20.437Z – 2025-05-20T19:07:58.207Z" in text


def test_partly_unreadable_logs_warn_once_on_stderr(log_samples):
    result = run_cli("logs", str(log_samples / "legacy-text"), "--format", "json")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 0 and len(lines) == 1
    assert lines[0].startswith("warning: 3 line(s) could not be read; the first: ") and "mongod_225.log:397" in lines[0]
    json.loads(result.stdout)  # stdout stays clean for scripts


def test_problems_lists_the_unreadable_lines(log_samples, tmp_path):
    result = run_cli("logs", str(log_samples / "legacy-text"), "--problems", "--format", "json")
    rows = json.loads(result.stdout)
    assert result.returncode == 0 and len(rows) == 3
    assert {r["reason"] for r in rows} >= {"no timestamp"} and all(r["file"] and r["line"] for r in rows)
    # However deep the folder, the table names each file from it (given once, in the title),
    # so the place stays whole on one line of an 80-column console.
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    shutil.copytree(log_samples / "legacy-text", deep)
    table = run_cli("logs", str(deep), "--problems").stdout
    assert "mongod_225.log:397" in table and "a-rather-long-folder-name" in table.replace("\n", "").replace(" ", "")
    rows = [line for line in table.splitlines() if line[:1] in "┏┃┡│└"]  # the table, not its title
    assert max(map(len, rows)) <= 80 and all(line[-1] in "┓┃┩│┘" for line in rows)  # whole, not cropped


def test_several_nodes_get_a_node_column(log_samples):
    rows = json.loads(run_cli("logs", str(log_samples / "legacy-text"), "--format", "json", "--top", "50").stdout)
    assert len({r["node"] for r in rows}) > 1
    one = json.loads(run_cli("logs", str(DEMO_LOG), "--format", "json").stdout)
    assert "node" not in one[0]


@pytest.mark.parametrize("columns", [80, 100, 120, 160])
def test_table_fits_the_terminal(log_samples, columns):
    result = run_cli("logs", str(log_samples / "atlas-8.0.12"), "--top", "10", columns=columns)
    lines = result.stdout.splitlines()
    assert lines and all(len(line) <= columns for line in lines)
    assert not [line for line in lines if line != line.rstrip()]
    header = next(line for line in lines if "plan" in line and "query" in line)
    expected = ["count", "total ms", "max"] + ["p95", "docs/ret"] * (columns >= 100) + ["p50", "p99"] * (columns >= 120)
    cells = [c.strip() for c in header.strip("┃").split("┃")]
    assert sorted(cells[2:]) == sorted(expected)
    assert "COLLSCAN" in result.stdout and "% of runs" in result.stdout


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_times_are_iso_utc_with_z(log_samples, fmt):
    result = run_cli("logs", str(log_samples / "atlas-8.0.12"), "--format", fmt)
    rows = json.loads(result.stdout) if fmt == "json" else list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows and all(ISO_Z.match(r["first_seen"]) and ISO_Z.match(r["last_seen"]) for r in rows)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--top", "0"], "--top a positive number"),
        (["--top", "-3"], "--top a positive number"),
        (["--start", "2024-05-15", "--end", "2024-05-14"], "start 2024-05-15T00:00:00Z is after end 2024-05-14T00:00:00Z"),
        (["--start", "yesterday"], "not a valid time: 'yesterday' (ISO-8601"),
    ],
)
def test_bad_options_are_one_line_exit_2(args, message):
    result = run_cli("logs", str(DEMO_LOG), *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and message in result.stderr


def _not_logs(tmp_path: Path) -> dict[str, Path]:
    files = {
        "gzip of zeros": tmp_path / "zeros.log.gz",
        "random bytes": tmp_path / "random.log",
        "empty file": tmp_path / "empty.log",
        "ftdc file": tmp_path / "metrics.2024-05-14T09-00-00Z-00000",
    }
    files["gzip of zeros"].write_bytes(gzip.compress(bytes(1 << 20)))
    files["random bytes"].write_bytes(random.Random(7).randbytes(1 << 16))
    files["empty file"].write_bytes(b"")
    shutil.copy(next((DEMO_LOG.parent / "diagnostic.data").glob("metrics.*")), files["ftdc file"])
    return files


@pytest.mark.parametrize("kind", ["gzip of zeros", "random bytes", "empty file", "ftdc file"])
def test_input_with_no_log_line_is_an_error(tmp_path, kind):
    path = _not_logs(tmp_path)[kind]
    with pytest.raises(ftdc.NotALog, match="no mongod log line"):
        ftdc.read_logs(path)
    result = run_cli("logs", str(path))
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "no mongod log line" in result.stderr


def test_a_non_log_beside_logs_is_named_in_a_warning(tmp_path):
    junk = _not_logs(tmp_path)["random bytes"]
    with pytest.warns(ftdc.LogWarning, match="random.log"):
        frames = ftdc.read_logs([DEMO_LOG, junk])
    assert frames.slow_ops.height > 0


def test_db_cmd_writes_and_lone_write_lines_are_counted():
    """The demo's 14 slow shop.orders updates (1.5-8.7 s) are WRITE lines with no COMMAND line."""
    rows = json.loads(run_cli("logs", str(DEMO_LOG), "--format", "json").stdout)
    updates = next(r for r in rows if r["ns"] == "shop.orders" and r["command"] == "update")
    assert updates["count"] == 14 and 8000 < updates["max_ms"] < 9000
