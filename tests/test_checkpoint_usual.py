"""Where checkpoints are the mechanism, their durations against the usual ones are in the text (issue 39 §3), one value
quoted everywhere: the longest checkpoint of the window and the median of those of the hour before it, with how many
that is, in the finding, the root cause and the JSON alike."""

import warnings
from pathlib import Path

import pytest

import analysis
from analysis.series.checkpoints import InWindow
from analysis.text import duration, span_before

SCENARIOS = Path(__file__).resolve().parents[1] / "samples" / "scenarios"


@pytest.mark.parametrize("name", ["checkpoint-stall", "dirty-cache-checkpoints-8.0"])
def test_checkpoints_are_told_against_their_usual(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(SCENARIOS / name / "diagnostic.data", SCENARIOS / name / "mongod.log")
    stalls = [f for f in result.findings if f.kind == "checkpoint_stall"]
    assert stalls
    for f in stalls:
        counted = f.evidence["checkpoints_in_window"]
        assert isinstance(counted, InWindow) and counted.usual_s is not None and counted.usual_of > 0
        said = (
            f"{'up to ' if counted.count > 1 else ''}{duration(counted.longest_s)} against a usual {duration(counted.usual_s)} "
            f"(the median of the {counted.usual_of} in {span_before(counted.usual_since, counted.start)})"
        )
        assert counted.usual_since is not None and "before" in said
        assert said in f.explanation
        for i in result.incidents:
            if f.id in i.finding_ids and "checkpoint_usual_s" in i.root_cause.evidence:
                assert i.root_cause.evidence["checkpoint_usual_s"] == counted.usual_s
                assert said in i.root_cause.summary
