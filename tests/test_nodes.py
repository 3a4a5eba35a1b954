"""Several nodes at once: a replica set's members on one time axis, and what involves more than one."""

import datetime as dt
import json
import re
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import pytest

import analysis

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "samples" / "scenarios" / "replica-set"


def parse(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def within(finding, want):
    tolerance = dt.timedelta(seconds=want["tolerance_s"])
    return abs(finding.start - parse(want["start"])) <= tolerance and abs(finding.end - parse(want["end"])) <= tolerance


@pytest.fixture(scope="module")
def truth():
    return json.loads((SET / "truth.json").read_text())


@pytest.fixture(scope="module")
def result():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze_nodes(
            [SET / n / "diagnostic.data" for n in ("node1", "node2", "node3")],
            [SET / n / "mongod.log" for n in ("node1", "node2", "node3")],
        )


def test_nodes_identified_from_their_metadata(result, truth):
    assert result.names == truth["nodes"]
    assert [a.node.replica_set for a in result.nodes] == ["rs-prod"] * 3


def test_election_during_the_incident_and_the_lagging_member(result, truth):
    for want in truth["cross_node"]:
        found = [f for f in result.cross_node if f.kind == want["kind"] and within(f, want)]
        assert found, (want, [(f.kind, str(f.start), str(f.end)) for f in result.cross_node])
        finding = found[0]
        assert finding.severity == "warning" and sorted(finding.evidence["seen_by"]) == sorted(truth["nodes"])
        if want["kind"] == "primary_change":
            assert finding.title == f"Primary changed from {want['from_node']} to {want['to_node']}"
            assert "It happened during: rs1-a.example.net:27017: Cache past its eviction trigger" in finding.explanation
        else:
            assert finding.title.startswith(want["node"]) and finding.culprits == []
    assert len(result.cross_node) == len(truth["cross_node"])
    # Cross-node findings are not repeated on each node.
    assert not any(f.kind in ("primary_change", "replication_lag") for a in result.nodes for f in a.findings)


def test_each_node_has_its_own_findings_and_logs(result, truth):
    for name, analysed in zip(result.names, result.nodes):
        wanted = truth["node_findings"].get(name, [])
        assert len(analysed.problems) == len(wanted), (name, [(f.kind, f.title) for f in analysed.problems])
        for want in wanted:
            assert any(f.kind == want["kind"] and within(f, want) for f in analysed.problems), (name, want)
        # Each node kept its own host's log rows only.
        assert set(analysed.logs.slow_ops["node"].drop_nulls().unique()) <= {name}
    cache = result.nodes[0].problems[0]
    assert cache.culprits[0].ns == "app.events" and "Cause: COLLSCAN" in cache.explanation


def test_a_support_bundle_from_the_command_line(tmp_path):
    bundle = tmp_path / "ticket-4711.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(SET, arcname="replica-set")
    report = tmp_path / "report.html"
    run = subprocess.run(
        [sys.executable, "-m", "cli", str(bundle), "--json", "--report", str(report)], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert [n["node"]["host"] for n in doc["nodes"]] == ["rs1-a.example.net", "rs1-b.example.net", "rs1-c.example.net"]
    assert sorted(f["kind"] for f in doc["cross_node_findings"]) == ["primary_change", "replication_lag"]
    page = report.read_text()
    # Section headings carry their anchors (the report's table of contents links to them).
    assert "<h2 id=replica-set>Replica set</h2>" in page
    assert len(re.findall(r"<h2 id='[^']+'>rs1-", page)) == 3


def test_member_indices_are_named_within_their_own_replica_set(ftdc_samples):
    """Regression: member indices were mapped to addresses across replica sets, so the 4.2
    node's (rs0) own elections were reported with rs-prod's host names (its member 0 is
    rs1-a in rs-prod). Each set names only its own members."""
    own = ftdc_samples / "mongod-4.2.1" / "diagnostic.data"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = analysis.analyze(own)
        both = analysis.analyze_nodes([own, *(SET / n / "diagnostic.data" for n in ("node1", "node2", "node3"))])
    address = "M-C02F13T4MD6M.sanmiguel.local:27017"
    elections = [f for f in both.cross_node if f.evidence["seen_by"] == [address]]
    assert len(elections) == sum(f.kind == "primary_change" for f in alone.findings) > 0
    for finding in elections:
        assert "rs1-" not in finding.title, finding.title
        assert (
            address in finding.title
            if "0" in (finding.evidence["from_member"], finding.evidence["to_member"])
            else "member " in finding.title
        )
    # rs-prod's own election is still named by its members' addresses and seen by its three nodes only.
    rs_prod = [f for f in both.cross_node if f.kind == "primary_change" and address not in f.evidence["seen_by"]]
    assert [f.title for f in rs_prod] == ["Primary changed from rs1-a.example.net:27017 to rs1-b.example.net:27017"]


def test_merging_the_members_findings_leaves_each_nodes_own_as_it_was():
    """The replica set's finding of one lag is a new value: the members' findings it merges keep their windows and peaks."""
    import copy
    from types import SimpleNamespace

    from analysis.findings.detectors.replication import lag_finding
    from analysis.nodes import cross_node_findings
    from ftdc.metadata import NodeInfo

    t0 = dt.datetime(2024, 5, 14, 9, 0, tzinfo=dt.timezone.utc)
    a = lag_finding("member 2", "2", t0, t0 + dt.timedelta(seconds=60), 12.0)
    b = lag_finding("member 2", "2", t0 + dt.timedelta(seconds=20), t0 + dt.timedelta(seconds=90), 30.0)
    before = copy.deepcopy([a, b])
    nodes = [
        SimpleNamespace(result=SimpleNamespace(node=NodeInfo(host=h, port=27017, replica_set="rs"), findings=[f]))
        for h, f in (("a", a), ("b", b))
    ]
    [merged] = cross_node_findings(nodes, ["a:27017", "b:27017"], [[], []])
    assert (merged.start, merged.end, merged.evidence["lag_s_peak"], merged.evidence["seen_by"]) == (
        a.start,
        b.end,
        30.0,
        ["a:27017", "b:27017"],
    )
    assert [a, b] == before


def _strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize("redacted", [False, True])
def test_every_label_names_one_item_of_the_document_and_references_point_at_it(result, redacted):
    # Two incidents were both "I1" and two findings "F1" (one on each node) in one document.
    from analysis.outputs.document import result_document
    from analysis.outputs.redact import Redactor, redact_result

    told = redact_result(result, Redactor()) if redacted else result
    document = result_document(told, redacted=redacted)
    labels = [item["id"] for node in document["nodes"] for key in ("incidents", "findings") for item in node[key]]
    labels += [item["id"] for key in ("cross_node_incidents", "cross_node_findings") for item in document[key]]
    assert len(labels) == len(set(labels)) and {"I1", "I2", "F1", "F2"} <= set(labels), labels
    cross = {f["id"] for f in document["cross_node_findings"]}
    for node in document["nodes"]:
        own = {item["id"] for key in ("incidents", "findings") for item in node[key]}
        named = {label for text in _strings(node) for label in re.findall(r"(?<![\w-])[IFXC]\d+\b", text)}
        # "findings F1, X2", "F1's window", each step's and fix's findings: this node's items or the replica set's.
        assert named <= own | cross, (node["name"], named - own - cross)
