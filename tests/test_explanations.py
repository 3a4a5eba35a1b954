"""Issue 18: explanations a support engineer can sign. Each defect found is kept here as the simulated node
that showed it (samples/families.py), judged as the families judge them (`failures`), with what the text says."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from samples.families import Incident, Shape, analyzed, build, failures  # noqa: E402


def test_a_collscan_queueing_behind_its_own_runs_is_the_cause_not_its_victim():
    # Its runs fill the read pool and the rest queue: 2/3 of each run queued for a ticket, most of its working time reading
    # the collection. Both were counted as waits, so 100 % of the slow-operation time was "cause not determined".
    scenario, result = analyzed(build, Shape(layout="8.0", seed=3), Incident("ticket_exhaustion", 120, 10.0, "read", 0.5, culprit=True, own_queue=True))
    assert failures(scenario, result) == []
    tickets = [f for f in result.problems if f.kind == "ticket_exhaustion"]
    assert "No collection scan carried a real share" not in tickets[0].explanation and "Cause: COLLSCAN" in tickets[0].explanation
    assert [i.root_cause.kind for i in result.incidents] == ["operation"]


def test_victims_of_a_checkpoint_stall_are_named_as_waiting_not_as_what_worked_there():
    scenario, result = analyzed(build, Shape(layout="8.0", seed=5), Incident("checkpoint_stall", 600, 10.0, "repeated", 0.5, victims=True))
    assert failures(scenario, result) == []
    told = [f for f in result.problems if "shop.settings" in f.explanation]
    assert told and all("spent most of their time waiting (victims of the window, not its cause)" in f.explanation for f in told)
