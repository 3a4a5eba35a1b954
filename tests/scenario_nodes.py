"""The nodes the report tests read, each analysed once per test run: the demo node of `samples/`, the scenarios of
`samples/scenarios/` (a single node, or a replica set's members read together) and the real captures of `../shared`.

Several test modules judge the same reports (their numbers, their words, their advice, their lint); analysing a
scenario once and sharing the frozen result keeps those modules from repeating the loader and the work.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

from conftest import require_samples

import analysis

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SCENARIOS = SAMPLES / "scenarios"
# Every scenario with a written truth, by folder name.
SCENARIO_NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "truth.json").exists())


def scenario_log(folder: Path) -> Path | None:
    """The mongod log written beside a scenario's FTDC (plain or compressed), if any."""
    return next((p for p in sorted(folder.iterdir()) if p.name.startswith("mongod.log")), None)


@functools.cache
def analyzed_result(name: str) -> analysis.NodesAnalysis:
    """The result of `name` as composed (what a report renders): "demo", "real:<capture>" (a folder of `../shared`'s
    FTDC samples), or a scenario's folder name (optionally as "scenario:<name>")."""
    source, _, which = name.rpartition(":")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which == "demo" and not source:
            return analysis.NodesAnalysis([analysis.analyze(SAMPLES / "diagnostic.data", SAMPLES / "mongod.log")])
        if source == "real":
            return analysis.NodesAnalysis([analysis.analyze(require_samples("ftdc", which, "diagnostic.data"))])
        folder = SCENARIOS / which
        if (folder / "diagnostic.data").is_dir():
            return analysis.NodesAnalysis([analysis.analyze(folder / "diagnostic.data", scenario_log(folder))])
        return analysis.analyze_nodes(sorted(folder.glob("node*/diagnostic.data")), folder)


def analyzed_nodes(name: str) -> tuple[list, list]:
    """The analysed nodes and the cross-node findings of `name` (`analyzed_result`)."""
    result = analyzed_result(name)
    return result.nodes, result.cross_node
