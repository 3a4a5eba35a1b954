"""A run's incidents are composed once (`analysis.nodes.compose`): by the command with --redact as by the library, and
the fleet's replica set gets the incidents `analyze_nodes` gives; redaction maps that finished result, it never
composes again."""

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scenario_nodes import analyzed_result
from typer.testing import CliRunner

import analysis
from analysis import fleet, nodes
from analysis.incidents import grouping
from analysis.outputs.document import result_document
from analysis.outputs.report import Redactor, redact_result
from analysis.outputs.tables import FINDINGS_SCHEMA, INCIDENTS_SCHEMA, analysis_key, finding_rows, incident_rows, to_table
from cli import app
from ftdc.metadata import NodeInfo

ROOT = Path(__file__).resolve().parents[1]
REPLICA_SET = ROOT / "samples" / "scenarios" / "replica-set"
MEMBERS = sorted(REPLICA_SET.glob("node*/diagnostic.data"))


def counted(monkeypatch, module, name: str) -> list[int]:
    """Each call of `module.name` counted (a list of ones), the function still run."""
    calls: list[int] = []
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_a_redacted_replica_set_is_composed_once_by_the_command(monkeypatch):
    # Three members with their logs, --redact: the incidents were built 9 times in one run (each node analysed, each told
    # again with the replica set's findings, then again from the redacted findings, and the set's own once each time).
    composed, built = counted(monkeypatch, nodes, "compose"), counted(monkeypatch, grouping, "build")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = CliRunner().invoke(app, [*map(str, MEMBERS), "--log", str(REPLICA_SET), "--json", "--redact"])
    assert run.exit_code == 0, run.output
    document = json.loads(run.stdout)
    assert document["redacted"] and len(document["nodes"]) == 3 and any(n["incidents"] for n in document["nodes"])
    # One composition; in it, each member's incidents made once (the replica set's findings all fold into them).
    assert len(composed) == 1
    assert len(built) == 3 and not document["cross_node_incidents"]


@pytest.mark.parametrize("name", ["replica-set", "demo", "throughput-dip"])
def test_a_redacted_report_says_what_the_plain_one_says_in_pseudonyms(name):
    # Redaction told the incidents again from the redacted findings: the incidents' withheld advice was lost (the
    # findings it vetted had already been vetted), and a ranking could have read the redacted log differently.
    plain = analyzed_result(name)
    redactor = Redactor()
    redacted = result_document(redact_result(plain, redactor), redacted=True)
    told = result_document(plain)
    for key in ("cross_node_incidents", "cross_node_findings"):
        assert redacted[key] == redactor.deep(told[key])
    assert [n["incidents"] for n in redacted["nodes"]] == redactor.deep([n["incidents"] for n in told["nodes"]])
    assert any(i["withheld"] for n in redacted["nodes"] for i in n["incidents"]) == any(
        i["withheld"] for n in told["nodes"] for i in n["incidents"]
    )
    # Names were replaced: the mapping is not the identity.
    assert redactor.key() and redacted["nodes"] != told["nodes"]


def _rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(row, default=str, sort_keys=True) for row in table.to_pylist())


def test_the_fleet_gives_a_replica_set_the_incidents_analyze_nodes_gives(tmp_path):
    # The fleet told each member's incidents from its own findings alone, and its findings numbered from F1 on each
    # node; `analyze_nodes` folds the set's findings about a member (its lag) into that member's incidents.
    logs = [str(m.parent / "mongod.log") for m in MEMBERS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = fleet.run(MEMBERS, tmp_path, workers=1, logs=logs)
        want = analysis.analyze_nodes(MEMBERS, logs)
    keys = [analysis_key(a, path) for a, path in zip(want.nodes, MEMBERS)]
    incidents = [to_table(incident_rows(a.incidents, a.node, key), INCIDENTS_SCHEMA) for a, key in zip(want.nodes, keys)]
    findings = [to_table(finding_rows(a.findings, a.node, key)) for a, key in zip(want.nodes, keys)]
    # The set's findings are the fleet's too, and one of them is folded into a member's incident.
    assert want.cross_node and any(f.id in i.finding_ids for a in want.nodes for i in a.incidents for f in want.cross_node)
    replica_set = NodeInfo(replica_set=want.nodes[0].node.replica_set)
    findings.append(to_table(finding_rows(want.cross_node, replica_set, None, scope="replica_set")))
    incidents.append(to_table(incident_rows(want.incidents, replica_set, None), INCIDENTS_SCHEMA))
    written = pa.concat_tables(
        [pq.read_table(p).cast(INCIDENTS_SCHEMA) for p in sorted((tmp_path / "incidents").glob("*.parquet"))]
    )
    assert _rows(written) == _rows(pa.concat_tables(incidents))
    assert _rows(found.cast(FINDINGS_SCHEMA)) == _rows(pa.concat_tables(findings))
