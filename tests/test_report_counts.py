"""What the reports count and how they say it (issue 39, the reviewer's reading of the reports): each count said with
what it counts, a part never above its whole, a fix's sentence finished, no empty cell where a value is missing."""

from __future__ import annotations

from scenario_nodes import analyzed_nodes as _analyzed


def _findings(name: str, kind: str):
    nodes, _ = _analyzed(name)
    return [f for node in nodes for f in node.findings if f.kind == kind]


def test_the_data_handle_fix_finishes_its_sentence_with_what_the_handles_cost():
    # dhandle-pressure: "61,996 handles are open: each collection and index is one" broke off, the first fix and the
    # headline saying neither what the handles do nor why fewer would help.
    [finding] = [f for f in _findings("dhandle-pressure", "dhandle_pressure") if f.severity != "info"]
    [drop] = [r for r in finding.recommendations if r.action == "change_workload"]
    peak = finding.evidence["dhandles_peak"]
    assert drop.why.startswith(f"{peak:,.0f} data handles are open, one for each collection and index in use: ")
    assert "every checkpoint and every sweep walks them all" in drop.why and drop.why.endswith("shortens that wait")
    assert not drop.why.endswith("is one")

