"""One JSON document, one schema per table (issue 21 §3)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import analysis
from analysis.findings.finding import Finding
from analysis.nodes import NodesAnalysis, told
from analysis.outputs import document, schema
from analysis.outputs.report import build_report, write_report

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "samples" / "scenarios" / "replica-set"
MEMBERS = [SET / f"node{n}" for n in (1, 2, 3)]


@pytest.fixture(scope="module")
def replica_set():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze_nodes([m / "diagnostic.data" for m in MEMBERS], [m / "mongod.log" for m in MEMBERS])


def test_json_and_the_json_report_are_one_document(tmp_path):
    report = tmp_path / "r.json"
    args = [
        sys.executable,
        "-m",
        "cli",
        *(str(m / "diagnostic.data") for m in MEMBERS),
        *(a for m in MEMBERS for a in ("--log", str(m / "mongod.log"))),
        "--json",
        "--report",
        str(report),
    ]
    run = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert run.returncode == 0, run.stderr
    printed, written = json.loads(run.stdout), json.loads(report.read_text())
    assert printed == written and printed["schema_version"] == document.SCHEMA_VERSION


def test_the_json_report_holds_every_incident_whatever_the_cards_show(replica_set, monkeypatch, tmp_path):
    # Three lag episodes hours apart that no member's incident folds in: three cross-node incidents, one card.
    start = replica_set.nodes[0].overview.first
    lags = [
        Finding(
            "replication_lag",
            "warning",
            start + dt.timedelta(hours=h),
            start + dt.timedelta(hours=h, minutes=5),
            f"lag {h}",
            "",
            id=f"X{10 + h}",
        )
        for h in (3, 6, 9)
    ]
    _, incidents, lags = told((), replica_set.nodes[0].context, lags, prefix="C")
    nodes = NodesAnalysis(replica_set.nodes, lags, incidents)
    assert len(nodes.incidents) == 3
    monkeypatch.setattr(document, "MAX_CARDS", 1)
    report = build_report(nodes)
    assert len(report.cross_incidents) == 1
    write_report(report, tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [i["id"] for i in doc["cross_node_incidents"]] == [i.id for i in nodes.incidents] == ["C1", "C2", "C3"]
    assert [[i["id"] for i in n["incidents"]] for n in doc["nodes"]] == [[i.id for i in a.incidents] for a in nodes.nodes]
    assert doc == json.loads(json.dumps(document.result_document(nodes, generated=report.generated)))


def test_one_schema_per_table(replica_set):
    import analysis.findings.finding
    import analysis.incidents.incident

    assert not hasattr(analysis.findings.finding, "FINDINGS_SCHEMA") and not hasattr(
        analysis.incidents.incident, "INCIDENTS_SCHEMA"
    )
    node = replica_set.nodes[0]
    for frame, table in (
        (analysis.findings_frame(node), schema.FINDINGS_SCHEMA),
        (analysis.incidents_frame(node), schema.INCIDENTS_SCHEMA),
    ):
        assert frame.columns == table.names
        assert frame.to_arrow().cast(table).schema == table
    from analysis.outputs import tables

    assert tables.FINDINGS_SCHEMA is schema.FINDINGS_SCHEMA and tables.INCIDENTS_SCHEMA is schema.INCIDENTS_SCHEMA
    assert pa.types.is_struct(schema.FINDINGS_SCHEMA.field("recommendations").type.value_type)
