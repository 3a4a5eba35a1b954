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


def test_a_ttl_burst_names_its_index_in_the_fix_and_says_which_count_counts_what():
    # ttl-burst-6.0: "add jitter to the expireAt/date field the TTL index reads" though the log names expireAt_1 on
    # app.sessions; "450,064" in the headline and "450,000 by the log" in the root cause with nothing saying which counts
    # what; "the busiest fifth of this data"; "(id 5479200)" in prose.
    [finding] = _findings("ttl-burst-6.0", "ttl_burst")
    fix = finding.recommendations[0].what
    assert fix == (
        "Spread expiry so documents do not expire together: add jitter to the date field the TTL index expireAt_1 on "
        "app.sessions reads"
    )
    deleted = finding.evidence["deleted"]
    assert (
        f"The log's TTL pass line in that time counts 450,000 of them: the server counted all {deleted:,.0f} documents its "
        "TTL monitor deleted in the window, the log's line only its pass on one index." in finding.reasoning
    )
    assert "(450,000 documents by the log's line of that pass)" in finding.cause
    for text in (finding.subject, finding.reasoning, finding.cause, fix):
        assert "this data" not in text and "id 5479200" not in text and "expireAt/date" not in text
    assert "as busy as the busiest fifth of the capture's minutes" in finding.subject


def test_the_spikes_expected_by_chance_are_the_quoted_share_of_the_spikes():
    # checkpoint-stall: "took 43 % of the time (chance alone: 14.0 spikes …)" of 30 spikes: 30 × 43 % is 12.9. The
    # expectation sums each spike's own chance (the checkpoints with the period after each, widened by the spike's
    # length); the share quoted beside it is that chance, on average.
    import re

    for f in _findings("checkpoint-stall", "checkpoint_stall"):
        spikes, expected = f.evidence["spikes"], f.evidence["expected_by_chance"]
        said = re.search(r"would have met one (\d+) % of the time on average \(chance alone: ([\d.]+) spikes", f.reasoning)
        assert said, f.reasoning
        share, count = int(said.group(1)) / 100, float(said.group(2))
        assert count == round(expected, 1) and abs(share * spikes - count) <= 0.005 * spikes + 0.05, (share, count)
