"""The README's accuracy table: per scenario, what was injected against what `analyze` found.

    python -m samples.scenario_table

The same comparisons as tests/test_scenarios.py (kind, resource, window within the
truth's tolerance) and tests/test_incidents.py (the warning and critical incidents
are the injected ones, each with the injected root cause), printed as Markdown.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections import Counter
from pathlib import Path

import analysis

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _label(kind: str, resource) -> str:
    return f"{kind} ({resource})" if resource else kind


def _matches(found, want) -> bool:
    tolerance = dt.timedelta(seconds=want["tolerance_s"])
    return any(
        f.kind == want["kind"]
        and f.resource == want["resource"]
        and abs(f.start - _time(want["start"])) <= tolerance
        and abs(f.end - _time(want["end"])) <= tolerance
        for f in found
    )


def nodes_row(folder: Path) -> str:
    """Several nodes: the cross-node truth and each node's own."""
    truth = json.loads((folder / "truth.json").read_text())
    nodes = sorted(p for p in folder.iterdir() if (p / "diagnostic.data").is_dir())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze_nodes([n / "diagnostic.data" for n in nodes], [n / "mongod.log" for n in nodes])
    wanted = [(w, result.cross_node) for w in truth["cross_node"]]
    for name, node in zip(result.names, result.nodes):
        wanted += [(w, node.problems) for w in truth["node_findings"].get(name, [])]
    ok = all(_matches(found, w) for w, found in wanted) and sum(len(n.problems) for n in result.nodes) == len(wanted) - len(
        truth["cross_node"]
    )
    expected = Counter(_label(w["kind"], w["resource"]) for w, _ in wanted)
    found = Counter(
        _label(f.kind, f.resource)
        for f in [*result.cross_node, *(f for n in result.nodes for f in n.problems)]
        if f.severity != "info"
    )
    incidents = _incidents(truth, [*result.incidents, *(i for n in result.nodes for i in n.incidents)])
    return f"| {folder.name} ({len(nodes)} nodes) | {_show(expected)} | {_show(found)} | {'yes' if ok else 'no'} | {' | '.join(incidents[:2])} | {'yes' if incidents[2] else 'no'} |"


def _incidents(truth: dict, found: list) -> tuple[str, str, bool]:
    """Expected and found incidents as `root cause` (and how many findings each folds), and whether they agree."""
    want = [w["root_cause"] + (f" {w['ns']}" if "ns" in w else "") for w in truth["incidents"]]
    got = sorted((i for i in found if i.severity != "info"), key=lambda i: i.start)
    shown = [
        f"{i.root_cause.kind}"
        + (f" {i.root_cause.evidence['ns']}" if i.root_cause.kind == "operation" else "")
        + f" ({len(i.finding_ids)} folded)"
        for i in got
    ]
    ok = len(got) == len(want) and all(
        i.root_cause.kind == w["root_cause"]
        and i.root_cause.evidence.get("ns", w.get("ns")) == w.get("ns", i.root_cause.evidence.get("ns"))
        for i, w in zip(got, truth["incidents"])
    )
    return "; ".join(want) or "none", "; ".join(shown) or "none", ok


def _show(counts: Counter) -> str:
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(counts.items())) or "none"


def row(folder: Path) -> str:
    truth = json.loads((folder / "truth.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(folder / "diagnostic.data", folder / "mongod.log")
    matched = sum(_matches(result.problems, want) for want in truth["findings"])
    extra = [f for f in result.problems if f.kind in truth["absent"]]
    expected = Counter(_label(f["kind"], f["resource"]) for f in truth["findings"])
    found = Counter(_label(f.kind, f.resource) for f in result.problems)
    ok = matched == len(truth["findings"]) and not extra and (truth["findings"] or not result.problems)
    incidents = _incidents(truth, result.incidents)
    return f"| {folder.name} | {_show(expected)} | {_show(found)} | {'yes' if ok else 'no'} | {' | '.join(incidents[:2])} | {'yes' if incidents[2] else 'no'} |"


def main() -> None:
    print(
        "| scenario | injected (warning or critical) | found | windows match, nothing else raised "
        "| injected incidents (root cause) | found incidents (root cause, findings folded) | incidents match |"
    )
    print("|---|---|---|---|---|---|---|")
    for folder in sorted(p for p in SCENARIOS.iterdir() if (p / "truth.json").exists()):
        print(row(folder) if (folder / "diagnostic.data").is_dir() else nodes_row(folder))


if __name__ == "__main__":
    main()
