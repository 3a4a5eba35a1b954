"""An analysis is two values: the evidence (what was read and derived) and the result (what it says).

The result holds no frame or series; the answer's outputs and redaction are made from the result (and, for
redaction, the log tables the reports show), never from the rest of the evidence; the package names the side it
reads (`Analysis.__getattr__`, a notebook's shortcut, is never what it relies on)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import warnings
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import polars as pl
import pytest

import analysis
from analysis.nodes import NodesAnalysis
from analysis.observe import Analysis, Evidence, Result
from analysis.outputs import workbench
from analysis.outputs.console import render_findings, render_incidents
from analysis.outputs.document import result_document
from analysis.outputs.report import Redactor, build_report, redact_result, write_report
from analysis.series.derived import Derived
from ftdc.catalog import Catalog
from ftdc.logs import LogFrames

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
REPLICA_SET = SAMPLES / "scenarios" / "replica-set"
# One time for every document compared (none would be each call's own clock, a second apart now and then).
FIXED = {"generated": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}


@pytest.fixture(scope="module")
def replica_set() -> NodesAnalysis:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze_nodes(sorted(REPLICA_SET.glob("node*/diagnostic.data")), REPLICA_SET)


class Poison:
    """A value no code may use: any attribute, comparison, truth or iteration raises."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def _used(self, *_: Any) -> NoReturn:
        raise AssertionError(f"the evidence's {object.__getattribute__(self, 'name')} was read")

    def __getattr__(self, _: str) -> NoReturn:
        self._used()

    __eq__ = __bool__ = __iter__ = __len__ = __hash__ = __getitem__ = _used  # type: ignore[assignment]


def poisoned(evidence: Evidence, *, keep: tuple[str, ...]) -> Evidence:
    """`evidence` with every field but `keep` a `Poison`."""
    return dataclasses.replace(evidence, **{f.name: Poison(f.name) for f in dataclasses.fields(Evidence) if f.name not in keep})


def walk(value: Any, seen: set[int]) -> list[Any]:
    """Every value inside `value`: dataclass fields, mappings, sequences, sets."""
    if id(value) in seen:
        return []
    seen.add(id(value))
    inner: list[Any] = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        inner = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        inner = list(value)
    return [value, *(v for i in inner for v in walk(i, seen))]


def test_the_result_holds_no_frame_or_series(replica_set: NodesAnalysis) -> None:
    evidence_types = (pl.DataFrame, pl.LazyFrame, pl.Series, np.ndarray, Derived, LogFrames, Catalog, Evidence)
    for node in replica_set.nodes:
        assert isinstance(node.result, Result) and isinstance(node.evidence, Evidence)
        assert not [type(v).__name__ for v in walk(node.result, set()) if isinstance(v, evidence_types)]
        # The walk sees such values where they are: the evidence's.
        assert {Derived, LogFrames, Catalog} <= {type(v) for v in walk(node.evidence, set())}
    assert sum(len(n.result.findings) for n in replica_set.nodes) > 0


def test_redaction_maps_the_result_and_the_log_tables_only(replica_set: NodesAnalysis) -> None:
    plain = redact_result(replica_set, Redactor())
    blind = NodesAnalysis(
        [Analysis(poisoned(a.evidence, keep=("logs",)), a.result) for a in replica_set.nodes],
        replica_set.cross_node,
        replica_set.incidents,
    )
    redacted = redact_result(blind, Redactor())
    for mapped, expected, given in zip(redacted.nodes, plain.nodes, blind.nodes):
        assert json.dumps(mapped.result.to_dict()) == json.dumps(expected.result.to_dict())
        assert mapped.result.node != given.result.node  # names replaced: the test compares what redaction made
        assert mapped.evidence.logs is not None and expected.evidence.logs is not None
        assert mapped.evidence.logs.slow_ops.equals(expected.evidence.logs.slow_ops)
        # What it does not print it keeps as it was, untouched.
        assert all(
            getattr(mapped.evidence, f.name) is getattr(given.evidence, f.name)
            for f in dataclasses.fields(Evidence)
            if f.name != "logs"
        )
    assert [f.to_dict() for f in redacted.cross_node] == [f.to_dict() for f in plain.cross_node]


def test_the_document_states_the_node_and_its_thresholds_from_the_result(replica_set: NodesAnalysis) -> None:
    """The answer's node, coverage, thresholds and headlines come from the result: the evidence's own node,
    thresholds, catalog and checkpoints are never read (its logs and series are the workbench's tables)."""
    blind = dataclasses.replace(
        replica_set,
        nodes=[
            Analysis(poisoned(a.evidence, keep=("logs", "derived", "resolved", "columns")), a.result) for a in replica_set.nodes
        ],
    )
    assert result_document(blind, **FIXED) == result_document(replica_set, **FIXED)  # type: ignore[arg-type]


def test_the_document_is_the_result_and_the_workbench_and_reads_no_evidence(replica_set: NodesAnalysis) -> None:
    """Given the run's workbenches, the document is made from them and the results: not one field of the evidence is
    read (the workbench is a value of its own, built once from it)."""
    benches = workbench.of_run(replica_set.nodes)
    blind = dataclasses.replace(replica_set, nodes=[Analysis(poisoned(a.evidence, keep=()), a.result) for a in replica_set.nodes])
    assert result_document(blind, workbenches=benches, **FIXED) == result_document(replica_set, **FIXED)  # type: ignore[arg-type]


def test_a_runs_workbench_is_built_once_for_every_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--report x.md --json`: the log's tables and the system panels are made once, the report and the document
    printed reading the one value (twice before: the report's sections, then the document)."""
    from typer.testing import CliRunner

    import cli
    from analysis.outputs import system
    from analysis.workbench import log_overview

    made: list[str] = []
    tables, view = log_overview.workload, system.view
    monkeypatch.setattr(log_overview, "workload", lambda logs: made.append("tables") or tables(logs))
    monkeypatch.setattr(system, "view", lambda *a, **k: made.append("system") or view(*a, **k))
    args = ["summary", str(SAMPLES / "diagnostic.data"), "--log", str(SAMPLES / "mongod.log"), "--json"]
    result = CliRunner().invoke(cli.app, [*args, "--report", str(tmp_path / "r.md")])
    assert result.exit_code == 0, result.output
    assert made == ["tables", "system"]
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    assert printed["nodes"][0]["slow_operations"] and printed["nodes"][0]["system"]["series"]


def test_the_package_names_the_side_it_reads(replica_set: NodesAnalysis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every output of a run, plain and redacted, made with the notebook's shortcut (`a.findings`) gone."""

    def gone(self: Analysis, name: str) -> NoReturn:
        raise AssertionError(f"the package read Analysis.{name}: it names the evidence or the result")

    monkeypatch.setattr(Analysis, "__getattr__", gone)
    redacted = redact_result(replica_set, Redactor())
    for result, flag in ((replica_set, False), (redacted, True)):
        result_document(result, redacted=flag)
        write_report(build_report(result, redacted=flag), tmp_path / f"report-{flag}.html")
        for node in result.nodes:
            render_incidents(node.result, 100, result.cross_node)
            render_findings(node.result, 100)
            analysis.findings_frame(node)
            analysis.incidents_frame(node)
            node._repr_html_()


def test_a_notebook_reads_either_side_by_name(replica_set: NodesAnalysis) -> None:
    node = replica_set.nodes[0]
    assert node.findings is node.result.findings and node.incidents is node.result.incidents
    assert node.logs is node.evidence.logs and node.checkpoints is node.evidence.checkpoints
    with pytest.raises(AttributeError):
        node.no_such_attribute  # noqa: B018
