"""Redacted reports: no host, IP, user, replica set, namespace or literal value of the input
anywhere in the output bytes of any format, PNGs and HTML attributes included."""

import datetime as dt
import html
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

import analysis
import ftdc
from analysis.nodes import NodesAnalysis
from analysis.outputs.document import result_document
from analysis.outputs.report import Redactor, build_report, redact_result, write_report

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples"
# What the demo's files hold that must not leave: host, replica set, namespaces, and
# literal values of the logged queries (a status, an amount, an ObjectId, an e-mail).
DEMO_SECRETS = [
    "db-prod-01.example.net",
    "db-prod-01",
    "shop.orders",
    "shop.customers",
    '"shop"',
    '"orders"',
    '"customers"',
    "pending",
    "66433a2f9d1e8b0012345678",
    '"paid"',
    '"x"',
    "rs0",
    "orders-service",  # the application's name (appName): the customer's word, like a host's
]


def texts_of(path: Path) -> list[tuple[str, bytes]]:
    """(what, bytes) to search: a file's bytes (the figures are SVG text, inline or beside a Markdown report: searched whole)."""
    data = path.read_bytes()
    # The explorer's code (uPlot and explorer.js) is the same in every report and holds no input: its
    # identifiers ("x", pending) are not the node's. Its data, from the input, is searched with the rest.
    from analysis.outputs.report.explorer_page import scripts, styles

    for code in (*scripts(), styles()):  # the page holds its style in the head and its scripts at the end, each whole
        data = data.replace(code.encode("utf-8"), b"")
    return [(path.name, data)]


def assert_clean(files: list[Path], secrets: list[str]) -> None:
    """No secret as a whole token ("pending", not "spending") in any file, as written or HTML-escaped."""
    assert files
    forms = {form for s in secrets for form in (s, html.escape(s))}
    patterns = [(s, re.compile(rb"(?<![A-Za-z0-9])" + re.escape(s.encode()) + rb"(?![A-Za-z0-9])")) for s in forms]
    for path in files:
        for what, data in texts_of(path):
            for secret, pattern in patterns:
                assert not pattern.search(data), f"{secret!r} in {what}"


def redacted_reports(result, tmp_path):
    redactor = Redactor()
    report = build_report(redact_result(result, redactor), redacted=True)
    files = []
    for suffix in (".html", ".md", ".json"):
        files += write_report(report, tmp_path / f"report{suffix}")
    return redactor, files


@pytest.fixture(scope="module")
def demo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(DEMO / "diagnostic.data", DEMO / "mongod.log")


def leaks(analyses, tmp_path) -> str:
    """The unredacted HTML report's text: what redaction has to remove."""
    path = tmp_path / "plain.html"
    write_report(build_report(analyses), path)
    return path.read_text()


def test_demo_report_in_every_format_holds_no_original_name_or_value(demo, tmp_path):
    plain = leaks([demo], tmp_path)
    assert all(s in plain for s in ("db-prod-01.example.net", "shop.orders", "&quot;shop&quot;", "rs0", "orders-service"))
    redactor, files = redacted_reports(NodesAnalysis([demo]), tmp_path)
    assert_clean(files, DEMO_SECRETS)
    page = (tmp_path / "report.html").read_text()
    # The report is still useful: pseudonyms, shapes, and the index advice on the pseudonymous namespace.
    assert (
        "host-1:27017" in page
        and "db-1.coll-2" in page
        and "getSiblingDB(&quot;db-1&quot;).getCollection(&quot;coll-2&quot;)" in page
    )
    assert "{&quot;pipeline&quot;:[{&quot;$match&quot;:{&quot;status&quot;:1,&quot;total&quot;:{&quot;$gt&quot;:1}}}]}" in page
    key = redactor.key()
    assert key["host-1"] == "db-prod-01.example.net" and key["db-1.coll-2"] == "shop.orders" and key["rs-1"] == "rs0"
    assert key["app-1"] == "orders-service" and "app-1" in page


def test_pseudonyms_are_stable_within_a_report():
    r = Redactor()
    assert (
        r.host("db1.example.com:27017") == "host-1:27017"
        and r.host("DB1.example.com") == "host-1"
        and r.host("db2.example.com") == "host-2"
    )
    assert r.ns("app.users") == "db-1.coll-1" and r.ns("app.orders") == "db-1.coll-2" and r.ns("app.users") == "db-1.coll-1"
    assert r.ns("billing.users") == "db-2.coll-3"
    text = r.text('slow on app.users from 10.1.2.3:5555 and [fe80::1]; /home/alice/mongod.log:3 at 09:50:00 "users"')
    assert text == 'slow on db-1.coll-1 from ip-1:5555 and [ip-2]; mongod.log:3 at 09:50:00 "coll-1"'
    advice = r.text('db.getSiblingDB("billing").getCollection("users").createIndex({ a: 1 })')
    assert advice == 'db.getSiblingDB("db-2").getCollection("coll-3").createIndex({ a: 1 })'
    assert r.text("/Users/bob/data/db") == "db" and r.key()["user-2"] == "bob"


def test_real_node_redacted(ftdc_samples, tmp_path):
    """A real 4.2.1 replica-set member on a macOS host."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(ftdc_samples / "mongod-4.2.1" / "diagnostic.data")
    secrets = ["M-C02F13T4MD6M", "M-C02F13T4MD6M.sanmiguel.local", "sanmiguel", "rs0"]
    assert "M-C02F13T4MD6M.sanmiguel.local" in leaks([result], tmp_path)
    _, files = redacted_reports(NodesAnalysis([result]), tmp_path)
    assert_clean(files, secrets)


def test_real_log_operations_redacted(ftdc_samples, log_samples, tmp_path):
    """The real 6.0.11 log's operations (real namespaces, queries, client IPs), moved in time into
    the stressed 8.0 node's incident so that they are its culprits."""
    frames = ftdc.read_logs(log_samples / "mongod-6.0.11" / "sample-mongod.log.gz")
    shift = dt.datetime(2025, 3, 12, 16, 0, 30, tzinfo=dt.timezone.utc) - frames.slow_ops["started"].min()
    moved = ftdc.LogFrames(
        frames.slow_ops.with_columns(pl.col("ts") + shift, pl.col("started") + shift),
        frames.events.with_columns(pl.col("ts") + shift),
        frames.problems,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(ftdc_samples / "mongod-8.0-chunk" / "metric-2025-03-12_15-58-06.0_+00-00-00.bson", moved)
    namespaces = sorted(ns for ns in frames.slow_ops["ns"].drop_nulls().unique().to_list() if "." in ns)
    ips = sorted({r.rsplit(":", 1)[0] for r in frames.events["remote"].drop_nulls().unique().to_list()})
    plain = leaks([result], tmp_path)
    shown = [ns for ns in namespaces if ns in plain]
    assert shown and ips, "the log's namespaces must reach the unredacted report for this test to mean anything"
    _, files = redacted_reports(NodesAnalysis([result]), tmp_path)
    assert_clean(files, namespaces + [ip for ip in ips if re.fullmatch(r"[\d.]+|[0-9a-f:]+", ip)])


def test_a_redacted_analysis_log_holds_its_commands_as_text(demo):
    """An analysis holds its log's text columns of a handful of values as categories; the redacted log's commands are
    its shapes, and stay text, which the held-resource causes search (`str.contains` fails on a category)."""
    result = NodesAnalysis([demo])
    logs = demo.evidence.logs
    assert logs is not None and logs.slow_ops.schema["shape"] == pl.Categorical
    redacted = redact_result(result, Redactor()).nodes[0].evidence.logs
    assert redacted is not None and redacted.slow_ops.schema["command_json"] == pl.String
    assert redacted.slow_ops.filter(pl.col("command_json").str.contains("{", literal=True)).height > 0


def test_cli_redacts_terminal_json_and_report_and_writes_the_key(tmp_path):
    report, key = tmp_path / "r.md", tmp_path / "key.json"

    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "cli", str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log"), "--redact", *extra],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )

    shown = run("--report", str(report), "--redact-key", str(key))
    as_json = run("--json")
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    for secret in DEMO_SECRETS:
        token = re.compile(r"(?<![A-Za-z0-9])" + re.escape(secret) + r"(?![A-Za-z0-9])")
        assert not token.search(shown.stdout) and not token.search(as_json.stdout), secret
    assert json.loads(key.read_text())["db-1.coll-2"] == "shop.orders"
    assert_clean([report, *sorted((tmp_path / "r_files").iterdir())], DEMO_SECRETS)
    assert json.loads(as_json.stdout)["nodes"][0]["node"]["host"] == "host-1" and json.loads(as_json.stdout)["redacted"] is True
    lonely = subprocess.run(
        [sys.executable, "-m", "cli", str(DEMO / "diagnostic.data"), "--redact-key", str(key)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert lonely.returncode == 2 and "--redact-key needs --redact" in lonely.stderr


def test_a_replica_sets_report_is_redacted_incidents_and_member_timeline_included(tmp_path):
    """Two of three members: the third one's lag stays an incident of the replica set's own (C1), told from the redacted findings."""
    scenario = DEMO / "scenarios" / "replica-set"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze_nodes(
            [scenario / "node1" / "diagnostic.data", scenario / "node2" / "diagnostic.data"], scenario
        )
    assert result.incidents and any(i.chain for i in result.incidents)
    secrets = ["rs1-a.example.net", "rs1-b.example.net", "rs1-c.example.net", "rs-prod", "app.events"]
    plain = leaks(result.nodes, tmp_path)
    assert all(s in plain for s in secrets[:2])
    redactor, files = redacted_reports(result, tmp_path)
    assert_clean(files, secrets)
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [i["id"] for i in doc["cross_node_incidents"]] == [i.id for i in result.incidents]
    assert '<h2 id=replica-set>Replica set</h2><div class="plot"' in (tmp_path / "report.html").read_text()
    # Redaction is a transform of the finished result: a new one, incidents told by the one builder; the original stays.
    redacted = redact_result(result, Redactor())
    assert [i.id for i in redacted.incidents] == [i.id for i in result.incidents]
    told = json.dumps(result_document(redacted, redacted=True))
    assert not any(s in told for s in secrets) and all(s in json.dumps(result_document(result)) for s in secrets[:2])
