"""Every detector against the incident scenarios in samples/scenarios, whose truth was written
from what each scenario injected (samples/make_scenarios.py), not from what the analyses find."""

import datetime as dt
import json
import warnings
from pathlib import Path

import pytest

import analysis
from analysis.findings.culprits import causes
from analysis.findings.finding import SEVERITIES

SCENARIOS = Path(__file__).resolve().parents[1] / "samples" / "scenarios"
# One node each; the replica set (three nodes) is tests/test_nodes.py's.
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "truth.json").exists() and (p / "diagnostic.data").is_dir())


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module", params=NAMES)
def scenario(request):
    folder = SCENARIOS / request.param
    log = next(p for p in folder.iterdir() if p.name.startswith("mongod.log"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(folder / "diagnostic.data", log)
    return json.loads((folder / "truth.json").read_text()), result


def matching(result, want):
    """Findings of the truth's kind and resource whose window is the truth's, within its tolerance."""
    tolerance = dt.timedelta(seconds=want["tolerance_s"])
    start, end = parse(want["start"]), parse(want["end"])
    return [
        f
        for f in result.findings
        if f.kind == want["kind"]
        and f.resource == want["resource"]
        and abs(f.start - start) <= tolerance
        and abs(f.end - end) <= tolerance
    ]


def test_every_injected_incident_is_found_with_its_window(scenario):
    truth, result = scenario
    for want in truth["findings"]:
        found = matching(result, want)
        near = [(f.kind, f.resource, str(f.start), str(f.end), f.severity) for f in result.findings if f.kind == want["kind"]]
        assert found, f"{truth['scenario']}: no {want['kind']} ({want['resource']}) {want['start']} - {want['end']}; found {near}"
        assert min(SEVERITIES.index(f.severity) for f in found) <= SEVERITIES.index(want["severity_at_least"]), found[0].severity


def test_top_culprit_and_who_is_blamed(scenario):
    truth, result = scenario
    for want in truth["findings"]:
        found = matching(result, want)
        if not found:
            continue  # the test above reports it
        finding = found[0]
        named = causes(finding.culprits, finding.seconds)
        if want["top_culprit"]:
            top = finding.culprits[0]
            assert (top.ns, top.command) == (want["top_culprit"]["ns"], want["top_culprit"]["command"]), finding.culprits
            assert (top.plan_summary or "").startswith(want["top_culprit"]["plan_summary"])
        if want["collscan_blamed"]:
            assert named and "Cause: COLLSCAN" in finding.explanation
        else:
            assert not named and "Cause: COLLSCAN" not in finding.explanation


def test_each_stall_lines_up_with_its_checkpoint(scenario):
    truth, result = scenario
    for want in truth["findings"]:
        if "aligned_spikes" not in want:
            continue
        finding = matching(result, want)[0]
        spikes = finding.evidence["aligned_spikes"]
        period = dt.timedelta(seconds=1)
        missing = [
            t for t in want["aligned_spikes"] if not any(s["spike_start"] <= parse(t) <= s["spike_end"] + period for s in spikes)
        ]
        assert not missing, f"{len(missing)} of {len(want['aligned_spikes'])} stalls not among the aligned spikes: {missing[:3]}"


def test_nothing_else_is_raised(scenario):
    """No warning or critical finding of a kind the scenario did not inject; controls have none at all."""
    truth, result = scenario
    extra = [(f.kind, f.resource, str(f.start), f.title) for f in result.problems if f.kind in truth["absent"]]
    assert not extra, extra
    if not truth["findings"]:
        assert result.problems == [], [(f.kind, f.title) for f in result.problems]


def test_context_is_reported(scenario):
    truth, result = scenario
    for want in truth.get("context", []):
        assert any(
            f.kind == want["kind"] and f.severity == "info" and abs(f.start - parse(want["start"])) <= dt.timedelta(seconds=5)
            for f in result.findings
        ), want


def test_scenarios_rebuild_identically(tmp_path):
    """Deterministic: a rebuilt scenario is byte-identical to the committed one."""
    from samples.make_scenarios import build

    rebuilt = build("write-queue-7.0", tmp_path)
    committed = SCENARIOS / "write-queue-7.0"
    files = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(rebuilt) for p in rebuilt.rglob("*") if p.is_file())
    for name in files:
        assert (rebuilt / name).read_bytes() == (committed / name).read_bytes(), name


def test_the_analyses_find_the_same_with_every_column_at_once(scenario, monkeypatch):
    """The columns `analyze` derives only when shown (`analysis.series.derived.SHOWN_ONLY`) change nothing found: the
    analyses given every column at once find the same findings and incidents."""
    from analysis.series import derived

    class AtOnce(derived.Derived):
        def __init__(self, prepared, resolved, thresholds):
            super().__init__(prepared, resolved, thresholds)
            self.analysed = self.full()

    truth, result = scenario
    monkeypatch.setattr(derived, "Derived", AtOnce)
    folder = SCENARIOS / truth["scenario"]
    log = next(p for p in folder.iterdir() if p.name.startswith("mongod.log"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = analysis.analyze(folder / "diagnostic.data", log)
    assert every.derived.analysed.width > result.derived.analysed.width
    assert every.findings == result.findings and every.incidents == result.incidents


@pytest.mark.parametrize("name", NAMES)
def test_every_detector_is_judged_absent_where_a_scenario_does_not_inject_it(name):
    """A new detector is held to every scenario without a word in the simulator: each truth's absent list is every
    registered kind but moments (an election is context wherever it falls) and what the scenario injects or tells as
    context (`python -m samples.make_scenarios` writes it from the registry)."""
    from analysis.findings.detectors import RECORDS

    truth = json.loads((SCENARIOS / name / "truth.json").read_text())
    said = {f["kind"] for f in [*truth["findings"], *truth.get("context", [])]}
    assert truth["absent"] == [kind for kind, record in RECORDS.items() if kind not in record.moments and kind not in said]
